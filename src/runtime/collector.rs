//! The collectors components emit through (Storm's OutputCollector / SpoutOutputCollector):
//! routing each emit, stamping acker edge ids on tracked tuples (Storm's XOR tree), and counting.

use super::chain_ledger::ChainLedger;
use super::metrics::{FoldedCounts, TaskStats};
use super::open_trees::OpenTrees;
use super::partials::Key;
use super::routing::{Outbox, Router};
use crate::components::{BoltCollector, Folded, SpoutCollector};
use crate::model::plan::{streams, StreamId};
use crate::tuple::{Anchor, Tuple, Value, Values};
use rand::rngs::SmallRng;
use rand::RngCore;
use std::sync::Arc;
use std::time::Instant;

/// State shared by both collectors of one task.
pub(crate) struct Emitter {
    pub(crate) task: u32,
    pub(crate) router: Router,
    pub(crate) stats: Arc<TaskStats>,
    pub(crate) rng: SmallRng,
    targets: Vec<u32>,
    pub(crate) component: String,
    /// Acks waiting to be sent, XOR-combined per root: acks of one batch that belong to the
    /// same tree travel as one message (XOR is associative, so the acker sees the same value).
    acks: Vec<(u64, u64)>,
    /// Trees started by a spout and not yet announced to the acker: (root, XOR of edges).
    pub(crate) inits: Vec<(u64, u64)>,
    /// A task of a spout executor with chained bolts, or of one of those bolts: the trees its
    /// executor's spouts started this round, which acks settle here (see `chain_ledger.rs`).
    pub(crate) ledger: Option<ChainLedger>,
    /// A spout task's trees started beside chained bolts and not yet handed to the ledger:
    /// (root, XOR of edges), handed over together before the bolts run (one lock per round,
    /// not one per tuple).
    pub(crate) holds: Vec<(u64, u64)>,
    /// A spout task whose one receiver is a `filter` it evaluates as it reads (see
    /// `Spout::run_filter`): the counters of that filter's tasks its rejected tuples count in.
    pub(crate) filtered_for: Option<Box<RejectTarget>>,
    /// A spout task whose one receiver is a bolt it folds lines for as it reads (see
    /// `Spout::run_fold`): where the folded tuples go.
    pub(crate) folded_for: Option<FoldTarget>,
}

/// Where a spout hands its folded chunks: the bolt task (or tasks) they go to, with the
/// counters the folded lines count in; with `via`, the counters of the tasks of the bolt
/// between them whose output was folded (a `split` before a `count`), a chunk counted in each
/// in turn; with `route`, that bolt's router, which deals the folded values out to the tasks
/// it would have sent them to.
pub(crate) struct FoldTarget {
    pub(crate) tasks: Vec<(u32, Arc<TaskStats>)>,
    pub(crate) via: Vec<Arc<TaskStats>>,
    pub(crate) turn: usize,
    pub(crate) route: Option<Router>,
}

/// Where a spout that evaluates the `filter` after it as it reads (see `Spout::run_filter`)
/// counts the tuples it rejects: as executed and acked by that filter's tasks, a chunk's in
/// each in turn (one task when chained onto the spout task by task, every task when the
/// filter runs on threads of its own).
pub(crate) struct RejectTarget {
    pub(crate) via: Vec<Arc<TaskStats>>,
    pub(crate) turn: usize,
}

impl RejectTarget {
    pub(crate) fn new(via: Vec<Arc<TaskStats>>) -> RejectTarget {
        RejectTarget { via, turn: 0 }
    }

    /// Count `n` rejected tuples in the next task's counters (added from the spout's
    /// thread, kept apart from the task's own).
    fn count(&mut self, n: u64) {
        if let Some(filter) = self.via.get(self.turn % self.via.len().max(1)) {
            self.turn += 1;
            FoldedCounts::add(&filter.folded.executed, n);
            FoldedCounts::add(&filter.folded.acked, n);
        }
    }
}

/// A folded tuple for one target task: the task, its counters, the values, and how many
/// tuples they stand for.
type Dealt = (u32, Arc<TaskStats>, Values, u64);

impl FoldTarget {
    /// The bolt task `task` itself folds (chained onto the spout, see `Bolt::reader_fold`).
    pub(crate) fn one(task: u32, stats: Arc<TaskStats>) -> FoldTarget {
        FoldTarget {
            tasks: vec![(task, stats)],
            via: Vec::new(),
            turn: 0,
            route: None,
        }
    }

