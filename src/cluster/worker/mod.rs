//! One worker: fetch the submitted topology and its assignment from
//! nimbus, build the placement (one worker index per distinct slot of the assignment), run the
//! executors assigned to this slot with the runtime, heartbeat its tasks to `/taskbeats`,
//! report component errors to `/taskerrors`, and end when its executors have finished (end of
//! input) or its slot is no longer assigned.
//!
//! A slot's port names the slot; the worker listens on its host's port 0, and tells the port
//! it got with every heartbeat. The replies say where the other workers listen, and its links
//! connect once they know (the worker beats more often until it knows them all).
//!
//! Heartbeats and errors go to nimbus, which writes them into the tree; given the ZooKeeper
//! ensemble (as Storm's workers are), the worker writes them there itself on its own session,
//! and reads its topology's status and assignment there, so they need no nimbus.

use self::checkpoints::{self as worker_checkpoints, Start};
use super::nimbus::{load_submission, now_secs, record_beats};
use crate::cluster::coordination::layout::{
    AssignmentInfo, Listening, NodePort, TaskError, TaskHeartbeat, TopologyStatus,
};
use crate::cluster::nimbus::cluster_state::ClusterState;
use crate::cluster::protocol::rpc::{self, BeatReply, Request, TopologyWork};
use crate::cluster::supervisor::zk_session::ZkSupervisorSettings;

mod checkpoints;
use crate::clock::Clock;
use crate::cluster::coordination::zookeeper::ZkStore;
use crate::model::plan::Plan;
use crate::model::Topology;
use crate::net::auth::Secret;
use crate::placement::Placement;
use crate::runtime::metrics::{ComponentReport, TaskReport, TaskStats};
use crate::runtime::TcpNetwork;
use crate::runtime::{self, RunReport};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a worker heartbeats (Storm's `worker.heartbeat.frequency.secs`, shortened).
const BEAT_EVERY: Duration = Duration::from_secs(1);
/// How often a worker heartbeats while it does not know where every peer listens.
const LEARN_EVERY: Duration = Duration::from_millis(50);
/// A worker whose heartbeats fail for this long (nimbus, or with ZooKeeper the ensemble,
/// unreachable) gives up (an orphan must not run forever).
const NIMBUS_LOST_AFTER: Duration = Duration::from_secs(60);

/// Set (to anything) in a worker's environment, the worker fails as it starts: the fault
/// tests of a slot whose workers keep dying set it on one supervisor.
const FAIL_AT_START_ENV: &str = "STORM_TEST_WORKER_FAILS";

/// How a worker ended.
pub(crate) enum WorkerEnd {
    /// Every local executor finished.
    Finished(RunReport),
    /// The slot was taken away (kill, re-assignment) or nimbus was lost.
    Unassigned,
    /// A worker of the checkpointed topology was lost: this one stopped where it was, and is
    /// to be started again, restoring the last committed checkpoint.
    RolledBack,
}

/// The placement an assignment describes: executors (in `Plan::executors()` order) to worker
/// indexes, one index per distinct slot in slot order, and the slots themselves.
fn placement_of(
    plan: &Plan,
    assignment: &AssignmentInfo,
) -> anyhow::Result<(Placement, Vec<NodePort>)> {
    let slots: Vec<NodePort> = assignment
        .task_to_node_port
        .values()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut worker_of_exec = Vec::new();
    for (component, range) in plan.executors() {
        let task = *range.start();
        let slot = assignment
            .task_to_node_port
            .get(&task)
            .ok_or_else(|| anyhow::anyhow!("task {task} ({component}) is not assigned"))?;
        worker_of_exec.push(slots.iter().position(|s| s == slot).unwrap_or(0));
    }
    Ok((
        Placement {
            worker_of_exec,
            workers: slots.len().max(1),
        },
        slots,
    ))
}

fn resolve(text: &str) -> anyhow::Result<SocketAddr> {
    text.to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("`{text}`: {e}"))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("`{text}` resolves to no address"))
}

