//! The `http` sink bolt: tuples become records (JSON objects, or CSV rows) sent in batches
//! (`batch`: a number of records, of bytes, or a time since the batch's first record), at most
//! `concurrency` requests at once, each batch with an idempotency key (a header) that stays
//! the same on every retry so a receiver can drop a batch it already took. A tuple is acked
//! once its batch got a 2xx; a 4xx sends its records to the `errors` stream (`line`,
//! `reason`) and acks it; a batch out of retries fails its tuples (the spout replays them).
//! With `stateful: true`, batches are cut and keyed at checkpoints and sent once their
//! checkpoint commits (see `txn`): keys then survive restarts too.

mod args;
mod body;
pub(crate) mod builtin;
mod sender;
mod txn;

use crate::components::sink_format::{push_record, RecordFormat};
use crate::components::{Bolt, BoltCollector, BoltState, FatalError, TaskContext};
use crate::model::plan::StreamId;
use crate::tuple::{Tuple, Value};
use args::{BodyFormat, Config};
use sender::{Job, Outcome, Pool, Target};
use std::collections::HashMap;
use std::time::{Duration, Instant};

type Args = serde_json::Map<String, serde_json::Value>;

/// The stream refused records go to, and its fields.
const ERRORS_STREAM: &str = "errors";
const ERROR_FIELDS: &[&str] = &["line", "reason"];

/// A batch being filled (without state).
#[derive(Default)]
struct Open {
    records: Vec<String>,
    tuples: Vec<Tuple>,
    bytes: usize,
    started: Option<Instant>,
}

/// A batch sent and not yet answered.
struct InFlight {
    records: Vec<String>,
    tuples: Vec<Tuple>,
}

struct HttpSink {
    cfg: Config,
    label: String,
    names: Vec<String>,
    pool: Option<Pool>,
    open: Open,
    inflight: HashMap<u64, InFlight>,
    next_id: u64,
    key_prefix: String,
    errors: Option<StreamId>,
    txn: Option<txn::Txn>,
    failures: crate::logging::Throttle,
}

impl HttpSink {
    /// The sink from its arguments (`stateful`: batches sent once their checkpoint commits).
    fn new(args: &Args, stateful: bool) -> Result<HttpSink, String> {
        let cfg = Config::from_args(args).map_err(|e| e.to_string())?;
        Ok(HttpSink {
            cfg,
            label: "http sink".into(),
            names: Vec::new(),
            pool: None,
            open: Open::default(),
            inflight: HashMap::new(),
            next_id: 0,
            key_prefix: String::new(),
            errors: None,
            txn: stateful.then(txn::Txn::default),
            failures: crate::logging::Throttle::new(Duration::from_secs(10)),
        })
    }

    fn fatal(&self, e: impl std::fmt::Display) -> anyhow::Error {
        FatalError(format!("{}: {e}", self.label)).into()
    }

    fn record_format(&self) -> RecordFormat {
        match self.cfg.format {
            BodyFormat::Csv => RecordFormat::Csv,
            _ => RecordFormat::Json,
        }
    }

    /// Hand `records` to a sender under `key`; its id.
    fn submit(&mut self, key: String, records: &[String]) -> u64 {
        self.next_id += 1;
        let body = body::body(self.cfg.format, &self.names, records);
        if let Some(p) = &self.pool {
            p.send(Job {
                id: self.next_id,
                key,
                body,
            });
        }
        self.next_id
    }

    /// Send the open batch (without state).
    fn flush(&mut self) {
        let open = std::mem::take(&mut self.open);
        if open.records.is_empty() {
            return;
        }
        let key = format!("{}-{}", self.key_prefix, self.next_id + 1);
        let id = self.submit(key, &open.records);
        self.inflight.insert(
            id,
            InFlight {
                records: open.records,
                tuples: open.tuples,
            },
        );
    }

    /// Take the senders' answers: ack, route to `errors`, or fail.
    fn drain(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let answers: Vec<(u64, Outcome)> = match &self.pool {
            Some(p) => p.results.try_iter().collect(),
            None => return Ok(()),
        };
        for (id, outcome) in answers {
            self.answered(id, outcome, out)?;
        }
        Ok(())
    }

    fn answered(
        &mut self,
        id: u64,
        outcome: Outcome,
        out: &mut dyn BoltCollector,
    ) -> anyhow::Result<()> {
        if self.txn.is_some() {
            return self.answered_stateful(id, outcome, Some(out));
        }
        let Some(batch) = self.inflight.remove(&id) else {
            return Ok(());
        };
        match outcome {
            Outcome::Delivered => batch.tuples.iter().for_each(|t| out.ack(t)),
            Outcome::Rejected { reason, .. } => {
                self.reject(&batch.records, &batch.tuples, &reason, out);
                batch.tuples.iter().for_each(|t| out.ack(t));
            }
            Outcome::GaveUp(why) => {
                if let Some(n) = self.failures.allow() {
                    tracing::warn!(
                        "{}: a batch was not delivered: {why}; its tuples fail ({n} more)",
                        self.label
                    );
                }
                out.report_error(&format!("{}: {why}", self.label));
                batch.tuples.iter().for_each(|t| out.fail(t));
            }
        }
        Ok(())
    }

