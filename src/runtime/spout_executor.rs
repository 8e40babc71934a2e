//! A spout executor: calls `next_tuple` while under `topology.max.spout.pending` (once
//! there, again when a batch's worth of room is free: [`Throttle`]), tracks trees, replays on
//! fail or timeout, runs the bolts chained onto it (`guests.rs`) right after each round, and
//! passes end of input on.

use super::chain_ledger::{ChainLedger, Held};
use super::checkpoint::Checkpointing;
use super::collector::{FoldTarget, RejectTarget, SpoutOut};
use super::executor::{ExecutorReport, Parked, Phase, RunControl, SpoutSlot, FLUSH_EVERY};
use super::guests::Guests;
use super::message::Message;
use super::metrics::TaskStats;
use super::routing::Outbox;
use crate::clock::Clock;
use crate::components::{FatalError, ReaderFold, Spout, SpoutStatus};
use crate::model::plan::streams;
use crate::tuple::Value;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A `next_tuple` call slower than this makes its spout a slow one (one call per round).
const SLOW_CALL: Duration = Duration::from_micros(50);

/// The shortest sleep of a spout at `topology.max.spout.pending` (about the kernel's timer
/// slack); shorter waits are made on the receive queue instead (see [`Throttle`]).
const THROTTLE_MIN: Duration = Duration::from_micros(50);

/// The longest sleep of a spout at `topology.max.spout.pending`: Storm's default spout wait
/// (`WaitStrategyProgressive`, level 3: sleep 1 ms), and our batch flush period.
const THROTTLE_MAX: Duration = FLUSH_EVERY;

/// How a spout executor waits while its tasks are at `topology.max.spout.pending` (Storm's
/// spout wait strategy). Waking for every ack message (each frees a few slots, refilled by a
/// few tuples and a partial batch, which wakes the next executor, and so on around the
/// pipeline) costs a wake-up per hop per message; instead a throttled task waits until a
/// batch's worth of room is free ([`resume_room`]), and the executor sleeps meanwhile, the
/// acks piling up in its queue. The sleep adapts to the rate at which trees complete: long
/// enough that a wait frees about a batch, short enough that it never frees half the window
/// (which would leave the pipeline short of work), between [`THROTTLE_MIN`] and
/// [`THROTTLE_MAX`]. A window that drains faster than the shortest sleep (a small
/// `max.spout.pending` on a fast pipeline), or a pipeline whose shortest sleep frees two
/// batches (sleeping there only adds delay: it cost the word count 15%), is waited for on the
/// receive queue instead, woken by each ack message; after [`MEAGRE_WAKES`] such wake-ups in a
/// row that each freed next to nothing, the task goes back to sleeping.
#[derive(Debug)]
struct Throttle {
    /// Zero: wait on the receive queue (woken by the next message).
    pause: Duration,
    /// Open trees when the current wait began (`None`: not waiting throttled).
    open_before: Option<usize>,
    /// Queue waits in a row that freed less than an eighth of the room.
    meagre: u32,
}

/// Queue waits in a row that each free less than an eighth of the room before a throttled
/// spout goes back to sleeping.
const MEAGRE_WAKES: u32 = 16;

/// The free slots a task at `topology.max.spout.pending` waits for before it emits again: a
/// batch's worth, or a quarter of a small window.
fn resume_room(max_pending: usize) -> usize {
    (max_pending / 4).clamp(1, super::message::BATCH)
}

impl Throttle {
    fn new() -> Throttle {
        Throttle {
            pause: THROTTLE_MIN,
            open_before: None,
            meagre: 0,
        }
    }

    /// A throttled wait begins with `open` trees open.
    fn begin(&mut self, open: usize) {
        self.open_before = Some(open);
    }

