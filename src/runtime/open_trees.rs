//! A spout task's open tuple trees (Storm's pending map in the spout executor): each tree's
//! message id and start time until the acker says it completed or failed, or it times out.
//!
//! Trees live in slots addressed by the low 32 bits of their root id (the high 32 bits are
//! random, so a late answer for a tree whose slot was reused is told apart). Finding a tree is
//! an index, not a hash look-up, and slots are reused oldest-freed first, so the table stays as
//! small as the most trees ever open at once and is walked nearly in order.

use crate::tuple::Value;
use rand::rngs::SmallRng;
use rand::RngCore;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Slot {
    /// 0 when the slot is free.
    root: u64,
    id: Value,
    started: Instant,
}

#[derive(Debug, Default)]
pub struct OpenTrees {
    slots: Vec<Slot>,
    free: VecDeque<u32>,
    open: usize,
}

impl OpenTrees {
    /// A fresh root id for a tree about to start; `open` or `release` it next.
    pub fn reserve(&mut self, rng: &mut SmallRng, now: Instant) -> u64 {
        let index = match self.free.pop_front() {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    root: 0,
                    id: Value::Null,
                    started: now,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let high = loop {
            let h = rng.next_u32();
            if h != 0 {
                break u64::from(h) << 32;
            }
        };
        high | u64::from(index)
    }

    /// The tree `root` (from `reserve`) started at `now` for message id `id`.
    pub fn open(&mut self, root: u64, id: Value, now: Instant) {
        if let Some(slot) = self.slots.get_mut(root as u32 as usize) {
            *slot = Slot {
                root,
                id,
                started: now,
            };
            self.open += 1;
        }
    }

    /// The tree `root` (from `reserve`) did not start after all (nobody received its tuple).
    pub fn release(&mut self, root: u64) {
        self.free.push_back(root as u32);
    }

    /// The tree `root` is done: its message id and start time, if it was open.
    pub fn close(&mut self, root: u64) -> Option<(Value, Instant)> {
        let index = root as u32;
        let slot = self.slots.get_mut(index as usize)?;
        if slot.root != root || root == 0 {
            return None;
        }
        slot.root = 0;
        self.open -= 1;
        self.free.push_back(index);
        Some((std::mem::replace(&mut slot.id, Value::Null), slot.started))
    }

    /// Trees open for at least `timeout` at `now`: closed and returned (Storm's rotation,
    /// called every `timeout`, so a tree expires after one to two timeouts).
    pub fn expire(&mut self, now: Instant, timeout: Duration) -> Vec<Value> {
        let mut expired = Vec::new();
        for index in 0..self.slots.len() {
            let slot = &self.slots[index];
            if slot.root != 0 && now.saturating_duration_since(slot.started) >= timeout {
                let root = slot.root;
                if let Some((id, _)) = self.close(root) {
                    expired.push(id);
                }
            }
        }
        expired
    }

    pub fn len(&self) -> usize {
        self.open
    }

    pub fn is_empty(&self) -> bool {
        self.open == 0
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
        t.open(a, Value::Int(1), now);
        let b = t.reserve(&mut rng, now);
        t.open(b, Value::Int(2), now);
        assert_eq!(t.len(), 2);
        assert_eq!(t.close(a).map(|x| x.0), Some(Value::Int(1)));
        assert_eq!(t.close(a), None, "closed twice");
        // a's slot is reused with a new root: a late answer for a touches nothing.
        let c = t.reserve(&mut rng, now);
        let d = t.reserve(&mut rng, now);
        t.open(c, Value::Int(3), now);
        t.open(d, Value::Int(4), now);
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
        t.open(old, Value::str("old"), start);
        let later = start + Duration::from_secs(5);
        let young = t.reserve(&mut rng, later);
        t.open(young, Value::str("young"), later);
        let expired = t.expire(start + Duration::from_secs(10), Duration::from_secs(8));
        assert_eq!(expired, vec![Value::str("old")]);
        assert_eq!(t.len(), 1);
        assert!(t.close(young).is_some());
        assert!(t.is_empty());
    }
}
