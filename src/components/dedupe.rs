//! The `dedupe` bolt: the first tuple of each key passes, later ones are acked and dropped.
//! Exact (every key remembered), per window (`window: 1m` or `window: 10000` tuples: keys are
//! forgotten when a tumbling window of processing time or of tuples ends), or bounded
//! (`cache: N`: at most N keys, the least recently seen forgotten first — a key seen again is
//! fresh again — so memory stays bounded on an unbounded stream).
//!
//! Stateful (`stateful: true`), each remembered key is an entry of its checkpoints:
//! `[key values]` → `true`, or with a `cache` → when it was last seen (a count of tuples, so a
//! resumed cache forgets in the same order), and `"window"` → `{seen, seq}` (tuples in the
//! current window, tuples so far). A window of processing time starts again when a run resumes.

use super::builtin as b;
use super::memory::{spill_to, value_bytes, KeyBudget};
use super::{Bolt, BoltCollector, BoltState, TaskContext};
use crate::model::plan::streams;
use crate::model::Component;
use crate::state::codec;
use crate::state::spill::{order, Layout, SpillMap};
use crate::tuple::{Tuple, Value, Values};
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

/// When remembered keys are forgotten.
enum Memory {
    /// Every key (of the window): in memory, or spilled to disk past
    /// `topology.state.memory.limit` when the run has a state dir.
    Exact(SpillMap<Values, ()>),
    Cache(lru::LruCache<Values, Seen>),
}

/// How a remembered key is written when it spills.
struct Keys;

impl Layout<Values, ()> for Keys {
    fn order(&self, key: &Values, out: &mut Vec<u8>) {
        order::values_order(key, out)
    }

    fn encode(&self, key: &Values, _: &(), out: &mut Vec<u8>) {
        codec::encode(&key_value(key), out)
    }

    fn decode(&self, record: &[u8]) -> anyhow::Result<(Values, ())> {
        match codec::from_bytes(record)? {
            Value::List(k) => Ok((k.into_iter().collect(), ())),
            _ => anyhow::bail!("dedupe: a spilled key is not a list of values"),
        }
    }

    fn bytes(&self, key: &Values) -> u64 {
        key_bytes(key)
    }
}

/// When a cached key was last seen, and whether that changed since the last checkpoint.
#[derive(Clone, Copy)]
struct Seen {
    at: u64,
    dirty: bool,
}

/// Stateful: keys remembered (or seen again) and keys forgotten since the last checkpoint.
#[derive(Default)]
struct Changed {
    dirty: Vec<Values>,
    removed: Vec<Values>,
}

/// A tumbling window after which every key is forgotten.
#[derive(Clone, Copy)]
enum Window {
    Time(Duration),
    Count(u64),
}

struct Dedupe {
    key_names: Vec<String>,
    /// Positions of the key fields (empty: the whole tuple).
    keys: Vec<usize>,
    memory: Memory,
    window: Option<Window>,
    window_started: Instant,
    /// The time a `window` of time goes by.
    machine_clock: crate::clock::Clock,
    seen_in_window: u64,
    /// Tuples so far (orders a cache's keys by when they were last seen).
    seq: u64,
    /// Stateful: what changed since the last checkpoint (`None`: stateless). Exact keys
    /// keep their own record of the keys remembered since.
    changed: Option<Changed>,
}

/// About how many bytes a remembered key takes.
fn key_bytes(key: &Values) -> u64 {
    key.iter().map(value_bytes).sum::<u64>() + std::mem::size_of::<Values>() as u64
}