/// Fetch the topology, waiting (briefly) for its assignment to name this slot.
fn fetch(nimbus: &rpc::Client, id: &str) -> anyhow::Result<(TopologyWork, AssignmentInfo)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let work: TopologyWork = nimbus.call(&Request::Topology { id: id.into() })?;
        if let Some(a) = work.assignment.clone() {
            return Ok((work, a));
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "topology {id} has no assignment yet"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Where a worker's heartbeats and errors go: to nimbus, or into the ZooKeeper tree directly.
enum Beats<'a> {
    Nimbus(&'a rpc::Client),
    Tree(ClusterState<Arc<ZkStore>>),
}

impl Beats<'_> {
    /// On the ensemble when one is given (its own session), else through nimbus.
    fn open<'a>(
        nimbus: &'a rpc::Client,
        zk: Option<&ZkSupervisorSettings>,
    ) -> anyhow::Result<Beats<'a>> {
        let Some(zk) = zk else {
            return Ok(Beats::Nimbus(nimbus));
        };
        let store = ZkStore::connect(zk.settings.clone())
            .map_err(|e| anyhow::anyhow!("storm.zookeeper.servers: {e}"))?;
        Ok(Beats::Tree(ClusterState::new(Arc::new(store), &zk.root)?))
    }

    /// Send (or write) one round of heartbeats; the answer says whether to go on.
    fn beat(
        &self,
        id: &str,
        slot: &NodePort,
        beats: Vec<(u32, TaskHeartbeat)>,
    ) -> anyhow::Result<BeatReply> {
        match self {
            Beats::Nimbus(nimbus) => nimbus.call(&Request::TaskBeats {
                id: id.into(),
                slot: slot.clone(),
                beats,
            }),
            Beats::Tree(state) => {
                // A session that expired is replaced by a new one (heartbeat nodes are
                // persistent, so nothing needs creating again); while disconnected the beat
                // fails at once rather than wait out the connection timeout.
                let store = state.store();
                store.renew()?;
                anyhow::ensure!(
                    store.connected(),
                    "disconnected from ZooKeeper at {}",
                    store.address()
                );
                Ok(record_beats(state, id, slot, &beats)?)
            }
        }
    }

    /// Storm's `report-error`: the error lands under `/taskerrors` of `task`, with the
    /// worker (`host:port`) it happened in.
    fn report_error(
        &self,
        id: &str,
        task: u32,
        error: String,
        worker: String,
    ) -> anyhow::Result<()> {
        match self {
            Beats::Nimbus(nimbus) => {
                let report = Request::ReportError {
                    id: id.into(),
                    task,
                    error,
                    worker: Some(worker),
                };
                nimbus.call::<serde_json::Value>(&report)?;
            }
            Beats::Tree(state) => {
                let error = TaskError {
                    error,
                    time_secs: now_secs(),
                    worker: Some(worker),
                };
                state.report_error(id, task, &error)?;
            }
        }
        Ok(())
    }
}

