//! Nimbus, the cluster's master: it holds the coordination tree (saved
//! under its data folder so a restarted nimbus carries on), accepts submissions (kept under
//! `LOCAL/nimbus/stormdist/ID`, Storm's `master_code_dir`), schedules and activates them, watches supervisor sessions and task
//! heartbeats and re-assigns the work of dead slots after `nimbus.task.timeout.secs`, records
//! component errors, and kills topologies. It is driven through typed methods: requests that
//! arrive over [`crate::cluster::protocol::rpc`] are translated to them, and `storm run --processes` calls them
//! directly.
//!
//! Under faults it stays bounded: at most `MAX_CONNECTIONS` connections at once, accept
//! failures backed off, refusals logged at a bounded rate, submissions over the cluster bounds
//! refused (`submission::within_cluster_bounds`), a supervisor claiming another's slots
//! refused, and slots whose workers keep dying avoided for `FAILING_FOR`.

use self::cluster_state::{ClusterError, ClusterState};
use self::ha::{Coordination, Leadership};
pub(crate) use self::submission::load_submission;
use self::submission::{home_assign, home_reassign};
use crate::cluster::coordination::layout::{
    AssignmentInfo, Listening, NodePort, SupervisorInfo, TaskError, TaskHeartbeat, TopologyStatus,
};
use crate::cluster::coordination::tree::{SharedTree, Tree};
use crate::cluster::coordination::znode_store::{CoordinationStore, SessionId};
use crate::cluster::protocol::rpc::{
    self, BeatReply, Request, SlotWork, Submission, TopologySummary, TopologyWork,
};
use crate::config::Config;
use crate::logging::{held_back, Throttle};
use crate::model::plan::Plan;
use crate::model::Topology;
use crate::net::auth::Secret;
use crate::placement::{Dead, ScheduleError};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How long a slot reported failing is kept out of scheduling.
const FAILING_FOR: Duration = Duration::from_secs(300);

/// Why a supervisor's heartbeat is refused: another live supervisor (another id) already
/// claims one of its host:port slots (the name its worker goes by in the UI, the logs and
/// errors, which must say which worker it was).
pub(crate) fn slot_clash(
    live: &BTreeMap<String, SupervisorInfo>,
    id: &str,
    info: &SupervisorInfo,
) -> Option<String> {
    live.iter()
        .filter(|(other, o)| *other != id && o.hostname == info.hostname)
        .find_map(|(other, o)| {
            let port = info.ports.iter().find(|p| o.ports.contains(p))?;
            Some(format!(
                "slot conflict: supervisor {other} already claims {}:{port}; \
                 each host:port may belong to one live supervisor",
                info.hostname
            ))
        })
}

/// How often the monitor looks at heartbeats and saves the tree (Storm's
/// `nimbus.monitor.freq.secs`, capped so small timeouts in tests are honoured).
const MONITOR_TICK: Duration = Duration::from_millis(500);

/// Connections served at once; more are closed at once (each holds a thread).
const MAX_CONNECTIONS: usize = 64;
/// Back-off after a failed accept (out of file descriptors), doubling up to the maximum.
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// How often each kind of refusal may be logged.
const LOG_EVERY: Duration = Duration::from_secs(10);
static ACCEPT_FAILED: Throttle = Throttle::new(LOG_EVERY);
static TOO_MANY: Throttle = Throttle::new(LOG_EVERY);
static NO_THREAD: Throttle = Throttle::new(LOG_EVERY);
static UNLOADABLE: Throttle = Throttle::new(LOG_EVERY);

/// The store nimbus's cluster state is kept in.
type Shared = Arc<dyn CoordinationStore>;

/// A topology nimbus has validated, with its plan.
pub(crate) struct Known {
    submission: Submission,
    pub(crate) topology: Topology,
    pub(crate) plan: Plan,
}

/// The nimbus daemon's state, shared by its connection threads and its monitor.
pub(crate) struct Nimbus {
    /// The embedded tree (empty and unused when the tree is in ZooKeeper).
    tree: SharedTree,
    /// Where the tree is: the embedded one, or a ZooKeeper ensemble.
    store: Arc<dyn CoordinationStore>,
    /// With ZooKeeper: the ensemble, and this nimbus's place in the leader election.
    zk: Option<Arc<Coordination>>,
    state: Mutex<ClusterState<Shared>>,
    data: PathBuf,
    /// Slots reported failing (by their supervisor), with the topology whose worker kept
    /// dying there and when: avoided by the scheduler until that topology is killed.
    failing: Mutex<BTreeMap<(String, NodePort), u64>>,
    /// Where submissions are kept (`master_code_dir`'s parent).
    stormdist: PathBuf,
    config: Config,
    known: Mutex<HashMap<String, Arc<Known>>>,
    /// Slots whose worker finished its executors (end of input), per topology.
    finished: Mutex<BTreeMap<String, BTreeSet<NodePort>>>,
    /// The checkpoints of topologies whose workers run in several processes.
    checkpoints: checkpoints::Keepers,
    /// Rebalances waiting for their wait to be over, per topology (the monitor ends them).
    rebalances: Mutex<BTreeMap<String, rebalance::Pending>>,
    dirty: AtomicBool,
    /// `storm.cluster.secret`: clients must prove it.
    secret: Option<Secret>,
    /// Set to end the accept loop and the monitor.
    pub(crate) stop: Arc<AtomicBool>,
    /// When this nimbus started (its UI's `nimbusUpTime`).
    started: std::time::Instant,
    /// The time heartbeats, failing slots, uptimes and rebalance waits go by: the machine's,
    /// or one moved by hand in tests.
    clock: crate::clock::Clock,
}

/// A data folder that lost its `tree.json` but kept submissions under `stormdist/`: nimbus
/// starts with an empty cluster (what the tree said is gone: assignments, statuses, counters),
/// and says so, naming what is left behind, rather than carrying on without a word.
fn warn_orphans(tree_file: &Path, stormdist: &Path) {
    let mut ids: Vec<String> = std::fs::read_dir(stormdist)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().join("submission.json").is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if ids.is_empty() {
        return;
    }
    ids.sort();
    tracing::warn!(
        "nimbus: {} is missing but {} holds {} submitted topologies ({}); starting with an \
         empty cluster: they are not running. Restore the tree file, or submit them again",
        tree_file.display(),
        stormdist.display(),
        ids.len(),
        ids.join(", ")
    );
}

