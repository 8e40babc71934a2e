//! The `kafka` spout: one tuple per message (or per record of it, with `format`), tracked
//! until acked. A partition's offset is committed only up to its first message still in
//! flight ([`super::offsets`]); a failed tuple is emitted again, and after `max_retries`
//! sent to the `errors` stream (when wired; else counted as lost). A partition with too many
//! messages in flight is paused until they drain, so a slow topology slows the consumer and
//! nothing but librdkafka's bounded prefetch is buffered. In a checkpointed topology the
//! offsets live in the checkpoint instead (see `position`): input is then exactly once.

use super::consumer::{self, FirstPoll, Shared, SpoutContext, Tp};
use super::record::{Message, RecordReader};
use crate::components::{FatalError, Spout, SpoutCollector, SpoutStatus, TaskContext};
use crate::model::plan::{streams, StreamId};
use crate::tuple::{Value, Values};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::{Headers as _, Message as _};
use rdkafka::topic_partition_list::TopicPartitionList;
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Messages in flight in one partition past which it is paused (Storm's
/// `maxUncommittedOffsets`, per partition), and below which it goes on again.
const PAUSE_AT: usize = 10_000;
const RESUME_AT: usize = PAUSE_AT / 2;

/// How often acked offsets are committed (without checkpoints).
const COMMIT_EVERY: Duration = Duration::from_millis(500);

type Args = serde_json::Map<String, Json>;

/// What topics the spout reads.
#[derive(Debug, Clone)]
enum Topics {
    Named(Vec<String>),
    Pattern(regex::Regex),
}

/// A tuple in flight: where it came from, and its values for a replay.
#[derive(Debug)]
struct Kept {
    tp: Tp,
    offset: i64,
    epoch: u64,
    values: Values,
    retries: u32,
}

pub(crate) struct KafkaSpout {
    args: Args,
    topics: Topics,
    group: Option<String>,
    first_poll: FirstPoll,
    max_retries: Option<u32>,
    reader: RecordReader,
    label: String,
    shared: Shared,
    consumer: Option<BaseConsumer<SpoutContext>>,
    /// Checkpointed: a fixed share of partitions, offsets in positions.
    checkpointed: bool,
    share: Vec<(String, i32)>,
    started: bool,
    kept: HashMap<u64, Kept>,
    next_id: u64,
    failed: VecDeque<u64>,
    /// A restored position: offsets to start at, and tuples to emit first.
    restored_at: BTreeMap<(String, i32), i64>,
    restored_kept: VecDeque<(Tp, i64, Values)>,
    errors: Option<StreamId>,
    warnings: crate::components::parse::DropWarnings,
    lost: u64,
    last_commit: Instant,
    poll_errors: crate::logging::Throttle,
    /// How often the lag is read (`lag_interval`; zero: never), and its reader.
    lag_every: Duration,
    lag: Option<super::lag::LagPoller>,
}

impl KafkaSpout {
    pub(crate) fn new(args: &Args) -> Result<KafkaSpout, String> {
        super::args::brokers(args)?;
        super::args::options(args)?;
        let topics = super::args::strings(args, "topics")?;
        let topics = match (topics.is_empty(), args.get("topic_pattern")) {
            (false, None) => Topics::Named(topics),
            (true, Some(Json::String(p))) => Topics::Pattern(
                regex::Regex::new(p).map_err(|e| format!("`topic_pattern` is no regex: {e}"))?,
            ),
            (true, Some(_)) => return Err("`topic_pattern` must be a regex string".into()),
            (false, Some(_)) => return Err("give `topics` or `topic_pattern`, not both".into()),
            (true, None) => {
                return Err("needs `topics` (a list) or `topic_pattern` (a regex)".into())
            }
        };
        let first_poll = match args.get("first_poll_offset") {
            None => FirstPoll::UncommittedEarliest,
            Some(v) => v.as_str().and_then(FirstPoll::from_name).ok_or_else(|| {
                format!(
                    "`first_poll_offset` is one of {}",
                    FirstPoll::NAMES.join(", ")
                )
            })?,
        };
        let lag_every = match args.get("lag_interval") {
            None => super::lag::DEFAULT_EVERY,
            Some(v) => crate::config::duration_of(v).ok_or_else(|| {
                format!("`lag_interval` must be a duration (`5s`; 0 turns it off), not {v}")
            })?,
        };
        Ok(KafkaSpout {
            args: args.clone(),
            topics,
            group: args.get("group").and_then(Json::as_str).map(String::from),
            first_poll,
            max_retries: crate::components::replay::max_retries(args),
            reader: RecordReader::new(args)?,
            label: "kafka".into(),
            shared: Shared::new(first_poll, "kafka"),
            consumer: None,
            checkpointed: false,
            share: Vec::new(),
            started: false,
            kept: HashMap::new(),
            next_id: 0,
            failed: VecDeque::new(),
            restored_at: BTreeMap::new(),
            restored_kept: VecDeque::new(),
            errors: None,
            warnings: crate::components::parse::DropWarnings::new("kafka"),
            lost: 0,
            last_commit: Instant::now(),
            poll_errors: crate::logging::Throttle::new(Duration::from_secs(10)),
            lag_every,
            lag: None,
        })
    }

    fn consumer(&self) -> anyhow::Result<&BaseConsumer<SpoutContext>> {
        self.consumer
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("{}: the consumer is not open", self.label))
    }

    /// Start reading: join the group, or (checkpointed) take the share from where the
    /// restored position says.
    fn start(&mut self) -> anyhow::Result<()> {
        self.started = true;
        let consumer = self.consumer()?;
        if self.checkpointed {
            consumer::assign_share(consumer, &self.shared, &self.share, &self.restored_at)
                .map_err(|e| anyhow::anyhow!("{}: {e}", self.label))?;
            return Ok(());
        }
        let names: Vec<String> = match &self.topics {
            Topics::Named(t) => t.clone(),
            // librdkafka reads a subscription that starts with `^` as a regex.
            Topics::Pattern(p) => vec![match p.as_str().starts_with('^') {
                true => p.as_str().to_string(),
                false => format!("^{}", p.as_str()),
            }],
        };
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        consumer
            .subscribe(&names)
            .map_err(|e| anyhow::anyhow!("{}: cannot subscribe to {names:?}: {e}", self.label))
    }

    fn track(&mut self, tp: Tp, offset: i64, epoch: u64, values: Values) -> Value {
        self.next_id += 1;
        let kept = Kept {
            tp,
            offset,
            epoch,
            values,
            retries: 0,
        };
        self.kept.insert(self.next_id, kept);
        Value::Int(self.next_id as i64)
    }

    /// Emit a tuple that failed again, if its partition is still this task's.
    fn replay_one(&mut self, out: &mut dyn SpoutCollector) -> bool {
        while let Some(id) = self.failed.pop_front() {
            let Some(k) = self.kept.get(&id) else {
                continue;
            };
            let owned = self.shared.lock().owned.get(&k.tp).map(|o| o.epoch);
            if owned != Some(k.epoch) {
                // The partition went to another task, which reads it again from the commit.
                self.kept.remove(&id);
                continue;
            }
            out.send(
                streams::DEFAULT,
                k.values.clone(),
                Some(Value::Int(id as i64)),
            );
            return true;
        }
        false
    }

    /// Emit a tuple a restored position kept.
    fn restored_one(&mut self, out: &mut dyn SpoutCollector) -> bool {
        let Some((tp, offset, values)) = self.restored_kept.pop_front() else {
            return false;
        };
        let epoch = {
            let mut shared = self.shared.lock();
            match shared.owned.get_mut(&tp) {
                Some(o) => {
                    o.offsets.emitted(offset, 1);
                    o.epoch
                }
                None => return true,
            }
        };
        let id = self.track(tp, offset, epoch, values.clone());
        out.send(streams::DEFAULT, values, Some(id));
        true
    }

    /// Read and emit the next message, if one is there.
    fn poll_one(&mut self, out: &mut dyn SpoutCollector) -> anyhow::Result<bool> {
        let consumer = self
            .consumer
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("not open"))?;
        let msg = match consumer.poll(Duration::ZERO) {
            None => return Ok(false),
            Some(Err(e)) => {
                if let Some(skipped) = self.poll_errors.allow() {
                    tracing::warn!("{}: {e} (retrying; {skipped} more like it)", self.label);
                }
                return Ok(false);
            }
            Some(Ok(m)) => m,
        };
        let tp: Tp = (Arc::from(msg.topic()), msg.partition());
        let headers = match (self.reader.wants_headers(), msg.headers()) {
            (true, Some(h)) => h.iter().map(|h| (h.key, h.value)).collect(),
            _ => Vec::new(),
        };
        let message = Message {
            payload: msg.payload(),
            key: msg.key(),
            partition: msg.partition(),
            offset: msg.offset(),
            timestamp: msg.timestamp().to_millis(),
            headers,
        };
        let read = self.reader.read(&message);
        let offset = msg.offset();
        let payload = msg
            .payload()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        drop(msg);
        let epoch = {
            let shared = self.shared.lock();
            match shared.owned.get(&tp) {
                Some(o) => o.epoch,
                None => return Ok(true),
            }
        };
        let tuples = match read {
            Ok(tuples) => tuples,
            Err(reason) => {
                let text = payload.unwrap_or_default();
                self.poison(&tp, offset, &text, &reason, out)?;
                Vec::new()
            }
        };
        let n = tuples.len() as u32;
        if let Some(o) = self.shared.lock().owned.get_mut(&tp) {
            o.offsets.emitted(offset, n);
        }
        for values in tuples {
            self.warnings.read();
            let id = self.track(tp.clone(), offset, epoch, values.clone());
            out.send(streams::DEFAULT, values, Some(id));
        }
        self.pause_if_full(&tp);
        Ok(true)
    }

    /// A message that cannot be read: to `errors`, or dropped and counted.
    fn poison(
        &mut self,
        tp: &Tp,
        offset: i64,
        text: &str,
        reason: &str,
        out: &mut dyn SpoutCollector,
    ) -> Result<(), FatalError> {
        let reason = format!("{}/{} offset {offset}: {reason}", tp.0, tp.1);
        match self.errors {
            Some(stream) => {
                out.send(
                    stream,
                    smallvec::smallvec![Value::str(text), Value::str(&reason)],
                    None,
                );
                Ok(())
            }
            None => {
                out.dropped(1);
                self.warnings.dropped(offset.max(0) as u64, text, &reason)
            }
        }
    }

    fn pause_if_full(&mut self, tp: &Tp) {
        let mut shared = self.shared.lock();
        let Some(o) = shared.owned.get_mut(tp) else {
            return;
        };
        if o.paused || o.offsets.in_flight() < PAUSE_AT {
            return;
        }
        o.paused = true;
        drop(shared);
        self.set_paused(tp, true);
    }

    fn set_paused(&self, tp: &Tp, pause: bool) {
        let Some(consumer) = &self.consumer else {
            return;
        };
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition(&tp.0, tp.1);
        let r = match pause {
            true => consumer.pause(&tpl),
            false => consumer.resume(&tpl),
        };
        if let Err(e) = r {
            tracing::warn!("{}: cannot pause/resume {}/{}: {e}", self.label, tp.0, tp.1);
        }
    }

    /// Resume the paused partitions whose messages in flight drained.
    fn resume_drained(&mut self) {
        let drained: Vec<Tp> = {
            let mut shared = self.shared.lock();
            shared
                .owned
                .iter_mut()
                .filter(|(_, o)| o.paused && o.offsets.in_flight() <= RESUME_AT)
                .map(|(tp, o)| {
                    o.paused = false;
                    tp.clone()
                })
                .collect()
        };
        for tp in drained {
            self.set_paused(&tp, false);
        }
    }

    /// Commit what the acks allow (without checkpoints).
    fn commit(&mut self, mode: CommitMode) {
        if self.checkpointed {
            return;
        }
        let tpl = self.shared.lock().commits(None);
        let Some(consumer) = &self.consumer else {
            return;
        };
        if tpl.count() > 0 {
            if let Err(e) = consumer.commit(&tpl, mode) {
                tracing::warn!("{}: cannot commit offsets: {e}", self.label);
            }
        }
    }

    /// The message of tuple `id` is done with (acked or given up on).
    fn done(&mut self, id: u64) {
        let Some(k) = self.kept.remove(&id) else {
            return;
        };
        let mut shared = self.shared.lock();
        if let Some(o) = shared.owned.get_mut(&k.tp).filter(|o| o.epoch == k.epoch) {
            o.offsets.done(k.offset);
        }
    }
}

