//! The `count` bolt: counts tuples per value of `args.fields` (default: the input's first field).
//! Emits each key with its total when its input is finished, and also on every tick
//! with `args.emit: tick`; with `args.emit: update`, each change as it happens and nothing again at
//! the end (a streaming dedupe: `count(line, emit=update) | filter("count == 1")`). Keys are emitted in
//! sorted order, so output is deterministic per task.
//!
//! Stateful (`stateful: true`), each key is an entry of its checkpoints: the key (its value, or
//! the list of its values with several `fields`) → its count. A key whose count changed is
//! marked in its slot and listed once, so a checkpoint writes only the keys counted since the
//! last one.

use super::memory::{value_bytes, KeyBudget};
use super::{Bolt, BoltCollector, BoltState, TaskContext};
use crate::topology::plan::streams;
use crate::tuple::{Tuple, Value};
use compact_str::CompactString;

/// A count's bytes beside its key: the count and its flag.
const SLOT_BYTES: u64 = std::mem::size_of::<Slot>() as u64;

/// foldhash: fast on short strings with good spread (Fx hashing of words collided enough to
/// cost a fifth of a word count).
type Map<K> = std::collections::HashMap<K, Slot, foldhash::fast::FixedState>;

/// A key's count, and whether it changed since the last checkpoint took the changes.
#[derive(Debug, Clone, Copy)]
struct Slot {
    n: i64,
    dirty: bool,
}

/// The keys whose counts changed since the last checkpoint, each listed once.
#[derive(Default)]
struct Dirty {
    strings: Vec<CompactString>,
    single: Vec<Value>,
    multi: Vec<Vec<Value>>,
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
    strings: Map<CompactString>,
    /// Single-field keys of other types.
    single: Map<Value>,
    multi: Map<Vec<Value>>,
    /// Stateful: the keys changed since the last checkpoint (`None`: stateless).
    dirty: Option<Dirty>,
    /// The bytes the keys hold, against `topology.state.memory.limit`.
    budget: KeyBudget,
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
            strings: Map::default(),
            single: Map::default(),
            multi: Map::default(),
            dirty: None,
            budget: KeyBudget::default(),
        }
    }

    /// Keep checkpointed state (`stateful: true`): [`Bolt::state`] is then `Some`.
    pub fn with_state(mut self, stateful: bool) -> Count {
        self.dirty = stateful.then(Dirty::default);
        self
    }

    fn emit_all(&self, out: &mut dyn BoltCollector) {
        if self.keys.len() == 1 {
            let mut all: Vec<(Value, i64)> = self
                .strings
                .iter()
                .map(|(k, s)| (Value::Str(k.clone()), s.n))
                .chain(self.single.iter().map(|(k, s)| (k.clone(), s.n)))
                .collect();
            all.sort_by(|a, b| cmp_values(&a.0, &b.0));
            for (k, n) in all {
                out.send(streams::DEFAULT, &[], smallvec::smallvec![k, Value::Int(n)]);
            }
        } else {
            let mut all: Vec<(&Vec<Value>, &Slot)> = self.multi.iter().collect();
            all.sort_by(|a, b| {
                a.0.iter()
                    .zip(b.0.iter())
                    .map(|(x, y)| cmp_values(x, y))
                    .find(|o| o.is_ne())
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            for (k, s) in all {
                let mut v = k.clone();
                v.push(Value::Int(s.n));
                out.send(streams::DEFAULT, &[], v.into());
            }
        }
    }
}

/// Add one to `key`'s count (`owned` makes the key when it is new); returns the new count
/// (1: a new key). With `dirty` (stateful), a key that turns dirty is listed there.
#[inline]
fn bump<K, Q>(map: &mut Map<K>, key: &Q, owned: impl Fn() -> K, dirty: Option<&mut Vec<K>>) -> i64
where
    K: std::borrow::Borrow<Q> + std::hash::Hash + Eq,
    Q: std::hash::Hash + Eq + ?Sized,
{
    match map.get_mut(key) {
        Some(s) => {
            s.n += 1;
            if let Some(d) = dirty {
                if !s.dirty {
                    s.dirty = true;
                    d.push(owned());
                }
            }
            s.n
        }
        None => {
            let tracked = dirty.map(|d| d.push(owned())).is_some();
            map.insert(
                owned(),
                Slot {
                    n: 1,
                    dirty: tracked,
                },
            );
            1
        }
    }
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
        self.budget = KeyBudget::for_task(ctx, "count");
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
                self.emit_all(out);
            }
            return Ok(());
        }
        let total = if self.keys.len() == 1 {
            let key = input.values.get(self.keys[0]).unwrap_or(&Value::Null);
            if let Value::Str(word) = key {
                let dirty = self.dirty.as_mut().map(|d| &mut d.strings);
                bump(&mut self.strings, word.as_str(), || word.clone(), dirty)
            } else {
                let dirty = self.dirty.as_mut().map(|d| &mut d.single);
                bump(&mut self.single, key, || key.clone(), dirty)
            }
        } else {
            let key: Vec<Value> = self
                .keys
                .iter()
                .map(|&i| input.values.get(i).cloned().unwrap_or(Value::Null))
                .collect();
            let dirty = self.dirty.as_mut().map(|d| &mut d.multi);
            bump(&mut self.multi, key.as_slice(), || key.clone(), dirty)
        };
        if total == 1 {
            let key = self
                .keys
                .iter()
                .map(|&i| input.values.get(i).map_or(24, value_bytes));
            self.budget.add(key.sum::<u64>() + SLOT_BYTES)?;
        }
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
            self.emit_all(out);
        }
        Ok(())
    }

    fn state(&mut self) -> Option<&mut dyn BoltState> {
        match self.dirty {
            Some(_) => Some(self),
            None => None,
        }
    }
}

