//! The `http` sink with state (`stateful: true`): the records since the last checkpoint are
//! cut into batches when a checkpoint saves, each keyed `EPOCH-TASK-N` (the epoch is drawn
//! when the state starts, so a state dir started over does not reuse keys), and saved in it;
//! a batch is sent once its checkpoint commits, and dropped from the state once a 2xx answers
//! it. A resumed run sends again every batch its checkpoint still holds, with the same keys:
//! a receiver that drops keys it has seen gets each record once.

use super::sender::Outcome;
use super::HttpSink;
use crate::components::{BoltCollector, BoltState, TaskContext};
use crate::tuple::{Tuple, Value};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

const STATE_KEY: &str = "http_sink";
/// How long the end of a run waits for its last checkpoint to commit, and then for answers.
const END_WAIT: Duration = Duration::from_secs(60);

/// A batch with its key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Keyed {
    key: String,
    records: Vec<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    epoch: String,
    n: u64,
    batches: Vec<Keyed>,
}

#[derive(Default)]
pub(crate) struct Txn {
    epoch: String,
    task: u32,
    n: u64,
    /// Records since the last save.
    pub(crate) open: Vec<String>,
    prepared: Option<Vec<Keyed>>,
    ready: VecDeque<(u64, Vec<Keyed>)>,
    /// Sent and not yet answered, by request id.
    sent: HashMap<u64, Keyed>,
    last_marker: Option<u64>,
    pub(crate) finished: bool,
    saved_after_finish: bool,
}

impl Txn {
    pub(crate) fn start(&mut self, ctx: &TaskContext) {
        self.task = ctx.task_index;
        if self.epoch.is_empty() {
            self.epoch = format!("{:016x}", rand::random::<u64>());
        }
    }

    pub(crate) fn marker(&mut self, txid: u64) {
        if let Some(b) = self.prepared.take() {
            self.ready.push_back((txid, b));
        }
        self.last_marker = Some(txid);
    }

    /// Every batch not yet answered with a 2xx or a 4xx.
    fn unsent(&self) -> Vec<Keyed> {
        let mut out: Vec<Keyed> = self.sent.values().cloned().collect();
        out.extend(self.ready.iter().flat_map(|r| r.1.iter().cloned()));
        out.extend(self.prepared.iter().flatten().cloned());
        out
    }

    /// Cut the open records into keyed batches.
    fn cut(&mut self, max_records: usize, max_bytes: usize) -> Vec<Keyed> {
        let records = std::mem::take(&mut self.open);
        super::body::cut(records, max_records, max_bytes)
            .into_iter()
            .map(|records| {
                self.n += 1;
                Keyed {
                    key: format!("{}-{}-{}", self.epoch, self.task, self.n),
                    records,
                }
            })
            .collect()
    }
}

impl HttpSink {
    fn txn_mut(&mut self) -> anyhow::Result<&mut Txn> {
        self.txn
            .as_mut()
            .ok_or_else(|| anyhow::anyhow!("not stateful"))
    }

    /// Send `batches` (committed).
    fn send_batches(&mut self, batches: Vec<Keyed>) -> anyhow::Result<()> {
        for b in batches {
            let id = self.submit(b.key.clone(), &b.records);
            self.txn_mut()?.sent.insert(id, b);
        }
        Ok(())
    }

    /// Send the batches of every checkpoint committed by now.
    pub(super) fn send_committed(&mut self) -> anyhow::Result<()> {
        let committed = crate::components::committed::last();
        let t = self.txn_mut()?;
        let mut due = Vec::new();
        while t.ready.front().is_some_and(|r| r.0 <= committed) {
            due.extend(t.ready.pop_front().map(|r| r.1).unwrap_or_default());
        }
        self.send_batches(due)
    }