/// The tuple id a message id carries.
fn id_of(msg_id: &Value) -> Option<u64> {
    match msg_id {
        Value::Int(n) if *n > 0 => Some(*n as u64),
        _ => None,
    }
}

impl Spout for KafkaSpout {
    fn open(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.label = format!("{} task {}", ctx.component, ctx.task_id);
        self.shared = Shared::new(self.first_poll, &self.label);
        self.errors = crate::components::wired_stream(ctx, crate::components::parse::ERRORS_STREAM);
        self.warnings = crate::components::parse::DropWarnings::for_task(ctx);
        self.warnings.judge_input = false;
        if let Some(max) = ctx.config.get_u64(crate::components::parse::MAX_RECORD_KEY) {
            self.reader
                .set_max_record(usize::try_from(max).unwrap_or(usize::MAX));
        }
        self.checkpointed = ctx.topology.is_stateful();
        let group = match &self.group {
            Some(g) => g.clone(),
            None => format!("storm-{}-{}", ctx.topology.name, ctx.component),
        };
        let config =
            super::args::client_config(&self.args, &[]).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut lag_config = config.clone();
        lag_config.set("group.id", &group);
        let consumer = consumer::connect(config, &group, self.first_poll, self.shared.clone())
            .map_err(FatalError)?;
        if !self.lag_every.is_zero() {
            let committed = match self.checkpointed {
                true => super::lag::Committed::CommitPoint,
                false => super::lag::Committed::Group,
            };
            let poller = super::lag::LagPoller::start(
                &lag_config,
                committed,
                self.shared.clone(),
                self.lag_every,
                &self.label,
            );
            self.lag = Some(poller.map_err(|e| anyhow::anyhow!("{}: {e}", self.label))?);
        }
        let topics = match &self.topics {
            Topics::Named(t) => t.clone(),
            Topics::Pattern(p) => consumer::matching_topics(&consumer, p).map_err(FatalError)?,
        };
        if topics.is_empty() {
            let what = match self.checkpointed {
                true => "a checkpointed run reads the topics there are at its start",
                false => "waiting for one to be made",
            };
            tracing::warn!(
                "{}: no topic matches `topic_pattern`: {what}",
                ctx.component
            );
        }
        // Every topic named must exist (a pattern's matched ones do).
        let partitions = consumer::partitions_of(&consumer, &topics).map_err(FatalError)?;
        let tasks = ctx.spec().map_or(1, |c| c.tasks);
        self.share = consumer::share(&partitions, ctx.task_index, tasks);
        self.consumer = Some(consumer);
        Ok(())
    }

