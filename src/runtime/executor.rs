//! What every executor shares: the run-wide switches ([`RunControl`]), what an executor hands
//! back when it ends or parks ([`ExecutorReport`], [`Parked`]) and its tasks ([`TaskSlot`]).
//! An executor is one thread running the component code of one or more tasks: spouts
//! (`spout_executor.rs`), bolts (`bolt_executor.rs`, and chained bolts on their host's thread:
//! `guests.rs`) and the acker (`acker_executor.rs`).

use super::acker::Acker;
use super::bolt_task::BoltTask;
use super::checkpoint::spout_side::SpoutSide;
use super::collector::Emitter;
use super::message::Message;
use super::metrics::Histogram;
use super::open_trees::OpenTrees;
use crate::components::{Spout, TaskContext};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// The longest a partial batch waits in an outbox while its executor stays busy.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(1);
/// Messages a bolt executor handles from its queue, once one has arrived, before it looks at
/// its timers and flushes.
const DRAIN: usize = 15;

/// Run-wide switches every executor watches.
#[derive(Debug, Default)]
pub(crate) struct RunControl {
    /// Stop the spouts and drain (signal, `--duration`, closed output).
    pub(crate) stop: AtomicBool,
    /// Storm's deactivated topology (`storm deactivate`, the UI): spouts are not asked for
    /// tuples until it is cleared; acks and replays go on.
    pub(crate) paused: AtomicBool,
    /// A rebalance is under way (Storm's `REBALANCING` status).
    pub(crate) rebalancing: AtomicBool,
    /// Executors stop where they are and hand their tasks back, to be started again in a
    /// new layout (a rebalance of a local run): nothing is closed or cleaned up.
    pub(crate) park: AtomicBool,
    /// A drain's deadline has passed: spouts give up their open trees (counted as
    /// abandoned) and bolts drop the tuples still queued, so the run ends.
    pub(crate) abandon: AtomicBool,
    /// Workers with more arriving than they take: spouts hold back while any is.
    pub(crate) congestion: super::congestion::Congestion,
    /// What the executors' timers (ticks, polls, message timeouts, flushes) and their tasks
    /// go by: the machine's clocks, or a clock a test moves.
    pub(crate) clock: crate::clock::Clock,
}

/// What an executor hands back when it ends.
#[derive(Debug, Default)]
pub(crate) struct ExecutorReport {
    pub(crate) complete_latency: Histogram,
    /// Its tasks, whole: moved into new executors when the run is rebalanced.
    /// (A host's report holds its guests' tasks too.)
    pub(crate) tasks: Vec<Parked>,
    /// A parked executor's receive queues (its own and its guests'): what is still queued or
    /// on its way is handed to the tasks' new executors.
    pub(crate) inbox: Vec<Receiver<Message>>,
}

/// The tasks of an executor that ended or parked.
pub(crate) enum Parked {
    /// Spout tasks, and whether they had been told they were deactivated.
    Spouts {
        tasks: Vec<SpoutSlot>,
        inactive: bool,
    },
    Bolts(Vec<BoltSlot>),
    Ackers(Vec<AckerSlot>),
}

impl std::fmt::Debug for Parked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Parked::Spouts { tasks, .. } => write!(f, "Spouts({} tasks)", tasks.len()),
            Parked::Bolts(tasks) => write!(f, "Bolts({} tasks)", tasks.len()),
            Parked::Ackers(tasks) => write!(f, "Ackers({} tasks)", tasks.len()),
        }
    }
}

/// One task of an executor: its component instance, collector state, end-of-input bookkeeping,
/// and what the executor keeps per task beside them (`state`: a spout's trees and phase).
pub(crate) struct TaskSlot<C: ?Sized, S = ()> {
    pub(crate) ctx: TaskContext,
    pub(crate) component: Box<C>,
    pub(crate) emitter: Emitter,
    pub(crate) state: S,
    /// Upstream tasks that must say end-of-input before this task finishes.
    pub(crate) eos_expected: u32,
    /// The upstream tasks that have said it: a marker sent again after a link reconnected
    /// counts once.
    pub(crate) eos_seen: BTreeSet<u32>,
    pub(crate) finished: bool,
    /// Its component was closed (`cleanup`, `close`): an executor that takes the task over
    /// after a rebalance does not close it again.
    pub(crate) closed: bool,
}

impl<C: ?Sized, S: Default> TaskSlot<C, S> {
    /// A task that finishes once `eos_expected` upstream tasks have said end of input.
    pub(crate) fn new(
        ctx: TaskContext,
        component: Box<C>,
        emitter: Emitter,
        eos_expected: u32,
    ) -> Self {
        TaskSlot {
            ctx,
            component,
            emitter,
            state: S::default(),
            eos_expected,
            eos_seen: BTreeSet::new(),
            finished: false,
            closed: false,
        }
    }
}

/// One task of the acker's executor (`acker_executor.rs`).
pub(crate) type AckerSlot = TaskSlot<Acker>;

/// One task of a bolt executor: a plain bolt, or one wrapped for checkpoints.
pub(crate) type BoltSlot = TaskSlot<dyn BoltTask>;

/// Where a spout task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Phase {
    /// `next_tuple` is called every round.
    #[default]
    Active,
    /// At `topology.max.spout.pending`: waits for `resume_room` (`spout_executor.rs`) free slots.
    Throttled,
    /// Stopping (Storm's deactivate): no more `next_tuple`; open trees still complete.
    Deactivated,
    /// The spout's last `next_tuple` said so. It is still called (it replays what fails
    /// later); it finishes once every tree it started is complete.
    Exhausted,
}

/// What a spout task keeps beside its component: its open trees and its phase.
#[derive(Debug, Default)]
pub(crate) struct SpoutState {
    pub(crate) trees: OpenTrees,
    pub(crate) phase: Phase,
    /// Its part in checkpoints, when the run takes them.
    pub(crate) side: Option<SpoutSide>,
    /// The spout may block in `next_tuple` (`Spout::may_block`, read once when the task is
    /// built): what it emitted is sent on before each call.
    pub(crate) may_block: bool,
}

/// One task of a spout executor.
pub(crate) type SpoutSlot = TaskSlot<dyn Spout, SpoutState>;

/// An executor that waits on its receive queue and handles what comes (bolts, the acker).
pub(crate) trait Receiving {
    fn inbox(&self) -> &Receiver<Message>;
    fn handle(&mut self, msg: Message) -> anyhow::Result<()>;
    /// The clock its deadlines are instants of.
    fn clock(&self) -> &crate::clock::Clock;
}

/// Wait for a message until `deadline` (or for ever) and handle it, with up to [`DRAIN`] more
/// queued by then: they are handled before the executor looks at its timers and flushes (the
/// acker gets many small messages, and each pass of a run loop reads the clock). Returns
/// false when the queue is gone.
#[inline]
pub(crate) fn receive(
    exec: &mut impl Receiving,
    deadline: Option<Instant>,
) -> anyhow::Result<bool> {
    let msg = match deadline {
        Some(d) => {
            let wait = exec.clock().wait_for(d);
            exec.inbox().recv_timeout(wait)
        }
        None => exec
            .inbox()
            .recv()
            .map_err(|_| RecvTimeoutError::Disconnected),
    };
    match msg {
        Ok(m) => {
            exec.handle(m)?;
            for _ in 0..DRAIN {
                match exec.inbox().try_recv() {
                    Ok(m) => exec.handle(m)?,
                    Err(_) => break,
                }
            }
        }
        Err(RecvTimeoutError::Timeout) => {}
        Err(RecvTimeoutError::Disconnected) => return Ok(false),
    }
    Ok(true)
}
