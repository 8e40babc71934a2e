//! A spout task's part in checkpoints: it numbers its trees (see `open_trees.rs`), collects the
//! trees that failed since its last marker, and holds each completed tree's ack until the tree
//! is below `low` — then every tree before it is over, so the state holds the message once and
//! for all, and the spout may forget it.

use super::{Marker, Verdict};
use crate::tuple::Value;
use std::time::Instant;

#[derive(Debug)]
pub(crate) struct SpoutSide {
    /// The round of the last marker sent (0: none yet).
    pub(crate) round: u64,
    /// When the next marker is due.
    pub(crate) next_at: Instant,
    /// Trees that failed since the last marker.
    failed: Vec<u64>,
    /// (tree number, message id) of completed trees whose ack the spout has not been given.
    held: Vec<(u64, Value)>,
    /// The most acks held at once.
    pub(crate) peak: usize,
}

impl SpoutSide {
    pub(crate) fn new(now: Instant) -> SpoutSide {
        SpoutSide {
            round: 0,
            next_at: now + super::ROUND,
            failed: Vec::new(),
            held: Vec::new(),
            peak: 0,
        }
    }

    /// Tree `seq` completed: its message's ack waits.
    pub(crate) fn completed(&mut self, seq: u64, id: Value) {
        self.held.push((seq, id));
    }

    /// Tree `seq` failed.
    pub(crate) fn failed(&mut self, seq: u64) {
        self.failed.push(seq);
    }

    /// The acks the spout may be given now that every tree below `low` is over.
    pub(crate) fn release(&mut self, low: u64) -> Vec<Value> {
        self.peak = self.peak.max(self.held.len());
        let mut out = Vec::new();
        self.held.retain_mut(|(seq, id)| {
            if *seq < low {
                out.push(std::mem::replace(id, Value::Null));
                false
            } else {
                true
            }
        });
        out
    }

    /// Completed trees whose ack is held.
    #[cfg(test)]
    fn holding(&self) -> usize {
        self.held.len()
    }

    /// The marker of round `round` from spout task `task` whose trees below `low` are over.
    pub(crate) fn marker(&mut self, task: u32, round: u64, txid: Option<u64>, low: u64) -> Marker {
        self.round = round;
        Marker {
            round,
            txid,
            verdicts: vec![Verdict {
                spout: task,
                low,
                failed: std::mem::take(&mut self.failed),
            }],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_are_held_until_their_tree_is_below_low() {
        let mut s = SpoutSide::new(Instant::now());
        s.completed(5, Value::Int(50));
        s.completed(2, Value::Int(20));
        assert_eq!(s.release(3), vec![Value::Int(20)]);
        assert_eq!(s.holding(), 1);
        assert_eq!(s.release(6), vec![Value::Int(50)]);
        assert_eq!(s.holding(), 0);
    }

    #[test]
    fn a_marker_carries_the_failures_since_the_last_one() {
        let mut s = SpoutSide::new(Instant::now());
        s.failed(4);
        s.failed(6);
        let m = s.marker(7, 1, None, 3);
        assert_eq!(m.verdicts[0].failed, vec![4, 6]);
        assert_eq!(m.verdicts[0].spout, 7);
        let m = s.marker(7, 2, Some(1), 8);
        assert!(m.verdicts[0].failed.is_empty());
        assert_eq!(s.round, 2);
    }
}