impl Dedupe {
    fn new(args: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Dedupe> {
        let key_names = match args.get("key") {
            None => Vec::new(),
            Some(serde_json::Value::String(s)) => vec![s.clone()],
            Some(v) => v
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
        };
        let memory = match args.get("cache").and_then(|v| v.as_u64()) {
            Some(n) => {
                let n = NonZeroUsize::new(n as usize)
                    .ok_or_else(|| anyhow::anyhow!("dedupe: `cache` must be at least 1"))?;
                Memory::Cache(lru::LruCache::new(n))
            }
            None => Memory::Exact(SpillMap::new(Box::new(Keys))),
        };
        let window = match args.get("window") {
            None => None,
            Some(serde_json::Value::Number(n)) => n.as_u64().filter(|n| *n > 0).map(Window::Count),
            Some(v) => crate::config::duration_of(v)
                .filter(|d| !d.is_zero())
                .map(Window::Time),
        };
        Ok(Dedupe {
            key_names,
            keys: Vec::new(),
            memory,
            window,
            window_started: Instant::now(),
            machine_clock: crate::clock::Clock::system(),
            seen_in_window: 0,
            seq: 0,
            changed: None,
        })
    }

    /// Keep checkpointed state (`stateful: true`): [`CheckpointParticipant::state`](crate::components::CheckpointParticipant::state) is then `Some`.
    fn with_state(mut self, stateful: bool) -> Dedupe {
        self.changed = stateful.then(Changed::default);
        if let Memory::Exact(set) = &mut self.memory {
            set.track_changes(stateful);
        }
        self
    }

    /// Forget every key when the window has ended.
    fn roll_window(&mut self) -> anyhow::Result<()> {
        let ended = match self.window {
            None => false,
            Some(Window::Time(d)) => self.machine_clock.since(self.window_started) >= d,
            Some(Window::Count(n)) => self.seen_in_window >= n,
        };
        if ended {
            let removed = self.changed.as_mut().map(|c| &mut c.removed);
            match (&mut self.memory, removed) {
                (Memory::Exact(set), Some(r)) => {
                    set.each(|k, _| r.push(k.clone()))?;
                    set.clear()?;
                }
                (Memory::Cache(c), Some(r)) => r.extend(
                    std::mem::replace(c, lru::LruCache::new(c.cap()))
                        .into_iter()
                        .map(|(k, _)| k),
                ),
                (Memory::Exact(set), None) => set.clear()?,
                (Memory::Cache(c), None) => c.clear(),
            }
            self.window_started = self.machine_clock.now();
            self.seen_in_window = 0;
        }
        Ok(())
    }

    /// Remember `key`; `true` when it is new. Fails past the memory limit with nowhere to
    /// spill, or when spilled keys cannot be read or written.
    fn first_time(&mut self, key: Values) -> anyhow::Result<bool> {
        self.seq += 1;
        let (at, changed) = (self.seq, self.changed.as_mut());
        Ok(match (&mut self.memory, changed) {
            (Memory::Exact(set), _) => set.insert_absent(key, ())?,
            (Memory::Cache(cache), c) => {
                if let Some(seen) = cache.get_mut(&key) {
                    seen.at = at;
                    if let (Some(c), false) = (c, seen.dirty) {
                        seen.dirty = true;
                        c.dirty.push(key);
                    }
                    return Ok(false);
                }
                let dirty = c.is_some();
                let evicted = cache.push(key.clone(), Seen { at, dirty });
                if let Some(c) = c {
                    c.dirty.push(key);
                    c.removed.extend(evicted.map(|(k, _)| k));
                }
                true
            }
        })
    }
}

impl Bolt for Dedupe {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.keys = super::input_positions(ctx, &self.key_names)?;
        self.machine_clock = ctx.clock.clone();
        self.window_started = self.machine_clock.now();
        if let Memory::Exact(set) = &mut self.memory {
            set.bound(Box::new(KeyBudget::for_task(ctx, "dedupe")), spill_to(ctx));
        }
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            return Ok(());
        }
        self.roll_window()?;
        self.seen_in_window += 1;
        let key: Values = if self.keys.is_empty() {
            input.values.clone()
        } else {
            self.keys
                .iter()
                .map(|&i| input.values.get(i).cloned().unwrap_or(Value::Null))
                .collect()
        };
        if self.first_time(key)? {
            out.send(streams::DEFAULT, &[input], input.values.clone());
        }
        Ok(())
    }
}

impl crate::components::CheckpointParticipant for Dedupe {
    fn state(&mut self) -> Option<&mut dyn BoltState> {
        match self.changed {
            Some(_) => Some(self),
            None => None,
        }
    }
}

/// The key of the entry of the window's progress.
const WINDOW: &str = "window";

fn key_value(k: &Values) -> Value {
    Value::List(Box::new(k.to_vec()))
}