/// Run the worker of slot `slot` (`host:port`) of topology `id` until it finishes, its slot is
/// unassigned, or `stop` is set (then it drains). With `zk`, heartbeats and errors are written
/// into that ensemble instead of sent to nimbus.
pub(crate) fn run(
    nimbus: &rpc::Client,
    zk: Option<&ZkSupervisorSettings>,
    id: &str,
    slot: &str,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<WorkerEnd> {
    let (work, assignment) = fetch(nimbus, id)?;
    let sink = Beats::open(nimbus, zk)?;
    // A killed topology keeps its assignment while it drains (Storm's kill wait): a worker
    // restarted then runs too, its spouts inactive (the first heartbeat says so), so its
    // bolts finish and the drain can end.
    if work.status == TopologyStatus::Killed {
        stop.store(true, Ordering::Relaxed);
    }
    // The folder of shipped scripts goes when the worker ends.
    let (topology, _resources) = load_for_worker(&work, id, slot)?;
    let reporting = runtime::reporters::configured(&topology.config)?;
    let plan = Plan::new(&topology);
    let incarnation = rand::random();
    let mut assignment = assignment;
    // A checkpointed topology's worker joins its generation first, and restores its tasks;
    // it heartbeats meanwhile, or it would be taken for hung. The generation may run with a
    // newer assignment than the one fetched: then it places itself again.
    let (located, remote, checkpoints) = loop {
        let Some(located) = locate(&plan, &assignment, id, slot)? else {
            return Ok(WorkerEnd::Unassigned);
        };
        if !topology.is_stateful() {
            break (located, None, None);
        }
        let who = worker_checkpoints::Joining {
            id,
            slot: &located.slots[located.me],
            incarnation,
            assignment: rpc::assignment_version(&assignment),
        };
        let idle = idle_stats(&plan, &located.placement, located.me);
        let beat = || {
            let _ = sink.beat(id, who.slot, beats_of(&idle, Duration::ZERO));
        };
        let parts = (&topology, &plan, &located.placement, located.me);
        match worker_checkpoints::start(nimbus, &who, parts, &stop, &beat)? {
            Start::Started(remote, cps) => break (located, Some(remote), Some(cps)),
            Start::Stopped => {
                // Stopped (killed, drained) before it ran anything: nothing to drain here,
                // and the run must not wait for this slot.
                tell_finished(nimbus, (id, slot, who.slot), None);
                return Ok(WorkerEnd::Unassigned);
            }
            Start::Moved => assignment = fetch(nimbus, id)?.1,
        }
    };
    let (placement, me) = (located.placement, located.me);
    let my_slot = located.slots[me].clone();
    let secret = Secret::from_config(&topology.config);
    let net = TcpNetwork::new([(me, located.listen)].into(), [me], secret);
    let drain_limit = topology.config.message_timeout() + runtime::DRAIN_GRACE;
    let running = runtime::start_checkpointed(Arc::new(topology), &placement, &[me], &net, remote)?;
    let stats = running.stats.clone();
    tracing::info!("worker {slot}: running {} task(s) of {id}", stats.len());
    // Dropped when this function returns: the last reading follows the drain.
    let _reporters = runtime::reporters::start(reporting, id, my_slot.port, &stats);
    let w = Watch {
        nimbus,
        sink: &sink,
        id,
        slot,
        my_slot: &my_slot,
        listening: listening(&net, me, &my_slot, slot)?,
        slots: &located.slots,
        stats: &stats,
        started: running.control.clock.now(),
        clock: running.control.clock.clone(),
        stop: &stop,
        drain_limit,
    };
    w.watch_to_end(running, &net, checkpoints)
}

/// Where this worker (`me`, of slot `my_slot`, named `slot`) listens, now that it started.
fn listening(
    net: &TcpNetwork,
    me: usize,
    my_slot: &NodePort,
    slot: &str,
) -> anyhow::Result<Listening> {
    let addr = net
        .peers()
        .get(me)
        .filter(|a| a.port() != 0)
        .ok_or_else(|| anyhow::anyhow!("worker {slot}: not listening after its start"))?;
    tracing::info!("worker {slot}: listening on {addr}");
    Ok(Listening {
        slot: my_slot.clone(),
        addr: addr.to_string(),
    })
}

/// The submitted topology as this worker runs it: validated here, its shipped scripts
/// unpacked for this worker (the guard removes them), `storm.id` set.
fn load_for_worker(
    work: &TopologyWork,
    id: &str,
    slot: &str,
) -> anyhow::Result<(
    Topology,
    Option<crate::cluster::protocol::multilang_files::Unpacked>,
)> {
    anyhow::ensure!(
        std::env::var_os(FAIL_AT_START_ENV).is_none(),
        "worker {slot}: {FAIL_AT_START_ENV} is set: failing at start"
    );
    let mut topology = load_submission(&work.submission)
        .map_err(|e| anyhow::anyhow!("topology {id} does not validate here:\n{e}"))?;
    let resources = crate::cluster::protocol::multilang_files::for_worker(
        &work.submission,
        &mut topology,
        id,
        slot,
    )?;
    // Storm's workers know their topology's id as `storm.id` (multilang children are told it).
    topology
        .config
        .set("storm.id", id.into(), crate::config::Origin::Default);
    Ok((topology, resources))
}

/// What watching a worker's run came to.
enum Watched {
    /// Its executors ended, well or not.
    Done(anyhow::Result<RunReport>),
    /// It was stopped first: unassigned, nimbus lost, or rolled back.
    Ended(WorkerEnd),
}

/// A worker's run as it is watched: where it reports, and its figures.
struct Watch<'a> {
    nimbus: &'a rpc::Client,
    sink: &'a Beats<'a>,
    id: &'a str,
    slot: &'a str,
    my_slot: &'a NodePort,
    /// Where this worker listens, told with every heartbeat.
    listening: Listening,
    /// The slot of every worker, by index.
    slots: &'a [NodePort],
    stats: &'a TaskStatsMap,
    started: Instant,
    /// The run's clock: what its heartbeats, drain limit and loss of nimbus go by.
    clock: Clock,
    stop: &'a AtomicBool,
    /// How long a drain may take before what is still pending is abandoned.
    drain_limit: Duration,
}