    /// The acks that came during the wait are handled and `open` trees remain, of at most
    /// `window`: adapt the next wait to how many completed meanwhile.
    fn adapt(&mut self, open: usize, window: usize, room: usize) {
        let Some(before) = self.open_before.take() else {
            return;
        };
        let freed = before.saturating_sub(open);
        if self.pause.is_zero() {
            // Waiting on the queue: fine while wake-ups bring a fair share of a batch; a
            // wake-up per ack or two, again and again, is what sleeping avoids.
            self.meagre = if freed * 8 < room { self.meagre + 1 } else { 0 };
            if self.meagre >= MEAGRE_WAKES {
                self.meagre = 0;
                self.pause = THROTTLE_MIN;
            }
        } else if freed * 2 > window || (self.pause == THROTTLE_MIN && freed >= 2 * room) {
            // The window nearly drained while we slept, or even the shortest sleep frees
            // two batches (a fast pipeline, where sleeping only adds delay): wait less.
            self.pause /= 2;
            if self.pause < THROTTLE_MIN {
                self.pause = Duration::ZERO;
            }
        } else if freed < room {
            // Not a batch's worth yet: wait longer next time.
            self.pause = (self.pause * 2).clamp(THROTTLE_MIN, THROTTLE_MAX);
        }
    }
}

pub(crate) struct SpoutExecutor {
    pub(crate) inbox: Receiver<Message>,
    pub(crate) outbox: Outbox,
    pub(crate) tasks: Vec<SpoutSlot>,
    pub(crate) first_task: u32,
    pub(crate) max_pending: Option<usize>,
    /// `Some(timeout)` when message timeouts are on and acking is on.
    pub(crate) timeout: Option<Duration>,
    /// Trees whose root hashes at or below this have their complete latency measured
    /// (`topology.stats.sample.rate`).
    pub(crate) sample_below: u64,
    pub(crate) control: Arc<RunControl>,
    /// Scratch for the collector: ids to ack at once, by the current call.
    pub(crate) ack_now: Vec<Value>,
    /// The run's clock as read at the start of the current round (the start time of trees
    /// opened during it).
    pub(crate) round_start: Instant,
    /// Paused by the operator (see `RunControl::paused`), as last seen.
    pub(crate) inactive: bool,
    pub(crate) checkpoints: Option<Checkpointing>,
    /// Its tasks were opened by an executor before a rebalance: they go on as they were.
    pub(crate) resumed: bool,
    /// The bolt executors chained onto this one, run on its thread.
    pub(crate) guests: Guests,
    /// With guests: the trees started this round, settled once the guests have handled them.
    pub(crate) ledger: Option<ChainLedger>,
    /// Scratch for settling the ledger, kept between rounds.
    pub(crate) settling: Vec<(u64, Held)>,
    /// The guest that is the only receiver of the spouts' default stream, chained right onto
    /// them: when it is a `filter`, the spouts may evaluate it as they read (`run_filters`).
    pub(crate) sole_receiver: Option<String>,
    /// When that receiver's output goes to a `count` alone, which may take it folded (see
    /// `Spout::run_fold`): per task, where its counts go.
    pub(crate) count_targets: Vec<FoldTarget>,
    /// Per task, when the spout's lines go to a bolt of its own executors that folds its output
    /// into counts for the `count` after it (`split` in `wordcount.yaml`): the fold the spout
    /// may run, and where it goes (see `counting_past` in `builder.rs`).
    pub(crate) folds_past_a_bolt: Vec<(Box<dyn ReaderFold>, FoldTarget)>,
    /// Per task, when the spout's lines go, shuffled, to a `filter` of its own worker alone
    /// that runs on threads of its own (not chained: in a topology that keeps state): its
    /// condition, and where the lines it rejects count (see `filtering_past` in `builder.rs`).
    pub(crate) filters_past_a_bolt: Vec<(crate::expr::Compiled, RejectTarget)>,
}

/// A spout executor's pacing between rounds: its waits, flushes and timeout rotation.
struct Pacing {
    throttle: Throttle,
    /// Free slots a throttled task waits for.
    room: usize,
    /// `max_pending` over all the executor's tasks.
    window: usize,
    /// When open trees are next checked against the message timeout.
    next_rotate: Option<Instant>,
    /// The wait on the receive queue while idle, doubled while nothing comes.
    backoff: Duration,
    last_flush: Instant,
}

/// How many times per message timeout the open trees are checked for expiry: a tree fails
/// between one and 1.25 timeouts after it started (Storm's rotation, once per timeout, lets it
/// live up to two), so a lost tuple is replayed sooner and at a steadier delay.
const CHECKS_PER_TIMEOUT: u32 = 4;

/// The time between two expiry checks for a message timeout of `timeout`.
fn rotation(timeout: Duration) -> Duration {
    timeout / CHECKS_PER_TIMEOUT
}

