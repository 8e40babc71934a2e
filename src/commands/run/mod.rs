//! `storm run`: load and validate a topology, run it, stop it gracefully on SIGINT/SIGTERM or
//! `--duration`, and end with `--stats`, the summary and the exit status. Three modes share
//! this module's helpers: `local` (one process, threads), `processes` (`--processes`: worker
//! processes on loopback under an in-process nimbus) and `attached` (`--nimbus ADDR`: a
//! running cluster runs the topology, this process its `stdin` and `stdout` components).

mod attached;
mod local;
mod processes;

use super::{load_topology, signals, Status};
use crate::cli::RunArgs;
use crate::cluster::coordination::layout::TaskHeartbeat;
use crate::cluster::protocol::rpc::Client;
use crate::cluster::worker;
use crate::model::Topology;
use crate::runtime::metrics::TaskStats;
use crate::runtime::{self, RunReport};
use crate::topology::{LoadOptions, Loaded};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Run the topology `args` names, in the mode they ask for.
pub(crate) fn run(args: RunArgs) -> anyhow::Result<Status> {
    // Whatever a multilang child detached ends with the run.
    let _reaper = crate::commands::reaper::Reaper::start();
    if let Some(addr) = args.nimbus.clone() {
        if args.ui.is_some() {
            crate::stderr_println!(
                "error: `--ui` serves a run in this process; a cluster's UI is nimbus's (ui.port)"
            );
            return Ok(Status::Usage);
        }
        return attached::run(args, &addr);
    }
    if args.processes {
        return processes::run(args);
    }
    local::run(args)
}

/// The topology of a run in any mode, with the `-c` overrides it was loaded with (`--workers N`
/// is `topology.workers=N`). Warnings are printed unless `--quiet`.
fn load_for_run(args: &RunArgs) -> Result<(Loaded, Vec<String>), Status> {
    let mut overrides = args.config.overrides.clone();
    if let Some(w) = args.workers {
        overrides.push(format!("topology.workers={w}"));
    }
    if args.strict {
        overrides.push("topology.strict=true".to_string());
    }
    if let Some(dir) = &args.state_dir {
        // Absolute: worker processes and a later resume may start elsewhere.
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        let quoted = serde_json::Value::from(dir.to_string_lossy().into_owned()).to_string();
        overrides.push(format!("topology.state.dir={quoted}"));
        overrides.push("topology.state.provider=embedded".to_string());
    }
    let opts = LoadOptions {
        overrides: overrides.clone(),
        filter: args.source.filter.clone(),
    };
    let loaded = load_topology(
        args.source.file.as_deref(),
        args.source.expr.as_deref(),
        &opts,
        !args.quiet,
    )?;
    if args.fresh {
        start_over(&loaded.topology)?;
    }
    if loaded.topology.at_least_once() && !args.quiet {
        let spouts = loaded.topology.unrewinding_spouts().join("`, `");
        crate::stderr_println!(
            "storm: state guarantee: at least once (topology.state.guarantee): spout `{spouts}` cannot rewind to a checkpoint, so after a failure its tuples may reach the state again"
        );
    }
    Ok((loaded, overrides))
}

/// `--fresh`: remove what the topology's state dir holds, if it has one and it exists.
fn start_over(topology: &Topology) -> Result<(), Status> {
    let fail = |e: anyhow::Error| {
        crate::stderr_println!("error: {e:#}");
        Status::Failure
    };
    let dir = crate::runtime::checkpoint::setup::state_dir(topology).map_err(fail)?;
    let Some(dir) = dir.filter(|d| d.exists()) else {
        return Ok(());
    };
    crate::state::dir::clear(&dir).map_err(|e| fail(e.context("--fresh: not starting over")))?;
    crate::stderr_println!("--fresh: removed the state dir {}", dir.display());
    Ok(())
}

/// First SIGINT/SIGTERM sets the flag (stop the spouts and drain); a second one while draining
/// erases the progress line and exits 130 at once.
fn drain_on_signals() -> anyhow::Result<Arc<AtomicBool>> {
    signals::on_stop_signals(signals::Second::Exits)
}

