//! `storm run FILE --processes`: each of the `topology.workers` workers runs as its
//! own process on loopback, talking over TCP. This process is nimbus (a thread, with a
//! temporary data folder), the supervisor of those worker processes, and the home of the
//! `stdin` spouts and `stdout` sinks, which it runs in one extra worker of its own, so a shell
//! pipeline behaves as in local mode.

use super::Status;
use crate::cli::RunArgs;
use crate::cluster::layout::SupervisorInfo;
use crate::cluster::nimbus::{now_secs, Nimbus};
use crate::cluster::rpc::Request;
use crate::cluster::{supervisor, worker, CoordinationStore};
use crate::net::auth::Secret;
use crate::runtime::RunReport;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The id of the in-process supervisor holding the home worker's slot.
const HOME: &str = "home";
/// The id of the in-process supervisor of the worker processes.
const WORKERS: &str = "processes";

/// Removes the temporary nimbus folder, and stops the daemons, however the run ends.
struct Cleanup {
    dir: PathBuf,
    nimbus: Option<Arc<Nimbus>>,
    supervisor_stop: Arc<AtomicBool>,
    supervisor: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.supervisor_stop.store(true, Ordering::Relaxed);
        if let Some(s) = self.supervisor.take() {
            let _ = s.join();
        }
        if let Some(n) = &self.nimbus {
            n.stop.store(true, Ordering::Relaxed);
        }
        remove_run_dir(&self.dir);
    }
}

