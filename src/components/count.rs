//! The `count` bolt: counts tuples per value of `args.fields` (default: the input's first field).
//! Emits each key with its total when its input is finished, and also on every tick
//! with `args.emit: tick`; with `args.emit: update`, each change as it happens and nothing again at
//! the end (streaming de-duplication: `count(line, emit=update) | filter("count == 1")`). Keys are emitted in
//! sorted order, so output is deterministic per task.
//!
//! Stateful (`stateful: true`), each key is an entry of its checkpoints: the key (its value, or
//! the list of its values with several `fields`) → its count. A key whose count changed is
//! marked in its slot and listed once, so a checkpoint writes only the keys counted since the
//! last one.

use super::builtin as b;
use super::memory::{spill_to, value_bytes, KeyBudget};
use super::{Bolt, BoltCollector, BoltState, ChangeSink, TaskContext};
use crate::model::plan::streams;
use crate::state::codec;
use crate::state::spill::{order, Layout, SpillMap};
use crate::tuple::{Tuple, Value};
use compact_str::CompactString;

/// A count's bytes beside its key: the count and its marks.
const SLOT_BYTES: u64 = 16;

/// How one kind of key is kept on disk when it spills: its order bytes (the output's order)
/// and its conversions to and from a value.
struct Keys<K> {
    order: fn(&K, &mut Vec<u8>),
    value: fn(&K) -> Value,
    key: fn(Value) -> Option<K>,
}

impl<K> Layout<K, i64> for Keys<K> {
    fn order(&self, key: &K, out: &mut Vec<u8>) {
        (self.order)(key, out)
    }

    fn encode(&self, key: &K, n: &i64, out: &mut Vec<u8>) {
        codec::encode(&(self.value)(key), out);
        codec::encode(&Value::Int(*n), out);
    }

    fn decode(&self, record: &[u8]) -> anyhow::Result<(K, i64)> {
        let (key, used) = codec::decode(record)?;
        let n = codec::from_bytes(record.get(used..).unwrap_or_default())?;
        match ((self.key)(key), n) {
            (Some(k), Value::Int(n)) => Ok((k, n)),
            _ => anyhow::bail!("count: a spilled entry is not a key and its count"),
        }
    }

    fn bytes(&self, key: &K) -> u64 {
        value_bytes(&(self.value)(key)) + SLOT_BYTES
    }
}

fn string_keys() -> Box<Keys<CompactString>> {
    Box::new(Keys {
        order: |k, out| order::str_order(k, out),
        value: |k| Value::Str(k.clone()),
        key: |v| match v {
            Value::Str(s) => Some(s),
            _ => None,
        },
    })
}

fn single_keys() -> Box<Keys<Value>> {
    Box::new(Keys {
        order: order::value_order,
        value: Value::clone,
        key: Some,
    })
}