/// Append `map`'s entries to `out` (all, or those listed in `dirty`) and mark them clean.
fn take_changes<K: std::hash::Hash + Eq>(
    map: &mut Map<K>,
    dirty: &mut Vec<K>,
    all: bool,
    key: impl Fn(&K) -> Value,
    out: &mut Vec<(Value, Option<Value>)>,
) {
    if all {
        for (k, s) in map.iter_mut() {
            s.dirty = false;
            out.push((key(k), Some(Value::Int(s.n))));
        }
    } else {
        for k in dirty.iter() {
            if let Some(s) = map.get_mut(k) {
                s.dirty = false;
                out.push((key(k), Some(Value::Int(s.n))));
            }
        }
    }
    dirty.clear();
}

impl BoltState for Count {
    fn changes(&mut self, all: bool, out: &mut Vec<(Value, Option<Value>)>) {
        let Some(d) = self.dirty.as_mut() else {
            return;
        };
        let list = |k: &Vec<Value>| Value::List(Box::new(k.clone()));
        take_changes(
            &mut self.strings,
            &mut d.strings,
            all,
            |k| Value::Str(k.clone()),
            out,
        );
        take_changes(&mut self.single, &mut d.single, all, Value::clone, out);
        take_changes(&mut self.multi, &mut d.multi, all, list, out);
    }

    fn restore(&mut self, entries: Vec<(Value, Value)>) -> anyhow::Result<()> {
        self.strings.clear();
        self.single.clear();
        self.multi.clear();
        self.budget.clear();
        self.dirty = Some(Dirty::default());
        let width = self.keys.len();
        for (key, count) in entries {
            self.budget.add(value_bytes(&key) + SLOT_BYTES)?;
            let n = match count {
                Value::Int(n) if n >= 1 => n,
                other => anyhow::bail!(
                    "count: the saved count of key {} is {}, not a whole number ≥ 1",
                    key.plain_text(),
                    other.plain_text()
                ),
            };
            // Added to a key already restored: state saved before `1` and `1.0` were one key
            // may hold both.
            let slot = Slot { n, dirty: false };
            let add = |s: &mut Slot| s.n = s.n.saturating_add(n);
            match key {
                Value::Str(s) if width == 1 => {
                    self.strings.entry(s).and_modify(add).or_insert(slot);
                }
                k if width == 1 => {
                    self.single.entry(k).and_modify(add).or_insert(slot);
                }
                Value::List(l) if l.len() == width => {
                    self.multi.entry(*l).and_modify(add).or_insert(slot);
                }
                k => anyhow::bail!(
                    "count: a saved key, {}, is not a list of {width} values (one per field of `fields`)",
                    k.plain_text()
                ),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::state_check::{cuts, resumed, straight, tick, tuple};
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
        c.changes(true, &mut changes);
        changes.sort_by_key(|(k, _)| k.plain_text());
        let entry = |k: &str, n: i64| (Value::str(k), Some(Value::Int(n)));
        assert_eq!(changes, [entry("a", 2), entry("b", 1)]);
        changes.clear();
        c.changes(false, &mut changes);
        assert_eq!(changes, []);
        for w in ["b", "b", "c"] {
            let t = tuple(smallvec::smallvec![Value::str(w)]);
            c.execute(&t, &mut out).expect("execute");
        }
        c.changes(false, &mut changes);
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

    /// State saved when `1` and `1.0` were two keys restores as one key with both counts.
    #[test]
    fn saved_counts_of_one_and_one_point_zero_restore_as_one_key() {
        let mut c = count("end", vec![0]);
        c.restore(vec![
            (Value::Int(1), Value::Int(2)),
            (Value::Float(1.0), Value::Int(3)),
        ])
        .expect("restores");
        assert_eq!(c.single.len(), 1);
        assert_eq!(c.single.values().map(|s| s.n).sum::<i64>(), 5);
    }
}
