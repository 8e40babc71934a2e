//! The `kafka` sink bolt: each tuple becomes one record (its fields as `json`, `csv` or `tsv`,
//! or one `raw` field) on `topic` or the topic a field names, keyed by the `key` field. A
//! tuple is acked only once the broker confirmed its record (failed if it could not take it).
//!
//! With `stateful: true` (or `topology.stateful`) the producer is transactional and commits with the checkpoints (the
//! two-phase commit of Flink's Kafka sink): the records of the inputs before a checkpoint's
//! marker go into one transaction, which is flushed at the marker (the pre-commit) and
//! committed once that checkpoint committed. Records after the marker wait until then (a
//! producer has one transaction open at a time). A resumed run fences and aborts what an
//! earlier run left open, and its replayed inputs produce those records again, so readers
//! with `isolation.level=read_committed` see each once. One window stays: a crash between the
//! checkpoint's commit and the transaction's loses that transaction (librdkafka cannot resume
//! another producer's transaction, as Flink's Java client does).

use crate::components::{Bolt, BoltCollector, FatalError, TaskContext, Waker};
use crate::tuple::{Tuple, Value};
use crossbeam_channel::{Receiver, Sender};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;
use serde_json::Value as Json;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

type Args = serde_json::Map<String, Json>;

/// How long a flush or a transaction's commit may take before the run ends with an error.
const TXN_TIMEOUT: Duration = Duration::from_secs(30);

/// The last checkpoint committed in this process (transactional sinks commit up to it).
static COMMITTED: AtomicU64 = AtomicU64::new(0);

/// Checkpoint `txid` committed: transactional sinks may commit what it covers.
pub fn checkpoint_committed(txid: u64) {
    COMMITTED.fetch_max(txid, Ordering::SeqCst);
}

/// The payload's format.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Format {
    Json,
    Csv,
    Tsv,
    Raw,
}

/// The formats, for messages.
pub const FORMATS: &[&str] = &["json", "csv", "tsv", "raw"];

/// The delivery callback's side: each record's id and its error, if any.
pub struct SinkContext {
    results: Sender<(usize, Option<String>)>,
    waker: Waker,
}

impl ClientContext for SinkContext {}

impl ProducerContext for SinkContext {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, id: usize) {
        let error = result.as_ref().err().map(|(e, _)| e.to_string());
        let _ = self.results.send((id, error));
        self.waker.wake();
    }
}

/// A stateful sink's transactions.
#[derive(Default)]
struct Txn {
    /// The checkpoint whose marker closed the open transaction (`None`: it takes records).
    closing: Option<u64>,
    /// Inputs after that marker, in groups each closed by a later marker (the last one may
    /// be open), sent once the transaction before them committed.
    held: VecDeque<(Option<u64>, Vec<Tuple>)>,
}

pub struct KafkaSink {
    args: Args,
    label: String,
    topic: Option<String>,
    topic_field: Option<(String, usize)>,
    key: Option<(String, usize)>,
    format: Format,
    raw_field: usize,
    names: Vec<String>,
    producer: Option<ThreadedProducer<SinkContext>>,
    results: Option<Receiver<(usize, Option<String>)>>,
    inflight: HashMap<usize, Tuple>,
    next_id: usize,
    txn: Option<Txn>,
    stateful: bool,
    failures: crate::logging::Throttle,
}

impl KafkaSink {
    /// Make the sink from its arguments (`stateful`: transactional, committed with the
    /// checkpoints; its inputs are then acked by the checkpoint gate as they arrive).
    pub fn new(args: &Args, stateful: bool) -> Result<KafkaSink, String> {
        super::args::brokers(args)?;
        super::args::options(args)?;
        let text = |k: &str| args.get(k).and_then(Json::as_str).map(String::from);
        let (topic, topic_field) = (text("topic"), text("topic_field"));
        if topic.is_some() == topic_field.is_some() {
            return Err("needs `topic` (a name) or `topic_field` (a field), one of them".into());
        }
        let format = match args.get("format").map(|f| f.as_str()) {
            None | Some(Some("json")) => Format::Json,
            Some(Some("csv")) => Format::Csv,
            Some(Some("tsv")) => Format::Tsv,
            Some(Some("raw")) => Format::Raw,
            _ => return Err(format!("`format` is one of {}", FORMATS.join(", "))),
        };
        if format == Format::Raw && text("field").is_none() {
            return Err("`format: raw` needs `field` (the field written as the record)".into());
        }
        Ok(KafkaSink {
            args: args.clone(),
            label: "kafka".into(),
            topic,
            topic_field: topic_field.map(|f| (f, 0)),
            key: text("key").map(|k| (k, 0)),
            format,
            raw_field: 0,
            names: Vec::new(),
            producer: None,
            results: None,
            inflight: HashMap::new(),
            next_id: 0,
            txn: None,
            stateful,
            failures: crate::logging::Throttle::new(Duration::from_secs(10)),
        })
    }

