//! A supervisor: registers itself under an ephemeral
//! `/supervisors/{id}` node and learns its assignments (through nimbus, which holds the node
//! on a session kept alive by the supervisor's heartbeats and answers them with its work; or,
//! with ZooKeeper configured, on its own session, watching `/assignments`: `zk_session`),
//! launches one worker process per assigned slot, restarts workers that die, kills workers
//! whose slot is no longer assigned, and ends its workers when it stops.

use self::zk_session::{ZkSupervisor, ZkSupervisorSettings};
use crate::clock::Clock;
use crate::cluster::coordination::layout::{NodePort, SupervisorInfo};
use crate::cluster::protocol::rpc::{self, Request, SlotWork};

pub(crate) mod zk_session;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the supervisor heartbeats and looks at its assignments.
const TICK: Duration = Duration::from_millis(100);
/// Restart delay of a worker that died: doubled after each death in a row, up to the maximum.
const RESTART_MIN: Duration = Duration::from_millis(500);
const RESTART_MAX: Duration = Duration::from_secs(30);
/// A worker that ran this long before dying was healthy: its slot's count of deaths starts over.
const STABLE: Duration = Duration::from_secs(30);
/// Deaths in a row after which the slot is reported to nimbus as failing.
const REPORT_AFTER: u32 = 3;
/// Retry delay while nimbus cannot be reached: doubled after each failure, up to the maximum
/// (and to half the session timeout: a nimbus that comes back keeps the supervisor's session
/// only if it hears from it within one timeout).
const NIMBUS_RETRY_MIN: Duration = Duration::from_millis(200);
const NIMBUS_RETRY_MAX: Duration = Duration::from_secs(5);

/// What a supervisor is and where it reports.
#[derive(Debug, Clone)]
pub(crate) struct SupervisorOptions {
    /// Nimbus, called with the cluster secret.
    nimbus: rpc::Client,
    /// Its id in `/supervisors` (unique per supervisor process, as Storm's UUIDs are).
    pub(crate) id: String,
    /// The host workers bind to and peers connect to.
    host: String,
    /// The ports naming its slots (each worker listens on a port the system gives it).
    ports: Vec<u16>,
    /// The `storm` executable that runs workers.
    exe: PathBuf,
    /// Session timeout: nimbus forgets the supervisor this long after its last heartbeat.
    session_timeout: Duration,
    /// Extra environment of worker processes (the cluster secret given with `-c`).
    pub(crate) env: Vec<(String, String)>,
    /// Workers get SIGKILL when the thread that launched them ends, however this process ends
    /// (`storm run --processes`: nothing may outlive the run). Linux only.
    pub(crate) die_with_parent: bool,
    /// Ports whose worker is to be killed (SIGKILL, which also ends a stopped process); it is
    /// then restarted like any dead worker.
    pub(crate) kill_requests: Option<crossbeam_channel::Receiver<u16>>,
    /// With ZooKeeper: the supervisor registers and watches its assignments there itself.
    pub(crate) zookeeper: Option<ZkSupervisorSettings>,
    /// Where workers' output is kept (`storm supervisor`); none: workers write to the
    /// supervisor's own standard output and error (`storm run --processes`).
    pub(crate) logs: Option<super::worker_logs::LogSettings>,
    /// What its heartbeats, restart back-offs and log sweeps go by.
    pub(crate) clock: Clock,
}

/// The exit status of a worker that stopped to roll back with the other workers of its
/// checkpointed topology (`EX_TEMPFAIL`): started again at once, not counted as a death.
pub(crate) const ROLLED_BACK: i32 = 75;

/// A worker process that ended on its own.
#[derive(Debug, Clone)]
pub(crate) struct WorkerExit {
    pub(crate) port: u16,
    pub(crate) status: ExitStatus,
}

struct Slot {
    topology: String,
    version: u64,
    child: Option<Child>,
    /// The worker finished its executors (exit 0): not restarted.
    finished: bool,
    /// When the current worker was launched.
    started: Instant,
    /// Deaths in a row (reset by a worker that ran for [`STABLE`]).
    deaths: u32,
    /// When the next launch is due, after a death.
    restart_at: Option<Instant>,
}