fn multi_keys() -> Box<Keys<Vec<Value>>> {
    Box::new(Keys {
        order: |k, out| order::values_order(k, out),
        value: |k| Value::List(Box::new(k.clone())),
        key: |v| match v {
            Value::List(l) => Some(*l),
            _ => None,
        },
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EmitMode {
    Finish,
    Tick,
    Update,
}

pub struct Count {
    fields: Vec<String>,
    keys: Vec<usize>,
    mode: EmitMode,
    /// Single-field string keys (the common case): no Vec per tuple, and a key compares as
    /// bytes alone.
    strings: SpillMap<CompactString, i64>,
    /// Single-field keys of other types.
    single: SpillMap<Value, i64>,
    multi: SpillMap<Vec<Value>, i64>,
    /// Keeps checkpointed state: the maps list the keys changed since the last checkpoint.
    stateful: bool,
}

impl Count {
    pub fn new(args: &serde_json::Map<String, serde_json::Value>) -> Count {
        let fields = match args.get("fields") {
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .filter_map(|f| f.as_str())
                .map(String::from)
                .collect(),
            Some(serde_json::Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        };
        let mode = match args.get("emit").and_then(|v| v.as_str()) {
            Some("tick") => EmitMode::Tick,
            Some("update") => EmitMode::Update,
            _ => EmitMode::Finish,
        };
        Count {
            fields,
            keys: vec![0],
            mode,
            strings: SpillMap::new(string_keys()),
            single: SpillMap::new(single_keys()),
            multi: SpillMap::new(multi_keys()),
            stateful: false,
        }
    }

    /// Keep checkpointed state (`stateful: true`): [`CheckpointParticipant::state`](crate::components::CheckpointParticipant::state) is then `Some`.
    pub fn with_state(mut self, stateful: bool) -> Count {
        self.stateful = stateful;
        self.strings.track_changes(stateful);
        self.single.track_changes(stateful);
        self.multi.track_changes(stateful);
        self
    }

    fn emit_all(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.strings.spilled() || self.single.spilled() || self.multi.spilled() {
            return self.emit_spilled(out);
        }
        if self.keys.len() == 1 {
            let mut all: Vec<(Value, i64)> = self
                .strings
                .hot()
                .map(|(k, n)| (Value::Str(k.clone()), *n))
                .chain(self.single.hot().map(|(k, n)| (k.clone(), *n)))
                .collect();
            all.sort_by(|a, b| cmp_values(&a.0, &b.0));
            for (k, n) in all {
                out.send(streams::DEFAULT, &[], smallvec::smallvec![k, Value::Int(n)]);
            }
        } else {
            let mut all: Vec<(&Vec<Value>, &i64)> = self.multi.hot().collect();
            all.sort_by(|a, b| {
                a.0.iter()
                    .zip(b.0.iter())
                    .map(|(x, y)| cmp_values(x, y))
                    .find(|o| o.is_ne())
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            for (k, n) in all {
                let mut v = k.clone();
                v.push(Value::Int(*n));
                out.send(streams::DEFAULT, &[], v.into());
            }
        }
        Ok(())
    }

    /// Every key's total once some keys spilled: read in the order of their order bytes (as
    /// [`cmp_values`] orders strings and numbers), from memory and from the spill files.
    fn emit_spilled(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.keys.len() != 1 {
            for row in in_order(&mut self.multi, |k| Value::List(Box::new(k)))? {
                let (_, k, n) = row?;
                let Value::List(mut v) = k else { continue };
                v.push(Value::Int(n));
                out.send(streams::DEFAULT, &[], (*v).into());
            }
            return Ok(());
        }
        let mut strings = in_order(&mut self.strings, Value::Str)?.peekable();
        let mut single = in_order(&mut self.single, |k| k)?.peekable();
        loop {
            let take_string = match (strings.peek(), single.peek()) {
                (None, None) => return Ok(()),
                (Some(Ok(a)), Some(Ok(b))) => a.0 <= b.0,
                (Some(_), _) => true,
                (None, Some(_)) => false,
            };
            let next = match take_string {
                true => strings.next(),
                false => single.next(),
            };
            if let Some(row) = next {
                let (_, k, n) = row?;
                out.send(streams::DEFAULT, &[], smallvec::smallvec![k, Value::Int(n)]);
            }
        }
    }
}

type Rows<'a> = Box<dyn Iterator<Item = anyhow::Result<(Vec<u8>, Value, i64)>> + 'a>;

/// `map`'s keys (as values) and counts, in the order of their order bytes.
fn in_order<K: std::hash::Hash + Eq + Clone + 'static>(
    map: &mut SpillMap<K, i64>,
    value: impl Fn(K) -> Value + 'static,
) -> anyhow::Result<Rows<'_>> {
    if !map.spilled() {
        let layout = map_layout_order(map);
        let mut rows: Vec<(Vec<u8>, Value, i64)> = map
            .hot()
            .map(|(k, n)| {
                let mut o = Vec::new();
                layout(k, &mut o);
                (o, value(k.clone()), *n)
            })
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        return Ok(Box::new(rows.into_iter().map(Ok)));
    }
    match map.sorted()? {
        Some(rows) => Ok(Box::new(
            rows.map(move |r| r.map(|(o, k, n)| (o, value(k), n))),
        )),
        None => Ok(Box::new(std::iter::empty())),
    }
}

/// The order-bytes function of `map`'s keys.
fn map_layout_order<K: std::hash::Hash + Eq + Clone>(
    map: &SpillMap<K, i64>,
) -> impl Fn(&K, &mut Vec<u8>) + '_ {
    move |k, out| map.order_of(k, out)
}

/// Add one to a key's count; returns the new count.
#[inline]
fn bump<K, Q>(map: &mut SpillMap<K, i64>, key: &Q, owned: impl Fn() -> K) -> anyhow::Result<i64>
where
    K: std::borrow::Borrow<Q> + std::hash::Hash + Eq + Clone,
    Q: std::hash::Hash + Eq + ?Sized,
{
    add(map, key, owned, 1)
}

/// Add `by` to a key's count; returns the new count.
#[inline]
fn add<K, Q>(
    map: &mut SpillMap<K, i64>,
    key: &Q,
    owned: impl Fn() -> K,
    by: i64,
) -> anyhow::Result<i64>
where
    K: std::borrow::Borrow<Q> + std::hash::Hash + Eq + Clone,
    Q: std::hash::Hash + Eq + ?Sized,
{
    map.update(
        key,
        owned,
        || 0,
        |n| {
            *n = n.saturating_add(by);
            *n
        },
    )
}

fn cmp_values(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        _ => match (a.as_num(), b.as_num()) {
            (Some(x), Some(y)) => x.order(y),
            _ => format!("{a:?}").cmp(&format!("{b:?}")),
        },
    }
}

impl Bolt for Count {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        let to = spill_to(ctx);
        let budget = || Box::new(KeyBudget::for_task(ctx, "count"));
        self.strings.bound(budget(), to.clone());
        self.single
            .bound(budget(), to.clone().map(|t| t.with_suffix("single")));
        self.multi
            .bound(budget(), to.map(|t| t.with_suffix("multi")));
        let input = super::input_fields(ctx);
        if !self.fields.is_empty() {
            self.keys = self
                .fields
                .iter()
                .map(|f| input.iter().position(|x| x == f).unwrap_or(0))
                .collect();
        }
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            if self.mode == EmitMode::Tick {
                self.emit_all(out)?;
            }
            return Ok(());
        }
        if input.stream == streams::PARTIAL {
            return self.add_partial(input);
        }
        if input.stream == streams::FOLDED {
            return self.add_folded(input);
        }
        let total = if self.keys.len() == 1 {
            let key = input.values.get(self.keys[0]).unwrap_or(&Value::Null);
            if let Value::Str(word) = key {
                bump(&mut self.strings, word.as_str(), || word.clone())?
            } else {
                bump(&mut self.single, key, || key.clone())?
            }
        } else {
            let key: Vec<Value> = self
                .keys
                .iter()
                .map(|&i| input.values.get(i).cloned().unwrap_or(Value::Null))
                .collect();
            bump(&mut self.multi, key.as_slice(), || key.clone())?
        };
        if self.mode == EmitMode::Update {
            let mut v: Vec<Value> = self
                .keys
                .iter()
                .map(|&i| input.values.get(i).cloned().unwrap_or(Value::Null))
                .collect();
            v.push(Value::Int(total));
            out.send(streams::DEFAULT, &[input], v.into());
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        // With `emit: update` every total was emitted when it changed: nothing is new at the end.
        if self.mode != EmitMode::Update {
            self.emit_all(out)?;
        }
        Ok(())
    }
}

impl crate::components::CheckpointParticipant for Count {
    fn state(&mut self) -> Option<&mut dyn BoltState> {
        match self.stateful {
            true => Some(self),
            false => None,
        }
    }
}

impl BoltState for Count {
    /// Each changed key goes to `sink` as its map lists it.
    fn changes_into(&mut self, all: bool, sink: &mut ChangeSink<'_>) -> anyhow::Result<()> {
        let mut send = |k: Value, n: i64| sink(&k, Some(&Value::Int(n)));
        self.strings
            .changes(all, |k, c| send(Value::Str(k.clone()), *c))?;
        self.single.changes(all, |k, c| send(k.clone(), *c))?;
        self.multi
            .changes(all, |k, c| send(Value::List(Box::new(k.clone())), *c))
    }

    fn restore(&mut self, entries: Vec<(Value, Value)>) -> anyhow::Result<()> {
        self.restore_from(&mut entries.into_iter().map(Ok))
    }

    /// Each key is restored as it comes: past the memory limit, keys go to the spill file
    /// instead of all being held first.
    fn restore_from(&mut self, entries: &mut super::Entries<'_>) -> anyhow::Result<()> {
        self.strings.clear()?;
        self.single.clear()?;
        self.multi.clear()?;
        self.with_state_kept();
        let width = self.keys.len();
        // Added to a key already restored: state saved before `1` and `1.0` were one key may
        // hold both.
        let add = |a: &mut i64, b: i64| *a = a.saturating_add(b);
        for entry in entries {
            let (key, count) = entry?;
            let n = match count {
                Value::Int(n) if n >= 1 => n,
                other => anyhow::bail!(
                    "count: the saved count of key {} is {}, not a whole number ≥ 1",
                    key.plain_text(),
                    other.plain_text()
                ),
            };
            match key {
                Value::Str(s) if width == 1 => self.strings.restore(s, n, add)?,
                k if width == 1 => self.single.restore(k, n, add)?,
                Value::List(l) if l.len() == width => self.multi.restore(*l, n, add)?,
                k => anyhow::bail!(
                    "count: a saved key, {}, is not a list of {width} values (one per field of `fields`)",
                    k.plain_text()
                ),
            }
        }
        Ok(())
    }
}

impl Count {
    /// A partial count summed by a sender (`[key…, n]` on stream `__partial`, the key in the
    /// order of `fields`): `n` tuples of that key at once.
    /// Add a chunk of values counted where they were read (`[values, counts]`, see
    /// `Bolt::counting_fold`).
    fn add_folded(&mut self, input: &Tuple) -> anyhow::Result<()> {
        let (Some(Value::List(keys)), Some(Value::List(counts)), 1) =
            (input.values.first(), input.values.get(1), self.keys.len())
        else {
            return Err(folded_refused("not a list of values and their counts"));
        };
        if keys.len() != counts.len() {
            return Err(folded_refused("not one count per value"));
        }
        for (key, n) in keys.iter().zip(counts.iter()) {
            let Value::Int(n) = n else {
                return Err(folded_refused(&format!(
                    "a count that is not a number: {n:?}"
                )));
            };
            self.add_single(key, *n)?;
        }
        Ok(())
    }

    /// Add `n` to the count of single-field key `key`.
    fn add_single(&mut self, key: &Value, n: i64) -> anyhow::Result<()> {
        match key {
            Value::Str(word) => add(&mut self.strings, word.as_str(), || word.clone(), n)?,
            key => add(&mut self.single, key, || key.clone(), n)?,
        };
        Ok(())
    }

    fn add_partial(&mut self, input: &Tuple) -> anyhow::Result<()> {
        let width = self.keys.len();
        let (Some(Value::Int(n)), true) = (input.values.last(), input.values.len() == width + 1)
        else {
            anyhow::bail!(
                "count: a partial count is not {width} key value(s) and a number: {:?}",
                input.values
            );
        };
        let n = *n;
        if width == 1 {
            self.add_single(&input.values[0], n)?;
        } else {
            let key = &input.values[..width];
            add(&mut self.multi, key, || key.to_vec(), n)?;
        }
        Ok(())
    }

    /// A restored count keeps checkpointed state from then on.
    fn with_state_kept(&mut self) {
        if !self.stateful {
            self.stateful = true;
            self.strings.track_changes(true);
            self.single.track_changes(true);
            self.multi.track_changes(true);
        }
    }
}

/// The `count` built-in.
pub(crate) struct CountType;

impl b::Builtin for CountType {
    fn name(&self) -> &'static str {
        "count"
    }
    fn summary(&self) -> &'static str {
        "bolt: tuples per key of `fields`; totals at the end, on ticks or every update"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        use b::ArgShape as A;
        vec![
            b::arg("fields", A::Fields),
            b::arg("emit", A::OneOf(&["end", "tick", "update"])),
        ]
    }
    fn positional(&self) -> Option<b::Positional> {
        Some(b::Positional::List("fields"))
    }
    fn default_grouping(&self) -> Option<b::DefaultGrouping> {
        Some(b::DefaultGrouping::FieldsOf("fields"))
    }
    fn field_args(&self) -> &'static [&'static str] {
        &["fields"]
    }
    fn keeps_state(&self) -> bool {
        true
    }
    fn emits_in_bursts(&self) -> bool {
        true
    }
    /// Only totals emitted at the end can be summed ahead: a tick's totals would lag, and
    /// `emit: update` shows every step of a key's count.
    fn partial_count_keys(
        &self,
        c: &crate::model::Component,
        input: &[String],
    ) -> Option<Vec<String>> {
        match c.args.get("emit").and_then(|v| v.as_str()) {
            None | Some("end") => {}
            Some(_) => return None,
        }
        match b::strings(c.args.get("fields")) {
            Some(k) if !k.is_empty() => Some(k),
            _ => Some(vec![input.first()?.clone()]),
        }
    }
    fn output_fields(&self, c: &crate::model::Component, input: Option<&[String]>) -> b::Fields {
        let mut keys = match b::strings(c.args.get("fields")) {
            Some(k) => k,
            None => vec![input?.first()?.clone()],
        };
        keys.push("count".into());
        Some(Some(keys))
    }
    /// The key fields' types, then `count`, an integer.
    fn field_types(&self, cx: &b::TypeCx) -> Option<Vec<crate::expr::Type>> {
        let (names, types) = cx.input?;
        let type_of = |f: &String| {
            let k = names.iter().position(|n| n == f)?;
            types.get(k).copied()
        };
        let last = cx.fields.len().saturating_sub(1);
        Some(
            (0..cx.fields.len())
                .map(|k| match k == last {
                    true => crate::expr::Type::Int,
                    false => type_of(&cx.fields[k]).unwrap_or(crate::expr::Type::Any),
                })
                .collect(),
        )
    }
    fn checkpointed_bolt(
        &self,
        c: &crate::model::Component,
        _base: &std::path::Path,
    ) -> Option<anyhow::Result<Box<dyn crate::components::CheckpointParticipant>>> {
        Some(Ok(Box::new(Count::new(&c.args).with_state(c.stateful))))
    }
}

