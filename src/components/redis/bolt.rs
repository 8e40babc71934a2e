//! The `redis` bolt (Storm's `RedisLookupBolt`, `RedisFilterBolt` and `RedisStoreBolt` in
//! one): inputs are gathered into batches (up to [`BATCH`], or what came before the executor
//! went idle) and sent as one pipeline. A lookup adds its answer as the `as` field(s) (or,
//! with `filter`, keeps only the tuples that hit), answers kept in a bounded cache; a write
//! acks its tuples once Redis took the whole pipeline, and fails them (the spout replays) when
//! it could not: at least once. With `stateful: true`, writes are exactly once (see `txn`).

use super::cache::{Answer, Cache};
use super::command::{cmd, Bound};
use super::conn::{self, Conn, ConnError};
use super::spec::{Command, Spec};
use super::txn::{self, Txn};
use crate::components::committed;
use crate::components::{Bolt, BoltCollector, BoltState, FatalError, TaskContext};
use crate::model::plan::streams;
use crate::tuple::{Tuple, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

type Args = serde_json::Map<String, serde_json::Value>;

/// Inputs sent in one pipeline at most.
const BATCH: usize = 512;
/// How long the end of a run waits for its last checkpoint to commit.
const COMMIT_WAIT: Duration = Duration::from_secs(30);

pub(crate) struct RedisBolt {
    args: Args,
    spec: Spec,
    bound: Option<Bound>,
    label: String,
    conn: Option<Conn>,
    cache: Cache,
    pending: Vec<Tuple>,
    txn: Option<Txn>,
    stateful: bool,
    failures: crate::logging::Throttle,
}

impl RedisBolt {
    pub(crate) fn new(args: &Args, stateful: bool) -> Result<RedisBolt, String> {
        let spec = Spec::from_args(args).map_err(|e| e.1)?;
        let ttl = spec.ttl.unwrap_or(super::spec::DEFAULT_CACHE_TTL);
        Ok(RedisBolt {
            args: args.clone(),
            cache: Cache::new(spec.cache, ttl),
            spec,
            bound: None,
            label: "redis".into(),
            conn: None,
            pending: Vec::new(),
            txn: None,
            stateful,
            failures: crate::logging::Throttle::new(Duration::from_secs(10)),
        })
    }

    fn conn(&mut self) -> anyhow::Result<&mut Conn> {
        self.conn
            .as_mut()
            .ok_or_else(|| anyhow::anyhow!("{}: not connected", self.label))
    }

    fn bound(&self) -> anyhow::Result<&Bound> {
        self.bound
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("{}: not prepared", self.label))
    }

    fn warn(&self, what: &str) {
        if let Some(n) = self.failures.allow() {
            tracing::warn!("{}: {what} ({n} more)", self.label);
        }
    }

    /// Send what is pending: lookups or writes.
    fn flush(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.pending);
        match self.spec.command.reads() {
            true => self.flush_reads(batch, out),
            false => self.flush_writes(batch, out),
        }
    }

    fn flush_writes(
        &mut self,
        batch: Vec<Tuple>,
        out: &mut dyn BoltCollector,
    ) -> anyhow::Result<()> {
        let mut pipe = redis::pipe();
        let mut sent = Vec::with_capacity(batch.len());
        for t in batch {
            match self.bound()?.writes(&t.values) {
                Ok(words) => {
                    for w in &words {
                        pipe.add_command(cmd(w)).ignore();
                    }
                    sent.push(t);
                }
                Err(why) => {
                    self.warn(&format!("a tuple cannot be written: {why}; dropped"));
                    out.dropped(1);
                    out.ack(&t);
                }
            }
        }
        if sent.is_empty() {
            return Ok(());
        }
        let label = self.label.clone();
        let done = self.conn()?.with_retry(&label, |con| pipe.query::<()>(con));
        self.settle(done, &sent, out);
        Ok(())
    }

    /// Ack the batch, or fail it (the spout replays) with the reason reported.
    fn settle(
        &mut self,
        done: Result<(), ConnError>,
        batch: &[Tuple],
        out: &mut dyn BoltCollector,
    ) {
        match done {
            Ok(()) => batch.iter().for_each(|t| out.ack(t)),
            Err(e) => {
                let msg = format!("{} tuple(s) failed: {e}", batch.len());
                self.warn(&msg);
                out.report_error(&format!("{}: {msg}", self.label));
                batch.iter().for_each(|t| out.fail(t));
            }
        }
    }

    fn flush_reads(
        &mut self,
        batch: Vec<Tuple>,
        out: &mut dyn BoltCollector,
    ) -> anyhow::Result<()> {
        let now = Instant::now();
        let mut keys = Vec::with_capacity(batch.len());
        let mut asked: HashMap<String, usize> = HashMap::new();
        let mut pipe = redis::pipe();
        let mut answers: Vec<Option<Answer>> = Vec::new();
        for t in &batch {
            let words = self.bound()?.read(&t.values);
            let key = words.join("\u{0}");
            if let Some(a) = self.cache.get(&key, now) {
                keys.push((key, Some(a)));
                continue;
            }
            if !asked.contains_key(&key) {
                asked.insert(key.clone(), asked.len());
                pipe.add_command(cmd(&words));
            }
            keys.push((key, None));
        }
        if !asked.is_empty() {
            let label = self.label.clone();
            let command = self.spec.command;
            let got = self
                .conn()?
                .with_retry(&label, |con| query_answers(command, &pipe, con));
            match got {
                Ok(list) => answers = list.into_iter().map(Some).collect(),
                Err(e) if self.stateful => {
                    return Err(FatalError(format!("{}: a lookup failed: {e}", self.label)).into())
                }
                Err(e) => {
                    self.settle(Err(e), &batch, out);
                    return Ok(());
                }
            }
        }
        for (t, (key, cached)) in batch.iter().zip(keys) {
            let answer = match cached {
                Some(a) => a,
                None => {
                    let i = asked.get(&key).copied().unwrap_or(0);
                    let a = answers.get(i).cloned().flatten().unwrap_or(Answer {
                        values: Vec::new(),
                        hit: false,
                    });
                    self.cache.put(key, a.clone(), now);
                    a
                }
            };
            if answer.hit || !self.spec.filter {
                let mut values = t.values.clone();
                if !self.spec.out.is_empty() {
                    values.extend(answer.values);
                }
                out.send(streams::DEFAULT, &[t], values);
            }
            // A stateful task's inputs are acked by its checkpoint gate.
            if !self.stateful {
                out.ack(t);
            }
        }
        Ok(())
    }

    /// Write the writes of each committed checkpoint; with `wait`, wait (bounded) for the
    /// last one marked to commit.
    fn commit_covered(&mut self, wait: bool) -> anyhow::Result<()> {
        let Some(last) = self.txn.as_ref().and_then(|t| t.held.last_ready()) else {
            return Ok(());
        };
        if wait && !committed::wait_for(last, COMMIT_WAIT) {
            return Err(FatalError(format!(
                "{}: checkpoint {last} did not commit within {}s; its writes are not made",
                self.label,
                COMMIT_WAIT.as_secs()
            ))
            .into());
        }
        let committed = committed::last();
        while let Some((txid, held)) = self.txn.as_mut().and_then(|t| t.held.due(committed)) {
            self.write_held(&held, &format!("checkpoint {txid}"))?;
            if !held.1.is_empty() {
                tracing::debug!(txid, writes = held.1.len(), "redis transaction committed");
            }
        }
        Ok(())
    }

    /// One checkpoint's writes in their transaction; a lost server ends the run (a restart
    /// resumes from the checkpoint and writes them then).
    fn write_held(&mut self, held: &txn::Batch, what: &str) -> anyhow::Result<()> {
        let marker = self
            .txn
            .as_ref()
            .map(|t| t.marker.clone())
            .unwrap_or_default();
        let label = self.label.clone();
        match txn::write(self.conn()?, &marker, held) {
            Ok(()) => Ok(()),
            Err(ConnError::Server(e)) => {
                // EXEC ran every command (Redis does not roll back): the marker is set.
                self.warn(&format!("{what}: Redis refused a command: {e}"));
                Ok(())
            }
            Err(ConnError::Lost(e)) => Err(FatalError(format!("{label}: {what}: {e}")).into()),
        }
    }
}