impl Slot {
    fn new(opts: &SupervisorOptions, w: &SlotWork) -> Slot {
        Slot {
            topology: w.topology.clone(),
            version: w.version,
            child: launch(opts, &w.topology, w.port),
            finished: false,
            started: opts.clock.now(),
            deaths: 0,
            restart_at: None,
        }
    }
}

/// The delay before restarting a worker after `deaths` deaths in a row: 0.5 s, 1 s, 2 s, ...
/// up to `RESTART_MAX`.
fn restart_delay(deaths: u32) -> Duration {
    let doublings = deaths.saturating_sub(1).min(16);
    RESTART_MIN.saturating_mul(1 << doublings).min(RESTART_MAX)
}

/// The longest wait between two attempts to reach nimbus.
fn retry_cap(session_timeout: Duration) -> Duration {
    NIMBUS_RETRY_MAX
        .min(session_timeout / 2)
        .max(NIMBUS_RETRY_MIN)
}

/// The next retry delay after `current` failed: doubled, up to `max`.
fn next_delay(current: Duration, max: Duration) -> Duration {
    current.saturating_mul(2).min(max)
}

/// What came of one heartbeat.
enum Beat {
    /// Nimbus answered with this supervisor's assignments.
    Work(Vec<SlotWork>),
    /// Nimbus could not be reached, or refused for now (another live supervisor claims these
    /// slots: this one takes over once that one is gone): try again later.
    Retry,
}

/// Check that the slots can be served: `host` resolves to an address of this machine, which
/// its workers listen on (each on a port the system gives it, which it reports: a slot's port
/// only names the slot, so a port in use by something else does not matter). A supervisor
/// that cannot serve its slots would otherwise take work whose workers can only fail.
fn check_slots(host: &str) -> anyhow::Result<()> {
    use std::net::ToSocketAddrs;
    let addr = (host, 0)
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("--host {host}: cannot resolve it: {e}"))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("--host {host}: resolves to no address"))?;
    std::net::TcpListener::bind(addr).map_err(|e| {
        anyhow::anyhow!(
            "--host {host}: workers cannot listen on {}: {e} (is it an address of this machine?)",
            addr.ip()
        )
    })?;
    Ok(())
}

/// Run until `stop` is set; every worker exit is sent on `exits` if given. Fails at once when
/// the slots cannot be served ([`check_slots`]).
pub(crate) fn run(
    opts: &SupervisorOptions,
    stop: &AtomicBool,
    exits: Option<crossbeam_channel::Sender<WorkerExit>>,
) -> anyhow::Result<()> {
    check_slots(&opts.host)?;
    let mut zk = match &opts.zookeeper {
        Some(settings) => Some(ZkSupervisor::connect(settings, &opts.id)?),
        None => None,
    };
    let clock = &opts.clock;
    let started = clock.now();
    let mut session: Option<u64> = None;
    let mut slots: BTreeMap<u16, Slot> = BTreeMap::new();
    let mut next_beat = started;
    let mut retry = NIMBUS_RETRY_MIN;
    let mut next_sweep = started;
    tracing::info!(
        "supervisor {}: slots {:?} on {}, nimbus {}",
        opts.id,
        opts.ports,
        opts.host,
        opts.nimbus
    );
    while !stop.load(Ordering::Relaxed) {
        if clock.now() >= next_beat {
            let beat = match zk.as_mut() {
                Some(zk) => zk_beat(opts, zk, started, retry),
                None => heartbeat(opts, &mut session, started, retry),
            };
            match beat {
                Beat::Work(work) => {
                    reconcile(opts, &mut slots, &work);
                    retry = NIMBUS_RETRY_MIN;
                    next_beat = clock.now() + TICK;
                }
                Beat::Retry => {
                    next_beat = clock.now() + retry;
                    retry = next_delay(retry, retry_cap(opts.session_timeout));
                }
            }
        }
        for port in opts.kill_requests.iter().flat_map(|r| r.try_iter()) {
            if let Some(child) = slots.get_mut(&port).and_then(|s| s.child.as_mut()) {
                tracing::warn!("supervisor: killing worker {port} (pid {})", child.id());
                let _ = child.kill();
            }
        }
        for (port, slot) in slots.iter_mut() {
            supervise(opts, *port, slot, exits.as_ref());
        }
        if let Some(logs) = opts.logs.as_ref().filter(|_| clock.now() >= next_sweep) {
            next_sweep = clock.now() + logs.cleanup_every;
            let running: Vec<String> = slots.values().map(|s| s.topology.clone()).collect();
            for id in logs.sweep(clock.wall(), &running) {
                tracing::info!("supervisor: removed the old worker logs of {id}");
            }
        }
        std::thread::sleep(TICK);
    }
    for (port, slot) in slots.iter_mut() {
        kill(slot, *port);
    }
    if let Some(zk) = &zk {
        zk.unregister();
    }
    if let Some(s) = session {
        let _ = opts
            .nimbus
            .call::<serde_json::Value>(&Request::CloseSession { session: s });
    }
    Ok(())
}

