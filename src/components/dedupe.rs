//! The `dedupe` bolt: the first tuple of each key passes, later ones are acked and dropped.
//! Exact (every key remembered), per window (`window: 1m` or `window: 10000` tuples: keys are
//! forgotten when a tumbling window of processing time or of tuples ends), or bounded
//! (`cache: N`: at most N keys, the least recently seen forgotten first — a key seen again is
//! fresh again — so memory stays bounded on an unbounded stream).

use super::{Bolt, BoltCollector, TaskContext};
use crate::topology::plan::streams;
use crate::tuple::{Tuple, Value, Values};
use std::collections::HashSet;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

/// When remembered keys are forgotten.
enum Memory {
    Exact(HashSet<Values>),
    Cache(lru::LruCache<Values, ()>),
}

/// A tumbling window after which every key is forgotten.
#[derive(Clone, Copy)]
enum Window {
    Time(Duration),
    Count(u64),
}

pub struct Dedupe {
    key_names: Vec<String>,
    /// Positions of the key fields (empty: the whole tuple).
    keys: Vec<usize>,
    memory: Memory,
    window: Option<Window>,
    window_started: Instant,
    seen_in_window: u64,
}

impl Dedupe {
    pub fn new(args: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Dedupe> {
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
            None => Memory::Exact(HashSet::new()),
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
            seen_in_window: 0,
        })
    }

    /// Forget every key when the window has ended.
    fn roll_window(&mut self) {
        let ended = match self.window {
            None => false,
            Some(Window::Time(d)) => self.window_started.elapsed() >= d,
            Some(Window::Count(n)) => self.seen_in_window >= n,
        };
        if ended {
            match &mut self.memory {
                Memory::Exact(set) => set.clear(),
                Memory::Cache(c) => c.clear(),
            }
            self.window_started = Instant::now();
            self.seen_in_window = 0;
        }
    }

    /// Remember `key`; `true` when it is new.
    fn first_time(&mut self, key: Values) -> bool {
        match &mut self.memory {
            Memory::Exact(set) => set.insert(key),
            Memory::Cache(c) => c.put(key, ()).is_none(),
        }
    }
}

impl Bolt for Dedupe {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.keys = super::input_positions(ctx, &self.key_names)?;
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            return Ok(());
        }
        self.roll_window();
        self.seen_in_window += 1;
        let key: Values = if self.keys.is_empty() {
            input.values.clone()
        } else {
            self.keys
                .iter()
                .map(|&i| input.values.get(i).cloned().unwrap_or(Value::Null))
                .collect()
        };
        if self.first_time(key) {
            out.send(streams::DEFAULT, &[input], input.values.clone());
        }
        Ok(())
    }
}
