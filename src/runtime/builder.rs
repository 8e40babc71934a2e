//! Building a running topology for some workers of a placement, one named step at a time: the
//! executors' queues ([`Wiring::new`]), each worker's route table ([`Wiring::route_tables`]),
//! the worker threads that move frames between workers ([`Wiring::spawn_workers`]), and the
//! executors themselves, spouts, bolts and the acker ([`Wiring::spawn_executors`]).

use super::acker::Acker;
use super::acker_executor::AckerExecutor;
use super::bolt_executor::BoltExecutor;
use super::bolt_task::{BoltTask, Plain};
use super::chain_ledger::ChainLedger;
use super::checkpoint::bolt_side::BoltSide;
use super::checkpoint::coordinator::Coordinator;
use super::checkpoint::setup::{self, Setup};
use super::checkpoint::spout_side::SpoutSide;
use super::checkpoint::wrapper::Checkpointed;
use super::checkpoint::{Checkpointing, RemoteCheckpoints, Report};
use super::collector::{Emitter, FoldTarget, RejectTarget};
use super::executor::{
    AckerSlot, BoltSlot, ExecutorReport, Parked, RunControl, SpoutSlot, TaskSlot,
};
use super::message::{Message, Transfer};
use super::metrics::TaskStats;
use super::open_trees::OpenTrees;
use super::routing::{self, Outbox, RouteTable, Router, SinkSpec};
use super::spout_executor::SpoutExecutor;
use super::{task_seed, worker, Role, Running, DEFAULT_MAX_PENDING};
use crate::components::{catalog, ReaderFold, TaskContext, Waker};
use crate::config::{Config, Origin};
use crate::model::plan::Plan;
use crate::model::{Component, Topology};
use crate::net::link::{Link, MemoryLink, Network};
use crate::placement::Placement;
use crossbeam_channel::{Receiver, Sender};
use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Both ends of a bounded channel.
type Channel<T> = (Sender<T>, Receiver<T>);

/// The thread of one executor, named by its component.
pub(crate) type ExecutorHandle = (String, JoinHandle<anyhow::Result<ExecutorReport>>);

/// How trees are tracked, the same for every executor of a run.
#[derive(Debug, Clone, Copy)]
struct Tracking {
    /// `topology.max.spout.pending`, or the default when acking is on.
    max_pending: Option<usize>,
    /// The message timeout, when acking and timeouts are on.
    timeout: Option<Duration>,
    /// Trees whose root hashes at or below this have their complete latency measured.
    sample_below: u64,
}

impl Tracking {
    fn of(plan: &Plan, config: &Config) -> Tracking {
        let acking = plan.ackers > 0;
        Tracking {
            max_pending: config
                .max_spout_pending()
                .or(acking.then_some(DEFAULT_MAX_PENDING))
                .map(|v| v as usize),
            timeout: (acking && config.message_timeouts_enabled())
                .then(|| config.message_timeout()),
            sample_below: sample_threshold(config.stats_sample_rate()),
        }
    }
}

/// The hash threshold that samples `rate` (0 to 1) of all trees: 2^64 × rate, which the cast
/// saturates to u64::MAX at 1 (every tree).
fn sample_threshold(rate: f64) -> u64 {
    (rate * 18_446_744_073_709_551_616.0) as u64
}

/// One executor while it is built: what its tasks share.
struct ExecutorParts<'t> {
    component: &'t str,
    tasks: RangeInclusive<u32>,
    /// The component's first task (task indexes count from it).
    first: u32,
    /// The tasks of this executor's worker (local routing prefers them).
    local_tasks: Vec<u32>,
    /// Topology config merged with the component's own.
    config: Arc<Config>,
    inbox: Channel<Message>,
    /// The receive queue of the executor it runs chained onto: woken along with it.
    host: Option<Sender<Message>>,
    outbox: Outbox,
}

/// The queues of the executors of a placement, and what is built from them.
pub(crate) struct Wiring<'a> {
    topology: Arc<Topology>,
    plan: Arc<Plan>,
    placement: &'a Placement,
    /// The workers run in this process.
    local: &'a [usize],
    /// The executor of each task id (`None`: an id no executor has, the system task's).
    exec_of_task: Vec<Option<usize>>,
    /// Receive queues, one per executor (indexed like `Plan::executors()`); a chained
    /// executor's is unbounded, since only its host's thread fills it and then empties it.
    inboxes: Vec<Channel<Message>>,
    /// The executor whose thread each executor runs on (`None`: its own; see `chain_hosts`).
    host_of_exec: Vec<Option<usize>>,
    /// Transfer queues, one per worker.
    transfers: Vec<Channel<Transfer>>,
    tracking: Tracking,
    control: Arc<RunControl>,
    stats: BTreeMap<u32, (String, Arc<TaskStats>)>,
    handles: Vec<ExecutorHandle>,
    done: Channel<()>,
    /// Checkpoints, when a component keeps state: the stores, the coordinator's channel and
    /// thread.
    checkpoints: Option<CheckpointParts>,
}

/// A run's checkpoints while it is built.
struct CheckpointParts {
    setup: Setup,
    reports: Sender<Report>,
    /// The coordinator's thread: `None` when another process coordinates (nimbus).
    coordinator: Option<JoinHandle<anyhow::Result<Coordinator>>>,
}

