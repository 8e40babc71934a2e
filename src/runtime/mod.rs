//! The runtime: builds workers and executors from the plan and runs them. Local mode runs all
//! `topology.workers` workers in this process; tuples crossing workers take the transfer thread →
//! link → receive thread path that processes and hosts use (only the link differs).

pub mod acker;
mod acker_executor;
mod bolt_executor;
mod bolt_task;
mod builder;
mod chain_hosts;
mod chain_ledger;
pub(crate) mod checkpoint;
mod collector;
mod congestion;
pub(crate) mod executor;
mod guests;
pub mod message;
pub mod metrics;
mod open_trees;
mod partials;
pub(crate) mod rebalance;
pub(crate) mod reporters;
mod routing;
mod spout_checkpoints;
mod spout_executor;
pub(crate) mod tap;
mod tcp;
pub mod wire;
mod worker;

pub use tcp::TcpNetwork;

use crate::model::plan::{Plan, ACKER_ID};
use crate::model::{Component, Topology};
use crate::net::link::{Link, Network};
use crate::placement::Placement;
use builder::{ExecutorHandle, Wiring};
use executor::RunControl;
use metrics::{ComponentReport, Histogram, LatencyReport, TaskReport, TaskStats};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Default `topology.max.spout.pending` when acking is on and none is set.
const DEFAULT_MAX_PENDING: u64 = crate::config::DEFAULT_MAX_SPOUT_PENDING;

/// How a run is laid out now (a local run's changes with each rebalance): what its UI shows.
#[derive(Debug)]
pub(crate) struct Layout {
    pub(crate) topology: Arc<Topology>,
    pub(crate) plan: Arc<Plan>,
    pub(crate) placement: Placement,
}

/// The layout, replaced whole by each rebalance.
type SharedLayout = Arc<std::sync::Mutex<Arc<Layout>>>;

/// What a finished run reports.
#[derive(Debug)]
pub struct RunReport {
    pub components: Vec<ComponentReport>,
    pub(crate) elapsed: Duration,
    /// Tuples given up after their retries.
    pub lost: u64,
    /// Trees still pending when a drain's deadline passed, given up (local runs).
    pub(crate) abandoned: u64,
    /// Whether acking was on.
    pub(crate) acking: bool,
    /// What checkpoints did, when the run took them.
    pub(crate) checkpoints: Option<checkpoint::coordinator::CheckpointReport>,
}

/// How long past `topology.message.timeout.secs` a drain (a signal, `--duration`, a kill)
/// may take before what is still pending is given up (abandoned) and the run ends.
pub(crate) const DRAIN_GRACE: Duration = Duration::from_secs(5);

/// A running topology: stats readable while it runs, a stop switch, and the final join.
pub struct Running {
    pub(crate) control: Arc<RunControl>,
    pub(crate) stats: BTreeMap<u32, (String, Arc<TaskStats>)>,
    handles: Vec<ExecutorHandle>,
    /// Transfer threads: joined at the end so every frame for other workers is sent.
    plumbing: Vec<JoinHandle<()>>,
    plan: Arc<Plan>,
    topology: Arc<Topology>,
    started: Instant,
    done: crossbeam_channel::Receiver<()>,
    /// The checkpoint coordinator's thread, when the run takes checkpoints.
    checkpoints: Option<JoinHandle<anyhow::Result<checkpoint::coordinator::Coordinator>>>,
    /// Rebalances asked by the UI of a local run, carried out by `wait`.
    switches: (
        crossbeam_channel::Sender<rebalance::Switch>,
        crossbeam_channel::Receiver<rebalance::Switch>,
    ),
    /// The executors' receive queues (a local run's only), to wake them for a rebalance.
    wake: Vec<crossbeam_channel::Sender<message::Message>>,
    /// The tasks of executors that have ended, for a rebalance to place again.
    ended: Vec<executor::Parked>,
    /// Complete latencies of the executors joined so far.
    latency: BTreeMap<String, Histogram>,
    layout: SharedLayout,
}

