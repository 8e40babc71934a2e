//! Nimbus's client/server protocol (the part of Storm's Thrift `Nimbus` service and ZooKeeper
//! traffic we need): one request and one response per TCP connection, each a length-prefixed
//! JSON document (a 4-byte big-endian length, then the JSON). Every daemon and command talks to
//! nimbus through a `Client`; nimbus answers with `serve_connection`. Nimbus speaks first on
//! every connection, so a client learns within a moment whether the nimbus it reached is alive:
//! with a cluster secret, both ends prove it with the transport's HMAC challenge-response
//! (`net::auth`, the challenge first); without one, nimbus sends the four bytes `STRM`.

use crate::cluster::coordination::layout::{
    AssignmentInfo, Listening, NodePort, SupervisorInfo, TaskHeartbeat, TopologyStatus,
};
use crate::cluster::protocol::retry::Retry;
use crate::logging::{held_back, Throttle};
use crate::net::auth::{self, Secret};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The handshake context of nimbus connections (workers' links use another).
const AUTH_CONTEXT: &str = "nimbus";

/// Requests and responses larger than this are refused (a topology file is a few kilobytes).
const MAX_MESSAGE_BYTES: u32 = 16 * 1024 * 1024;

/// How long a call waits for nimbus to connect and answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// With several nimbus addresses: how long a call waits for a nimbus's challenge (with a cluster
/// secret) or greeting (without), the first thing a live nimbus sends on a connection whatever
/// the request. A frozen one (stopped, hung) is passed over within this rather than the call's
/// timeout.
const CHALLENGE_WAIT: Duration = Duration::from_secs(2);

/// What a nimbus without a cluster secret sends first on each connection.
const GREETING: &[u8; 4] = b"STRM";

/// A submitted topology as the client sent it (kept under `DIR/stormdist/ID`, as Storm keeps
/// the jar and serialized topology under `stormdist`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    /// The file's path (absolute, so shell components and `file` spouts resolve), or `<-e>`.
    pub(crate) path: String,
    /// The file's text.
    pub(crate) text: String,
    /// `-c KEY=VALUE` overrides given at submission.
    #[serde(default)]
    pub(crate) overrides: Vec<String>,
    /// `storm run --processes`: the supervisor id whose single slot holds the `stdin` and
    /// `stdout` executors (they run in the `storm run` process).
    #[serde(default)]
    pub(crate) home: Option<String>,
    /// Multilang resources shipped with the topology (`resources::pack`); empty when none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) resources: String,
    /// Executor counts set by rebalances, by component id (over the file's `parallelism`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) parallelism: BTreeMap<String, u32>,
}

/// What a worker needs to start: the submission, its assignment and the topology's status.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TopologyWork {
    pub(crate) submission: Submission,
    pub(crate) assignment: Option<AssignmentInfo>,
    pub(crate) status: TopologyStatus,
}

/// One slot of a supervisor and the topology assigned to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SlotWork {
    pub(crate) topology: String,
    pub(crate) port: u16,
    /// Changes whenever the topology's assignment changes: its workers then restart, since a
    /// worker's placement and peer addresses are fixed when it starts (Storm's supervisor
    /// restarts the workers whose assignment changed).
    pub(crate) version: u64,
}

/// The slots topology `id`'s assignment gives `supervisor`, one `SlotWork` per port.
pub(crate) fn slot_work(id: &str, a: &AssignmentInfo, supervisor: &str) -> Vec<SlotWork> {
    let ports: std::collections::BTreeSet<u16> = a
        .task_to_node_port
        .values()
        .filter(|np| np.node == supervisor)
        .map(|np| np.port)
        .collect();
    let version = assignment_version(a);
    ports
        .into_iter()
        .map(|port| SlotWork {
            topology: id.to_string(),
            port,
            version,
        })
        .collect()
}

