//! The `redis` spout: a Redis stream read through a consumer group (`XREADGROUP`, the group
//! made when missing), one tuple per entry (or per record of it, with `format`), tracked
//! until its tree completes; only then is the entry acknowledged (`XACK`). A failed tuple is
//! emitted again (after `max_retries`, counted as lost and acknowledged). Entries this
//! consumer was given before (a restart under the same consumer name) are read again first,
//! and entries pending with any consumer for longer than `claim_after` (a consumer that
//! died) are claimed (`XAUTOCLAIM`) and emitted: at least once, as Storm's spouts are.

use super::conn::{self, Conn};
use super::record::RecordReader;
use super::reply::{self, Entry};
use crate::components::{FatalError, Spout, SpoutCollector, SpoutStatus, TaskContext};
use crate::model::plan::streams;
use crate::tuple::{Value, Values};
use serde_json::Value as Json;
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

type Args = serde_json::Map<String, Json>;

/// Entries asked for at once.
const READ_COUNT: usize = 256;
/// Acknowledgements gathered before they are sent (they are also sent whenever the spout
/// has nothing to emit).
const ACK_BATCH: usize = 128;
const DEFAULT_CLAIM_AFTER: Duration = Duration::from_secs(30);
const DEFAULT_GROUP: &str = "storm";

/// A tuple in flight: its entry, and its values for a replay.
struct Kept {
    entry: String,
    values: Values,
    retries: u32,
}

pub(crate) struct RedisSpout {
    args: Args,
    stream: String,
    group: String,
    consumer: String,
    claim_after: Duration,
    max_retries: Option<u32>,
    reader: RecordReader,
    label: String,
    conn: Option<Conn>,
    /// Entries read and not yet emitted.
    ready: VecDeque<Entry>,
    kept: HashMap<u64, Kept>,
    /// How many tuples of each entry are in flight (a record format may give several).
    open: HashMap<String, usize>,
    next_id: u64,
    failed: VecDeque<u64>,
    to_ack: Vec<String>,
    /// Reading this consumer's own pending entries (from a run before) is done.
    history_done: bool,
    history_from: String,
    next_claim: Instant,
    lost: u64,
    warnings: crate::logging::Throttle,
}

impl RedisSpout {
    pub(crate) fn new(args: &Args) -> Result<RedisSpout, String> {
        let text = |k: &str| args.get(k).and_then(Json::as_str).map(String::from);
        let stream = text("stream").ok_or("needs `stream` (the Redis stream's key)")?;
        let claim_after = match args.get("claim_after") {
            None => DEFAULT_CLAIM_AFTER,
            Some(v) => crate::config::duration_of(v)
                .filter(|d| !d.is_zero())
                .ok_or_else(|| format!("`claim_after` must be a duration (`30s`), not {v}"))?,
        };
        Ok(RedisSpout {
            args: args.clone(),
            stream,
            group: text("group").unwrap_or_else(|| DEFAULT_GROUP.into()),
            consumer: text("consumer").unwrap_or_default(),
            claim_after,
            max_retries: crate::components::replay::max_retries(args),
            reader: RecordReader::new(args)?,
            label: "redis".into(),
            conn: None,
            ready: VecDeque::new(),
            kept: HashMap::new(),
            open: HashMap::new(),
            next_id: 0,
            failed: VecDeque::new(),
            to_ack: Vec::new(),
            history_done: false,
            history_from: "0".into(),
            next_claim: Instant::now(),
            lost: 0,
            warnings: crate::logging::Throttle::new(Duration::from_secs(10)),
        })
    }

    fn conn(&mut self) -> anyhow::Result<&mut Conn> {
        self.conn
            .as_mut()
            .ok_or_else(|| anyhow::anyhow!("{}: not connected", self.label))
    }

