//! Backpressure between workers (Storm's `BackPressureTracker`): which workers have more
//! arriving than their executors take. A worker's receive thread never waits for a full
//! executor queue — it holds a backlog instead, so two workers feeding each other cannot wait
//! on each other for ever — and marks its worker congested once a backlog grows past
//! [`HIGH_WATER`], until every backlog is empty again. The transfer thread tells every other
//! worker (a congestion frame), and while any worker is congested, spouts everywhere emit
//! nothing new; bolts go on, so the backlogs empty and the spouts start again.
//!
//! Marks are soft state: a congested worker refreshes its mark every [`REFRESH`], and a mark
//! not refreshed for [`EXPIRY`] no longer counts, so a lost frame or a worker that died
//! congested cannot hold the spouts for ever.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Messages held for one executor, past its full queue, that make its worker congested.
pub(crate) const HIGH_WATER: usize = 64;
/// How often a congested worker tells the others again.
pub(crate) const REFRESH: Duration = Duration::from_millis(100);
/// How long a mark counts without being refreshed.
const EXPIRY: Duration = Duration::from_secs(1);

/// The congested workers as this process knows them, each with when it last said so.
#[derive(Debug, Default)]
pub(crate) struct Congestion {
    marks: Mutex<BTreeMap<usize, Instant>>,
    /// Some mark is held (it may have expired): the spouts' cheap first look.
    any: AtomicBool,
}

impl Congestion {
    /// Worker `worker` is congested (again, or still).
    pub(crate) fn mark(&self, worker: usize) {
        self.with_marks(|m| {
            m.insert(worker, Instant::now());
        });
    }

    /// Worker `worker` has caught up.
    pub(crate) fn clear(&self, worker: usize) {
        self.with_marks(|m| {
            m.remove(&worker);
        });
    }

    /// Whether `worker`'s own mark is held (its transfer thread tells the others).
    pub(crate) fn marked(&self, worker: usize) -> bool {
        self.any.load(Ordering::Relaxed)
            && self.with_marks(|m| m.get(&worker).is_some_and(|at| at.elapsed() < EXPIRY))
    }

    /// Whether spouts should hold back: some worker is congested (marks past their expiry
    /// are dropped).
    pub(crate) fn active(&self) -> bool {
        if !self.any.load(Ordering::Relaxed) {
            return false;
        }
        self.with_marks(|m| {
            m.retain(|_, at| at.elapsed() < EXPIRY);
            !m.is_empty()
        })
    }

    /// Run `f` on the marks, keeping `any` true to them.
    fn with_marks<T>(&self, f: impl FnOnce(&mut BTreeMap<usize, Instant>) -> T) -> T {
        let mut marks = match self.marks.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        let out = f(&mut marks);
        self.any.store(!marks.is_empty(), Ordering::Relaxed);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_hold_spouts_until_cleared() {
        let c = Congestion::default();
        assert!(!c.active());
        c.mark(2);
        c.mark(1);
        assert!(c.active());
        assert!(c.marked(2));
        c.clear(2);
        assert!(!c.marked(2));
        assert!(c.active(), "worker 1 is still congested");
        c.clear(1);
        assert!(!c.active());
    }

    #[test]
    fn a_mark_not_refreshed_expires() {
        let c = Congestion::default();
        c.mark(0);
        if let Ok(mut m) = c.marks.lock() {
            m.insert(0, Instant::now() - EXPIRY);
        }
        assert!(!c.active(), "a stale mark does not hold the spouts");
        assert!(!c.marked(0));
    }
}