/// Storm's supervisor sync for one slot: a finished worker is left alone, a dead one is
/// restarted after a back-off that grows while it keeps dying, and a slot whose workers keep
/// dying is reported to nimbus (which moves its work elsewhere).
fn supervise(
    opts: &SupervisorOptions,
    port: u16,
    slot: &mut Slot,
    exits: Option<&crossbeam_channel::Sender<WorkerExit>>,
) {
    let Some(child) = slot.child.as_mut() else {
        let due = slot.restart_at.is_none_or(|t| opts.clock.now() >= t);
        if !slot.finished && due {
            slot.child = launch(opts, &slot.topology, port);
            slot.started = opts.clock.now();
            slot.restart_at = None;
        }
        return;
    };
    let Ok(Some(status)) = child.try_wait() else {
        return;
    };
    slot.child = None;
    if !status.success() {
        // A worker that died cannot have removed its copy of the topology's resources.
        crate::cluster::protocol::multilang_files::sweep_copies();
    }
    if let Some(tx) = exits {
        let _ = tx.send(WorkerExit { port, status });
    }
    if status.success() {
        slot.finished = true;
        tracing::info!("supervisor: worker {port} of {} finished", slot.topology);
        return;
    }
    if status.code() == Some(ROLLED_BACK) {
        // Not a death: the worker stopped to roll back with the others, and starts again now.
        tracing::info!("supervisor: worker {port} of {} rolled back", slot.topology);
        return;
    }
    slot.deaths = if opts.clock.since(slot.started) >= STABLE {
        1
    } else {
        slot.deaths + 1
    };
    let delay = restart_delay(slot.deaths);
    slot.restart_at = Some(opts.clock.now() + delay);
    tracing::warn!(
        "supervisor: worker {port} of {} died ({status}); death {} in a row, restarting in {delay:?}",
        slot.topology,
        slot.deaths
    );
    if slot.deaths >= REPORT_AFTER {
        report_failing(opts, port, slot, status);
    }
}

/// Tell nimbus that a slot's workers keep dying.
fn report_failing(opts: &SupervisorOptions, port: u16, slot: &Slot, status: ExitStatus) {
    let request = Request::SlotFailing {
        id: slot.topology.clone(),
        slot: NodePort {
            node: opts.id.clone(),
            port,
        },
        error: format!(
            "the worker on {}:{port} died {} times in a row (last: {status})",
            opts.host, slot.deaths
        ),
    };
    if let Err(e) = opts.nimbus.call::<serde_json::Value>(&request) {
        tracing::warn!("supervisor: cannot report failing slot {port} to nimbus: {e:#}");
    }
}

