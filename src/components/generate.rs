//! The `generate` spout: `args.count` tuples (unbounded if absent) of `args.values` in turn, or
//! of random words, at most `args.rate` per second if set; for tests and benchmarks. Replays
//! failed tuples when acking is on. Its output is a function of its seed and task, so a
//! checkpoint's position (how many it emitted, and those not yet acked) rewinds it exactly.

use super::builtin as b;
use super::replay::Replay;
use super::{Spout, SpoutCollector, SpoutStatus, TaskContext};
use crate::model::plan::streams;
use crate::tuple::{Value, Values};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;

/// Words for random tuples (Storm's TestWordSpout list, and a few more).
pub(crate) const WORDS: &[&str] = &["nathan", "mike", "jackson", "golda", "bertels"];
// A tracked word is kept as its place in `WORDS`, a byte.
const _: () = assert!(WORDS.len() <= 256);

struct Generate {
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
    /// Acking on: tuples kept until acked (as what makes them again), replayed on fail.
    replay: Replay<Drawn>,
    /// Tuples a restored position kept, emitted (as new tracked tuples) before the next ones.
    restored: std::collections::VecDeque<Values>,
}

/// A tracked tuple as it is kept until its tree is acked: what makes its values again, not a
/// copy of them (a copy per tuple in flight was a tenth of an acked run's time).
#[derive(Debug, Clone)]
enum Drawn {
    /// A random word: its place in [`WORDS`].
    Word(u8),
    /// The tuple of `args.values` at this place.
    Listed(usize),
    /// Values a restored position kept.
    Values(Values),
}