    /// Whether nothing listens to the emits of any task involved (a tap would miss them).
    fn quiet(&self) -> bool {
        let quiet = |s: &Arc<TaskStats>| !s.taps.on();
        self.tasks.iter().all(|(_, s)| quiet(s)) && self.via.iter().all(quiet)
    }

    /// `folded` as tuples for the target tasks: `(task, its counters, values, tuples it stands
    /// for)`; `None` when a value would go to a task not among them (the lines then go one by
    /// one).
    fn deal(&mut self, folded: Folded) -> Option<Vec<Dealt>> {
        let Some(router) = self.route.as_mut() else {
            let (task, stats) = self.tasks.first()?;
            return Some(vec![(*task, stats.clone(), folded.values, folded.executed)]);
        };
        let mut to = Vec::with_capacity(1);
        let dealt = crate::components::count::deal_folded(folded.values, |v| {
            to.clear();
            router.route(streams::DEFAULT, std::slice::from_ref(v), &mut to);
            match to[..] {
                [task] => Some(task),
                _ => None,
            }
        })?;
        dealt
            .into_iter()
            .map(|(task, values, tuples)| {
                let (_, stats) = self.tasks.iter().find(|(t, _)| *t == task)?;
                Some((task, stats.clone(), values, tuples))
            })
            .collect()
    }
}

/// Pairs an acker message holds before it is sent without waiting for the end of the batch.
const ACK_PAIRS: usize = 256;

/// A fresh non-zero 64-bit id (Storm: `MessageId.generateId`).
fn fresh_id(rng: &mut SmallRng) -> u64 {
    loop {
        let v = rng.next_u64();
        if v != 0 {
            return v;
        }
    }
}

impl Emitter {
    pub(crate) fn new(
        task: u32,
        router: Router,
        stats: Arc<TaskStats>,
        component: String,
        seed: u64,
    ) -> Emitter {
        use rand::SeedableRng;
        Emitter {
            task,
            router,
            stats,
            rng: SmallRng::seed_from_u64(seed),
            targets: Vec::with_capacity(8),
            component,
            acks: Vec::new(),
            inits: Vec::new(),
            ledger: None,
            holds: Vec::new(),
            filtered_for: None,
            folded_for: None,
        }
    }

    /// Route one emit (or take the direct task), count it, and push a copy of the values to
    /// each receiving task, each tuple stamped by `stamp` (acker edge ids). Returns how many
    /// tasks receive it; `self.targets` holds them.
    #[inline]
    fn fan_out(
        &mut self,
        outbox: &mut Outbox,
        stream: StreamId,
        values: impl Payload,
        direct: Option<u32>,
        mut stamp: impl FnMut(&mut SmallRng, &mut Tuple),
    ) -> usize {
        self.targets.clear();
        match direct {
            Some(t) => self.targets.push(t),
            None => values.route(&mut self.router, stream, &mut self.targets),
        }
        let n = self.targets.len();
        if self.stats.taps.on() {
            self.stats.taps.publish(self.task, stream, &values.copy());
        }
        TaskStats::add(&self.stats.emitted, 1);
        TaskStats::add(&self.stats.transferred, n as u64);
        self.stats.streams.add(stream, n as u64);
        if self.router.sums_ahead() {
            self.fan_out_summing(outbox, stream, values, stamp);
            return n;
        }
        let Some((&last, others)) = self.targets.split_last() else {
            return 0;
        };
        // The last receiver takes the values; the others get copies. Each tuple is stamped
        // where it lies in the outbox: every move of a tuple is a copy of a cache line.
        for &target in others {
            stamp(
                &mut self.rng,
                outbox.push(target, Tuple::new(values.copy(), self.task, stream)),
            );
        }
        stamp(
            &mut self.rng,
            outbox.push(last, Tuple::new(values.into_values(), self.task, stream)),
        );
        n
    }