/// The shortest idle wait of a spout executor, and where it starts again once busy.
const BACKOFF_MIN: Duration = Duration::from_micros(50);
/// The longest idle wait of a spout executor.
const BACKOFF_MAX: Duration = Duration::from_millis(5);

impl Pacing {
    /// `wait`, cut short at the next timeout rotation by `clock`.
    fn until_rotate(&self, wait: Duration, clock: &Clock) -> Duration {
        match self.next_rotate {
            Some(at) => wait.min(clock.wait_for(at)),
            None => wait,
        }
    }
}

/// The collector a call into spout task `slot` emits through, and the spout to call: the one
/// way the executor calls a spout.
#[inline]
pub(crate) fn spout_call<'a>(
    slot: &'a mut SpoutSlot,
    outbox: &'a mut Outbox,
    ack_now: &'a mut Vec<Value>,
    now: Instant,
) -> (&'a mut dyn Spout, SpoutOut<'a>) {
    let out = SpoutOut {
        em: &mut slot.emitter,
        outbox,
        trees: &mut slot.state.trees,
        now,
        ack_now,
        round: slot.state.side.as_ref().map(|s| s.round + 1),
    };
    (&mut *slot.component, out)
}

impl SpoutExecutor {
    pub(crate) fn run(mut self) -> anyhow::Result<ExecutorReport> {
        let mut report = ExecutorReport::default();
        self.guests.start()?;
        if self.resumed {
            self.outbox.drain_while_blocked(self.inbox.clone());
        } else {
            self.open_all()?;
        }
        self.run_filters();
        let now = self.control.clock.now();
        let mut pacing = Pacing {
            throttle: Throttle::new(),
            room: self.max_pending.map_or(1, resume_room),
            window: self.max_pending.unwrap_or(0) * self.tasks.len(),
            next_rotate: self.timeout.map(|t| now + rotation(t)),
            backoff: BACKOFF_MIN,
            last_flush: now,
        };
        while self.tasks.iter().any(|t| !t.finished) || self.guests.unfinished() {
            if self.control.park.load(Ordering::Relaxed) {
                // Acker answers already queued are taken now; later ones follow the tasks.
                self.drain_acks(&mut report)?;
                self.announce();
                self.outbox.flush_all();
                self.pump_guests(&mut report)?;
                self.outbox.flush_all();
                let mut report = self.parked(report);
                report.inbox.insert(0, self.inbox.clone());
                return Ok(report);
            }
            self.round_start = self.control.clock.now();
            // Acks and fails from the acker first.
            let handled = self.drain_acks(&mut report)?;
            let open = self.open_trees();
            pacing.throttle.adapt(open, pacing.window, pacing.room);
            self.expire_due(&mut pacing)?;
            let busy = self.run_round(pacing.room)?;
            self.announce();
            self.markers_due()?;
            // What the round emitted goes through the chained bolts at once.
            if !self.guests.is_empty() {
                self.outbox.flush_chained();
                self.pump_guests(&mut report)?;
            }
            if busy || handled {
                pacing.backoff = BACKOFF_MIN;
                if self.control.clock.since(pacing.last_flush) >= FLUSH_EVERY {
                    self.outbox.flush();
                    pacing.last_flush = self.control.clock.now();
                }
                continue;
            }
            if !self.idle_wait(&mut pacing, &mut report)? {
                break;
            }
        }
        self.close_all();
        self.publish_holds();
        self.guests.close();
        Ok(self.parked(report))
    }

    /// The report with the tasks handed back.
    fn parked(&mut self, report: ExecutorReport) -> ExecutorReport {
        let mut report = ExecutorReport {
            tasks: vec![Parked::Spouts {
                tasks: std::mem::take(&mut self.tasks),
                inactive: self.inactive,
            }],
            ..report
        };
        self.guests.park_into(&mut report);
        report
    }

    /// Open and activate every task.
    fn open_all(&mut self) -> anyhow::Result<()> {
        self.outbox.drain_while_blocked(self.inbox.clone());
        for t in &mut self.tasks {
            t.emitter.stats.is_spout.store(true, Ordering::Relaxed);
            t.component.open(&t.ctx)?;
        }
        self.restore_positions()?;
        for t in &mut self.tasks {
            t.component.activate()?;
        }
        Ok(())
    }

