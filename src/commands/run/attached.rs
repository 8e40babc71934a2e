//! `storm run FILE --nimbus ADDR`: run a topology attached on a running cluster. This
//! process registers a one-slot supervisor of its own and runs there the worker holding the
//! `stdin` spouts and `stdout` sinks; the cluster's supervisors run the rest. When
//! every worker has finished, the topology is killed so its slots are free again.

use super::{drain_on_signals, finish, load_for_run, run_home, spread_report};
use super::{Scope, StopWatcher, StopWhen};
use crate::cli::RunArgs;
use crate::cluster::coordination::layout::{SupervisorInfo, TaskHeartbeat};
use crate::cluster::nimbus::now_secs;
use crate::cluster::protocol::rpc::{Client, Request, TopologySummary};
use crate::commands::cluster::{command_client, ship_resources, submission};
use crate::commands::Status;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Ends the run's presence on the cluster however the run ends: the topology is killed and
/// the home supervisor's session closed.
struct Attached {
    nimbus: Client,
    name: String,
    /// The home supervisor's session (opened again when a new leader does not know it).
    session: Arc<AtomicU64>,
    beating: Arc<AtomicBool>,
}

/// How long an attached run waits for a nimbus to lead again before it gives up: past a
/// ZooKeeper restart and a leader frozen past the default 20 s session timeout.
const LEADER_WAIT: Duration = Duration::from_secs(120);

impl Drop for Attached {
    fn drop(&mut self) {
        self.beating.store(false, Ordering::Relaxed);
        let kill = Request::Kill {
            name: self.name.clone(),
            wait_secs: Some(0),
        };
        let _ = self.nimbus.call::<String>(&kill);
        let close = Request::CloseSession {
            session: self.session.load(Ordering::Relaxed),
        };
        let _ = self.nimbus.call::<serde_json::Value>(&close);
    }
}

/// Run the topology on the cluster of nimbus at `addr` until its input ends or it is stopped.
pub(super) fn run(args: RunArgs, addr: &str) -> anyhow::Result<Status> {
    let (loaded, overrides) = match load_for_run(&args) {
        Ok(l) => l,
        Err(status) => return Ok(status),
    };
    let topology = loaded.topology;
    let nimbus = command_client(addr, &overrides)?.riding_out_elections(LEADER_WAIT);
    let has_home = topology.components.iter().any(|c| c.ctype.is_console());

    let interrupted = drain_on_signals()?;
    // The home slot is named by a port this process holds for the whole run, so no other
    // run on this host names its slot alike; the home worker listens on a port of its own.
    let home_name = TcpListener::bind("127.0.0.1:0")?;
    let home_port = home_name.local_addr()?.port();
    let (attached, home_id) = attach(&nimbus, &topology.name, has_home.then_some(home_port))?;
    let mut sub = submission(&args.source, &overrides, Some(home_id))?;
    ship_resources(&mut sub, &args.source, &topology)?;
    let started = Instant::now();
    let id: String = nimbus.call(&Request::Submit(sub))?;
    crate::stderr_println!("submitted {} as {id}", topology.name);

    // Signals and --duration deactivate the topology: spouts stop everywhere, it drains.
    let stop = Arc::new(AtomicBool::new(false));
    // Its workers drain, or the kill's wait ends them; should neither happen (a home worker
    // stuck writing to an output nobody reads, a cluster that never reports the end), the
    // topology was killed at the stop and this process ends.
    let when = StopWhen::new(interrupted, args.duration).abandon_after(
        super::workers_drain_limit(&topology.config),
        super::exit_with(
            "the run did not end its drain (an output nobody reads, a component that does not return, or a cluster that does not answer); exiting (the output may be incomplete)",
        ),
    );
    let watcher = StopWatcher::spawn(when, deactivate(&nimbus, &topology, stop.clone()), None)?;
    let slot = has_home.then(|| format!("127.0.0.1:{home_port}"));
    let home = run_home(&nimbus, &id, slot, stop.clone())?;
    wait_until_finished(&nimbus, &id, &stop, has_home)?;
    // The figures of every task: this process's, and the others' last heartbeats.
    let beats: Vec<(u32, TaskHeartbeat)> = nimbus.call(&Request::Heartbeats { id })?;
    let beats = beats.into_iter().collect();
    drop(watcher);
    drop(attached);
    drop(home_name);
    let report = spread_report(home, &topology, &beats, started.elapsed());
    finish(&args, &report, Scope::Spread, topology.at_least_once())
}

