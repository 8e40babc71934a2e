//! The trees a spout started, held on its thread while the bolts chained onto it handle them:
//! their acks are XORed in here instead of being sent, so a tree the chain completes (a tuple a
//! `filter` drops, say) never reaches the acker, and one it passes on reaches it as one init
//! carrying what is still open, not an init and an ack per chained step.

use std::sync::{Arc, Mutex, MutexGuard};

/// A tree held during one round of its spout executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Held {
    /// The spout task that started it.
    pub(crate) task: u32,
    /// The XOR of its edges still open: zero when the chain completed it.
    pub(crate) val: u64,
    /// A chained bolt failed it.
    pub(crate) failed: bool,
}

/// The trees held, in the order they were started, and where the last one found was: the
/// guests handle tuples in the order they were emitted, so the next ack is almost always for
/// the tree after it. Settling them in that order keeps the spout's table of open trees
/// walked in order too (settled out of order, it cost a tenth of a word count's time).
#[derive(Debug, Default)]
struct Book {
    held: Vec<(u64, Held)>,
    next: usize,
}

impl Book {
    fn find(&mut self, root: u64) -> Option<&mut Held> {
        let n = self.held.len();
        let start = self.next.min(n);
        let at = (start..n)
            .chain(0..start)
            .find(|&k| self.held[k].0 == root)?;
        self.next = at + 1;
        Some(&mut self.held[at].1)
    }
}

/// Shared by a spout executor and the executors chained onto it, all on its thread (the lock
/// is never contended; it is there because the executors are handed between threads when a
/// rebalance parks them).
#[derive(Debug, Clone, Default)]
pub(crate) struct ChainLedger(Arc<Mutex<Book>>);

impl ChainLedger {
    fn book(&self) -> MutexGuard<'_, Book> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hold the trees `holds` (root, first edges) just started by spout task `task`, in the
    /// order they started; `holds` is left empty.
    pub(crate) fn hold_all(&self, task: u32, holds: &mut Vec<(u64, u64)>) {
        let held = holds.drain(..).map(|(root, val)| {
            let held = Held {
                task,
                val,
                failed: false,
            };
            (root, held)
        });
        self.book().held.extend(held);
    }

    /// XOR an ack into `root` when it is held; false when it is not (the ack goes to the acker).
    pub(crate) fn absorb(&self, root: u64, val: u64) -> bool {
        match self.book().find(root) {
            Some(h) => {
                h.val ^= val;
                true
            }
            None => false,
        }
    }

    /// Mark `root` failed when it is held; false when it is not (the fail goes to the acker).
    pub(crate) fn fail(&self, root: u64) -> bool {
        match self.book().find(root) {
            Some(h) => {
                h.failed = true;
                true
            }
            None => false,
        }
    }

    /// Every tree held, in the order they were started, released into `out` (emptied first;
    /// its room is kept for the next round).
    pub(crate) fn take_into(&self, out: &mut Vec<(u64, Held)>) {
        out.clear();
        let mut book = self.book();
        if !book.held.is_empty() {
            std::mem::swap(&mut book.held, out);
            book.next = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_of_held_trees_are_absorbed_and_others_are_not() {
        let ledger = ChainLedger::default();
        ledger.hold_all(3, &mut vec![(7, 0b1010)]);
        assert!(ledger.absorb(7, 0b0010));
        assert!(!ledger.absorb(8, 1), "a tree not held");
        assert!(ledger.absorb(7, 0b1000));
        let mut holds = vec![(9, 5)];
        ledger.hold_all(4, &mut holds);
        assert!(holds.is_empty(), "handed over");
        assert!(ledger.fail(9));
        assert!(!ledger.fail(10));
        let mut held = Vec::new();
        ledger.take_into(&mut held);
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
        ledger.take_into(&mut held);
        assert!(held.is_empty(), "taken trees are released");
        assert!(!ledger.absorb(7, 1), "released trees go to the acker");
    }
}
