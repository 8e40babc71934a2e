//! A stateful bolt task's gate: inputs wait here, already acked, until the markers say what
//! became of their trees. An input is applied to the state once its round is complete and every
//! tree it belongs to completed; dropped if one of them failed (the spout replays it, so its
//! effect comes back once); held otherwise.

use super::{split_root, Marker};
use crate::components::BoltCollector;
use crate::topology::plan::StreamId;
use crate::tuple::{Tuple, Value, Values};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

/// What to do with a held input now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Apply,
    Drop,
    Wait,
}

#[derive(Debug, Default)]
pub struct Gate {
    /// (round, input), in arrival order.
    held: VecDeque<(u64, Tuple)>,
    /// Per spout task: every tree numbered below is over.
    low: FxHashMap<u32, u64>,
    /// Roots of trees that failed, learnt from the rounds being applied.
    failed: FxHashSet<u64>,
    /// Inputs dropped because their tree failed.
    pub dropped: u64,
    /// The most inputs held at once.
    pub peak: usize,
}

impl Gate {
    /// Hold `input`, of round `round`.
    #[inline]
    pub fn hold(&mut self, round: u64, input: Tuple) {
        self.held.push_back((round, input));
    }

    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Learn a complete round's verdicts.
    pub fn learn(&mut self, marker: &Marker) {
        for v in &marker.verdicts {
            let low = self.low.entry(v.spout).or_insert(0);
            *low = (*low).max(v.low);
            self.failed
                .extend(v.failed.iter().map(|&seq| super::make_root(v.spout, seq)));
        }
    }

    /// What to do with `input` of round `round` once rounds up to `complete` are.
    #[cfg(test)]
    pub fn fate(&self, round: u64, input: &Tuple, complete: u64) -> Fate {
        fate_of(&self.low, &self.failed, round, input, complete)
    }

    /// Take the inputs to apply now that rounds up to `complete` are, in arrival order, into
    /// `out`; drop those of failed trees. The failures learnt are forgotten after: every input
    /// of a tree that failed before a round's marker arrived before it.
    pub fn release(&mut self, complete: u64, out: &mut Vec<Tuple>) {
        self.peak = self.peak.max(self.held.len());
        let mut keep = VecDeque::with_capacity(self.held.len().min(1024));
        for (round, input) in self.held.drain(..) {
            match fate_of(&self.low, &self.failed, round, &input, complete) {
                Fate::Apply => out.push(input),
                Fate::Drop => self.dropped += 1,
                Fate::Wait => keep.push_back((round, input)),
            }
        }
        self.held = keep;
        self.failed.clear();
    }
}

/// [`Gate::fate`] over the gate's parts (so `release` can drain while reading them).
fn fate_of(
    low: &FxHashMap<u32, u64>,
    failed: &FxHashSet<u64>,
    round: u64,
    input: &Tuple,
    complete: u64,
) -> Fate {
    if !failed.is_empty() && input.anchors.iter().any(|a| failed.contains(&a.root)) {
        return Fate::Drop;
    }
    if round > complete {
        return Fate::Wait;
    }
    let done = input.anchors.iter().all(|a| {
        let (spout, seq) = split_root(a.root);
        low.get(&spout).is_some_and(|&l| seq < l)
    });
    if done {
        Fate::Apply
    } else {
        Fate::Wait
    }
}

/// The collector a held input is applied through: it was acked when it arrived, and its tree
/// may be over, so acks and fails go nowhere and emits are not anchored to it.
pub struct Unanchored<'a>(pub &'a mut dyn BoltCollector);