/// A stable digest of an assignment (FNV-1a over its placement), for [`SlotWork::version`].
pub(crate) fn assignment_version(a: &AssignmentInfo) -> u64 {
    let text = serde_json::to_string(&(&a.node_host, &a.task_to_node_port)).unwrap_or_default();
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One line of `storm list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TopologySummary {
    pub(crate) name: String,
    pub(crate) id: String,
    pub(crate) status: String,
    pub(crate) workers: usize,
    pub(crate) uptime_secs: u64,
}

/// What a worker learns from each heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BeatReply {
    /// The worker's slot is still in the topology's assignment.
    pub(crate) assigned: bool,
    /// The topology is active (a killed one stops its spouts and drains).
    pub(crate) active: bool,
    /// The topology is deactivated: its spouts pause until it is activated again.
    #[serde(default)]
    pub(crate) paused: bool,
    /// The topology's rollback generation (checkpointed topologies): a worker of an older one
    /// rolls back.
    #[serde(default)]
    pub(crate) generation: u64,
    /// The last checkpoint committed in that generation.
    #[serde(default)]
    pub(crate) committed: u64,
    /// The topology's log levels in effect (`/logconfigs/ID`): the worker installs them in
    /// its log filter when they change.
    #[serde(
        default,
        skip_serializing_if = "crate::log_config::LogConfig::is_empty"
    )]
    pub(crate) log_config: crate::log_config::LogConfig,
    /// Where the workers of the assignment listen, as far as their heartbeats have said.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) listening: Vec<Listening>,
}

/// What nimbus answers a worker joining a checkpointed topology's current generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JoinReply {
    pub(crate) generation: u64,
    /// Every worker of the assignment joined this generation: start.
    pub(crate) ready: bool,
    /// The last committed checkpoint (0: none), what the workers restore.
    pub(crate) txid: u64,
    /// The [`assignment_version`] the generation runs with: a worker that placed itself by
    /// another fetches the assignment again.
    pub(crate) assignment: u64,
    /// The topology was killed (or its run stopped): a joining worker runs nothing.
    #[serde(default)]
    pub(crate) killed: bool,
}

/// One page of a task's committed state, packed (`state::packed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StatePage {
    pub(crate) state: String,
    /// The row the next page starts at, if there is one.
    pub(crate) next: Option<usize>,
}

/// What a worker tells nimbus about a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CheckpointNews {
    /// A part of what task `task` prepared under `txid` (packed); the task has prepared it
    /// once its `last` part arrived.
    Prepared {
        txid: u64,
        task: u32,
        key: crate::state::TaskKey,
        part: String,
        last: bool,
    },
    /// Task `task` ended: its last checkpoint holds its final state.
    Finished { task: u32 },
}

/// One step of the leader copying a topology's checkpoints to another nimbus (its replica):
/// a whole copy when the replica is new or fell behind (`reset`, `rows`..., `install`),
/// then at each commit what the checkpoint prepared (`prepared`...) and `ready`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReplicaStep {
    /// Start a whole copy, beside the replica's store.
    Reset,
    /// A page of `task`'s committed state (packed) for the whole copy.
    Rows {
        task: crate::state::TaskKey,
        state: String,
    },
    /// The whole copy holds checkpoint `txid`: it replaces the replica's store.
    Install { txid: u64 },
    /// A page of what checkpoint `txid` prepared for `task` (packed), onto a replica that
    /// holds checkpoint `base`.
    Prepared {
        base: u64,
        txid: u64,
        task: crate::state::TaskKey,
        state: String,
    },
    /// Every part of the checkpoints after `base` up to `txid` was sent: the replica holds
    /// `txid` once the leader records it (it folds it in then, or when it leads).
    Ready { base: u64, txid: u64 },
    /// The topology was removed: the replica goes too.
    Forget,
}