    /// `fan_out` where some targets take partial counts: for one of them the tuple's edge ids
    /// are stamped and its key summed in the outbox; the others get it queued.
    #[inline(never)]
    fn fan_out_summing(
        &mut self,
        outbox: &mut Outbox,
        stream: StreamId,
        values: impl Payload,
        mut stamp: impl FnMut(&mut SmallRng, &mut Tuple),
    ) {
        for &target in &self.targets {
            let mut tuple = Tuple::new(Values::new(), self.task, stream);
            match self.router.partial_fold(target) {
                Some(fold) => {
                    stamp(&mut self.rng, &mut tuple);
                    let key = values.key(&fold.keys);
                    match &fold.ops {
                        None => outbox.absorb(target, self.task, key, None, tuple.anchors),
                        Some(ops) => values.with_values(|v| {
                            outbox.absorb(target, self.task, key, Some((ops, v)), tuple.anchors)
                        }),
                    }
                }
                None => {
                    tuple.values = values.copy();
                    stamp(&mut self.rng, &mut tuple);
                    outbox.push(target, tuple);
                }
            }
        }
    }

    fn queue_ack(&mut self, outbox: &mut Outbox, root: u64, val: u64) {
        if self.ledger.as_ref().is_some_and(|l| l.absorb(root, val)) {
            return;
        }
        // Consecutive acks usually belong to the same tree (the words of one line).
        if let Some(last) = self.acks.last_mut() {
            if last.0 == root {
                last.1 ^= val;
                return;
            }
        }
        // Then a tree from just before (a line's words reach a task in two batches); a look
        // further back costs more than the pair it might save.
        match self.acks.iter_mut().rev().take(8).find(|(r, _)| *r == root) {
            Some(e) => e.1 ^= val,
            None => self.acks.push((root, val)),
        }
        if self.acks.len() >= ACK_PAIRS {
            self.flush_acks(outbox);
        }
    }

    /// Send the inits and combined acks of the batch just processed: one `Message::Acks` per
    /// acker task on `__ack_init` (root, XOR of the tree's first edges) and one on `__ack_ack`
    /// (root, ack value). Fewer, larger messages than Storm's one tuple per ack; the acker
    /// applies the same XORs.
    pub(crate) fn flush_acks(&mut self, outbox: &mut Outbox) {
        if !self.inits.is_empty() {
            let inits = std::mem::replace(&mut self.inits, Vec::with_capacity(ACK_PAIRS));
            self.send_pairs(outbox, streams::ACK_INIT, inits);
        }
        if !self.acks.is_empty() {
            let acks = std::mem::replace(&mut self.acks, Vec::with_capacity(ACK_PAIRS));
            self.send_pairs(outbox, streams::ACK_ACK, acks);
        }
    }

    /// One message per acker task with the pairs whose root it tracks.
    fn send_pairs(&mut self, outbox: &mut Outbox, stream: StreamId, pairs: Vec<(u64, u64)>) {
        if let [acker] = self.router.ackers()[..] {
            // One acker (the default for one worker): the pairs go as they are.
            outbox.send_acks(acker, self.task, stream, pairs);
            return;
        }
        let mut by_acker: Vec<(u32, Vec<(u64, u64)>)> = Vec::new();
        for (root, val) in pairs {
            let acker = self.router.acker_for(root);
            match by_acker.iter_mut().find(|(a, _)| *a == acker) {
                Some((_, p)) => p.push((root, val)),
                None => by_acker.push((acker, vec![(root, val)])),
            }
        }
        for (acker, pairs) in by_acker {
            outbox.send_acks(acker, self.task, stream, pairs);
        }
    }

    fn report(&self, msg: &str) {
        self.stats.record_error(msg);
        tracing::error!(component = %self.component, task = self.task, "{msg}");
    }
}

/// What an emit carries: values already built, or the one string of a tuple that is built
/// only where it is queued (nothing reads it before: no store-forwarding stall).
trait Payload {
    fn route(&self, router: &mut Router, stream: StreamId, out: &mut Vec<u32>);
    /// The values for one receiver when there are several.
    fn copy(&self) -> Values;
    fn into_values(self) -> Values;
    /// Its key at `keys`, for a sum on the sending side.
    fn key(&self, keys: &[usize]) -> Key<'_>;
    /// Call `f` with its values (built, for a payload not yet built).
    fn with_values<R>(&self, f: impl FnOnce(&Values) -> R) -> R;
}