    fn next_tuple(&mut self, out: &mut dyn SpoutCollector) -> anyhow::Result<SpoutStatus> {
        if !self.started {
            self.start()?;
        }
        if self.replay_one(out) || self.restored_one(out) {
            return Ok(SpoutStatus::Busy);
        }
        if self.last_commit.elapsed() >= COMMIT_EVERY {
            self.last_commit = Instant::now();
            self.commit(CommitMode::Async);
            self.resume_drained();
            if let Some(lag) = self.lag.as_ref().and_then(|l| l.take()) {
                out.lag(lag);
            }
        }
        match self.poll_one(out)? {
            true => Ok(SpoutStatus::Busy),
            false => Ok(SpoutStatus::Idle),
        }
    }

    fn ack(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        if let Some(id) = id_of(&msg_id) {
            self.done(id);
        }
        Ok(())
    }

    fn fail(&mut self, msg_id: Value, out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        let Some(id) = id_of(&msg_id) else {
            return Ok(());
        };
        let Some(k) = self.kept.get_mut(&id) else {
            return Ok(());
        };
        k.retries += 1;
        let retries = k.retries;
        if self.max_retries.is_none_or(|m| retries <= m) {
            self.failed.push_back(id);
            return Ok(());
        }
        // Given up: to `errors` with why, or counted as lost; either way its offset is done.
        let (tp, offset) = (k.tp.clone(), k.offset);
        let line = Value::List(Box::new(k.values.to_vec()))
            .to_json()
            .to_string();
        let reason = format!(
            "{}/{} offset {offset}: failed {retries} times (max_retries {})",
            tp.0,
            tp.1,
            retries - 1
        );
        match self.errors {
            Some(stream) => out.send(
                stream,
                smallvec::smallvec![Value::str(&line), Value::str(&reason)],
                None,
            ),
            None => {
                self.lost += 1;
                tracing::warn!("{}: gave up on a tuple: {reason}", self.label);
            }
        }
        self.done(id);
        Ok(())
    }

