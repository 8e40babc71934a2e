//! Components: the spout and bolt interfaces the runtime drives (Storm's ISpout / IBolt), the
//! collectors they emit through, and the built-ins, one file each.

pub(crate) mod aggregate;
pub(crate) mod builtin;
pub(crate) mod catalog;
mod chaos;
pub(crate) mod committed;
pub mod count;
mod dedupe;
mod discard;
mod file_sink;
mod filter;
mod generate;
mod held;
mod http;
mod http_sink;
pub(crate) mod jdbc;
mod join;
mod kafka;
mod log;
mod lookup;
mod map;
mod memory;
pub(crate) mod output_gate;
pub mod parse;
pub(crate) mod redis;
mod registry;
mod replay;
pub mod shell;
mod sink_args;
mod sink_format;
mod socket;
mod spill_file;
pub mod split;
#[cfg(test)]
mod state_check;
pub(crate) mod stdin_file;
pub(crate) mod stdout;
mod template;
mod test_words;

use catalog::{input_fields, input_positions, wired_stream};

use crate::config::Config;
use crate::model::plan::{Plan, StreamId};
use crate::model::Topology;
use crate::tuple::{Tuple, Value, Values};
use std::sync::Arc;
use std::time::Duration;

/// An error that ends the run (exit 1) instead of failing one tuple: a child process that keeps
/// crashing, a protocol the component cannot recover from.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FatalError(pub(crate) String);

impl FatalError {
    /// The error that ends a run when `bolt` cannot read a `__folded` tuple (never expected:
    /// the spout's fold made it, and counted its lines done, so going on would lose them).
    pub(crate) fn folded(bolt: &str, why: &str) -> anyhow::Error {
        FatalError(format!("{bolt}: a folded tuple: {why}")).into()
    }
}

/// What a task knows about where it runs (Storm's TopologyContext).
#[derive(Clone)]
pub struct TaskContext {
    pub topology: Arc<Topology>,
    pub plan: Arc<Plan>,
    pub component: String,
    pub task_id: u32,
    /// Index of this task within its component (0-based).
    pub task_index: u32,
    /// Topology config merged with the component's own `config`.
    pub config: Arc<Config>,
    /// Wakes the executor so it calls the component's `poll` soon (from any thread).
    pub waker: Waker,
    /// Whether the run is stopping (signal, `--duration`, a killed topology).
    pub stopping: Stopping,
    /// The time the task goes by (processing-time windows, idle inputs, rollovers): the
    /// machine's in a run, one moved by hand in tests.
    pub clock: crate::clock::Clock,
}

/// Whether the run is stopping: its spouts stop and it drains. A component that waits on
/// something outside (a child process) looks at it so it does not hold the stop up.
#[derive(Clone)]
pub struct Stopping(Arc<dyn Fn() -> bool + Send + Sync>);

impl Stopping {
    pub(crate) fn new(f: impl Fn() -> bool + Send + Sync + 'static) -> Stopping {
        Stopping(Arc::new(f))
    }

    /// For a component outside a run (tests): never stopping.
    pub fn never() -> Stopping {
        Stopping::new(|| false)
    }

    fn now(&self) -> bool {
        (self.0)()
    }
}

impl TaskContext {
    fn stream_name(&self, id: StreamId) -> &str {
        self.plan.stream_name(id)
    }

    fn component_of_task(&self, task: u32) -> &str {
        self.plan.component_of_task(task)
    }

    fn spec(&self) -> Option<&crate::model::Component> {
        self.topology.component(&self.component)
    }
}

/// The function a waker calls.
type WakeFn = Arc<dyn Fn() + Send + Sync>;

/// Wakes an executor from another thread (a shell component's reader, say). Clones share their
/// target, so a task moved to another executor (a rebalance) is woken there through every
/// clone its component kept.
#[derive(Clone)]
pub struct Waker(Arc<std::sync::RwLock<WakeFn>>);

impl Waker {
    pub(crate) fn new(f: impl Fn() + Send + Sync + 'static) -> Waker {
        Waker(Arc::new(std::sync::RwLock::new(Arc::new(f))))
    }

