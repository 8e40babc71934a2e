//! The bolt executors chained onto an executor (operator chaining): they run on its thread,
//! their queues filled by it alone and emptied right after each of its steps, in chain order,
//! so a tuple crosses the whole chain without a queue hop between threads or a wake-up.

use super::bolt_executor::{earliest, BoltExecutor};
use super::executor::ExecutorReport;
use super::message::Message;
use super::ComponentFailed;
use std::time::Instant;

/// Guests in chain order: each one's upstream comes before it.
#[derive(Default)]
pub struct Guests(Vec<BoltExecutor>);

/// An error of guest `g`, named by its own component (not its host's).
fn failed(g: &BoltExecutor, e: anyhow::Error) -> anyhow::Error {
    if e.downcast_ref::<ComponentFailed>().is_some() {
        return e;
    }
    e.context(ComponentFailed {
        component: g.component().to_string(),
        crash: None,
    })
}

impl Guests {
    /// Add `guest` after those already there (its upstream must be one of them, or the host).
    pub fn push(&mut self, guest: BoltExecutor) {
        self.0.push(guest);
    }

    /// Prepare every guest, downstream first, so each is ready before anything reaches it.
    pub fn start(&mut self) -> anyhow::Result<()> {
        for g in self.0.iter_mut().rev() {
            g.start().map_err(|e| failed(g, e))?;
        }
        Ok(())
    }

    /// Handle, in chain order, everything queued for the guests, until none has anything.
    pub fn pump(&mut self) -> anyhow::Result<()> {
        loop {
            let mut any = false;
            for g in &mut self.0 {
                any |= g.pump().map_err(|e| failed(g, e))?;
            }
            if !any {
                return Ok(());
            }
        }
    }

    /// The host is idle: let the guests flush (stdout) and send partial batches on.
    pub fn idle(&mut self) -> anyhow::Result<()> {
        if self.0.is_empty() {
            return Ok(());
        }
        self.pump()?;
        for g in &mut self.0 {
            g.idle().map_err(|e| failed(g, e))?;
        }
        self.pump()
    }

    /// Some guest has a task not finished yet.
    pub fn unfinished(&self) -> bool {
        self.0.iter().any(BoltExecutor::unfinished)
    }

    /// The earliest tick or poll of any guest.
    pub fn deadline(&self) -> Option<Instant> {
        self.0.iter().fold(None, |at, g| earliest(at, g.deadline()))
    }

    /// A message one of the guests' outboxes drained from the host's queue while a send
    /// blocked (a spout host's acks).
    pub fn take_drained(&mut self) -> Option<Message> {
        self.0.iter_mut().find_map(|g| g.outbox.take_drained())
    }

    pub fn close(&mut self) {
        for g in &mut self.0 {
            g.close();
        }
    }

    /// Park every guest into the host's `report`: its tasks and queues go with the host's.
    pub fn park_into(&mut self, report: &mut ExecutorReport) {
        for mut g in std::mem::take(&mut self.0) {
            let r = g.park();
            report.tasks.extend(r.tasks);
            report.inbox.extend(r.inbox);
        }
    }
}
