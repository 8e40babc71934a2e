//! The `generate` spout: `args.count` tuples (unbounded if absent) of `args.values` in turn, or
//! of random words, at most `args.rate` per second if set; for tests and benchmarks. Replays
//! failed tuples when acking is on.

use super::{Spout, SpoutCollector, SpoutStatus, TaskContext};
use crate::topology::plan::streams;
use crate::tuple::{Value, Values};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::time::Instant;

/// Words for random tuples (Storm's TestWordSpout list, and a few more).
pub const WORDS: &[&str] = &["nathan", "mike", "jackson", "golda", "bertels"];

pub struct Generate {
    count: Option<u64>,
    values: Vec<Values>,
    rate: Option<f64>,
    emitted: u64,
    started: Option<Instant>,
    rng: SmallRng,
    tracked: bool,
    /// Acking on: tuples in flight by sequence number, with their retry count.
    inflight: FxHashMap<u64, (Values, u32)>,
    replay: VecDeque<u64>,
    max_retries: Option<u32>,
    lost: u64,
}

impl Generate {
    pub fn new(args: &serde_json::Map<String, serde_json::Value>, task_index: u32) -> Generate {
        let values = args
            .get("values")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .map(|v| match v {
                        serde_json::Value::Array(l) => l.iter().map(Value::from_json).collect(),
                        other => smallvec::smallvec![Value::from_json(other)],
                    })
                    .collect()
            })
            .unwrap_or_default();
        let seed = args.get("seed").and_then(|v| v.as_u64()).unwrap_or(42);
        Generate {
            count: args.get("count").and_then(|v| v.as_u64()),
            values,
            rate: args
                .get("rate")
                .and_then(|v| v.as_f64())
                .filter(|r| *r > 0.0),
            emitted: 0,
            started: None,
            rng: SmallRng::seed_from_u64(seed ^ u64::from(task_index)),
            tracked: false,
            inflight: FxHashMap::default(),
            replay: VecDeque::new(),
            max_retries: args
                .get("max_retries")
                .and_then(|v| v.as_u64())
                .map(|v| v as u32),
            lost: 0,
        }
    }

    fn next_values(&mut self) -> Values {
        if self.values.is_empty() {
            smallvec::smallvec![Value::str(WORDS[self.rng.random_range(0..WORDS.len())])]
        } else {
            self.values[(self.emitted % self.values.len() as u64) as usize].clone()
        }
    }
}

impl Spout for Generate {
    fn open(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.tracked = ctx.plan.ackers > 0;
        Ok(())
    }

    fn next_tuple(&mut self, out: &mut dyn SpoutCollector) -> anyhow::Result<SpoutStatus> {
        if let Some(seq) = self.replay.pop_front() {
            if let Some((v, _)) = self.inflight.get(&seq) {
                out.send(streams::DEFAULT, v.clone(), Some(Value::Int(seq as i64)));
            }
            return Ok(SpoutStatus::Busy);
        }
        if self.count.is_some_and(|c| self.emitted >= c) {
            return Ok(SpoutStatus::Exhausted);
        }
        if let Some(rate) = self.rate {
            let start = *self.started.get_or_insert_with(Instant::now);
            let allowed = (start.elapsed().as_secs_f64() * rate) as u64 + 1;
            if self.emitted >= allowed {
                return Ok(SpoutStatus::Idle);
            }
        }
        let values = self.next_values();
        let seq = self.emitted;
        self.emitted += 1;
        if self.tracked {
            self.inflight.insert(seq, (values.clone(), 0));
            out.send(streams::DEFAULT, values, Some(Value::Int(seq as i64)));
        } else {
            out.send(streams::DEFAULT, values, None);
        }
        Ok(SpoutStatus::Busy)
    }

    fn ack(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        if let Value::Int(seq) = msg_id {
            self.inflight.remove(&(seq as u64));
        }
        Ok(())
    }

    fn fail(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        let Value::Int(seq) = msg_id else {
            return Ok(());
        };
        let seq = seq as u64;
        let give_up = match self.inflight.get_mut(&seq) {
            Some((_, retries)) => {
                *retries += 1;
                self.max_retries.is_some_and(|m| *retries > m)
            }
            None => return Ok(()),
        };
        if give_up {
            self.inflight.remove(&seq);
            self.lost += 1;
        } else {
            self.replay.push_back(seq);
        }
        Ok(())
    }

    fn lost(&self) -> u64 {
        self.lost
    }
}