    /// Make this waker and every clone of it call `f` from now on.
    pub(crate) fn retarget(&self, f: impl Fn() + Send + Sync + 'static) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(f);
    }

    /// A waker that does nothing (tests).
    pub fn noop() -> Waker {
        Waker::new(|| {})
    }

    fn wake(&self) {
        let f = self.0.read().unwrap_or_else(|e| e.into_inner()).clone();
        f()
    }
}

/// What a spout's `next_tuple` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpoutStatus {
    /// Emitted something (or may have more at once): call again soon.
    Busy,
    /// Nothing now: the executor backs off briefly before calling again.
    Idle,
    /// No more input, ever (end of input).
    Exhausted,
}

/// How a spout emits (Storm's SpoutOutputCollector).
pub trait SpoutCollector {
    /// Emit on a stream; `msg_id` makes the tuple tracked (acked or failed later). Returns the
    /// receiving task ids.
    fn emit(&mut self, stream: StreamId, values: Values, msg_id: Option<Value>) -> Vec<u32>;
    /// `emit` without wanting the receiving task ids (cheaper: no list is built).
    fn send(&mut self, stream: StreamId, values: Values, msg_id: Option<Value>) {
        self.emit(stream, values, msg_id);
    }
    /// Emit to one chosen task (direct grouping).
    fn emit_direct(&mut self, task: u32, stream: StreamId, values: Values, msg_id: Option<Value>);
    /// Report a component error (counted, shown, kept under taskerrors).
    fn report_error(&mut self, msg: &str);
    /// Update a named metric.
    fn metric(&mut self, _name: &str, _value: &serde_json::Value) {}
    /// Count inputs the spout could not read and dropped (shown in the summary).
    fn dropped(&mut self, _n: u64) {}
    /// Report how far behind its input the spout is, per partition it reads (replacing the
    /// previous report): the UI's `/lag`, `/metrics` and `storm top` show it.
    fn lag(&mut self, _partitions: Vec<PartitionLag>) {}
    /// The next `n` tuples the spout would emit on its default stream are ones the filter it
    /// runs for (see [`Spout::run_filter`]) rejects: count them as emitted, executed and
    /// dropped by that filter, and acked (`tracked`: they would have had a message id),
    /// without building them. False when they must be emitted after all (no filter runs in the
    /// spout now, or something listens to the spout's emits): then the spout emits them.
    fn skip_filtered(&mut self, _n: u64, _tracked: bool) -> bool {
        false
    }
    /// The next `n` tuples the spout would emit on its default stream were folded on its
    /// reader threads by the bolt it runs a fold for (see [`Spout::run_fold`]) into `folded`:
    /// hand that to the bolt as one tuple, and count the `n` as emitted, executed and acked by
    /// it (and by the spout when `tracked`), without building them. False when they must be
    /// emitted after all (no fold runs in the spout now, or something listens to the spout's
    /// emits): then the spout emits them.
    fn fold_ahead(&mut self, _n: u64, _tracked: bool, _folded: Folded) -> bool {
        false
    }
}

/// What a [`ReaderFold`] made of a chunk of lines: the values of the one tuple that stands for
/// them, and how many tuples the bolt it goes to would have executed in their place.
#[derive(Debug, Clone, PartialEq)]
pub struct Folded {
    pub(crate) values: Values,
    pub(crate) executed: u64,
}

/// What a bolt chained onto a spout that reads fields apart folds on the spout's reader
/// threads (see [`Bolt::reader_fold`]): the values of each line of a chunk, in order, into
/// the one tuple that stands for them all.
pub trait ReaderFold: Send {
    /// Take the values of the next line of the chunk.
    fn add(&mut self, values: &[Value]);
    /// Take the next line of the chunk, as a spout reading plain lines emits it (one field).
    fn add_text(&mut self, _line: &str) {
        self.abandon();
    }
    /// The chunk has a line whose values were not read ahead: it cannot be folded.
    fn abandon(&mut self);
    /// The tuple that stands for the chunk's lines, if it can; either way the next line
    /// starts the next chunk.
    fn finish(&mut self) -> Option<Folded>;
    /// A fresh fold of the same kind, for another reader thread.
    fn fresh(&self) -> Box<dyn ReaderFold>;
}