impl<'a> Wiring<'a> {
    /// Check the placement against the plan and make every executor's and worker's queue.
    pub(crate) fn new(
        topology: Arc<Topology>,
        placement: &'a Placement,
        local: &'a [usize],
    ) -> anyhow::Result<Wiring<'a>> {
        Wiring::with_checkpoints(topology, placement, local, None)
    }

    /// [`Wiring::new`]; with `remote`, checkpoints are coordinated elsewhere (nimbus) and the
    /// local workers keep them in its store.
    pub(crate) fn with_checkpoints(
        topology: Arc<Topology>,
        placement: &'a Placement,
        local: &'a [usize],
        remote: Option<RemoteCheckpoints>,
    ) -> anyhow::Result<Wiring<'a>> {
        let plan = Arc::new(Plan::new(&topology));
        let executors = plan.executors();
        let workers = placement.workers.max(1);
        anyhow::ensure!(
            placement.worker_of_exec.len() == executors.len()
                && placement.worker_of_exec.iter().all(|&w| w < workers),
            "placement does not match the topology's {} executors",
            executors.len()
        );
        let config = &topology.config;
        let receive_size = config.executor_receive_buffer_size().max(2);
        let transfer_size = config.transfer_buffer_size().max(2);
        let mut exec_of_task = vec![None; plan.total_tasks() as usize + 1];
        for (i, (_, r)) in executors.iter().enumerate() {
            for t in r.clone() {
                exec_of_task[t as usize] = Some(i);
            }
        }
        let checkpoints = match remote {
            Some(remote) => Some(CheckpointParts {
                setup: Setup::remote(local, &remote, &topology)?,
                reports: remote.reports,
                coordinator: None,
            }),
            None => Self::local_checkpoints(&topology, &plan, placement, local, &exec_of_task)?,
        };
        let host_of_exec =
            super::chain_hosts::hosts(&plan, &exec_of_task, &placement.worker_of_exec);
        Ok(Wiring {
            checkpoints,
            inboxes: host_of_exec
                .iter()
                .map(|host| match host {
                    Some(_) => crossbeam_channel::unbounded(),
                    None => crossbeam_channel::bounded(receive_size),
                })
                .collect(),
            host_of_exec,
            transfers: (0..workers)
                .map(|_| crossbeam_channel::bounded(transfer_size))
                .collect(),
            tracking: Tracking::of(&plan, config),
            control: Arc::new(RunControl::default()),
            stats: BTreeMap::new(),
            handles: Vec::new(),
            done: crossbeam_channel::bounded(executors.len().max(1)),
            exec_of_task,
            topology,
            plan,
            placement,
            local,
        })
    }

    /// Checkpoints coordinated in this process: the stores of the `local` workers and the
    /// coordinator's thread, when a component keeps state.
    fn local_checkpoints(
        topology: &Topology,
        plan: &Plan,
        placement: &Placement,
        local: &[usize],
        exec_of_task: &[Option<usize>],
    ) -> anyhow::Result<Option<CheckpointParts>> {
        let whole = placement.workers < 2 || local.len() == placement.workers;
        let Some(setup) = Setup::open(topology, local, whole)? else {
            return Ok(None);
        };
        let expected = setup::saving_tasks(topology, plan)
            .into_iter()
            .filter(|&t| {
                exec_of_task[t as usize]
                    .is_some_and(|e| local.contains(&placement.worker_of_exec[e]))
            })
            .collect();
        let (reports, coordinator) = setup.spawn_coordinator(expected)?;
        Ok(Some(CheckpointParts {
            setup,
            reports,
            coordinator: Some(coordinator),
        }))
    }

    /// Share `control` with a run already going (a rebalance builds its new layout with it).
    pub(crate) fn with_control(mut self, control: Arc<RunControl>) -> Wiring<'a> {
        self.control = control;
        self
    }

    /// The executors' receive queues, to wake them (a rebalance asks them to park).
    fn wakers(&self) -> Vec<Sender<Message>> {
        self.inboxes.iter().map(|(tx, _)| tx.clone()).collect()
    }

    fn workers(&self) -> usize {
        self.placement.workers.max(1)
    }

    fn worker_of_exec(&self, exec: usize) -> usize {
        self.placement.worker_of_exec[exec]
    }

    /// Per-worker route tables: executors of the worker directly, other workers through its
    /// transfer queue.
    pub(crate) fn route_tables(&self) -> Vec<RouteTable> {
        (0..self.workers()).map(|w| self.route_table(w)).collect()
    }

    fn route_table(&self, w: usize) -> RouteTable {
        let mut sinks = Vec::new();
        let mut sink_of_exec = vec![0usize; self.inboxes.len()];
        for (i, sink) in sink_of_exec.iter_mut().enumerate() {
            if self.worker_of_exec(i) == w {
                *sink = sinks.len();
                sinks.push(SinkSpec::Local(self.inboxes[i].0.clone()));
            }
        }
        let mut sink_of_worker = vec![0usize; self.workers()];
        for (other, sink) in sink_of_worker.iter_mut().enumerate() {
            if other != w {
                *sink = sinks.len();
                sinks.push(SinkSpec::Remote {
                    worker: other,
                    transfer: self.transfers[w].0.clone(),
                });
            }
        }
        let task_sink = self
            .exec_of_task
            .iter()
            .map(|e| match *e {
                None => 0,
                Some(e) if self.worker_of_exec(e) == w => sink_of_exec[e],
                Some(e) => sink_of_worker[self.worker_of_exec(e)],
            })
            .collect();
        let chained = self
            .exec_of_task
            .iter()
            .map(|e| e.is_some_and(|e| self.host_of_exec[e].is_some()))
            .collect();
        RouteTable {
            task_sink,
            sinks,
            chained,
        }
    }

    /// Listen for the local workers, link them to every other worker, and spawn each one's
    /// transfer and receive threads. Returns the transfer threads (joined at the end so every
    /// frame for other workers is sent).
    pub(crate) fn spawn_workers(&self, net: &dyn Network) -> anyhow::Result<Vec<JoinHandle<()>>> {
        let mut incoming: BTreeMap<usize, Channel<Vec<u8>>> = BTreeMap::new();
        for &w in self.local {
            let (tx, rx) = crossbeam_channel::bounded::<Vec<u8>>(worker::LINK_BUFFERS);
            net.listen(w, tx.clone())?;
            incoming.insert(w, (tx, rx));
        }
        let mut plumbing = Vec::new();
        for &w in self.local {
            let links = self.links_of(w, &incoming, net)?;
            plumbing.push(worker::spawn_transfer(
                w,
                self.transfers[w].1.clone(),
                links,
                self.control.clone(),
            )?);
            let rx = incoming
                .get(&w)
                .map(|(_, rx)| rx.clone())
                .ok_or_else(|| anyhow::anyhow!("worker {w} has no receive channel"))?;
            // Receive threads end when every link into them is gone; they are not joined, since
            // a network listener may hold a link until the process exits.
            drop(worker::spawn_receive(
                w,
                rx,
                self.inbox_of_task(w),
                self.inboxes.iter().map(|(tx, _)| tx.clone()).collect(),
                self.topology.config.receiver_buffer_size(),
                self.control.clone(),
            )?);
        }
        Ok(plumbing)
    }

    /// The links of worker `w` to every worker (none to itself): in memory to the workers of
    /// this process, through `net` to the others.
    fn links_of(
        &self,
        w: usize,
        incoming: &BTreeMap<usize, Channel<Vec<u8>>>,
        net: &dyn Network,
    ) -> anyhow::Result<Vec<Option<Box<dyn Link>>>> {
        let mut links: Vec<Option<Box<dyn Link>>> = Vec::new();
        for to in 0..self.workers() {
            links.push(if to == w {
                None
            } else if let Some((tx, _)) = incoming.get(&to) {
                Some(Box::new(MemoryLink(tx.clone())))
            } else {
                Some(net.connect(w, to)?)
            });
        }
        Ok(links)
    }

    /// The executor queue of each task id that runs on worker `w`.
    fn inbox_of_task(&self, w: usize) -> Vec<Option<usize>> {
        self.exec_of_task
            .iter()
            .map(|e| e.filter(|&e| self.worker_of_exec(e) == w))
            .collect()
    }

    /// Upstream task counts for end of input: every task of a component says it to each of
    /// its downstream tasks.
    fn eos_expected(&self) -> Vec<u32> {
        let mut expected = vec![0u32; self.exec_of_task.len()];
        for c in &self.plan.components {
            for task in c.tasks.clone() {
                for d in routing::downstream_tasks(&self.topology, &self.plan, &c.id, task) {
                    if let Some(e) = expected.get_mut(d as usize) {
                        *e += 1;
                    }
                }
            }
        }
        expected
    }

    /// Spawn the executors of the local workers, each on its own thread or on its host's.
    pub(crate) fn spawn_executors(&mut self, tables: &[RouteTable]) -> anyhow::Result<()> {
        // Owned here: the roles and parts borrow from them while `self` is changed.
        let (plan, topology) = (self.plan.clone(), self.topology.clone());
        let eos_expected = self.eos_expected();
        let mut built = Vec::new();
        for (i, (component, tasks)) in plan.executors().into_iter().enumerate() {
            let w = self.worker_of_exec(i);
            if !self.local.contains(&w) {
                continue;
            }
            let role = Role::of(&topology, component).ok_or_else(|| {
                anyhow::anyhow!("component `{component}` of the plan is not in the topology")
            })?;
            let parts = self.executor_parts(i, component, tasks, Outbox::new(tables[w].clone()));
            let cp = self.checkpointing(w);
            let exec = match role {
                Role::Spout(spec) => Built::Spout(self.spout_executor(parts, spec, cp)?),
                Role::Bolt(spec) => {
                    Built::Bolt(self.bolt_executor(parts, spec, &eos_expected, cp)?)
                }
                Role::Acker => Built::Acker(self.acker_executor(parts, &eos_expected)),
            };
            built.push((i, exec));
        }
        self.launch(built)
    }

    /// Run what was built: each chained executor joins its host's guests (in chain order),
    /// every other one gets a thread.
    fn launch(&mut self, built: Vec<(usize, Built)>) -> anyhow::Result<()> {
        let plan = self.plan.clone();
        let executors = plan.executors();
        let mut at: BTreeMap<usize, Built> = built.into_iter().collect();
        // Guests in chain order: by how far down its chain each one's component is.
        let mut guests: Vec<(usize, usize, usize)> = at
            .keys()
            .filter_map(|&i| {
                let depth = plan.chains.depth_of(executors[i].0);
                self.host_of_exec[i].map(|h| (depth, h, i))
            })
            .collect();
        guests.sort_unstable();
        // Ledgers are shared only as this placement chains executors (a rebalance may have
        // moved tasks that had one).
        for exec in at.values_mut() {
            match exec {
                Built::Spout(s) => s.set_ledger(None),
                Built::Bolt(b) => b.set_ledger(None),
                Built::Acker(_) => {}
            }
        }
        for (_, host, i) in guests {
            let Some(Built::Bolt(mut guest)) = at.remove(&i) else {
                anyhow::bail!("chained executor {i} is not a local bolt");
            };
            match at.get_mut(&host) {
                Some(Built::Spout(s)) => {
                    // A send that blocks in the guest keeps the spout's acks flowing.
                    guest
                        .outbox
                        .drain_while_blocked(self.inboxes[host].1.clone());
                    // The trees the spout starts are settled on its thread with the guests.
                    if s.ledger.is_none() {
                        s.set_ledger(Some(ChainLedger::default()));
                    }
                    guest.set_ledger(s.ledger.clone());
                    if self.is_sole_receiver(executors[host].0, executors[i].0) {
                        s.sole_receiver = Some(executors[i].0.to_string());
                        s.count_targets = self.chained_count_targets(executors[i].0, host);
                    }
                    s.guests.push(Box::new(guest));
                }
                Some(Built::Bolt(b)) => b.guests.push(Box::new(guest)),
                _ => anyhow::bail!("executor {host} cannot host chained executor {i}"),
            }
        }
        let unchained: Vec<usize> = at
            .iter()
            .filter(|(_, e)| matches!(e, Built::Spout(s) if s.sole_receiver.is_none()))
            .map(|(i, _)| *i)
            .collect();
        for i in unchained {
            let mut folds = self.counting_past(i, &at);
            if folds.is_empty() {
                folds = self.folding_into(i, &at);
            }
            let filters = self.filtering_past(i, &at);
            if let Some(Built::Spout(s)) = at.get_mut(&i) {
                s.folds_past_a_bolt = folds;
                s.filters_past_a_bolt = filters;
            }
        }
        for (i, exec) in at {
            let (component, tasks) = &executors[i];
            let name = format!("{component}-{}", tasks.start());
            let done = self.done.0.clone();
            let handle = match exec {
                Built::Spout(e) => spawn_named(name, done, move || e.run())?,
                Built::Bolt(e) => spawn_named(name, done, move || e.run())?,
                Built::Acker(e) => spawn_named(name, done, move || e.run())?,
            };
            self.handles.push((component.to_string(), handle));
        }
        Ok(())
    }

    /// Whether `bolt` is chained right onto spout `spout` and receives its default stream
    /// alone (so a tuple it drops reaches nothing else).
    fn is_sole_receiver(&self, spout: &str, bolt: &str) -> bool {
        self.plan.chains.is_chained(spout, bolt)
            && self.sole_receiver_edge(spout).is_some_and(|s| s.to == bolt)
    }

    /// For `bolt` chained onto spout executor `spout`, task by task: when its output goes to a
    /// `count` it feeds alone (see `counting_tasks`), where each spout task's counts of
    /// `bolt`'s output go (a spout may fold that output, see `Spout::run_fold`).
    fn chained_count_targets(&self, bolt: &str, spout: usize) -> Vec<FoldTarget> {
        let (Some(counts), Some(via)) = (
            self.counting_tasks(bolt, spout),
            self.local_tasks_of(bolt, spout),
        ) else {
            return Vec::new();
        };
        via.into_iter()
            .map(|(task, stats)| self.count_target(bolt, task, &counts, vec![stats]))
            .collect()
    }

    /// Counts of `bolt`'s output for `counts`, counted in the counters `via`, dealt out as
    /// `bolt`'s task `task` would send them.
    fn count_target(
        &self,
        bolt: &str,
        task: u32,
        counts: &[(u32, Arc<TaskStats>)],
        via: Vec<Arc<TaskStats>>,
    ) -> FoldTarget {
        let local: Vec<u32> = counts.iter().map(|(t, _)| *t).collect();
        let route =
            (counts.len() > 1).then(|| Router::new(&self.topology, &self.plan, bolt, task, &local));
        FoldTarget {
            tasks: counts.to_vec(),
            via,
            turn: 0,
            route,
        }
    }

    /// When `bolt`'s one output goes to a bolt that takes partial counts by the one field
    /// `bolt` emits, every task of which runs in the worker of executor `beside`: those tasks
    /// and their counters.
    fn counting_tasks(&self, bolt: &str, beside: usize) -> Option<Vec<(u32, Arc<TaskStats>)>> {
        let mut outputs = self.topology.outputs_of(bolt);
        let (Some(edge), None) = (outputs.next(), outputs.next()) else {
            return None;
        };
        let fields = self.topology.component(bolt)?.output_fields(&edge.stream)?;
        if self.plan.partials.folded_counts_of(&edge.to)? != fields {
            return None;
        }
        self.local_tasks_of(&edge.to, beside)
    }

    /// Every task of `component`, with its counters, when all run in the worker of executor
    /// `beside`.
    fn local_tasks_of(&self, component: &str, beside: usize) -> Option<Vec<(u32, Arc<TaskStats>)>> {
        let tasks = self.plan.component(component)?.tasks.clone();
        tasks
            .map(|task| {
                let exec = (*self.exec_of_task.get(task as usize)?)?;
                if self.worker_of_exec(exec) != self.worker_of_exec(beside) {
                    return None;
                }
                let (_, stats) = self.stats.get(&task)?;
                Some((task, stats.clone()))
            })
            .collect()
    }

    /// For spout executor `spout` (not chained to its receiver): when its lines go, shuffled,
    /// to a bolt of this worker alone whose tasks fold their output into counts for the
    /// `count` after it (`Bolt::counting_fold`: `split` in `wordcount.yaml`), per spout task,
    /// the fold it may run and where the counts go (dealt out as that bolt's router would).
    fn counting_past(
        &self,
        spout: usize,
        at: &BTreeMap<usize, Built>,
    ) -> Vec<(Box<dyn ReaderFold>, FoldTarget)> {
        let executors = self.plan.executors();
        let Some((component, spout_tasks)) = executors.get(spout) else {
            return Vec::new();
        };
        let Some(receiver) = self.shuffled_receiver(component) else {
            return Vec::new();
        };
        let via = self.local_tasks_of(receiver, spout);
        let counts = self.counting_tasks(receiver, spout);
        let (Some(via), Some(counts)) = (via, counts) else {
            return Vec::new();
        };
        let Some(&(first, _)) = via.first() else {
            return Vec::new();
        };
        let fold = match self.built_bolt(first, at) {
            Some(b) => super::guests::Guest::counting_folds(b).and_then(|f| f.into_iter().next()),
            None => None,
        };
        let Some(fold) = fold else {
            return Vec::new();
        };
        let all_via: Vec<Arc<TaskStats>> = via.iter().map(|(_, s)| s.clone()).collect();
        spout_tasks
            .clone()
            .map(|_| {
                let target = self.count_target(receiver, first, &counts, all_via.clone());
                (fold.fresh(), target)
            })
            .collect()
    }

    /// For spout executor `spout` of one task (not chained to its receiver: in a topology that
    /// keeps state): when every tuple of its default stream goes to the one task of a bolt of
    /// this worker that folds lines where they are read (an `aggregate` that emits at the
    /// end), that bolt's fold, which the spout may run (its chunks tagged with their rounds),
    /// and that task.
    fn folding_into(
        &self,
        spout: usize,
        at: &BTreeMap<usize, Built>,
    ) -> Vec<(Box<dyn ReaderFold>, FoldTarget)> {
        let executors = self.plan.executors();
        let Some((component, spout_tasks)) = executors.get(spout) else {
            return Vec::new();
        };
        let Some(edge) = self.sole_receiver_edge(component) else {
            return Vec::new();
        };
        // Its lines read into fields on reader threads (a fold of plain lines is a word
        // count's, see `counting_past`).
        let reads_fields = self
            .topology
            .component(component)
            .is_some_and(|c| c.ctype.reads_fields_apart(c));
        let every_tuple = !matches!(edge.grouping, crate::model::Grouping::Direct)
            && reads_fields
            && self.works_ahead(component, &edge.to);
        let one_each = spout_tasks.start() == spout_tasks.end();
        let local = self.local_tasks_of(&edge.to, spout);
        let (true, true, Some([(task, stats)])) = (every_tuple, one_each, local.as_deref()) else {
            return Vec::new();
        };
        let fold = self.built_bolt(*task, at).and_then(|b| {
            let folds = b.reader_folds_before_prepare()?;
            folds.into_iter().next().map(|(fold, _, _)| fold)
        });
        fold.map(|f| (f, FoldTarget::one(*task, stats.clone())))
            .into_iter()
            .collect()
    }

    /// For spout executor `spout` (not chained to its receiver), per spout task: when its
    /// lines go, shuffled, to a `filter` of this worker alone that keeps no state, its
    /// condition, which the spout may evaluate as it reads (the tuples it passes still go to
    /// the filter, in the rounds of a topology that keeps state), and the counters of the
    /// filter's tasks, which the lines it rejects count in.
    fn filtering_past(
        &self,
        spout: usize,
        at: &BTreeMap<usize, Built>,
    ) -> Vec<(crate::expr::Compiled, RejectTarget)> {
        let Some((condition, via)) = self.filter_after(spout, at) else {
            return Vec::new();
        };
        let tasks = self
            .plan
            .executors()
            .get(spout)
            .map_or(0, |(_, t)| t.clone().count());
        (0..tasks)
            .map(|_| (condition.clone(), RejectTarget::new(via.clone())))
            .collect()
    }

    /// See `filtering_past`: the condition and the filter's counters.
    fn filter_after(
        &self,
        spout: usize,
        at: &BTreeMap<usize, Built>,
    ) -> Option<(crate::expr::Compiled, Vec<Arc<TaskStats>>)> {
        let (component, _) = self.plan.executors().get(spout).cloned()?;
        let receiver = self
            .shuffled_receiver(component)
            .filter(|r| self.works_ahead(component, r))?;
        let via = self.local_tasks_of(receiver, spout)?;
        let input = self
            .topology
            .component(component)?
            .output_fields(crate::model::DEFAULT_STREAM)?;
        // Every executor of the filter is asked: each must take the condition.
        let mut condition = None;
        for &(task, _) in &via {
            let c = super::guests::Guest::filter_condition(self.built_bolt(task, at)?, input)?;
            condition = Some(c);
        }
        Some((condition?, via.into_iter().map(|(_, s)| s).collect()))
    }

    /// Whether `spout` may do `bolt`'s work where it reads (see `chains::may_work_ahead`).
    fn works_ahead(&self, spout: &str, bolt: &str) -> bool {
        let (Some(from), Some(to)) = (
            self.topology.component(spout),
            self.topology.component(bolt),
        ) else {
            return false;
        };
        crate::model::chains::may_work_ahead(&self.topology, from, to)
    }

    /// The one receiver of `spout`'s default stream, when that edge is shuffled (each tuple
    /// may go to any of its tasks).
    fn shuffled_receiver<'s>(&'s self, spout: &'s str) -> Option<&'s str> {
        let edge = self.sole_receiver_edge(spout)?;
        let shuffled = matches!(
            edge.grouping,
            crate::model::Grouping::Shuffle
                | crate::model::Grouping::LocalOrShuffle
                | crate::model::Grouping::None
        );
        shuffled.then_some(edge.to.as_str())
    }

    /// The one edge of `spout`'s default stream, when it has one receiver.
    fn sole_receiver_edge<'s>(&'s self, spout: &'s str) -> Option<&'s crate::model::Stream> {
        let mut receivers = self
            .topology
            .outputs_of(spout)
            .filter(|s| s.stream == crate::model::DEFAULT_STREAM);
        match (receivers.next(), receivers.next()) {
            (Some(edge), None) => Some(edge),
            _ => None,
        }
    }

    /// The bolt executor built here that runs task `task`.
    fn built_bolt<'b>(
        &self,
        task: u32,
        at: &'b BTreeMap<usize, Built>,
    ) -> Option<&'b super::bolt_executor::BoltExecutor> {
        let exec = (*self.exec_of_task.get(task as usize)?)?;
        match at.get(&exec)? {
            Built::Bolt(b) => Some(b),
            _ => None,
        }
    }

    /// What the tasks of executor `i` share.
    fn executor_parts<'t>(
        &self,
        i: usize,
        component: &'t str,
        tasks: RangeInclusive<u32>,
        outbox: Outbox,
    ) -> ExecutorParts<'t> {
        let w = self.worker_of_exec(i);
        let local_tasks = self
            .exec_of_task
            .iter()
            .enumerate()
            .filter(|(_, e)| e.is_some_and(|e| self.worker_of_exec(e) == w))
            .map(|(t, _)| t as u32)
            .collect();
        let first = self
            .plan
            .component(component)
            .map_or(1, |c| *c.tasks.start());
        ExecutorParts {
            component,
            tasks,
            first,
            local_tasks,
            config: Arc::new(self.component_config(component)),
            inbox: self.inboxes[i].clone(),
            host: self.host_of_exec[i].map(|h| self.inboxes[h].0.clone()),
            outbox,
        }
    }

    /// The topology config with the component's own `config` on top.
    fn component_config(&self, component: &str) -> Config {
        let mut cfg = self.topology.config.clone();
        if let Some(spec) = self.topology.component(component) {
            for (k, v) in &spec.config {
                let origin = Origin::Topology {
                    path: self.topology.base_dir.clone(),
                    line: 0,
                };
                cfg.set(k.clone(), v.clone(), origin);
            }
        }
        cfg
    }

    /// The context and collector state of one task, its stats recorded for the run.
    fn task_parts(&mut self, parts: &ExecutorParts, task: u32) -> (TaskContext, Emitter) {
        let stats = Arc::new(TaskStats::default());
        stats.streams.size(self.plan.stream_names.len());
        super::tap::debug(
            parts.config.debug(),
            &self.plan,
            parts.component,
            &stats.taps,
        );
        let component = parts.component.to_string();
        self.stats.insert(task, (component.clone(), stats.clone()));
        let ctx = TaskContext {
            topology: self.topology.clone(),
            plan: self.plan.clone(),
            component: component.clone(),
            task_id: task,
            task_index: task - parts.first,
            config: parts.config.clone(),
            waker: Waker::new(wake_fn(parts)),
            stopping: {
                let control = self.control.clone();
                crate::components::Stopping::new(move || {
                    control.stop.load(std::sync::atomic::Ordering::Relaxed)
                })
            },
            clock: self.control.clock.clone(),
        };
        let router = Router::new(
            &self.topology,
            &self.plan,
            parts.component,
            task,
            &parts.local_tasks,
        );
        let emitter = Emitter::new(task, router, stats, component, task_seed(task));
        (ctx, emitter)
    }

    /// What the executors of worker `w` take part in checkpoints with.
    fn checkpointing(&self, w: usize) -> Option<Checkpointing> {
        let cp = self.checkpoints.as_ref()?;
        cp.setup.for_worker(w, &cp.reports)
    }

    fn spout_executor(
        &mut self,
        parts: ExecutorParts,
        spec: &Component,
        checkpoints: Option<Checkpointing>,
    ) -> anyhow::Result<SpoutExecutor> {
        let mut tasks: Vec<SpoutSlot> = Vec::new();
        for task in parts.tasks.clone() {
            let (ctx, emitter) = self.task_parts(&parts, task);
            let index = task - parts.first;
            let component = catalog::spout(spec, index, &self.topology.base_dir)?;
            let mut slot: SpoutSlot = TaskSlot::new(ctx, component, emitter, 0);
            slot.state.may_block = slot.component.may_block();
            if checkpoints.is_some() {
                slot.state.trees = OpenTrees::numbered(task, &mut slot.emitter.rng);
                slot.state.side = Some(SpoutSide::new(self.control.clock.now()));
            }
            tasks.push(slot);
        }
        Ok(self.assemble_spout(parts, tasks, checkpoints, false))
    }

    /// A spout executor of `tasks` (`resumed`: handed back by a rebalance, their `open`
    /// already done).
    fn assemble_spout(
        &self,
        parts: ExecutorParts,
        tasks: Vec<SpoutSlot>,
        checkpoints: Option<Checkpointing>,
        resumed: bool,
    ) -> SpoutExecutor {
        SpoutExecutor {
            inbox: parts.inbox.1,
            outbox: parts.outbox,
            tasks,
            first_task: *parts.tasks.start(),
            max_pending: self.tracking.max_pending,
            timeout: self.tracking.timeout,
            sample_below: self.tracking.sample_below,
            control: self.control.clone(),
            ack_now: Vec::new(),
            round_start: self.control.clock.now(),
            inactive: false,
            checkpoints,
            resumed,
            guests: Default::default(),
            ledger: None,
            settling: Vec::new(),
            sole_receiver: None,
            count_targets: Vec::new(),
            folds_past_a_bolt: Vec::new(),
            filters_past_a_bolt: Vec::new(),
        }
    }

    /// A bolt executor. In a run that takes checkpoints each task is wrapped (a stateful one
    /// with a gate); otherwise it runs plain, with no checkpoint code on its path.
    fn bolt_executor(
        &mut self,
        parts: ExecutorParts,
        spec: &Component,
        eos_expected: &[u32],
        checkpoints: Option<Checkpointing>,
    ) -> anyhow::Result<BoltExecutor> {
        let mut tasks: Vec<BoltSlot> = Vec::new();
        for task in parts.tasks.clone() {
            let (ctx, emitter) = self.task_parts(&parts, task);
            let bolt = catalog::bolt(spec, &self.topology.base_dir)?;
            let expected = eos_expected[task as usize];
            let component: Box<dyn BoltTask> = match &checkpoints {
                None => Box::new(Plain(bolt.into_plain())),
                Some(cp) => {
                    let index = task - parts.first;
                    let side = BoltSide::new(expected, spec.stateful, parts.component, index);
                    Box::new(Checkpointed::new(bolt, side, cp.clone()))
                }
            };
            tasks.push(TaskSlot::new(ctx, component, emitter, expected));
        }
        Ok(self.assemble_bolt(parts, spec, tasks, false))
    }

    /// A bolt executor of `tasks`, ticked as its component asks.
    fn assemble_bolt(
        &self,
        parts: ExecutorParts,
        spec: &Component,
        tasks: Vec<BoltSlot>,
        resumed: bool,
    ) -> BoltExecutor {
        BoltExecutor::new(
            parts.inbox.1,
            parts.outbox,
            tasks,
            *parts.tasks.start(),
            spec.tick.or_else(|| self.topology.config.tick_freq()),
            self.control.clone(),
            resumed,
        )
    }

    /// The acker's executor.
    fn acker_executor(&mut self, parts: ExecutorParts, eos_expected: &[u32]) -> AckerExecutor {
        let mut tasks: Vec<AckerSlot> = Vec::new();
        for task in parts.tasks.clone() {
            let (ctx, emitter) = self.task_parts(&parts, task);
            let expected = eos_expected[task as usize];
            let acker = Box::new(Acker::default());
            tasks.push(TaskSlot::new(ctx, acker, emitter, expected));
        }
        self.assemble_acker(parts, tasks)
    }

    /// An acker executor of `tasks`, ticked at the message timeout, which expires its trees.
    fn assemble_acker(&self, parts: ExecutorParts, tasks: Vec<AckerSlot>) -> AckerExecutor {
        AckerExecutor {
            inbox: parts.inbox.1,
            outbox: parts.outbox,
            tasks,
            first_task: *parts.tasks.start(),
            timeout: self.tracking.timeout,
            control: self.control.clone(),
        }
    }

    /// Spawn the executors of every worker again with the tasks of a run before a rebalance
    /// (`pool`, by task id), as they were: state, open trees and counters move with them; the
    /// routing, the waker and the executor around them are new.
    pub(crate) fn spawn_resumed(
        &mut self,
        tables: &[RouteTable],
        mut pool: BTreeMap<u32, Pooled>,
    ) -> anyhow::Result<()> {
        let (plan, topology) = (self.plan.clone(), self.topology.clone());
        let mut built = Vec::new();
        for (i, (component, tasks)) in plan.executors().into_iter().enumerate() {
            let w = self.worker_of_exec(i);
            let role = Role::of(&topology, component).ok_or_else(|| {
                anyhow::anyhow!("component `{component}` of the plan is not in the topology")
            })?;
            let parts = self.executor_parts(i, component, tasks, Outbox::new(tables[w].clone()));
            let exec = match role {
                Role::Spout(_) => Built::Spout(self.resumed_spout(parts, &mut pool)?),
                Role::Bolt(spec) => Built::Bolt(self.resumed_bolt(parts, spec, &mut pool)?),
                Role::Acker => Built::Acker(self.resumed_acker(parts, &mut pool)?),
            };
            built.push((i, exec));
        }
        self.launch(built)
    }

    /// Point a task taken over from an earlier layout at its new executor and worker.
    fn refit<C: ?Sized, S>(&mut self, parts: &ExecutorParts, slot: &mut TaskSlot<C, S>) {
        let task = slot.ctx.task_id;
        slot.ctx.topology = self.topology.clone();
        slot.ctx.plan = self.plan.clone();
        slot.ctx.waker.retarget(wake_fn(parts));
        slot.emitter.router = Router::new(
            &self.topology,
            &self.plan,
            parts.component,
            task,
            &parts.local_tasks,
        );
        let stats = slot.emitter.stats.clone();
        self.stats
            .insert(task, (parts.component.to_string(), stats));
    }

    fn resumed_spout(
        &mut self,
        parts: ExecutorParts,
        pool: &mut BTreeMap<u32, Pooled>,
    ) -> anyhow::Result<SpoutExecutor> {
        let mut tasks = Vec::new();
        let mut inactive = false;
        for task in parts.tasks.clone() {
            let Some(Pooled::Spout(slot, was_inactive)) = pool.remove(&task) else {
                anyhow::bail!("rebalance: spout task {task} was not handed back");
            };
            let mut slot = *slot;
            self.refit(&parts, &mut slot);
            inactive |= was_inactive;
            tasks.push(slot);
        }
        let mut executor = self.assemble_spout(parts, tasks, None, true);
        executor.inactive = inactive;
        Ok(executor)
    }

    fn resumed_bolt(
        &mut self,
        parts: ExecutorParts,
        spec: &Component,
        pool: &mut BTreeMap<u32, Pooled>,
    ) -> anyhow::Result<BoltExecutor> {
        let mut tasks = Vec::new();
        for task in parts.tasks.clone() {
            let Some(Pooled::Bolt(mut slot)) = pool.remove(&task) else {
                anyhow::bail!("rebalance: bolt task {task} was not handed back");
            };
            self.refit(&parts, &mut slot);
            tasks.push(slot);
        }
        Ok(self.assemble_bolt(parts, spec, tasks, true))
    }

    fn resumed_acker(
        &mut self,
        parts: ExecutorParts,
        pool: &mut BTreeMap<u32, Pooled>,
    ) -> anyhow::Result<AckerExecutor> {
        let mut tasks = Vec::new();
        for task in parts.tasks.clone() {
            let Some(Pooled::Acker(mut slot)) = pool.remove(&task) else {
                anyhow::bail!("rebalance: acker task {task} was not handed back");
            };
            self.refit(&parts, &mut slot);
            tasks.push(slot);
        }
        Ok(self.assemble_acker(parts, tasks))
    }

    /// The running topology; the wiring's own ends of the queues are dropped, so each queue
    /// closes when the last of its users ends.
    pub(crate) fn running(self, plumbing: Vec<JoinHandle<()>>) -> Running {
        // The coordinator's thread ends once the executors' report channels are all gone.
        let wake = self.wakers();
        let checkpoints = self.checkpoints.and_then(|cp| cp.coordinator);
        let layout = super::Layout {
            topology: self.topology.clone(),
            plan: self.plan.clone(),
            placement: self.placement.clone(),
        };
        Running {
            checkpoints,
            control: self.control,
            stats: self.stats,
            handles: self.handles,
            plumbing,
            plan: self.plan,
            topology: self.topology,
            started: Instant::now(),
            done: self.done.1,
            switches: crossbeam_channel::unbounded(),
            wake,
            ended: Vec::new(),
            latency: BTreeMap::new(),
            layout: Arc::new(std::sync::Mutex::new(Arc::new(layout))),
        }
    }
}