impl Payload for Values {
    fn with_values<R>(&self, f: impl FnOnce(&Values) -> R) -> R {
        f(self)
    }
    #[inline(always)]
    fn route(&self, router: &mut Router, stream: StreamId, out: &mut Vec<u32>) {
        router.route(stream, self, out);
    }
    fn copy(&self) -> Values {
        self.clone()
    }
    #[inline(always)]
    fn into_values(self) -> Values {
        self
    }
    #[inline]
    fn key(&self, keys: &[usize]) -> Key<'_> {
        if let [k] = keys {
            if let Some(Value::Str(s)) = self.get(*k) {
                return Key::Str(s.as_str());
            }
        }
        Key::Values(
            keys.iter()
                .map(|&k| self.get(k).cloned().unwrap_or(Value::Null))
                .collect(),
        )
    }
}

impl Payload for &str {
    fn with_values<R>(&self, f: impl FnOnce(&Values) -> R) -> R {
        f(&crate::tuple::one_str(self))
    }
    #[inline(always)]
    fn route(&self, router: &mut Router, stream: StreamId, out: &mut Vec<u32>) {
        router.route_str(stream, self, out);
    }
    fn copy(&self) -> Values {
        crate::tuple::one_str(self)
    }
    #[inline(always)]
    fn into_values(self) -> Values {
        crate::tuple::one_str(self)
    }
    #[inline]
    fn key(&self, keys: &[usize]) -> Key<'_> {
        match keys {
            [0] => Key::Str(self),
            _ => Key::Values(
                keys.iter()
                    .map(|&k| match k {
                        0 => Value::str(self),
                        _ => Value::Null,
                    })
                    .collect(),
            ),
        }
    }
}

/// A spout task's collector.
pub(crate) struct SpoutOut<'a> {
    pub(crate) em: &'a mut Emitter,
    pub(crate) outbox: &'a mut Outbox,
    /// The task's open trees: the collector opens one per tracked emit.
    pub(crate) trees: &'a mut OpenTrees,
    /// The start time given to trees opened now (the clock read at the start of the round).
    pub(crate) now: Instant,
    /// Message ids to ack at once (acking off, or no receivers).
    pub(crate) ack_now: &'a mut Vec<Value>,
    /// In a run that takes checkpoints: the round of the task's next marker, which what it
    /// sends now belongs to.
    pub(crate) round: Option<u64>,
}

impl SpoutOut<'_> {
    fn deliver(
        &mut self,
        stream: StreamId,
        values: Values,
        msg_id: Option<Value>,
        direct: Option<u32>,
    ) -> usize {
        let em = &mut *self.em;
        let id = match msg_id {
            Some(id) if em.router.acking() => id,
            untracked => {
                let n = em.fan_out(self.outbox, stream, values, direct, |_, _| {});
                // Storm acks at once when acking is off.
                self.ack_now.extend(untracked);
                return n;
            }
        };
        // Beside chained bolts, the round settles the tree (see `open_trees.rs`).
        let chained = match em.ledger {
            Some(_) => self.trees.chained_root(&mut em.rng),
            None => None,
        };
        let root = match chained {
            Some(root) => root,
            None => self.trees.reserve(&mut em.rng, self.now),
        };
        let mut xor = 0u64;
        // Storm's spout emit: a new tree, one edge id per receiving tuple.
        let n = em.fan_out(self.outbox, stream, values, direct, |rng, t| {
            let edge = fresh_id(rng);
            xor ^= edge;
            t.anchors.push(Anchor::new(root, edge));
        });
        if n == 0 {
            if chained.is_none() {
                self.trees.release(root);
            }
            // Storm acks at once when nobody receives the tuple.
            self.ack_now.push(id);
            return n;
        }
        match &em.ledger {
            Some(_) => em.holds.push((root, xor)),
            None => {
                em.inits.push((root, xor));
                if em.inits.len() >= ACK_PAIRS {
                    em.flush_acks(self.outbox);
                }
            }
        }
        match chained {
            Some(_) => self.trees.open_chained(root, id, self.now),
            None => self.trees.open(root, id),
        }
        n
    }
}