/// What nimbus answers a worker about a checkpointed topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CheckpointReply {
    pub(crate) generation: u64,
    /// The last committed checkpoint (0: none).
    pub(crate) committed: u64,
    /// Every worker of the generation finished its executors.
    pub(crate) all_finished: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// -> topology id
    Submit(Submission),
    /// -> `Vec<TopologySummary>`
    List,
    /// -> topology id
    Kill {
        name: String,
        wait_secs: Option<u64>,
    },
    /// Activate or deactivate a topology (by name or id) -> topology id
    SetActive { name: String, active: bool },
    /// Rebalance a topology (by name or id): deactivate, wait (default: its message
    /// timeout), re-assign with the new counts, restore its status -> topology id
    Rebalance {
        name: String,
        wait_secs: Option<u64>,
        workers: Option<u32>,
        executors: BTreeMap<String, u32>,
    },
    /// -> the tree as text (or pretty JSON)
    Dump { json: bool },
    /// -> session id
    OpenSession { timeout_ms: u64 },
    /// -> ()
    CloseSession { session: u64 },
    /// -> `Vec<SlotWork>` (the supervisor's assignments); errors when the session expired.
    SupervisorBeat {
        session: u64,
        id: String,
        info: SupervisorInfo,
    },
    /// -> `TopologyWork`
    Topology { id: String },
    /// -> `BeatReply`
    TaskBeats {
        id: String,
        slot: NodePort,
        /// (task, heartbeat) pairs: a list, since a tagged enum cannot carry integer map keys.
        beats: Vec<(u32, TaskHeartbeat)>,
    },
    /// -> `Vec<(u32, TaskHeartbeat)>`: the latest heartbeat of every task of a topology.
    Heartbeats { id: String },
    /// A worker whose executors all finished (end of input); of a checkpointed topology, in
    /// `generation` (news of an older one is stale). -> ()
    Finished {
        id: String,
        slot: NodePort,
        #[serde(default)]
        generation: Option<u64>,
    },
    /// A supervisor whose worker on `slot` keeps dying: nimbus records `error` for the slot's
    /// tasks and moves the slot's work elsewhere. -> ()
    SlotFailing {
        id: String,
        slot: NodePort,
        error: String,
    },
    /// -> ()
    ReportError {
        id: String,
        task: u32,
        error: String,
        /// `host:port` of the worker it happened in.
        #[serde(default)]
        worker: Option<String>,
    },
    /// A worker (`incarnation`: drawn at its start) of a checkpointed topology joins the
    /// current generation, and asks again until it is ready. -> `JoinReply`
    CheckpointJoin {
        id: String,
        slot: NodePort,
        incarnation: u64,
    },
    /// A page of `task`'s committed state, from row `from`. -> `StatePage`
    CheckpointState {
        id: String,
        generation: u64,
        task: crate::state::TaskKey,
        from: usize,
    },
    /// News of a checkpoint from a worker of `generation`. -> `CheckpointReply`
    Checkpoint {
        id: String,
        generation: u64,
        news: CheckpointNews,
    },
    /// -> `CheckpointReply`
    CheckpointStatus { id: String },
    /// From a nimbus taking over: the last checkpoint of topology `id` this nimbus's own
    /// store committed (0: it holds none), or `wanted` (which the tree records) when its
    /// replica received that one whole. Standbys answer it too. -> u64
    CheckpointHeld {
        id: String,
        #[serde(default)]
        wanted: Option<u64>,
    },
    /// From a nimbus taking over: a page of `task`'s committed state in this nimbus's own
    /// store, which must have committed `txid`. Standbys answer it too. -> `StatePage`
    CheckpointExport {
        id: String,
        txid: u64,
        task: crate::state::TaskKey,
        from: usize,
    },
    /// From the leader, before it records a commit: one step of copying topology `id`'s
    /// checkpoints into this nimbus's store, so it can lead on from them. Standbys answer
    /// it. -> ()
    CheckpointReplica { id: String, step: ReplicaStep },
    /// One key of nimbus's own configuration (`storm remoteconfvalue`): its value, `null`
    /// when unset; a secret only as `"<hidden>"`.
    ConfValue { key: String },
    /// `storm set_log_level`: change the log levels of a live topology (by name or id).
    /// -> `(id, LogConfig)`, the levels now in effect
    SetLogConfig {
        name: String,
        changes: Vec<crate::log_config::Change>,
    },
    /// -> `(id, LogConfig)`
    LogConfig { name: String },
    /// A piece of a worker's log (`TOPOLOGY-ID/PORT/worker.log`): by default its last 50 KiB.
    /// -> `LogChunk`
    WorkerLog {
        file: String,
        #[serde(default)]
        start: Option<u64>,
        #[serde(default)]
        length: Option<u64>,
    },
}

/// The response envelope: `{"ok": VALUE}` or `{"error": "MESSAGE"}`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Response {
    Ok(serde_json::Value),
    Error(String),
}

/// Write one length-prefixed JSON message.
pub fn write_message<T: Serialize>(out: &mut impl Write, value: &T) -> anyhow::Result<()> {
    let body = serde_json::to_vec(value)?;
    let len = u32::try_from(body.len())
        .ok()
        .filter(|l| *l <= MAX_MESSAGE_BYTES)
        .ok_or_else(|| anyhow::anyhow!("message of {} bytes is too large", body.len()))?;
    out.write_all(&len.to_be_bytes())?;
    out.write_all(&body)?;
    out.flush()?;
    Ok(())
}

/// Read one length-prefixed JSON message.
pub fn read_message<T: DeserializeOwned>(input: &mut impl Read) -> anyhow::Result<T> {
    let len = read_length(input)?;
    read_body_within(input, len, &mut |_| true)?.decode()
}

/// The length prefix of a message, refused when over [`MAX_MESSAGE_BYTES`].
fn read_length(input: &mut impl Read) -> anyhow::Result<usize> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len);
    anyhow::ensure!(
        len <= MAX_MESSAGE_BYTES,
        "message of {len} bytes is over the {MAX_MESSAGE_BYTES}-byte limit"
    );
    Ok(len as usize)
}

/// The first piece of a body: what a connection holds before more of its bytes arrive.
const READ_STEP: usize = 64 << 10;
/// Later pieces of a body.
const PIECE: usize = 1 << 20;

/// A message body as it arrived, in pieces: a growing body is never copied into a larger
/// buffer (which would leave the smaller one behind, doubling what a large request costs).
#[derive(Debug, Default)]
struct Body {
    pieces: Vec<Vec<u8>>,
}

impl Body {
    /// Parse the JSON (from the one piece directly, or across the pieces).
    fn decode<T: DeserializeOwned>(&self) -> anyhow::Result<T> {
        Ok(match self.pieces.as_slice() {
            [] => serde_json::from_slice(&[])?,
            [one] => serde_json::from_slice(one)?,
            many => serde_json::from_reader(Pieces { rest: many, at: 0 })?,
        })
    }
}