pub(crate) fn now_secs() -> u64 {
    crate::clock::Clock::system().epoch_secs()
}

/// Record a worker's task heartbeats in the tree while its slot is assigned, and answer
/// whether it is still assigned and whether the topology is active (what nimbus answers a
/// worker's heartbeat, and what a worker on ZooKeeper reads there itself).
pub(crate) fn record_beats<S: CoordinationStore>(
    state: &ClusterState<S>,
    id: &str,
    slot: &NodePort,
    beats: &[(u32, TaskHeartbeat)],
) -> Result<BeatReply, ClusterError> {
    let Some(base) = state.storm_base(id)? else {
        return Ok(BeatReply {
            generation: 0,
            committed: 0,
            assigned: false,
            active: false,
            paused: false,
            log_config: Default::default(),
            listening: Vec::new(),
        });
    };
    let assignment = state.assignment(id)?;
    let assigned = assignment
        .as_ref()
        .is_some_and(|a| a.task_to_node_port.values().any(|s| s == slot));
    let mut listening = Vec::new();
    if let Some(a) = assignment.as_ref().filter(|_| assigned) {
        for (task, beat) in beats {
            state.task_heartbeat(id, *task, beat)?;
        }
        listening = listening_of(state, id, a)?;
    }
    let record = state.checkpoint_record(id)?.unwrap_or_default();
    Ok(BeatReply {
        generation: record.generation,
        committed: record.txid,
        assigned,
        active: base.status == TopologyStatus::Active,
        paused: matches!(
            base.status,
            TopologyStatus::Inactive | TopologyStatus::Rebalancing
        ),
        log_config: state.log_config(id)?.live(crate::log_config::now_ms()),
        listening,
    })
}

/// Where the workers of `assignment` listen: what the last heartbeat of each slot's first task
/// says, if it was written by the worker of that slot (a task that moved keeps the beat of its
/// old slot until its new worker beats).
fn listening_of<S: CoordinationStore>(
    state: &ClusterState<S>,
    id: &str,
    assignment: &AssignmentInfo,
) -> Result<Vec<Listening>, ClusterError> {
    let mut first: BTreeMap<&NodePort, u32> = BTreeMap::new();
    for (task, slot) in &assignment.task_to_node_port {
        first.entry(slot).or_insert(*task);
    }
    let mut out = Vec::new();
    for (slot, task) in first {
        let heard = state.task_heartbeat_of(id, task)?.and_then(|b| b.listening);
        out.extend(heard.filter(|l| &l.slot == slot));
    }
    Ok(out)
}

impl Nimbus {
    /// Open nimbus's state under `data`: the saved tree if there is one, else a fresh one.
    /// Always the embedded tree (`storm run --processes` keeps its run to itself, whatever
    /// `storm.zookeeper.servers` says); the `storm nimbus` daemon uses [`Nimbus::open_daemon`].
    pub(crate) fn open(data: &Path, config: Config) -> anyhow::Result<Arc<Nimbus>> {
        Nimbus::open_with(data, config, None, crate::clock::Clock::system())
    }

    /// Open the `storm nimbus` daemon's state: in the ZooKeeper ensemble of
    /// `storm.zookeeper.servers` when it is set, else as [`Nimbus::open`].
    pub(crate) fn open_daemon(data: &Path, config: Config) -> anyhow::Result<Arc<Nimbus>> {
        let zk = Coordination::from_config(&config)?.map(Arc::new);
        Nimbus::open_with(data, config, zk, crate::clock::Clock::system())
    }

    /// As [`Nimbus::open`], going by `clock` (tests move it by hand).
    #[cfg(test)]
    fn open_with_clock(
        data: &Path,
        config: Config,
        clock: crate::clock::Clock,
    ) -> anyhow::Result<Arc<Nimbus>> {
        Nimbus::open_with(data, config, None, clock)
    }

    fn open_with(
        data: &Path,
        config: Config,
        zk: Option<Arc<Coordination>>,
        clock: crate::clock::Clock,
    ) -> anyhow::Result<Arc<Nimbus>> {
        // `storm.local.dir`: the data folder's parent when it is `.../nimbus` (the default
        // `storm-local/nimbus`), else the data folder itself.
        let local_dir = match data.file_name() {
            Some(n) if n == "nimbus" => data.parent().unwrap_or(data).to_path_buf(),
            _ => data.to_path_buf(),
        };
        let stormdist = local_dir.join("nimbus").join("stormdist");
        std::fs::create_dir_all(&stormdist)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", stormdist.display()))?;
        let file = data.join("tree.json");
        let tree = if zk.is_some() {
            SharedTree::new()
        } else if file.exists() {
            SharedTree::from_tree(Tree::load(&file)?)
        } else {
            warn_orphans(&file, &stormdist);
            SharedTree::new()
        };
        let store: Shared = match &zk {
            Some(c) => c.store(),
            None => Arc::new(tree.clone()),
        };
        let mut state = ClusterState::new(store.clone(), &config.zookeeper_root())?;
        state.local_dir = local_dir.display().to_string();
        let secret = Secret::from_config(&config);
        let nimbus = Arc::new(Nimbus {
            tree,
            store,
            zk,
            state: Mutex::new(state),
            data: data.to_path_buf(),
            stormdist,
            config,
            known: Mutex::new(HashMap::new()),
            finished: Mutex::new(BTreeMap::new()),
            checkpoints: Arc::default(),
            rebalances: Mutex::new(BTreeMap::new()),
            failing: Mutex::new(BTreeMap::new()),
            dirty: AtomicBool::new(true),
            secret,
            stop: Arc::new(AtomicBool::new(false)),
            started: clock.now(),
            clock,
        });
        nimbus.save()?;
        Ok(nimbus)
    }

    /// How long this nimbus has been up, by its clock.
    pub(crate) fn uptime(&self) -> Duration {
        self.clock.since(self.started)
    }