/// Register this process as a supervisor with one slot (`home_port`, when the topology has
/// `stdin` or `stdout` components) or none, kept alive by a heartbeat thread until the run
/// ends. Returns the guard of the run's presence on the cluster and the supervisor's id.
fn attach(
    nimbus: &Client,
    name: &str,
    home_port: Option<u16>,
) -> anyhow::Result<(Attached, String)> {
    let home_id = format!("run-{}", std::process::id());
    let open = Request::OpenSession { timeout_ms: 10_000 };
    let session = Arc::new(AtomicU64::new(nimbus.call(&open)?));
    let beat = {
        let home_id = home_id.clone();
        let started = Instant::now();
        move |session| Request::SupervisorBeat {
            session,
            id: home_id.clone(),
            info: SupervisorInfo {
                hostname: "127.0.0.1".into(),
                time_secs: now_secs(),
                uptime_secs: started.elapsed().as_secs(),
                ports: home_port.into_iter().collect(),
            },
        }
    };
    nimbus.call::<serde_json::Value>(&beat(session.load(Ordering::Relaxed)))?;
    let attached = Attached {
        nimbus: nimbus.clone(),
        name: name.to_string(),
        session: session.clone(),
        beating: Arc::new(AtomicBool::new(true)),
    };
    let beating = attached.beating.clone();
    let nimbus = nimbus.clone();
    std::thread::Builder::new()
        .name("run-home-beat".into())
        .spawn(move || {
            while beating.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(500));
                let beat = beat(session.load(Ordering::Relaxed));
                let Err(e) = nimbus.call::<serde_json::Value>(&beat) else {
                    continue;
                };
                // Sessions are the leader's: one that took over since does not know ours.
                if format!("{e:#}").contains("is not open") {
                    match nimbus.call::<u64>(&open) {
                        Ok(s) => session.store(s, Ordering::Relaxed),
                        Err(e) => tracing::warn!("home supervisor session: {e:#}"),
                    }
                } else {
                    tracing::warn!("home supervisor heartbeat: {e:#}");
                }
            }
        })?;
    Ok((attached, home_id))
}

/// What the stop watcher does: stop the home worker, and kill the topology (deactivated, its
/// tuples in flight given the message timeout to drain).
fn deactivate(
    nimbus: &Client,
    topology: &crate::model::Topology,
    stop: Arc<AtomicBool>,
) -> impl FnOnce() + Send + 'static {
    let kill = Request::Kill {
        name: topology.name.clone(),
        wait_secs: Some(topology.config.message_timeout().as_secs()),
    };
    let nimbus = nimbus.clone();
    // Killed first, then stopped here: a worker that sees the stop while it joins its
    // generation finds the kill recorded, so no generation starts without it.
    move || {
        if let Err(e) = nimbus.call::<String>(&kill) {
            tracing::warn!("deactivating the topology: {e:#}");
        }
        stop.store(true, Ordering::Relaxed);
    }
}

/// Wait until nimbus says every worker of topology `id` has finished (or, once stopped, until
/// it is gone, or at once when nothing runs here).
fn wait_until_finished(
    nimbus: &Client,
    id: &str,
    stop: &AtomicBool,
    has_home: bool,
) -> anyhow::Result<()> {
    loop {
        let list: Vec<TopologySummary> = nimbus.call(&Request::List)?;
        match list.iter().find(|t| t.id == id) {
            Some(t) if t.status == "finished" => return Ok(()),
            Some(_) => {}
            None if stop.load(Ordering::Relaxed) => return Ok(()),
            None => anyhow::bail!("topology {id} was removed from the cluster before it finished"),
        }
        if stop.load(Ordering::Relaxed) && !has_home {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