impl Generate {
    fn new(args: &serde_json::Map<String, serde_json::Value>, task_index: u32) -> Generate {
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
            restored: std::collections::VecDeque::new(),
        }
    }

    /// Emit `drawn` (tracked when acking is on).
    fn emit(&mut self, drawn: Drawn, out: &mut dyn SpoutCollector) {
        let values = self.values_of(&drawn);
        if self.tracked {
            let seq = self.replay.track(drawn);
            out.send(streams::DEFAULT, values, Some(Value::Int(seq as i64)));
        } else {
            out.send(streams::DEFAULT, values, None);
        }
    }

    fn next_drawn(&mut self) -> Drawn {
        if self.values.is_empty() {
            // Drawn as a place of the whole list, as a restore draws them again.
            let at = self.rng.random_range(0..WORDS.len());
            Drawn::Word(u8::try_from(at).unwrap_or_default())
        } else {
            Drawn::Listed((self.emitted % self.values.len() as u64) as usize)
        }
    }

    fn values_of(&self, drawn: &Drawn) -> Values {
        match drawn {
            Drawn::Word(w) => {
                let word = WORDS.get(usize::from(*w)).copied().unwrap_or_default();
                crate::tuple::one_str(word)
            }
            Drawn::Listed(i) => self.values.get(*i).cloned().unwrap_or_default(),
            Drawn::Values(v) => v.clone(),
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
        if let Some((seq, drawn)) = self.replay.next_replay() {
            let values = self.values_of(&drawn);
            out.send(streams::DEFAULT, values, Some(Value::Int(seq as i64)));
            return Ok(SpoutStatus::Busy);
        }
        if let Some(values) = self.restored.pop_front() {
            self.emit(Drawn::Values(values), out);
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
        let drawn = self.next_drawn();
        self.emitted += 1;
        self.emit(drawn, out);
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

    fn position(&mut self) -> Option<Value> {
        Some(position::of(self))
    }

    fn restore(&mut self, at: Value) -> anyhow::Result<()> {
        position::restore(self, at).map_err(|e| anyhow::anyhow!("generate: cannot resume: {e}"))
    }
}

/// A `generate` position: a map of `emitted` (how many tuples it drew) and `kept` (the values
/// of those not yet acked, oldest first).
mod position {
    use super::{Generate, WORDS};
    use crate::tuple::{Value, Values};
    use rand::Rng;
    use std::collections::BTreeMap;

    pub(super) fn of(g: &Generate) -> Value {
        let list = |v: &Values| Value::List(Box::new(v.to_vec()));
        let kept = g.replay.kept().into_iter().map(|d| list(&g.values_of(d)));
        let mut kept: Vec<Value> = kept.collect();
        kept.extend(g.restored.iter().map(list));
        let mut map = BTreeMap::new();
        map.insert("emitted".to_string(), Value::Int(g.emitted as i64));
        map.insert("kept".to_string(), Value::List(Box::new(kept)));
        Value::Map(Box::new(map))
    }

    /// Go on from `at`: draw (and drop) what was emitted, so the next tuple is the one that
    /// followed, and queue the kept ones.
    pub(super) fn restore(g: &mut Generate, at: Value) -> Result<(), String> {
        let Value::Map(map) = at else {
            return Err("the position is not a map".into());
        };
        let emitted = match map.get("emitted") {
            Some(Value::Int(n)) if *n >= 0 => *n as u64,
            other => {
                return Err(format!(
                    "the position's `emitted` is not a count: {other:?}"
                ))
            }
        };
        if let Some(count) = g.count.filter(|c| emitted > *c) {
            return Err(format!(
                "the position says {emitted} tuples were emitted, but `count` is {count}"
            ));
        }
        let kept = match map.get("kept") {
            None => Vec::new(),
            Some(Value::List(items)) => items
                .iter()
                .map(|item| match item {
                    Value::List(values) => Ok(values.iter().cloned().collect::<Values>()),
                    _ => Err("a kept tuple is not a list of values".to_string()),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("the position's kept tuples are not a list".into()),
        };
        if g.emitted > 0 {
            return Err("emitting had already begun".into());
        }
        if g.values.is_empty() {
            for _ in 0..emitted {
                g.rng.random_range(0..WORDS.len());
            }
        }
        g.emitted = emitted;
        g.emitted_before = emitted;
        g.restored = kept.into();
        Ok(())
    }
}

/// The `generate` built-in.
pub(crate) struct GenerateType;

impl b::Builtin for GenerateType {
    fn name(&self) -> &'static str {
        "generate"
    }
    fn summary(&self) -> &'static str {
        "spout: `count` tuples of `values` or random words, at `rate`/s"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Spout
    }
    fn args(&self) -> Vec<b::Arg> {
        use b::ArgShape as A;
        vec![
            b::arg("count", A::Number),
            b::arg("rate", A::Number),
            b::arg("seed", A::Number),
            b::arg("values", A::List),
            b::arg("fields", A::Fields),
            b::arg("max_retries", A::Number),
        ]
    }
    fn positional(&self) -> Option<b::Positional> {
        Some(b::Positional::One("count"))
    }
    fn rewinds(&self) -> bool {
        true
    }
    fn output_fields(&self, c: &crate::model::Component, _input: Option<&[String]>) -> b::Fields {
        Some(Some(
            b::strings(c.args.get("fields")).unwrap_or_else(|| vec!["word".into()]),
        ))
    }
    fn spout(
        &self,
        c: &crate::model::Component,
        task: u32,
        _base: &std::path::Path,
    ) -> anyhow::Result<Box<dyn Spout>> {
        Ok(Box::new(Generate::new(&c.args, task)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::plan::StreamId;

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

    /// Keeps what a spout emits, with its message ids.
    #[derive(Default)]
    struct Kept(Vec<(Values, Option<Value>)>);

    impl SpoutCollector for Kept {
        fn emit(&mut self, _: StreamId, v: Values, id: Option<Value>) -> Vec<u32> {
            self.0.push((v, id));
            Vec::new()
        }
        fn emit_direct(&mut self, _: u32, _: StreamId, _: Values, _: Option<Value>) {}
        fn report_error(&mut self, _: &str) {}
    }

    fn tracked(args: serde_json::Value) -> Generate {
        let mut g = Generate::new(args.as_object().expect("an object"), 3);
        g.tracked = true;
        g
    }

    /// A spout restored from a position taken mid-run emits the tuples not acked by then and
    /// then exactly what the first would have emitted next: with random words and with
    /// `values`.
    #[test]
    fn a_restored_position_goes_on_with_the_same_tuples() {
        for args in [
            serde_json::json!({"count": 50, "seed": 7}),
            serde_json::json!({"count": 50, "values": ["a", "b", "c"]}),
        ] {
            let mut whole = Kept::default();
            let mut g = tracked(args.clone());
            while let Ok(SpoutStatus::Busy) = g.next_tuple(&mut whole) {}
            let all: Vec<Values> = whole.0.iter().map(|(v, _)| v.clone()).collect();

            let mut first = Kept::default();
            let mut g = tracked(args.clone());
            for _ in 0..20 {
                g.next_tuple(&mut first).expect("emits");
            }
            // Acked: all but the 5th and the 18th.
            for (i, (_, id)) in first.0.iter().enumerate() {
                if i != 4 && i != 17 {
                    g.ack(id.clone().expect("tracked"), &mut Kept::default())
                        .expect("acks");
                }
            }
            let at = g.position().expect("a position");

            let mut then = Kept::default();
            let mut h = tracked(args);
            h.restore(at).expect("restores");
            while let Ok(SpoutStatus::Busy) = h.next_tuple(&mut then) {}
            let again: Vec<Values> = then.0.iter().map(|(v, _)| v.clone()).collect();
            let mut expected = vec![all[4].clone(), all[17].clone()];
            expected.extend_from_slice(&all[20..]);
            assert_eq!(again, expected);
        }
    }

    /// A position past `count`, or not a position at all, is refused with the reason.
    #[test]
    fn a_position_that_cannot_be_this_spouts_is_refused() {
        let mut g = tracked(serde_json::json!({"count": 10}));
        let mut map = std::collections::BTreeMap::new();
        map.insert("emitted".to_string(), Value::Int(11));
        let err = g.restore(Value::Map(Box::new(map))).expect_err("refused");
        assert!(err.to_string().contains("`count` is 10"), "{err}");
        let err = g.restore(Value::Int(3)).expect_err("refused");
        assert!(err.to_string().contains("not a map"), "{err}");
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