    /// Offer each task the condition of the `filter` that alone receives its default stream,
    /// chained onto it task by task (see `Spout::run_filter`): a spout that takes it counts
    /// what it rejects in that filter task's counters instead of emitting it.
    fn run_filters(&mut self) {
        let n = self.tasks.len();
        let filters: Vec<(crate::expr::Compiled, RejectTarget)> = match &self.sole_receiver {
            Some(guest) => match self.guests.pure_filters(guest).filter(|f| f.len() == n) {
                Some(f) => f
                    .into_iter()
                    .map(|(filter, stats)| (filter, RejectTarget::new(vec![stats])))
                    .collect(),
                None => Vec::new(),
            },
            None => std::mem::take(&mut self.filters_past_a_bolt),
        };
        for t in self.tasks.iter_mut() {
            t.emitter.filtered_for = None;
        }
        for (t, (filter, target)) in self.tasks.iter_mut().zip(filters) {
            if t.component.run_filter(&filter) {
                t.emitter.filtered_for = Some(Box::new(target));
            }
        }
        self.run_folds();
    }

    /// Offer each task the fold of the bolt that alone receives its default stream, chained
    /// onto it task by task, when that bolt folds lines where they are read, or folds its
    /// output into counts for the `count` after it (chained or not, see
    /// `folds_past_a_bolt`); see `Spout::run_fold`: a spout that takes it hands each chunk
    /// over folded.
    fn run_folds(&mut self) {
        for t in &mut self.tasks {
            t.emitter.folded_for = None;
        }
        let n = self.tasks.len();
        let targets: Vec<(Box<dyn ReaderFold>, FoldTarget)> = match self.sole_receiver.clone() {
            None => std::mem::take(&mut self.folds_past_a_bolt),
            Some(guest) => match self.guests.reader_folds(&guest).filter(|f| f.len() == n) {
                Some(folds) => folds
                    .into_iter()
                    .map(|(fold, task, stats)| (fold, FoldTarget::one(task, stats)))
                    .collect(),
                None => self.counting_folds(&guest),
            },
        };
        for (t, (fold, target)) in self.tasks.iter_mut().zip(targets) {
            if t.emitter.filtered_for.is_none() && t.component.run_fold(fold) {
                t.emitter.folded_for = Some(target);
            }
        }
    }

    /// When guest `guest` folds its output into counts for the `count` after it (see
    /// `Bolt::counting_fold`), task by task: each fold and where it goes.
    fn counting_folds(&mut self, guest: &str) -> Vec<(Box<dyn ReaderFold>, FoldTarget)> {
        let folds = self.guests.counting_folds(guest);
        let paired = folds.filter(|f| f.len() == self.tasks.len());
        let targets = std::mem::take(&mut self.count_targets);
        if targets.len() != self.tasks.len() {
            return Vec::new();
        }
        paired.into_iter().flatten().zip(targets).collect()
    }

    /// Close every task and settle its counts of lost and replayed tuples.
    fn close_all(&mut self) {
        self.outbox.flush_all();
        for t in self.tasks.iter_mut().filter(|t| !t.closed) {
            t.closed = true;
            t.component.close();
            // Fails that were not given up on were replayed.
            let stats = &t.emitter.stats;
            let lost = t.component.lost();
            stats.lost.store(lost, Ordering::Relaxed);
            let failed = stats.failed.load(Ordering::Relaxed);
            stats
                .replayed
                .store(failed.saturating_sub(lost), Ordering::Relaxed);
        }
    }

    /// Trees open across the executor's tasks.
    fn open_trees(&self) -> usize {
        self.tasks.iter().map(|t| t.state.trees.len()).sum()
    }

    /// Handle every acker answer queued (or held back while the outbox was blocked). Returns
    /// whether there was any.
    fn drain_acks(&mut self, report: &mut ExecutorReport) -> anyhow::Result<bool> {
        let mut handled = false;
        while let Some(m) = self
            .outbox
            .take_drained()
            .or_else(|| self.guests.take_drained())
            .or_else(|| self.inbox.try_recv().ok())
        {
            handled = true;
            self.on_message(m, report)?;
        }
        Ok(handled)
    }

    /// Fail the trees past the message timeout, when their rotation is due.
    fn expire_due(&mut self, pacing: &mut Pacing) -> anyhow::Result<()> {
        if let (Some(at), Some(every)) = (pacing.next_rotate, self.timeout) {
            if self.round_start >= at {
                self.expire()?;
                pacing.next_rotate = Some(self.round_start + rotation(every));
            }
        }
        Ok(())
    }