    /// Make the group (from the stream's start, and the stream if missing); one that exists is
    /// left as it is.
    fn create_group(&mut self) -> anyhow::Result<()> {
        let (stream, group) = (self.stream.clone(), self.group.clone());
        let made = self
            .conn()?
            .with_retry("creating the consumer group", |con| {
                redis::cmd("XGROUP")
                    .arg("CREATE")
                    .arg(&stream)
                    .arg(&group)
                    .arg("0")
                    .arg("MKSTREAM")
                    .query::<()>(con)
            });
        match made {
            Ok(()) => Ok(()),
            Err(e) if e.to_string().contains("BUSYGROUP") => Ok(()),
            Err(e) => Err(FatalError(format!("{}: {e}", self.label)).into()),
        }
    }

    /// Read entries: this consumer's own pending ones first (a restart), then new ones.
    fn read(&mut self) -> anyhow::Result<()> {
        let from = match self.history_done {
            true => ">".to_string(),
            false => self.history_from.clone(),
        };
        let (stream, group, consumer) = (
            self.stream.clone(),
            self.group.clone(),
            self.consumer.clone(),
        );
        let label = self.label.clone();
        let got = self.conn()?.with_retry(&label, |con| {
            redis::cmd("XREADGROUP")
                .arg("GROUP")
                .arg(&group)
                .arg(&consumer)
                .arg("COUNT")
                .arg(READ_COUNT)
                .arg("STREAMS")
                .arg(&stream)
                .arg(&from)
                .query::<redis::Value>(con)
        });
        let entries = match got {
            Ok(v) => reply::read_group(&v),
            Err(e) => return Err(FatalError(format!("{label}: {e}")).into()),
        };
        if !self.history_done {
            match entries.last() {
                Some((id, _)) => self.history_from = id.clone(),
                None => self.history_done = true,
            }
        }
        self.ready.extend(entries);
        Ok(())
    }

    /// Claim entries idle with any consumer for `claim_after` (one that died).
    fn claim(&mut self) -> anyhow::Result<()> {
        self.next_claim = Instant::now() + (self.claim_after / 2).max(Duration::from_millis(100));
        let (stream, group, consumer) = (
            self.stream.clone(),
            self.group.clone(),
            self.consumer.clone(),
        );
        let idle = self.claim_after.as_millis() as u64;
        let label = self.label.clone();
        let mut cursor = "0-0".to_string();
        loop {
            let got = self.conn()?.with_retry(&label, |con| {
                redis::cmd("XAUTOCLAIM")
                    .arg(&stream)
                    .arg(&group)
                    .arg(&consumer)
                    .arg(idle)
                    .arg(&cursor)
                    .arg("COUNT")
                    .arg(READ_COUNT)
                    .query::<redis::Value>(con)
            });
            let (next, entries) = match got {
                Ok(v) => reply::auto_claim(&v),
                Err(e) => return Err(FatalError(format!("{label}: {e}")).into()),
            };
            // Entries of this task still in flight (slower than `claim_after`) stay as they are.
            let queued: HashSet<&str> = self.ready.iter().map(|e| e.0.as_str()).collect();
            let fresh: Vec<Entry> = entries
                .into_iter()
                .filter(|(id, _)| !self.open.contains_key(id) && !queued.contains(id.as_str()))
                .collect();
            if !fresh.is_empty() {
                tracing::info!(
                    "{label}: claimed {} pending entries idle for {:?}",
                    fresh.len(),
                    self.claim_after
                );
            }
            self.ready.extend(fresh);
            if next == "0-0" {
                return Ok(());
            }
            cursor = next;
        }
    }

    fn flush_acks(&mut self) -> anyhow::Result<()> {
        if self.to_ack.is_empty() {
            return Ok(());
        }
        let ids = std::mem::take(&mut self.to_ack);
        let (stream, group) = (self.stream.clone(), self.group.clone());
        let label = self.label.clone();
        self.conn()?
            .with_retry(&label, |con| {
                redis::cmd("XACK")
                    .arg(&stream)
                    .arg(&group)
                    .arg(&ids)
                    .query::<()>(con)
            })
            .map_err(|e| FatalError(format!("{label}: acknowledging: {e}")).into())
    }

