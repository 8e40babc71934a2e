//! Test support for stateful bolts: the differential check each one's state must pass. One
//! bolt is fed an input straight through; another is fed the same input, its changes taken at
//! cuts (every entry at the first, then only what changed) and folded into a map as the store
//! folds them, and at the last cut a fresh bolt restored from that map is fed the rest. What
//! the two emit must be the same.

use super::{Bolt, BoltCollector, CheckpointParticipant};
use crate::model::plan::StreamId;
use crate::tuple::{Tuple, Value, Values};
use std::collections::HashMap;

/// What a bolt sends, in order, with the stream.
#[derive(Default)]
pub(crate) struct Rows(pub(crate) Vec<(StreamId, Values)>);

impl BoltCollector for Rows {
    fn emit(&mut self, stream: StreamId, _: &[&Tuple], v: Values) -> Vec<u32> {
        self.0.push((stream, v));
        Vec::new()
    }
    fn emit_direct(&mut self, _: u32, stream: StreamId, _: &[&Tuple], v: Values) {
        self.0.push((stream, v));
    }
    fn ack(&mut self, _: &Tuple) {}
    fn fail(&mut self, _: &Tuple) {}
    fn report_error(&mut self, _: &str) {}
}

/// Everything `make()` sends for `input` and at its end.
pub(crate) fn straight<B: Bolt>(make: &impl Fn() -> B, input: &[Tuple]) -> Vec<(StreamId, Values)> {
    let mut bolt = make();
    let mut out = Rows::default();
    for t in input {
        bolt.execute(t, &mut out).expect("execute");
    }
    bolt.finish(&mut out).expect("finish");
    out.0
}

/// The entries a store holds after folding changes: `None` removes.
pub(crate) type Folded = HashMap<Value, Value>;

/// Take `bolt`'s changes (`all`: every entry) and fold them into `store`.
pub(crate) fn checkpoint(bolt: &mut dyn CheckpointParticipant, all: bool, store: &mut Folded) {
    let mut changes = Vec::new();
    bolt.state()
        .expect("a stateful bolt has state")
        .changes(all, &mut changes)
        .expect("changes are read");
    for (k, v) in changes {
        match v {
            Some(v) => store.insert(k, v),
            None => store.remove(&k),
        };
    }
}

/// What `make()` sends when checkpointed at each of `cuts` (positions in `input`, ascending)
/// and resumed from the last: the first bolt's output up to the last cut, then the output of a
/// fresh bolt restored from the folded checkpoints and fed the rest.
pub(crate) fn resumed<B: CheckpointParticipant>(
    make: &impl Fn() -> B,
    input: &[Tuple],
    cuts: &[usize],
) -> Vec<(StreamId, Values)> {
    let mut first = make();
    let mut out = Rows::default();
    let mut store = Folded::new();
    let mut fed = 0;
    for (i, &cut) in cuts.iter().enumerate() {
        let cut = cut.min(input.len()).max(fed);
        for t in &input[fed..cut] {
            first.execute(t, &mut out).expect("execute");
        }
        fed = cut;
        checkpoint(&mut first, i == 0, &mut store);
    }
    let mut second = make();
    second
        .state()
        .expect("a stateful bolt has state")
        .restore(store.into_iter().collect())
        .expect("restore");
    for t in &input[fed..] {
        second.execute(t, &mut out).expect("execute");
    }
    second.finish(&mut out).expect("finish");
    out.0
}

/// A tuple of `values` on the default stream from task 1.
pub(crate) fn tuple(values: Values) -> Tuple {
    Tuple::new(values, 1, crate::model::plan::streams::DEFAULT)
}

/// A tick tuple.
pub(crate) fn tick() -> Tuple {
    Tuple::new(
        Values::new(),
        crate::model::plan::SYSTEM_TASK,
        crate::model::plan::streams::TICK,
    )
}

/// Cut positions for an input of up to `n` tuples: one to four, ascending.
pub(crate) fn cuts(n: usize) -> impl proptest::strategy::Strategy<Value = Vec<usize>> {
    proptest::collection::vec(0..=n, 1..=4).prop_map(|mut c| {
        c.sort_unstable();
        c
    })
}

use proptest::strategy::Strategy;