    /// One round over the tasks: each active one gets up to a batch of `next_tuple` calls.
    /// Returns whether any spout said it was busy.
    fn run_round(&mut self, room: usize) -> anyhow::Result<bool> {
        let stopping = self.control.stop.load(Ordering::Relaxed);
        let paused = self.control.paused.load(Ordering::Relaxed);
        if paused != self.inactive && !stopping {
            self.inactive = paused;
            self.switch_activation(paused)?;
        }
        // Some worker has more arriving than it takes: nothing new until it caught up.
        let held = self.control.congestion.active();
        let mut busy = false;
        for i in 0..self.tasks.len() {
            busy |= self.task_round(i, stopping, held, room)?;
        }
        Ok(busy)
    }

    /// Task `i`'s part of a round; `held`: it may not emit anything new.
    fn task_round(
        &mut self,
        i: usize,
        stopping: bool,
        held: bool,
        room: usize,
    ) -> anyhow::Result<bool> {
        let slot = &mut self.tasks[i];
        if slot.finished {
            return Ok(false);
        }
        if stopping && slot.state.phase != Phase::Deactivated {
            slot.state.phase = Phase::Deactivated;
            // A paused spout was told already.
            if !self.inactive {
                slot.component.deactivate()?;
            }
        }
        match slot.state.phase {
            Phase::Deactivated => {
                if !slot.state.trees.is_empty() && self.control.abandon.load(Ordering::Relaxed) {
                    let given_up = slot
                        .state
                        .trees
                        .expire(self.control.clock.now(), Duration::ZERO);
                    let stats = &slot.emitter.stats;
                    TaskStats::add(&stats.abandoned, given_up.len() as u64);
                    stats.pending.store(0, Ordering::Relaxed);
                }
                if slot.state.trees.is_empty() {
                    self.finish_task(i)?;
                }
                return Ok(false);
            }
            _ if self.inactive || held => return Ok(false),
            Phase::Throttled => {
                let open = slot.state.trees.len();
                if self.max_pending.is_some_and(|max| open + room > max) {
                    return Ok(false);
                }
                slot.state.phase = Phase::Active;
            }
            Phase::Active | Phase::Exhausted => {}
        }
        let busy = self.call_batch(i)?;
        // Finished only when the spout has nothing more (not even a replay) and every tree it
        // started is complete.
        let state = &self.tasks[i].state;
        if state.phase == Phase::Exhausted && state.trees.is_empty() {
            self.finish_task(i)?;
        }
        Ok(busy)
    }

    /// Up to a batch of `next_tuple` calls into task `i`, while it is under max pending and
    /// says it is busy. Returns whether it did.
    fn call_batch(&mut self, i: usize) -> anyhow::Result<bool> {
        // How long the calls take is measured on the machine's clock, whatever the run's.
        let round = Instant::now();
        self.round_start = self.control.clock.now();
        let mut busy = false;
        for call in 0..super::message::BATCH {
            let open = self.tasks[i].state.trees.len();
            if self.max_pending.is_some_and(|max| open >= max) {
                self.tasks[i].state.phase = Phase::Throttled;
                break;
            }
            // A slow spout (a child process, say) gets one call per round, so acks and fails
            // are not kept waiting behind a whole batch of calls.
            if call == 1 && round.elapsed() > SLOW_CALL {
                break;
            }
            let status = self.next_tuple(i)?;
            self.settle(i)?;
            self.tasks[i].state.phase = match status {
                SpoutStatus::Exhausted => Phase::Exhausted,
                SpoutStatus::Busy | SpoutStatus::Idle => Phase::Active,
            };
            match status {
                SpoutStatus::Busy => busy = true,
                SpoutStatus::Idle | SpoutStatus::Exhausted => break,
            }
        }
        Ok(busy)
    }

    /// One `next_tuple` call into task `i`; an error that is not fatal is reported and counts
    /// as idle.
    #[inline]
    fn next_tuple(&mut self, i: usize) -> anyhow::Result<SpoutStatus> {
        if self.tasks[i].state.may_block {
            self.idle_guests()?;
        }
        let (spout, mut out) = spout_call(
            &mut self.tasks[i],
            &mut self.outbox,
            &mut self.ack_now,
            self.round_start,
        );
        match spout.next_tuple(&mut out) {
            Ok(s) => Ok(s),
            Err(e) if e.is::<FatalError>() => Err(e),
            Err(e) => {
                crate::components::SpoutCollector::report_error(&mut out, &format!("{e:#}"));
                Ok(SpoutStatus::Idle)
            }
        }
    }