    /// Emit the tuples of one entry (an unreadable or deleted entry is acknowledged and
    /// counted as dropped).
    fn emit_entry(&mut self, (id, fields): Entry, out: &mut dyn SpoutCollector) {
        let read = match fields {
            Some(f) => self.reader.read(&id, &f),
            None => Err(format!("entry {id} was deleted from the stream")),
        };
        let tuples = match read {
            Ok(t) => t,
            Err(why) => {
                if let Some(n) = self.warnings.allow() {
                    tracing::warn!("{}: {why}; dropped ({n} more)", self.label);
                }
                out.dropped(1);
                self.to_ack.push(id);
                return;
            }
        };
        *self.open.entry(id.clone()).or_insert(0) += tuples.len();
        for values in tuples {
            self.next_id += 1;
            let kept = Kept {
                entry: id.clone(),
                values: values.clone(),
                retries: 0,
            };
            self.kept.insert(self.next_id, kept);
            out.send(
                streams::DEFAULT,
                values,
                Some(Value::Int(self.next_id as i64)),
            );
        }
    }

    /// One of an entry's tuples is done: the entry is acknowledged once all are.
    fn done(&mut self, entry: String) {
        let left = self.open.get_mut(&entry).map(|n| {
            *n = n.saturating_sub(1);
            *n
        });
        if left == Some(0) {
            self.open.remove(&entry);
            self.to_ack.push(entry);
        }
    }
}

impl Spout for RedisSpout {
    fn open(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.label = format!("spout \"{}\" task {}", ctx.component, ctx.task_id);
        self.consumer = match self.consumer.as_str() {
            "" => format!("{}-{}-{}", ctx.topology.name, ctx.component, ctx.task_index),
            name if ctx.spec().is_some_and(|c| c.parallelism > 1) => {
                format!("{name}-{}", ctx.task_index)
            }
            name => name.to_string(),
        };
        let url = conn::resolve_url(&self.args, Some(&ctx.config));
        let mut c = Conn::new(&url).map_err(|e| FatalError(format!("{}: {e}", ctx.component)))?;
        c.open(conn::START_TIMEOUT)
            .map_err(|e| FatalError(format!("{}: {e}", ctx.component)))?;
        self.conn = Some(c);
        self.create_group()
    }

    fn next_tuple(&mut self, out: &mut dyn SpoutCollector) -> anyhow::Result<SpoutStatus> {
        if let Some(id) = self.failed.pop_front() {
            if let Some(k) = self.kept.get(&id) {
                out.send(
                    streams::DEFAULT,
                    k.values.clone(),
                    Some(Value::Int(id as i64)),
                );
            }
            return Ok(SpoutStatus::Busy);
        }
        if let Some(entry) = self.ready.pop_front() {
            self.emit_entry(entry, out);
            if self.to_ack.len() >= ACK_BATCH {
                self.flush_acks()?;
            }
            return Ok(SpoutStatus::Busy);
        }
        self.flush_acks()?;
        if self.history_done && Instant::now() >= self.next_claim {
            self.claim()?;
        }
        if self.ready.is_empty() {
            self.read()?;
        }
        Ok(match self.ready.is_empty() {
            true => SpoutStatus::Idle,
            false => SpoutStatus::Busy,
        })
    }

    fn ack(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        let Value::Int(id) = msg_id else {
            return Ok(());
        };
        if let Some(k) = self.kept.remove(&(id as u64)) {
            self.done(k.entry);
        }
        if self.to_ack.len() >= ACK_BATCH {
            self.flush_acks()?;
        }
        Ok(())
    }

    fn fail(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        let Value::Int(id) = msg_id else {
            return Ok(());
        };
        let id = id as u64;
        let give_up = match self.kept.get_mut(&id) {
            Some(k) => {
                k.retries += 1;
                self.max_retries.is_some_and(|m| k.retries > m)
            }
            None => return Ok(()),
        };
        if give_up {
            if let Some(k) = self.kept.remove(&id) {
                self.lost += 1;
                self.done(k.entry);
            }
        } else {
            self.failed.push_back(id);
        }
        Ok(())
    }

    fn deactivate(&mut self) -> anyhow::Result<()> {
        self.flush_acks()
    }

    fn lost(&self) -> u64 {
        self.lost
    }

    fn close(&mut self) {
        if let Err(e) = self.flush_acks() {
            tracing::warn!("{e:#}");
        }
    }
}
