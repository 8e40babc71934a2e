//! Which offset of a partition may be committed: the one after the highest offset below which
//! every emitted message is done (all its tuples acked, or given up on and sent to `errors`).
//! Storm's "commit the highest contiguous acked offset": an offset is never committed while a
//! message before it is still in flight, so a crash re-reads it rather than losing it.
//! Offsets may have gaps (compaction, transaction markers): contiguity is over the offsets the
//! partition gave, not over every integer.

use std::collections::BTreeMap;

/// One partition's messages in flight.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PartitionOffsets {
    /// Offsets emitted and not done, with how many of their tuples are not done.
    pending: BTreeMap<i64, u32>,
    /// The offset after the last one emitted (`None`: nothing emitted yet).
    next: Option<i64>,
    /// The last offset committed (or read as the start), so the same one is not sent twice.
    committed: Option<i64>,
}

impl PartitionOffsets {
    /// Start from `offset` (a restored position, or where reading starts): nothing before it
    /// is pending.
    pub(crate) fn starting_at(offset: i64) -> PartitionOffsets {
        PartitionOffsets {
            pending: BTreeMap::new(),
            next: Some(offset),
            committed: None,
        }
    }

    /// Message `offset` was read and gave `tuples` tuples (0: nothing to wait for, as for a
    /// message sent to `errors` at once). Offsets come in increasing order.
    pub(crate) fn emitted(&mut self, offset: i64, tuples: u32) {
        if tuples > 0 {
            *self.pending.entry(offset).or_insert(0) += tuples;
        }
        self.next = Some(self.next.map_or(offset + 1, |n| n.max(offset + 1)));
    }

    /// One tuple of message `offset` is done (acked, or given up on). An offset not pending
    /// (an answer for a message of an earlier assignment) changes nothing.
    pub(crate) fn done(&mut self, offset: i64) {
        if let Some(left) = self.pending.get_mut(&offset) {
            *left = left.saturating_sub(1);
            if *left == 0 {
                self.pending.remove(&offset);
            }
        }
    }

    /// The offset every message before which is done: what a commit says (Kafka commits the
    /// next offset to read). `None` before anything was emitted.
    pub(crate) fn commit_point(&self) -> Option<i64> {
        match self.pending.keys().next() {
            Some(&first) => Some(first),
            None => self.next,
        }
    }

    /// The commit point when it moved since the last [`PartitionOffsets::committed`].
    pub(crate) fn to_commit(&self) -> Option<i64> {
        self.commit_point().filter(|&p| Some(p) != self.committed)
    }

    /// `offset` was committed.
    pub(crate) fn committed(&mut self, offset: i64) {
        self.committed = Some(offset);
    }

    /// Messages in flight (for pausing a partition that runs too far ahead).
    pub(crate) fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// The offset after the last emitted.
    pub(crate) fn next(&self) -> Option<i64> {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn commits_stop_at_the_first_message_in_flight() {
        let mut p = PartitionOffsets::default();
        assert_eq!(p.commit_point(), None, "nothing read yet");
        for o in [10, 11, 13, 14] {
            p.emitted(o, 1);
        }
        p.done(11);
        p.done(13);
        assert_eq!(p.commit_point(), Some(10), "10 is still in flight");
        p.done(10);
        assert_eq!(p.commit_point(), Some(14), "11 and 13 done, 12 a gap");
        p.done(14);
        assert_eq!(p.commit_point(), Some(15));
        assert_eq!(p.to_commit(), Some(15));
        p.committed(15);
        assert_eq!(p.to_commit(), None, "already committed");
    }

    #[test]
    fn a_message_of_several_tuples_is_done_with_its_last() {
        let mut p = PartitionOffsets::starting_at(0);
        p.emitted(0, 3);
        p.done(0);
        p.done(0);
        assert_eq!(p.commit_point(), Some(0));
        p.done(0);
        assert_eq!(p.commit_point(), Some(1));
    }

    #[test]
    fn a_message_with_no_tuples_is_done_at_once_and_unknown_answers_change_nothing() {
        let mut p = PartitionOffsets::starting_at(5);
        assert_eq!(p.commit_point(), Some(5));
        p.emitted(5, 0);
        p.done(99);
        assert_eq!(p.commit_point(), Some(6));
    }

    proptest! {
        /// Against the oracle: the commit point is the smallest emitted offset with a tuple not
        /// done, or one past the last emitted; it never goes back, and it is never past a
        /// message whose tuples are not all done.
        #[test]
        fn the_commit_point_is_the_first_offset_not_done(
            messages in proptest::collection::vec((1i64..4, 0u32..3), 1..60),
            order in proptest::collection::vec(any::<proptest::sample::Index>(), 0..200),
        ) {
            let mut p = PartitionOffsets::default();
            let mut offset = 100;
            // Every tuple not done, as (offset, tuple number).
            let mut open: Vec<(i64, u32)> = Vec::new();
            let mut emitted = Vec::new();
            for (gap, tuples) in messages {
                offset += gap;
                p.emitted(offset, tuples);
                emitted.push(offset);
                open.extend((0..tuples).map(|t| (offset, t)));
            }
            let mut last = p.commit_point();
            for i in order {
                if open.is_empty() {
                    break;
                }
                let (o, _) = open.remove(i.index(open.len()));
                p.done(o);
                let point = p.commit_point();
                let oracle = open.iter().map(|(o, _)| *o).min()
                    .or(emitted.last().map(|o| o + 1));
                prop_assert_eq!(point, oracle);
                prop_assert!(point >= last, "went back from {:?} to {:?}", last, point);
                prop_assert!(open.iter().all(|(o, _)| Some(*o) >= point));
                last = point;
            }
        }
    }
}
