//! A bolt executor: consumes its receive queue in batches (`consume-batch-when-available`) and
//! hands each to its task (`bolt_task.rs`), moving output on through its outbox. It runs on a
//! thread of its own ([`BoltExecutor::run`]), or as a guest on the thread of the executor it is
//! chained onto ([`BoltExecutor::pump`], driven by `guests.rs`): then its queue is filled by
//! that thread alone and emptied between its host's steps.

use super::bolt_task::execute;
use super::chain_ledger::ChainLedger;
use super::collector::BoltOut;
use super::executor::receive;
use super::executor::{BoltSlot, ExecutorReport, Parked, Receiving, RunControl, FLUSH_EVERY};
use super::guests::{earliest, Guest, Guests};
use super::message::Message;
use super::metrics::TaskStats;
use super::routing::Outbox;
use crate::model::plan::{streams, SYSTEM_TASK};
use crate::tuple::Tuple;
use crossbeam_channel::Receiver;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) struct BoltExecutor {
    inbox: Receiver<Message>,
    pub(crate) outbox: Outbox,
    /// Tasks in ascending id order, contiguous from `first_task`.
    tasks: Vec<BoltSlot>,
    first_task: u32,
    tick: Option<Duration>,
    control: Arc<RunControl>,
    /// Its tasks were prepared by an executor before a rebalance: they go on as they were.
    resumed: bool,
    /// The executors chained onto this one, run on its thread.
    pub(crate) guests: Guests,
    timers: BoltTimers,
}

/// A bolt executor's timers: ticks, polls, and the last flush of its outbox.
#[derive(Debug)]
struct BoltTimers {
    next_tick: Option<Instant>,
    poll_every: Option<Duration>,
    next_poll: Option<Instant>,
    last_flush: Instant,
}

impl BoltTimers {
    /// The next tick or poll, whichever is first.
    fn deadline(&self) -> Option<Instant> {
        earliest(self.next_tick, self.next_poll)
    }
}

impl BoltExecutor {
    /// Settle its tasks' acks of trees held by the spout executor it is chained onto (`Some`),
    /// or send them all to the acker (`None`).
    pub(crate) fn set_ledger(&mut self, ledger: Option<ChainLedger>) {
        for t in &mut self.tasks {
            t.emitter.ledger = ledger.clone();
        }
    }

    pub(crate) fn new(
        inbox: Receiver<Message>,
        outbox: Outbox,
        tasks: Vec<BoltSlot>,
        first_task: u32,
        tick: Option<Duration>,
        control: Arc<RunControl>,
        resumed: bool,
    ) -> BoltExecutor {
        BoltExecutor {
            inbox,
            outbox,
            tasks,
            first_task,
            tick,
            resumed,
            guests: Guests::default(),
            timers: BoltTimers {
                next_tick: None,
                poll_every: None,
                next_poll: None,
                last_flush: control.clock.now(),
            },
            control,
        }
    }

    /// Its component's id (for errors of a guest).
    fn component(&self) -> &str {
        self.tasks.first().map_or("", |t| t.ctx.component.as_str())
    }

    pub(crate) fn run(mut self) -> anyhow::Result<ExecutorReport> {
        self.guests.start()?;
        self.start()?;
        while self.unfinished() || self.guests.unfinished() {
            let deadline = earliest(self.timers.deadline(), self.guests.deadline());
            if !receive(&mut self, deadline)? {
                break;
            }
            if self.control.park.load(Ordering::Relaxed) {
                return Ok(self.park());
            }
            // The clock is read only when there are timers (it costs a sixth of a fast pipeline).
            if self.timers.deadline().is_some() {
                self.fire_timers()?;
            }
            if !self.guests.is_empty() {
                self.outbox.flush_chained();
                self.guests.pump()?;
            }
            if self.inbox.is_empty() {
                // Idle: let components flush (stdout) and send partial batches on.
                self.idle()?;
                self.guests.idle()?;
            } else if self.control.clock.since(self.timers.last_flush) >= FLUSH_EVERY {
                // Busy for a while: partial batches and acks still leave within a millisecond
                // or so (acks also leave once ACK_PAIRS of them are waiting).
                self.flush();
            }
        }
        self.close();
        self.guests.close();
        let mut report = self.park();
        // Ended: nothing more is read from the queues, so they must close.
        report.inbox.clear();
        Ok(report)
    }

    /// Prepare (or, resumed, take over) its tasks; those with no upstream at all finish at once.
    fn start(&mut self) -> anyhow::Result<()> {
        if !self.resumed {
            for t in &mut self.tasks {
                t.component.bolt().prepare(&t.ctx)?;
            }
            for t in &mut self.tasks {
                t.component.restore()?;
            }
        }
        let poll_every = self
            .tasks
            .iter_mut()
            .filter_map(|t| t.component.bolt().poll_interval())
            .min();
        let now = self.control.clock.now();
        self.timers = BoltTimers {
            next_tick: self.tick.map(|d| now + d),
            poll_every,
            next_poll: poll_every.map(|d| now + d),
            last_flush: now,
        };
        for i in 0..self.tasks.len() {
            if self.tasks[i].eos_expected == 0 && !self.tasks[i].finished {
                self.finish_task(i)?;
            }
        }
        Ok(())
    }