/// What a component of the plan is to the runtime.
#[derive(Debug, Clone, Copy)]
enum Role<'t> {
    Spout(&'t Component),
    Bolt(&'t Component),
    /// The acker: a system component with no spec in the topology; the runtime supplies it.
    Acker,
}

impl<'t> Role<'t> {
    /// The role of plan component `id`; `None` for an id the plan cannot hold.
    fn of(topology: &'t Topology, id: &str) -> Option<Role<'t>> {
        match topology.component(id) {
            Some(c) if c.is_spout() => Some(Role::Spout(c)),
            Some(c) => Some(Role::Bolt(c)),
            None if id == ACKER_ID => Some(Role::Acker),
            None => None,
        }
    }

    /// The kind the run report shows.
    fn kind(&self) -> &'static str {
        match self {
            Role::Spout(_) => "spout",
            Role::Bolt(_) => "bolt",
            Role::Acker => "acker",
        }
    }
}

/// Local mode: every worker is in this process.
struct InProcess;

impl Network for InProcess {
    fn listen(
        &self,
        _worker: usize,
        _into: crossbeam_channel::Sender<Vec<u8>>,
    ) -> anyhow::Result<()> {
        Ok(())
    }
    fn connect(&self, from: usize, to: usize) -> anyhow::Result<Box<dyn Link>> {
        anyhow::bail!("worker {to} is not in this process (asked by worker {from})")
    }
}

/// Start a topology in local mode: `topology.workers` workers, all in this process.
pub(crate) fn start_local(topology: Arc<Topology>) -> anyhow::Result<Running> {
    start_in_process(topology, Arc::new(RunControl::default()))
}

/// [`start_local`], its executors and tasks going by `clock` (a clock the test moves).
#[cfg(test)]
pub(crate) fn start_local_by(
    topology: Arc<Topology>,
    clock: crate::clock::Clock,
) -> anyhow::Result<Running> {
    let control = RunControl {
        clock,
        ..Default::default()
    };
    start_in_process(topology, Arc::new(control))
}

/// Start every worker of a topology in this process, under `control`.
fn start_in_process(topology: Arc<Topology>, control: Arc<RunControl>) -> anyhow::Result<Running> {
    let plan = Plan::new(&topology);
    let placement = Placement::round_robin(&plan, topology.config.workers() as usize);
    let all: Vec<usize> = (0..placement.workers).collect();
    let mut wiring = Wiring::new(topology.clone(), &placement, &all)?.with_control(control);
    let tables = wiring.route_tables();
    let plumbing = wiring.spawn_workers(&InProcess)?;
    wiring.spawn_executors(&tables)?;
    Ok(wiring.running(plumbing))
}

/// Start the executors of the `local` workers of a placement; tuples for other workers go
/// through `net`. The runtime does not care whether a peer worker is a thread, a process or
/// another host: only the links differ.
pub fn start(
    topology: Arc<Topology>,
    placement: &Placement,
    local: &[usize],
    net: &dyn Network,
) -> anyhow::Result<Running> {
    start_checkpointed(topology, placement, local, net, None)
}

/// [`start`], with checkpoints coordinated by another process when `remote` is given.
pub(crate) fn start_checkpointed(
    topology: Arc<Topology>,
    placement: &Placement,
    local: &[usize],
    net: &dyn Network,
    remote: Option<checkpoint::RemoteCheckpoints>,
) -> anyhow::Result<Running> {
    let mut wiring = Wiring::with_checkpoints(topology, placement, local, remote)?;
    let tables = wiring.route_tables();
    let plumbing = wiring.spawn_workers(net)?;
    wiring.spawn_executors(&tables)?;
    Ok(wiring.running(plumbing))
}

/// The seed of a task's root and edge ids: fresh entropy on every start. Seeding from the task
/// id alone made a restarted task draw the same ids again, so it could reuse the root of a
/// tree an acker still held and corrupt that tree's XOR (Storm's ids are random too).
fn task_seed(task: u32) -> u64 {
    rand::random::<u64>() ^ u64::from(task)
}

/// The component a run failed in: the context of its error, or the error itself when its
/// executor panicked. A worker files the error under that component's task by it.
#[derive(Debug)]
pub(crate) struct ComponentFailed {
    pub(crate) component: String,
    /// The panic's message, when the executor crashed.
    crash: Option<String>,
}

impl std::fmt::Display for ComponentFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.crash {
            None => write!(f, "component `{}`", self.component),
            Some(m) => write!(f, "component `{}` crashed: {m}", self.component),
        }
    }
}

impl std::error::Error for ComponentFailed {}