/// Reads the pieces of a [`Body`] one after the other.
struct Pieces<'a> {
    rest: &'a [Vec<u8>],
    at: usize,
}

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while let Some(piece) = self.rest.first() {
            if self.at < piece.len() {
                let n = buf.len().min(piece.len() - self.at);
                buf[..n].copy_from_slice(&piece[self.at..self.at + n]);
                self.at += n;
                return Ok(n);
            }
            self.rest = &self.rest[1..];
            self.at = 0;
        }
        Ok(0)
    }
}

/// The `len` bytes of a message body, asking `room` before each piece is allocated (false
/// refuses). Pieces are allocated as bytes arrive: a peer that announces a large message and
/// sends little holds little.
fn read_body_within(
    input: &mut impl Read,
    len: usize,
    room: &mut dyn FnMut(usize) -> bool,
) -> anyhow::Result<Body> {
    let mut body = Body::default();
    let mut got = 0;
    while got < len {
        let size = (len - got).min(if got == 0 { READ_STEP } else { PIECE });
        anyhow::ensure!(
            room(size),
            "nimbus is busy receiving other large requests; try again"
        );
        let mut piece = vec![0u8; size];
        let mut filled = 0;
        while filled < size {
            match input.read(&mut piece[filled..]) {
                Ok(0) => anyhow::bail!("the peer closed after {} of {len} bytes", got + filled),
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        got += size;
        body.pieces.push(piece);
    }
    Ok(body)
}

/// Parse one request from its bytes (what `serve_connection` does after reading them).
pub fn decode_request(body: &[u8]) -> anyhow::Result<Request> {
    Ok(serde_json::from_slice(body)?)
}

/// The most memory nimbus holds at once for requests being received, over all connections:
/// a request's buffer takes its share as it grows with the bytes that arrive, and gives it back
/// when answered. The first `READ_STEP` of every request is free, so small requests (every
/// request but a submission) are never refused for want of it.
const MAX_IN_FLIGHT_BYTES: usize = 64 << 20;

static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// A connection's share of [`MAX_IN_FLIGHT_BYTES`], given back on drop.
#[derive(Default)]
struct Reserved(usize);

impl Reserved {
    /// Take `bytes` more (free within the first [`READ_STEP`]); false when there is no room.
    fn grow(&mut self, bytes: usize) -> bool {
        let free = READ_STEP.saturating_sub(self.0);
        let counted = bytes.saturating_sub(free);
        let taken = IN_FLIGHT.fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
            used.checked_add(counted)
                .filter(|total| *total <= MAX_IN_FLIGHT_BYTES)
        });
        if taken.is_ok() {
            self.0 += bytes;
        }
        taken.is_ok()
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(self.0.saturating_sub(READ_STEP), Ordering::AcqRel);
    }
}

/// A stream whose reads and writes all end by one deadline: each call waits at most the time
/// left, so a peer sending a byte now and then cannot hold a connection past it.
struct Deadline<'a> {
    stream: &'a TcpStream,
    until: Instant,
}

impl Deadline<'_> {
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(too_long());
        }
        Ok(left)
    }
}

/// The error of a connection past its deadline.
fn too_long() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("the request took longer than {CALL_TIMEOUT:?}"),
    )
}

/// A socket timeout (reported as `WouldBlock` on Unix) is the deadline passing.
fn deadline_error(e: std::io::Error) -> std::io::Error {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => too_long(),
        _ => e,
    }
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.stream.set_read_timeout(Some(self.left()?))?;
        let mut s = self.stream;
        s.read(buf).map_err(deadline_error)
    }
}

impl Write for Deadline<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.stream.set_write_timeout(Some(self.left()?))?;
        let mut s = self.stream;
        s.write(buf).map_err(deadline_error)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let mut s = self.stream;
        s.flush()
    }
}

/// What a standby nimbus's refusals contain, so a client tries the next address it knows.
pub(crate) const NOT_LEADER: &str = "is not the leader nimbus";

/// Nimbus at one address, or the leader among several (a comma-separated list, as
/// `nimbus.seeds`), and the cluster secret this process proves when it calls it (`None`: the
/// cluster has none).
#[derive(Clone)]
pub(crate) struct Client {
    addr: String,
    secret: Option<Secret>,
    retry: Retry,
    /// How long one call waits to connect, and then for each read and write.
    timeout: Duration,
    /// Which of its addresses answered last: calls start there, so once a standby took over
    /// from a frozen leader, later calls go to it first (shared by clones).
    answered_last: std::sync::Arc<AtomicUsize>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret itself is never printed.
        f.debug_struct("Client")
            .field("addr", &self.addr)
            .field("secret", &self.secret.as_ref().map(|_| "<set>"))
            .finish()
    }
}