    pub(super) fn answered_stateful(
        &mut self,
        id: u64,
        outcome: Outcome,
        out: Option<&mut dyn BoltCollector>,
    ) -> anyhow::Result<()> {
        let Some(batch) = self.txn_mut()?.sent.remove(&id) else {
            return Ok(());
        };
        match outcome {
            Outcome::Delivered => Ok(()),
            Outcome::Rejected { reason, .. } => {
                let no_tuples: Vec<Tuple> = Vec::new();
                match out {
                    Some(out) => self.reject(&batch.records, &no_tuples, &reason, out),
                    None => tracing::warn!("{}: batch {} was refused: {reason}", self.label, batch.key),
                }
                Ok(())
            }
            Outcome::GaveUp(why) => Err(self.fatal(format!(
                "batch {} was not delivered: {why} (the state keeps it: a run resumed from the state dir sends it again)",
                batch.key
            ))),
        }
    }

    /// The end of the run, with state: once the checkpoint saved after `finish` committed,
    /// send what is left and wait (bounded) for the answers.
    pub(super) fn send_at_end(&mut self) -> anyhow::Result<()> {
        let Some(t) = self.txn.as_ref().filter(|t| t.finished) else {
            return Ok(());
        };
        let deadline = Instant::now() + END_WAIT;
        if t.saved_after_finish {
            let after = t.last_marker.unwrap_or(0);
            if !crate::components::committed::wait_for(after + 1, END_WAIT) {
                return Err(self.fatal("the last checkpoint did not commit in time; its batches were not sent (a run resumed from the state dir sends them)"));
            }
        }
        let t = self.txn_mut()?;
        let mut left: Vec<Keyed> = t.ready.drain(..).flat_map(|r| r.1).collect();
        left.extend(t.prepared.take().unwrap_or_default());
        let (m, b) = (self.cfg.batch.max_records, self.cfg.batch.max_bytes);
        left.extend(self.txn_mut()?.cut(m, b));
        self.send_batches(left)?;
        while !self.txn_mut()?.sent.is_empty() {
            let got = self
                .pool
                .as_ref()
                .and_then(|p| p.results.recv_timeout(Duration::from_millis(100)).ok());
            if let Some((id, outcome)) = got {
                self.answered_stateful(id, outcome, None)?;
            } else if Instant::now() > deadline {
                return Err(self.fatal("batches still unanswered at the end of the run"));
            }
        }
        Ok(())
    }
}

impl BoltState for HttpSink {
    fn changes_into(
        &mut self,
        _all: bool,
        sink: &mut crate::components::ChangeSink<'_>,
    ) -> anyhow::Result<()> {
        let (m, b) = (self.cfg.batch.max_records, self.cfg.batch.max_bytes);
        let t = self.txn_mut()?;
        let mut batches = t.prepared.take().unwrap_or_default();
        batches.extend(t.cut(m, b));
        t.prepared = Some(batches);
        t.saved_after_finish |= t.finished;
        let saved = Saved {
            epoch: t.epoch.clone(),
            n: t.n,
            batches: t.unsent(),
        };
        let json = serde_json::to_string(&saved).map_err(|e| self.fatal(e))?;
        sink(&Value::str(STATE_KEY), Some(&Value::str(&json)))
    }

    /// Resume: every batch the checkpoint holds is sent again, with its key.
    fn restore(&mut self, entries: Vec<(Value, Value)>) -> anyhow::Result<()> {
        let Some((_, v)) = entries.iter().find(|(k, _)| k.as_str() == Some(STATE_KEY)) else {
            return Ok(());
        };
        let saved: Saved = serde_json::from_str(v.as_str().unwrap_or_default())
            .map_err(|e| self.fatal(format!("its saved state does not read: {e}")))?;
        let t = self.txn_mut()?;
        t.epoch = saved.epoch;
        t.n = saved.n;
        self.send_batches(saved.batches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_numbered_within_the_epoch() {
        let mut t = Txn {
            epoch: "e".into(),
            task: 2,
            ..Txn::default()
        };
        t.open = vec!["a".into(), "b".into(), "c".into()];
        let keys: Vec<String> = t.cut(2, 1 << 20).into_iter().map(|k| k.key).collect();
        assert_eq!(keys, vec!["e-2-1", "e-2-2"]);
        t.marker(7);
        assert!(t.ready.is_empty());
        t.prepared = Some(vec![Keyed {
            key: "k".into(),
            records: vec![],
        }]);
        t.marker(8);
        assert_eq!(t.ready.len(), 1);
        assert_eq!(t.unsent().len(), 1);
    }
}