use crate::runtime::DRAIN_GRACE;

/// What gives up a drain that outlasted its deadline.
type Abandon = Box<dyn FnOnce() + Send>;

/// When a run is to stop: at the first SIGINT/SIGTERM, or once `--duration` has passed; and,
/// with [`StopWhen::abandon_after`], when a drain that has not ended is given up.
struct StopWhen {
    signalled: Arc<AtomicBool>,
    deadline: Option<Instant>,
    abandon: Option<(Duration, Abandon)>,
    /// With [`StopWhen::end_if_stuck`]: what ends the process when the run is still going
    /// [`DRAIN_GRACE`] after its drain was given up.
    stuck: Option<Abandon>,
}

impl StopWhen {
    /// `signalled` is set by the first signal; `duration` counts from now.
    fn new(signalled: Arc<AtomicBool>, duration: Option<Duration>) -> StopWhen {
        StopWhen {
            signalled,
            deadline: duration.map(|d| Instant::now() + d),
            abandon: None,
            stuck: None,
        }
    }

    /// Call `action` when the run has not ended [`DRAIN_GRACE`] after its drain was given up:
    /// a thread is blocked where giving up cannot reach it (writing to an output nobody
    /// reads), and only ending the process ends the run.
    fn end_if_stuck(mut self, action: impl FnOnce() + Send + 'static) -> StopWhen {
        self.stuck = Some(Box::new(action));
        self
    }

    /// Call `action` once the drain has gone on for `message_timeout` + [`DRAIN_GRACE`]
    /// (a spout that replays every fail, or a bolt slower than the timeout, would keep it
    /// going for ever).
    fn abandon_after(
        mut self,
        message_timeout: Duration,
        action: impl FnOnce() + Send + 'static,
    ) -> StopWhen {
        self.abandon = Some((message_timeout + DRAIN_GRACE, Box::new(action)));
        self
    }

