//! The `kafka` sink bolt: each tuple becomes one record (its fields as `json`, `csv` or `tsv`,
//! or one `raw` field) on `topic` or the topic a field names, keyed by the `key` field. A
//! tuple is acked only once the broker confirmed its record (failed if it could not take it).
//!
//! With `stateful: true` (or `topology.stateful`) the producer is transactional and writes
//! with the checkpoints, in two phases: the records of the inputs before a checkpoint are set
//! aside when the checkpoint saves the sink's state, and saved in it (the pre-commit); once
//! that checkpoint committed they are written in one transaction with a commit marker (see
//! `commits`). A sink resumed from a checkpoint writes its held records whose marker is not in
//! Kafka, and produces the records after it again from its replayed inputs, so readers with
//! `isolation.level=read_committed` see each record once, and each checkpoint's records all at
//! once. (Producing into the transaction before the commit, as Flink does, needs to resume the
//! transaction after a crash, which librdkafka cannot.)

use super::commits::Record;
use crate::components::committed;
use crate::components::{Bolt, BoltCollector, BoltState, FatalError, TaskContext, Waker};
use crate::tuple::{Tuple, Value};
use crossbeam_channel::{Receiver, Sender};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::time::{Duration, Instant};

type Args = serde_json::Map<String, Json>;

/// How long a flush or a transaction's commit may take before the run ends with an error.
const TXN_TIMEOUT: Duration = Duration::from_secs(30);

/// The payload's format.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Format {
    Json,
    Csv,
    Tsv,
    Raw,
}

/// The formats, for messages.
const FORMATS: &[&str] = &["json", "csv", "tsv", "raw"];