/// Why one nimbus did not answer a request: an answer to give the caller, or a reason to try
/// the next address (unreachable, or a standby).
enum Failure {
    Answered(anyhow::Error),
    PassOver(anyhow::Error),
}

impl Failure {
    fn into_error(self) -> anyhow::Error {
        match self {
            Failure::Answered(e) | Failure::PassOver(e) => e,
        }
    }
}

impl Client {
    pub(crate) fn new(addr: impl Into<String>, secret: Option<Secret>) -> Client {
        Client {
            addr: addr.into(),
            secret,
            retry: Retry::NONE,
            timeout: CALL_TIMEOUT,
            answered_last: Default::default(),
        }
    }

    /// This client, waiting at most `timeout` to connect and for each read and write (a
    /// nimbus copying checkpoints to another one gives up on a frozen peer sooner).
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    /// This client, retrying rounds over its addresses as `retry` says while no nimbus leads
    /// (an election under way, a leader that died mid-call).
    pub(crate) fn with_retry(mut self, retry: Retry) -> Client {
        self.retry = retry;
        self
    }

    /// This client, retrying at least `total` while no nimbus leads (a run attached to the
    /// cluster outlives elections; a one-off command gives up after its own rounds).
    pub(crate) fn riding_out_elections(self, total: Duration) -> Client {
        let retry = self.retry.at_least(total);
        self.with_retry(retry)
    }

    /// Nimbus's address (or addresses), as given.
    pub(crate) fn addr(&self) -> &str {
        &self.addr
    }

    /// Send one request to the leading nimbus and decode its answer. With several
    /// addresses they are tried in turn, passing over those that cannot be reached, that
    /// closed the connection before answering, and standbys that answer they do not lead;
    /// with a [`Retry`], rounds over them go on with back-off until one leads.
    pub(crate) fn call<T: DeserializeOwned>(&self, request: &Request) -> anyhow::Result<T> {
        let list: Vec<&str> = self
            .addr
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .collect();
        if list.len() <= 1 && self.retry.times == 0 {
            let addr = list.first().copied().unwrap_or(&self.addr);
            return self
                .call_at(addr, request, false)
                .map_err(Failure::into_error);
        }
        let started = Instant::now();
        let mut wait = None;
        let mut tried = Vec::new();
        for round in 0..=self.retry.times {
            if round > 0 {
                let next = self.retry.next_wait(wait);
                tracing::warn!(
                    "no leading nimbus among {} ({}); retrying in {next:?}",
                    self.addr,
                    tried.join("; ")
                );
                std::thread::sleep(next);
                wait = Some(next);
            }
            tried.clear();
            let first = self.answered_last.load(Ordering::Relaxed);
            let several = list.len() > 1;
            for i in (0..list.len()).map(|k| (first + k) % list.len()) {
                match self.call_at(list[i], request, several) {
                    Ok(v) => {
                        self.answered_last.store(i, Ordering::Relaxed);
                        return Ok(v);
                    }
                    Err(Failure::Answered(e)) => return Err(e),
                    Err(Failure::PassOver(e)) => tried.push(format!("{e:#}")),
                }
            }
        }
        anyhow::bail!(
            "no leading nimbus among {} after {} round(s) over {:.1}s (storm.nimbus.retry.*): {}",
            self.addr,
            self.retry.times + 1,
            started.elapsed().as_secs_f64(),
            tried.join("; ")
        )
    }

    /// One request to the nimbus at `addr` (`several`: other addresses can be tried after it).
    fn call_at<T: DeserializeOwned>(
        &self,
        addr: &str,
        request: &Request,
        several: bool,
    ) -> Result<T, Failure> {
        let mut stream = connect(addr, self.timeout).map_err(Failure::PassOver)?;
        match &self.secret {
            Some(secret) => self.prove(&mut stream, addr, secret, several)?,
            None => self.greeted(&mut stream, addr, several)?,
        }
        write_message(&mut stream, request)
            .map_err(|e| Failure::PassOver(anyhow::anyhow!("sending to nimbus at {addr}: {e}")))?;
        let response: Response = read_message(&mut stream).map_err(|e| {
            let kind = e.downcast_ref::<std::io::Error>().map(std::io::Error::kind);
            if kind.is_some_and(cut_off) {
                return Failure::PassOver(anyhow::anyhow!(
                    "nimbus at {addr} closed the connection before answering (it stopped, or \
                     lost its leadership, mid-call)"
                ));
            }
            if kind.is_some_and(timed_out) {
                return Failure::PassOver(anyhow::anyhow!(
                    "nimbus at {addr} did not answer within {:?} (it is frozen, or \
                     overloaded)",
                    self.timeout
                ));
            }
            let hint = if self.secret.is_none() {
                " (if the cluster has a secret, set storm.cluster.secret or STORM_CLUSTER_SECRET)"
            } else {
                ""
            };
            Failure::Answered(anyhow::anyhow!(
                "reading nimbus's answer from {addr}: {e}{hint}"
            ))
        })?;
        match response {
            Response::Ok(v) => serde_json::from_value(v).map_err(|e| {
                Failure::Answered(anyhow::anyhow!(
                    "nimbus at {addr} answered something unexpected: {e}"
                ))
            }),
            Response::Error(msg) if msg.contains(NOT_LEADER) => {
                Err(Failure::PassOver(anyhow::anyhow!("{msg}")))
            }
            Response::Error(msg) => Err(Failure::Answered(anyhow::anyhow!("{msg}"))),
        }
    }

