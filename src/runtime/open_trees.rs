//! A spout task's open tuple trees (Storm's pending map in the spout executor): each tree's
//! message id and start time until the acker says it completed or failed, or it times out.
//! Kept in [`Slots`] under their root id, whose high half is random: roots of different spout
//! tasks meet in the same acker and must not collide.

use crate::slots::Slots;
use crate::tuple::Value;
use rand::rngs::SmallRng;
use rand::RngCore;
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
pub struct OpenTrees {
    /// (message id, start); the message id is `Null` between `reserve` and `open`.
    trees: Slots<(Value, Instant)>,
}

impl OpenTrees {
    /// A fresh root id for a tree about to start; `open` or `release` it next.
    pub fn reserve(&mut self, rng: &mut SmallRng, now: Instant) -> u64 {
        let tag = loop {
            let t = rng.next_u32();
            if t != 0 {
                break t;
            }
        };
        self.trees.insert(tag, (Value::Null, now))
    }

    /// The tree `root` (from `reserve`, which gave its start time) is for message id `id`.
    pub fn open(&mut self, root: u64, id: Value) {
        if let Some((held, _)) = self.trees.get_mut(root) {
            *held = id;
        }
    }

    /// The tree `root` (from `reserve`) did not start after all (nobody received its tuple).
    pub fn release(&mut self, root: u64) {
        self.trees.remove(root);
    }

    /// The tree `root` is done: its message id and start time, if it was open.
    pub fn close(&mut self, root: u64) -> Option<(Value, Instant)> {
        self.trees.remove(root)
    }

    /// Trees open for at least `timeout` at `now`: closed and returned (Storm's rotation,
    /// called every `timeout`, so a tree expires after one to two timeouts).
    pub fn expire(&mut self, now: Instant, timeout: Duration) -> Vec<Value> {
        self.trees
            .ids_where(|(_, started)| now.saturating_duration_since(*started) >= timeout)
            .into_iter()
            .filter_map(|root| self.close(root).map(|(id, _)| id))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.trees.len()
    }

    pub fn is_empty(&self) -> bool {
        self.trees.is_empty()
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
        assert_eq!(expired, vec![Value::str("old")]);
        assert_eq!(t.len(), 1);
        assert!(t.close(young).is_some());
        assert!(t.is_empty());
    }
}
