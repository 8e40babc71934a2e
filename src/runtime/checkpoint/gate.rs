//! A stateful bolt task's gate: inputs wait here, already acked, until the markers say what
//! became of their trees. An input is applied to the state once its round is complete and every
//! tree it belongs to completed; dropped if one of them failed (the spout replays it, so its
//! effect comes back once); held otherwise.

use super::{split_root, Marker};
use crate::components::BoltCollector;
use crate::model::plan::StreamId;
use crate::runtime::collector::is_folded;
use crate::tuple::{Tuple, Value, Values};
use rustc_hash::FxHashSet;
use std::collections::VecDeque;

/// What to do with a held input now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Apply,
    Drop,
    Wait,
}

#[derive(Debug, Default)]
pub(crate) struct Gate {
    /// (round, inputs from one upstream task), in arrival order: batches are held as they
    /// came, and applied where they lie.
    held: VecDeque<(u64, Vec<Tuple>)>,
    /// Inputs held.
    count: usize,
    /// Per spout task: every tree numbered below is over (a list: few spouts feed a bolt).
    low: Vec<(u32, u64)>,
    /// Roots of trees that failed, learnt from the rounds being applied.
    failed: FxHashSet<u64>,
    /// Inputs dropped because their tree failed.
    pub(crate) dropped: u64,
    /// The most inputs held at once.
    pub(crate) peak: usize,
}

impl Gate {
    /// Hold `inputs`, of round `round`.
    #[inline]
    pub(crate) fn hold(&mut self, round: u64, inputs: Vec<Tuple>) {
        self.count += inputs.len();
        self.peak = self.peak.max(self.count);
        self.held.push_back((round, inputs));
    }

    pub(crate) fn held(&self) -> usize {
        self.count
    }

    /// Learn a complete round's verdicts.
    pub(crate) fn learn(&mut self, marker: &Marker) {
        for v in &marker.verdicts {
            match self.low.iter_mut().find(|(s, _)| *s == v.spout) {
                Some((_, low)) => *low = (*low).max(v.low),
                None => self.low.push((v.spout, v.low)),
            }
            self.failed
                .extend(v.failed.iter().map(|&seq| super::make_root(v.spout, seq)));
        }
    }

    /// What to do with `input` of a complete round.
    #[inline]
    fn fate(&self, input: &Tuple) -> Fate {
        if !self.failed.is_empty() && input.anchors.iter().any(|a| self.failed.contains(&a.root)) {
            return Fate::Drop;
        }
        let done = input.anchors.iter().all(|a| {
            let (spout, seq) = split_root(a.root);
            self.low
                .iter()
                .find(|(s, _)| *s == spout)
                .is_some_and(|&(_, low)| seq < low)
        });
        if done {
            Fate::Apply
        } else {
            Fate::Wait
        }
    }