impl Watch<'_> {
    fn beat(&self) -> anyhow::Result<BeatReply> {
        let mut beats = beats_of(self.stats, self.clock.since(self.started));
        for (_, b) in &mut beats {
            b.listening = Some(self.listening.clone());
        }
        self.sink.beat(self.id, self.my_slot, beats)
    }

    /// Put where the other workers listen, as the reply says, in the network's book. Returns
    /// when to beat next: soon while the book does not know every worker yet.
    fn learn(&self, net: &TcpNetwork, heard: &[Listening]) -> Instant {
        for l in heard {
            let Some(w) = self.slots.iter().position(|s| *s == l.slot) else {
                continue;
            };
            match l.addr.parse::<SocketAddr>() {
                Ok(addr) if net.peers().get(w) != Some(addr) => {
                    tracing::debug!("worker {}: {} listens on {addr}", self.slot, l.slot);
                    net.peers().set(w, addr);
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(
                    "worker {}: {} reported `{}`: {e}",
                    self.slot,
                    l.slot,
                    l.addr
                ),
            }
        }
        if net.peers().knows_all(self.slots.len()) {
            self.clock.now() + BEAT_EVERY
        } else {
            self.clock.now() + LEARN_EVERY
        }
    }

    /// [`Self::watch`], then the worker's end: its report to nimbus, or its failure.
    fn watch_to_end(
        &self,
        running: runtime::Running,
        net: &TcpNetwork,
        mut checkpoints: Option<worker_checkpoints::WorkerCheckpoints>,
    ) -> anyhow::Result<WorkerEnd> {
        match self.watch(running, net, checkpoints.as_ref())? {
            Watched::Ended(end) => Ok(end),
            Watched::Done(Ok(report)) => self.finished(report, checkpoints.as_mut()),
            Watched::Done(Err(e)) => {
                self.failed(&e);
                Err(e)
            }
        }
    }

    /// Once the run drains (`draining_since` is when it began), and for longer than the drain
    /// limit by the run's clock: give up what is still pending.
    fn abandon_an_overdue_drain(
        &self,
        control: &runtime::executor::RunControl,
        draining_since: &mut Option<Instant>,
    ) {
        if !control.stop.load(Ordering::Relaxed) {
            return;
        }
        let since = *draining_since.get_or_insert_with(|| self.clock.now());
        if self.clock.since(since) >= self.drain_limit
            && !control.abandon.swap(true, Ordering::Relaxed)
        {
            tracing::warn!(
                "worker {}: the drain outlasted the message timeout + {}s; \
                 giving up what is still pending",
                self.slot,
                runtime::DRAIN_GRACE.as_secs()
            );
        }
    }

    /// Heartbeat until the executors end, following what the answers say (pause, stop,
    /// unassigned, a newer generation to roll back to).
    fn watch(
        &self,
        running: runtime::Running,
        net: &TcpNetwork,
        checkpoints: Option<&worker_checkpoints::WorkerCheckpoints>,
    ) -> anyhow::Result<Watched> {
        let (id, slot) = (self.id, self.slot);
        let halter = running.halter();
        let control = running.control.clone();
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        let waiter = std::thread::Builder::new()
            .name("worker-wait".into())
            .spawn(move || {
                let _ = done_tx.send(running.wait());
            })?;
        let clock = &self.clock;
        let mut last_contact = clock.now();
        let mut next_beat = last_contact;
        let mut draining_since: Option<Instant> = None;
        let mut levels = crate::log_config::LogConfig::default();
        let result = loop {
            if self.stop.load(Ordering::Relaxed) {
                control.stop.store(true, Ordering::Relaxed);
            }
            self.abandon_an_overdue_drain(&control, &mut draining_since);
            if checkpoints.is_some_and(|c| c.rolled_back()) {
                net.sever();
                let end = roll_back(slot, &halter, &done_rx, waiter);
                self.held_output_rolls_back();
                return Ok(Watched::Ended(end));
            }
            if let Ok(r) = done_rx.recv_timeout(Duration::from_millis(100)) {
                break r;
            }
            if clock.now() < next_beat {
                continue;
            }
            next_beat = clock.now() + BEAT_EVERY;
            match self.beat() {
                Ok(reply) => {
                    last_contact = clock.now();
                    next_beat = self.learn(net, &reply.listening);
                    if let Some(c) = checkpoints {
                        c.heard(reply.generation, reply.committed);
                    }
                    if reply.log_config != levels {
                        self.install_levels(&reply.log_config);
                        levels = reply.log_config;
                    }
                    if !reply.assigned {
                        tracing::info!("worker {slot}: no longer assigned to {id}; stopping");
                        return Ok(Watched::Ended(WorkerEnd::Unassigned));
                    }
                    // A deactivated topology pauses its spouts; a killed one stops them and
                    // drains the tuples in flight.
                    control.paused.store(reply.paused, Ordering::Relaxed);
                    if !reply.active && !reply.paused {
                        control.stop.store(true, Ordering::Relaxed);
                    }
                }
                Err(e) if clock.since(last_contact) > NIMBUS_LOST_AFTER => {
                    tracing::warn!("worker {slot}: heartbeats failing ({e:#}); stopping");
                    return Ok(Watched::Ended(WorkerEnd::Unassigned));
                }
                Err(e) => tracing::debug!("worker {slot}: heartbeat failed: {e:#}"),
            }
        };
        let _ = waiter.join();
        Ok(Watched::Done(result))
    }

    /// Storm's `LogConfigManager`: the topology's log levels (as nimbus keeps them) installed
    /// in this process's log filter; each goes back to the starting level when its timeout
    /// passes (the filter's own timer), or when nimbus no longer lists it.
    fn install_levels(&self, config: &crate::log_config::LogConfig) {
        let now = crate::log_config::now_ms();
        match crate::logging::set_named_levels(&config.directives(now)) {
            // Written whatever the filter lets through: the operator asked for it.
            Ok(()) => crate::stderr_println!(
                "worker {}: log levels set: {}",
                self.slot,
                config.describe(now)
            ),
            Err(e) => tracing::warn!("worker {}: cannot set the log levels: {e:#}", self.slot),
        }
    }

    /// The executors ended well: a last heartbeat with the final figures, then the end of
    /// input; a checkpointed worker then waits until every worker finished.
    fn finished(
        &self,
        report: RunReport,
        checkpoints: Option<&mut worker_checkpoints::WorkerCheckpoints>,
    ) -> anyhow::Result<WorkerEnd> {
        // Everything the tasks prepared is shipped first.
        let checkpoints = checkpoints.map(|c| {
            c.shipped();
            &*c
        });
        if checkpoints.is_some_and(|c| c.rolled_back()) {
            return Ok(WorkerEnd::RolledBack);
        }
        let _ = self.beat();
        let generation = checkpoints.map(|c| c.generation);
        tell_finished(self.nimbus, (self.id, self.slot, self.my_slot), generation);
        if let Some(c) = checkpoints {
            // Until every worker finished, a lost one rolls this one back too (its spouts
            // replay from the last commit).
            let beat = || {
                let _ = self.beat();
            };
            if !all_finished(self.nimbus, self.id, c, self.stop, &beat) {
                self.held_output_rolls_back();
                return Ok(WorkerEnd::RolledBack);
            }
            // No rollback can come now: what is held goes out.
            if let Err(e) = crate::components::stdout::release_held(None) {
                tracing::warn!("cannot write to standard output: {e}");
            }
        }
        Ok(WorkerEnd::Finished(report))
    }

    /// A rollback: the held output the last commit covers goes out (its producers will not
    /// emit it again), the rest is dropped (it is produced again).
    fn held_output_rolls_back(&self) {
        let Some(gate) = crate::components::output_gate::get() else {
            return;
        };
        let status = Request::CheckpointStatus { id: self.id.into() };
        match self.nimbus.call::<rpc::CheckpointReply>(&status) {
            Ok(reply) => {
                if let Err(e) = crate::components::stdout::release_held(Some(reply.committed)) {
                    tracing::warn!("cannot write to standard output: {e}");
                }
            }
            Err(e) => tracing::warn!("worker {}: no last commit from nimbus: {e:#}", self.slot),
        }
        gate.discard();
    }

    /// Storm's `report-error`: the error lands under /taskerrors of a task of the component
    /// it failed in, else of a task of this worker.
    fn failed(&self, e: &anyhow::Error) {
        let failed = e.downcast_ref::<crate::runtime::ComponentFailed>();
        let named = self
            .stats
            .iter()
            .find(|(_, (component, _))| failed.is_some_and(|f| &f.component == component))
            .or_else(|| self.stats.iter().next())
            .map(|(task, _)| *task);
        if let Some(task) = named {
            let error = format!("{e:#}");
            if let Err(report) = self
                .sink
                .report_error(self.id, task, error, self.slot.to_string())
            {
                tracing::warn!("worker {}: cannot report its error: {report:#}", self.slot);
            }
        }
    }
}