    /// Wait for the greeting of the nimbus at `addr` (no cluster secret). With several
    /// addresses, a nimbus that sends none within [`CHALLENGE_WAIT`], or closes the connection,
    /// is passed over; one that sends something else (a challenge: it has a secret) is an
    /// answer.
    fn greeted(&self, stream: &mut TcpStream, addr: &str, several: bool) -> Result<(), Failure> {
        let (read, wait) = self.first_bytes(stream, several, |s| {
            let mut first = [0u8; 4];
            s.read_exact(&mut first).map(|()| first)
        });
        match read {
            Ok(first) if &first == GREETING => Ok(()),
            Ok(_) => Err(Failure::Answered(anyhow::anyhow!(
                "nimbus at {addr} asks for a cluster secret: set storm.cluster.secret or \
                 STORM_CLUSTER_SECRET"
            ))),
            Err(e) => Err(silent(addr, "greeting", wait, e.kind()).unwrap_or_else(|| {
                Failure::PassOver(anyhow::anyhow!(
                    "reading the greeting of nimbus at {addr}: {e}"
                ))
            })),
        }
    }

    /// Prove the cluster secret to the nimbus at `addr`. With several addresses, a nimbus that
    /// sends no challenge within [`CHALLENGE_WAIT`], or closes the connection, is passed over;
    /// one that refuses the proof is an answer.
    fn prove(
        &self,
        stream: &mut TcpStream,
        addr: &str,
        secret: &Secret,
        several: bool,
    ) -> Result<(), Failure> {
        let (proved, wait) =
            self.first_bytes(stream, several, |s| auth::client(s, secret, AUTH_CONTEXT));
        let Err(e) = proved else {
            return Ok(());
        };
        let silence = match &e {
            auth::AuthError::Io(io) if several => silent(addr, "challenge", wait, io.kind()),
            _ => None,
        };
        Err(silence.unwrap_or_else(|| {
            Failure::Answered(anyhow::anyhow!(
                "nimbus at {addr} did not accept our cluster secret: {e}"
            ))
        }))
    }

    /// Run `read`, which reads what nimbus sends first on `stream` (its challenge or greeting),
    /// under the first wait: [`CHALLENGE_WAIT`] when other addresses can be tried, the call's
    /// timeout otherwise. Gives what `read` gave and the wait.
    fn first_bytes<T>(
        &self,
        stream: &mut TcpStream,
        several: bool,
        read: impl FnOnce(&mut TcpStream) -> T,
    ) -> (T, Duration) {
        let wait = if several {
            self.timeout.min(CHALLENGE_WAIT)
        } else {
            self.timeout
        };
        let _ = stream.set_read_timeout(Some(wait));
        let got = read(stream);
        let _ = stream.set_read_timeout(Some(self.timeout));
        (got, wait)
    }
}

/// A nimbus that sent nothing within `wait` while its `what` (challenge, greeting) was awaited,
/// or that closed the connection first: frozen, overloaded or stopped, so passed over. `None`
/// for any other failure.
fn silent(addr: &str, what: &str, wait: Duration, kind: std::io::ErrorKind) -> Option<Failure> {
    if timed_out(kind) {
        return Some(Failure::PassOver(anyhow::anyhow!(
            "nimbus at {addr} sent no {what} within {wait:?} (it is frozen, or overloaded)"
        )));
    }
    cut_off(kind).then(|| {
        Failure::PassOver(anyhow::anyhow!(
            "nimbus at {addr} closed the connection before its {what} was done (it stopped \
             mid-call)"
        ))
    })
}

/// Whether a read failed because the connection was cut (a nimbus with a secret, called
/// without one, sends its challenge first, so a cut before any answer is never that).
fn cut_off(kind: std::io::ErrorKind) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    matches!(
        kind,
        UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe
    )
}

/// Whether a read gave up waiting (the client's timeout passed).
fn timed_out(kind: std::io::ErrorKind) -> bool {
    use std::io::ErrorKind::{TimedOut, WouldBlock};
    matches!(kind, TimedOut | WouldBlock)
}