    fn due(&self) -> bool {
        self.signalled.load(Ordering::Relaxed) || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// The live counters a progress line is drawn from.
type LiveStats = BTreeMap<u32, (String, Arc<TaskStats>)>;

/// How often the stop watcher looks (and redraws the progress line).
const WATCH_EVERY: Duration = Duration::from_millis(50);

/// How much longer than its workers' own drain deadline (which each counts from when its
/// heartbeat told it of the stop, or from its start when it replaced a worker lost meanwhile)
/// a run over workers waits for them before it ends.
const WORKERS_GRACE: Duration = Duration::from_secs(5);

/// How long a run over workers (`--processes`, `--nimbus`) waits for its workers' drain
/// after the stop: the message timeout, until every worker has heard of the stop (a task
/// timeout), and a grace.
fn workers_drain_limit(config: &crate::config::Config) -> Duration {
    config.message_timeout() + config.nimbus_task_timeout() + WORKERS_GRACE
}

/// What ends a run that did not end when it should have: `error` on stderr, and exit 1.
fn exit_with(error: &'static str) -> impl FnOnce() + Send + 'static {
    move || {
        crate::stderr_println!("error: {error}");
        std::process::exit(1);
    }
}

/// A thread that looks every [`WATCH_EVERY`] whether the run is to stop, and then calls its
/// `on_stop` once; with live counters, it also draws the progress line. Dropping it ends the
/// thread at once (a sleeping watcher would add up to one period to every run) and erases the
/// progress line.
struct StopWatcher {
    /// Dropped to end the thread.
    finished: Option<crossbeam_channel::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl StopWatcher {
    fn spawn(
        when: StopWhen,
        on_stop: impl FnOnce() + Send + 'static,
        progress: Option<LiveStats>,
    ) -> anyhow::Result<StopWatcher> {
        let (finished, ended) = crossbeam_channel::bounded::<()>(0);
        let thread = std::thread::Builder::new()
            .name("run-stop".into())
            .spawn(move || watch(&ended, when, on_stop, progress))?;
        Ok(StopWatcher {
            finished: Some(finished),
            thread: Some(thread),
        })
    }
}

impl Drop for StopWatcher {
    fn drop(&mut self) {
        drop(self.finished.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The stop watcher's loop, until `ended` is closed.
fn watch(
    ended: &crossbeam_channel::Receiver<()>,
    mut when: StopWhen,
    on_stop: impl FnOnce(),
    progress: Option<LiveStats>,
) {
    let bar = progress.map(|stats| (super::progress::Progress::new(), stats));
    let mut on_stop = Some(on_stop);
    let mut abandon = when.abandon.take();
    let mut stuck = when.stuck.take();
    let (mut stopped_at, mut gave_up_at): (Option<Instant>, Option<Instant>) = (None, None);
    while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = ended.recv_timeout(WATCH_EVERY) {
        if when.due() {
            if let Some(stop) = on_stop.take() {
                stop();
                stopped_at = Some(Instant::now());
            }
        }
        if let (Some(at), Some((after, _))) = (stopped_at, &abandon) {
            if at.elapsed() >= *after {
                if let Some((_, give_up)) = abandon.take() {
                    crate::stderr_println!(
                        "storm: the drain outlasted topology.message.timeout.secs + {}s; giving up what is still pending",
                        DRAIN_GRACE.as_secs()
                    );
                    give_up();
                    gave_up_at = Some(Instant::now());
                }
            }
        }
        if gave_up_at.is_some_and(|at| at.elapsed() >= DRAIN_GRACE) {
            if let Some(end) = stuck.take() {
                end();
            }
        }
        if let Some((b, stats)) = &bar {
            b.update(stats);
        }
    }
    if let Some((b, _)) = bar {
        b.finish();
    }
}

/// The worker of the `stdin` and `stdout` components, run in this process on its `slot`
/// (`None` when the topology has none there, or the slot was taken away).
fn run_home(
    nimbus: &Client,
    id: &str,
    slot: Option<String>,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<Option<RunReport>> {
    let Some(slot) = slot else {
        return Ok(None);
    };
    loop {
        match worker::run(nimbus, None, id, &slot, stop.clone())? {
            worker::WorkerEnd::Finished(r) => return Ok(Some(r)),
            worker::WorkerEnd::Unassigned => {
                if stop.load(Ordering::Relaxed) {
                    // Stopped, and the kill's wait ran out before this worker drained.
                    crate::stderr_println!(
                        "storm: {id} was removed from the cluster before the worker of its stdin and stdout here drained; what that worker still held is dropped (the output may be incomplete)"
                    );
                }
                return Ok(None);
            }
            // A worker was lost: this one starts again too, from the last commit.
            worker::WorkerEnd::RolledBack => crate::stderr_println!(
                "storm: a worker of {id} was lost; every worker rolls back to the last committed checkpoint and its spouts replay from there"
            ),
        }
    }
}

/// The report of a run spread over workers: the home worker's own, completed by the others'
/// last heartbeats, or only those when there was no home worker.
fn spread_report(
    home: Option<RunReport>,
    topology: &Topology,
    beats: &BTreeMap<u32, TaskHeartbeat>,
    elapsed: Duration,
) -> RunReport {
    match home {
        Some(mut r) => {
            worker::merge_heartbeats(&mut r, beats);
            r
        }
        None => {
            worker::report_from_heartbeats(&crate::model::plan::Plan::new(topology), beats, elapsed)
        }
    }
}

/// Where a run's tasks ran, which decides what its end can vouch for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Every task ran in this process: its CPU time is the run's, and the tuples bolts failed
    /// with acking off are known to be lost.
    Local,
    /// Tasks ran in other processes too.
    Spread,
}

/// The end of a run in any mode: `--stats`, the summary, and the exit status (a failure when
/// tuples were lost). `at_least_once`: the topology's state is kept at least once (see
/// [`Topology::at_least_once`]), and the summary says how many tuples its spouts replayed.
fn finish(
    args: &RunArgs,
    report: &RunReport,
    scope: Scope,
    at_least_once: bool,
) -> anyhow::Result<Status> {
    if let Some(path) = &args.stats {
        write_stats(path, report, scope)?;
    }
    print_summary(args, report);
    if at_least_once && !args.quiet {
        let replayed: u64 = report
            .components
            .iter()
            .filter(|c| c.kind == "spout")
            .map(|c| c.replayed)
            .sum();
        crate::stderr_println!(
            "state guarantee: at least once; spouts replayed {replayed} tuple(s), which may have reached the state twice"
        );
    }
    if report.lost > 0 {
        crate::stderr_println!(
            "error: {} tuple(s) were given up on after their retries and are lost",
            report.lost
        );
        return Ok(Status::Failure);
    }
    if scope == Scope::Local && !report.acking && !args.quiet {
        warn_unreplayed(report);
    }
    Ok(Status::Success)
}

/// With acking off, the tuples bolts failed were not replayed: say how many.
fn warn_unreplayed(report: &RunReport) {
    let failed: u64 = report
        .components
        .iter()
        .filter(|c| c.kind == "bolt")
        .map(|c| c.failed)
        .sum();
    if failed > 0 {
        crate::stderr_println!(
            "warning: acking is off (topology.acker.executors: 0): {failed} failed tuple(s) were not replayed and are lost"
        );
    }
}

/// The per-component table at the end of a run: drawn when stderr is a terminal (so a run
/// inside `| sort | head` stays quiet) or with `--summary`, never with `--quiet`; system
/// components only with `--system`.
fn print_summary(args: &RunArgs, report: &RunReport) {
    let wanted = args.summary || std::io::stderr().is_terminal();
    if args.quiet || !wanted {
        return;
    }
    let shown: Vec<_> = report
        .components
        .iter()
        .filter(|c| args.system || !c.id.starts_with("__"))
        .cloned()
        .collect();
    crate::stderr_println!(
        "{}",
        runtime::metrics::render_table(&shown, report.elapsed.as_secs_f64())
    );
    if let Some(cp) = &report.checkpoints {
        crate::stderr_println!("{}", cp.line());
    }
    if report.abandoned > 0 {
        crate::stderr_println!(
            "abandoned: {} tuple tree(s) still pending when the drain's deadline passed \
             (topology.message.timeout.secs + {}s)",
            report.abandoned,
            DRAIN_GRACE.as_secs()
        );
    }
}

/// `--stats FILE`: the run's figures as JSON (with this process's CPU time when it ran
/// everything).
fn write_stats(path: &std::path::Path, report: &RunReport, scope: Scope) -> anyhow::Result<()> {
    let mut json = serde_json::Map::new();
    json.insert("elapsed_secs".into(), report.elapsed.as_secs_f64().into());
    if scope == Scope::Local {
        let (cpu_self, cpu_children) = process_cpu_secs();
        json.insert(
            "cpu_secs".into(),
            serde_json::json!({ "storm": cpu_self, "children": cpu_children }),
        );
    }
    json.insert("acking".into(), report.acking.into());
    json.insert("lost".into(), report.lost.into());
    json.insert("abandoned".into(), report.abandoned.into());
    if let Some(cp) = &report.checkpoints {
        json.insert("checkpoints".into(), cp.to_json());
    }
    json.insert(
        "components".into(),
        serde_json::to_value(&report.components)?,
    );
    let text = serde_json::to_string_pretty(&json)?;
    std::fs::write(path, text + "\n")
        .map_err(|e| anyhow::anyhow!("cannot write --stats file {}: {e}", path.display()))
}

/// CPU seconds used by this process and by its ended children (shell components), from
/// `/proc/self/stat` (Linux; zeros elsewhere).
fn process_cpu_secs() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // utime, stime, cutime, cstime are fields 14-17 of the whole line: 11-14 after `)`.
    let tick = 100.0; // USER_HZ on Linux
    let at = |i: usize| f.get(i).copied().unwrap_or(0.0) / tick;
    (at(11) + at(12), at(13) + at(14))
}