    /// After a round: announce the trees started to the acker (one message per acker), and
    /// publish each task's progress.
    fn announce(&mut self) {
        self.flush_inits();
        for t in &self.tasks {
            if let Some((done, total)) = t.component.progress() {
                t.emitter.stats.progress_done.store(done, Ordering::Relaxed);
                t.emitter
                    .stats
                    .progress_total
                    .store(total, Ordering::Relaxed);
            }
        }
    }

    /// After the guests handled a round: a held tree they completed is acked to its spout here,
    /// one they failed is failed, and the others are announced to the acker with the XOR of
    /// the edges still open (see `chain_ledger.rs`).
    fn settle_chain(&mut self, report: &mut ExecutorReport) -> anyhow::Result<()> {
        let Some(ledger) = &self.ledger else {
            return Ok(());
        };
        let mut held = std::mem::take(&mut self.settling);
        ledger.take_into(&mut held);
        for &(root, h) in &held {
            let i = h.task.wrapping_sub(self.first_task) as usize;
            if h.failed {
                self.on_outcome(i, root, streams::ACK_FAIL, report)?;
            } else if h.val == 0 {
                self.on_outcome(i, root, streams::ACK_ACK, report)?;
            } else if let Some(t) = self.tasks.get_mut(i) {
                t.state.trees.settled_open(root);
                t.emitter.inits.push((root, h.val));
            }
        }
        self.settling = held;
        self.flush_inits();
        Ok(())
    }

    /// Run the chained bolts on what the round emitted (the ledger first told of the trees it
    /// started), then settle the trees they completed.
    fn pump_guests(&mut self, report: &mut ExecutorReport) -> anyhow::Result<()> {
        self.publish_holds();
        self.guests.pump()?;
        self.settle_chain(report)
    }

    /// Send what is batched on, and let the chained bolts poll and send theirs (the ledger
    /// first told of the trees started).
    fn idle_guests(&mut self) -> anyhow::Result<()> {
        self.outbox.flush_all();
        self.publish_holds();
        self.guests.idle()
    }

    /// Hand the ledger the trees each task started since the last time, before the chained
    /// bolts run (a tree they ack before it is handed over is settled by the acker instead:
    /// still exact, only slower).
    fn publish_holds(&mut self) {
        let Some(ledger) = &self.ledger else {
            return;
        };
        for t in &mut self.tasks {
            if !t.emitter.holds.is_empty() {
                ledger.hold_all(t.emitter.task, &mut t.emitter.holds);
            }
        }
    }

    /// Send each task's trees started (and acks) to the acker.
    fn flush_inits(&mut self) {
        for t in &mut self.tasks {
            t.emitter.flush_acks(&mut self.outbox);
        }
    }

    /// Settle its tasks' trees in `ledger` (`Some`: it hosts chained bolts) or announce them to
    /// the acker (`None`).
    pub(crate) fn set_ledger(&mut self, ledger: Option<ChainLedger>) {
        for t in &mut self.tasks {
            t.emitter.ledger = ledger.clone();
        }
        self.ledger = ledger;
    }