/// A connection to the nimbus at `addr`, with `timeout` on its reads and writes.
fn connect(addr: &str, timeout: Duration) -> anyhow::Result<TcpStream> {
    let target = addr
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("nimbus address `{addr}`: {e}"))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("nimbus address `{addr}` resolves to nothing"))?;
    let stream = TcpStream::connect_timeout(&target, timeout)
        .map_err(|e| anyhow::anyhow!("cannot reach nimbus at {addr}: {e}"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    Ok(stream)
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.addr)
    }
}

/// Answer one connection: read a request, hand it to `handle`, write the response. A peer
/// that sends garbage only loses its connection. The handshake and the request must arrive
/// within `CALL_TIMEOUT`, and a request's length is reserved from [`MAX_IN_FLIGHT_BYTES`]
/// before its body is read.
pub(crate) fn serve_connection(
    stream: TcpStream,
    secret: Option<&Secret>,
    handle: impl FnOnce(Request) -> Result<serde_json::Value, String>,
) {
    let mut timed = Deadline {
        stream: &stream,
        until: Instant::now() + CALL_TIMEOUT,
    };
    match secret {
        Some(secret) => {
            if let Err(e) = auth::server(&mut timed, secret, AUTH_CONTEXT) {
                refused(
                    &REFUSED_AUTH,
                    &stream,
                    &format!("no cluster secret proven: {e}"),
                );
                return;
            }
        }
        None => {
            let _ = stream.set_write_timeout(Some(CALL_TIMEOUT));
            if (&stream).write_all(GREETING).is_err() {
                return;
            }
        }
    }
    let response = match receive(&mut timed, &stream) {
        Ok(req) => match handle(req) {
            Ok(v) => Response::Ok(v),
            Err(e) => Response::Error(e),
        },
        Err(e) => Response::Error(format!("bad request: {e:#}")),
    };
    let _ = stream.set_write_timeout(Some(CALL_TIMEOUT));
    let mut out = &stream;
    if let Err(e) = write_message(&mut out, &response) {
        tracing::debug!("nimbus: cannot answer a client: {e:#}");
    }
}

static REFUSED_AUTH: Throttle = Throttle::new(THROTTLE);
static REFUSED_REQUEST: Throttle = Throttle::new(THROTTLE);
/// How often each kind of refused connection may be logged.
const THROTTLE: Duration = Duration::from_secs(10);

/// Log a refused connection, at most once per [`THROTTLE`] for each kind.
fn refused(kind: &Throttle, stream: &TcpStream, why: &str) {
    if let Some(held) = kind.allow() {
        let peer = stream
            .peer_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        tracing::warn!("nimbus: refused {peer}: {why}{}", held_back(held));
    }
}