/// [`FatalError::folded`](super::FatalError::folded) for `count`.
fn folded_refused(why: &str) -> anyhow::Error {
    super::FatalError::folded("count", why)
}

/// A `__folded` tuple (`[values, counts]`, see `Count::add_folded`) dealt out to the tasks of a
/// `count`: `task_of` says where each value goes. Per task, its tuple and how many tuples it
/// stands for; `None` when the tuple is not of that shape or a value has no task.
pub(crate) fn deal_folded(
    folded: crate::tuple::Values,
    mut task_of: impl FnMut(&Value) -> Option<u32>,
) -> Option<Vec<(u32, crate::tuple::Values, u64)>> {
    let (Some(Value::List(keys)), Some(Value::List(counts))) = (folded.first(), folded.get(1))
    else {
        return None;
    };
    let mut dealt: Vec<(u32, Vec<Value>, Vec<Value>, u64)> = Vec::new();
    for (key, n) in keys.iter().zip(counts.iter()) {
        let (task, Value::Int(count)) = (task_of(key)?, n) else {
            return None;
        };
        let at = match dealt.iter().position(|d| d.0 == task) {
            Some(at) => at,
            None => {
                dealt.push((task, Vec::new(), Vec::new(), 0));
                dealt.len() - 1
            }
        };
        let d = &mut dealt[at];
        d.1.push(key.clone());
        d.2.push(n.clone());
        d.3 += u64::try_from(*count).unwrap_or(0);
    }
    let tuple = |k, c| smallvec::smallvec![Value::list(k), Value::list(c)];
    Some(
        dealt
            .into_iter()
            .map(|(t, k, c, n)| (t, tuple(k, c), n))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::state_check::{cuts, resumed, straight, tick, tuple};
    use crate::components::CheckpointParticipant;
    use proptest::prelude::*;

    /// A stateful count of `fields` (positions `keys`) emitting by `mode`.
    fn count(mode: &str, keys: Vec<usize>) -> Count {
        let args = serde_json::json!({"emit": mode});
        let mut c = Count::new(args.as_object().expect("an object")).with_state(true);
        c.keys = keys;
        c
    }

    /// Tuples of (word, number), with a tick now and then: keys of strings and of integers.
    fn inputs() -> impl Strategy<Value = Vec<Tuple>> {
        let one = (0u8..6, 0i64..3, 0u8..12).prop_map(|(w, n, t)| match t {
            0 => tick(),
            1 => tuple(smallvec::smallvec![Value::Int(n), Value::str("x")]),
            _ => tuple(smallvec::smallvec![
                Value::str(&format!("w{w}")),
                Value::Int(n)
            ]),
        });
        proptest::collection::vec(one, 0..80)
    }

    proptest! {
        /// Checkpointed at random cuts and resumed from the last, a count emits what one
        /// counting straight through emits: single keys and pairs, in every emit mode.
        #[test]
        fn resumed_counts_equal_uninterrupted(
            input in inputs(),
            cut in cuts(80),
            mode in prop::sample::select(vec!["end", "tick", "update"]),
            pair in any::<bool>(),
        ) {
            let keys = if pair { vec![0, 1] } else { vec![0] };
            let make = || count(mode, keys.clone());
            prop_assert_eq!(resumed(&make, &input, &cut), straight(&make, &input));
        }
    }

    #[test]
    fn changes_list_only_the_keys_counted_since_the_last_checkpoint() {
        let mut c = count("end", vec![0]);
        let mut out = crate::components::state_check::Rows::default();
        for w in ["a", "b", "a"] {
            let t = tuple(smallvec::smallvec![Value::str(w)]);
            c.execute(&t, &mut out).expect("execute");
        }
        let mut changes = Vec::new();
        c.changes(true, &mut changes).expect("changes");
        changes.sort_by_key(|(k, _)| k.plain_text());
        let entry = |k: &str, n: i64| (Value::str(k), Some(Value::Int(n)));
        assert_eq!(changes, [entry("a", 2), entry("b", 1)]);
        changes.clear();
        c.changes(false, &mut changes).expect("changes");
        assert_eq!(changes, []);
        for w in ["b", "b", "c"] {
            let t = tuple(smallvec::smallvec![Value::str(w)]);
            c.execute(&t, &mut out).expect("execute");
        }
        c.changes(false, &mut changes).expect("changes");
        changes.sort_by_key(|(k, _)| k.plain_text());
        assert_eq!(changes, [entry("b", 3), entry("c", 1)]);
    }

    #[test]
    fn restore_rejects_entries_it_cannot_read() {
        let err = |keys: Vec<usize>, k: Value, v: Value| {
            count("end", keys)
                .restore(vec![(k, v)])
                .expect_err("unreadable")
                .to_string()
        };
        assert_eq!(
            err(vec![0], Value::str("a"), Value::str("x")),
            "count: the saved count of key a is x, not a whole number ≥ 1"
        );
        assert!(err(vec![0, 1], Value::str("a"), Value::Int(1)).contains("not a list of 2"));
        assert!(Count::new(&serde_json::Map::new()).state().is_none());
    }

    /// A budget of its own (not the process's) that keeps the most it ever held.
    struct Peak {
        held: u64,
        limit: u64,
        peak: std::sync::Arc<std::sync::atomic::AtomicU64>,
    }

    impl crate::state::spill::Budget for Peak {
        fn note(&mut self, bytes: u64) -> bool {
            self.held += bytes;
            self.peak
                .fetch_max(self.held, std::sync::atomic::Ordering::Relaxed);
            self.held > self.limit
        }
        fn forget(&mut self, bytes: u64) {
            self.held -= bytes;
        }
        fn clear(&mut self) {
            self.held = 0;
        }
        fn relieved(&self) -> bool {
            self.held <= self.limit / 4 * 3
        }
        fn refusal(&self) -> anyhow::Error {
            anyhow::anyhow!("past the limit")
        }
        fn limit(&self) -> Option<u64> {
            Some(self.limit)
        }
    }

    /// A count resumed from more saved keys than its limit holds takes them one at a time:
    /// memory never holds more than the limit (and one key), the rest goes to the spill file
    /// as it comes, and every total is back.
    #[test]
    fn a_spilled_count_restores_under_its_limit_as_the_entries_come() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut c = count("end", vec![0]);
        let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let limit = 100_000;
        let budget = Peak {
            held: 0,
            limit,
            peak: peak.clone(),
        };
        let to = crate::state::spill::SpillTo {
            path: dir.path().join("count-0.redb"),
            cache: 1 << 20,
        };
        c.strings.bound(Box::new(budget), Some(to));
        let n = 30_000i64;
        let mut taken = 0;
        let mut entries = (0..n).map(|i| {
            taken += 1;
            Ok((Value::str(&format!("key{i:05}")), Value::Int(i % 5 + 1)))
        });
        c.restore_from(&mut entries).expect("restores");
        drop(entries);
        assert_eq!(taken, n);
        let most = peak.load(std::sync::atomic::Ordering::Relaxed);
        assert!(most <= limit + 100, "held {most} bytes at most");
        let (hot, cold, _) = c.strings.sizes();
        assert!(
            cold > 0 && (hot as i64) < n / 4,
            "{hot} in memory, {cold} on disk"
        );
        let mut out = crate::components::state_check::Rows::default();
        c.finish(&mut out).expect("finish");
        let want: Vec<crate::tuple::Values> = (0..n)
            .map(|i| smallvec::smallvec![Value::str(&format!("key{i:05}")), Value::Int(i % 5 + 1)])
            .collect();
        let got: Vec<crate::tuple::Values> = out.0.into_iter().map(|(_, v)| v).collect();
        assert_eq!(got, want);
    }

    /// State saved when `1` and `1.0` were two keys restores as one key with both counts.
    #[test]
    fn saved_counts_of_one_and_one_point_zero_restore_as_one_key() {
        let mut c = count("end", vec![0]);
        c.restore(vec![
            (Value::Int(1), Value::Int(2)),
            (Value::Float(1.0), Value::Int(3)),
        ])
        .expect("restores");
        let held: Vec<i64> = c.single.hot().map(|(_, n)| *n).collect();
        assert_eq!(held, [5]);
    }
}
