//! A supervisor (Storm's `supervisor.clj`): registers itself with nimbus under an ephemeral
//! `/supervisors/{id}` node kept alive by its session's heartbeat, polls its assignments,
//! launches one worker process per assigned slot, restarts workers that die, kills workers
//! whose slot is no longer assigned, and ends its workers when it stops.

use super::layout::SupervisorInfo;
use super::nimbus::now_secs;
use super::rpc::{self, Request, SlotWork};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the supervisor heartbeats and looks at its assignments.
const TICK: Duration = Duration::from_millis(100);

/// What a supervisor is and where it reports.
#[derive(Debug, Clone)]
pub struct SupervisorOptions {
    pub nimbus: String,
    /// Its id in `/supervisors` (unique per supervisor process, as Storm's UUIDs are).
    pub id: String,
    /// The host workers bind to and peers connect to.
    pub host: String,
    pub ports: Vec<u16>,
    /// The `storm` executable that runs workers.
    pub exe: PathBuf,
    /// Session timeout: nimbus forgets the supervisor this long after its last heartbeat.
    pub session_timeout: Duration,
    /// Extra environment of worker processes (the cluster secret given with `-c`).
    pub env: Vec<(String, String)>,
    /// Workers get SIGKILL when the thread that launched them ends, however this process ends
    /// (`storm run --processes`: nothing may outlive the run). Linux only.
    pub die_with_parent: bool,
    /// Ports whose worker is to be killed (SIGKILL, which also ends a stopped process); it is
    /// then restarted like any dead worker.
    pub kill_requests: Option<crossbeam_channel::Receiver<u16>>,
}

/// A worker process that ended on its own.
#[derive(Debug, Clone)]
pub struct WorkerExit {
    pub topology: String,
    pub port: u16,
    pub status: ExitStatus,
}

struct Slot {
    topology: String,
    version: u64,
    child: Option<Child>,
    /// The worker finished its executors (exit 0): not restarted.
    finished: bool,
}

/// Run until `stop` is set; every worker exit is sent on `exits` if given.
pub fn run(
    opts: &SupervisorOptions,
    stop: &AtomicBool,
    exits: Option<crossbeam_channel::Sender<WorkerExit>>,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut session: Option<u64> = None;
    let mut slots: BTreeMap<u16, Slot> = BTreeMap::new();
    tracing::info!(
        "supervisor {}: slots {:?} on {}, nimbus {}",
        opts.id,
        opts.ports,
        opts.host,
        opts.nimbus
    );
    while !stop.load(Ordering::Relaxed) {
        if let Some(work) = heartbeat(opts, &mut session, started) {
            reconcile(opts, &mut slots, &work);
        }
        for port in opts.kill_requests.iter().flat_map(|r| r.try_iter()) {
            if let Some(child) = slots.get_mut(&port).and_then(|s| s.child.as_mut()) {
                tracing::warn!("supervisor: killing worker {port} (pid {})", child.id());
                let _ = child.kill();
            }
        }
        // Storm's supervisor sync: a dead worker is restarted, a finished one left alone.
        for (port, slot) in slots.iter_mut() {
            let Some(child) = slot.child.as_mut() else {
                if !slot.finished {
                    slot.child = launch(opts, &slot.topology, *port);
                }
                continue;
            };
            if let Ok(Some(status)) = child.try_wait() {
                slot.child = None;
                if let Some(tx) = &exits {
                    let _ = tx.send(WorkerExit {
                        topology: slot.topology.clone(),
                        port: *port,
                        status,
                    });
                }
                if status.success() {
                    slot.finished = true;
                    tracing::info!("supervisor: worker {port} of {} finished", slot.topology);
                } else {
                    tracing::warn!(
                        "supervisor: worker {port} of {} died ({status}); restarting",
                        slot.topology
                    );
                    slot.child = launch(opts, &slot.topology, *port);
                }
            }
        }
        std::thread::sleep(TICK);
    }
    for (port, slot) in slots.iter_mut() {
        kill(slot, *port);
    }
    if let Some(s) = session {
        let _ = rpc::call::<serde_json::Value>(&opts.nimbus, &Request::CloseSession { session: s });
    }
    Ok(())
}