    /// Apply, through `apply`, the inputs that rounds up to `complete` allow, in arrival
    /// order; drop those of failed trees; keep the rest. A chunk folded where it was read (it
    /// has no tree) waits behind any input of the same upstream task that waits: applied
    /// ahead of the lines before it, it could leave them late for their windows (a spout's
    /// lines wait in the order they came, their trees numbered in it). The failures learnt are
    /// forgotten after: every input of a tree that failed before a round's marker arrived
    /// before it.
    pub(crate) fn release(
        &mut self,
        complete: u64,
        mut apply: impl FnMut(&[Tuple]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut keep = VecDeque::new();
        // Upstream tasks with an input waiting.
        let mut stalled: Vec<u32> = Vec::new();
        while let Some((round, batch)) = self.held.pop_front() {
            let behind = batch
                .first()
                .is_some_and(|t| is_folded(t) && stalled.contains(&t.source_task));
            if round > complete || behind {
                keep.push_back((round, batch));
                continue;
            }
            self.count -= batch.len();
            if batch.iter().all(|t| self.fate(t) == Fate::Apply) {
                apply(&batch)?;
                continue;
            }
            let source = batch.first().map(|t| t.source_task);
            let (mut ready, mut waiting) = (Vec::new(), Vec::new());
            for t in batch {
                match self.fate(&t) {
                    Fate::Apply => ready.push(t),
                    Fate::Drop => self.dropped += 1,
                    Fate::Wait => waiting.push(t),
                }
            }
            apply(&ready)?;
            if !waiting.is_empty() {
                self.count += waiting.len();
                keep.push_back((round, waiting));
                stalled.extend(source);
            }
        }
        self.held = keep;
        self.failed.clear();
        Ok(())
    }
}

/// The collector a held input is applied through: it was acked when it arrived, and its tree
/// may be over, so acks and fails go nowhere and emits are not anchored to it.
pub(crate) struct Unanchored<'a>(pub(crate) &'a mut dyn BoltCollector);

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

    /// The tree numbers of what `release` applies.
    fn released(g: &mut Gate, complete: u64) -> Vec<u64> {
        let mut seqs = Vec::new();
        g.release(complete, |batch| {
            seqs.extend(batch.iter().map(|t| split_root(t.anchors[0].root).1));
            Ok(())
        })
        .expect("applies");
        seqs
    }

    #[test]
    fn an_input_waits_for_its_tree() {
        let mut g = Gate::default();
        g.learn(&verdict(3, 10, &[]));
        assert_eq!(g.fate(&input(&[make_root(3, 9)])), Fate::Apply);
        assert_eq!(g.fate(&input(&[make_root(3, 10)])), Fate::Wait);
        assert_eq!(
            g.fate(&input(&[make_root(4, 1)])),
            Fate::Wait,
            "unknown spout"
        );
        assert_eq!(g.fate(&input(&[])), Fate::Apply, "untracked");
        let both = input(&[make_root(3, 2), make_root(3, 12)]);
        assert_eq!(g.fate(&both), Fate::Wait, "every tree must be over");
    }

    #[test]
    fn an_input_of_a_failed_tree_is_dropped_even_above_low() {
        let mut g = Gate::default();
        g.learn(&verdict(3, 5, &[7]));
        let t = input(&[make_root(3, 2), make_root(3, 7)]);
        assert_eq!(g.fate(&t), Fate::Drop);
    }

    #[test]
    fn an_input_waits_for_its_round() {
        let mut g = Gate::default();
        g.hold(2, vec![input(&[])]);
        g.learn(&verdict(3, 5, &[]));
        assert!(released(&mut g, 1).is_empty());
        assert_eq!(g.held(), 1);
        g.release(2, |b| {
            assert_eq!(b.len(), 1);
            Ok(())
        })
        .expect("applies");
        assert_eq!(g.held(), 0);
    }

    #[test]
    fn release_applies_in_arrival_order_drops_failed_and_keeps_the_rest() {
        let mut g = Gate::default();
        g.hold(
            1,
            vec![input(&[make_root(3, 1)]), input(&[make_root(3, 2)])],
        );
        g.hold(1, vec![input(&[make_root(3, 6)])]);
        g.hold(2, vec![input(&[make_root(3, 3)])]);
        g.hold(1, vec![input(&[make_root(3, 4)])]);
        g.learn(&verdict(3, 5, &[2]));
        assert_eq!(released(&mut g, 1), [1, 4]);
        assert_eq!(g.dropped, 1);
        assert_eq!(g.held(), 2);
        assert_eq!(g.peak, 5);
        // The failure is forgotten; the next round applies what waited.
        g.learn(&verdict(3, 7, &[]));
        assert_eq!(released(&mut g, 2), [6, 3]);
        assert_eq!(g.held(), 0);
    }

    /// A folded chunk (no tree) of upstream task `source`, marked by `mark`.
    fn chunk(source: u32, mark: i64) -> Tuple {
        let values = smallvec::smallvec![Value::Int(mark)];
        Tuple::new(values, source, crate::model::plan::streams::FOLDED)
    }

    #[test]
    fn a_folded_chunk_waits_behind_a_waiting_line_of_its_upstream_task() {
        let mut g = Gate::default();
        let mut line = input(&[make_root(3, 6)]);
        line.source_task = 4;
        g.hold(1, vec![line]);
        g.hold(1, vec![chunk(4, 1)]);
        g.hold(1, vec![chunk(5, 2)]);
        g.learn(&verdict(3, 5, &[]));
        let order = |g: &mut Gate| {
            let mut seen = Vec::new();
            g.release(1, |batch| {
                for t in batch {
                    match t.values.first() {
                        Some(Value::Int(mark)) => seen.push(*mark),
                        _ => seen.push(0),
                    }
                }
                Ok(())
            })
            .expect("applies");
            seen
        };
        assert_eq!(order(&mut g), [2], "another task's chunk goes ahead");
        assert_eq!(g.held(), 2);
        g.learn(&verdict(3, 7, &[]));
        assert_eq!(order(&mut g), [0, 1], "the line, then the chunk behind it");
        assert_eq!(g.held(), 0);
    }
}