    fn lost(&self) -> u64 {
        self.lost
    }

    fn position(&mut self) -> Option<Value> {
        Some(position_of(self))
    }

    fn restore(&mut self, position: Value) -> anyhow::Result<()> {
        restore(self, position).map_err(|e| anyhow::anyhow!("{}: cannot resume: {e}", self.label))
    }

    fn close(&mut self) {
        self.commit(CommitMode::Sync);
    }
}

/// A checkpoint's position: `partitions`, a list of `[topic, partition, next]` (the offset
/// after the last message emitted), and `kept`, a list of `[topic, partition, offset, values]`
/// of the tuples not acked (in flight, or failed and waiting), oldest first.
fn position_of(spout: &KafkaSpout) -> Value {
    let s = |t: &str| Value::str(t);
    let mut partitions = Vec::new();
    if spout.started {
        for ((topic, p), o) in &spout.shared.lock().owned {
            if let Some(next) = o.offsets.next() {
                partitions.push(Value::List(Box::new(vec![
                    s(topic),
                    Value::Int(i64::from(*p)),
                    Value::Int(next),
                ])));
            }
        }
    }
    // Not started (restored, nothing read yet): the restored offsets still hold.
    for ((topic, p), at) in spout.restored_at.iter().filter(|_| !spout.started) {
        partitions.push(Value::List(Box::new(vec![
            s(topic),
            Value::Int(i64::from(*p)),
            Value::Int(*at),
        ])));
    }
    let mut ids: Vec<&u64> = spout.kept.keys().collect();
    ids.sort();
    let item = |tp: &Tp, offset: i64, values: &Values| {
        Value::List(Box::new(vec![
            s(&tp.0),
            Value::Int(i64::from(tp.1)),
            Value::Int(offset),
            Value::List(Box::new(values.to_vec())),
        ]))
    };
    let mut kept: Vec<Value> = ids
        .into_iter()
        .filter_map(|id| spout.kept.get(id))
        .map(|k| item(&k.tp, k.offset, &k.values))
        .collect();
    kept.extend(spout.restored_kept.iter().map(|(tp, o, v)| item(tp, *o, v)));
    let mut map = BTreeMap::new();
    map.insert("input".to_string(), Value::str("kafka"));
    map.insert("partitions".to_string(), Value::List(Box::new(partitions)));
    map.insert("kept".to_string(), Value::List(Box::new(kept)));
    Value::Map(Box::new(map))
}