/// One heartbeat; returns this supervisor's assignments when nimbus answered.
fn heartbeat(
    opts: &SupervisorOptions,
    session: &mut Option<u64>,
    started: Instant,
) -> Option<Vec<SlotWork>> {
    let s = match *session {
        Some(s) => s,
        None => {
            let open = Request::OpenSession {
                timeout_ms: u64::try_from(opts.session_timeout.as_millis()).unwrap_or(u64::MAX),
            };
            match rpc::call::<u64>(&opts.nimbus, &open) {
                Ok(s) => {
                    *session = Some(s);
                    s
                }
                Err(e) => {
                    tracing::warn!("supervisor: {e:#}");
                    return None;
                }
            }
        }
    };
    let beat = Request::SupervisorBeat {
        session: s,
        id: opts.id.clone(),
        info: SupervisorInfo {
            hostname: opts.host.clone(),
            time_secs: now_secs(),
            uptime_secs: started.elapsed().as_secs(),
            ports: opts.ports.clone(),
        },
    };
    match rpc::call::<Vec<SlotWork>>(&opts.nimbus, &beat) {
        Ok(work) => Some(work),
        Err(e) => {
            if e.to_string().contains("session") {
                // Expired (nimbus lost us): register again with a new session.
                *session = None;
            }
            tracing::warn!("supervisor: heartbeat: {e:#}");
            None
        }
    }
}

/// Make the running workers match the assignment.
fn reconcile(opts: &SupervisorOptions, slots: &mut BTreeMap<u16, Slot>, work: &[SlotWork]) {
    let wanted = |port: u16, slot: &Slot| {
        work.iter()
            .any(|w| w.port == port && w.topology == slot.topology && w.version == slot.version)
    };
    for (port, slot) in slots.iter_mut() {
        if !wanted(*port, slot) {
            tracing::info!(
                "supervisor: slot {port} no longer runs {} as it was",
                slot.topology
            );
            kill(slot, *port);
        }
    }
    slots.retain(|port, slot| wanted(*port, slot));
    for w in work {
        if let std::collections::btree_map::Entry::Vacant(e) = slots.entry(w.port) {
            e.insert(Slot {
                topology: w.topology.clone(),
                version: w.version,
                child: launch(opts, &w.topology, w.port),
                finished: false,
            });
        }
    }
}

fn launch(opts: &SupervisorOptions, topology: &str, port: u16) -> Option<Child> {
    let slot = format!("{}:{port}", opts.host);
    let mut command = Command::new(&opts.exe);
    command
        .args(["worker", "--nimbus", &opts.nimbus, "--topology", topology])
        .args(["--slot", &slot])
        .envs(opts.env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null());
    if opts.die_with_parent {
        die_with_parent(&mut command);
    }
    let spawned = command.spawn();
    match spawned {
        Ok(c) => {
            tracing::info!(
                "supervisor: launched worker {slot} of {topology} (pid {})",
                c.id()
            );
            Some(c)
        }
        Err(e) => {
            tracing::warn!("supervisor: cannot launch a worker for {slot}: {e}");
            None
        }
    }
}

/// The child gets SIGKILL when the launching thread ends (Linux's parent-death signal); a
/// parent that is already gone by then makes it exit at once.
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: between fork and exec the closure calls only `prctl`, `getppid` and `_exit`,
    // which are async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}

fn kill(slot: &mut Slot, port: u16) {
    if let Some(mut child) = slot.child.take() {
        tracing::info!("supervisor: stopping worker {port} (pid {})", child.id());
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A supervisor id unique to this process on this host.
pub fn default_id(host: &str) -> String {
    format!("{host}-{}", std::process::id())
}

/// The options of a supervisor with the current executable.
pub fn options(nimbus: &str, host: &str, ports: Vec<u16>) -> anyhow::Result<SupervisorOptions> {
    Ok(SupervisorOptions {
        nimbus: nimbus.to_string(),
        id: default_id(host),
        host: host.to_string(),
        ports,
        exe: std::env::current_exe()?,
        session_timeout: Duration::from_secs(10),
        env: Vec::new(),
        die_with_parent: false,
        kill_requests: None,
    })
}