/// What wakes a task's executor: a `Wake` on its queue, and on its host's when it is chained
/// (the host's thread is the one that waits).
fn wake_fn(parts: &ExecutorParts) -> impl Fn() + Send + Sync + 'static {
    let (own, host) = (parts.inbox.0.clone(), parts.host.clone());
    move || {
        let _ = own.try_send(Message::Wake);
        if let Some(host) = &host {
            let _ = host.try_send(Message::Wake);
        }
    }
}

/// An executor built and not running yet.
enum Built {
    Spout(SpoutExecutor),
    Bolt(BoltExecutor),
    Acker(AckerExecutor),
}

/// One task handed back by its executor, waiting for its place in a new layout.
pub(crate) enum Pooled {
    /// A spout task (boxed: it is the largest), and whether it had been told it was
    /// deactivated.
    Spout(Box<SpoutSlot>, bool),
    Bolt(BoltSlot),
    Acker(AckerSlot),
}

/// Every task of the executors' reports, by task id.
pub(crate) fn pool(parked: Vec<Parked>) -> BTreeMap<u32, Pooled> {
    let mut pool = BTreeMap::new();
    for p in parked {
        match p {
            Parked::Spouts { tasks, inactive } => {
                for slot in tasks {
                    pool.insert(slot.ctx.task_id, Pooled::Spout(Box::new(slot), inactive));
                }
            }
            Parked::Bolts(tasks) => {
                for slot in tasks {
                    pool.insert(slot.ctx.task_id, Pooled::Bolt(slot));
                }
            }
            Parked::Ackers(tasks) => {
                for slot in tasks {
                    pool.insert(slot.ctx.task_id, Pooled::Acker(slot));
                }
            }
        }
    }
    pool
}

/// Run an executor on a thread of its own, named `name`, that signals `done` however it ends.
fn spawn_named(
    name: String,
    done: Sender<()>,
    f: impl FnOnce() -> anyhow::Result<ExecutorReport> + Send + 'static,
) -> std::io::Result<JoinHandle<anyhow::Result<ExecutorReport>>> {
    std::thread::Builder::new().name(name).spawn(move || {
        // Signals on the way out even when `f` panics: `wait` then joins the thread and fails
        // the run instead of waiting for a signal that never comes.
        let _signal = SignalOnExit(done);
        f()
    })
}

/// Tells `Running::wait` that an executor thread is ending, however it ends.
struct SignalOnExit(Sender<()>);

impl Drop for SignalOnExit {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}