impl ComponentFailed {
    /// How an executor of `component` failed, as the run ends with it: its error, named by
    /// the component (unless a chained guest named its own already, `guests.rs`), or its panic.
    fn named(
        component: String,
        failure: Result<anyhow::Error, Box<dyn std::any::Any + Send>>,
    ) -> anyhow::Error {
        match failure {
            Ok(e) if e.downcast_ref::<ComponentFailed>().is_some() => e,
            Ok(e) => e.context(ComponentFailed {
                component,
                crash: None,
            }),
            Err(panic) => ComponentFailed {
                crash: Some(panic_message(panic.as_ref()).to_string()),
                component,
            }
            .into(),
        }
    }
}

/// The message of a panic, as the executor thread's join hands it back.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

/// Stops a run where it is, from another thread: every executor parks (nothing is drained or
/// closed), so the run's `wait` returns soon after. What a rollback does to the old run.
#[derive(Clone)]
pub(crate) struct Halter {
    control: Arc<RunControl>,
    wake: Vec<crossbeam_channel::Sender<message::Message>>,
}

impl Halter {
    pub(crate) fn halt(&self) {
        self.control.park.store(true, Ordering::Relaxed);
        for w in &self.wake {
            // A full queue means a busy executor, which sees the flag after its message.
            let _ = w.try_send(message::Message::Wake);
        }
    }
}

impl Running {
    /// The handle that halts this run.
    pub(crate) fn halter(&self) -> Halter {
        Halter {
            control: self.control.clone(),
            wake: self.wake.clone(),
        }
    }

