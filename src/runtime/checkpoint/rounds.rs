//! A bolt task's view of the rounds: the latest marker each upstream task sent, the markers of
//! rounds not complete yet (the same round from several upstream tasks merged into one), and
//! the rounds that completed — a round completes once every upstream task sent it or ended.

use super::{Marker, Verdict};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// An upstream task that ended counts as being at every round.
const ENDED: u64 = u64::MAX;

#[derive(Debug, Default)]
pub(crate) struct Rounds {
    /// Upstream tasks (each sends every round).
    expected: u32,
    /// The latest round of each upstream task heard from.
    latest: FxHashMap<u32, u64>,
    /// Rounds some upstream task sent and that are not complete, merged.
    pending: BTreeMap<u64, Marker>,
    /// Every round up to this one is complete.
    complete: u64,
    /// The latest round a marker completed (upstream tasks that ended complete every round
    /// without one).
    last_marked: u64,
}

impl Rounds {
    pub(crate) fn new(expected: u32) -> Rounds {
        Rounds {
            expected,
            ..Rounds::default()
        }
    }

    /// The round a tuple from `from` arriving now belongs to: the one after its latest marker.
    #[inline]
    pub(crate) fn tag(&self, from: u32) -> u64 {
        self.latest.get(&from).map_or(1, |r| r.saturating_add(1))
    }

    /// Every round up to this one is complete.
    #[cfg(test)]
    fn complete(&self) -> u64 {
        self.complete
    }

    /// The latest round a marker completed (0: none).
    pub(crate) fn last_marked(&self) -> u64 {
        self.last_marked
    }

    /// A marker from upstream task `from`: the rounds it completes, oldest first. A marker
    /// older than one already heard from `from` (sent again) changes nothing.
    pub(crate) fn marker(&mut self, from: u32, marker: &Marker) -> Vec<Marker> {
        let latest = self.latest.entry(from).or_insert(0);
        if marker.round <= *latest {
            return Vec::new();
        }
        *latest = marker.round;
        match self.pending.get_mut(&marker.round) {
            Some(held) => merge(held, marker),
            None => {
                self.pending.insert(marker.round, marker.clone());
            }
        }
        self.advance()
    }

    /// Upstream task `from` ended: the rounds that completes.
    pub(crate) fn ended(&mut self, from: u32) -> Vec<Marker> {
        self.latest.insert(from, ENDED);
        self.advance()
    }

    /// Whether every upstream task ended.
    #[cfg(test)]
    fn all_ended(&self) -> bool {
        self.latest.len() >= self.expected as usize && self.latest.values().all(|&r| r == ENDED)
    }

    fn advance(&mut self) -> Vec<Marker> {
        if self.latest.len() < self.expected as usize {
            return Vec::new();
        }
        let Some(&upto) = self.latest.values().min() else {
            return Vec::new();
        };
        if upto <= self.complete {
            return Vec::new();
        }
        self.complete = upto;
        let later = match upto.checked_add(1) {
            Some(next) => self.pending.split_off(&next),
            None => BTreeMap::new(),
        };
        let done: Vec<Marker> = std::mem::replace(&mut self.pending, later)
            .into_values()
            .collect();
        if let Some(m) = done.last() {
            self.last_marked = self.last_marked.max(m.round);
        }
        done
    }
}

/// Merge another upstream task's marker of the same round into `held`.
fn merge(held: &mut Marker, other: &Marker) {
    held.txid = held.txid.or(other.txid);
    for v in &other.verdicts {
        match held.verdicts.iter_mut().find(|h| h.spout == v.spout) {
            Some(h) => merge_verdict(h, v),
            None => held.verdicts.push(v.clone()),
        }
    }
}

fn merge_verdict(held: &mut Verdict, other: &Verdict) {
    held.low = held.low.max(other.low);
    for &f in &other.failed {
        if !held.failed.contains(&f) {
            held.failed.push(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(round: u64, spout: u32, low: u64) -> Marker {
        Marker {
            round,
            txid: None,
            verdicts: vec![Verdict {
                spout,
                low,
                failed: vec![],
            }],
        }
    }

    #[test]
    fn a_round_completes_when_every_upstream_task_sent_it() {
        let mut r = Rounds::new(2);
        assert!(r.marker(1, &m(1, 1, 5)).is_empty());
        let done = r.marker(2, &m(1, 2, 7));
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].verdicts.len(), 2, "both spouts' verdicts merged");
        assert_eq!(r.complete(), 1);
    }

    #[test]
    fn a_slow_upstream_task_holds_later_rounds_back_and_releases_them_in_order() {
        let mut r = Rounds::new(2);
        for round in 1..=3 {
            assert!(r.marker(1, &m(round, 1, round)).is_empty());
        }
        assert_eq!(r.tag(1), 4);
        assert_eq!(r.tag(2), 1);
        let done = r.marker(2, &m(1, 2, 1));
        assert_eq!(done.iter().map(|m| m.round).collect::<Vec<_>>(), [1]);
        let done = r.ended(2);
        assert_eq!(done.iter().map(|m| m.round).collect::<Vec<_>>(), [2, 3]);
        assert!(!r.all_ended());
        assert!(r.ended(1).is_empty());
        assert!(r.all_ended());
    }

    #[test]
    fn the_last_marked_round_ignores_upstream_tasks_that_ended() {
        let mut r = Rounds::new(2);
        r.marker(1, &m(3, 1, 1));
        assert!(r.ended(2).iter().map(|m| m.round).eq([3]));
        assert_eq!(r.last_marked(), 3);
        r.ended(1);
        assert_eq!(r.complete(), u64::MAX, "ended: every round");
        assert_eq!(r.last_marked(), 3);
    }

    #[test]
    fn a_marker_sent_again_or_late_changes_nothing() {
        let mut r = Rounds::new(1);
        assert_eq!(r.marker(1, &m(2, 1, 9)).len(), 1);
        assert!(r.marker(1, &m(2, 1, 9)).is_empty());
        assert!(r.marker(1, &m(1, 1, 3)).is_empty());
        assert_eq!(r.complete(), 2);
    }

    #[test]
    fn the_same_spout_heard_on_two_paths_merges_to_the_higher_low_and_all_failures() {
        let mut r = Rounds::new(2);
        let mut a = m(1, 9, 10);
        a.verdicts[0].failed = vec![4];
        let mut b = m(1, 9, 12);
        b.verdicts[0].failed = vec![4, 11];
        b.txid = Some(3);
        r.marker(1, &a);
        let done = r.marker(2, &b);
        assert_eq!(done[0].txid, Some(3));
        assert_eq!(done[0].verdicts[0].low, 12);
        assert_eq!(done[0].verdicts[0].failed, vec![4, 11]);
    }
}