impl BoltCollector for Unanchored<'_> {
    fn emit(&mut self, stream: StreamId, _anchors: &[&Tuple], values: Values) -> Vec<u32> {
        self.0.emit(stream, &[], values)
    }
    fn send(&mut self, stream: StreamId, _anchors: &[&Tuple], values: Values) {
        self.0.send(stream, &[], values)
    }
    fn send_str(&mut self, stream: StreamId, _anchors: &[&Tuple], s: &str) {
        self.0.send_str(stream, &[], s)
    }
    fn emit_direct(&mut self, task: u32, stream: StreamId, _anchors: &[&Tuple], values: Values) {
        self.0.emit_direct(task, stream, &[], values)
    }
    fn ack(&mut self, _input: &Tuple) {}
    fn fail(&mut self, _input: &Tuple) {}
    fn report_error(&mut self, msg: &str) {
        self.0.report_error(msg)
    }
    fn metric(&mut self, name: &str, value: &serde_json::Value) {
        self.0.metric(name, value)
    }
    fn dropped(&mut self, n: u64) {
        self.0.dropped(n)
    }
    fn send_acks(&mut self, task: u32, stream: StreamId, pairs: Vec<(u64, u64)>) {
        let roots = pairs.iter().map(|&(root, _)| Value::Int(root as i64));
        self.0.emit_direct(task, stream, &[], roots.collect());
    }
}

#[cfg(test)]
mod tests {
    use super::super::{make_root, Verdict};
    use super::*;
    use crate::tuple::Anchor;

    fn input(roots: &[u64]) -> Tuple {
        let mut t = Tuple::new(crate::tuple::one_str("w"), 1, 0);
        for &r in roots {
            t.anchors.push(Anchor::new(r, 1));
        }
        t
    }

    fn verdict(spout: u32, low: u64, failed: &[u64]) -> Marker {
        Marker {
            round: 1,
            txid: None,
            verdicts: vec![Verdict {
                spout,
                low,
                failed: failed.to_vec(),
            }],
        }
    }

    #[test]
    fn an_input_waits_for_its_round_and_its_tree() {
        let mut g = Gate::default();
        g.learn(&verdict(3, 10, &[]));
        let t = input(&[make_root(3, 9)]);
        assert_eq!(g.fate(2, &t, 1), Fate::Wait, "its round is not complete");
        assert_eq!(g.fate(1, &t, 1), Fate::Apply);
        assert_eq!(g.fate(1, &input(&[make_root(3, 10)]), 1), Fate::Wait);
        assert_eq!(g.fate(1, &input(&[make_root(4, 1)]), 1), Fate::Wait);
        assert_eq!(g.fate(1, &input(&[]), 1), Fate::Apply, "untracked");
    }

    #[test]
    fn an_input_of_a_failed_tree_is_dropped_even_above_low() {
        let mut g = Gate::default();
        g.learn(&verdict(3, 5, &[7]));
        let t = input(&[make_root(3, 2), make_root(3, 7)]);
        assert_eq!(g.fate(9, &t, 1), Fate::Drop);
    }

    #[test]
    fn release_applies_in_arrival_order_drops_failed_and_keeps_the_rest() {
        let mut g = Gate::default();
        g.hold(1, input(&[make_root(3, 1)]));
        g.hold(1, input(&[make_root(3, 2)]));
        g.hold(1, input(&[make_root(3, 6)]));
        g.hold(2, input(&[make_root(3, 3)]));
        g.hold(1, input(&[make_root(3, 4)]));
        g.learn(&verdict(3, 5, &[2]));
        let mut out = Vec::new();
        g.release(1, &mut out);
        let seqs: Vec<u64> = out
            .iter()
            .map(|t| split_root(t.anchors[0].root).1)
            .collect();
        assert_eq!(seqs, [1, 4]);
        assert_eq!(g.dropped, 1);
        assert_eq!(g.held(), 2);
        // The failure is forgotten; the next round applies what waited.
        g.learn(&verdict(3, 7, &[]));
        out.clear();
        g.release(2, &mut out);
        let seqs: Vec<u64> = out
            .iter()
            .map(|t| split_root(t.anchors[0].root).1)
            .collect();
        assert_eq!(seqs, [6, 3]);
    }
}