    /// Some task has not finished yet.
    fn unfinished(&self) -> bool {
        self.tasks.iter().any(|t| !t.finished)
    }

    /// When its next tick or poll is due.
    fn deadline(&self) -> Option<Instant> {
        self.timers.deadline()
    }

    /// As a guest: handle everything its host queued for it, fire its timers when due, and
    /// send what that emitted on. Returns whether there was anything.
    fn pump(&mut self) -> anyhow::Result<bool> {
        let mut handled = false;
        while let Ok(m) = self.inbox.try_recv() {
            self.handle_message(m)?;
            handled = true;
        }
        if self
            .timers
            .deadline()
            .is_some_and(|d| self.control.clock.now() >= d)
        {
            self.fire_timers()?;
            handled = true;
        }
        if handled {
            self.flush();
        }
        Ok(handled)
    }

    /// Nothing is waiting: let components flush (stdout) and send partial batches and sums on.
    fn idle(&mut self) -> anyhow::Result<()> {
        self.poll_all()?;
        self.flush_all();
        Ok(())
    }

    fn flush(&mut self) {
        self.flush_acks();
        self.outbox.flush();
        self.timers.last_flush = self.control.clock.now();
    }

    /// `flush`, and the sums held for bolts that take partial counts.
    fn flush_all(&mut self) {
        self.flush_acks();
        self.outbox.flush_all();
        self.timers.last_flush = self.control.clock.now();
    }

    /// Close every task not closed yet.
    fn close(&mut self) {
        for t in self.tasks.iter_mut().filter(|t| !t.closed) {
            t.component.close();
            t.closed = true;
        }
    }

    /// Send what is waiting and hand the tasks and the receive queues back, its guests' too.
    fn park(&mut self) -> ExecutorReport {
        self.flush_all();
        let mut report = ExecutorReport {
            tasks: vec![Parked::Bolts(std::mem::take(&mut self.tasks))],
            inbox: vec![self.inbox.clone()],
            ..Default::default()
        };
        self.guests.park_into(&mut report);
        report
    }

    /// Tick and poll the tasks whose time has come.
    fn fire_timers(&mut self) -> anyhow::Result<()> {
        let now = self.control.clock.now();
        if let (Some(t), Some(every)) = (self.timers.next_tick, self.tick) {
            if now >= t {
                self.tick_all()?;
                self.timers.next_tick = Some(now + every);
            }
        }
        if let (Some(p), Some(every)) = (self.timers.next_poll, self.timers.poll_every) {
            if now >= p {
                self.poll_all()?;
                self.timers.next_poll = Some(now + every);
            }
        }
        Ok(())
    }

    fn flush_acks(&mut self) {
        for t in &mut self.tasks {
            t.emitter.flush_acks(&mut self.outbox);
        }
    }

    /// A batch of tuples for one of this executor's tasks: executed in place, timed per batch.
    #[inline]
    fn handle_tuples(&mut self, task: u32, tuples: Vec<Tuple>) -> anyhow::Result<()> {
        let fill = self.inbox.len() as u64;
        if let Some(t) = self.tasks.first() {
            let peak = &t.emitter.stats.queue_peak;
            if fill > peak.load(Ordering::Relaxed) {
                peak.store(fill, Ordering::Relaxed);
            }
        }
        let i = task.wrapping_sub(self.first_task) as usize;
        if i >= self.tasks.len() || self.control.abandon.load(Ordering::Relaxed) {
            // Past a drain's deadline the trees these belong to are given up.
            return Ok(());
        }
        let slot = &mut self.tasks[i];
        let mut out = BoltOut {
            em: &mut slot.emitter,
            outbox: &mut self.outbox,
        };
        slot.component.tuples(tuples, &mut out)
    }

    fn handle_message(&mut self, msg: Message) -> anyhow::Result<()> {
        match msg {
            Message::Tuples { task, tuples } => self.handle_tuples(task, tuples)?,
            // Acker traffic goes to the acker's own executor.
            Message::Acks(_) => {}
            Message::Eos { from, to } => self.upstream_ended(from, to)?,
            Message::Marker { from, to, marker } => {
                let i = to.wrapping_sub(self.first_task) as usize;
                if let Some(slot) = self.tasks.get_mut(i) {
                    let mut out = BoltOut {
                        em: &mut slot.emitter,
                        outbox: &mut self.outbox,
                    };
                    slot.component.marker(from, &marker, &mut out)?;
                }
            }
            Message::Wake => self.poll_all()?,
            // The receive thread keeps these: they never reach an executor.
            Message::Congestion { .. } | Message::Control { .. } => {}
        }
        Ok(())
    }

