//! The `generate` spout: `args.count` tuples (unbounded if absent) of `args.values` in turn, or
//! of random words, at most `args.rate` per second if set; for tests and benchmarks. Replays
//! failed tuples when acking is on.

use super::replay::Replay;
use super::{Spout, SpoutCollector, SpoutStatus, TaskContext};
use crate::topology::plan::streams;
use crate::tuple::{Value, Values};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;

/// Words for random tuples (Storm's TestWordSpout list, and a few more).
pub const WORDS: &[&str] = &["nathan", "mike", "jackson", "golda", "bertels"];

pub struct Generate {
    count: Option<u64>,
    values: Vec<Values>,
    rate: Option<f64>,
    emitted: u64,
    /// The pace's origin: when it (re)started, and what had been emitted by then. Activation
    /// restarts it, so a pause is not made up for with a burst.
    started: Option<Instant>,
    emitted_before: u64,
    rng: SmallRng,
    tracked: bool,
    /// Acking on: tuples kept until acked, replayed on fail.
    replay: Replay<Values>,
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
            emitted_before: 0,
            rng: SmallRng::seed_from_u64(seed ^ u64::from(task_index)),
            tracked: false,
            replay: Replay::new(super::replay::max_retries(args)),
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
        self.replay.set_label(&ctx.component, ctx.task_id);
        Ok(())
    }

    fn next_tuple(&mut self, out: &mut dyn SpoutCollector) -> anyhow::Result<SpoutStatus> {
        if let Some((seq, v)) = self.replay.next_replay() {
            out.send(streams::DEFAULT, v, Some(Value::Int(seq as i64)));
            return Ok(SpoutStatus::Busy);
        }
        if self.count.is_some_and(|c| self.emitted >= c) {
            return Ok(SpoutStatus::Exhausted);
        }
        if let Some(rate) = self.rate {
            let start = *self.started.get_or_insert_with(Instant::now);
            let allowed = self.emitted_before + (start.elapsed().as_secs_f64() * rate) as u64 + 1;
            if self.emitted >= allowed {
                return Ok(SpoutStatus::Idle);
            }
        }
        let values = self.next_values();
        self.emitted += 1;
        if self.tracked {
            let seq = self.replay.track(values.clone());
            out.send(streams::DEFAULT, values, Some(Value::Int(seq as i64)));
        } else {
            out.send(streams::DEFAULT, values, None);
        }
        Ok(SpoutStatus::Busy)
    }

    fn activate(&mut self) -> anyhow::Result<()> {
        self.started = None;
        self.emitted_before = self.emitted;
        Ok(())
    }

    fn ack(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        self.replay.ack(&msg_id);
        Ok(())
    }

    fn fail(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        self.replay.fail(&msg_id);
        Ok(())
    }

    fn lost(&self) -> u64 {
        self.replay.lost()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::plan::StreamId;

    /// Counts what a spout emits.
    #[derive(Default)]
    struct Counted(u64);

    impl SpoutCollector for Counted {
        fn emit(&mut self, _: StreamId, _: Values, _: Option<Value>) -> Vec<u32> {
            self.0 += 1;
            Vec::new()
        }
        fn emit_direct(&mut self, _: u32, _: StreamId, _: Values, _: Option<Value>) {}
        fn report_error(&mut self, _: &str) {}
    }

    /// Emit until the pace says idle; how many came.
    fn burst(g: &mut Generate) -> u64 {
        let mut out = Counted::default();
        while let Ok(SpoutStatus::Busy) = g.next_tuple(&mut out) {}
        out.0
    }

    /// After a pause (deactivated, then activated), the pace starts again: at most `rate` per
    /// second from then on, not a burst making up for the pause.
    #[test]
    fn an_activated_spout_does_not_make_up_for_its_pause() {
        let args = serde_json::json!({"rate": 50});
        let mut g = Generate::new(args.as_object().expect("an object"), 0);
        assert_eq!(burst(&mut g), 1, "the first tuple at once");
        g.deactivate().expect("deactivates");
        std::thread::sleep(std::time::Duration::from_millis(400));
        g.activate().expect("activates");
        let after = burst(&mut g);
        assert!(
            after < 5,
            "{after} at once: the pause's 20 were made up for"
        );
    }
}
