//! The acker's executor: its own kind, beside the spout and bolt executors. It alone handles
//! `Message::Acks` (the collectors' batched inits, acks and fails), hands each batch to its
//! task's `Acker`, and ticks the acker at the message timeout so forgotten trees expire.

use super::collector::BoltOut;
use super::executor::receive;
use super::executor::{AckerSlot, ExecutorReport, Parked, Receiving, RunControl, FLUSH_EVERY};
use super::message::Message;
use super::metrics::TaskStats;
use super::routing::Outbox;
use crate::components::{BoltCollector, FatalError};
use crossbeam_channel::Receiver;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) struct AckerExecutor {
    pub(crate) inbox: Receiver<Message>,
    pub(crate) outbox: Outbox,
    /// Tasks in ascending id order, contiguous from `first_task`.
    pub(crate) tasks: Vec<AckerSlot>,
    pub(crate) first_task: u32,
    /// The message timeout: each tick forgets the trees untouched since the one before.
    pub(crate) timeout: Option<Duration>,
    pub(crate) control: Arc<RunControl>,
}

impl AckerExecutor {
    pub(crate) fn run(mut self) -> anyhow::Result<ExecutorReport> {
        // Tasks with no upstream at all finish at once.
        for i in 0..self.tasks.len() {
            if self.tasks[i].eos_expected == 0 && !self.tasks[i].finished {
                self.finish_task(i);
            }
        }
        let clock = self.control.clock.clone();
        let mut next_tick = self.timeout.map(|d| clock.now() + d);
        let mut last_flush = clock.now();
        while self.tasks.iter().any(|t| !t.finished) {
            if !receive(&mut self, next_tick)? {
                break;
            }
            if self.control.park.load(Ordering::Relaxed) {
                return Ok(self.park());
            }
            if let (Some(at), Some(every)) = (next_tick, self.timeout) {
                let now = clock.now();
                if now >= at {
                    self.tick_all();
                    next_tick = Some(now + every);
                }
            }
            // Answers leave at once when idle, and within a millisecond or so when busy.
            if self.inbox.is_empty() || clock.since(last_flush) >= FLUSH_EVERY {
                self.flush();
                last_flush = clock.now();
            }
        }
        let mut report = self.park();
        // Ended: nothing more is read from the queue, so it must close.
        report.inbox.clear();
        Ok(report)
    }

    /// Send what is waiting and hand the tasks and the receive queue back.
    fn park(&mut self) -> ExecutorReport {
        self.flush();
        ExecutorReport {
            tasks: vec![Parked::Ackers(std::mem::take(&mut self.tasks))],
            inbox: vec![self.inbox.clone()],
            ..Default::default()
        }
    }

    fn flush(&mut self) {
        for t in &mut self.tasks {
            t.emitter.flush_acks(&mut self.outbox);
        }
        self.outbox.flush();
    }

    fn handle_message(&mut self, msg: Message) -> anyhow::Result<()> {
        match msg {
            Message::Acks(a) => {
                let i = a.task.wrapping_sub(self.first_task) as usize;
                let Some(slot) = self.tasks.get_mut(i) else {
                    return Ok(());
                };
                let start = Instant::now();
                let mut out = BoltOut {
                    em: &mut slot.emitter,
                    outbox: &mut self.outbox,
                };
                match slot.component.handle(a.stream, a.from, &a.pairs, &mut out) {
                    Ok(()) => {}
                    Err(e) if e.is::<FatalError>() => return Err(e),
                    Err(e) => out.report_error(&format!("{e:#}")),
                }
                let stats = &slot.emitter.stats;
                TaskStats::add(&stats.executed, 1);
                TaskStats::add(&stats.execute_ns, start.elapsed().as_nanos() as u64);
            }
            Message::Eos { from, to } => {
                let i = to.wrapping_sub(self.first_task) as usize;
                let Some(t) = self.tasks.get_mut(i) else {
                    return Ok(());
                };
                t.eos_seen.insert(from);
                if t.eos_seen.len() >= t.eos_expected as usize && !t.finished {
                    self.finish_task(i);
                }
            }
            // Only acker traffic and end of input are sent to an acker.
            Message::Tuples { .. } | Message::Marker { .. } | Message::Wake => {}
            Message::Congestion { .. } | Message::Control { .. } => {}
        }
        Ok(())
    }

    /// A tick (every message timeout): each task forgets its trees untouched since the last.
    fn tick_all(&mut self) {
        for t in self.tasks.iter_mut().filter(|t| !t.finished) {
            t.component.rotate();
            TaskStats::add(&t.emitter.stats.executed, 1);
        }
    }

    /// Every upstream task has finished: send what is waiting, then tell downstream.
    fn finish_task(&mut self, i: usize) {
        let slot = &mut self.tasks[i];
        slot.emitter.flush_acks(&mut self.outbox);
        slot.finished = true;
        let from = slot.emitter.task;
        for &to in slot.emitter.router.downstream() {
            self.outbox.eos(from, to);
        }
    }
}

impl Receiving for AckerExecutor {
    fn inbox(&self) -> &Receiver<Message> {
        &self.inbox
    }
    fn handle(&mut self, msg: Message) -> anyhow::Result<()> {
        self.handle_message(msg)
    }
    fn clock(&self) -> &crate::clock::Clock {
        &self.control.clock
    }
}