impl BoltState for Dedupe {
    /// Keys go to `sink` as they are listed (exact keys past the memory limit from the spill
    /// file), never all collected first; the window's progress last.
    fn changes_into(&mut self, all: bool, sink: &mut super::ChangeSink<'_>) -> anyhow::Result<()> {
        let changed = std::mem::take(self.changed.get_or_insert_with(Changed::default));
        if !all {
            for k in &changed.removed {
                sink(&key_value(k), None)?;
            }
        }
        match (&mut self.memory, all) {
            (Memory::Exact(set), _) => {
                set.track_changes_if_untracked();
                let seen = Value::Bool(true);
                set.changes(all, |k, _| sink(&key_value(k), Some(&seen)))?;
            }
            (Memory::Cache(c), true) => {
                for (k, s) in c.iter_mut() {
                    s.dirty = false;
                    sink(&key_value(k), Some(&Value::Int(s.at as i64)))?;
                }
            }
            (Memory::Cache(c), false) => {
                for k in changed.dirty {
                    if let Some(s) = c.peek_mut(&k) {
                        s.dirty = false;
                        sink(&key_value(&k), Some(&Value::Int(s.at as i64)))?;
                    }
                }
            }
        }
        let progress = [("seen", self.seen_in_window), ("seq", self.seq)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), Value::Int(v as i64)))
            .collect();
        sink(&Value::str(WINDOW), Some(&Value::Map(Box::new(progress))))
    }

    fn restore(&mut self, entries: Vec<(Value, Value)>) -> anyhow::Result<()> {
        self.restore_from(&mut entries.into_iter().map(Ok))
    }

    /// Exact, each key is restored as it comes (past the memory limit, to the spill file);
    /// a cache's keys (as many as it holds) are put back least recently seen first.
    fn restore_from(&mut self, entries: &mut super::Entries<'_>) -> anyhow::Result<()> {
        self.changed = Some(Changed::default());
        let mut cached: Vec<(Values, u64)> = Vec::new();
        match &mut self.memory {
            Memory::Exact(set) => {
                set.clear()?;
                set.track_changes_if_untracked();
            }
            Memory::Cache(c) => c.clear(),
        }
        for entry in entries {
            let (key, value) = entry?;
            let Some((k, at)) = self.restore_entry(&key, &value).map_err(|e| {
                anyhow::anyhow!(
                    "dedupe: cannot restore the saved entry {}: {e}",
                    key.to_json()
                )
            })?
            else {
                continue;
            };
            match &mut self.memory {
                Memory::Exact(set) => set.restore(k, (), |_, _| {})?,
                Memory::Cache(_) => cached.push((k, at)),
            }
        }
        // The least recently seen first, so a cache forgets them first again.
        cached.sort_by_key(|(_, at)| *at);
        if let Memory::Cache(c) = &mut self.memory {
            for (k, at) in cached {
                c.push(k, Seen { at, dirty: false });
            }
        }
        self.window_started = self.machine_clock.now();
        Ok(())
    }
}

impl Dedupe {
    /// A saved entry: the window's progress (taken here), or a key and when it was last seen.
    fn restore_entry(
        &mut self,
        key: &Value,
        value: &Value,
    ) -> Result<Option<(Values, u64)>, String> {
        match (key, value) {
            (Value::Str(s), Value::Map(m)) if s == WINDOW => {
                let int = |n: &str| match m.get(n) {
                    Some(Value::Int(i)) if *i >= 0 => Ok(*i as u64),
                    _ => Err(format!("the window has no count `{n}`")),
                };
                (self.seen_in_window, self.seq) = (int("seen")?, int("seq")?);
                Ok(None)
            }
            (Value::List(k), Value::Bool(true)) => Ok(Some((k.iter().cloned().collect(), 0))),
            (Value::List(k), Value::Int(at)) if *at >= 0 => {
                Ok(Some((k.iter().cloned().collect(), *at as u64)))
            }
            _ => Err("a key is [key values] → true, or when it was last seen".into()),
        }
    }
}

/// The `dedupe` built-in.
pub(crate) struct DedupeType;