    /// Wait until every executor has ended, or one has failed (returned at once); rebalances
    /// asked meanwhile are carried out between the waits.
    pub fn wait(mut self) -> anyhow::Result<RunReport> {
        'layouts: loop {
            let total = self.handles.len();
            let mut signalled = 0;
            while signalled < total {
                crossbeam_channel::select! {
                    recv(self.done) -> _ => {}
                    recv(self.switches.1) -> switch => {
                        if let Ok(switch) = switch {
                            self.on_switch(switch)?;
                            continue 'layouts;
                        }
                    }
                }
                signalled += 1;
                self.join_finished(total, signalled)?;
            }
            break;
        }
        if self.control.park.load(Ordering::Relaxed) {
            // Halted: nothing is drained. The transfer threads end once the parked tasks,
            // which still hold their queues, are dropped with this run.
            anyhow::bail!("the run was halted");
        }
        for h in self.plumbing.drain(..) {
            let _ = h.join();
        }
        let checkpoints = match self.checkpoints.take() {
            Some(h) => {
                let coordinator = h.join().map_err(|p| {
                    anyhow::anyhow!("checkpoints crashed: {}", panic_message(p.as_ref()))
                })??;
                Some(self.close_state(coordinator))
            }
            None => None,
        };
        let elapsed = self.started.elapsed();
        let lost = self
            .stats
            .values()
            .map(|(_, st)| st.lost.load(Ordering::Relaxed))
            .sum();
        let abandoned = self
            .stats
            .values()
            .map(|(_, st)| st.abandoned.load(Ordering::Relaxed))
            .sum();
        Ok(RunReport {
            components: self.reports(&self.latency, elapsed),
            elapsed,
            lost,
            abandoned,
            acking: self.plan.ackers > 0,
            checkpoints,
        })
    }

    /// Close the state files now, the commit record (held by the coordinator) and the worker
    /// stores (held by the tasks that ended, with the coordinator's share) on two threads:
    /// redb syncs each file a few times as it closes it, which one after the other took a
    /// stateful word count 15 ms at its end. The coordinator's report.
    fn close_state(
        &mut self,
        coordinator: checkpoint::coordinator::Coordinator,
    ) -> checkpoint::coordinator::CheckpointReport {
        let (report, commits, stores) = coordinator.into_parts();
        let ended = std::mem::take(&mut self.ended);
        std::thread::scope(|scope| {
            scope.spawn(move || drop(commits));
            drop(ended);
            drop(stores);
        });
        report
    }

    /// The report of an executor that ended; its latency counted.
    fn joined(
        &mut self,
        component: String,
        h: std::thread::JoinHandle<anyhow::Result<executor::ExecutorReport>>,
    ) -> anyhow::Result<executor::ExecutorReport> {
        match h.join() {
            Ok(Ok(report)) => {
                self.latency
                    .entry(component)
                    .or_default()
                    .merge(&report.complete_latency);
                Ok(report)
            }
            Ok(Err(e)) => Err(ComponentFailed::named(component, Ok(e))),
            Err(p) => Err(ComponentFailed::named(component, Err(p))),
        }
    }

    /// `signalled` of the `total` executors of this layout have said they are ending: join
    /// them (a failure ends the run at once), keeping their tasks for a later rebalance.
    fn join_finished(&mut self, total: usize, signalled: usize) -> anyhow::Result<()> {
        // A thread signals just before it ends: wait until every signalled one is joinable,
        // or a failing executor could be missed while the others wait forever.
        while total - self.handles.len()
            + self.handles.iter().filter(|(_, h)| h.is_finished()).count()
            < signalled
        {
            std::thread::yield_now();
        }
        let mut i = 0;
        while i < self.handles.len() {
            if !self.handles[i].1.is_finished() {
                i += 1;
                continue;
            }
            let (component, h) = self.handles.swap_remove(i);
            let report = self.joined(component, h)?;
            // Kept only where a rebalance may place them again (a local run).
            if !self.wake.is_empty() {
                self.ended.extend(report.tasks);
            }
        }
        Ok(())
    }

    fn reports(
        &self,
        latency: &BTreeMap<String, Histogram>,
        elapsed: Duration,
    ) -> Vec<ComponentReport> {
        let mut out = Vec::new();
        for c in &self.plan.components {
            let kind = Role::of(&self.topology, &c.id).map_or("bolt", |r| r.kind());
            let tasks: Vec<(u32, &Arc<TaskStats>)> = c
                .tasks
                .clone()
                .filter_map(|t| self.stats.get(&t).map(|(_, s)| (t, s)))
                .collect();
            let sum = |f: fn(&TaskStats) -> u64| tasks.iter().map(|(_, s)| f(s)).sum::<u64>();
            let executed = sum(|s| s.executed());
            let exec_ns = sum(|s| s.execute_ns.load(Ordering::Relaxed));
            out.push(ComponentReport {
                id: c.id.clone(),
                kind,
                tasks: tasks.len() as u32,
                executors: c.executors.len() as u32,
                emitted: sum(|s| s.emitted()),
                transferred: sum(|s| s.transferred()),
                executed,
                acked: sum(|s| s.acked()),
                failed: sum(|s| s.failed.load(Ordering::Relaxed)),
                replayed: sum(|s| s.replayed.load(Ordering::Relaxed)),
                timed_out: sum(|s| s.timed_out.load(Ordering::Relaxed)),
                lost: sum(|s| s.lost.load(Ordering::Relaxed)),
                errors: sum(|s| s.errors.load(Ordering::Relaxed)),
                dropped: sum(|s| s.dropped.load(Ordering::Relaxed)),
                execute_latency_ms: if executed > 0 {
                    exec_ns as f64 / executed as f64 / 1e6
                } else {
                    0.0
                },
                capacity: exec_ns as f64
                    / (elapsed.as_nanos().max(1) as f64 * c.executors.len().max(1) as f64),
                queue_peak: sum(|s| s.queue_peak.load(Ordering::Relaxed)),
                pending_peak: tasks
                    .iter()
                    .map(|(_, s)| s.pending_peak.load(Ordering::Relaxed))
                    .max()
                    .unwrap_or(0),
                complete_latency_ms: latency.get(&c.id).and_then(LatencyReport::of),
                metrics: user_metrics(&c.id, &tasks),
                per_task: tasks.iter().map(|(t, s)| task_report(*t, s)).collect(),
            });
        }
        out
    }
}

/// The user metrics of a component's tasks, merged (a warning says how many were dropped).
fn user_metrics(
    component: &str,
    tasks: &[(u32, &Arc<TaskStats>)],
) -> BTreeMap<String, metrics::UserMetric> {
    let mut total = metrics::UserMetrics::default();
    for (_, s) in tasks {
        total.merge(&s.user.lock().unwrap_or_else(|e| e.into_inner()));
    }
    if total.dropped > 0 {
        tracing::warn!(
            "{}: {} update(s) of user metrics beyond the first {} names were dropped",
            component,
            total.dropped,
            metrics::MAX_USER_METRICS
        );
    }
    total.by_name
}