/// One heartbeat (opening a session first when there is none). `retry` is the delay before
/// the next attempt should this one fail, for the log.
fn heartbeat(
    opts: &SupervisorOptions,
    session: &mut Option<u64>,
    started: Instant,
    retry: Duration,
) -> Beat {
    let s = match *session {
        Some(s) => s,
        None => {
            let open = Request::OpenSession {
                timeout_ms: u64::try_from(opts.session_timeout.as_millis()).unwrap_or(u64::MAX),
            };
            match opts.nimbus.call::<u64>(&open) {
                Ok(s) => {
                    *session = Some(s);
                    s
                }
                Err(e) => {
                    tracing::warn!("supervisor: {e:#}; retrying in {retry:?}");
                    return Beat::Retry;
                }
            }
        }
    };
    let beat = Request::SupervisorBeat {
        session: s,
        id: opts.id.clone(),
        info: info(opts, started),
    };
    match opts.nimbus.call::<Vec<SlotWork>>(&beat) {
        Ok(work) => Beat::Work(work),
        Err(e) => {
            let text = e.to_string();
            if text.starts_with("slot conflict") {
                tracing::warn!(
                    "supervisor {}: nimbus refuses it: {text}; it gets no work, and asks again \
                     in {retry:?}",
                    opts.id
                );
                return Beat::Retry;
            }
            if text.contains("session") {
                // Expired (nimbus lost us): register again with a new session.
                *session = None;
            }
            tracing::warn!("supervisor: heartbeat: {e:#}; retrying in {retry:?}");
            Beat::Retry
        }
    }
}

/// The ZooKeeper beat: register, and read the assignments whose watches fired.
fn zk_beat(
    opts: &SupervisorOptions,
    zk: &mut ZkSupervisor,
    started: Instant,
    retry: Duration,
) -> Beat {
    match zk.beat(&info(opts, started)) {
        Ok(work) => Beat::Work(work),
        Err(e) => {
            tracing::warn!("supervisor {}: {e}; retrying in {retry:?}", opts.id);
            Beat::Retry
        }
    }
}

/// What the supervisor's node says of it.
fn info(opts: &SupervisorOptions, started: Instant) -> SupervisorInfo {
    SupervisorInfo {
        hostname: opts.host.clone(),
        time_secs: opts.clock.epoch_secs(),
        uptime_secs: opts.clock.since(started).as_secs(),
        ports: opts.ports.clone(),
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
            e.insert(Slot::new(opts, w));
        }
    }
}