/// Go on from a position (before reading started).
fn restore(spout: &mut KafkaSpout, position: Value) -> Result<(), String> {
    let Value::Map(map) = position else {
        return Err("the position is not a map".into());
    };
    if map.get("input").and_then(Value::as_str) != Some("kafka") {
        return Err("the position is not of a `kafka` spout".into());
    }
    let list = |key: &str| match map.get(key) {
        Some(Value::List(items)) => Ok(items.as_slice()),
        None => Ok(&[][..]),
        Some(_) => Err(format!("the position's {key} is not a list")),
    };
    for item in list("partitions")? {
        match item {
            Value::List(v) => match v.as_slice() {
                [Value::Str(t), Value::Int(p), Value::Int(next)] => {
                    spout.restored_at.insert((t.to_string(), *p as i32), *next);
                }
                _ => {
                    return Err(
                        "a partition of the position is not [topic, partition, offset]".into(),
                    )
                }
            },
            _ => return Err("a partition of the position is not a list".into()),
        }
    }
    for item in list("kept")? {
        match item {
            Value::List(v) => match v.as_slice() {
                [Value::Str(t), Value::Int(p), Value::Int(o), Value::List(values)] => {
                    let tp: Tp = (Arc::from(t.as_str()), *p as i32);
                    spout
                        .restored_kept
                        .push_back((tp, *o, values.iter().cloned().collect()));
                }
                _ => return Err("a kept tuple is not [topic, partition, offset, values]".into()),
            },
            _ => return Err("a kept tuple of the position is not a list".into()),
        }
    }
    Ok(())
}