/// The answers of a pipeline of lookups, in order.
fn query_answers(
    command: Command,
    pipe: &redis::Pipeline,
    con: &mut redis::Connection,
) -> redis::RedisResult<Vec<Answer>> {
    let text = |b: Option<Vec<u8>>| match b {
        Some(b) => crate::components::parse::infer::infer(Value::str(&String::from_utf8_lossy(&b))),
        None => Value::Null,
    };
    Ok(match command {
        Command::Sismember => pipe
            .query::<Vec<bool>>(con)?
            .into_iter()
            .map(|b| Answer {
                values: vec![Value::Bool(b)],
                hit: b,
            })
            .collect(),
        Command::Hmget => pipe
            .query::<Vec<Vec<Option<Vec<u8>>>>>(con)?
            .into_iter()
            .map(|vs| Answer {
                hit: vs.iter().all(Option::is_some),
                values: vs.into_iter().map(text).collect(),
            })
            .collect(),
        _ => pipe
            .query::<Vec<Option<Vec<u8>>>>(con)?
            .into_iter()
            .map(|v| Answer {
                hit: v.is_some(),
                values: vec![text(v)],
            })
            .collect(),
    })
}

impl BoltState for RedisBolt {
    fn changes_into(
        &mut self,
        _all: bool,
        sink: &mut crate::components::ChangeSink<'_>,
    ) -> anyhow::Result<()> {
        if let Some(t) = self.txn.as_mut() {
            t.held.save_into(sink)?;
        }
        Ok(())
    }

