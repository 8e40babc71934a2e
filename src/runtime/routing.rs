//! The send side of an executor: per-task routers (groupings per stream, Storm's task-fn) and
//! the outbox that batches tuples per destination — a local executor's receive queue, or the
//! worker's transfer queue for tasks in other workers (Storm's executor send queue).

use super::message::{Acks, Message, Transfer, BATCH};
use super::partials::{Fold, Key, Ops, Partials};
use super::Role;
use crate::components::aggregate::ops::OpSpec;
use crate::grouping::{Choice, Grouper};
use crate::java_hash;
use crate::model::plan::{Plan, StreamId, ACKER_ID};
use crate::model::Topology;
use crate::tuple::{Anchors, Tuple, Value};
use crossbeam_channel::{select, Receiver, Sender};
use std::collections::VecDeque;

/// Where the executor of each task lives, as seen from one worker.
#[derive(Debug, Clone)]
pub(crate) struct RouteTable {
    /// Indexed by task id: the sink index to use.
    pub(crate) task_sink: Vec<usize>,
    pub(crate) sinks: Vec<SinkSpec>,
    /// Indexed by task id: the task runs chained onto another executor of this worker (its
    /// batches are handed over right after the step that filled them: `Outbox::flush_chained`).
    pub(crate) chained: Vec<bool>,
}

#[derive(Debug, Clone)]
pub(crate) enum SinkSpec {
    /// An executor of this worker.
    Local(Sender<Message>),
    /// Another worker, through this worker's transfer queue.
    Remote {
        worker: usize,
        transfer: Sender<Transfer>,
    },
}

/// Batches outgoing tuples per target task (a batch goes to the sink of its task).
pub(crate) struct Outbox {
    table: RouteTable,
    /// Indexed by task id.
    pending: Vec<Vec<Tuple>>,
    /// Out-of-line bytes (long strings, lists, maps) held by each pending batch.
    pending_bytes: Vec<usize>,
    /// Tasks whose pending batch may be non-empty: what `flush` visits. A task is added when
    /// a tuple goes into its empty batch (a batch sent because it was full gets the next
    /// tuple at once, so it stays listed). After `eos` a task may be listed twice; `flush`
    /// skips an empty batch.
    dirty: Vec<u32>,
    /// Spouts drain their own receive queue while a send blocks, so acks can always flow
    /// (breaks the spout → bolt → acker → spout cycle that full queues could otherwise lock).
    drain: Option<(Receiver<Message>, VecDeque<Message>)>,
    transferred: u64,
    /// Tuples summed per key for tasks that take partial counts.
    partials: Partials,
}

impl Outbox {
    pub(crate) fn new(table: RouteTable) -> Outbox {
        let n = table.task_sink.len();
        Outbox {
            table,
            pending: (0..n).map(|_| Vec::new()).collect(),
            pending_bytes: vec![0; n],
            dirty: Vec::new(),
            drain: None,
            transferred: 0,
            partials: Partials::default(),
        }
    }

    /// Keep draining `inbox` into a side queue whenever a send would block.
    pub(crate) fn drain_while_blocked(&mut self, inbox: Receiver<Message>) {
        self.drain = Some((inbox, VecDeque::new()));
    }

    /// Messages drained while blocked, to be handled before the receive queue.
    pub(crate) fn take_drained(&mut self) -> Option<Message> {
        self.drain.as_mut().and_then(|(_, q)| q.pop_front())
    }

    /// Queue `tuple` for `task`; returns it where it now lies, to be finished in place.
    #[inline(always)]
    pub(crate) fn push(&mut self, task: u32, tuple: Tuple) -> &mut Tuple {
        let at = task as usize;
        // A batch also ends at BATCH_BYTES of payload, so a queue of large tuples holds as
        // little memory as one of small ones: memory stays bounded by the queue sizes. A full
        // batch is sent before the push, so the tuple is still here to be finished.
        let len = self.pending[at].len();
        if len >= BATCH || self.pending_bytes[at] >= BATCH_BYTES {
            self.send_pending(task);
        } else if len == 0 {
            self.dirty.push(task);
        }
        self.pending_bytes[at] += heap_bytes(&tuple.values);
        self.transferred += 1;
        let batch = &mut self.pending[at];
        let end = batch.len();
        batch.push(tuple);
        &mut batch[end]
    }

    /// Send the batches gathered for chained tasks (their executor runs on this thread, next).
    pub(crate) fn flush_chained(&mut self) {
        let mut i = 0;
        while i < self.dirty.len() {
            let task = self.dirty[i];
            if self
                .table
                .chained
                .get(task as usize)
                .copied()
                .unwrap_or(false)
            {
                self.dirty.swap_remove(i);
                self.send_pending(task);
            } else {
                i += 1;
            }
        }
    }

