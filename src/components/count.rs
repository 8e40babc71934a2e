//! The `count` bolt: counts tuples per value of `args.fields` (default: the input's first field).
//! Emits each key with its total when its input is finished, and also on every tick
//! with `args.emit: tick`; with `args.emit: update`, each change as it happens and nothing again at
//! the end (a streaming dedupe: `count(line, emit=update) | filter("count == 1")`). Keys are emitted in
//! sorted order, so output is deterministic per task.

use super::{Bolt, BoltCollector, TaskContext};
use crate::topology::plan::streams;
use crate::tuple::{Tuple, Value};
use compact_str::CompactString;

/// foldhash: fast on short strings with good spread (Fx hashing of words collided enough to
/// cost a fifth of a word count).
type Map<K> = std::collections::HashMap<K, i64, foldhash::fast::FixedState>;

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
        }
    }

    fn emit_all(&self, out: &mut dyn BoltCollector) {
        if self.keys.len() == 1 {
            let mut all: Vec<(Value, i64)> = self
                .strings
                .iter()
                .map(|(k, n)| (Value::Str(k.clone()), *n))
                .chain(self.single.iter().map(|(k, n)| (k.clone(), *n)))
                .collect();
            all.sort_by(|a, b| cmp_values(&a.0, &b.0));
            for (k, n) in all {
                out.send(streams::DEFAULT, &[], smallvec::smallvec![k, Value::Int(n)]);
            }
        } else {
            let mut all: Vec<(&Vec<Value>, &i64)> = self.multi.iter().collect();
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
    }
}

/// Add one to `key`'s count (`owned` makes the key when it is new); returns the new count.
#[inline]
fn bump<K, Q>(map: &mut Map<K>, key: &Q, owned: impl FnOnce() -> K) -> i64
where
    K: std::borrow::Borrow<Q> + std::hash::Hash + Eq,
    Q: std::hash::Hash + Eq + ?Sized,
{
    match map.get_mut(key) {
        Some(n) => {
            *n += 1;
            *n
        }
        None => {
            map.insert(owned(), 1);
            1
        }
    }
}

fn cmp_values(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        _ => format!("{a:?}").cmp(&format!("{b:?}")),
    }
}

impl Bolt for Count {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
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
                bump(&mut self.strings, word.as_str(), || word.clone())
            } else {
                bump(&mut self.single, key, || key.clone())
            }
        } else {
            let key: Vec<Value> = self
                .keys
                .iter()
                .map(|&i| input.values.get(i).cloned().unwrap_or(Value::Null))
                .collect();
            let n = self.multi.entry(key).or_insert(0);
            *n += 1;
            *n
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
            self.emit_all(out);
        }
        Ok(())
    }
}