    /// Nothing to do right now: send partial batches on, then wait for acks or a moment.
    /// Returns false when the receive queue is gone (the run is over).
    fn idle_wait(
        &mut self,
        pacing: &mut Pacing,
        report: &mut ExecutorReport,
    ) -> anyhow::Result<bool> {
        self.idle_guests()?;
        pacing.last_flush = self.control.clock.now();
        let at_max = self
            .tasks
            .iter()
            .any(|t| t.state.phase == Phase::Throttled && !t.finished);
        let wait = if at_max {
            // Let the acks gather (see `Throttle`).
            pacing.throttle.begin(self.open_trees());
            if !pacing.throttle.pause.is_zero() {
                std::thread::sleep(pacing.until_rotate(pacing.throttle.pause, &self.control.clock));
                return Ok(true);
            }
            THROTTLE_MAX
        } else {
            pacing.backoff
        };
        // A guest's tick or poll cuts the wait short.
        let wait = match self.guests.deadline() {
            Some(at) => wait.min(self.control.clock.wait_for(at)),
            None => wait,
        };
        match self
            .inbox
            .recv_timeout(pacing.until_rotate(wait, &self.control.clock))
        {
            Ok(m) => self.on_message(m, report)?,
            Err(RecvTimeoutError::Timeout) if !at_max => {
                pacing.backoff = (pacing.backoff * 2).min(BACKOFF_MAX)
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Ok(false),
        }
        Ok(true)
    }

    fn on_message(&mut self, msg: Message, report: &mut ExecutorReport) -> anyhow::Result<()> {
        // Spouts receive only the acker's answers.
        let Message::Acks(a) = msg else {
            return Ok(());
        };
        let i = a.task.wrapping_sub(self.first_task) as usize;
        for (root, _) in a.pairs {
            self.on_outcome(i, root, a.stream, report)?;
        }
        Ok(())
    }

    /// The acker says the tree `root` of task index `i` completed (`__ack_ack`) or failed.
    fn on_outcome(
        &mut self,
        i: usize,
        root: u64,
        stream: crate::model::plan::StreamId,
        report: &mut ExecutorReport,
    ) -> anyhow::Result<()> {
        let Some(slot) = self.tasks.get_mut(i) else {
            return Ok(());
        };
        let Some((mut id, started)) = slot.state.trees.close(root) else {
            return Ok(());
        };
        if self.tree_over(i, root, stream == streams::ACK_ACK, &mut id) {
            TaskStats::add(&self.tasks[i].emitter.stats.acked, 1);
            return Ok(());
        }
        let slot = &mut self.tasks[i];
        let (spout, mut out) =
            spout_call(slot, &mut self.outbox, &mut self.ack_now, self.round_start);
        if stream == streams::ACK_ACK {
            TaskStats::add(&out.em.stats.acked, 1);
            // Complete latency is sampled, `topology.stats.sample.rate` of the trees (by a hash
            // of the root: random roots and numbered ones alike), as Storm samples its
            // statistics: a clock read per tree was a sixth of the spout's time.
            if root.wrapping_mul(0x9E37_79B9_7F4A_7C15) <= self.sample_below {
                let us = started.elapsed().as_micros() as u64;
                report.complete_latency.record(us);
                TaskStats::add(&out.em.stats.complete_us, us);
                TaskStats::add(&out.em.stats.completes_sampled, 1);
            }
            spout.ack(id, &mut out)?;
        } else {
            TaskStats::add(&out.em.stats.failed, 1);
            spout.fail(id, &mut out)?;
        }
        self.settle(i)
    }

    /// Trees older than the message timeout fail (Storm: the pending map rotates on ticks).
    fn expire(&mut self) -> anyhow::Result<()> {
        let Some(timeout) = self.timeout else {
            return Ok(());
        };
        for i in 0..self.tasks.len() {
            for (root, mut id) in self.tasks[i].state.trees.expire(self.round_start, timeout) {
                if self.tree_over(i, root, false, &mut id) {
                    continue;
                }
                let slot = &mut self.tasks[i];
                TaskStats::add(&slot.emitter.stats.timed_out, 1);
                TaskStats::add(&slot.emitter.stats.failed, 1);
                let (spout, mut out) =
                    spout_call(slot, &mut self.outbox, &mut self.ack_now, self.round_start);
                spout.fail(id, &mut out)?;
                self.settle(i)?;
            }
        }
        Ok(())
    }

    /// After a call into spout task `i`: note the peak of open trees for `--stats`, and ack at
    /// once the ids that need no tracking (acking off, or nobody received the tuple), as Storm
    /// does — including what those acks emit in turn.
    pub(crate) fn settle(&mut self, i: usize) -> anyhow::Result<()> {
        loop {
            let slot = &mut self.tasks[i];
            let open = slot.state.trees.len() as u64;
            slot.emitter.stats.pending.store(open, Ordering::Relaxed);
            let peak = &slot.emitter.stats.pending_peak;
            if open > peak.load(Ordering::Relaxed) {
                peak.store(open, Ordering::Relaxed);
            }
            if self.ack_now.is_empty() {
                return Ok(());
            }
            for id in std::mem::take(&mut self.ack_now) {
                let slot = &mut self.tasks[i];
                TaskStats::add(&slot.emitter.stats.acked, 1);
                let (spout, mut out) =
                    spout_call(slot, &mut self.outbox, &mut self.ack_now, self.round_start);
                spout.ack(id, &mut out)?;
            }
        }
    }

    /// Tell the running spouts they were deactivated (`paused`) or activated again.
    fn switch_activation(&mut self, paused: bool) -> anyhow::Result<()> {
        let running = self
            .tasks
            .iter_mut()
            .filter(|t| !t.finished && t.state.phase != Phase::Deactivated);
        for t in running {
            if paused {
                t.component.deactivate()?;
            } else {
                t.component.activate()?;
            }
        }
        Ok(())
    }

    fn finish_task(&mut self, i: usize) -> anyhow::Result<()> {
        self.last_marker(i)?;
        let slot = &mut self.tasks[i];
        slot.finished = true;
        let from = slot.emitter.task;
        for &to in slot.emitter.router.downstream() {
            self.outbox.eos(from, to);
        }
        self.report_ended(i);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::message::BATCH;
    use super::*;

    #[test]
    fn a_throttled_task_waits_for_a_batch_or_a_quarter_of_a_small_window() {
        assert_eq!(resume_room(4096), BATCH);
        assert_eq!(resume_room(100), 25);
        assert_eq!(resume_room(7), 1);
        assert_eq!(resume_room(1), 1);
    }

    /// One throttled wait that began with `before` trees open and ended with `after`.
    fn wait(t: &mut Throttle, before: usize, after: usize, window: usize) {
        t.begin(before);
        t.adapt(after, window, resume_room(window));
    }

    #[test]
    fn the_pause_grows_while_a_wait_frees_less_than_a_batch() {
        let mut t = Throttle::new();
        assert_eq!(t.pause, THROTTLE_MIN);
        wait(&mut t, 4096, 4090, 4096);
        assert_eq!(t.pause, THROTTLE_MIN * 2);
        for _ in 0..20 {
            wait(&mut t, 4096, 4090, 4096);
        }
        assert_eq!(
            t.pause, THROTTLE_MAX,
            "never longer than Storm's 1 ms spout wait"
        );
    }

    #[test]
    fn the_pause_holds_while_a_wait_frees_a_batch_or_more() {
        let mut t = Throttle::new();
        wait(&mut t, 4096, 4090, 4096);
        let pause = t.pause;
        wait(&mut t, 4096, 4096 - BATCH, 4096);
        assert_eq!(t.pause, pause);
    }

    #[test]
    fn a_window_that_drains_during_the_shortest_sleep_is_waited_for_on_the_queue() {
        let mut t = Throttle::new();
        wait(&mut t, 4096, 4090, 4096);
        wait(&mut t, 4096, 1000, 4096);
        assert_eq!(
            t.pause, THROTTLE_MIN,
            "more than half the window freed: halved"
        );
        wait(&mut t, 1, 0, 1);
        assert_eq!(
            t.pause,
            Duration::ZERO,
            "below the shortest sleep: on the queue"
        );
        wait(&mut t, 1, 0, 1);
        assert_eq!(
            t.pause,
            Duration::ZERO,
            "stays there while each wait drains it"
        );
        for _ in 1..MEAGRE_WAKES {
            wait(&mut t, 4096, 4095, 4096);
        }
        assert_eq!(t.pause, Duration::ZERO, "a few meagre wake-ups are borne");
        wait(&mut t, 4096, 4095, 4096);
        assert_eq!(
            t.pause, THROTTLE_MIN,
            "back to sleeping after many wake-ups that each freed a slot or so"
        );
    }

    #[test]
    fn a_fast_pipeline_is_waited_for_on_the_queue() {
        let mut t = Throttle::new();
        wait(&mut t, 4096, 4096 - 2 * BATCH, 4096);
        assert_eq!(
            t.pause,
            Duration::ZERO,
            "the shortest sleep freed two batches: sleeping only adds delay"
        );
        wait(&mut t, 4096, 4096 - BATCH, 4096);
        assert_eq!(
            t.pause,
            Duration::ZERO,
            "wake-ups that free enough stay on the queue"
        );
    }

    #[test]
    fn only_a_throttled_wait_adapts_the_pause() {
        let mut t = Throttle::new();
        t.adapt(0, 4096, BATCH);
        assert_eq!(t.pause, THROTTLE_MIN);
    }
}
