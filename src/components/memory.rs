//! The memory bound on keyed state (`topology.state.memory.limit`): each task of a keyed
//! built-in keeps a running estimate of the bytes its keys hold and adds it to one total for
//! the process; a key that takes the total past the limit ends the run with an error naming the
//! component, the task and its key count, before the process runs out of memory.

use super::{FatalError, TaskContext};
use crate::tuple::Value;
use std::sync::atomic::{AtomicU64, Ordering};

/// The config key: bytes of keyed state the process may hold (null: half of physical memory;
/// 0: no limit).
const LIMIT_KEY: &str = "topology.state.memory.limit";

/// Bytes of keyed state estimated for every task of this process.
static TOTAL: AtomicU64 = AtomicU64::new(0);

/// Bookkeeping per hash-map entry beyond key and value: control byte, load-factor slack.
const ENTRY_OVERHEAD: u64 = 16;

/// One task's share of the bound.
#[derive(Debug, Default)]
pub(crate) struct KeyBudget {
    /// `None`: unbounded (no limit, or outside a run).
    limit: Option<u64>,
    who: String,
    keys: u64,
    bytes: u64,
}

impl KeyBudget {
    /// The budget of the task `ctx` describes, with the limit its config sets.
    pub(crate) fn for_task(ctx: &TaskContext, kind: &str) -> KeyBudget {
        let limit = match ctx.config.get(LIMIT_KEY) {
            Some(serde_json::Value::Number(n)) => n.as_u64().filter(|&b| b > 0),
            _ => default_limit(),
        };
        KeyBudget {
            limit,
            who: format!("{kind} (task {})", ctx.task_id),
            keys: 0,
            bytes: 0,
        }
    }

    /// A budget of `limit` bytes for tests (spilling forced by a tiny one).
    #[cfg(test)]
    pub(crate) fn with_limit(limit: u64, who: &str) -> KeyBudget {
        KeyBudget {
            limit: Some(limit),
            who: who.into(),
            keys: 0,
            bytes: 0,
        }
    }

    /// Another share of the same limit for the same task, holding nothing yet (a window's
    /// next pane).
    pub(crate) fn fresh(&self) -> KeyBudget {
        KeyBudget {
            limit: self.limit,
            who: self.who.clone(),
            keys: 0,
            bytes: 0,
        }
    }

    #[cfg(test)]
    /// A new key of about `bytes` bytes (key and value, in memory) is held: refused when the
    /// process's keyed state would pass the limit.
    fn add(&mut self, bytes: u64) -> Result<(), FatalError> {
        match self.note_key(bytes) {
            true => Err(self.refused()),
            false => Ok(()),
        }
    }

    /// Note a new key of about `bytes`; whether the process's keyed state is now past the
    /// limit.
    fn note_key(&mut self, bytes: u64) -> bool {
        let bytes = bytes + ENTRY_OVERHEAD;
        self.keys += 1;
        self.bytes += bytes;
        let total = TOTAL.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.limit.is_some_and(|limit| total > limit)
    }

    fn refused(&self) -> FatalError {
        let limit = self.limit.unwrap_or(0);
        let total = TOTAL.load(Ordering::Relaxed);
        FatalError(format!(
            "{}: keyed state passed {LIMIT_KEY} ({limit} bytes) at {} keys in this task \
             (about {total} bytes of keyed state in this process); raise the limit, spread the \
             keys over more workers, key on fewer distinct values, or give the run a state dir \
             (--state-dir) to spill keyed state to disk",
            self.who, self.keys
        ))
    }

    /// A key of about `bytes` bytes (as given to `KeyBudget::add`) is no longer held.
    fn remove(&mut self, bytes: u64) {
        let bytes = (bytes + ENTRY_OVERHEAD).min(self.bytes);
        self.keys = self.keys.saturating_sub(1);
        self.bytes -= bytes;
        TOTAL.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Every key is forgotten (state restored from a checkpoint, a window cleared).
    fn clear(&mut self) {
        TOTAL.fetch_sub(self.bytes, Ordering::Relaxed);
        self.keys = 0;
        self.bytes = 0;
    }
}

impl crate::state::spill::Budget for KeyBudget {
    fn note(&mut self, bytes: u64) -> bool {
        self.note_key(bytes)
    }