    /// Count one tuple of `source` for `task` under `key`, with the edge ids it was stamped
    /// with; all that is held leaves once a bound is reached.
    pub(crate) fn absorb(
        &mut self,
        task: u32,
        source: u32,
        key: Key<'_>,
        ops: Ops<'_>,
        anchors: Anchors,
    ) {
        if self.partials.absorb(task, source, key, ops, anchors) {
            self.send_partials();
        }
    }

    /// Send everything batched so far, and the sums held once the oldest is
    /// `partials::MAX_AGE` old.
    pub(crate) fn flush(&mut self) {
        if self.partials.any() && self.partials.aged() {
            self.send_partials();
        }
        while let Some(task) = self.dirty.pop() {
            self.send_pending(task);
        }
    }

    /// Send everything batched and summed so far: the executor is idle, parks or ends (a sum
    /// held while a spout waits for its trees would hold them back).
    pub(crate) fn flush_all(&mut self) {
        if self.partials.any() {
            self.send_partials();
        }
        self.flush();
    }

    /// Batch every sum held, as partial tuples.
    fn send_partials(&mut self) {
        let mut partials = std::mem::take(&mut self.partials);
        partials.drain(|task, t| {
            self.push(task, t);
        });
        self.partials = partials;
    }

    /// Send acker traffic (`Message::Acks`) to `task` at once. Nothing else is batched for the
    /// tasks that receive it (ackers and spouts), so it keeps its order with their tuples.
    pub(crate) fn send_acks(
        &mut self,
        task: u32,
        from: u32,
        stream: StreamId,
        pairs: Vec<(u64, u64)>,
    ) {
        let Some(&sink) = self.table.task_sink.get(task as usize) else {
            return;
        };
        let acks = Acks {
            task,
            from,
            stream,
            pairs,
        };
        self.send(sink, Message::Acks(acks));
    }

    /// End of input from `from` to `to`, after everything batched for `to` so far.
    pub(crate) fn eos(&mut self, from: u32, to: u32) {
        self.send_after_batch(to, Message::Eos { from, to });
    }

    /// Queue `tuple` for `task` and send it at once with what was batched for it before: for a
    /// tuple that must reach a task of another executor ahead of an end of input sent on
    /// another outbox (a chunk folded by a spout for the `count` after its chained `split`).
    pub(crate) fn send_now(&mut self, task: u32, tuple: Tuple) {
        self.push(task, tuple);
        self.send_pending(task);
    }

    /// A checkpoint round's marker from `from` to `to`, after everything batched for `to`.
    pub(crate) fn marker(
        &mut self,
        from: u32,
        to: u32,
        marker: std::sync::Arc<super::checkpoint::Marker>,
    ) {
        self.send_after_batch(to, Message::Marker { from, to, marker });
    }

    /// Send `msg` to task `to` behind the batch gathered for it: markers keep their place
    /// among the tuples.
    fn send_after_batch(&mut self, to: u32, msg: Message) {
        if self.partials.any() {
            let mut partials = std::mem::take(&mut self.partials);
            partials.drain_for(to, |task, t| {
                self.push(task, t);
            });
            self.partials = partials;
        }
        self.send_pending(to);
        let sink = self.table.task_sink[to as usize];
        self.send(sink, msg);
    }

    /// Send the batch gathered for `task`, if any; the next one starts sized for a whole batch.
    #[inline(never)]
    fn send_pending(&mut self, task: u32) {
        let at = task as usize;
        self.pending_bytes[at] = 0;
        if !self.pending[at].is_empty() {
            let tuples = std::mem::replace(&mut self.pending[at], Vec::with_capacity(BATCH));
            self.send(self.table.task_sink[at], Message::Tuples { task, tuples });
        }
    }

    fn send(&mut self, sink: usize, msg: Message) {
        match &self.table.sinks[sink] {
            SinkSpec::Local(tx) => send_draining(tx, msg, &mut self.drain),
            SinkSpec::Remote { worker, transfer } => send_draining(
                transfer,
                Transfer {
                    worker: *worker,
                    message: msg,
                },
                &mut self.drain,
            ),
        }
    }
}

/// Payload bytes a batch may hold before it is sent (see `Outbox::push`).
const BATCH_BYTES: usize = 16 * 1024;

