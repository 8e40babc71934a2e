//! A spout task's open tuple trees (Storm's pending map in the spout executor): each tree's
//! message id and start time until the acker says it completed or failed, or it times out.
//! Kept in [`Slots`] under their root id, whose high half is random: roots of different spout
//! tasks meet in the same acker and must not collide. Under checkpoints the trees are numbered
//! instead (the task's id above the number, see `checkpoint::make_root`), kept in the order
//! they started, so the oldest open one says below which number every tree is over.
//!
//! A tree started by a spout that hosts chained bolts is usually over before its round ends
//! (a `filter` dropped its tuple, a `discard` took it): such a tree is only queued (`fresh`,
//! in the order the trees started, which is the order the round settles them in), so one the
//! chain completes costs a push and a pop; one still open after the round goes to `late`.
//! Their random roots have the top bit set, and [`Slots`]' tags never do, so a root says
//! which table holds it.

use super::checkpoint::{make_root, split_root};
use crate::slots::Slots;
use crate::tuple::Value;
use rand::rngs::SmallRng;
use rand::RngCore;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// (message id, start); the message id is `Null` between `reserve` and `open`.
type Open = (Value, Instant);

#[derive(Debug)]
pub(crate) struct OpenTrees {
    trees: Trees,
}

#[derive(Debug)]
enum Trees {
    Random(Random),
    Numbered(Numbered),
}

/// Trees under random roots: in [`Slots`], or, started beside chained bolts, queued until
/// their round settles them and then kept by root if still open.
#[derive(Debug, Default)]
struct Random {
    slots: Slots<Open>,
    fresh: VecDeque<(u64, Open)>,
    late: HashMap<u64, Open, foldhash::fast::FixedState>,
}

/// The bit set in the roots of trees started beside chained bolts, and never in the tags of
/// [`Slots`] ids.
const CHAINED: u64 = 1 << 63;

impl Random {
    fn close(&mut self, root: u64) -> Option<Open> {
        if root & CHAINED == 0 {
            return self.slots.remove(root);
        }
        self.take_fresh(root).or_else(|| self.late.remove(&root))
    }

    /// The queued tree `root`: the front one when trees are settled in order.
    fn take_fresh(&mut self, root: u64) -> Option<Open> {
        if self.fresh.front().is_some_and(|(r, _)| *r == root) {
            return self.fresh.pop_front().map(|(_, open)| open);
        }
        let at = self.fresh.iter().position(|(r, _)| *r == root)?;
        self.fresh.remove(at).map(|(_, open)| open)
    }

    fn len(&self) -> usize {
        self.slots.len() + self.fresh.len() + self.late.len()
    }
}

impl Default for OpenTrees {
    fn default() -> Self {
        OpenTrees {
            trees: Trees::Random(Random::default()),
        }
    }
}

/// Trees numbered in the order they started: `open[i]` is tree `base + i`.
#[derive(Debug)]
struct Numbered {
    task: u32,
    base: u64,
    open: VecDeque<Option<Open>>,
    len: usize,
}

impl Numbered {
    fn slot(&mut self, root: u64) -> Option<&mut Option<Open>> {
        let (task, seq) = split_root(root);
        if task != self.task || seq < self.base {
            return None;
        }
        self.open.get_mut((seq - self.base) as usize)
    }

    fn close(&mut self, root: u64) -> Option<Open> {
        let taken = self.slot(root)?.take()?;
        self.len -= 1;
        while let Some(None) = self.open.front() {
            self.open.pop_front();
            self.base += 1;
        }
        Some(taken)
    }
}

impl OpenTrees {
    /// Trees numbered in order for spout task `task`, from a random start (a restarted task
    /// does not reuse the roots of trees an acker may still hold).
    pub(crate) fn numbered(task: u32, rng: &mut SmallRng) -> OpenTrees {
        OpenTrees {
            trees: Trees::Numbered(Numbered {
                task,
                base: 1 + (rng.next_u64() >> 26),
                open: VecDeque::new(),
                len: 0,
            }),
        }
    }

    /// A fresh root id for a tree about to start; `open` or `release` it next.
    pub(crate) fn reserve(&mut self, rng: &mut SmallRng, now: Instant) -> u64 {
        match &mut self.trees {
            Trees::Random(r) => {
                // Top bit clear: see [`CHAINED`].
                let tag = loop {
                    let t = rng.next_u32() >> 1;
                    if t != 0 {
                        break t;
                    }
                };
                r.slots.insert(tag, (Value::Null, now))
            }
            Trees::Numbered(n) => {
                let seq = n.base + n.open.len() as u64;
                n.open.push_back(Some((Value::Null, now)));
                n.len += 1;
                make_root(n.task, seq)
            }
        }
    }

