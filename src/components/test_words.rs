//! Storm's testing components that Flux examples use: `TestWordSpout` (random words from
//! nathan, mike, jackson, golda, bertels, ten a second as Storm's sleeps 100 ms between emits)
//! and `TestWordCounter` (counts words, emitting `word, count` on every update).

use super::builtin as b;
use super::generate::WORDS;
use super::{Bolt, BoltCollector, Spout, SpoutCollector, SpoutStatus};
use crate::model::plan::streams;
use crate::tuple::{Tuple, Value};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rustc_hash::FxHashMap;
use std::time::{Duration, Instant};

struct TestWordSpout {
    rng: SmallRng,
    next: Instant,
}

impl Default for TestWordSpout {
    fn default() -> Self {
        TestWordSpout {
            rng: SmallRng::from_os_rng(),
            next: Instant::now(),
        }
    }
}

impl Spout for TestWordSpout {
    fn next_tuple(&mut self, out: &mut dyn SpoutCollector) -> anyhow::Result<SpoutStatus> {
        let now = Instant::now();
        if now < self.next {
            return Ok(SpoutStatus::Idle);
        }
        self.next = now + Duration::from_millis(100);
        let w = WORDS[self.rng.random_range(0..WORDS.len())];
        out.send(streams::DEFAULT, smallvec::smallvec![Value::str(w)], None);
        Ok(SpoutStatus::Idle)
    }
}

#[derive(Default)]
struct TestWordCounter {
    counts: FxHashMap<Value, i64>,
}

impl Bolt for TestWordCounter {
    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            return Ok(());
        }
        let word = input.values.first().cloned().unwrap_or(Value::Null);
        let n = self.counts.entry(word.clone()).or_insert(0);
        *n += 1;
        let n = *n;
        out.send(
            streams::DEFAULT,
            &[input],
            smallvec::smallvec![word, Value::Int(n)],
        );
        Ok(())
    }
}

/// The `test_word_spout` built-in.
pub(crate) struct TestWordSpoutType;

impl b::Builtin for TestWordSpoutType {
    fn name(&self) -> &'static str {
        "test_word_spout"
    }
    fn summary(&self) -> &'static str {
        "spout: Storm's TestWordSpout (random words)"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Spout
    }
    fn classes(&self) -> &'static [&'static str] {
        &["org.apache.storm.testing.TestWordSpout"]
    }
    fn flux_only(&self) -> bool {
        true
    }
    fn output_fields(&self, _c: &crate::model::Component, _input: Option<&[String]>) -> b::Fields {
        b::one_field("word")
    }
    fn field_types(&self, cx: &b::TypeCx) -> Option<Vec<crate::expr::Type>> {
        Some(cx.all(crate::expr::Type::Str))
    }
    fn spout(
        &self,
        _c: &crate::model::Component,
        _task: u32,
        _base: &std::path::Path,
    ) -> anyhow::Result<Box<dyn Spout>> {
        Ok(Box::new(TestWordSpout::default()))
    }
}

/// The `test_word_counter` built-in.
pub(crate) struct TestWordCounterType;

impl b::Builtin for TestWordCounterType {
    fn name(&self) -> &'static str {
        "test_word_counter"
    }
    fn summary(&self) -> &'static str {
        "bolt: Storm's TestWordCounter (word, count)"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn classes(&self) -> &'static [&'static str] {
        &["org.apache.storm.testing.TestWordCounter"]
    }
    fn flux_only(&self) -> bool {
        true
    }
    fn output_fields(&self, _c: &crate::model::Component, _input: Option<&[String]>) -> b::Fields {
        Some(Some(vec!["word".into(), "count".into()]))
    }
    fn field_types(&self, _cx: &b::TypeCx) -> Option<Vec<crate::expr::Type>> {
        Some(vec![crate::expr::Type::Str, crate::expr::Type::Int])
    }
    fn bolt(
        &self,
        _c: &crate::model::Component,
        _base: &std::path::Path,
    ) -> anyhow::Result<Box<dyn Bolt>> {
        Ok(Box::new(TestWordCounter::default()))
    }
}