/// One task's figures for `--stats`.
fn task_report(task: u32, s: &TaskStats) -> TaskReport {
    TaskReport {
        task,
        emitted: s.emitted(),
        transferred: s.transferred(),
        executed: s.executed(),
        acked: s.acked(),
        failed: s.failed.load(Ordering::Relaxed),
    }
}

#[cfg(test)]
mod tests {
    use super::collector::Emitter;
    use super::routing::Router;
    use super::*;
    use rand::RngCore;
    use std::time::Duration;

    /// The first ids task 2 of a word count draws, started as the runtime starts it.
    fn first_ids_of_a_start() -> Vec<u64> {
        let topology = one_liner("stdin | split x4 | count(word) x2 | stdout");
        let plan = Plan::new(&topology);
        let component = plan.component_of_task(2).to_string();
        let router = Router::new(&topology, &plan, &component, 2, &[2]);
        let stats = Arc::new(TaskStats::default());
        let mut em = Emitter::new(2, router, stats, component, task_seed(2));
        (0..4).map(|_| em.rng.next_u64()).collect()
    }

    /// Wait up to ten seconds of the machine's time for `what` to hold of `run`.
    fn poll_until(run: &Running, what: impl Fn(&Running) -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if what(run) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// The sum of one counter over a run's tasks (of `component` only, if given).
    fn total(
        run: &Running,
        component: Option<&str>,
        counter: impl Fn(&TaskStats) -> &std::sync::atomic::AtomicU64,
    ) -> u64 {
        run.stats
            .values()
            .filter(|(c, _)| component.is_none_or(|want| c == want))
            .map(|(_, s)| counter(s).load(Ordering::Relaxed))
            .sum()
    }

    /// A one-liner, validated.
    fn one_liner(text: &str) -> Arc<Topology> {
        let loaded = crate::topology::load_inline(text, &Default::default());
        Arc::new(loaded.expect("a valid one-liner").topology)
    }

    /// Message timeouts go by the run's clock: trees a bolt never acks fail once that clock
    /// passes `topology.message.timeout.secs` (30 s), not before, and with no 30 s wait.
    #[test]
    fn unacked_trees_time_out_by_the_run_clock() {
        let topology = one_liner("generate(count=5) | chaos(drop=1.0) | discard");
        let clock = crate::clock::Clock::manual();
        let run = start_local_by(topology, clock.clone()).expect("starts");
        assert!(poll_until(&run, |r| total(r, None, |s| &s.pending) == 5));
        clock.advance(Duration::from_secs(29));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            total(&run, None, |s| &s.timed_out),
            0,
            "none is due at 29 s"
        );
        clock.advance(Duration::from_secs(10));
        assert!(
            poll_until(&run, |r| total(r, None, |s| &s.timed_out) >= 5),
            "every tree timed out at 39 s"
        );
        run.halter().halt();
        assert!(run.wait().is_err(), "a halted run says so");
    }

    /// Bolt ticks go by the run's clock: a processing-time window closes when the clock
    /// passes its end, and only then.
    #[test]
    fn a_processing_time_window_closes_when_the_run_clock_passes_its_end() {
        let text = "generate(rate=1000) | aggregate(window={tumbling: 1m}, ops=[count]) | discard";
        let clock = crate::clock::Clock::manual_at(0);
        let run = start_local_by(one_liner(text), clock.clone()).expect("starts");
        let window_out = |r: &Running| total(r, Some("aggregate"), |s| &s.emitted);
        let executed = |r: &Running| total(r, Some("aggregate"), |s| &s.executed);
        assert!(poll_until(&run, |r| executed(r) >= 5));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(window_out(&run), 0, "the minute has not passed");
        clock.advance(Duration::from_secs(61));
        assert!(
            poll_until(&run, |r| window_out(r) >= 1),
            "the window closed"
        );
        run.halter().halt();
        assert!(run.wait().is_err(), "a halted run says so");
    }

    /// A restarted task must not draw the root and edge ids it drew before: the acker may
    /// still hold trees with those roots.
    #[test]
    fn two_starts_of_the_same_task_draw_different_ids() {
        assert_ne!(first_ids_of_a_start(), first_ids_of_a_start());
    }
}