/// Where a worker is in an assignment: the placement, the slots, which one is this worker's,
/// and the address it listens on (its host's, port 0: the port it gets is reported).
struct Located {
    placement: Placement,
    slots: Vec<NodePort>,
    me: usize,
    listen: SocketAddr,
}

/// Place worker `slot` (`host:port`) by `assignment`; `None` when it is not in it.
fn locate(
    plan: &Plan,
    assignment: &AssignmentInfo,
    id: &str,
    slot: &str,
) -> anyhow::Result<Option<Located>> {
    let (placement, slots) = placement_of(plan, assignment)?;
    // The slots' `host:port` names, resolved as this worker's own name is.
    let mut addresses = Vec::new();
    for s in &slots {
        let host = assignment.node_host.get(&s.node).ok_or_else(|| {
            anyhow::anyhow!("supervisor {} has no host in the assignment", s.node)
        })?;
        addresses.push(resolve(&format!("{host}:{}", s.port))?);
    }
    let me_addr = resolve(slot)?;
    let Some(me) = addresses.iter().position(|a| *a == me_addr) else {
        tracing::info!("worker {slot}: not in the assignment of {id}; nothing to run");
        return Ok(None);
    };
    Ok(Some(Located {
        placement,
        slots,
        me,
        listen: SocketAddr::new(me_addr.ip(), 0),
    }))
}