/// Remove the run's temporary folder. Nimbus may be saving its tree into it at that moment
/// (a file appearing while the folder is emptied): a few more tries then.
fn remove_run_dir(dir: &std::path::Path) {
    for _ in 0..20 {
        if std::fs::remove_dir_all(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Ports the OS says are free on loopback (bound, then released for the workers).
fn free_ports(n: usize) -> anyhow::Result<Vec<u16>> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()?;
    listeners
        .iter()
        .map(|l| Ok(l.local_addr()?.port()))
        .collect()
}

/// Remove the run folders (`storm-run-PID`) of runs that were killed too hard to clean up
/// (SIGKILL): their process is gone, so nothing uses them.
fn sweep_stale_run_dirs(tmp: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("storm-run-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = std::path::Path::new(&format!("/proc/{pid}")).exists();
        if !alive && pid != std::process::id() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

pub fn run(args: RunArgs) -> anyhow::Result<Status> {
    let (loaded, overrides) = match super::run::load_for_run(&args) {
        Ok(l) => l,
        Err(status) => return Ok(status),
    };
    let topology = loaded.topology;
    let has_home = topology.components.iter().any(|c| c.ctype.is_console());
    let workers = topology.config.workers().max(1) as usize;

    sweep_stale_run_dirs(&std::env::temp_dir());
    let dir = std::env::temp_dir().join(format!("storm-run-{}", std::process::id()));
    let interrupted = drain_on_signals(dir.clone())?;
    let mut cleanup = Cleanup {
        dir: dir.clone(),
        nimbus: None,
        supervisor_stop: Arc::new(AtomicBool::new(false)),
        supervisor: None,
    };
    crate::cluster::rpc::use_secret(Secret::from_config(&topology.config));
    let nimbus = Nimbus::open(&dir, topology.config.clone())?;
    cleanup.nimbus = Some(nimbus.clone());
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?.to_string();
    nimbus.serve(listener)?;

    let ports = free_ports(workers + 1)?;
    let home_port = ports[workers];
    if has_home {
        // The home slot is this process's: its session lasts as long as the run.
        let session: u64 = serde_json::from_value(
            nimbus
                .handle(Request::OpenSession {
                    timeout_ms: 86_400_000,
                })
                .map_err(anyhow::Error::msg)?,
        )?;
        let info = SupervisorInfo {
            hostname: "127.0.0.1".into(),
            time_secs: now_secs(),
            uptime_secs: 0,
            ports: vec![home_port],
        };
        nimbus
            .handle(Request::SupervisorBeat {
                session,
                id: HOME.into(),
                info,
            })
            .map_err(anyhow::Error::msg)?;
    }
    let mut sup = supervisor::options(&addr, "127.0.0.1", ports[..workers].to_vec())?;
    sup.id = WORKERS.into();
    sup.env = super::cluster::secret_env(&topology.config);
    sup.die_with_parent = true;
    let (kill_tx, kill_rx) = crossbeam_channel::unbounded();
    sup.kill_requests = Some(kill_rx);
    let (exit_tx, exits) = crossbeam_channel::unbounded();
    let supervisor_done = Arc::new(AtomicBool::new(false));
    cleanup.supervisor = Some({
        let stop = cleanup.supervisor_stop.clone();
        let done = supervisor_done.clone();
        std::thread::Builder::new()
            .name("supervisor".into())
            .spawn(move || {
                let r = supervisor::run(&sup, &stop, Some(exit_tx));
                done.store(true, Ordering::Relaxed);
                r
            })?
    });
    // Submit once the supervisor is registered, so the work is spread over its slots.
    let supervisors = format!("{}/supervisors/processes", topology.config.zookeeper_root());
    let deadline = Instant::now() + Duration::from_secs(10);
    while nimbus.store().exists(&supervisors, None)?.is_none() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the worker supervisor did not register"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let sub = super::cluster::submission(&args.source, &overrides, Some(HOME.into()))?;
    let started = Instant::now();
    let id: String = serde_json::from_value(
        nimbus
            .handle(Request::Submit(sub))
            .map_err(anyhow::Error::msg)?,
    )?;

    // Signals and --duration deactivate the topology: every worker's spouts stop and it drains.
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let nimbus = nimbus.clone();
        let name = topology.name.clone();
        let deadline = args.duration.map(|d| Instant::now() + d);
        let interrupted = interrupted.clone();
        std::thread::Builder::new()
            .name("run-stop".into())
            .spawn(move || loop {
                std::thread::sleep(Duration::from_millis(50));
                if interrupted.load(Ordering::Relaxed)
                    || deadline.is_some_and(|d| Instant::now() >= d)
                {
                    stop.store(true, Ordering::Relaxed);
                    let _ = nimbus.handle(Request::Kill {
                        name,
                        wait_secs: Some(3600),
                    });
                    return;
                }
            })?;
    }
    watch_heartbeats(
        nimbus.clone(),
        id.clone(),
        topology.config.nimbus_task_timeout(),
        kill_tx,
        cleanup.supervisor_stop.clone(),
    )?;
    // A worker process that fails (exits with an error) fails the run at once, as a failing
    // executor does in local mode: the supervisor ends the other workers, then this process
    // exits. A worker ended by a signal (killed, or stopped and then killed for its missing
    // heartbeats) is restarted by the supervisor instead, and acking replays what it held.
    {
        let supervisor_stop = cleanup.supervisor_stop.clone();
        let dir = dir.clone();
        std::thread::Builder::new()
            .name("run-workers".into())
            .spawn(move || {
                let failed = |e: &supervisor::WorkerExit| e.status.code().is_some_and(|c| c != 0);
                let Some(exit) = exits.iter().find(failed) else {
                    return;
                };
                crate::stderr_println!(
                    "error: the worker process on port {} failed ({}); see its messages above",
                    exit.port,
                    exit.status
                );
                supervisor_stop.store(true, Ordering::Relaxed);
                let deadline = Instant::now() + Duration::from_secs(15);
                while !supervisor_done.load(Ordering::Relaxed) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
                remove_run_dir(&dir);
                std::process::exit(1);
            })?;
    }
    let report = if has_home {
        let slot = format!("127.0.0.1:{home_port}");
        match worker::run(&addr, &id, &slot, stop.clone())? {
            worker::WorkerEnd::Finished(r) => Some(r),
            worker::WorkerEnd::Unassigned => None,
        }
    } else {
        None
    };
    // The other workers end once their executors have (end of input propagates to them).
    while !nimbus.finished(&id)?.0 {
        std::thread::sleep(Duration::from_millis(50));
    }
    let beats = nimbus.task_heartbeats(&id)?;
    let report = match report {
        Some(mut r) => {
            worker::merge_heartbeats(&mut r, &beats);
            r
        }
        None => worker::report_from_heartbeats(
            &crate::topology::plan::Plan::new(&topology),
            &beats,
            started.elapsed(),
        ),
    };
    drop(cleanup);
    finish_report(&args, &report)
}

/// First SIGINT/SIGTERM sets the returned flag (stop the spouts and drain); a second one while
/// draining removes the temporary folder and exits 130 at once (the workers, launched with a
/// parent-death signal, end with this process).
fn drain_on_signals(dir: PathBuf) -> anyhow::Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let signalled = Arc::new(AtomicBool::new(false));
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    let first = signalled.clone();
    std::thread::Builder::new()
        .name("run-signals".into())
        .spawn(move || {
            for (n, _) in signals.forever().enumerate() {
                if n == 0 {
                    first.store(true, Ordering::Relaxed);
                } else {
                    crate::logging::clear_status_line();
                    remove_run_dir(&dir);
                    std::process::exit(130);
                }
            }
        })?;
    Ok(signalled)
}

/// Storm's heartbeat timeout for the run's own workers: a worker whose tasks have all missed
/// their heartbeats for `timeout` (a stopped or hung process) is killed, and the supervisor
/// restarts it. A killed slot is given `timeout` again to start before it is judged anew. Ends
/// with the supervisor (`stop`).
fn watch_heartbeats(
    nimbus: Arc<Nimbus>,
    id: String,
    timeout: Duration,
    kill: crossbeam_channel::Sender<u16>,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("run-heartbeats".into())
        .spawn(move || {
            let mut killed: std::collections::BTreeMap<u16, Instant> = Default::default();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                let Ok(dead) = nimbus.dead_slots(&id) else {
                    continue;
                };
                killed.retain(|_, at| at.elapsed() < timeout);
                for slot in dead.into_iter().filter(|s| s.node == WORKERS) {
                    if killed.contains_key(&slot.port) {
                        continue;
                    }
                    tracing::warn!(
                        "worker {} missed its heartbeats for {}; killing it",
                        slot.port,
                        humantime::format_duration(timeout)
                    );
                    if kill.send(slot.port).is_err() {
                        return;
                    }
                    killed.insert(slot.port, Instant::now());
                }
            }
        })?;
    Ok(())
}

/// The end of a run spread over processes: `--stats`, the summary, and the exit status.
pub fn finish_report(args: &RunArgs, report: &RunReport) -> anyhow::Result<Status> {
    if let Some(path) = &args.stats {
        let json = serde_json::json!({
            "elapsed_secs": report.elapsed.as_secs_f64(),
            "acking": report.acking,
            "lost": report.lost,
            "components": report.components,
        });
        std::fs::write(path, serde_json::to_string_pretty(&json)? + "\n")
            .map_err(|e| anyhow::anyhow!("cannot write --stats file {}: {e}", path.display()))?;
    }
    super::run::print_summary(args, report);
    if report.lost > 0 {
        crate::stderr_println!(
            "error: {} tuple(s) were given up on after their retries and are lost",
            report.lost
        );
        return Ok(Status::Failure);
    }
    Ok(Status::Success)
}