/// How far a spout is behind one partition of its input (Storm's `KafkaOffsetLagResult`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartitionLag {
    pub(crate) topic: String,
    pub(crate) partition: i32,
    /// The offset committed for the spout (the next to read), -1 when there is none.
    pub(crate) committed: i64,
    /// The partition's end: the offset the next record written gets (its high watermark).
    pub(crate) head: i64,
    /// Records between the commit (or, without one, the start of the partition) and the end.
    pub(crate) lag: i64,
}

/// How a bolt emits and acks (Storm's OutputCollector).
pub trait BoltCollector {
    /// Emit on a stream, anchored to `anchors`. Returns the receiving task ids.
    fn emit(&mut self, stream: StreamId, anchors: &[&Tuple], values: Values) -> Vec<u32>;
    /// `emit` without wanting the receiving task ids (cheaper: no list is built).
    fn send(&mut self, stream: StreamId, anchors: &[&Tuple], values: Values) {
        self.emit(stream, anchors, values);
    }
    /// `send` of a tuple whose one value is the string `s`. The runtime routes on `s` and
    /// builds the tuple where it is queued (the word count's hot path).
    fn send_str(&mut self, stream: StreamId, anchors: &[&Tuple], s: &str) {
        self.send(stream, anchors, crate::tuple::one_str(s));
    }
    fn emit_direct(&mut self, task: u32, stream: StreamId, anchors: &[&Tuple], values: Values);
    fn ack(&mut self, input: &Tuple);
    fn fail(&mut self, input: &Tuple);
    fn report_error(&mut self, msg: &str);
    fn metric(&mut self, _name: &str, _value: &serde_json::Value) {}
    /// Count inputs the component could not read and dropped (shown in the summary).
    fn dropped(&mut self, _n: u64) {}
    /// The acker's answer to a spout task: the roots of its trees that completed (on
    /// `__ack_ack`) or failed (`__ack_fail`), as (root, 0) pairs. The runtime sends them as a
    /// `Message::Acks`; this default sends the roots as the values of one direct tuple.
    fn send_acks(&mut self, task: u32, stream: StreamId, pairs: Vec<(u64, u64)>) {
        let roots = pairs.iter().map(|&(root, _)| Value::Int(root as i64));
        self.emit_direct(task, stream, &[], roots.collect());
    }
}