impl SpoutCollector for SpoutOut<'_> {
    fn emit(&mut self, stream: StreamId, values: Values, msg_id: Option<Value>) -> Vec<u32> {
        self.deliver(stream, values, msg_id, None);
        self.em.targets.clone()
    }

    fn send(&mut self, stream: StreamId, values: Values, msg_id: Option<Value>) {
        self.deliver(stream, values, msg_id, None);
    }

    fn emit_direct(&mut self, task: u32, stream: StreamId, values: Values, msg_id: Option<Value>) {
        if !self.em.router.is_direct_target(stream, task) {
            self.em.report(&format!(
                "direct emit to task {task}, which does not subscribe to this stream; dropped"
            ));
            return;
        }
        self.deliver(stream, values, msg_id, Some(task));
    }

    fn report_error(&mut self, msg: &str) {
        self.em.report(msg);
    }

    fn dropped(&mut self, n: u64) {
        TaskStats::add(&self.em.stats.dropped, n);
    }

    fn metric(&mut self, name: &str, value: &serde_json::Value) {
        self.em.stats.user_metric(name, value);
    }

    fn lag(&mut self, partitions: Vec<crate::components::PartitionLag>) {
        *self.em.stats.lag.lock().unwrap_or_else(|e| e.into_inner()) = partitions;
    }

    /// Counted as the emit, the filter's execute and ack, and the tree's completion would
    /// count it (a tap on the spout sees every emit: then it is emitted).
    fn skip_filtered(&mut self, n: u64, tracked: bool) -> bool {
        let em = &mut *self.em;
        let stats = &em.stats;
        let Some(filter) = em.filtered_for.as_mut().filter(|_| !stats.taps.on()) else {
            return false;
        };
        emitted_at_once(stats, n, tracked);
        filter.count(n);
        true
    }

    /// Counted as the `n` emits, their executes and acks by the bolt (by `via` and the tuples
    /// `via` would have emitted by the bolt after it), and their trees' completions would
    /// count them; the bolt's executor counts the folded tuple as one of those it executes and
    /// acks.
    fn fold_ahead(&mut self, n: u64, tracked: bool, folded: Folded) -> bool {
        let em = &mut *self.em;
        let stats = &em.stats;
        let Some(target) = em
            .folded_for
            .as_mut()
            .filter(|t| !stats.taps.on() && t.quiet())
        else {
            return false;
        };
        let executed = folded.executed;
        let Some(dealt) = target.deal(folded).filter(|_| n > 0) else {
            return false;
        };
        emitted_at_once(stats, n, tracked);
        if let Some(via) = target.via.get(target.turn % target.via.len().max(1)) {
            target.turn += 1;
            let add = FoldedCounts::add;
            add(&via.folded.executed, n);
            add(&via.folded.acked, n);
            add(&via.folded.emitted, executed);
            add(&via.folded.transferred, executed);
        }
        for (task, bolt, mut values, tuples) in dealt.into_iter().filter(|d| d.3 > 0) {
            FoldedCounts::add(&bolt.folded.executed, tuples - 1);
            FoldedCounts::add(&bolt.folded.acked, tuples - 1);
            // Under checkpoints the tuple says its round: it skips the bolt whose markers
            // would have placed it (see `folded_round`).
            if let Some(round) = self.round {
                values.push(Value::Int(i64::try_from(round).unwrap_or(i64::MAX)));
            }
            let tuple = Tuple::new(values, em.task, streams::FOLDED);
            // Past a bolt between them, the target hears of end of input (and of the round's
            // marker) from that bolt, on another outbox: the tuple goes now, so it arrives
            // first.
            match target.via.is_empty() && self.round.is_none() {
                true => {
                    self.outbox.push(task, tuple);
                }
                false => self.outbox.send_now(task, tuple),
            }
        }
        true
    }
}

/// The round a `__folded` tuple sent under checkpoints belongs to: the round of the spout
/// task's marker after it (its last value). Such a tuple goes from the spout straight to the
/// bolt after the one that would have emitted its values, which hears that round's marker
/// only through that bolt; it was sent before the spout sent the marker on, so it arrives
/// before the bolt can complete the round, and belongs to no round before it.
pub(crate) fn folded_round(tuple: &Tuple) -> Option<u64> {
    match (is_folded(tuple), tuple.values.last()) {
        (true, Some(Value::Int(round))) => u64::try_from(*round).ok(),
        _ => None,
    }
}

/// Whether `tuple` is a chunk folded where its lines were read (stream `__folded`).
#[inline]
pub(crate) fn is_folded(tuple: &Tuple) -> bool {
    tuple.stream == streams::FOLDED
}