    /// A refused batch: its records to the `errors` stream (anchored to their tuples).
    fn reject(
        &mut self,
        records: &[String],
        tuples: &[Tuple],
        reason: &str,
        out: &mut dyn BoltCollector,
    ) {
        if let Some(n) = self.failures.allow() {
            tracing::warn!(
                "{}: a batch of {} record(s) was refused: {reason} ({n} more)",
                self.label,
                records.len()
            );
        }
        out.dropped(records.len() as u64);
        let Some(stream) = self.errors else { return };
        for (i, r) in records.iter().enumerate() {
            let anchors: Vec<&Tuple> = tuples.get(i).into_iter().collect();
            out.send(
                stream,
                &anchors,
                vec![Value::str(r), Value::str(reason)].into(),
            );
        }
    }

    /// Wait (bounded by the senders' retries) for an answer, and take it.
    fn wait_one(&mut self, out: &mut dyn BoltCollector, wait: Duration) -> anyhow::Result<bool> {
        let got = match &self.pool {
            Some(p) => p.results.recv_timeout(wait).ok(),
            None => None,
        };
        match got {
            Some((id, outcome)) => {
                self.answered(id, outcome, out)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Requests out at most: `concurrency` sending and as many queued.
    fn max_inflight(&self) -> usize {
        self.cfg.concurrency * 2
    }
}

impl Bolt for HttpSink {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.label = format!("{} task {}", ctx.component, ctx.task_index);
        self.names = crate::components::input_fields(ctx);
        self.errors = crate::components::wired_stream(ctx, ERRORS_STREAM);
        let run: u64 = rand::random();
        self.key_prefix = format!("{run:016x}-{}", ctx.task_index);
        let headers = self.cfg.resolved_headers().map_err(|e| self.fatal(e))?;
        let target = Target {
            url: self.cfg.url.clone(),
            shown_url: args::redact_url(&self.cfg.url),
            method: self.cfg.method.clone(),
            content_type: self.cfg.format.content_type(),
            headers,
            idempotency_header: self.cfg.idempotency_header.clone(),
            retry: self.cfg.retry.clone(),
            timeout: self.cfg.timeout,
        };
        let name = format!("{}-{}", ctx.component, ctx.task_index);
        let pool = Pool::start(target, self.cfg.concurrency, ctx.waker.clone(), &name)
            .map_err(|e| self.fatal(format!("cannot start its senders: {e}")))?;
        self.pool = Some(pool);
        if let Some(t) = self.txn.as_mut() {
            t.start(ctx);
        }
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            if self.txn.is_none() {
                out.ack(input);
            }
            return Ok(());
        }
        let mut record = String::new();
        push_record(
            &mut record,
            self.record_format(),
            &self.names,
            &input.values,
            0,
        );
        if let Some(t) = self.txn.as_mut() {
            t.open.push(record);
            return Ok(());
        }
        let b = &self.cfg.batch;
        if !self.open.records.is_empty() && self.open.bytes + record.len() + 1 > b.max_bytes {
            self.flush();
        }
        self.open.bytes += record.len() + 1;
        self.open.records.push(record);
        self.open.tuples.push(input.clone());
        self.open.started.get_or_insert_with(Instant::now);
        if self.open.records.len() >= self.cfg.batch.max_records {
            self.flush();
        }
        self.drain(out)?;
        // Back-pressure: the executor waits while enough requests are out.
        while self.inflight.len() >= self.max_inflight() {
            self.wait_one(out, Duration::from_millis(100))?;
        }
        Ok(())
    }

    fn poll(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.drain(out)?;
        if self.txn.is_some() {
            return self.send_committed();
        }
        let due = self
            .open
            .started
            .is_some_and(|s| s.elapsed() >= self.cfg.batch.timeout);
        if due {
            self.flush();
        }
        Ok(())
    }

    fn poll_interval(&self) -> Option<Duration> {
        Some(self.cfg.batch.timeout.min(Duration::from_millis(20)))
    }

    fn auto_ack(&self) -> bool {
        false
    }

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if let Some(t) = self.txn.as_mut() {
            t.finished = true;
            return Ok(());
        }
        self.flush();
        while !self.inflight.is_empty() {
            self.wait_one(out, Duration::from_millis(100))?;
        }
        Ok(())
    }

    fn cleanup(&mut self) {
        if let Err(e) = self.send_at_end() {
            tracing::error!("{e:#}");
        }
        if let Some(p) = self.pool.as_mut() {
            p.shut(true);
        }
    }
}

impl crate::components::CheckpointParticipant for HttpSink {
    /// Its held output is state only when it writes exactly once.
    fn state(&mut self) -> Option<&mut dyn BoltState> {
        self.txn.is_some().then_some(self as &mut dyn BoltState)
    }
    fn checkpoint_marker(&mut self, _round: u64, txid: u64) -> anyhow::Result<()> {
        if let Some(t) = self.txn.as_mut() {
            t.marker(txid);
        }
        Ok(())
    }
}

/// The sink for component `c`.
fn bolt(
    c: &crate::model::Component,
) -> anyhow::Result<Box<dyn crate::components::CheckpointParticipant>> {
    Ok(Box::new(
        HttpSink::new(&c.args, c.stateful).map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?,
    ))
}
