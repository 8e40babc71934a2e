//! The trees a spout started, held on its thread while the bolts chained onto it handle them:
//! their acks are XORed in here instead of being sent, so a tree the chain completes (a tuple a
//! `filter` drops, say) never reaches the acker, and one it passes on reaches it as one init
//! carrying what is still open, not an init and an ack per chained step.

use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// A tree held during one round of its spout executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Held {
    /// The spout task that started it.
    pub task: u32,
    /// The XOR of its edges still open: zero when the chain completed it.
    pub val: u64,
    /// A chained bolt failed it.
    pub failed: bool,
}

/// Shared by a spout executor and the executors chained onto it, all on its thread (the lock
/// is never contended; it is there because the executors are handed between threads when a
/// rebalance parks them).
#[derive(Debug, Clone, Default)]
pub(crate) struct ChainLedger(Arc<Mutex<FxHashMap<u64, Held>>>);

impl ChainLedger {
    fn held(&self) -> MutexGuard<'_, FxHashMap<u64, Held>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hold the tree `root` just started by spout task `task`, its first edges `val`.
    pub fn hold(&self, root: u64, task: u32, val: u64) {
        self.held().insert(
            root,
            Held {
                task,
                val,
                failed: false,
            },
        );
    }

    /// XOR an ack into `root` when it is held; false when it is not (the ack goes to the acker).
    pub fn absorb(&self, root: u64, val: u64) -> bool {
        match self.held().get_mut(&root) {
            Some(h) => {
                h.val ^= val;
                true
            }
            None => false,
        }
    }

    /// Mark `root` failed when it is held; false when it is not (the fail goes to the acker).
    pub fn fail(&self, root: u64) -> bool {
        match self.held().get_mut(&root) {
            Some(h) => {
                h.failed = true;
                true
            }
            None => false,
        }
    }

    /// Every tree held, released.
    pub fn take(&self) -> Vec<(u64, Held)> {
        let mut held = self.held();
        if held.is_empty() {
            return Vec::new();
        }
        held.drain().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_of_held_trees_are_absorbed_and_others_are_not() {
        let ledger = ChainLedger::default();
        ledger.hold(7, 3, 0b1010);
        assert!(ledger.absorb(7, 0b0010));
        assert!(!ledger.absorb(8, 1), "a tree not held");
        assert!(ledger.absorb(7, 0b1000));
        ledger.hold(9, 4, 5);
        assert!(ledger.fail(9));
        assert!(!ledger.fail(10));
        let mut held = ledger.take();
        held.sort_by_key(|(root, _)| *root);
        assert_eq!(
            held,
            [
                (
                    7,
                    Held {
                        task: 3,
                        val: 0,
                        failed: false
                    }
                ),
                (
                    9,
                    Held {
                        task: 4,
                        val: 5,
                        failed: true
                    }
                )
            ]
        );
        assert!(ledger.take().is_empty(), "taken trees are released");
        assert!(!ledger.absorb(7, 1), "released trees go to the acker");
    }
}
