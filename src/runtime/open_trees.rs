//! A spout task's open tuple trees (Storm's pending map in the spout executor): each tree's
//! message id and start time until the acker says it completed or failed, or it times out.
//! Kept in [`Slots`] under their root id, whose high half is random: roots of different spout
//! tasks meet in the same acker and must not collide. Under checkpoints the trees are numbered
//! instead (the task's id above the number, see `checkpoint::make_root`), kept in the order
//! they started, so the oldest open one says below which number every tree is over.

use super::checkpoint::{make_root, split_root};
use crate::slots::Slots;
use crate::tuple::Value;
use rand::rngs::SmallRng;
use rand::RngCore;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// (message id, start); the message id is `Null` between `reserve` and `open`.
type Open = (Value, Instant);

#[derive(Debug)]
pub(crate) struct OpenTrees {
    trees: Trees,
}

#[derive(Debug)]
enum Trees {
    Random(Slots<Open>),
    Numbered(Numbered),
}

impl Default for OpenTrees {
    fn default() -> Self {
        OpenTrees {
            trees: Trees::Random(Slots::default()),
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
            Trees::Random(slots) => {
                let tag = loop {
                    let t = rng.next_u32();
                    if t != 0 {
                        break t;
                    }
                };
                slots.insert(tag, (Value::Null, now))
            }
            Trees::Numbered(n) => {
                let seq = n.base + n.open.len() as u64;
                n.open.push_back(Some((Value::Null, now)));
                n.len += 1;
                make_root(n.task, seq)
            }
        }
    }

    /// The tree `root` (from `reserve`, which gave its start time) is for message id `id`.
    pub(crate) fn open(&mut self, root: u64, id: Value) {
        let held = match &mut self.trees {
            Trees::Random(slots) => slots.get_mut(root),
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
            Trees::Random(slots) => slots.remove(root),
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
            Trees::Random(slots) => slots.ids_where(|(_, started)| old(started)),
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
            Trees::Random(slots) => slots.len(),
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