impl b::Builtin for DedupeType {
    fn name(&self) -> &'static str {
        "dedupe"
    }
    fn summary(&self) -> &'static str {
        "bolt: the first tuple of each `key` passes (exact, per `window`, or a `cache`)"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        use b::ArgShape as A;
        vec![
            b::arg("key", A::Fields),
            b::arg("window", A::Duration),
            b::arg("cache", A::WholeCount),
        ]
    }
    fn field_args(&self) -> &'static [&'static str] {
        &["key"]
    }
    fn keeps_state(&self) -> bool {
        true
    }
    fn output_fields(&self, _c: &Component, input: Option<&[String]>) -> b::Fields {
        Some(Some(input?.to_vec()))
    }
    fn field_types(&self, cx: &b::TypeCx) -> Option<Vec<crate::expr::Type>> {
        Some(cx.input?.1.to_vec())
    }
    fn checkpointed_bolt(
        &self,
        c: &Component,
        _base: &std::path::Path,
    ) -> Option<anyhow::Result<Box<dyn crate::components::CheckpointParticipant>>> {
        let built = Dedupe::new(&c.args).map(|d| d.with_state(c.stateful));
        Some(built.map(|d| Box::new(d) as Box<dyn crate::components::CheckpointParticipant>))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::state_check::{cuts, resumed, straight, tuple};
    use proptest::prelude::*;

    /// A stateful dedupe on the first field, exact or with a cache, with a count window or not.
    fn dedupe(cache: Option<u64>, window: Option<u64>) -> Dedupe {
        let mut args = serde_json::json!({});
        if let Some(n) = cache {
            args["cache"] = n.into();
        }
        if let Some(n) = window {
            args["window"] = n.into();
        }
        let mut d = Dedupe::new(args.as_object().expect("an object"))
            .expect("valid")
            .with_state(true);
        d.keys = vec![0];
        d
    }

    fn inputs() -> impl Strategy<Value = Vec<Tuple>> {
        let one = (0u8..8, 0i64..3).prop_map(|(k, n)| {
            tuple(smallvec::smallvec![
                Value::str(&format!("k{k}")),
                Value::Int(n)
            ])
        });
        proptest::collection::vec(one, 0..80)
    }

    proptest! {
        /// Checkpointed at random cuts and resumed, a dedupe passes what one run straight
        /// through passes: exact, with a cache that forgets, per count window.
        #[test]
        fn resumed_dedupes_equal_uninterrupted(
            input in inputs(),
            cut in cuts(80),
            cache in proptest::option::of(1u64..5),
            window in proptest::option::of(1u64..12),
        ) {
            let make = || dedupe(cache, window);
            prop_assert_eq!(resumed(&make, &input, &cut), straight(&make, &input));
        }
    }

    #[test]
    fn forgotten_keys_are_removed_from_the_checkpoint() {
        let mut d = dedupe(Some(2), None);
        let mut out = crate::components::state_check::Rows::default();
        let mut store = crate::components::state_check::Folded::new();
        for k in ["a", "b", "c"] {
            d.execute(&tuple(smallvec::smallvec![Value::str(k)]), &mut out)
                .expect("execute");
            crate::components::state_check::checkpoint(&mut d, k == "a", &mut store);
        }
        let mut keys: Vec<String> = store.keys().map(|k| k.to_json().to_string()).collect();
        keys.sort();
        assert_eq!(keys, [r#""window""#, r#"["b"]"#, r#"["c"]"#]);
    }

    /// A `window` of time forgets its keys once the task's clock has passed it, and not
    /// before (a clock moved by hand: no sleeping).
    #[test]
    fn a_time_window_forgets_its_keys_when_the_clock_passes_it() {
        let args = serde_json::json!({"window": "10s"});
        let mut d = Dedupe::new(args.as_object().expect("an object")).expect("valid");
        d.keys = vec![0];
        d.machine_clock = crate::clock::Clock::manual();
        d.window_started = d.machine_clock.now();
        let mut out = crate::components::state_check::Rows::default();
        let mut send = |d: &mut Dedupe, k: &str| {
            d.execute(&tuple(smallvec::smallvec![Value::str(k)]), &mut out)
                .expect("execute");
        };
        send(&mut d, "a");
        send(&mut d, "a");
        d.machine_clock.advance(Duration::from_millis(9_999));
        send(&mut d, "a");
        send(&mut d, "b");
        d.machine_clock.advance(Duration::from_millis(1));
        send(&mut d, "a");
        send(&mut d, "b");
        let passed: Vec<Value> = out.0.iter().map(|(_, v)| v[0].clone()).collect();
        assert_eq!(passed, ["a", "b", "a", "b"].map(Value::str));
    }

    #[test]
    fn restore_rejects_entries_it_cannot_read() {
        let e = dedupe(None, None)
            .restore(vec![(Value::str("a"), Value::Bool(true))])
            .expect_err("a key is a list");
        assert_eq!(
            e.to_string(),
            "dedupe: cannot restore the saved entry \"a\": a key is [key values] → true, or when it was last seen"
        );
    }
}