/// A source of tuples (Storm's ISpout).
pub trait Spout: Send {
    fn open(&mut self, _ctx: &TaskContext) -> anyhow::Result<()> {
        Ok(())
    }
    fn next_tuple(&mut self, out: &mut dyn SpoutCollector) -> anyhow::Result<SpoutStatus>;
    fn ack(&mut self, _msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        Ok(())
    }
    fn fail(&mut self, _msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        Ok(())
    }
    fn activate(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
    fn deactivate(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
    /// Whether `next_tuple` may block for long (a child process that does not answer): then
    /// what the spout emitted before is sent on before each call, never held behind it.
    fn may_block(&self) -> bool {
        false
    }
    /// Progress as (done, total) bytes, for spouts that know it (`file`).
    fn progress(&self) -> Option<(u64, u64)> {
        None
    }
    /// Tuples given up after their retries (reported as lost; the run then exits 1).
    fn lost(&self) -> u64 {
        0
    }
    /// Where the spout is, for a checkpoint: enough for [`Spout::restore`] to go on exactly from
    /// here, emitting again every message it has not been told is acked (those still in
    /// flight, failed and waiting for a replay). `None`: this spout cannot resume (it starts
    /// from its beginning on a restore).
    fn position(&mut self) -> Option<Value> {
        None
    }
    /// Go on from a [`Spout::position`] of an earlier run (called after `open`, before the
    /// first `next_tuple`).
    fn restore(&mut self, _position: Value) -> anyhow::Result<()> {
        Ok(())
    }
    /// The position [`Spout::position`] just gave is saved under checkpoint `txid` (which
    /// commits later, see `committed`): for a spout that answers its clients once what they
    /// sent is committed.
    fn position_saved(&mut self, _txid: u64) {}
    /// The only receiver of the spout's default stream is a stateless `filter` chained onto it
    /// with condition `filter`: a spout that can evaluate it where it reads (on its reader
    /// threads) says so, and then offers each tuple the filter rejects to
    /// [`SpoutCollector::skip_filtered`] instead of emitting it. Called after `open` (and
    /// `restore`), before `next_tuple`.
    fn run_filter(&mut self, _filter: &crate::expr::Compiled) -> bool {
        false
    }
    /// The only receiver of the spout's default stream is a bolt chained onto it that can fold
    /// lines where they are read (see [`Bolt::reader_fold`]): a spout that reads fields on
    /// reader threads says so, runs `fold` (a fresh one per thread) over each chunk of lines
    /// it reads, and offers each chunk folded whole to [`SpoutCollector::fold_ahead`] instead
    /// of emitting its lines. Called after `open` (and `restore`), before `next_tuple`.
    fn run_fold(&mut self, _fold: Box<dyn ReaderFold>) -> bool {
        false
    }
    fn close(&mut self) {}
}

/// The state of a stateful bolt (`stateful: true`): key/value pairs of typed values, saved at
/// each checkpoint and given back when a run resumes (Storm's `KeyValueState`).
pub trait BoltState {
    /// Hand `sink` the entries changed since the last call (`None`: removed), one at a time,
    /// which is how a checkpoint takes them, so state of many keys is never all held at once;
    /// with `all`, every entry (the first checkpoint of a run). Clears the record of changes.
    /// Fails when state kept on disk (spilled keys) cannot be read, or when `sink` fails.
    fn changes_into(&mut self, all: bool, sink: &mut ChangeSink<'_>) -> anyhow::Result<()>;
    /// [`BoltState::changes_into`] collected in `out` (tests compare states so).
    fn changes(&mut self, all: bool, out: &mut Vec<(Value, Option<Value>)>) -> anyhow::Result<()> {
        self.changes_into(all, &mut |k, v| {
            out.push((k.clone(), v.cloned()));
            Ok(())
        })
    }
    /// Start from these entries (the last committed checkpoint), replacing what is held.
    fn restore(&mut self, entries: Vec<(Value, Value)>) -> anyhow::Result<()>;
    /// [`BoltState::restore`] from entries read one at a time as they are taken (the runtime
    /// reads them so from the store), so keyed state larger than memory can be restored:
    /// past the memory limit, restored keys go to the spill file as they come. By default the
    /// entries are collected and restored at once (state that is small, or held anyway).
    fn restore_from(&mut self, entries: &mut Entries<'_>) -> anyhow::Result<()> {
        let all = entries.collect::<anyhow::Result<Vec<_>>>()?;
        self.restore(all)
    }
}

use crate::state::checkpoint_store::ChangeSink;

/// Saved entries as a restore reads them: one at a time, each possibly an error of the store.
type Entries<'a> = dyn Iterator<Item = anyhow::Result<(Value, Value)>> + 'a;

/// A tuple processor (Storm's IBolt), and nothing else: keeping state across a restart is
/// another trait, declared below, which the runtime drives by wrapping the bolts that have it
/// (Storm's `StatefulBoltExecutor`).
pub trait Bolt: Send {
    fn prepare(&mut self, _ctx: &TaskContext) -> anyhow::Result<()> {
        Ok(())
    }
    /// Process one input. With `auto_ack`, the executor acks it after an `Ok` and fails it after
    /// an `Err`; emits should still name it as anchor.
    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()>;
    /// All upstream tasks have finished: emit what is left (`count` emits totals).
    /// May block until work handed elsewhere (a child process) is done.
    fn finish(&mut self, _out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        Ok(())
    }
    /// Called after `waker.wake()`, and at least every `poll_interval`.
    fn poll(&mut self, _out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        Ok(())
    }
    fn poll_interval(&self) -> Option<Duration> {
        None
    }
    /// Storm's BasicBolt: the executor acks each input after `execute` returns.
    fn auto_ack(&self) -> bool {
        true
    }
    /// A bolt that only drops the tuples a condition rejects and passes the others on as they
    /// are, acked at once (`filter`): its condition, once prepared, which a spout before it may
    /// evaluate in its place (see [`Spout::run_filter`]).
    fn pure_filter(&self) -> Option<&crate::expr::Compiled> {
        None
    }
    /// The same condition compiled against the input fields `input` before the bolt is
    /// prepared, for a spout that evaluates it as it reads while the bolt runs on threads of
    /// its own.
    fn filter_condition(&self, _input: &[String]) -> Option<crate::expr::Compiled> {
        None
    }
    /// A bolt whose result for a run of its input's tuples, in order, can be had from one tuple
    /// folding them (an `aggregate` emitting at the end): once prepared, the fold a spout it
    /// alone receives from may run on its reader threads (see [`Spout::run_fold`]), sending it
    /// one tuple on stream `__folded` per chunk of lines.
    fn reader_fold(&self) -> Option<Box<dyn ReaderFold>> {
        None
    }
    /// The same fold before the bolt is prepared, placed by the task context `ctx` it will be
    /// prepared with: for a spout whose reader threads fold for it while it runs on a thread
    /// of its own.
    fn reader_fold_for(&self, _ctx: &TaskContext) -> Option<Box<dyn ReaderFold>> {
        None
    }
    /// A bolt that emits, for each input, tuples of one field (`split`), once prepared: a fold
    /// that counts the values it would emit, for a `count` of that field fed by it alone (see
    /// [`Spout::run_fold`]), which takes one `__folded` tuple per chunk: the values and their
    /// counts.
    fn counting_fold(&self) -> Option<Box<dyn ReaderFold>> {
        None
    }
    fn cleanup(&mut self) {}
}

/// A bolt's part in checkpoints (Storm's `IStatefulBolt`, and the sinks that hold their output
/// until the checkpoint covering it commits). Only the runtime's checkpoint wrapper calls
/// these, and only in a run that takes checkpoints.
pub trait CheckpointParticipant: Bolt + AsBolt {
    /// The bolt's state, when it keeps one that checkpoints save (`stateful: true`).
    fn state(&mut self) -> Option<&mut dyn BoltState> {
        None
    }
    /// The inputs that follow belong to checkpoint round `round` (they came after the
    /// previous round's marker from their upstream task): for a sink that holds its output
    /// until the checkpoint covering it commits.
    fn input_round(&mut self, _round: u64) -> anyhow::Result<()> {
        Ok(())
    }
    /// Round `round`, checkpoint `txid`, is complete for this task: every input of that round
    /// or before has been executed.
    fn checkpoint_marker(&mut self, _round: u64, _txid: u64) -> anyhow::Result<()> {
        Ok(())
    }
}

/// A participant seen as the plain bolt it also is (for a run without checkpoints).
pub trait AsBolt {
    fn as_bolt(&mut self) -> &mut dyn Bolt;
    fn into_bolt(self: Box<Self>) -> Box<dyn Bolt>;
}

impl<T: Bolt + 'static> AsBolt for T {
    fn as_bolt(&mut self) -> &mut dyn Bolt {
        self
    }
    fn into_bolt(self: Box<Self>) -> Box<dyn Bolt> {
        self
    }
}

/// A bolt instance as its type builds it: plain, or taking part in checkpoints.
pub(crate) enum BoltInstance {
    Plain(Box<dyn Bolt>),
    Participant(Box<dyn CheckpointParticipant>),
}

impl BoltInstance {
    /// The bolt, for a run that takes no checkpoints: nothing of checkpoints is called.
    pub(crate) fn into_plain(self) -> Box<dyn Bolt> {
        match self {
            BoltInstance::Plain(b) => b,
            BoltInstance::Participant(p) => p.into_bolt(),
        }
    }
}