    /// Resume: the held writes the marker does not cover are written now, the others dropped.
    fn restore(&mut self, entries: Vec<(Value, Value)>) -> anyhow::Result<()> {
        let Some(t) = self.txn.as_mut() else {
            return Ok(());
        };
        let marker = t.marker.clone();
        let held = t
            .held
            .restore(&entries)
            .map_err(|e| FatalError(format!("{}: {e}", self.label)))?;
        let written = txn::written(self.conn()?, &marker)
            .map_err(|e| FatalError(format!("{}: {e}", self.label)))?;
        for h in held.into_iter().filter(|h| h.0 > written) {
            self.write_held(&h, &format!("checkpoint {} again", h.0))?;
            tracing::debug!(
                number = h.0,
                writes = h.1.len(),
                "redis transaction written again"
            );
        }
        Ok(())
    }
}

impl Bolt for RedisBolt {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.label = format!("{} task {}", ctx.component, ctx.task_id);
        let inputs = crate::components::input_fields(ctx);
        let bound = Bound::new(self.spec.clone(), &inputs)
            .map_err(|e| anyhow::anyhow!("{}: {e}", ctx.component))?;
        self.bound = Some(bound);
        let url = conn::resolve_url(&self.args, Some(&ctx.config));
        let mut c = Conn::new(&url).map_err(|e| FatalError(format!("{}: {e}", ctx.component)))?;
        c.open(conn::START_TIMEOUT)
            .map_err(|e| FatalError(format!("{}: {e}", ctx.component)))?;
        if self.stateful && !self.spec.command.reads() {
            let marker = format!(
                "storm:{}:{}:{}:checkpoint",
                ctx.topology.name, ctx.component, ctx.task_index
            );
            let mut t = Txn::new(marker);
            // A fresh run numbers its checkpoints on from what the marker says.
            t.held.saved = txn::written(&mut c, &t.marker)
                .map_err(|e| FatalError(format!("{}: {e}", ctx.component)))?;
            self.txn = Some(t);
        }
        self.conn = Some(c);
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            if !self.stateful {
                out.ack(input);
            }
            return Ok(());
        }
        if self.txn.is_some() {
            match self.bound()?.writes(&input.values) {
                Ok(w) => self
                    .txn
                    .iter_mut()
                    .for_each(|t| t.held.open.extend(w.iter().cloned())),
                Err(why) => {
                    self.warn(&format!("a tuple cannot be written: {why}; dropped"));
                    out.dropped(1);
                }
            }
            return Ok(());
        }
        self.pending.push(input.clone());
        // Under checkpoints, a lookup answers within its `execute` (the gate's order).
        if self.pending.len() >= BATCH || self.stateful {
            self.flush(out)?;
        }
        Ok(())
    }

    fn poll(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.flush(out)?;
        self.commit_covered(false)
    }

    fn poll_interval(&self) -> Option<Duration> {
        Some(Duration::from_millis(2))
    }

    fn auto_ack(&self) -> bool {
        false
    }

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.flush(out)?;
        if self.txn.is_some() {
            self.commit_covered(true)?;
            // The run ended cleanly: its last checkpoint covers what came after the last marker.
            if let Some(rest) = self.txn.as_mut().map(|t| t.held.rest()) {
                self.write_held(&rest, "the end")?;
            }
        }
        Ok(())
    }
}

impl crate::components::CheckpointParticipant for RedisBolt {
    fn state(&mut self) -> Option<&mut dyn BoltState> {
        match self.txn.is_some() {
            true => Some(self),
            false => None,
        }
    }
    fn checkpoint_marker(&mut self, _round: u64, txid: u64) -> anyhow::Result<()> {
        if let Some(t) = self.txn.as_mut() {
            t.held.marker(txid);
        }
        Ok(())
    }
}