/// Bytes a tuple's values hold outside the tuple itself (strings longer than the inline 24
/// bytes; lists and maps roughly). Cheap: most values are short strings or numbers.
#[inline]
fn heap_bytes(values: &[Value]) -> usize {
    values
        .iter()
        .map(|v| match v {
            Value::Str(s) if s.len() > 24 => s.len(),
            Value::List(l) => 32 * l.len() + heap_bytes(l),
            Value::Map(m) => 64 * m.len(),
            _ => 0,
        })
        .sum()
}

/// A blocking send (backpressure) that, for spouts, keeps draining their own receive queue.
fn send_draining<T>(
    tx: &Sender<T>,
    msg: T,
    drain: &mut Option<(Receiver<Message>, VecDeque<Message>)>,
) {
    let Some((inbox, side)) = drain else {
        // A closed queue means the run is being torn down after a fatal error.
        let _ = tx.send(msg);
        return;
    };
    let mut msg = match tx.try_send(msg) {
        Ok(()) => return,
        Err(crossbeam_channel::TrySendError::Full(m)) => m,
        Err(crossbeam_channel::TrySendError::Disconnected(_)) => return,
    };
    loop {
        select! {
            send(tx, msg) -> res => { let _ = res; return; }
            recv(inbox) -> m => match m {
                Ok(m) => side.push_back(m),
                Err(_) => { return; }
            },
        }
        match tx.try_send(msg) {
            Ok(()) => return,
            Err(crossbeam_channel::TrySendError::Full(m)) => msg = m,
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => return,
        }
    }
}

/// One edge out of a task: a grouping over the target component's tasks.
struct Edge {
    grouper: Grouper,
}

/// Chooses target tasks for everything one task emits (Storm's `task-fn`).
pub(crate) struct Router {
    /// Indexed by stream id.
    streams: Vec<Vec<Edge>>,
    /// Acker tasks (empty when acking is off).
    ackers: Vec<u32>,
    /// Every task this task can send to (for end of input), acker tasks included.
    downstream: Vec<u32>,
    /// Indexed by task id: how tuples for that task are summed on this side (it takes partial
    /// counts or op states); empty when no target takes them.
    partial: Vec<Option<std::sync::Arc<Fold>>>,
}

fn acker_tasks(plan: &Plan) -> Vec<u32> {
    plan.component(ACKER_ID)
        .map(|c| c.tasks.clone().collect())
        .unwrap_or_default()
}

/// Every task task `task` of `component` can send to, acker tasks included, ascending: the
/// tasks that wait for its end of input. Over a chained edge that is its paired task only.
pub(crate) fn downstream_tasks(
    topology: &Topology,
    plan: &Plan,
    component: &str,
    task: u32,
) -> Vec<u32> {
    let mut tasks: Vec<u32> = topology
        .outputs_of(component)
        .filter(|s| plan.stream_id(&s.stream).is_some())
        .flat_map(|s| edge_targets(plan, component, &s.to, task))
        .collect();
    if !matches!(Role::of(topology, component), Some(Role::Acker)) {
        tasks.extend(acker_tasks(plan));
    }
    tasks.sort_unstable();
    tasks.dedup();
    tasks
}

/// The tasks of `to` that task `task` of `from` may send to: all of them, or over a chained
/// edge (equal task counts) the one at the same index.
fn edge_targets(plan: &Plan, from: &str, to: &str, task: u32) -> Vec<u32> {
    let Some(targets) = plan.component(to) else {
        return Vec::new();
    };
    if plan.chains.is_chained(from, to) {
        if let Some(first) = plan.component(from).map(|c| *c.tasks.start()) {
            let paired = *targets.tasks.start() + task.saturating_sub(first);
            if targets.tasks.contains(&paired) {
                return vec![paired];
            }
        }
    }
    targets.tasks.clone().collect()
}

/// Mark `targets` as summed on the sending side as `what` says, its key and op fields found
/// among the edge's `fields` (left unsummed if one is not there). Only targets in other
/// workers are summed: there a tuple costs its encoding, the network and its decoding, while
/// a tuple to a task of this worker costs a queue hop, about what summing it here would
/// (measured: no gain on a word count in one process, 20–40 % less wall time over two worker
/// processes).
fn sum_ahead(
    partial: &mut Vec<Option<std::sync::Arc<Fold>>>,
    to: Option<&crate::model::Component>,
    what: &crate::model::partials::Partial,
    fields: &[String],
    targets: &[u32],
) {
    let at = |f: &String| fields.iter().position(|x| x == f);
    let Some(keys) = what.keys.iter().map(at).collect::<Option<Box<[usize]>>>() else {
        return;
    };
    let ops = match (what.states, to.and_then(|c| c.ctype.partial_ops(c))) {
        (false, _) => None,
        (true, None) => return,
        (true, Some((_, ops))) => {
            let read = |o: &OpSpec| match &o.field {
                None => Some((o.kind, None)),
                Some(f) => Some((o.kind, Some(at(f)?))),
            };
            match ops.iter().map(read).collect::<Option<Box<[_]>>>() {
                Some(ops) => Some(ops),
                None => return,
            }
        }
    };
    let fold = std::sync::Arc::new(Fold { keys, ops });
    for &t in targets {
        let t = t as usize;
        if partial.len() <= t {
            partial.resize(t + 1, None);
        }
        partial[t] = Some(fold.clone());
    }
}