    /// A root for a tree about to start beside chained bolts, whose round settles it (see
    /// [`OpenTrees::settled_open`]): `None` under numbering, where `reserve` gives one.
    pub(crate) fn chained_root(&mut self, rng: &mut SmallRng) -> Option<u64> {
        match self.trees {
            Trees::Random(_) => Some(rng.next_u64() | CHAINED),
            Trees::Numbered(_) => None,
        }
    }

    /// The tree `root` (from `chained_root`) started at `now` for message id `id`.
    pub(crate) fn open_chained(&mut self, root: u64, id: Value, now: Instant) {
        if let Trees::Random(r) = &mut self.trees {
            r.fresh.push_back((root, (id, now)));
        }
    }

    /// The round that started the tree `root` is over and the tree is still open: it waits for
    /// the acker now.
    pub(crate) fn settled_open(&mut self, root: u64) {
        if let Trees::Random(r) = &mut self.trees {
            if let Some(open) = r.take_fresh(root) {
                r.late.insert(root, open);
            }
        }
    }

    /// The tree `root` (from `reserve`, which gave its start time) is for message id `id`.
    pub(crate) fn open(&mut self, root: u64, id: Value) {
        let held = match &mut self.trees {
            Trees::Random(r) => r.slots.get_mut(root),
            Trees::Numbered(n) => n.slot(root).and_then(|s| s.as_mut()),
        };
        if let Some((held, _)) = held {
            *held = id;
        }
    }

    /// The tree `root` (from `reserve`) did not start after all (nobody received its tuple).
    pub(crate) fn release(&mut self, root: u64) {
        self.close(root);
    }

    /// The tree `root` is done: its message id and start time, if it was open.
    pub(crate) fn close(&mut self, root: u64) -> Option<(Value, Instant)> {
        match &mut self.trees {
            Trees::Random(r) => r.close(root),
            Trees::Numbered(n) => n.close(root),
        }
    }

    /// Under numbering: every tree numbered below this one is over.
    pub(crate) fn low(&self) -> Option<u64> {
        match &self.trees {
            Trees::Random(_) => None,
            Trees::Numbered(n) => Some(n.base),
        }
    }

