//! Partial counts and op states on the sending side (local-global aggregation): tuples bound
//! for a bolt that takes partials (see `model::partials`) are counted, or folded into the
//! bolt's op states, per target task and key here instead of being sent one by one, and leave
//! as one `[key…, n]` (a `count`) or `[key…, state…, unusable]` (an `aggregate` or `top`, see
//! `aggregate::partial`) tuple per key on stream `__partial`. Each task of the bolt receives
//! exactly the tuples it would have received, only summed, so its results are the same. A partial tuple carries the trees of every tuple
//! it sums (the XOR of their edge ids per root), so acking stays exact: it completes those
//! trees when the bolt acks it, and fails them all when the bolt fails it.

use crate::components::aggregate::ops::{Kind, State};
use crate::components::aggregate::partial::partial_row;
use crate::model::plan::streams;
use crate::tuple::{Anchors, Tuple, Value, Values};
use compact_str::CompactString;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Distinct keys held (over all target tasks) before they are sent.
const MAX_KEYS: usize = 16 * 1024;
/// Tuples summed before everything held is sent: bounds the trees held open (with acking,
/// each run of tuples of one tree adds an anchor).
const MAX_TUPLES: usize = 256 * 1024;
/// How long a first tuple may wait in a sum before it is sent anyway.
const MAX_AGE: Duration = Duration::from_millis(50);

/// What a key held with a set or a sketch (`count_distinct`, `top`, `percentile`) weighs
/// against `MAX_KEYS`: such states are larger than a count.
const HEAVY_KEY: usize = 16;

type Hasher = foldhash::fast::FixedState;

/// An op to fold and the position of the field it reads.
type OpAt = (Kind, Option<usize>);

/// How tuples bound for one target task are summed: by the values at `keys`, counted, or
/// folded into the states of `ops` (each with the position of the field it reads).
#[derive(Debug)]
pub(crate) struct Fold {
    pub(crate) keys: Box<[usize]>,
    pub(crate) ops: Option<Box<[OpAt]>>,
}

/// The ops of a fold, and the tuple's values they read.
pub(crate) type Ops<'a> = Option<(&'a [OpAt], &'a Values)>;

/// What is held for one key: a count, or op states and how many tuples had a value an op
/// could not use.
enum Acc {
    Count(i64),
    Ops(Box<(Vec<State>, i64)>),
}

impl Acc {
    #[inline]
    fn new(ops: Ops<'_>) -> Acc {
        match ops {
            None => Acc::Count(0),
            Some((ops, _)) => Acc::Ops(Box::new((
                ops.iter().map(|(k, _)| State::new(*k)).collect(),
                0,
            ))),
        }
    }

    /// Take one tuple.
    #[inline]
    fn take(&mut self, ops: Ops<'_>) {
        match (self, ops) {
            (Acc::Count(n), _) => *n += 1,
            (Acc::Ops(held), Some((ops, values))) => {
                let mut all_used = true;
                for (state, (_, field)) in held.0.iter_mut().zip(ops) {
                    all_used &= state.add(field.and_then(|i| values.get(i)));
                }
                held.1 += i64::from(!all_used);
            }
            (Acc::Ops(_), None) => {}
        }
    }

    /// The partial tuple's values for `key`.
    fn row(self, mut key: Values) -> Values {
        match self {
            Acc::Count(n) => {
                key.push(Value::Int(n));
                key
            }
            Acc::Ops(held) => partial_row(key, &held.0, held.1),
        }
    }
}

/// What one sending task holds for one target task: a count or op states per key (single
/// string keys apart, looked up without building a key), and the trees of every tuple summed.
struct Sums {
    source: u32,
    /// What one key weighs against `MAX_KEYS`.
    weight: usize,
    strings: HashMap<CompactString, Acc, Hasher>,
    others: HashMap<Values, Acc, Hasher>,
    /// Per root, the XOR of the edge ids of the tuples summed. They travel on the last
    /// partial tuple sent to the task: a task executes its tuples in order, so acking that
    /// one means every sum before it was counted, and its trees may complete.
    anchors: Anchors,
}

impl Sums {
    fn new(source: u32, ops: Ops<'_>) -> Sums {
        let heavy =
            |(k, _): &OpAt| matches!(k, Kind::CountDistinct | Kind::Top(_) | Kind::Percentile(_));
        let weight = match ops {
            Some((ops, _)) if ops.iter().any(heavy) => HEAVY_KEY,
            _ => 1,
        };
        Sums {
            source,
            weight,
            strings: HashMap::default(),
            others: HashMap::default(),
            anchors: Anchors::new(),
        }
    }

    fn keys(&self) -> usize {
        (self.strings.len() + self.others.len()) * self.weight
    }

