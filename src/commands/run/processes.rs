//! `storm run FILE --processes`: each of the `topology.workers` workers runs as its
//! own process on loopback, talking over TCP. This process is nimbus (a thread, with a
//! temporary data folder), the supervisor of those worker processes, and the home of the
//! `stdin` spouts and `stdout` sinks, which it runs in one extra worker of its own, so a shell
//! pipeline behaves as in local mode. Every worker listens on a port the system gives it
//! (port 0) and reports it with its heartbeats; the slots' ports only name the slots.

use super::{finish, load_for_run, run_home, spread_report, Scope, StopWatcher, StopWhen};
use crate::cli::RunArgs;
use crate::cluster::coordination::layout::SupervisorInfo;
use crate::cluster::nimbus::{now_secs, Nimbus};
use crate::cluster::protocol::rpc::Client;
use crate::cluster::{supervisor, CoordinationStore};
use crate::commands::cluster::{secret_env, ship_resources, submission};
use crate::commands::signals;
use crate::commands::Status;
use crate::config::Config;
use crate::net::auth::Secret;
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

/// The ports naming the run's `n` slots: Storm's first slot port, 6700, and on. They name
/// slots only: each worker listens on a port the system gives it and reports it, so nothing
/// else on the machine using these ports matters.
fn slot_ports(n: usize) -> anyhow::Result<Vec<u16>> {
    const FIRST: u16 = 6700;
    let last = u16::try_from(n)
        .ok()
        .and_then(|n| FIRST.checked_add(n))
        .ok_or_else(|| anyhow::anyhow!("{n} workers are more slots than ports"))?;
    Ok((FIRST..last).collect())
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

/// Run the topology over worker processes until its input ends or it is stopped.
pub(super) fn run(args: RunArgs) -> anyhow::Result<Status> {
    let (loaded, overrides) = match load_for_run(&args) {
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
    let (nimbus, client) = start_nimbus(&mut cleanup, &topology.config)?;
    // `--ui`: this process's nimbus serves the UI of the worker processes.
    let _ui = match &args.ui {
        Some(ui_addr) => Some(crate::commands::ui::serve_cluster(
            &nimbus,
            ui_addr,
            &topology.config,
        )?),
        None => None,
    };

    let ports = slot_ports(workers + 1)?;
    let home_port = ports[workers];
    if has_home {
        register_home(&nimbus, home_port)?;
    }
    let workers = start_supervisor(&mut cleanup, &client, &topology.config, &ports[..workers])?;
    await_supervisor(&nimbus, &topology.config)?;
    let mut sub = submission(&args.source, &overrides, Some(HOME.into()))?;
    // The workers run shell components from a copy of the topology's folder, as on a cluster.
    ship_resources(&mut sub, &args.source, &topology)?;
    let started = Instant::now();
    let id = nimbus.submit(sub)?;

    // Signals and --duration deactivate the topology: every worker's spouts stop and it drains.
    let stop = Arc::new(AtomicBool::new(false));
    // A worker stopped or hung is replaced after the heartbeat timeout, and drains then.
    let when = StopWhen::new(interrupted, args.duration).abandon_after(
        super::workers_drain_limit(&topology.config),
        end_stuck_drain(dir.clone()),
    );
    let watcher = StopWatcher::spawn(
        when,
        deactivate(&nimbus, &topology.name, stop.clone()),
        None,
    )?;
    watch_heartbeats(
        nimbus.clone(),
        id.clone(),
        topology.config.nimbus_task_timeout(),
        workers.kill,
        cleanup.supervisor_stop.clone(),
    )?;
    fail_with_workers(workers.exits, workers.done, &cleanup)?;
    let slot = has_home.then(|| format!("127.0.0.1:{home_port}"));
    let home = run_home(&client, &id, slot, stop.clone())?;
    // The other workers end once their executors have (end of input propagates to them).
    while !nimbus.finished(&id)?.0 {
        std::thread::sleep(Duration::from_millis(50));
    }
    let beats = nimbus.task_heartbeats(&id)?;
    let report = spread_report(home, &topology, &beats, started.elapsed());
    drop(watcher);
    drop(cleanup);
    finish(&args, &report, Scope::Spread, topology.at_least_once())
}

/// Open nimbus in the run's folder (stopped by `cleanup`) and serve it on a loopback port.
/// Returns it, and a client of it for the workers (proving the topology's cluster secret).
fn start_nimbus(cleanup: &mut Cleanup, config: &Config) -> anyhow::Result<(Arc<Nimbus>, Client)> {
    let nimbus = Nimbus::open(&cleanup.dir, config.clone())?;
    cleanup.nimbus = Some(nimbus.clone());
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?.to_string();
    nimbus.serve(listener)?;
    Ok((nimbus, Client::new(addr, Secret::from_config(config))))
}

/// Register the home slot, `home_port`, as this process's: its session lasts as long as the run.
fn register_home(nimbus: &Nimbus, home_port: u16) -> anyhow::Result<()> {
    let session = nimbus.open_session(Duration::from_secs(86_400));
    let info = SupervisorInfo {
        hostname: "127.0.0.1".into(),
        time_secs: now_secs(),
        uptime_secs: 0,
        ports: vec![home_port],
    };
    nimbus.supervisor_beat(session, HOME, &info)?;
    Ok(())
}

/// The in-process supervisor's channels: ports whose worker to kill, the ends of its workers,
/// and whether it has ended.
struct Workers {
    kill: crossbeam_channel::Sender<u16>,
    exits: crossbeam_channel::Receiver<supervisor::WorkerExit>,
    done: Arc<AtomicBool>,
}

/// Start the supervisor of the worker processes (on `ports`) on a thread of its own, stopped
/// and joined by `cleanup`.
fn start_supervisor(
    cleanup: &mut Cleanup,
    nimbus: &Client,
    config: &Config,
    ports: &[u16],
) -> anyhow::Result<Workers> {
    let mut sup = supervisor::options(nimbus.clone(), "127.0.0.1", ports.to_vec())?;
    sup.id = WORKERS.into();
    sup.env = secret_env(config);
    sup.die_with_parent = true;
    let (kill, kill_rx) = crossbeam_channel::unbounded();
    sup.kill_requests = Some(kill_rx);
    let (exit_tx, exits) = crossbeam_channel::unbounded();
    let done = Arc::new(AtomicBool::new(false));
    cleanup.supervisor = Some({
        let stop = cleanup.supervisor_stop.clone();
        let done = done.clone();
        std::thread::Builder::new()
            .name("supervisor".into())
            .spawn(move || {
                let r = supervisor::run(&sup, &stop, Some(exit_tx));
                done.store(true, Ordering::Relaxed);
                r
            })?
    });
    Ok(Workers { kill, exits, done })
}

/// Wait until the worker supervisor is registered, so the work is spread over its slots.
fn await_supervisor(nimbus: &Nimbus, config: &Config) -> anyhow::Result<()> {
    let supervisors = format!("{}/supervisors/{WORKERS}", config.zookeeper_root());
    let deadline = Instant::now() + Duration::from_secs(10);
    while nimbus.store().exists(&supervisors, None)?.is_none() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the worker supervisor did not register"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// What the stop watcher does: stop the home worker, and kill the topology (deactivated; the
/// run's folder goes with this process, so the removal wait does not matter).
fn deactivate(nimbus: &Arc<Nimbus>, name: &str, stop: Arc<AtomicBool>) -> impl FnOnce() + Send {
    let nimbus = nimbus.clone();
    let name = name.to_string();
    // Killed first, then stopped here: a worker that sees the stop while it joins its
    // generation finds the kill recorded, so no generation starts without it.
    move || {
        if let Err(e) = nimbus.kill(&name, Some(3600)) {
            tracing::warn!("stopping the topology: {e:#}");
        }
        stop.store(true, Ordering::Relaxed);
    }
}

/// What ends a run whose workers did not end their drain by their deadline (a worker stuck
/// where the drain cannot reach it): the error, the run's folder removed, and exit 1 (the
/// workers, launched with a parent-death signal, end with this process).
fn end_stuck_drain(dir: PathBuf) -> impl FnOnce() + Send + 'static {
    move || {
        crate::stderr_println!(
            "error: the workers did not end their drain; ending them (the output may be incomplete)"
        );
        remove_run_dir(&dir);
        std::process::exit(1);
    }
}

/// A worker process that fails (exits with an error) fails the run at once, as a failing
/// executor does in local mode: the supervisor ends the other workers, then this process
/// exits. A worker ended by a signal (killed, or stopped and then killed for its missing
/// heartbeats) is restarted by the supervisor instead, and acking replays what it held; with
/// checkpointed state, every worker rolls back to the last commit (nimbus starts a new
/// generation when the restarted worker joins), and a worker that stopped to roll back
/// (`supervisor::ROLLED_BACK`) is restarted at once.
fn fail_with_workers(
    exits: crossbeam_channel::Receiver<supervisor::WorkerExit>,
    supervisor_done: Arc<AtomicBool>,
    cleanup: &Cleanup,
) -> anyhow::Result<()> {
    let supervisor_stop = cleanup.supervisor_stop.clone();
    let dir = cleanup.dir.clone();
    std::thread::Builder::new()
        .name("run-workers".into())
        .spawn(move || {
            let failed = |e: &supervisor::WorkerExit| {
                e.status
                    .code()
                    .is_some_and(|c| c != 0 && c != supervisor::ROLLED_BACK)
            };
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
    Ok(())
}

/// First SIGINT/SIGTERM sets the returned flag (stop the spouts and drain); a second one while
/// draining removes the temporary folder and exits 130 at once (the workers, launched with a
/// parent-death signal, end with this process).
fn drain_on_signals(dir: PathBuf) -> anyhow::Result<Arc<AtomicBool>> {
    let clean_up = Box::new(move || remove_run_dir(&dir));
    signals::on_stop_signals(signals::Second::CleansUpAndExits(clean_up))
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
