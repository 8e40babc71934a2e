//! The bolt executors chained onto an executor (operator chaining): they run on its thread,
//! their queues filled by it alone and emptied right after each of its steps, in chain order,
//! so a tuple crosses the whole chain without a queue hop between threads or a wake-up.

use super::executor::ExecutorReport;
use super::message::Message;
use super::metrics::TaskStats;
use super::ComponentFailed;
use std::sync::Arc;
use std::time::Instant;

/// What a host drives of an executor chained onto it (a bolt executor, `bolt_executor.rs`).
pub(crate) trait Guest: Send {
    /// Its component's id.
    fn component(&self) -> &str;
    /// Prepare its tasks (or take them over after a rebalance).
    fn start(&mut self) -> anyhow::Result<()>;
    /// Handle what is queued for it and its due timers; whether there was anything.
    fn pump(&mut self) -> anyhow::Result<bool>;
    /// Its host is idle: poll its tasks and send partial batches on.
    fn idle(&mut self) -> anyhow::Result<()>;
    fn unfinished(&self) -> bool;
    /// Its next tick or poll.
    fn deadline(&self) -> Option<Instant>;
    /// A message its outbox drained from the host's queue while a send blocked.
    fn take_drained(&mut self) -> Option<Message>;
    fn close(&mut self);
    /// Hand its tasks and queue back.
    fn park(&mut self) -> ExecutorReport;
    /// When every task is a prepared `filter` (`Bolt::pure_filter`): each task's condition and
    /// counters, in task order.
    fn pure_filters(&self) -> Option<Vec<(crate::expr::Compiled, Arc<TaskStats>)>>;
    /// When every task is a `filter` without state (`Bolt::filter_condition`): their condition
    /// compiled against `input`, before they are prepared.
    fn filter_condition(&self, input: &[String]) -> Option<crate::expr::Compiled>;
    /// When every task folds lines where they are read (`Bolt::reader_fold`): each task's
    /// fold, id and counters, in task order.
    fn reader_folds(&self) -> Option<Vec<ReaderFoldOf>>;
    /// When every task folds its output into counts (`Bolt::counting_fold`): each task's
    /// fold, in task order.
    fn counting_folds(&self) -> Option<Vec<Box<dyn crate::components::ReaderFold>>>;
}

/// A task's fold of lines where they are read, its id and its counters.
pub(crate) type ReaderFoldOf = (Box<dyn crate::components::ReaderFold>, u32, Arc<TaskStats>);

/// The earlier of two optional instants.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Guests in chain order: each one's upstream comes before it.
#[derive(Default)]
pub(crate) struct Guests(Vec<Box<dyn Guest>>);

/// Run `f` on guest `g`: an error or a panic in it is named by the guest's own component (not
/// its host's), as it would be on a thread of its own.
fn guarded<T>(
    g: &mut Box<dyn Guest>,
    f: impl FnOnce(&mut Box<dyn Guest>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let component = g.component().to_string();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(g))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(ComponentFailed::named(component, Ok(e))),
        Err(panic) => Err(ComponentFailed::named(component, Err(panic))),
    }
}

impl Guests {
    /// Add `guest` after those already there (its upstream must be one of them, or the host).
    pub(crate) fn push(&mut self, guest: Box<dyn Guest>) {
        self.0.push(guest);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The conditions and counters of guest `component`'s tasks when it is a `filter` (see
    /// [`Guest::pure_filters`]).
    pub(crate) fn pure_filters(
        &self,
        component: &str,
    ) -> Option<Vec<(crate::expr::Compiled, Arc<TaskStats>)>> {
        let guest = self.0.iter().find(|g| g.component() == component)?;
        guest.pure_filters()
    }

    /// The folds, ids and counters of guest `component`'s tasks when each folds lines where
    /// they are read (see [`Guest::reader_folds`]).
    pub(crate) fn reader_folds(&self, component: &str) -> Option<Vec<ReaderFoldOf>> {
        let guest = self.0.iter().find(|g| g.component() == component)?;
        guest.reader_folds()
    }

    /// The counting folds of guest `component`'s tasks (see
    /// [`Guest::counting_folds`]).
    pub(crate) fn counting_folds(
        &self,
        component: &str,
    ) -> Option<Vec<Box<dyn crate::components::ReaderFold>>> {
        let guest = self.0.iter().find(|g| g.component() == component)?;
        guest.counting_folds()
    }

    /// Prepare every guest, downstream first, so each is ready before anything reaches it.
    pub(crate) fn start(&mut self) -> anyhow::Result<()> {
        for g in self.0.iter_mut().rev() {
            guarded(g, |g| g.start())?;
        }
        Ok(())
    }

    /// Handle, in chain order, everything queued for the guests, until none has anything.
    pub(crate) fn pump(&mut self) -> anyhow::Result<()> {
        if self.0.is_empty() {
            return Ok(());
        }
        loop {
            let mut any = false;
            for g in &mut self.0 {
                any |= guarded(g, |g| g.pump())?;
            }
            if !any {
                return Ok(());
            }
        }
    }

    /// The host is idle: let the guests flush (stdout) and send partial batches on.
    pub(crate) fn idle(&mut self) -> anyhow::Result<()> {
        if self.0.is_empty() {
            return Ok(());
        }
        self.pump()?;
        for g in &mut self.0 {
            guarded(g, |g| g.idle())?;
        }
        self.pump()
    }

    /// Some guest has a task not finished yet.
    pub(crate) fn unfinished(&self) -> bool {
        self.0.iter().any(|g| g.unfinished())
    }

    /// The earliest tick or poll of any guest.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.0.iter().fold(None, |at, g| earliest(at, g.deadline()))
    }

    /// A message one of the guests' outboxes drained from the host's queue while a send
    /// blocked (a spout host's acks).
    pub(crate) fn take_drained(&mut self) -> Option<Message> {
        self.0.iter_mut().find_map(|g| g.take_drained())
    }

    pub(crate) fn close(&mut self) {
        for g in &mut self.0 {
            g.close();
        }
    }

    /// Park every guest into the host's `report`: its tasks and queues go with the host's.
    pub(crate) fn park_into(&mut self, report: &mut ExecutorReport) {
        for mut g in std::mem::take(&mut self.0) {
            let r = g.park();
            report.tasks.extend(r.tasks);
            report.inbox.extend(r.inbox);
        }
    }
}
