//! `storm run FILE --nimbus ADDR`: run a topology attached on a running cluster. This
//! process registers a one-slot supervisor of its own and runs there the worker holding the
//! `stdin` spouts and `stdout` sinks; the cluster's supervisors run the rest. When
//! every worker has finished, the topology is killed so its slots are free again.

use super::Status;
use crate::cli::RunArgs;
use crate::cluster::layout::{SupervisorInfo, TaskHeartbeat};
use crate::cluster::nimbus::now_secs;
use crate::cluster::rpc::{self, Request, TopologySummary};
use crate::cluster::worker;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Ends the run's presence on the cluster however the run ends: the topology is killed and
/// the home supervisor's session closed.
struct Attached {
    nimbus: String,
    name: String,
    session: u64,
    beating: Arc<AtomicBool>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.beating.store(false, Ordering::Relaxed);
        let kill = Request::Kill {
            name: self.name.clone(),
            wait_secs: Some(0),
        };
        let _ = rpc::call::<String>(&self.nimbus, &kill);
        let close = Request::CloseSession {
            session: self.session,
        };
        let _ = rpc::call::<serde_json::Value>(&self.nimbus, &close);
    }
}

pub fn run(args: RunArgs, nimbus: &str) -> anyhow::Result<Status> {
    let (loaded, overrides) = match super::run::load_for_run(&args) {
        Ok(l) => l,
        Err(status) => return Ok(status),
    };
    let topology = loaded.topology;
    super::cluster::use_cluster_secret(&overrides);
    let has_home = topology.components.iter().any(|c| c.ctype.is_console());

    let interrupted = super::run::drain_on_signals()?;

    // The home slot: a supervisor with one port, kept alive by a heartbeat thread.
    let home_port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let home_id = format!("run-{}", std::process::id());
    let session: u64 = rpc::call(nimbus, &Request::OpenSession { timeout_ms: 10_000 })?;
    let beat = {
        let home_id = home_id.clone();
        let started = Instant::now();
        move || Request::SupervisorBeat {
            session,
            id: home_id.clone(),
            info: SupervisorInfo {
                hostname: "127.0.0.1".into(),
                time_secs: now_secs(),
                uptime_secs: started.elapsed().as_secs(),
                ports: if has_home { vec![home_port] } else { vec![] },
            },
        }
    };
    rpc::call::<serde_json::Value>(nimbus, &beat())?;
    let attached = Attached {
        nimbus: nimbus.to_string(),
        name: topology.name.clone(),
        session,
        beating: Arc::new(AtomicBool::new(true)),
    };
    {
        let beating = attached.beating.clone();
        let nimbus = nimbus.to_string();
        std::thread::Builder::new()
            .name("run-home-beat".into())
            .spawn(move || {
                while beating.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(500));
                    if let Err(e) = rpc::call::<serde_json::Value>(&nimbus, &beat()) {
                        tracing::warn!("home supervisor heartbeat: {e:#}");
                    }
                }
            })?;
    }
    let sub = super::cluster::submission(&args.source, &overrides, Some(home_id))?;
    let started = Instant::now();
    let id: String = rpc::call(nimbus, &Request::Submit(sub))?;
    crate::stderr_println!("submitted {} as {id}", topology.name);

    // Signals and --duration deactivate the topology: spouts stop everywhere, it drains.
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let deadline = args.duration.map(|d| Instant::now() + d);
        let kill = Request::Kill {
            name: topology.name.clone(),
            wait_secs: Some(topology.config.message_timeout().as_secs()),
        };
        let nimbus = nimbus.to_string();
        std::thread::Builder::new()
            .name("run-stop".into())
            .spawn(move || loop {
                std::thread::sleep(Duration::from_millis(50));
                if interrupted.load(Ordering::Relaxed)
                    || deadline.is_some_and(|d| Instant::now() >= d)
                {
                    stop.store(true, Ordering::Relaxed);
                    if let Err(e) = rpc::call::<String>(&nimbus, &kill) {
                        tracing::warn!("deactivating the topology: {e:#}");
                    }
                    return;
                }
            })?;
    }
    let report = if has_home {
        let slot = format!("127.0.0.1:{home_port}");
        match worker::run(nimbus, &id, &slot, stop.clone())? {
            worker::WorkerEnd::Finished(r) => Some(r),
            worker::WorkerEnd::Unassigned => None,
        }
    } else {
        None
    };
    loop {
        let list: Vec<TopologySummary> = rpc::call(nimbus, &Request::List)?;
        match list.iter().find(|t| t.id == id) {
            Some(t) if t.status == "finished" => break,
            Some(_) => {}
            None if stop.load(Ordering::Relaxed) => break,
            None => anyhow::bail!("topology {id} was removed from the cluster before it finished"),
        }
        if stop.load(Ordering::Relaxed) && !has_home {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The figures of every task: this process's, and the others' last heartbeats.
    let beats: Vec<(u32, TaskHeartbeat)> = rpc::call(nimbus, &Request::Heartbeats { id })?;
    let beats = beats.into_iter().collect();
    drop(attached);
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
    super::run_processes::finish_report(&args, &report)
}