    /// The record's payload for `input`.
    fn payload(&self, input: &Tuple) -> String {
        let mut out = String::new();
        match self.format {
            Format::Json => {
                let mut obj = serde_json::Map::new();
                for (name, v) in self.names.iter().zip(input.values.iter()) {
                    obj.insert(name.clone(), v.to_json());
                }
                out = Json::Object(obj).to_string();
            }
            Format::Csv | Format::Tsv => {
                let mut cell = String::new();
                for (i, v) in input.values.iter().enumerate() {
                    if i > 0 {
                        out.push(if self.format == Format::Csv {
                            ','
                        } else {
                            '\t'
                        });
                    }
                    cell.clear();
                    v.write_plain(&mut cell);
                    match self.format {
                        Format::Csv => crate::components::stdout::push_csv_cell(&mut out, &cell),
                        _ => crate::components::stdout::push_tsv_cell(&mut out, &cell),
                    }
                }
            }
            Format::Raw => {
                if let Some(v) = input.values.get(self.raw_field) {
                    v.write_plain(&mut out);
                }
            }
        }
        out
    }

    /// Send `input`'s record; `Ok(false)` when it has no topic (dropped and counted).
    fn send(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let plain = |at: usize| {
            let mut s = String::new();
            if let Some(v) = input.values.get(at).filter(|v| !matches!(v, Value::Null)) {
                v.write_plain(&mut s);
                return Some(s);
            }
            None
        };
        let topic = match (&self.topic, &self.topic_field) {
            (Some(t), _) => Some(t.clone()),
            (None, Some((_, at))) => plain(*at).filter(|t| !t.is_empty()),
            (None, None) => None,
        };
        let Some(topic) = topic else {
            if let Some(n) = self.failures.allow() {
                tracing::warn!(
                    "{}: a tuple has no topic in its topic field; dropped ({n} more)",
                    self.label
                );
            }
            out.dropped(1);
            if !self.stateful {
                out.ack(input);
            }
            return Ok(());
        };
        let key = self.key.as_ref().and_then(|(_, at)| plain(*at));
        let payload = self.payload(input);
        self.next_id += 1;
        let id = self.next_id;
        let producer = self
            .producer
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("{}: the producer is not open", self.label))?;
        let mut record = BaseRecord::with_opaque_to(&topic, id).payload(&payload);
        if let Some(k) = &key {
            record = record.key(k);
        }
        let deadline = Instant::now() + TXN_TIMEOUT;
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((
                    rdkafka::error::KafkaError::MessageProduction(
                        rdkafka::types::RDKafkaErrorCode::QueueFull,
                    ),
                    back,
                )) if Instant::now() < deadline => {
                    // The producer's queue is full: wait for deliveries to make room.
                    record = back;
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err((e, _)) => {
                    return Err(FatalError(format!(
                        "{}: cannot produce to `{topic}`: {e}",
                        self.label
                    ))
                    .into())
                }
            }
        }
        if !self.stateful {
            self.inflight.insert(id, input.clone());
        }
        Ok(())
    }

    /// Ack or fail the tuples whose delivery was reported. (A stateful sink's inputs were
    /// acked as they arrived; a record not delivered fails its transaction's commit.)
    fn drain_results(&mut self, out: &mut dyn BoltCollector) {
        let Some(results) = &self.results else { return };
        while let Ok((id, error)) = results.try_recv() {
            if let Some(e) = &error {
                if let Some(n) = self.failures.allow() {
                    tracing::warn!("{}: a record was not delivered: {e} ({n} more)", self.label);
                }
            }
            let Some(tuple) = self.inflight.remove(&id) else {
                continue;
            };
            match error {
                None => out.ack(&tuple),
                Some(_) => out.fail(&tuple),
            }
        }
    }

    fn producer(&self) -> anyhow::Result<&ThreadedProducer<SinkContext>> {
        self.producer
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("{}: the producer is not open", self.label))
    }

    /// Commit the transactions whose checkpoint committed; send what waited for them.
    fn commit_covered(&mut self, out: &mut dyn BoltCollector, wait: bool) -> anyhow::Result<()> {
        loop {
            let Some(closing) = self.txn.as_ref().and_then(|t| t.closing) else {
                return Ok(());
            };
            let deadline = Instant::now() + TXN_TIMEOUT;
            while COMMITTED.load(Ordering::SeqCst) < closing {
                if !wait {
                    return Ok(());
                }
                if Instant::now() > deadline {
                    return Err(FatalError(format!(
                        "{}: checkpoint {closing} did not commit within {}s; its transaction is left to abort",
                        self.label,
                        TXN_TIMEOUT.as_secs()
                    ))
                    .into());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let producer = self.producer()?;
            producer
                .commit_transaction(TXN_TIMEOUT)
                .and_then(|()| producer.begin_transaction())
                .map_err(|e| {
                    FatalError(format!(
                        "{}: cannot commit the transaction of checkpoint {closing}: {e}",
                        self.label
                    ))
                })?;
            self.drain_results(out);
            let next = self.txn.as_mut().and_then(|t| t.held.pop_front());
            let (closing, tuples) = next.unwrap_or((None, Vec::new()));
            if let Some(t) = self.txn.as_mut() {
                t.closing = closing;
            }
            for tuple in &tuples {
                self.send(tuple, out)?;
            }
        }
    }
}

impl Bolt for KafkaSink {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.label = format!("{} task {}", ctx.component, ctx.task_id);
        self.names = crate::components::input_fields(ctx);
        let at = |name: &str| -> anyhow::Result<usize> {
            Ok(crate::components::input_positions(ctx, &[name])?[0])
        };
        if let Some((f, i)) = &mut self.topic_field {
            *i = at(f)?;
        }
        if let Some((f, i)) = &mut self.key {
            *i = at(f)?;
        }
        if let Some(f) = self.args.get("field").and_then(Json::as_str) {
            self.raw_field = at(f)?;
        }
        let mut defaults = vec![("enable.idempotence", "true")];
        let txn_id = format!(
            "storm-{}-{}-{}",
            ctx.topology.name, ctx.component, ctx.task_index
        );
        if self.stateful {
            defaults.push(("transactional.id", &txn_id));
        }
        let config = super::args::client_config(&self.args, &defaults)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let context = SinkContext {
            results: tx,
            waker: ctx.waker.clone(),
        };
        let producer: ThreadedProducer<SinkContext> = config
            .create_with_context(context)
            .map_err(|e| FatalError(format!("cannot make a Kafka producer: {e}")))?;
        let brokers = super::args::brokers(&self.args).unwrap_or_default();
        producer
            .client()
            .fetch_metadata(None, super::args::START_TIMEOUT)
            .map_err(|e| {
                FatalError(format!(
                    "no Kafka broker answered at {brokers} within {}s: {e}",
                    super::args::START_TIMEOUT.as_secs()
                ))
            })?;
        if self.stateful {
            // Fences an earlier run's producer and aborts what it left open.
            producer
                .init_transactions(TXN_TIMEOUT)
                .and_then(|()| producer.begin_transaction())
                .map_err(|e| FatalError(format!("cannot start a transaction: {e}")))?;
            self.txn = Some(Txn::default());
        }
        self.producer = Some(producer);
        self.results = Some(rx);
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            if !self.stateful {
                out.ack(input);
            }
            return Ok(());
        }
        if let Some(t) = self.txn.as_mut().filter(|t| t.closing.is_some()) {
            match t.held.back_mut() {
                Some((None, group)) => group.push(input.clone()),
                _ => t.held.push_back((None, vec![input.clone()])),
            }
            return Ok(());
        }
        self.send(input, out)?;
        self.drain_results(out);
        Ok(())
    }

    fn poll(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.drain_results(out);
        self.commit_covered(out, false)
    }

    fn poll_interval(&self) -> Option<Duration> {
        Some(Duration::from_millis(if self.txn.is_some() {
            2
        } else {
            50
        }))
    }

    fn auto_ack(&self) -> bool {
        false
    }

    fn checkpoint_marker(&mut self, _round: u64, txid: u64) -> anyhow::Result<()> {
        let Some(t) = self.txn.as_mut() else {
            return Ok(());
        };
        if t.closing.is_none() {
            t.closing = Some(txid);
            // The pre-commit: what the transaction holds is on the brokers before the
            // checkpoint can commit.
            let producer = self.producer()?;
            producer.flush(TXN_TIMEOUT).map_err(|e| {
                FatalError(format!(
                    "{}: cannot flush before checkpoint {txid}: {e}",
                    self.label
                ))
            })?;
            return Ok(());
        }
        match t.held.back_mut() {
            Some((closing @ None, _)) => *closing = Some(txid),
            _ => t.held.push_back((Some(txid), Vec::new())),
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.txn.is_some() {
            self.commit_covered(out, true)?;
            // The run ended cleanly: its last checkpoint covers what the open transaction holds.
            let producer = self.producer()?;
            producer.commit_transaction(TXN_TIMEOUT).map_err(|e| {
                FatalError(format!(
                    "{}: cannot commit the last transaction: {e}",
                    self.label
                ))
            })?;
            self.txn = None;
        }
        let producer = self.producer()?;
        producer.flush(TXN_TIMEOUT).map_err(|e| {
            FatalError(format!(
                "{}: records not delivered at the end: {e}",
                self.label
            ))
        })?;
        self.drain_results(out);
        Ok(())
    }

    fn cleanup(&mut self) {
        if let Some(p) = &self.producer {
            let _ = p.flush(Duration::from_secs(5));
        }
    }
}