    fn is_empty(&self) -> bool {
        self.keys() == 0
    }

    fn add_anchors(&mut self, anchors: Anchors) {
        for a in anchors {
            // Consecutive tuples mostly share a tree (the words of one line): merged into the
            // last anchor; otherwise appended (one root twice acks the same by XOR).
            match self.anchors.last_mut() {
                Some(last) if last.root == a.root => last.ack.set(last.ack.get() ^ a.ack.get()),
                _ => self.anchors.push(a),
            }
        }
    }

    /// The partial tuples, the last carrying the trees.
    fn drain(&mut self, task: u32, send: &mut impl FnMut(u32, Tuple)) {
        let source = self.source;
        let mut tuples = self
            .strings
            .drain()
            .map(|(k, acc)| acc.row(smallvec::smallvec![Value::Str(k)]))
            .chain(self.others.drain().map(|(k, acc)| acc.row(k)))
            .map(|values| Tuple::new(values, source, streams::PARTIAL))
            .peekable();
        while let Some(mut tuple) = tuples.next() {
            if tuples.peek().is_none() {
                tuple.anchors = std::mem::take(&mut self.anchors);
            }
            send(task, tuple);
        }
    }
}

/// The sums held for each target task, and when the oldest was started.
#[derive(Default)]
pub(crate) struct Partials {
    /// Indexed by target task (grown on first use): the sums of each sending task (an
    /// executor may run several), so that a partial tuple names the task it stands for.
    by_task: Vec<Vec<Sums>>,
    /// Target tasks with sums held.
    held: Vec<u32>,
    keys: usize,
    tuples: usize,
    since: Option<Instant>,
}

/// A tuple's key, as the sender has it.
pub(crate) enum Key<'a> {
    /// One string (the common key): looked up as it is.
    Str(&'a str),
    /// Anything else, built.
    Values(Values),
}

impl Partials {
    /// Count one tuple of `source` for `task` under `key` (or fold it into `ops`' states),
    /// with the edge ids it was stamped with. Returns whether the bounds are reached:
    /// everything should be sent now.
    pub(crate) fn absorb(
        &mut self,
        task: u32,
        source: u32,
        key: Key<'_>,
        ops: Ops<'_>,
        anchors: Anchors,
    ) -> bool {
        let sums = self.sums_of(task, source, ops);
        let before = sums.keys();
        match key {
            Key::Str(s) => match sums.strings.get_mut(s) {
                Some(acc) => acc.take(ops),
                None => {
                    let mut acc = Acc::new(ops);
                    acc.take(ops);
                    sums.strings.insert(CompactString::from(s), acc);
                }
            },
            Key::Values(k) => sums
                .others
                .entry(k)
                .or_insert_with(|| Acc::new(ops))
                .take(ops),
        }
        if !anchors.is_empty() {
            sums.add_anchors(anchors);
        }
        self.keys += sums.keys() - before;
        self.tuples += 1;
        if self.since.is_none() {
            self.since = Some(Instant::now());
        }
        self.keys >= MAX_KEYS || self.tuples >= MAX_TUPLES
    }

    /// The sums of `source` for `task`, listing `task` as held if it was not.
    #[inline]
    fn sums_of(&mut self, task: u32, source: u32, ops: Ops<'_>) -> &mut Sums {
        let at = task as usize;
        if self.by_task.len() <= at {
            self.by_task.resize_with(at + 1, Vec::new);
        }
        let senders = &mut self.by_task[at];
        if senders.iter().all(Sums::is_empty) {
            self.held.push(task);
        }
        let i = match senders.iter().position(|s| s.source == source) {
            Some(i) => i,
            None => {
                senders.push(Sums::new(source, ops));
                senders.len() - 1
            }
        };
        &mut senders[i]
    }

    /// Whether anything is held.
    #[inline]
    pub(crate) fn any(&self) -> bool {
        !self.held.is_empty()
    }

    /// Whether the oldest sum has waited long enough to be sent.
    pub(crate) fn aged(&self) -> bool {
        self.since.is_some_and(|t| t.elapsed() >= MAX_AGE)
    }

    /// Take every sum held, as `(task, tuple)` pairs for the outbox.
    pub(crate) fn drain(&mut self, mut send: impl FnMut(u32, Tuple)) {
        for task in std::mem::take(&mut self.held) {
            self.drain_task(task, &mut send);
        }
        self.keys = 0;
        self.tuples = 0;
        self.since = None;
    }

    /// Take the sums held for `task` (before its end of input or a marker goes to it).
    pub(crate) fn drain_for(&mut self, task: u32, mut send: impl FnMut(u32, Tuple)) {
        if let Some(i) = self.held.iter().position(|&t| t == task) {
            self.held.swap_remove(i);
            self.drain_task(task, &mut send);
            if self.held.is_empty() {
                self.drain(send);
            }
        }
    }