    /// Task `from` said end of input to task `to`: finish `to` once all its upstream have.
    fn upstream_ended(&mut self, from: u32, to: u32) -> anyhow::Result<()> {
        let i = to.wrapping_sub(self.first_task) as usize;
        if i >= self.tasks.len() {
            return Ok(());
        }
        let slot = &mut self.tasks[i];
        let mut out = BoltOut {
            em: &mut slot.emitter,
            outbox: &mut self.outbox,
        };
        slot.component.upstream_ended(from, &mut out)?;
        let t = &mut self.tasks[i];
        t.eos_seen.insert(from);
        if t.eos_seen.len() >= t.eos_expected as usize && !t.finished {
            self.finish_task(i)?;
        }
        Ok(())
    }

    fn tick_all(&mut self) -> anyhow::Result<()> {
        for i in 0..self.tasks.len() {
            if !self.tasks[i].finished {
                let tick = Tuple::new(Default::default(), SYSTEM_TASK, streams::TICK);
                let slot = &mut self.tasks[i];
                let mut out = BoltOut {
                    em: &mut slot.emitter,
                    outbox: &mut self.outbox,
                };
                execute(slot.component.bolt(), &tick, &mut out)?;
            }
        }
        Ok(())
    }

    fn poll_all(&mut self) -> anyhow::Result<()> {
        for slot in &mut self.tasks {
            if slot.finished {
                continue;
            }
            let mut out = BoltOut {
                em: &mut slot.emitter,
                outbox: &mut self.outbox,
            };
            slot.component.bolt().poll(&mut out)?;
        }
        Ok(())
    }

    /// Every upstream task has finished: run `finish`, then tell downstream.
    fn finish_task(&mut self, i: usize) -> anyhow::Result<()> {
        let slot = &mut self.tasks[i];
        let mut out = BoltOut {
            em: &mut slot.emitter,
            outbox: &mut self.outbox,
        };
        slot.component.finish(&mut out)?;
        out.em.flush_acks(out.outbox);
        slot.finished = true;
        slot.component.finished(&mut out)?;
        let from = out.em.task;
        for &to in out.em.router.downstream() {
            out.outbox.eos(from, to);
        }
        slot.component.ended(&mut out);
        Ok(())
    }
}

impl Guest for BoltExecutor {
    fn component(&self) -> &str {
        BoltExecutor::component(self)
    }
    fn start(&mut self) -> anyhow::Result<()> {
        BoltExecutor::start(self)
    }
    fn pump(&mut self) -> anyhow::Result<bool> {
        BoltExecutor::pump(self)
    }
    fn idle(&mut self) -> anyhow::Result<()> {
        BoltExecutor::idle(self)
    }
    fn unfinished(&self) -> bool {
        BoltExecutor::unfinished(self)
    }
    fn deadline(&self) -> Option<Instant> {
        BoltExecutor::deadline(self)
    }
    fn take_drained(&mut self) -> Option<Message> {
        self.outbox.take_drained()
    }
    fn close(&mut self) {
        BoltExecutor::close(self)
    }
    fn park(&mut self) -> ExecutorReport {
        BoltExecutor::park(self)
    }
    fn pure_filters(&self) -> Option<Vec<(crate::expr::Compiled, Arc<TaskStats>)>> {
        self.tasks
            .iter()
            .map(|t| {
                let filter = t.component.pure_filter()?;
                Some((filter.clone(), t.emitter.stats.clone()))
            })
            .collect()
    }
    fn reader_folds(&self) -> Option<Vec<super::guests::ReaderFoldOf>> {
        self.tasks
            .iter()
            .map(|t| {
                let fold = t.component.reader_fold()?;
                Some((fold, t.emitter.task, t.emitter.stats.clone()))
            })
            .collect()
    }
    fn filter_condition(&self, input: &[String]) -> Option<crate::expr::Compiled> {
        let mut conditions = self
            .tasks
            .iter()
            .map(|t| t.component.filter_condition(input));
        let first = conditions.next()??;
        conditions.all(|c| c.is_some()).then_some(first)
    }
    fn counting_folds(&self) -> Option<Vec<Box<dyn crate::components::ReaderFold>>> {
        self.tasks
            .iter()
            .map(|t| t.component.counting_fold())
            .collect()
    }
}

impl BoltExecutor {
    /// Before its tasks are prepared on its own thread: when every task folds lines where
    /// they are read (`Bolt::reader_fold_for`), each task's fold, id and counters.
    pub(crate) fn reader_folds_before_prepare(&self) -> Option<Vec<super::guests::ReaderFoldOf>> {
        self.tasks
            .iter()
            .map(|t| {
                let fold = t.component.reader_fold_for(&t.ctx)?;
                Some((fold, t.emitter.task, t.emitter.stats.clone()))
            })
            .collect()
    }
}

impl Receiving for BoltExecutor {
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