    /// Seconds since the Unix epoch by this nimbus's clock.
    pub(crate) fn now_secs(&self) -> u64 {
        self.clock.epoch_secs()
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, ClusterState<Shared>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Save the tree (Storm relies on ZooKeeper's own persistence; ours is this file).
    /// With ZooKeeper there is nothing to save: the ensemble keeps the tree.
    fn save(&self) -> anyhow::Result<()> {
        self.dirty.store(false, Ordering::Relaxed);
        if self.zk.is_some() {
            return Ok(());
        }
        let _guard = self.state();
        self.tree.lock().save(&self.data.join("tree.json"))?;
        Ok(())
    }

    /// Accept connections on `listener` (one thread each) and run the monitor, until
    /// [`Nimbus::stop`] is set. Returns the accept and monitor threads.
    pub(crate) fn serve(
        self: &Arc<Nimbus>,
        listener: TcpListener,
    ) -> std::io::Result<Vec<std::thread::JoinHandle<()>>> {
        listener.set_nonblocking(true)?;
        let me = self.clone();
        let accept = std::thread::Builder::new()
            .name("nimbus-accept".into())
            .spawn(move || me.accept_loop(&listener))?;
        let me = self.clone();
        let monitor = std::thread::Builder::new()
            .name("nimbus-monitor".into())
            .spawn(move || {
                while !me.stop.load(Ordering::Relaxed) {
                    std::thread::sleep(MONITOR_TICK);
                    if let Err(e) = me.monitor() {
                        tracing::warn!("nimbus monitor: {e:#}");
                    }
                }
                if let Err(e) = me.save() {
                    tracing::warn!("nimbus: cannot save the tree on exit: {e:#}");
                }
            })?;
        Ok(vec![accept, monitor])
    }

    /// Take connections until [`Nimbus::stop`] is set: one thread each, at most
    /// [`MAX_CONNECTIONS`] at once. Failures to accept (no file descriptors left) back off
    /// exponentially instead of spinning, and every kind of refusal is logged at a bounded rate.
    fn accept_loop(self: &Arc<Nimbus>, listener: &TcpListener) {
        let open = Arc::new(AtomicUsize::new(0));
        let mut backoff = ACCEPT_BACKOFF_MIN;
        while !self.stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, peer)) => {
                    backoff = ACCEPT_BACKOFF_MIN;
                    self.start_connection(stream, peer, &open);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => {
                    if let Some(held) = ACCEPT_FAILED.allow() {
                        tracing::warn!(
                            "nimbus: accept failed: {e}; retrying in {backoff:?}{}",
                            held_back(held)
                        );
                    }
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                }
            }
        }
    }

    /// Serve one accepted connection on its own thread, unless too many are open.
    fn start_connection(
        self: &Arc<Nimbus>,
        stream: std::net::TcpStream,
        peer: std::net::SocketAddr,
        open: &Arc<AtomicUsize>,
    ) {
        if open.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::AcqRel);
            if let Some(held) = TOO_MANY.allow() {
                tracing::warn!(
                    "nimbus: {MAX_CONNECTIONS} connections are open; refused {peer}{}",
                    held_back(held)
                );
            }
            return;
        }
        let _ = stream.set_nonblocking(false);
        let me = self.clone();
        let count = open.clone();
        let spawned = std::thread::Builder::new()
            .name("nimbus-conn".into())
            .spawn(move || {
                rpc::serve_connection(stream, me.secret.as_ref(), |r| me.handle(r));
                count.fetch_sub(1, Ordering::AcqRel);
            });
        if let Err(e) = spawned {
            open.fetch_sub(1, Ordering::AcqRel);
            if let Some(held) = NO_THREAD.allow() {
                tracing::warn!(
                    "nimbus: cannot start a connection thread: {e}{}",
                    held_back(held)
                );
            }
        }
    }

    /// Answer one request from the RPC edge: the typed method it names, its answer as JSON.
    fn handle(&self, request: Request) -> Result<Value, String> {
        // With ZooKeeper, only the leader answers; a standby names it. What a nimbus taking
        // over asks of the others' checkpoint stores, and the leader's copies of its
        // checkpoints, are answered by any nimbus.
        let from_a_peer = matches!(
            request,
            Request::CheckpointHeld { .. }
                | Request::CheckpointExport { .. }
                | Request::CheckpointReplica { .. }
        );
        if let Some(zk) = self.zk.as_ref().filter(|_| !from_a_peer) {
            if !self.lead(zk) {
                return Err(zk.standby_answer());
            }
        }
        let r = self.answer(request).map_err(|e| format!("{e:#}"));
        // After any request, the next monitor round saves the tree (with its own changes too).
        self.changed();
        r
    }

    /// The typed method a request names, and its result as JSON.
    fn answer(&self, request: Request) -> anyhow::Result<Value> {
        Ok(match request {
            Request::Submit(sub) => json!(self.submit(sub)?),
            Request::List => serde_json::to_value(self.list()?)?,
            Request::Kill { name, wait_secs } => {
                check_wait(wait_secs)?;
                json!(self.kill(&name, wait_secs)?)
            }
            Request::SetActive { name, active } => json!(self.set_active(&name, active)?),
            Request::Rebalance {
                name,
                wait_secs,
                workers,
                executors,
            } => {
                check_wait(wait_secs)?;
                let request = crate::model::rebalance::Rebalance { workers, executors };
                json!(self.rebalance(&name, wait_secs, &request)?)
            }
            Request::Dump { json } => json!(self.dump(json)?),
            Request::OpenSession { timeout_ms } => {
                json!(self.open_session(Duration::from_millis(timeout_ms)))
            }
            Request::CloseSession { session } => {
                self.close_session(session);
                Value::Null
            }
            Request::SupervisorBeat { session, id, info } => {
                serde_json::to_value(self.supervisor_beat(session, &id, &info)?)?
            }
            Request::Topology { id } => serde_json::to_value(self.topology_work(&id)?)?,
            Request::TaskBeats { id, slot, beats } => {
                serde_json::to_value(self.task_beats(&id, &slot, &beats)?)?
            }
            Request::Heartbeats { id } => {
                let beats: Vec<(u32, TaskHeartbeat)> =
                    self.task_heartbeats(&id)?.into_iter().collect();
                serde_json::to_value(beats)?
            }
            Request::Finished {
                id,
                slot,
                generation,
            } => {
                if self.current_generation(&id, generation)? {
                    self.worker_finished(id, slot);
                }
                Value::Null
            }
            Request::SlotFailing { id, slot, error } => {
                self.slot_failing(&id, &slot, &error)?;
                Value::Null
            }
            Request::ReportError {
                id,
                task,
                error,
                worker,
            } => {
                self.report_error(&id, task, error, worker)?;
                Value::Null
            }
            Request::ConfValue { key } => self.conf_value(&key),
            Request::SetLogConfig { name, changes } => {
                serde_json::to_value(self.set_log_config(&name, &changes)?)?
            }
            Request::LogConfig { name } => serde_json::to_value(self.log_config(&name)?)?,
            Request::WorkerLog {
                file,
                start,
                length,
            } => serde_json::to_value(self.worker_log(&file, start, length)?)?,
            // The checkpoint requests: answered apart.
            checkpoint => self.answer_checkpoint(checkpoint)?,
        })
    }

    /// [`Self::answer`] for the checkpoint requests (every other one is matched there).
    fn answer_checkpoint(&self, request: Request) -> anyhow::Result<Value> {
        Ok(match request {
            Request::CheckpointJoin {
                id,
                slot,
                incarnation,
            } => serde_json::to_value(self.checkpoint_join(&id, &slot, incarnation)?)?,
            Request::CheckpointState {
                id,
                generation,
                task,
                from,
            } => serde_json::to_value(self.checkpoint_state(&id, generation, &task, from)?)?,
            Request::Checkpoint {
                id,
                generation,
                news,
            } => serde_json::to_value(self.checkpoint_news(&id, generation, news)?)?,
            Request::CheckpointStatus { id } => serde_json::to_value(self.checkpoint_status(&id)?)?,
            Request::CheckpointHeld { id, wanted } => json!(self.checkpoint_held(&id, wanted)?),
            Request::CheckpointExport {
                id,
                txid,
                task,
                from,
            } => serde_json::to_value(self.checkpoint_export(&id, txid, &task, from)?)?,
            Request::CheckpointReplica { id, step } => {
                self.checkpoint_replica(&id, step)?;
                Value::Null
            }
            _ => anyhow::bail!("not a checkpoint request"),
        })
    }

    /// Mark the tree as changed, so the monitor saves it.
    fn changed(&self) {
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// The coordination tree as text lines, or as one pretty JSON document.
    /// One key of this nimbus's configuration; a secret is never sent, only that it is set.
    fn conf_value(&self, key: &str) -> Value {
        let secret = key == "ui.token" || key.ends_with(".secret") || key.ends_with(".password");
        match self.config.get(key) {
            Some(v) if secret && !v.is_null() => Value::from("<hidden>"),
            Some(v) => v.clone(),
            None => Value::Null,
        }
    }

    fn dump(&self, json: bool) -> anyhow::Result<String> {
        let state = self.state();
        let root = state.layout().root().to_string();
        Ok(if json {
            let doc = crate::cluster::coordination::dump::to_json(&*self.store, &root)?;
            serde_json::to_string_pretty(&doc)? + "\n"
        } else {
            crate::cluster::coordination::dump::to_text(&*self.store, &root)?
        })
    }

    /// A supervisor session that expires `timeout` (at least a second) after its last heartbeat.
    pub(crate) fn open_session(&self, timeout: Duration) -> SessionId {
        self.changed();
        self.store.open_session(timeout.max(Duration::from_secs(1)))
    }

    /// End a session (its ephemeral nodes go); an unknown one is already gone.
    fn close_session(&self, session: SessionId) {
        self.changed();
        let _ = self.store.close_session(session);
    }

    /// A supervisor's heartbeat, refused when another live supervisor claims one of its slots;
    /// answered with the slots assigned to it.
    pub(crate) fn supervisor_beat(
        &self,
        session: SessionId,
        id: &str,
        info: &SupervisorInfo,
    ) -> anyhow::Result<Vec<SlotWork>> {
        self.changed();
        self.store.touch_session(session)?;
        let state = self.state();
        if let Some(clash) = slot_clash(&state.supervisors()?, id, info) {
            anyhow::bail!("{clash}");
        }
        state.supervisor_heartbeat(session, id, info)?;
        Ok(self.work_of(&state, id)?)
    }

    /// What a worker of topology `id` needs to start.
    fn topology_work(&self, id: &str) -> anyhow::Result<TopologyWork> {
        let known = self.known(id)?;
        let state = self.state();
        let status = state
            .storm_base(id)?
            .map_or(TopologyStatus::Killed, |b| b.status);
        Ok(TopologyWork {
            submission: known.submission.clone(),
            assignment: state.assignment(id)?,
            status,
        })
    }

    /// A worker's task heartbeats (recorded while its slot is assigned), answered with whether
    /// it is still assigned and whether the topology is active.
    fn task_beats(
        &self,
        id: &str,
        slot: &NodePort,
        beats: &[(u32, TaskHeartbeat)],
    ) -> anyhow::Result<BeatReply> {
        self.changed();
        Ok(record_beats(&self.state(), id, slot, beats)?)
    }

    /// The worker on `slot` finished its executors (end of input).
    fn worker_finished(&self, id: String, slot: NodePort) {
        self.changed();
        tracing::info!("nimbus: {id}: the worker on {slot} finished");
        // The state's lock first, as everywhere both are taken.
        let state = self.state();
        // A worker that stops after its topology was killed and removed: recording it would
        // write `/taskbeats/{id}` back for a topology that is gone (under the state's lock,
        // which the removal holds too, so it is either still here or gone for good).
        if !matches!(state.storm_base(&id), Ok(Some(_))) {
            return;
        }
        let mut finished = self.finished_lock();
        let slots = finished.entry(id.clone()).or_default();
        if !slots.insert(slot) {
            return;
        }
        // Kept in the tree too: a nimbus that takes over knows which workers are done.
        if let Err(e) = state.set_finished_slots(&id, slots) {
            tracing::warn!("nimbus: {id}: cannot record its finished workers: {e}");
        }
    }

    /// Record a component error under `/taskerrors` (Storm's `report-error`).
    fn report_error(
        &self,
        id: &str,
        task: u32,
        error: String,
        worker: Option<String>,
    ) -> anyhow::Result<()> {
        self.changed();
        let err = TaskError {
            error,
            time_secs: self.now_secs(),
            worker,
        };
        self.state().report_error(id, task, &err)?;
        Ok(())
    }

    /// A supervisor reports that the worker on `slot` keeps dying: the slot's tasks get the
    /// error under `/taskerrors`, and the slot is avoided (its work moved at the next monitor
    /// round) for [`FAILING_FOR`].
    fn slot_failing(&self, id: &str, slot: &NodePort, error: &str) -> anyhow::Result<()> {
        self.changed();
        tracing::warn!("nimbus: {id}: the worker on {slot} keeps failing: {error}");
        let state = self.state();
        let assignment = state.assignment(id)?;
        let tasks = assignment
            .as_ref()
            .map(|a| a.tasks_of(slot))
            .unwrap_or_default();
        // The worker's `host:port`, as the UI shows workers.
        let worker = assignment
            .as_ref()
            .and_then(|a| a.node_host.get(&slot.node))
            .map(|host| format!("{host}:{}", slot.port));
        let err = TaskError {
            error: format!("worker slot {slot} keeps failing: {error}"),
            time_secs: self.now_secs(),
            worker,
        };
        for task in tasks {
            state.report_error(id, task, &err)?;
        }
        self.failing_lock()
            .insert((id.to_string(), slot.clone()), self.now_secs());
        Ok(())
    }

    fn failing_lock(&self) -> MutexGuard<'_, BTreeMap<(String, NodePort), u64>> {
        self.failing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Slots reported failing by any topology not killed, less the ones whose report is older
    /// than [`FAILING_FOR`].
    fn failing_slots(&self) -> BTreeSet<NodePort> {
        self.failing_reports()
            .into_iter()
            .map(|(_, slot)| slot)
            .collect()
    }

    /// The slots reported failing for topology `id` alone (its status, `failing`, comes
    /// from these: never from another topology's reports).
    fn failing_slots_of(&self, id: &str) -> BTreeSet<NodePort> {
        self.failing_reports()
            .into_iter()
            .filter(|(of, _)| of == id)
            .map(|(_, slot)| slot)
            .collect()
    }

    fn failing_reports(&self) -> Vec<(String, NodePort)> {
        let now = self.now_secs();
        let mut failing = self.failing_lock();
        failing.retain(|_, since| now.saturating_sub(*since) < FAILING_FOR.as_secs());
        failing.keys().cloned().collect()
    }

    fn finished_lock(&self) -> MutexGuard<'_, BTreeMap<String, BTreeSet<NodePort>>> {
        self.finished.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A topology's submission, validated (read back from `stormdist` after a restart).
    pub(crate) fn known(&self, id: &str) -> anyhow::Result<Arc<Known>> {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = known.get(id) {
            return Ok(k.clone());
        }
        let file = self.stormdist(id).join("submission.json");
        if let Some(zk) = &self.zk {
            // Submitted through another nimbus: its copy in ZooKeeper.
            zk.fetch_submission(&self.config.zookeeper_root(), id, &file)?;
        }
        let text = std::fs::read_to_string(&file)
            .map_err(|e| anyhow::anyhow!("no topology {id} ({}: {e})", file.display()))?;
        let submission: Submission = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{} is damaged: {e}", file.display()))?;
        let topology = load_submission(&submission)
            .map_err(|e| anyhow::anyhow!("stored topology {id} no longer validates:\n{e}"))?;
        let plan = Plan::new(&topology);
        let k = Arc::new(Known {
            submission,
            topology,
            plan,
        });
        known.insert(id.to_string(), k.clone());
        Ok(k)
    }

    fn stormdist(&self, id: &str) -> PathBuf {
        self.stormdist.join(id)
    }

    /// Validate a submission, store it, schedule it and activate it; answered with its id.
    pub(crate) fn submit(&self, sub: Submission) -> anyhow::Result<String> {
        let topology = load_submission(&sub).map_err(|e| anyhow::anyhow!("{e}"))?;
        // Refuse damaged or oversized resources now rather than in every worker.
        crate::cluster::protocol::multilang_files::unpack(&sub.resources)
            .map_err(|e| anyhow::anyhow!("the submission's multilang resources: {e:#}"))?;
        if self.zk.is_some() {
            self::ha::fits_in_a_node(&topology.name, &sub)?;
        }
        let plan = Plan::new(&topology);
        let mut state = self.state();
        for other in state.topology_ids()? {
            if state
                .storm_base(&other)?
                .is_some_and(|b| b.name == topology.name && b.status != TopologyStatus::Killed)
            {
                anyhow::bail!(
                    "a topology named `{}` is already running ({other}); kill it first",
                    topology.name
                );
            }
        }
        let id = state.submit(&topology, &plan, self.now_secs())?;
        let dir = self.stormdist(&id);
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join("submission.json"), serde_json::to_vec(&sub)?))
            .map_err(|e| anyhow::anyhow!("cannot store {id} under {}: {e}", dir.display()))?;
        if let Some(zk) = &self.zk {
            zk.keep_submission(&self.config.zookeeper_root(), &id, &sub)?;
        }
        let known = Arc::new(Known {
            submission: sub,
            topology,
            plan,
        });
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), known.clone());
        match self.place(&state, &id, &known, &[]) {
            Ok(_) => {}
            Err(ClusterError::Schedule(ScheduleError::NoSlots(_))) => {
                tracing::warn!("nimbus: {id} waits for free worker slots");
            }
            Err(e) => return Err(e.into()),
        }
        state.activate(&id)?;
        drop(state);
        self.save()?;
        tracing::info!("nimbus: submitted {id}");
        Ok(id)
    }

    /// Schedule (or re-schedule around `dead`) one topology.
    fn place(
        &self,
        state: &ClusterState<Shared>,
        id: &str,
        known: &Known,
        dead: &[Dead],
    ) -> Result<bool, ClusterError> {
        let workers = known.topology.config.workers();
        let mut dead = dead.to_vec();
        dead.extend(self.failing_slots().into_iter().map(Dead::Slot));
        match &known.submission.home {
            // A run with a home worker keeps its home executors where they are; the work of
            // its dead slots moves to free live ones.
            Some(home) if state.assignment(id)?.is_some() => {
                home_reassign(state, id, home, &dead, self.now_secs())
            }
            Some(home) => home_assign(
                state,
                id,
                &known.topology,
                &known.plan,
                home,
                self.now_secs(),
            ),
            None => state.reassign(id, &known.plan, workers, &dead, self.now_secs()),
        }
    }

    fn list(&self) -> anyhow::Result<Vec<TopologySummary>> {
        let state = self.state();
        let finished = self.finished_lock();
        let now = self.now_secs();
        let mut out = Vec::new();
        for id in state.topology_ids()? {
            let Some(base) = state.storm_base(&id)? else {
                continue;
            };
            let slots: BTreeSet<NodePort> = state
                .assignment(&id)?
                .map(|a| a.task_to_node_port.into_values().collect())
                .unwrap_or_default();
            let done = finished.get(&id).is_some_and(|f| f.is_superset(&slots));
            let status = if done && !slots.is_empty() {
                "finished".to_string()
            } else if slots.iter().any(|s| self.failing_slots_of(&id).contains(s)) {
                // Its work stays on a slot reported failing: nowhere else to move it yet.
                "failing".to_string()
            } else {
                serde_json::to_value(base.status)?
                    .as_str()
                    .unwrap_or("?")
                    .to_string()
            };
            out.push(TopologySummary {
                name: base.name,
                id,
                status,
                workers: slots.len(),
                uptime_secs: now.saturating_sub(base.launch_time_secs),
            });
        }
        Ok(out)
    }

    /// Storm's activate / deactivate of the live topology named `name` (or with that id):
    /// its spouts are paused or resumed at the workers' next heartbeat. Returns its id.
    pub(crate) fn set_active(&self, name: &str, active: bool) -> anyhow::Result<String> {
        let state = self.state();
        let mut found = None;
        for id in state.topology_ids()? {
            if state.storm_base(&id)?.is_some_and(|b| {
                (b.name == name || id == name) && b.status != TopologyStatus::Killed
            }) {
                found = Some(id);
            }
        }
        let Some(id) = found else {
            return Err(no_running_topology(&state, name));
        };
        if state
            .storm_base(&id)?
            .is_some_and(|b| b.status == TopologyStatus::Rebalancing)
        {
            return Err(crate::model::rebalance::Invalid(format!(
                "{id} is rebalancing: it returns to its status before when the rebalance ends"
            ))
            .into());
        }
        let status = if active {
            TopologyStatus::Active
        } else {
            TopologyStatus::Inactive
        };
        state.set_status(&id, status)?;
        drop(state);
        self.save()?;
        Ok(id)
    }

    /// Storm's kill: deactivate (status `killed`, spouts stop), wait the message timeout so
    /// tuples in flight finish (no wait when every slot of the topology was reported failing:
    /// nothing runs to finish), then remove the assignment and every node of the topology.
    /// Its failing-slot reports go at once.
    pub(crate) fn kill(&self, name: &str, wait_secs: Option<u64>) -> anyhow::Result<String> {
        let state = self.state();
        let mut found = None;
        for id in state.topology_ids()? {
            if state
                .storm_base(&id)?
                .is_some_and(|b| b.name == name && b.status != TopologyStatus::Killed)
            {
                found = Some(id);
            }
        }
        let Some(id) = found else {
            return Err(no_running_topology(&state, name));
        };
        state.set_status(&id, TopologyStatus::Killed)?;
        // Workers that keep dying on every slot have nothing in flight to wait for: their
        // slots are free for the next topology at once.
        let slots: BTreeSet<NodePort> = state
            .assignment(&id)?
            .map(|a| a.task_to_node_port.into_values().collect())
            .unwrap_or_default();
        let crash_looping = !slots.is_empty() && self.failing_slots_of(&id).is_superset(&slots);
        self.failing_lock().retain(|(of, _), _| *of != id);
        let wait = match wait_secs {
            Some(s) => Duration::from_secs(s),
            None if crash_looping => Duration::ZERO,
            None => self
                .known(&id)
                .map(|k| k.topology.config.message_timeout())
                .unwrap_or_else(|_| self.config.message_timeout()),
        };
        if crash_looping {
            tracing::info!("nimbus: {id}'s workers keep dying on every slot; removing it now");
        }
        drop(state);
        self.save()?;
        let tree = self.tree.clone();
        let store = self.store.clone();
        let embedded = self.zk.is_none();
        let zk = self.zk.clone();
        let root = self.config.zookeeper_root();
        let dir = self.stormdist(&id);
        let data = self.data.clone();
        let removed = id.clone();
        let keepers = self.checkpoints.clone();
        let secret = self.secret.clone();
        std::thread::Builder::new()
            .name("nimbus-kill".into())
            .spawn(move || {
                std::thread::sleep(wait);
                if zk.as_ref().is_some_and(|zk| !zk.leads_now()) {
                    // The nimbus leading now removes it (it finishes kills when it takes over).
                    tracing::warn!("nimbus: no longer leading; {removed} is left to the leader");
                    return;
                }
                let result = ClusterState::new(store.clone(), &root)
                    .and_then(|s| s.remove_topology(&removed));
                if let Err(e) = result {
                    tracing::warn!("nimbus: removing {removed}: {e}");
                }
                let _ = store.delete_all(&ha::submission_path(&root, &removed));
                let _ = std::fs::remove_dir_all(&dir);
                Nimbus::forget_checkpoints(&keepers, &removed);
                let _ = std::fs::remove_dir_all(checkpoints::keeper_dir(&data, &removed));
                if let Some(zk) = &zk {
                    replicate::forget_replicas(zk, secret, &removed);
                }
                if !embedded {
                    tracing::info!("nimbus: removed {removed}");
                    return;
                }
                if let Err(e) = tree.lock().save(&data.join("tree.json")) {
                    tracing::warn!("nimbus: cannot save the tree: {e}");
                }
                tracing::info!("nimbus: removed {removed}");
            })?;
        Ok(id)
    }

    /// The slots assigned to one supervisor.
    fn work_of(
        &self,
        state: &ClusterState<Shared>,
        supervisor: &str,
    ) -> Result<Vec<SlotWork>, ClusterError> {
        let mut out = Vec::new();
        for id in state.topology_ids()? {
            if let Some(a) = state.assignment(&id)? {
                out.extend(rpc::slot_work(&id, &a, supervisor));
            }
        }
        Ok(out)
    }

    /// One monitor round (Storm's `monitor-topology`): expire supervisor sessions, schedule
    /// topologies still waiting for slots, and move the work of dead slots.
    fn monitor(&self) -> anyhow::Result<()> {
        if let Some(zk) = &self.zk {
            if !self.lead(zk) {
                return Ok(());
            }
        }
        let expired = self.store.expire_sessions();
        if !expired.is_empty() {
            tracing::info!("nimbus: supervisor session(s) {expired:?} expired");
        }
        if self.zk.as_ref().is_some_and(|zk| zk.settling()) {
            return Ok(());
        }
        self.finish_rebalances()?;
        let timeout = self.config.nimbus_task_timeout().as_secs().max(1);
        let state = self.state();
        let supervisors = state.supervisors()?;
        for id in state.topology_ids()? {
            let Some(base) = state.storm_base(&id)? else {
                continue;
            };
            if base.status != TopologyStatus::Active {
                continue;
            }
            let known = match self.known(&id) {
                Ok(k) => k,
                Err(e) => {
                    // Every monitor round meets it again: say so at a bounded rate.
                    if let Some(held) = UNLOADABLE.allow() {
                        tracing::warn!("nimbus: {e:#}{}", held_back(held));
                    }
                    continue;
                }
            };
            let assignment = state.assignment(&id)?;
            let finished = self.finished_lock().get(&id).cloned().unwrap_or_default();
            let mut dead: Vec<Dead> = state
                .dead_slots(&id, self.now_secs(), timeout)?
                .into_iter()
                .filter(|d| !matches!(d, Dead::Slot(s) if finished.contains(s)))
                .collect();
            if let Some(a) = &assignment {
                let failing = self.failing_slots();
                dead.extend(
                    a.task_to_node_port
                        .values()
                        .filter(|s| failing.contains(*s))
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .map(|s| Dead::Slot(s.clone())),
                );
                for node in a.node_host.keys() {
                    if !supervisors.contains_key(node) {
                        dead.push(Dead::Supervisor(node.clone()));
                    }
                }
            }
            // A run with a home worker moves work only when checkpointed: its workers, home
            // included, then roll back and start again on the new assignment; other home
            // workers would keep sending to the old addresses.
            let pinned = known.submission.home.is_some() && !known.topology.is_stateful();
            if assignment.is_none() || (!dead.is_empty() && !pinned) {
                match self.place(&state, &id, &known, &dead) {
                    Ok(true) => tracing::info!("nimbus: {id} re-assigned (dead: {dead:?})"),
                    Ok(false) => {}
                    Err(ClusterError::Schedule(_)) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        drop(state);
        if self.dirty.load(Ordering::Relaxed) {
            self.save()?;
        }
        Ok(())
    }

    /// Whether this nimbus leads (asked of ZooKeeper); on becoming leader it reads the
    /// cluster state afresh, since another nimbus changed it meanwhile.
    fn lead(&self, zk: &Coordination) -> bool {
        let leadership = zk.check();
        if leadership == Leadership::TookOver {
            match ClusterState::new(self.store.clone(), &self.config.zookeeper_root()) {
                Ok(mut fresh) => {
                    let mut state = self.state();
                    fresh.local_dir = state.local_dir.clone();
                    *state = fresh;
                    self.finish_kills(&state);
                    let finished = finished_in(&state);
                    drop(state);
                    *self.finished_lock() = finished;
                    // Another nimbus may have committed checkpoints meanwhile: each keeper
                    // opens again against the tree's record (fetching what it lacks). Taken
                    // after the state's lock, never inside it (a keeper's calls take both in
                    // that order).
                    self.checkpoints
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .clear();
                }
                Err(e) => {
                    tracing::warn!("nimbus: cannot read the cluster state: {e}");
                    zk.step_down();
                    return false;
                }
            }
        }
        if leadership == Leadership::Standby {
            // A standby coordinates no checkpoints: its stores are closed (a state dir it
            // shares with the leader is free for it), and opened again if it leads again.
            self.checkpoints
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
        }
        leadership != Leadership::Standby
    }

    /// Remove the topologies a previous leader killed but did not live to remove.
    fn finish_kills(&self, state: &ClusterState<Shared>) {
        let root = self.config.zookeeper_root();
        let ids = state.topology_ids().unwrap_or_default();
        for id in ids {
            let killed =
                matches!(state.storm_base(&id), Ok(Some(b)) if b.status == TopologyStatus::Killed);
            if !killed {
                continue;
            }
            if let Err(e) = state.remove_topology(&id) {
                tracing::warn!("nimbus: removing {id}: {e}");
                continue;
            }
            let _ = self.store.delete_all(&ha::submission_path(&root, &id));
            tracing::info!("nimbus: removed {id}, killed under the previous leader");
        }
    }

    /// Whether this nimbus leads now (asked of ZooKeeper; a lone nimbus leads).
    pub(crate) fn leads(&self) -> bool {
        self.zk.as_ref().is_none_or(|zk| zk.leads_now())
    }

    /// Enter the leader election as `address` (with ZooKeeper; a lone nimbus leads anyway).
    pub(crate) fn elect_as(&self, address: &str) -> anyhow::Result<()> {
        match &self.zk {
            Some(zk) => zk.elect_as(&self.config.zookeeper_root(), address),
            None => Ok(()),
        }
    }

    /// The tree's store, for in-process users (`storm run --processes`).
    pub(crate) fn store(&self) -> &SharedTree {
        &self.tree
    }

    /// Whether every worker of a topology has finished, and how many there are.
    pub(crate) fn finished(&self, id: &str) -> anyhow::Result<(bool, usize)> {
        let slots: BTreeSet<NodePort> = self
            .state()
            .assignment(id)?
            .map(|a| a.task_to_node_port.into_values().collect())
            .unwrap_or_default();
        let done = self
            .finished_lock()
            .get(id)
            .is_some_and(|f| f.is_superset(&slots));
        Ok((done && !slots.is_empty(), slots.len()))
    }

    /// The slots of a topology whose tasks have all missed their heartbeats for
    /// `nimbus.task.timeout.secs`, finished slots aside (`storm run --processes` kills and
    /// restarts their workers, since its slots are pinned).
    pub(crate) fn dead_slots(&self, id: &str) -> anyhow::Result<Vec<NodePort>> {
        let timeout = self.config.nimbus_task_timeout().as_secs().max(1);
        let finished = self.finished_lock().get(id).cloned().unwrap_or_default();
        let dead = self.state().dead_slots(id, self.now_secs(), timeout)?;
        Ok(dead
            .into_iter()
            .filter_map(|d| match d {
                Dead::Slot(s) if !finished.contains(&s) => Some(s),
                _ => None,
            })
            .collect())
    }

    /// The latest heartbeat of every task of a topology.
    pub(crate) fn task_heartbeats(
        &self,
        id: &str,
    ) -> Result<BTreeMap<u32, TaskHeartbeat>, ClusterError> {
        self.state().task_heartbeats(id)
    }
}

/// The finished workers of every topology, as recorded in the tree.
fn finished_in(state: &ClusterState<Shared>) -> BTreeMap<String, BTreeSet<NodePort>> {
    let ids = state.topology_ids().unwrap_or_default();
    ids.into_iter()
        .filter_map(|id| {
            let slots = state.finished_slots(&id).ok()?;
            (!slots.is_empty()).then_some((id, slots))
        })
        .collect()
}

mod checkpoints;
pub(crate) mod cluster_state;
pub(crate) mod ha;
mod handover;
mod leader;
mod log_levels;
mod pages;
mod rebalance;
mod replica;
mod replicate;
pub(crate) mod simulation;
pub(crate) mod submission;
mod worker_log;

/// A kill's or rebalance's wait within bounds, as a request error (the client's to fix).
fn check_wait(wait_secs: Option<u64>) -> anyhow::Result<()> {
    match wait_secs.map(crate::model::rebalance::check_wait) {
        Some(Err(e)) => Err(crate::model::rebalance::Invalid(e).into()),
        _ => Ok(()),
    }
}

/// No live topology is named `name`: say which are, and the nearest name.
fn no_running_topology(state: &ClusterState<Shared>, name: &str) -> anyhow::Error {
    let mut names: Vec<String> = Vec::new();
    for id in state.topology_ids().unwrap_or_default() {
        if let Ok(Some(b)) = state.storm_base(&id) {
            if b.status != TopologyStatus::Killed {
                names.push(b.name);
            }
        }
    }
    let hint = crate::syntax::suggest::suggest(name, names.iter().map(String::as_str))
        .map(|s| format!("; did you mean `{s}`?"))
        .unwrap_or_default();
    match names.is_empty() {
        true => anyhow::anyhow!("no running topology named `{name}` (none is running)"),
        false => anyhow::anyhow!(
            "no running topology named `{name}` (running: {}){hint}",
            names.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::protocol::rpc::Client;

    fn with_secret() -> Config {
        let mut config = crate::config::layers::defaults();
        config.set(
            "storm.cluster.secret",
            "s3cret".into(),
            crate::config::Origin::Default,
        );
        config
    }

    /// The rows of `storm list`, uptime included (the nimbus's clock stands still).
    fn rows(list: Vec<TopologySummary>) -> Vec<(String, String, String, usize, u64)> {
        list.into_iter()
            .map(|t| (t.name, t.id, t.status, t.workers, t.uptime_secs))
            .collect()
    }

    fn stdin_to_stdout() -> Submission {
        Submission {
            path: "<-e>".into(),
            text: "stdin | stdout".into(),
            overrides: Vec::new(),
            home: None,
            resources: String::new(),
            parallelism: Default::default(),
        }
    }

    /// Uptimes go by the nimbus's clock: none while it stands still, 90 s once it moved.
    #[test]
    fn uptimes_go_by_the_nimbus_clock() {
        let dir = tempfile::tempdir().unwrap();
        let clock = crate::clock::Clock::manual();
        let nimbus = Nimbus::open_with_clock(dir.path(), with_secret(), clock.clone()).unwrap();
        nimbus.submit(stdin_to_stdout()).unwrap();
        assert_eq!(nimbus.list().unwrap()[0].uptime_secs, 0);
        clock.advance(Duration::from_secs(90));
        assert_eq!(nimbus.list().unwrap()[0].uptime_secs, 90);
    }

    #[test]
    fn requests_over_rpc_answer_what_the_typed_methods_return() {
        let dir = tempfile::tempdir().unwrap();
        let clock = crate::clock::Clock::manual();
        let nimbus = Nimbus::open_with_clock(dir.path(), with_secret(), clock).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let threads = nimbus.serve(listener).unwrap();
        let id = nimbus.submit(stdin_to_stdout()).unwrap();

        let client = Client::new(&addr, Secret::from_config(&with_secret()));
        let listed: Vec<TopologySummary> = client.call(&Request::List).unwrap();
        assert_eq!(rows(listed.clone()), rows(nimbus.list().unwrap()));
        assert_eq!(listed[0].id, id);
        let dump: String = client.call(&Request::Dump { json: false }).unwrap();
        assert_eq!(dump, nimbus.dump(false).unwrap());
        // A client that does not prove the secret gets nothing.
        let stranger = Client::new(&addr, None);
        assert!(stranger
            .call::<Vec<TopologySummary>>(&Request::List)
            .is_err());
        let kill = Request::Kill {
            name: listed[0].name.clone(),
            wait_secs: Some(3600),
        };
        assert_eq!(client.call::<String>(&kill).unwrap(), id);
        assert_eq!(nimbus.list().unwrap()[0].status, "killed");

        nimbus.stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().unwrap();
        }
    }
}