impl Router {
    pub(crate) fn new(
        topology: &Topology,
        plan: &Plan,
        component: &str,
        task: u32,
        local_tasks: &[u32],
    ) -> Router {
        let mut streams: Vec<Vec<Edge>> =
            (0..plan.stream_names.len()).map(|_| Vec::new()).collect();
        let mut partial = Vec::new();
        let from = topology.component(component);
        for s in topology.outputs_of(component) {
            let Some(sid) = plan.stream_id(&s.stream) else {
                continue;
            };
            let targets = edge_targets(plan, component, &s.to, task);
            if targets.is_empty() {
                continue;
            }
            let fields = from
                .and_then(|c| c.output_fields(&s.stream))
                .unwrap_or_default();
            let keys = s
                .grouping
                .key_fields()
                .map(|k| {
                    k.iter()
                        .filter_map(|f| fields.iter().position(|x| x == f))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(what) = plan.partials.of_bolt(&s.to) {
                let remote: Vec<u32> = targets
                    .iter()
                    .copied()
                    .filter(|t| !local_tasks.contains(t))
                    .collect();
                let to = topology.component(&s.to);
                sum_ahead(&mut partial, to, what, fields, &remote);
            }
            let seed = u64::from(task).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(sid);
            streams[sid as usize].push(Edge {
                grouper: Grouper::new(&s.grouping, targets, keys, local_tasks, seed),
            });
        }
        Router {
            streams,
            ackers: acker_tasks(plan),
            downstream: downstream_tasks(topology, plan, component, task),
            partial,
        }
    }

    /// Whether some target's tuples are summed on this side.
    #[inline]
    pub(crate) fn sums_ahead(&self) -> bool {
        !self.partial.is_empty()
    }

    /// The key positions by which tuples for `task` are summed on this side, if they are.
    #[inline]
    pub(crate) fn partial_fold(&self, task: u32) -> Option<&Fold> {
        self.partial.get(task as usize)?.as_deref()
    }

    /// Target tasks of a (non-direct) emit, appended to `out`.
    #[inline]
    pub(crate) fn route(&mut self, stream: StreamId, values: &[Value], out: &mut Vec<u32>) {
        self.route_by(stream, out, |g| g.choose(values));
    }

    /// `route` for a tuple whose one value is the string `s`, without building it.
    #[inline]
    pub(crate) fn route_str(&mut self, stream: StreamId, s: &str, out: &mut Vec<u32>) {
        self.route_by(stream, out, |g| g.choose_str(s));
    }

    /// Each edge of `stream` chooses its targets with `choose`.
    #[inline(always)]
    fn route_by(
        &mut self,
        stream: StreamId,
        out: &mut Vec<u32>,
        mut choose: impl FnMut(&mut Grouper) -> Choice,
    ) {
        let Some(edges) = self.streams.get_mut(stream as usize) else {
            return;
        };
        for e in edges {
            match choose(&mut e.grouper) {
                Choice::One(t) => out.push(t),
                Choice::All => out.extend_from_slice(e.grouper.targets()),
                Choice::Direct => {}
            }
        }
    }

    /// Whether `task` receives `stream` by direct grouping from this task.
    pub(crate) fn is_direct_target(&self, stream: StreamId, task: u32) -> bool {
        self.streams.get(stream as usize).is_some_and(|edges| {
            edges
                .iter()
                .any(|e| e.grouper.targets().binary_search(&task).is_ok())
        })
    }

    /// The acker tasks (empty when acking is off).
    pub(crate) fn ackers(&self) -> &[u32] {
        &self.ackers
    }

    pub(crate) fn acking(&self) -> bool {
        !self.ackers.is_empty()
    }

    /// The acker task tracking a tree (Storm: fields grouping on the root id).
    pub(crate) fn acker_for(&self, root: u64) -> u32 {
        if let [only] = self.ackers[..] {
            return only;
        }
        let i = java_hash::choose_index([&Value::Int(root as i64)], self.ackers.len());
        self.ackers[i]
    }

    pub(crate) fn downstream(&self) -> &[u32] {
        &self.downstream
    }
}
