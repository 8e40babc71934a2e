//! Nimbus's client/server protocol (the part of Storm's Thrift `Nimbus` service and ZooKeeper
//! traffic we need): one request and one response per TCP connection, each a length-prefixed
//! JSON document (a 4-byte big-endian length, then the JSON). Every daemon and command talks to
//! nimbus through [`call`]; nimbus answers with [`serve_connection`]. With a cluster secret, both
//! ends first prove it with the transport's HMAC challenge-response (`net::auth`).

use super::layout::{AssignmentInfo, NodePort, SupervisorInfo, TaskHeartbeat, TopologyStatus};
use crate::net::auth::{self, Secret};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::RwLock;
use std::time::Duration;

/// The handshake context of nimbus connections (workers' links use another).
pub const AUTH_CONTEXT: &str = "nimbus";

/// The secret this process proves when it calls nimbus (set once from its configuration).
static CLIENT_SECRET: RwLock<Option<Secret>> = RwLock::new(None);

/// Prove `secret` on every later [`call`] from this process.
pub fn use_secret(secret: Option<Secret>) {
    match CLIENT_SECRET.write() {
        Ok(mut s) => *s = secret,
        Err(p) => *p.into_inner() = secret,
    }
}

fn client_secret() -> Option<Secret> {
    match CLIENT_SECRET.read() {
        Ok(s) => s.clone(),
        Err(p) => p.into_inner().clone(),
    }
}

/// Requests and responses larger than this are refused (a topology file is a few kilobytes).
pub const MAX_MESSAGE_BYTES: u32 = 16 * 1024 * 1024;

/// How long a call waits for nimbus to connect and answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// A submitted topology as the client sent it (kept under `DIR/stormdist/ID`, as Storm keeps
/// the jar and serialized topology under `stormdist`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    /// The file's path (absolute, so shell components and `file` spouts resolve), or `<-e>`.
    pub path: String,
    /// The file's text.
    pub text: String,
    /// `-c KEY=VALUE` overrides given at submission.
    #[serde(default)]
    pub overrides: Vec<String>,
    /// `storm run --processes`: the supervisor id whose single slot holds the `stdin` and
    /// `stdout` executors (SPEC §5: they run in the `storm run` process).
    #[serde(default)]
    pub home: Option<String>,
}

/// What a worker needs to start: the submission, its assignment and the topology's status.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TopologyWork {
    pub submission: Submission,
    pub assignment: Option<AssignmentInfo>,
    pub status: TopologyStatus,
}

/// One slot of a supervisor and the topology assigned to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotWork {
    pub topology: String,
    pub port: u16,
    /// Changes whenever the topology's assignment changes: its workers then restart, since a
    /// worker's placement and peer addresses are fixed when it starts (Storm's supervisor
    /// restarts the workers whose assignment changed).
    pub version: u64,
}

/// A stable digest of an assignment (FNV-1a over its placement), for [`SlotWork::version`].
pub fn assignment_version(a: &AssignmentInfo) -> u64 {
    let text = serde_json::to_string(&(&a.node_host, &a.task_to_node_port)).unwrap_or_default();
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One line of `storm list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopologySummary {
    pub name: String,
    pub id: String,
    pub status: String,
    pub workers: usize,
    pub uptime_secs: u64,
}

/// What a worker learns from each heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BeatReply {
    /// The worker's slot is still in the topology's assignment.
    pub assigned: bool,
    /// The topology is active (a killed or deactivated one stops its spouts).
    pub active: bool,
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
    /// A worker whose executors all finished (end of input). -> ()
    Finished { id: String, slot: NodePort },
    /// -> ()
    ReportError {
        id: String,
        task: u32,
        error: String,
    },
}

/// The response envelope: `{"ok": VALUE}` or `{"error": "MESSAGE"}`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
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
    let mut len = [0u8; 4];
    input.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len);
    anyhow::ensure!(
        len <= MAX_MESSAGE_BYTES,
        "message of {len} bytes is over the {MAX_MESSAGE_BYTES}-byte limit"
    );
    let mut body = vec![0u8; len as usize];
    input.read_exact(&mut body)?;
    Ok(serde_json::from_slice(&body)?)
}

/// Send one request to nimbus at `addr` and decode its answer.
pub fn call<T: DeserializeOwned>(addr: &str, request: &Request) -> anyhow::Result<T> {
    let target = addr
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("nimbus address `{addr}`: {e}"))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("nimbus address `{addr}` resolves to nothing"))?;
    let mut stream = TcpStream::connect_timeout(&target, CALL_TIMEOUT)
        .map_err(|e| anyhow::anyhow!("cannot reach nimbus at {addr}: {e}"))?;
    stream.set_read_timeout(Some(CALL_TIMEOUT))?;
    stream.set_write_timeout(Some(CALL_TIMEOUT))?;
    let secret = client_secret();
    if let Some(secret) = &secret {
        auth::client(&mut stream, secret, AUTH_CONTEXT).map_err(|e| {
            anyhow::anyhow!("nimbus at {addr} did not accept our cluster secret: {e}")
        })?;
    }
    write_message(&mut stream, request)
        .map_err(|e| anyhow::anyhow!("sending to nimbus at {addr}: {e}"))?;
    let response: Response = read_message(&mut stream).map_err(|e| {
        let hint = if secret.is_none() {
            " (if the cluster has a secret, set storm.cluster.secret or STORM_CLUSTER_SECRET)"
        } else {
            ""
        };
        anyhow::anyhow!("reading nimbus's answer from {addr}: {e}{hint}")
    })?;
    match response {
        Response::Ok(v) => serde_json::from_value(v)
            .map_err(|e| anyhow::anyhow!("nimbus at {addr} answered something unexpected: {e}")),
        Response::Error(msg) => Err(anyhow::anyhow!("{msg}")),
    }
}

/// Answer one connection: read a request, hand it to `handle`, write the response. A peer
/// that sends garbage only loses its connection.
pub fn serve_connection(
    mut stream: TcpStream,
    secret: Option<&Secret>,
    handle: impl FnOnce(Request) -> Result<serde_json::Value, String>,
) {
    let _ = stream.set_read_timeout(Some(CALL_TIMEOUT));
    let _ = stream.set_write_timeout(Some(CALL_TIMEOUT));
    if let Some(secret) = secret {
        if let Err(e) = auth::server(&mut stream, secret, AUTH_CONTEXT) {
            tracing::warn!("nimbus: refused a connection: {e}");
            return;
        }
    }
    let response = match read_message::<Request>(&mut stream) {
        Ok(req) => match handle(req) {
            Ok(v) => Response::Ok(v),
            Err(e) => Response::Error(e),
        },
        Err(e) => Response::Error(format!("bad request: {e}")),
    };
    if let Err(e) = write_message(&mut stream, &response) {
        tracing::debug!("nimbus: cannot answer a client: {e:#}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