/// Stop the run where it is (a rollback): every executor parks, and the stdin feed's readers
/// of this run end. Waits a while for the executors; one still busy is left to end with the
/// process.
fn roll_back(
    slot: &str,
    halter: &runtime::Halter,
    done: &crossbeam_channel::Receiver<anyhow::Result<RunReport>>,
    waiter: std::thread::JoinHandle<()>,
) -> WorkerEnd {
    tracing::warn!("worker {slot}: a worker of the topology was lost; rolling back");
    halter.halt();
    if let Some(f) = crate::components::stdin_file::feed::get() {
        f.new_epoch();
    }

    match done.recv_timeout(HALT_WAIT) {
        Ok(_) => {
            let _ = waiter.join();
        }
        Err(_) => tracing::warn!("worker {slot}: executors still busy after the rollback"),
    }
    WorkerEnd::RolledBack
}

/// How long a rollback waits for the executors to stop.
const HALT_WAIT: Duration = Duration::from_secs(10);

/// Wait until every worker of the topology finished (true), or this one must roll back
/// (false); `stop` ends the wait (true).
fn all_finished(
    nimbus: &rpc::Client,
    id: &str,
    checkpoints: &worker_checkpoints::WorkerCheckpoints,
    stop: &AtomicBool,
    beat: &dyn Fn(),
) -> bool {
    let status = Request::CheckpointStatus { id: id.into() };
    let mut last_contact = Instant::now();
    let mut next_beat = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if Instant::now() >= next_beat {
            beat();
            next_beat = Instant::now() + BEAT_EVERY;
        }
        match nimbus.call::<rpc::CheckpointReply>(&status) {
            Ok(reply) => {
                last_contact = Instant::now();
                checkpoints.heard(reply.generation, reply.committed);
                if checkpoints.rolled_back() {
                    return false;
                }
                if reply.all_finished {
                    return true;
                }
            }
            Err(e) if last_contact.elapsed() > NIMBUS_LOST_AFTER => {
                tracing::warn!("worker: nimbus lost while waiting for the others ({e:#})");
                return true;
            }
            Err(_) => {}
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

/// Tell nimbus the worker of `my_slot` (`slot`) of topology `id` finished its executors (in
/// checkpoint `generation`), trying again with back-off for up to [`NIMBUS_LOST_AFTER`] while
/// no nimbus answers (an election: the run's end waits on this).
fn tell_finished(
    nimbus: &rpc::Client,
    (id, slot, my_slot): (&str, &str, &NodePort),
    generation: Option<u64>,
) {
    let finished = Request::Finished {
        id: id.into(),
        slot: my_slot.clone(),
        generation,
    };
    let deadline = Instant::now() + NIMBUS_LOST_AFTER;
    let mut wait = Duration::from_millis(100);
    loop {
        match nimbus.call::<serde_json::Value>(&finished) {
            Ok(_) => return,
            Err(e) if Instant::now() >= deadline => {
                tracing::warn!("worker {slot}: cannot tell nimbus it finished: {e:#}");
                return;
            }
            Err(e) => tracing::debug!("worker {slot}: telling nimbus it finished: {e:#}"),
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(Duration::from_secs(2));
    }
}

/// Zero counters for the tasks of worker `me`, for its heartbeats before it runs them.
fn idle_stats(plan: &Plan, placement: &Placement, me: usize) -> TaskStatsMap {
    let mut out = TaskStatsMap::new();
    for (component, tasks) in placement.executors_of(plan, me) {
        for t in tasks {
            out.insert(t, (component.to_string(), Arc::default()));
        }
    }
    out
}

/// The heartbeats of a worker's tasks: time, uptime and their counters.
fn beats_of(stats: &TaskStatsMap, uptime: Duration) -> Vec<(u32, TaskHeartbeat)> {
    stats
        .iter()
        .map(|(task, (component, st))| {
            let mut m = serde_json::Map::new();
            let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
            m.insert("component".into(), component.clone().into());
            for (name, counter) in [
                ("emitted", &st.emitted),
                ("transferred", &st.transferred),
                ("execute_ns", &st.execute_ns),
                ("complete_us", &st.complete_us),
                ("completes_sampled", &st.completes_sampled),
                ("errors", &st.errors),
                ("executed", &st.executed),
                ("acked", &st.acked),
                ("failed", &st.failed),
                ("lost", &st.lost),
                ("abandoned", &st.abandoned),
                ("dropped", &st.dropped),
            ] {
                m.insert(name.into(), get(counter).into());
            }
            let streams: serde_json::Map<String, serde_json::Value> = st
                .streams
                .read()
                .into_iter()
                .map(|(id, e, t)| (id.to_string(), serde_json::json!([e, t])))
                .collect();
            if !streams.is_empty() {
                m.insert("streams".into(), streams.into());
            }
            let lag = st.lag();
            if !lag.is_empty() {
                m.insert("lag".into(), serde_json::to_value(lag).unwrap_or_default());
            }
            let beat = TaskHeartbeat {
                time_secs: now_secs(),
                uptime_secs: uptime.as_secs(),
                stats: m,
                listening: None,
            };
            (*task, beat)
        })
        .collect()
}

type TaskStatsMap = BTreeMap<u32, (String, Arc<TaskStats>)>;

/// Add the figures other workers reported in their heartbeats to this worker's report, so the
/// summary of a run spread over processes counts every task.
pub(crate) fn merge_heartbeats(report: &mut RunReport, beats: &BTreeMap<u32, TaskHeartbeat>) {
    let stat = |b: &TaskHeartbeat, k: &str| b.stats.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    let known: std::collections::BTreeSet<u32> = report
        .components
        .iter()
        .flat_map(|c| c.per_task.iter().map(|t| t.task))
        .collect();
    for (task, beat) in beats {
        if known.contains(task) {
            continue;
        }
        let Some(component) = beat.stats.get("component").and_then(|v| v.as_str()) else {
            continue;
        };
        let Some(c) = report.components.iter_mut().find(|c| c.id == component) else {
            continue;
        };
        let t = TaskReport {
            task: *task,
            emitted: stat(beat, "emitted"),
            transferred: 0,
            executed: stat(beat, "executed"),
            acked: stat(beat, "acked"),
            failed: stat(beat, "failed"),
        };
        c.tasks += 1;
        c.emitted += t.emitted;
        c.executed += t.executed;
        c.acked += t.acked;
        c.failed += t.failed;
        c.lost += stat(beat, "lost");
        c.dropped += stat(beat, "dropped");
        report.lost += stat(beat, "lost");
        report.abandoned += stat(beat, "abandoned");
        c.per_task.push(t);
    }
    for c in &mut report.components {
        c.per_task.sort_by_key(|t| t.task);
    }
}

/// A run report made only of heartbeats (a `--processes` run with no executor at home).
pub(crate) fn report_from_heartbeats(
    plan: &Plan,
    beats: &BTreeMap<u32, TaskHeartbeat>,
    elapsed: Duration,
) -> RunReport {
    let components = plan
        .components
        .iter()
        .map(|c| ComponentReport {
            id: c.id.clone(),
            kind: if c.id == crate::model::plan::ACKER_ID {
                "acker"
            } else {
                "component"
            },
            executors: u32::try_from(c.executors.len()).unwrap_or(u32::MAX),
            ..Default::default()
        })
        .collect();
    let mut report = RunReport {
        components,
        elapsed,
        lost: 0,
        abandoned: 0,
        acking: plan.ackers > 0,
        checkpoints: None,
    };
    merge_heartbeats(&mut report, beats);
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::coordination::znode_store::CoordinationStore;

    fn component(id: &str, tasks: &[u32]) -> crate::runtime::metrics::ComponentReport {
        crate::runtime::metrics::ComponentReport {
            id: id.into(),
            kind: "bolt",
            tasks: tasks.len() as u32,
            executors: 1,
            emitted: 5,
            executed: 5,
            per_task: tasks
                .iter()
                .map(|t| TaskReport {
                    task: *t,
                    emitted: 5,
                    transferred: 0,
                    executed: 5,
                    acked: 0,
                    failed: 0,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn heartbeats_of_other_workers_add_their_tasks_once() {
        let mut report = RunReport {
            components: vec![component("count", &[2])],
            elapsed: Duration::from_secs(1),
            lost: 0,
            abandoned: 0,
            acking: false,
            checkpoints: None,
        };
        let beat = |component: &str, emitted: u64| {
            let v = serde_json::json!({"component": component, "emitted": emitted, "executed": 7, "lost": 1});
            TaskHeartbeat {
                time_secs: 0,
                uptime_secs: 0,
                stats: v.as_object().cloned().unwrap_or_default(),
                listening: None,
            }
        };
        let beats: BTreeMap<u32, TaskHeartbeat> = [
            (2, beat("count", 100)),
            (3, beat("count", 10)),
            (4, beat("gone", 1)),
        ]
        .into();
        merge_heartbeats(&mut report, &beats);
        let c = &report.components[0];
        assert_eq!((c.tasks, c.emitted, c.executed, c.lost), (2, 15, 12, 1));
        assert_eq!(
            c.per_task.iter().map(|t| t.task).collect::<Vec<_>>(),
            vec![2, 3]
        );
        assert_eq!(report.lost, 1);
    }

    /// What nimbus answers a worker's heartbeat, and a worker on ZooKeeper works out itself:
    /// beats land only while the slot is assigned; the status says run, pause or stop.
    #[test]
    fn beats_are_recorded_only_for_an_assigned_slot() {
        let (state, id) = one_slot_cluster();
        let beat = TaskHeartbeat {
            time_secs: 7,
            uptime_secs: 1,
            stats: serde_json::Map::new(),
            listening: None,
        };
        let beats = vec![(1, beat)];
        let ours = NodePort {
            node: "s".into(),
            port: 6700,
        };
        let other = NodePort {
            node: "s".into(),
            port: 6701,
        };

        let reply = record_beats(&state, &id, &other, &beats).unwrap();
        assert!(!reply.assigned);
        assert!(state.task_heartbeats(&id).unwrap().is_empty());
        let reply = record_beats(&state, &id, &ours, &beats).unwrap();
        assert!(reply.assigned && !reply.active && reply.paused);
        assert_eq!(state.task_heartbeats(&id).unwrap()[&1].time_secs, 7);
        state.activate(&id).unwrap();
        let reply = record_beats(&state, &id, &ours, &beats).unwrap();
        assert!(reply.active && !reply.paused);
        state.set_status(&id, TopologyStatus::Killed).unwrap();
        let reply = record_beats(&state, &id, &ours, &beats).unwrap();
        assert!(!reply.active && !reply.paused);
        let reply = record_beats(&state, "gone-1-1", &ours, &beats).unwrap();
        assert!(!reply.assigned);
    }

    /// Word count submitted and assigned to supervisor `s`'s one slot, 6700: the state and
    /// the topology's id.
    fn one_slot_cluster() -> (
        ClusterState<crate::cluster::coordination::tree::SharedTree>,
        String,
    ) {
        let store = crate::cluster::coordination::tree::SharedTree::new();
        let mut state = ClusterState::new(store.clone(), "/storm").unwrap();
        let info = crate::cluster::coordination::layout::SupervisorInfo {
            hostname: "h".into(),
            time_secs: 1,
            uptime_secs: 0,
            ports: vec![6700],
        };
        let session = store.open_session(Duration::from_secs(30));
        state.supervisor_heartbeat(session, "s", &info).unwrap();
        let topo = crate::cluster::nimbus::simulation::tests::wordcount(&[]);
        let plan = Plan::new(&topo);
        let id = state.submit(&topo, &plan, 100).unwrap();
        state.assign(&id, &plan, 1, 100).unwrap();
        (state, id)
    }

    /// The reply says where the assignment's workers listen, as the last beat of each slot's
    /// first task said; a beat written by the worker of another slot (the task moved, and its
    /// new worker has not beaten yet) says nothing of this one.
    #[test]
    fn replies_say_where_the_workers_listen() {
        let (state, id) = one_slot_cluster();
        let first = *state
            .assignment(&id)
            .unwrap()
            .unwrap()
            .task_to_node_port
            .keys()
            .next()
            .unwrap();
        let slot = |port| NodePort {
            node: "s".into(),
            port,
        };
        let at = |port, addr: &str| Listening {
            slot: slot(port),
            addr: addr.into(),
        };
        let beat = |listening| TaskHeartbeat {
            time_secs: 1,
            uptime_secs: 0,
            stats: serde_json::Map::new(),
            listening,
        };
        let reply = record_beats(&state, &id, &slot(6700), &[(first, beat(None))]).unwrap();
        assert!(reply.assigned && reply.listening.is_empty());
        let stale = beat(Some(at(6701, "127.0.0.1:40001")));
        state.task_heartbeat(&id, first, &stale).unwrap();
        let reply = record_beats(&state, &id, &slot(6700), &[]).unwrap();
        assert!(reply.listening.is_empty(), "{:?}", reply.listening);
        let ours = beat(Some(at(6700, "127.0.0.1:40002")));
        let reply = record_beats(&state, &id, &slot(6700), &[(first, ours)]).unwrap();
        assert_eq!(reply.listening, vec![at(6700, "127.0.0.1:40002")]);
    }

    #[test]
    fn placement_follows_the_distinct_slots_of_the_assignment() {
        let topo = crate::cluster::nimbus::simulation::tests::wordcount(&[]);
        let plan = Plan::new(&topo);
        let mut a = AssignmentInfo::default();
        let slot = |p| NodePort {
            node: "s".into(),
            port: p,
        };
        for (i, (_, r)) in plan.executors().into_iter().enumerate() {
            for t in r {
                a.task_to_node_port
                    .insert(t, slot(if i % 2 == 0 { 6701 } else { 6700 }));
            }
        }
        let (p, slots) = placement_of(&plan, &a).unwrap();
        assert_eq!(slots, vec![slot(6700), slot(6701)]);
        assert_eq!(p.workers, 2);
        assert_eq!(p.worker_of_exec[0], 1);
        assert_eq!(p.worker_of_exec[1], 0);
    }
}