/// `n` tuples a spout task counts as emitted on its default stream to one task each, and as
/// acked when `tracked`, without emitting them (taken by a filter or a fold where it reads).
fn emitted_at_once(stats: &TaskStats, n: u64, tracked: bool) {
    TaskStats::add(&stats.emitted, n);
    TaskStats::add(&stats.transferred, n);
    stats.streams.add_n(streams::DEFAULT, n, n);
    if tracked {
        TaskStats::add(&stats.acked, n);
    }
}

/// A bolt task's collector.
pub(crate) struct BoltOut<'a> {
    pub(crate) em: &'a mut Emitter,
    pub(crate) outbox: &'a mut Outbox,
}

impl BoltOut<'_> {
    #[inline]
    fn deliver(
        &mut self,
        stream: StreamId,
        anchors: &[&Tuple],
        values: impl Payload,
        direct: Option<u32>,
    ) -> usize {
        let anchored = self.em.router.acking() && anchors.iter().any(|a| !a.anchors.is_empty());
        self.em
            .fan_out(self.outbox, stream, values, direct, |rng, t| {
                if anchored {
                    // Storm's anchoring: one new edge id per receiving tuple, XORed into every
                    // root of every anchor, and into what each anchor's ack will send.
                    let edge = fresh_id(rng);
                    for a in anchors {
                        for parent in &a.anchors {
                            match t.anchors.iter_mut().find(|e| e.root == parent.root) {
                                Some(e) => e.ack.set(e.ack.get() ^ edge),
                                None => t.anchors.push(Anchor::new(parent.root, edge)),
                            }
                            parent.ack.set(parent.ack.get() ^ edge);
                        }
                    }
                }
            })
    }
}

impl BoltCollector for BoltOut<'_> {
    fn emit(&mut self, stream: StreamId, anchors: &[&Tuple], values: Values) -> Vec<u32> {
        self.deliver(stream, anchors, values, None);
        self.em.targets.clone()
    }

    fn send(&mut self, stream: StreamId, anchors: &[&Tuple], values: Values) {
        self.deliver(stream, anchors, values, None);
    }

    fn send_str(&mut self, stream: StreamId, anchors: &[&Tuple], s: &str) {
        self.deliver(stream, anchors, s, None);
    }

    fn emit_direct(&mut self, task: u32, stream: StreamId, anchors: &[&Tuple], values: Values) {
        if !self.em.router.is_direct_target(stream, task) {
            self.em.report(&format!(
                "direct emit to task {task}, which does not subscribe to this stream; dropped"
            ));
            return;
        }
        self.deliver(stream, anchors, values, Some(task));
    }

    fn ack(&mut self, input: &Tuple) {
        TaskStats::add(&self.em.stats.acked, 1);
        if !self.em.router.acking() {
            return;
        }
        for a in &input.anchors {
            self.em.queue_ack(self.outbox, a.root, a.ack.get());
        }
    }

    fn fail(&mut self, input: &Tuple) {
        TaskStats::add(&self.em.stats.failed, 1);
        if !self.em.router.acking() {
            return;
        }
        if input.anchors.is_empty() {
            return;
        }
        // After the acks gathered so far, so the acker sees them in the order they were made.
        self.em.flush_acks(self.outbox);
        let ledger = self.em.ledger.as_ref();
        let roots: Vec<(u64, u64)> = input
            .anchors
            .iter()
            .filter(|a| !ledger.is_some_and(|l| l.fail(a.root)))
            .map(|a| (a.root, 0))
            .collect();
        if roots.is_empty() {
            return;
        }
        self.em.send_pairs(self.outbox, streams::ACK_FAIL, roots);
    }

    fn report_error(&mut self, msg: &str) {
        self.em.report(msg);
    }

    fn dropped(&mut self, n: u64) {
        TaskStats::add(&self.em.stats.dropped, n);
    }

    fn metric(&mut self, name: &str, value: &serde_json::Value) {
        self.em.stats.user_metric(name, value);
    }

    fn send_acks(&mut self, task: u32, stream: StreamId, pairs: Vec<(u64, u64)>) {
        // Counted as the one direct tuple it stands for.
        TaskStats::add(&self.em.stats.emitted, 1);
        TaskStats::add(&self.em.stats.transferred, 1);
        self.em.stats.streams.add(stream, 1);
        self.outbox.send_acks(task, self.em.task, stream, pairs);
    }
}