/// The delivery callback's side: each record's id and its error, if any.
struct SinkContext {
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

/// A stateful sink's records until their checkpoint commits (the sink's number of a
/// checkpoint is the marker its transaction carries).
#[derive(Default)]
struct Txn {
    held: crate::components::held::Held<Record>,
    /// Where the markers go, and this sink's `transactional.id` (their key).
    marker_topic: String,
    txn_id: String,
}

pub(crate) struct KafkaSink {
    args: Args,
    label: String,
    topic: Option<String>,
    topic_field: Option<(String, usize)>,
    key: Option<(String, usize)>,
    /// `headers_field`: a field holding a map of header name to value.
    headers_field: Option<(String, usize)>,
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
    pub(crate) fn new(args: &Args, stateful: bool) -> Result<KafkaSink, String> {
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
            headers_field: text("headers_field").map(|k| (k, 0)),
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

    /// `input`'s record; `None` when it has no topic (dropped, counted, and acked).
    fn record_of(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> Option<Record> {
        let plain = |at: usize| {
            let v = input.values.get(at).filter(|v| !matches!(v, Value::Null))?;
            let mut s = String::new();
            v.write_plain(&mut s);
            Some(s)
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
            return None;
        };
        Some(Record {
            topic,
            key: self.key.as_ref().and_then(|(_, at)| plain(*at)),
            payload: self.payload(input),
            headers: self.headers_of(input),
        })
    }

    /// The headers `headers_field` holds in `input`: each entry of its map, values as text
    /// (null and a field that is no map: none).
    fn headers_of(&self, input: &Tuple) -> Vec<(String, String)> {
        let Some((_, at)) = &self.headers_field else {
            return Vec::new();
        };
        let Some(Value::Map(map)) = input.values.get(*at) else {
            return Vec::new();
        };
        map.iter()
            .filter(|(_, v)| !matches!(v, Value::Null))
            .map(|(n, v)| {
                let mut s = String::new();
                v.write_plain(&mut s);
                (n.clone(), s)
            })
            .collect()
    }

    /// Hand `record` to the producer, its delivery reported under `id`.
    fn produce(&self, record: &Record, id: usize) -> anyhow::Result<()> {
        let producer = self.producer()?;
        let mut r = BaseRecord::with_opaque_to(&record.topic, id).payload(&record.payload);
        if let Some(k) = &record.key {
            r = r.key(k);
        }
        if !record.headers.is_empty() {
            let headers = record.headers.iter().fold(
                rdkafka::message::OwnedHeaders::new_with_capacity(record.headers.len()),
                |h, (n, v)| {
                    h.insert(rdkafka::message::Header {
                        key: n,
                        value: Some(v),
                    })
                },
            );
            r = r.headers(headers);
        }
        let deadline = Instant::now() + TXN_TIMEOUT;
        loop {
            match producer.send(r) {
                Ok(()) => return Ok(()),
                Err((
                    rdkafka::error::KafkaError::MessageProduction(
                        rdkafka::types::RDKafkaErrorCode::QueueFull,
                    ),
                    back,
                )) if Instant::now() < deadline => {
                    // The producer's queue is full: wait for deliveries to make room.
                    r = back;
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err((e, _)) => {
                    return Err(FatalError(format!(
                        "{}: cannot produce to `{}`: {e}",
                        self.label, record.topic
                    ))
                    .into())
                }
            }
        }
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

    /// Write the records of each checkpoint that committed, one transaction each; with
    /// `wait`, wait (bounded) for the last one marked to commit.
    fn commit_covered(&mut self, wait: bool) -> anyhow::Result<()> {
        let Some(last) = self.txn.as_ref().and_then(|t| t.held.last_ready()) else {
            return Ok(());
        };
        if wait && !committed::wait_for(last, TXN_TIMEOUT) {
            return Err(FatalError(format!(
                "{}: checkpoint {last} did not commit within {}s; its records are not written",
                self.label,
                TXN_TIMEOUT.as_secs()
            ))
            .into());
        }
        let committed = committed::last();
        loop {
            let due = self.txn.as_mut().and_then(|t| t.held.due(committed));
            let Some((txid, (number, records))) = due else {
                return Ok(());
            };
            self.write_transaction(&records, number)
                .map_err(|e| FatalError(format!("{}: checkpoint {txid}: {e}", self.label)))?;
            if !records.is_empty() {
                tracing::debug!(txid, records = records.len(), "kafka transaction committed");
            }
        }
    }

    /// Write `records` in one transaction with the marker of checkpoint `number`.
    fn write_transaction(&mut self, records: &[Record], number: u64) -> Result<(), String> {
        if records.is_empty() {
            return Ok(());
        }
        let Some(t) = self.txn.as_ref() else {
            return Err("the sink is not transactional".into());
        };
        let marker = Record {
            topic: t.marker_topic.clone(),
            key: Some(t.txn_id.clone()),
            payload: number.to_string(),
            headers: Vec::new(),
        };
        let producer = self.producer().map_err(|e| e.to_string())?;
        producer
            .begin_transaction()
            .map_err(|e| format!("cannot begin a transaction: {e}"))?;
        for r in records.iter().chain([&marker]) {
            self.next_id += 1;
            self.produce(r, self.next_id).map_err(|e| e.to_string())?;
        }
        let producer = self.producer().map_err(|e| e.to_string())?;
        producer
            .commit_transaction(TXN_TIMEOUT)
            .map_err(|e| format!("cannot commit the transaction: {e}"))
    }

    /// The topic of the commit markers: `commits_topic`, else `<topic>.storm-commits` (or
    /// `storm-commits` with `topic_field`).
    fn marker_topic(&self) -> String {
        match (
            self.args.get("commits_topic").and_then(Json::as_str),
            &self.topic,
        ) {
            (Some(t), _) => t.to_string(),
            (None, Some(t)) => format!("{t}.storm-commits"),
            (None, None) => "storm-commits".to_string(),
        }
    }
}

impl BoltState for KafkaSink {
    /// Every call is a checkpoint's save: the records since the last one are set aside under
    /// the next number, and the state is that number and every checkpoint's records not yet
    /// written (so a crash after the checkpoint commits and before its transaction does loses
    /// nothing).
    fn changes_into(
        &mut self,
        _all: bool,
        sink: &mut crate::components::ChangeSink<'_>,
    ) -> anyhow::Result<()> {
        let Some(t) = self.txn.as_mut() else {
            return Ok(());
        };
        t.held.save_into(sink)
    }

    /// Resume from a checkpoint: its records not marked as written in the marker topic are
    /// written now (each checkpoint in its transaction with its marker), the others dropped.
    fn restore(&mut self, entries: Vec<(Value, Value)>) -> anyhow::Result<()> {
        let Some(t) = self.txn.as_mut() else {
            return Ok(());
        };
        let held = t
            .held
            .restore(&entries)
            .map_err(|e| FatalError(format!("{}: {e}", self.label)))?;
        let (topic, txn_id) = (t.marker_topic.clone(), t.txn_id.clone());
        let config =
            super::args::client_config(&self.args, &[]).map_err(|e| anyhow::anyhow!("{e}"))?;
        let written = super::commits::last_written(&config, &topic, &txn_id, TXN_TIMEOUT)
            .map_err(|e| FatalError(format!("{}: {e}", self.label)))?;
        for (number, records) in held.into_iter().filter(|h| h.0 > written) {
            self.write_transaction(&records, number).map_err(|e| {
                FatalError(format!("{}: checkpoint {number} again: {e}", self.label))
            })?;
            tracing::debug!(
                number,
                records = records.len(),
                "kafka transaction written again"
            );
        }
        Ok(())
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
        if let Some((f, i)) = &mut self.headers_field {
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
                .map_err(|e| FatalError(format!("cannot start a transaction: {e}")))?;
            self.txn = Some(Txn {
                marker_topic: self.marker_topic(),
                txn_id: txn_id.clone(),
                ..Txn::default()
            });
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
        let Some(record) = self.record_of(input, out) else {
            return Ok(());
        };
        if let Some(t) = self.txn.as_mut() {
            t.held.open.push(record);
            return Ok(());
        }
        self.next_id += 1;
        self.produce(&record, self.next_id)?;
        self.inflight.insert(self.next_id, input.clone());
        self.drain_results(out);
        Ok(())
    }

    fn poll(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.drain_results(out);
        self.commit_covered(false)
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

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.txn.is_some() {
            self.commit_covered(true)?;
            // The run ended cleanly: its last checkpoint covers what came after the last marker.
            let open = self.txn.as_mut().map(|t| t.held.rest());
            let (number, records) = open.unwrap_or_default();
            self.write_transaction(&records, number)
                .map_err(|e| FatalError(format!("{}: at the end: {e}", self.label)))?;
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

impl crate::components::CheckpointParticipant for KafkaSink {
    /// Its held output is state only when it writes exactly once.
    fn state(&mut self) -> Option<&mut dyn BoltState> {
        self.txn.is_some().then_some(self as &mut dyn BoltState)
    }
    fn checkpoint_marker(&mut self, _round: u64, txid: u64) -> anyhow::Result<()> {
        if let Some(t) = self.txn.as_mut() {
            t.held.marker(txid);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::CheckpointParticipant;

    fn record(payload: &str) -> Record {
        Record {
            topic: "t".into(),
            key: None,
            payload: payload.into(),
            headers: Vec::new(),
        }
    }

    /// The saved state holds every checkpoint's records not yet written, under the sink's
    /// numbers, and the marker of a checkpoint takes its records for the transaction.
    #[test]
    fn the_state_holds_the_records_not_yet_written() {
        let args = serde_json::json!({"brokers": "x:1", "topic": "t"});
        let mut sink = KafkaSink::new(args.as_object().expect("an object"), true).expect("sink");
        sink.txn = Some(Txn::default());
        let open = |sink: &mut KafkaSink, p: &str| {
            sink.txn.as_mut().expect("txn").held.open.push(record(p));
        };
        open(&mut sink, "a");
        let mut out = Vec::new();
        sink.changes(true, &mut out).expect("changes");
        let saved = crate::components::held::decode(out[1].1.as_ref().expect("held"));
        assert_eq!(saved, Ok(vec![(1, vec![record("a")])]));
        sink.checkpoint_marker(1, 7).expect("marker");
        open(&mut sink, "b");
        // Checkpoint 7 (the sink's 1) is not written yet: it stays in the next save.
        let mut out = Vec::new();
        sink.changes(false, &mut out).expect("changes");
        assert_eq!(out[0], (Value::str("saved"), Some(Value::Int(2))));
        let saved = crate::components::held::decode(out[1].1.as_ref().expect("held"));
        assert_eq!(
            saved,
            Ok(vec![(1, vec![record("a")]), (2, vec![record("b")])])
        );
        sink.checkpoint_marker(2, 8).expect("marker");
        let ready: Vec<(u64, u64)> = sink.txn.as_ref().expect("txn").held.ready().collect();
        assert_eq!(ready, vec![(7, 1), (8, 2)]);
    }
}