    fn forget(&mut self, bytes: u64) {
        self.remove(bytes);
    }

    fn clear(&mut self) {
        KeyBudget::clear(self);
    }

    fn relieved(&self) -> bool {
        self.limit
            .is_none_or(|limit| TOTAL.load(Ordering::Relaxed) <= limit / 4 * 3)
    }

    fn refusal(&self) -> anyhow::Error {
        self.refused().into()
    }

    fn limit(&self) -> Option<u64> {
        self.limit
    }
}

/// Where the keyed state of the task `ctx` describes spills past the limit: a scratch file
/// per task under `spill/` of the state dir when the run has one (`--state-dir`,
/// `topology.state.provider: embedded`); `None` without one (the limit then ends the run).
pub(crate) fn spill_to(ctx: &TaskContext) -> Option<crate::state::spill::SpillTo> {
    let dir = ctx.topology.state_dir().ok()??;
    let limit = match ctx.config.get(LIMIT_KEY) {
        Some(serde_json::Value::Number(n)) => n.as_u64().filter(|&b| b > 0),
        _ => default_limit(),
    };
    // The file's page cache: an eighth of the limit, within 1 MiB..64 MiB.
    let cache = limit.map_or(64 << 20, |l| (l / 8).clamp(1 << 20, 64 << 20)) as usize;
    let name = format!("{}-{}.redb", ctx.component, ctx.task_index);
    Some(crate::state::spill::SpillTo {
        path: crate::state::paths::spill_dir(&dir).join(name),
        cache,
    })
}

impl Drop for KeyBudget {
    fn drop(&mut self) {
        self.clear();
    }
}

/// About how many bytes `v` takes in memory: its 24 bytes, and what it points to.
pub(crate) fn value_bytes(v: &Value) -> u64 {
    const INLINE: u64 = std::mem::size_of::<Value>() as u64;
    match v {
        Value::Str(s) if s.is_heap_allocated() => INLINE + s.len() as u64,
        Value::List(l) => INLINE + 24 + l.iter().map(value_bytes).sum::<u64>(),
        Value::Map(m) => {
            INLINE
                + m.iter()
                    .map(|(k, v)| 48 + k.len() as u64 + value_bytes(v))
                    .sum::<u64>()
        }
        _ => INLINE,
    }
}

/// The limit when the config sets none: half of physical memory, or a quarter of the
/// process's address-space limit (`ulimit -v`) when that is lower (thread stacks, the
/// allocator's reservations and the hash tables' spare room take address space beyond the
/// keys' estimate).
fn default_limit() -> Option<u64> {
    let half = half_of_physical_memory();
    match (half, address_space_limit().map(|a| a / 4)) {
        (Some(h), Some(a)) => Some(h.min(a)),
        (h, a) => h.or(a),
    }
}

/// `RLIMIT_AS`, when set.
fn address_space_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given and nothing else.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } == 0;
    (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

/// Half of this machine's memory (`MemTotal` of /proc/meminfo); `None` where that cannot be read.
fn half_of_physical_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024 / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_refuses_the_key_that_passes_its_limit_and_names_the_task() {
        let mut b = KeyBudget {
            limit: Some(1_000_000_000_000),
            who: "count (task 3)".into(),
            ..KeyBudget::default()
        };
        assert!(b.add(100).is_ok());
        b.limit = Some(0);
        let err = b.add(100).expect_err("past the limit").to_string();
        assert!(
            err.starts_with("count (task 3): keyed state passed"),
            "{err}"
        );
        assert!(err.contains(" at 2 keys in this task"), "{err}");
        b.remove(100);
        assert_eq!((b.keys, b.bytes), (1, 116));
    }

    #[test]
    fn a_long_string_counts_its_bytes() {
        assert_eq!(value_bytes(&Value::str("short")), 24);
        assert_eq!(value_bytes(&Value::str(&"x".repeat(100))), 124);
    }
}