    /// Trees open for at least `timeout` at `now`: closed and returned with their roots
    /// (the spout executor calls it four times per `timeout`, so a tree expires after one to
    /// 1.25 timeouts).
    pub(crate) fn expire(&mut self, now: Instant, timeout: Duration) -> Vec<(u64, Value)> {
        let old = |started: &Instant| now.saturating_duration_since(*started) >= timeout;
        let roots: Vec<u64> = match &self.trees {
            Trees::Random(r) => {
                let mut roots = r.slots.ids_where(|(_, started)| old(started));
                let fresh = r.fresh.iter().map(|(root, open)| (root, open));
                let chained = fresh
                    .chain(&r.late)
                    .filter(|(_, (_, started))| old(started));
                roots.extend(chained.map(|(root, _)| *root));
                roots
            }
            // Numbered trees started in order: the old ones are at the front.
            Trees::Numbered(n) => n
                .open
                .iter()
                .enumerate()
                .filter_map(|(i, t)| t.as_ref().map(|t| (i, t)))
                .take_while(|(_, (_, started))| old(started))
                .map(|(i, _)| make_root(n.task, n.base + i as u64))
                .collect(),
        };
        roots
            .into_iter()
            .filter_map(|root| self.close(root).map(|(id, _)| (root, id)))
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        match &self.trees {
            Trees::Random(r) => r.len(),
            Trees::Numbered(n) => n.len,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn trees_close_once_and_stale_roots_are_ignored() {
        let mut rng = SmallRng::seed_from_u64(1);
        let now = Instant::now();
        let mut t = OpenTrees::default();
        let a = t.reserve(&mut rng, now);
        t.open(a, Value::Int(1));
        let b = t.reserve(&mut rng, now);
        t.open(b, Value::Int(2));
        assert_eq!(t.len(), 2);
        assert_eq!(t.close(a).map(|x| x.0), Some(Value::Int(1)));
        assert_eq!(t.close(a), None, "closed twice");
        // a's slot is reused with a new root: a late answer for a touches nothing.
        let c = t.reserve(&mut rng, now);
        let d = t.reserve(&mut rng, now);
        t.open(c, Value::Int(3));
        t.open(d, Value::Int(4));
        assert_eq!(c as u32, a as u32);
        assert_ne!(c, a);
        assert_eq!(t.close(a), None);
        assert_eq!(t.len(), 3);
        let e = t.reserve(&mut rng, now);
        t.release(e);
        assert_eq!(t.close(e), None, "a released root never opened");
        assert_eq!(t.close(0), None);
    }

    /// Trees started beside chained bolts: settled in order by their round (closed, or left
    /// open for the acker), counted while queued, found by root later, and never mistaken
    /// for trees in the slots.
    #[test]
    fn chained_trees_are_settled_by_their_round_and_kept_if_open() {
        let mut rng = SmallRng::seed_from_u64(5);
        let now = Instant::now();
        let mut t = OpenTrees::default();
        let slotted = t.reserve(&mut rng, now);
        t.open(slotted, Value::Int(0));
        let roots: Vec<u64> = (1..=3)
            .map(|i| {
                let root = t.chained_root(&mut rng).expect("random roots");
                t.open_chained(root, Value::Int(i), now);
                root
            })
            .collect();
        assert!(roots.iter().all(|r| r & CHAINED != 0) && slotted & CHAINED == 0);
        assert_eq!(t.len(), 4, "queued trees count as open");
        assert_eq!(t.close(roots[0]).map(|x| x.0), Some(Value::Int(1)));
        t.settled_open(roots[1]);
        assert_eq!(t.close(roots[2]).map(|x| x.0), Some(Value::Int(3)));
        assert_eq!(t.len(), 2);
        assert_eq!(t.close(roots[0]), None, "closed twice");
        let expired = t.expire(now + Duration::from_secs(9), Duration::from_secs(5));
        let mut expired: Vec<Value> = expired.into_iter().map(|(_, id)| id).collect();
        expired.sort_by_key(|v| format!("{v:?}"));
        assert_eq!(expired, [Value::Int(0), Value::Int(2)]);
        assert!(t.is_empty());
        let mut numbered = OpenTrees::numbered(1, &mut rng);
        assert_eq!(
            numbered.chained_root(&mut rng),
            None,
            "numbered trees are reserved"
        );
    }

    #[test]
    fn expiry_takes_only_old_trees() {
        let mut rng = SmallRng::seed_from_u64(2);
        let start = Instant::now();
        let mut t = OpenTrees::default();
        let old = t.reserve(&mut rng, start);
        t.open(old, Value::str("old"));
        let later = start + Duration::from_secs(5);
        let young = t.reserve(&mut rng, later);
        t.open(young, Value::str("young"));
        let expired = t.expire(start + Duration::from_secs(10), Duration::from_secs(8));
        assert_eq!(expired, vec![(old, Value::str("old"))]);
        assert_eq!(t.len(), 1);
        assert!(t.close(young).is_some());
        assert!(t.is_empty());
    }

    #[test]
    fn numbered_trees_say_below_which_number_all_are_over() {
        let mut rng = SmallRng::seed_from_u64(3);
        let now = Instant::now();
        let mut t = OpenTrees::numbered(7, &mut rng);
        let first = t.low().expect("numbered");
        let roots: Vec<u64> = (0..4).map(|_| t.reserve(&mut rng, now)).collect();
        for (i, &r) in roots.iter().enumerate() {
            assert_eq!(split_root(r), (7, first + i as u64));
            t.open(r, Value::Int(i as i64));
        }
        assert_eq!(t.close(roots[1]).map(|x| x.0), Some(Value::Int(1)));
        assert_eq!(t.low(), Some(first), "tree 0 is still open");
        assert_eq!(t.close(roots[0]).map(|x| x.0), Some(Value::Int(0)));
        assert_eq!(t.low(), Some(first + 2));
        assert_eq!(t.close(roots[0]), None, "closed twice");
        assert_eq!(
            t.close(make_root(8, first + 2)),
            None,
            "another task's root"
        );
        t.close(roots[3]);
        t.close(roots[2]);
        assert!(t.is_empty());
        assert_eq!(t.low(), Some(first + 4));
    }

    #[test]
    fn numbered_trees_expire_oldest_first() {
        let mut rng = SmallRng::seed_from_u64(4);
        let start = Instant::now();
        let mut t = OpenTrees::numbered(2, &mut rng);
        let a = t.reserve(&mut rng, start);
        let b = t.reserve(&mut rng, start + Duration::from_secs(1));
        let c = t.reserve(&mut rng, start + Duration::from_secs(9));
        t.close(b);
        let expired = t.expire(start + Duration::from_secs(10), Duration::from_secs(5));
        assert_eq!(expired, vec![(a, Value::Null)]);
        assert_eq!(t.low(), Some(split_root(c).1));
    }
}