fn launch(opts: &SupervisorOptions, topology: &str, port: u16) -> Option<Child> {
    let slot = format!("{}:{port}", opts.host);
    let mut command = Command::new(&opts.exe);
    command
        .args([
            "worker",
            "--nimbus",
            opts.nimbus.addr(),
            "--topology",
            topology,
        ])
        .args(["--slot", &slot])
        .args(zookeeper_args(opts.zookeeper.as_ref()))
        .envs(opts.env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null());
    if let Some(logs) = &opts.logs {
        if let Err(e) = logs.capture(topology, port, &mut command) {
            tracing::warn!("supervisor: the worker log of {slot} cannot be kept: {e:#}");
            return None;
        }
    }
    if opts.die_with_parent {
        crate::lifeline::die_with_parent(&mut command);
        // A process group of its own: Ctrl-C at a terminal (SIGINT to the foreground group)
        // reaches `storm run` alone, which drains its workers, instead of killing them too
        // (restarted, they would roll the drain back).
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
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

/// What a worker needs to write its heartbeats into the supervisor's ensemble itself.
fn zookeeper_args(zk: Option<&ZkSupervisorSettings>) -> Vec<String> {
    let Some(zk) = zk else {
        return Vec::new();
    };
    let ms = |d: Duration| d.as_millis().to_string();
    vec![
        "--zookeeper".into(),
        zk.settings.connect.clone(),
        "--zookeeper-root".into(),
        zk.root.clone(),
        "--zookeeper-session-ms".into(),
        ms(zk.settings.session_timeout),
        "--zookeeper-connection-ms".into(),
        ms(zk.settings.connection_timeout),
    ]
}

fn kill(slot: &mut Slot, port: u16) {
    if let Some(mut child) = slot.child.take() {
        tracing::info!("supervisor: stopping worker {port} (pid {})", child.id());
        let _ = child.kill();
        let _ = child.wait();
        // A killed worker cannot remove its copy of the topology's resources.
        crate::cluster::protocol::multilang_files::sweep_copies();
    }
}

/// A supervisor id unique to this process on this host.
fn default_id(host: &str) -> String {
    format!("{host}-{}", std::process::id())
}

/// The options of a supervisor with the current executable.
pub(crate) fn options(
    nimbus: rpc::Client,
    host: &str,
    ports: Vec<u16>,
) -> anyhow::Result<SupervisorOptions> {
    Ok(SupervisorOptions {
        nimbus,
        id: default_id(host),
        host: host.to_string(),
        ports,
        exe: std::env::current_exe()?,
        session_timeout: Duration::from_secs(10),
        env: Vec::new(),
        die_with_parent: false,
        kill_requests: None,
        zookeeper: None,
        logs: None,
        clock: Clock::system(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_back_off_exponentially_up_to_the_cap() {
        let delays: Vec<u64> = (1..=9)
            .map(|d| restart_delay(d).as_millis() as u64)
            .collect();
        assert_eq!(
            delays,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
        assert_eq!(restart_delay(u32::MAX), RESTART_MAX);
        assert_eq!(
            next_delay(Duration::from_secs(4), NIMBUS_RETRY_MAX),
            NIMBUS_RETRY_MAX
        );
        // Nimbus hears again from a supervisor within one session timeout.
        assert_eq!(retry_cap(Duration::from_secs(10)), Duration::from_secs(5));
        assert_eq!(retry_cap(Duration::from_secs(4)), Duration::from_secs(2));
        assert_eq!(retry_cap(Duration::ZERO), NIMBUS_RETRY_MIN);
    }

    /// The exit of a slot's worker, waited for on the machine's time.
    fn wait_for_exit(opts: &SupervisorOptions, slot: &mut Slot) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while slot.child.is_some() && std::time::Instant::now() < deadline {
            supervise(opts, 6700, slot, None);
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(slot.child.is_none(), "the worker exited");
    }

    /// Restart back-offs go by the supervisor's clock: a dead worker is started again only
    /// once the clock has passed its delay, and a worker that lived for `STABLE` by that clock
    /// starts the count of deaths over.
    #[test]
    fn restart_back_offs_go_by_the_supervisor_clock() {
        let mut opts = options(
            rpc::Client::new("127.0.0.1:9", None),
            "127.0.0.1",
            vec![6700],
        )
        .expect("options");
        // A worker that dies at once.
        opts.exe = PathBuf::from("/bin/false");
        opts.clock = Clock::manual();
        let work = SlotWork {
            port: 6700,
            topology: "t".into(),
            version: 1,
        };
        let mut slot = Slot::new(&opts, &work);
        wait_for_exit(&opts, &mut slot);
        assert_eq!(slot.deaths, 1);
        for _ in 0..20 {
            supervise(&opts, 6700, &mut slot, None);
        }
        assert!(
            slot.child.is_none(),
            "not restarted before 0.5 s by the clock"
        );
        opts.clock.advance(RESTART_MIN);
        supervise(&opts, 6700, &mut slot, None);
        assert!(slot.child.is_some(), "restarted once 0.5 s passed");
        wait_for_exit(&opts, &mut slot);
        assert_eq!(slot.deaths, 2, "a second death in a row");
        assert_eq!(slot.restart_at, Some(opts.clock.now() + restart_delay(2)));
        opts.clock.advance(restart_delay(2));
        supervise(&opts, 6700, &mut slot, None);
        // It ran for STABLE by the clock before dying: its deaths start over.
        opts.clock.advance(STABLE);
        wait_for_exit(&opts, &mut slot);
        assert_eq!(slot.deaths, 1);
    }

    #[test]
    fn slots_that_cannot_be_served_are_refused_at_start() {
        let err = check_slots("no-such-host.invalid").unwrap_err().to_string();
        assert!(
            err.contains("no-such-host.invalid: cannot resolve"),
            "{err}"
        );
        // An address of another machine (TEST-NET-1): nothing can listen on it here.
        let err = check_slots("192.0.2.1").unwrap_err().to_string();
        assert!(err.contains("workers cannot listen on 192.0.2.1"), "{err}");
        check_slots("127.0.0.1").unwrap();
    }
}
