//! Storm's testing components that Flux examples use: `TestWordSpout` (random words from
//! nathan, mike, jackson, golda, bertels, ten a second as Storm's sleeps 100 ms between emits)
//! and `TestWordCounter` (counts words, emitting `word, count` on every update).

use super::generate::WORDS;
use super::{Bolt, BoltCollector, Spout, SpoutCollector, SpoutStatus};
use crate::topology::plan::streams;
use crate::tuple::{Tuple, Value};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rustc_hash::FxHashMap;
use std::time::{Duration, Instant};

pub struct TestWordSpout {
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
pub struct TestWordCounter {
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