    fn drain_task(&mut self, task: u32, send: &mut impl FnMut(u32, Tuple)) {
        let Some(senders) = self.by_task.get_mut(task as usize) else {
            return;
        };
        for sums in senders {
            self.keys = self.keys.saturating_sub(sums.keys());
            sums.drain(task, send);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuple::Anchor;

    /// Absorb the word `w` from task 7 for `task`, stamped with `(root, edge)` unless root is 0.
    fn word(p: &mut Partials, task: u32, w: &str, root: u64, edge: u64) -> bool {
        let mut anchors = Anchors::new();
        if root != 0 {
            anchors.push(Anchor::new(root, edge));
        }
        p.absorb(task, 7, Key::Str(w), None, anchors)
    }

    /// A partial tuple as sent: its task, its values and its (root, ack) anchors.
    type Sent = (u32, Vec<Value>, Vec<(u64, u64)>);

    fn drained(p: &mut Partials) -> Vec<Sent> {
        let mut out = Vec::new();
        p.drain(|task, t| {
            let anchors = t.anchors.iter().map(|a| (a.root, a.ack.get())).collect();
            out.push((task, t.values.to_vec(), anchors));
        });
        out.sort_by(|a, b| (a.0, format!("{:?}", a.1)).cmp(&(b.0, format!("{:?}", b.1))));
        out
    }

    #[test]
    fn tuples_are_summed_per_task_and_key() {
        let mut p = Partials::default();
        for (task, w) in [(2, "a"), (2, "b"), (2, "a"), (3, "a")] {
            word(&mut p, task, w, 0, 0);
        }
        assert!(p.any());
        let out = drained(&mut p);
        let rows: Vec<(u32, Vec<Value>)> = out.into_iter().map(|(t, v, _)| (t, v)).collect();
        assert_eq!(
            rows,
            vec![
                (2, vec![Value::str("a"), Value::Int(2)]),
                (2, vec![Value::str("b"), Value::Int(1)]),
                (3, vec![Value::str("a"), Value::Int(1)]),
            ]
        );
        assert!(!p.any());
    }

    /// The partial tuples' anchors XOR to what the summed tuples' anchors XOR to, per root,
    /// and only the last sent to a task carries any: its ack completes exactly their trees.
    #[test]
    fn the_last_partial_carries_the_edges_of_every_tuple_summed() {
        let mut p = Partials::default();
        word(&mut p, 2, "a", 10, 0b0001);
        word(&mut p, 2, "b", 10, 0b0010);
        word(&mut p, 2, "a", 11, 0b0100);
        word(&mut p, 2, "b", 10, 0b1000);
        let mut sent = Vec::new();
        p.drain(|_, t| {
            sent.push(
                t.anchors
                    .iter()
                    .map(|a| (a.root, a.ack.get()))
                    .collect::<Vec<_>>(),
            )
        });
        assert_eq!(sent.len(), 2);
        assert!(sent[0].is_empty());
        let mut per_root: HashMap<u64, u64> = HashMap::new();
        for (root, ack) in &sent[1] {
            *per_root.entry(*root).or_default() ^= ack;
        }
        assert_eq!(per_root.get(&10), Some(&0b1011));
        assert_eq!(per_root.get(&11), Some(&0b0100));
    }

    #[test]
    fn keys_of_several_values_are_summed_too() {
        let mut p = Partials::default();
        for _ in 0..3 {
            let key = Key::Values(smallvec::smallvec![Value::str("x"), Value::Int(1)]);
            p.absorb(2, 7, key, None, Anchors::new());
        }
        let out = drained(&mut p);
        assert_eq!(
            out[0].1,
            vec![Value::str("x"), Value::Int(1), Value::Int(3)]
        );
    }

    #[test]
    fn the_key_bound_asks_for_a_flush() {
        let mut p = Partials::default();
        let full = (0..MAX_KEYS).any(|i| word(&mut p, 2, &i.to_string(), 0, 0));
        assert!(full);
    }

    #[test]
    fn one_task_is_drained_alone_before_its_end_of_input() {
        let mut p = Partials::default();
        word(&mut p, 2, "a", 0, 0);
        word(&mut p, 3, "b", 0, 0);
        let mut sent = Vec::new();
        p.drain_for(2, |t, _| sent.push(t));
        assert_eq!(sent, vec![2]);
        assert!(p.any());
        p.drain_for(3, |t, _| sent.push(t));
        assert_eq!(sent, vec![2, 3]);
        assert!(!p.any());
    }
}