/// Read one request within the deadline and the in-flight budget.
fn receive(timed: &mut Deadline, stream: &TcpStream) -> anyhow::Result<Request> {
    let mut share = Reserved::default();
    let result = read_length(timed)
        .and_then(|len| read_body_within(timed, len, &mut |more| share.grow(more)));
    match result {
        Ok(body) => body.decode(),
        Err(e) => {
            refused(&REFUSED_REQUEST, stream, &format!("{e:#}"));
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A reader that returns at most 5,000 bytes per call, as a socket may.
    struct Uneven<'a>(&'a [u8]);

    impl Read for Uneven<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.0.len()).min(5000);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_body_grows_with_its_bytes_and_within_its_budget() {
        let text = format!("\"{}\"", "x".repeat((3 << 20) - 2));
        let mut asked = Vec::new();
        let body = read_body_within(&mut Uneven(text.as_bytes()), text.len(), &mut |n| {
            asked.push(n);
            true
        })
        .unwrap();
        let received: usize = body.pieces.iter().map(Vec::len).sum();
        assert_eq!(received, text.len());
        // 64 KiB first, then 1 MiB pieces: nothing is allocated ahead of the bytes.
        assert_eq!(asked, [64 << 10, 1 << 20, 1 << 20, (1 << 20) - (64 << 10)]);
        let back: String = body.decode().unwrap();
        assert_eq!(back.len(), text.len() - 2);
        // A peer that announces 16 MiB and sends 10 bytes holds 64 KiB at most.
        let err = read_body_within(&mut &b"0123456789"[..], 16 << 20, &mut |_| true).unwrap_err();
        assert!(err.to_string().contains("after 10 of"), "{err}");
        // Past the budget, the request is refused.
        let err = read_body_within(&mut Uneven(text.as_bytes()), text.len(), &mut |n| n < PIECE)
            .unwrap_err();
        assert!(err.to_string().contains("busy"), "{err}");
    }

    #[test]
    fn shares_are_free_for_small_requests_and_given_back() {
        let before = IN_FLIGHT.load(Ordering::Acquire);
        let mut small = Reserved::default();
        assert!(small.grow(READ_STEP));
        assert_eq!(IN_FLIGHT.load(Ordering::Acquire), before);
        let mut big = Reserved::default();
        assert!(big.grow(READ_STEP));
        assert!(big.grow(1 << 20));
        assert!(IN_FLIGHT.load(Ordering::Acquire) >= before + (1 << 20));
        assert!(!Reserved::default().grow(MAX_IN_FLIGHT_BYTES + READ_STEP + 1));
        drop(big);
        drop(small);
    }

    /// A nimbus that never answers, as a stopped process: the kernel takes its connections
    /// (counted here), nothing is ever sent on them.
    fn frozen_nimbus() -> (String, Arc<AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        let addr = listener.local_addr().expect("an address").to_string();
        let taken = Arc::new(AtomicUsize::new(0));
        let count = taken.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::SeqCst);
                held.push(stream);
            }
        });
        (addr, taken)
    }

    /// A leading nimbus with `secret` (or none) that answers every request with `"ok"`.
    fn live_nimbus(secret: Option<Secret>) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        let addr = listener.local_addr().expect("an address").to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let secret = secret.clone();
                std::thread::spawn(move || {
                    serve_connection(stream, secret.as_ref(), |_| Ok(serde_json::json!("ok")))
                });
            }
        });
        addr
    }

    /// A client of a frozen nimbus and then a live one, `secret` on every end (or none), after
    /// its first call, which the live one answers: the client, how long that call took, and how
    /// many connections the frozen one took.
    fn past_a_frozen_nimbus(secret: Option<Secret>) -> (Client, Duration, Arc<AtomicUsize>) {
        let (frozen, taken) = frozen_nimbus();
        let live = live_nimbus(secret.clone());
        let client = Client::new(format!("{frozen},{live}"), secret);
        let started = Instant::now();
        let answer: String = client
            .call(&Request::List)
            .expect("the live nimbus answers");
        assert_eq!(answer, "ok");
        (client, started.elapsed(), taken)
    }

    /// A frozen leader costs a call the challenge wait, not the call timeout (before, it cost
    /// 10 s and ended the call with "did not accept our cluster secret"), and once another
    /// nimbus answered, later calls (of clones too) go to that one first.
    #[test]
    fn a_frozen_nimbus_is_passed_over_at_its_challenge_and_not_asked_again() {
        let (client, took, taken) = past_a_frozen_nimbus(Some(Secret::new("s3cret")));
        assert!(took < CALL_TIMEOUT, "passed over after {took:?}");
        assert_eq!(taken.load(Ordering::SeqCst), 1);
        let _: String = client.clone().call(&Request::List).expect("answers");
        let _: String = client.call(&Request::List).expect("answers");
        assert_eq!(
            taken.load(Ordering::SeqCst),
            1,
            "the frozen nimbus was asked again"
        );
    }

    /// Without a cluster secret too: nimbus greets first, so a frozen one costs the greeting's
    /// wait (before, the call's whole timeout, 10 s).
    #[test]
    fn a_frozen_nimbus_without_a_secret_is_passed_over_at_its_greeting() {
        let (client, took, taken) = past_a_frozen_nimbus(None);
        assert!(took < CHALLENGE_WAIT * 2, "passed over after {took:?}");
        assert_eq!(taken.load(Ordering::SeqCst), 1);
        let _: String = client.call(&Request::List).expect("answers");
        assert_eq!(
            taken.load(Ordering::SeqCst),
            1,
            "asked the frozen one again"
        );
    }

    /// A client without the secret learns at once that the nimbus wants one.
    #[test]
    fn a_nimbus_with_a_secret_tells_a_client_without_one_to_set_it() {
        let live = live_nimbus(Some(Secret::new("s3cret")));
        let client = Client::new(live, None);
        let started = Instant::now();
        let err = client.call::<String>(&Request::List).expect_err("refused");
        assert!(err.to_string().contains("storm.cluster.secret"), "{err:#}");
        assert!(
            started.elapsed() < CHALLENGE_WAIT,
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_client_never_prints_its_secret() {
        let client = Client::new("127.0.0.1:6627", Some(Secret::new("hunter2")));
        let shown = format!("{client:?} {client}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("127.0.0.1:6627"), "{shown}");
    }

    #[test]
    fn messages_round_trip_and_oversized_lengths_are_refused() {
        let mut buf = Vec::new();
        write_message(
            &mut buf,
            &Request::Kill {
                name: "wc".into(),
                wait_secs: Some(0),
            },
        )
        .unwrap();
        let back: Request = read_message(&mut buf.as_slice()).unwrap();
        assert!(matches!(back, Request::Kill { name, wait_secs: Some(0) } if name == "wc"));
        let mut huge = (MAX_MESSAGE_BYTES + 1).to_be_bytes().to_vec();
        huge.extend_from_slice(b"{}");
        let err = read_message::<Request>(&mut huge.as_slice()).unwrap_err();
        assert!(err.to_string().contains("over the"), "{err}");
    }
}
