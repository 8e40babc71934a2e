//! Keyed state larger than memory: a map whose entries stay in memory (hot) while the
//! process's keyed state is under `topology.state.memory.limit`, and past it are written to a
//! scratch file (cold) and read back when their key comes again. `count` and `aggregate` keep
//! their keys in one.
//!
//! - **Eviction.** A key that takes the process past the limit makes its map write entries to
//!   its file, in one transaction, until the process is back under three quarters of the limit.
//!   A key used since the last eviction is kept once (its `touched` mark is cleared instead), so
//!   frequent keys tend to stay in memory. Without a file to spill to (no state dir), the limit
//!   ends the run with the budget's error, as before spilling existed.
//! - **Faults.** A key not in memory is looked up in the file (once anything was spilled) and
//!   brought back into memory; the file's copy stays until the key is evicted again, which
//!   overwrites it, so the file never holds a newer value than memory.
//! - **Iteration** for end-of-input output: every hot entry is written out, then the file is
//!   read in key order (order bytes sort as the component's output does), each key once.
//! - **Checkpoints** are unchanged: the keys changed since the last one are listed, and those
//!   evicted before it are read back from the file; the first checkpoint of a run lists every
//!   key, memory and file. The record of changes stays within the limit too: memory lists only
//!   changed keys it holds (an eviction drops the others from the list), and the file lists
//!   those it was given, each row marked with the checkpoint interval it changed in, so a key
//!   read back knows whether it is still a change.
//!
//! Without any spill (everything fits), a lookup is one hash-map probe as before: the file is
//! consulted only once something was written to it.

mod cold;
pub(crate) mod merge;
pub(crate) mod order;

use anyhow::Context;
use cold::{Batch, Cold, Row};
use std::borrow::Borrow;
use std::hash::Hash;
use std::path::PathBuf;

/// Past the limit, a map evicts once it holds this many entries.
const MIN_BATCH: usize = 256;

/// An entry read in key order: its order bytes, key and value.
type Entry<K, V> = (Vec<u8>, K, V);

type Hot<K, V> = std::collections::HashMap<K, Slot<V>, foldhash::fast::FixedState>;

/// The bound a map's keys count against (the process's keyed state, see
/// `components::memory::KeyBudget`).
pub(crate) trait Budget: Send {
    /// A new key of about `bytes` is held; `true`: the process is now past its limit.
    fn note(&mut self, bytes: u64) -> bool;
    /// A key of about `bytes` (as noted) is no longer held in memory.
    fn forget(&mut self, bytes: u64);
    /// No key is held in memory any more.
    fn clear(&mut self);
    /// Eviction may stop: the process is back under three quarters of its limit.
    fn relieved(&self) -> bool;
    /// The error that ends the run when the limit is passed with nowhere to spill.
    fn refusal(&self) -> anyhow::Error;
    /// The limit in bytes (`None`: no limit).
    fn limit(&self) -> Option<u64>;
    /// A held key's value went from about `from` to about `to` bytes (a join's key holding
    /// one more tuple); `true`: the process is now past its limit.
    fn resize(&mut self, from: u64, to: u64) -> bool {
        self.forget(from);
        self.note(to)
    }
}

/// No bound (outside a run, or before `prepare`).
struct Unbounded;

impl Budget for Unbounded {
    fn note(&mut self, _: u64) -> bool {
        false
    }
    fn forget(&mut self, _: u64) {}
    fn clear(&mut self) {}
    fn relieved(&self) -> bool {
        true
    }
    fn refusal(&self) -> anyhow::Error {
        anyhow::anyhow!("keyed state passed its limit")
    }
    fn limit(&self) -> Option<u64> {
        None
    }
}

/// How a map's entries are written to its file and how big they are in memory.
pub(crate) trait Layout<K, V>: Send {
    /// The key's order bytes (see `order.rs`): equal exactly when the keys are.
    fn order(&self, key: &K, out: &mut Vec<u8>);
    /// The entry as a record of the file.
    fn encode(&self, key: &K, value: &V, out: &mut Vec<u8>);
    fn decode(&self, record: &[u8]) -> anyhow::Result<(K, V)>;
    /// About how many bytes the entry of `key` takes in memory, for the budget (the same
    /// every time for one key), beyond [`Layout::value_bytes`].
    fn bytes(&self, key: &K) -> u64;
    /// Whether values change size as they are updated (then [`Layout::value_bytes`] is
    /// consulted around every update, and should be cheap).
    fn grows(&self) -> bool {
        false
    }
    /// About how many bytes `value` takes in memory beyond [`Layout::bytes`] (only asked
    /// when the layout [`Layout::grows`]).
    fn value_bytes(&self, _value: &V) -> u64 {
        0
    }
}

struct Slot<V> {
    v: V,
    /// Changed since the last checkpoint took the changes (and listed in `dirty`).
    dirty: bool,
    /// Used since the last eviction.
    touched: bool,
}

/// Where a map spills, and how much of the file's pages it may cache.
#[derive(Clone, Debug)]
pub(crate) struct SpillTo {
    pub(crate) path: PathBuf,
    pub(crate) cache: usize,
}

impl SpillTo {
    /// Another file beside this one, for another map of the same task.
    pub(crate) fn with_suffix(mut self, suffix: &str) -> SpillTo {
        let stem = self
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.path.set_file_name(format!("{stem}-{suffix}.redb"));
        self
    }
}

pub(crate) struct SpillMap<K, V> {
    hot: Hot<K, V>,
    cold: Option<Box<Cold>>,
    to: Option<SpillTo>,
    layout: Box<dyn Layout<K, V>>,
    budget: Box<dyn Budget>,
    /// Checkpointed: the keys in memory changed since the last checkpoint, each listed once
    /// (those evicted since are listed in the file).
    dirty: Option<Vec<K>>,
    /// The checkpoint interval under way, numbered from 1: a row written changed is marked
    /// with it (unchanged, with 0).
    interval: u64,
    buf: Vec<u8>,
    /// Entries memory must hold before an eviction writes them (see `admit`).
    min_batch: usize,
    /// Whether values change size (see [`Layout::grows`]).
    grows: bool,
    /// Bytes noted to the budget for the entries in memory.
    held: u64,
    /// Evictions so far, and entries they wrote.
    evictions: u64,
    evicted: u64,
}

impl<K: Hash + Eq + Clone, V> SpillMap<K, V> {
    pub(crate) fn new(layout: Box<dyn Layout<K, V>>) -> SpillMap<K, V> {
        SpillMap {
            grows: layout.grows(),
            held: 0,
            hot: Hot::default(),
            cold: None,
            to: None,
            layout,
            budget: Box::new(Unbounded),
            dirty: None,
            interval: 1,
            buf: Vec::new(),
            min_batch: MIN_BATCH,
            evictions: 0,
            evicted: 0,
        }
    }

    /// Count keys against `budget`, spilling to `to` past it (`None`: the budget's error ends
    /// the run instead).
    pub(crate) fn bound(&mut self, budget: Box<dyn Budget>, to: Option<SpillTo>) {
        self.budget = budget;
        self.to = to;
        self.held = 0;
        for (k, s) in self.hot.iter() {
            let bytes = entry_bytes(&*self.layout, self.grows, k, &s.v);
            self.held += bytes;
            self.budget.note(bytes);
        }
    }

    #[cfg(test)]
    /// Evict once memory holds `n` entries past the limit (tests spill after a few).
    pub(crate) fn set_min_batch(&mut self, n: usize) {
        self.min_batch = n;
    }

    /// Keep the record of changes checkpoints take (see [`SpillMap::changes`]).
    pub(crate) fn track_changes(&mut self, on: bool) {
        self.dirty = on.then(Vec::new);
    }

    /// Start keeping the record of changes, unless it is kept already.
    pub(crate) fn track_changes_if_untracked(&mut self) {
        if self.dirty.is_none() {
            self.dirty = Some(Vec::new());
        }
    }

    /// Whether anything was ever written to the file (then iteration goes through it).
    pub(crate) fn spilled(&self) -> bool {
        self.cold.is_some()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.hot.is_empty() && self.cold.as_ref().is_none_or(|c| c.rows() == 0)
    }

    #[cfg(test)]
    /// Entries in memory, and in the file (some of those may be in memory too).
    pub(crate) fn sizes(&self) -> (usize, u64, u64) {
        let cold = self.cold.as_ref();
        (
            self.hot.len(),
            cold.map_or(0, |c| c.rows()),
            cold.map_or(0, |c| c.file_bytes()),
        )
    }

    /// The value of `key` if it is in memory (a key just updated is).
    pub(crate) fn get_hot<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.hot.get(key).map(|s| &s.v)
    }

    /// `key`'s order bytes.
    pub(crate) fn order_of(&self, key: &K, out: &mut Vec<u8>) {
        self.layout.order(key, out)
    }

    /// The entries in memory (all of them while nothing spilled).
    pub(crate) fn hot(&self) -> impl Iterator<Item = (&K, &V)> {
        self.hot.iter().map(|(k, s)| (k, &s.v))
    }

    /// Apply `f` to the value of `key` (made by `new` when the key is new, read back from the
    /// file when it was evicted) and mark it changed; `owned` makes the key to keep.
    #[inline]
    pub(crate) fn update<Q, R>(
        &mut self,
        key: &Q,
        owned: impl FnOnce() -> K,
        new: impl FnOnce() -> V,
        f: impl FnOnce(&mut V) -> R,
    ) -> anyhow::Result<R>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if let Some(s) = self.hot.get_mut(key) {
            s.touched = true;
            if let (Some(d), false) = (self.dirty.as_mut(), s.dirty) {
                s.dirty = true;
                d.push(owned());
            }
            if !self.grows {
                return Ok(f(&mut s.v));
            }
            let before = self.layout.value_bytes(&s.v);
            let r = f(&mut s.v);
            let after = self.layout.value_bytes(&s.v);
            self.resized(before, after)?;
            return Ok(r);
        }
        let k = owned();
        let mut v = match self.fault(&k)? {
            Some((v, _)) => v,
            None => new(),
        };
        // Changed before it is admitted: the budget notes its size after the change.
        let r = f(&mut v);
        self.admit_changed(k, v, true)?;
        Ok(r)
    }

    /// A value in memory went from `before` to `after` bytes: past the limit, memory makes
    /// room (the entry itself may go), or without a file the budget's error ends the run.
    fn resized(&mut self, before: u64, after: u64) -> anyhow::Result<()> {
        if before == after {
            return Ok(());
        }
        self.held = (self.held + after).saturating_sub(before);
        if !self.budget.resize(before, after) {
            return Ok(());
        }
        if self.to.is_none() {
            return Err(self.budget.refusal());
        }
        self.evict_if_worth()
    }

    /// Evict when memory holds enough to be worth a transaction: [`MIN_BATCH`] entries, or
    /// an eighth of the limit (a few keys holding many tuples each).
    fn evict_if_worth(&mut self) -> anyhow::Result<()> {
        let big = self.budget.limit().is_some_and(|l| self.held >= l / 8);
        if self.hot.len() >= self.min_batch || big {
            self.evict()?;
        }
        Ok(())
    }

    /// Hold `key` with `value` unless it is held already (then it only counts as used);
    /// whether it was new. Only a new key is a change for the checkpoints.
    pub(crate) fn insert_absent(&mut self, key: K, value: V) -> anyhow::Result<bool> {
        if let Some(s) = self.hot.get_mut(&key) {
            s.touched = true;
            return Ok(false);
        }
        if let Some((held, was_dirty)) = self.fault(&key)? {
            self.admit_changed(key, held, was_dirty)?;
            return Ok(false);
        }
        self.admit_changed(key, value, true)?;
        Ok(true)
    }

    /// The value of `key` read back from the file, if it was evicted, and whether it had
    /// changed since the last checkpoint.
    fn fault(&mut self, k: &K) -> anyhow::Result<Option<(V, bool)>> {
        let Some(cold) = self.cold.as_mut() else {
            return Ok(None);
        };
        self.buf.clear();
        self.layout.order(k, &mut self.buf);
        let Some(record) = cold.get(&self.buf)? else {
            return Ok(None);
        };
        let (_, v) = self.decode(&record)?;
        Ok(Some((v, mark(&record) == self.interval)))
    }

    /// [`SpillMap::admit`] `k`, listed as a change when `changed` and changes are recorded.
    fn admit_changed(&mut self, k: K, v: V, changed: bool) -> anyhow::Result<()> {
        let listed = match &self.dirty {
            Some(_) if changed => Some(k.clone()),
            _ => None,
        };
        self.admit(k, v, listed.is_some())?;
        // Listed once in memory: an eviction while it was admitted keeps only keys held.
        if let (Some(d), Some(k)) = (self.dirty.as_mut(), listed) {
            d.push(k);
        }
        Ok(())
    }

    /// Hold `k` in memory, evicting others first when it takes the process past the limit.
    fn admit(&mut self, k: K, v: V, dirty: bool) -> anyhow::Result<&mut Slot<V>> {
        if self.table_full() {
            // Growing would double the table: a transient of three times its bytes, which the
            // keys' estimate does not see. Past half the limit, memory makes room instead.
            self.open_cold()?;
            let keep = self.hot.len() / 2;
            let mut batch = Batch::default();
            self.take_out(false, keep, &mut batch)?;
            self.take_out(true, keep, &mut batch)?;
            self.write_rest(batch)?;
        }
        let bytes = entry_bytes(&*self.layout, self.grows, &k, &v);
        self.held += bytes;
        if self.budget.note(bytes) {
            if self.to.is_none() {
                return Err(self.budget.refusal());
            }
            // A task holding few keys while others hold the rest would otherwise write a
            // transaction for every new key.
            self.evict_if_worth()?;
        }
        let slot = Slot {
            v,
            dirty,
            touched: true,
        };
        Ok(self.hot.entry(k).or_insert(slot))
    }

    /// Put an entry restored from a checkpoint (unchanged since it); `merge` combines it with
    /// one of an equal key restored before.
    pub(crate) fn restore(
        &mut self,
        k: K,
        v: V,
        merge: impl FnOnce(&mut V, V),
    ) -> anyhow::Result<()> {
        if let Some(s) = self.hot.get_mut(&k) {
            merge(&mut s.v, v);
            return Ok(());
        }
        match self.fault(&k)? {
            Some((mut held, _)) => {
                merge(&mut held, v);
                self.admit(k, held, false)?;
            }
            None => {
                self.admit(k, v, false)?;
            }
        }
        Ok(())
    }

    fn decode(&self, record: &[u8]) -> anyhow::Result<(K, V)> {
        decode(&*self.layout, &self.to, record)
    }

    /// The value of `key`, from memory or read back from the file, without bringing it
    /// into memory.
    pub(crate) fn peek(&mut self, key: &K) -> anyhow::Result<Option<std::borrow::Cow<'_, V>>>
    where
        V: Clone,
    {
        if self.hot.contains_key(key) {
            return Ok(self.hot.get(key).map(|s| std::borrow::Cow::Borrowed(&s.v)));
        }
        let Some(cold) = self.cold.as_mut() else {
            return Ok(None);
        };
        self.buf.clear();
        self.layout.order(key, &mut self.buf);
        let Some(record) = cold.get(&self.buf)? else {
            return Ok(None);
        };
        Ok(Some(std::borrow::Cow::Owned(self.decode(&record)?.1)))
    }

    /// Forget every entry (memory and file) and every change.
    pub(crate) fn clear(&mut self) -> anyhow::Result<()> {
        self.hot.clear();
        self.budget.clear();
        self.held = 0;
        if let Some(c) = self.cold.as_mut() {
            c.clear()?;
        }
        if let Some(d) = self.dirty.as_mut() {
            d.clear();
        }
        self.interval += 1;
        Ok(())
    }

    /// Whether the next new key would grow the table past half the limit (with somewhere to
    /// spill to; without, the budget's error ends the run first or the table grows).
    fn table_full(&self) -> bool {
        let (Some(limit), Some(_)) = (self.budget.limit(), &self.to) else {
            return false;
        };
        let cap = self.hot.capacity();
        let bucket = std::mem::size_of::<(K, Slot<V>)>() as u64 + 1;
        self.hot.len() >= cap && cap > 0 && (cap as u64 * 2 * 8 / 7) * bucket > limit / 2
    }

    /// Write entries to the file until the process is back under its limit: first those not
    /// used since the last eviction, then any.
    fn evict(&mut self) -> anyhow::Result<()> {
        if self.budget.relieved() || self.hot.is_empty() {
            return Ok(());
        }
        self.open_cold()?;
        let mut batch = Batch::default();
        for any in [false, true] {
            self.take_out(any, usize::MAX, &mut batch)?;
            if self.budget.relieved() {
                break;
            }
        }
        self.write_rest(batch)
    }

    /// Every entry in memory written to the file.
    fn evict_all(&mut self) -> anyhow::Result<()> {
        self.open_cold()?;
        let mut batch = Batch::default();
        let SpillMap {
            hot,
            layout,
            budget,
            interval,
            cold,
            held,
            ..
        } = self;
        if let Some(cold) = cold.as_deref_mut() {
            for (k, s) in hot.drain() {
                batch.push(cold, row(&**layout, &k, &s, *interval))?;
            }
        }
        budget.clear();
        *held = 0;
        self.write_rest(batch)
    }

    fn open_cold(&mut self) -> anyhow::Result<()> {
        if self.cold.is_none() {
            let Some(to) = &self.to else {
                return Err(self.budget.refusal());
            };
            self.cold = Some(Box::new(Cold::create(&to.path, to.cache)?));
            tracing::info!(
                "keyed state passed topology.state.memory.limit: spilling to {}",
                to.path.display()
            );
        }
        Ok(())
    }

    /// Take entries out of memory into `batch` until relieved and at most `keep` are left:
    /// untouched ones (touched ones are spared once and lose the mark), or with `any`, every
    /// one.
    fn take_out(&mut self, any: bool, keep: usize, batch: &mut Batch) -> anyhow::Result<()> {
        let SpillMap {
            hot,
            layout,
            budget,
            interval,
            grows,
            held,
            cold,
            ..
        } = self;
        let Some(cold) = cold.as_deref_mut() else {
            return Ok(());
        };
        let mut written = Ok(());
        let mut left = hot.len();
        hot.retain(|k, s| {
            if written.is_err() || (budget.relieved() && left <= keep) {
                return true;
            }
            if s.touched && !any {
                s.touched = false;
                return true;
            }
            written = batch.push(cold, row(&**layout, k, s, *interval));
            let bytes = entry_bytes(&**layout, *grows, k, &s.v);
            *held = held.saturating_sub(bytes);
            budget.forget(bytes);
            left -= 1;
            false
        });
        written
    }

    /// Write what `batch` still holds: one eviction done. The keys it took out of memory
    /// leave memory's list of changes (the file lists those that were changes).
    fn write_rest(&mut self, mut batch: Batch) -> anyhow::Result<()> {
        let Some(cold) = self.cold.as_deref_mut() else {
            return Ok(());
        };
        batch.flush(cold)?;
        self.evictions += 1;
        self.evicted += batch.written;
        if let Some(d) = self.dirty.as_mut() {
            let hot = &self.hot;
            d.retain(|k| hot.contains_key(k));
        }
        Ok(())
    }

    /// Every entry, each once, in key order (by order bytes), as (order bytes, key, value):
    /// `None` while nothing spilled (then [`SpillMap::hot`] holds every entry). Writes what
    /// memory holds to the file first.
    pub(crate) fn sorted(
        &mut self,
    ) -> anyhow::Result<Option<impl Iterator<Item = anyhow::Result<Entry<K, V>>> + '_>> {
        if self.cold.is_none() {
            return Ok(None);
        }
        self.evict_all()?;
        let Some(cold) = self.cold.as_mut() else {
            return Ok(None);
        };
        let (layout, to) = (&self.layout, &self.to);
        let scan = cold.scan()?;
        Ok(Some(scan.map(move |row| {
            let (order, record) = row?;
            let (k, v) = decode(&**layout, to, &record)?;
            Ok((order, k, v))
        })))
    }

    /// Hand `emit` the entries changed since the last call (with `all`, every entry, each
    /// once), and clear the record of changes. The first error of `emit` stops the listing
    /// and is returned.
    pub(crate) fn changes(
        &mut self,
        all: bool,
        mut emit: impl FnMut(&K, &V) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let Some(mut dirty) = self.dirty.take() else {
            return Ok(());
        };
        let result = if all {
            self.all_changes(&mut emit)
        } else {
            self.listed_changes(&dirty, &mut emit)
        };
        dirty.clear();
        self.dirty = Some(dirty);
        result?;
        // Rows marked with the interval just taken are changes no more.
        self.interval += 1;
        match self.cold.as_mut() {
            Some(cold) => cold.clear_changed(),
            None => Ok(()),
        }
    }

    fn all_changes(
        &mut self,
        emit: &mut impl FnMut(&K, &V) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        for s in self.hot.values_mut() {
            s.dirty = false;
        }
        self.try_each(|k, v| emit(k, v))
    }

    /// Hand `f` every entry, each once (those in memory, then those only in the file), in no
    /// particular order.
    pub(crate) fn each(&mut self, mut f: impl FnMut(&K, &V)) -> anyhow::Result<()> {
        self.try_each(|k, v| {
            f(k, v);
            Ok(())
        })
    }

    /// Call `f` on every entry, those in memory and then those spilled; the first error, of
    /// `f` or of reading the spill file, ends the listing and is returned.
    pub(crate) fn try_each(
        &mut self,
        mut f: impl FnMut(&K, &V) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        for (k, s) in self.hot.iter() {
            f(k, &s.v)?;
        }
        let Some(cold) = self.cold.as_mut() else {
            return Ok(());
        };
        for row in cold.scan()? {
            let (k, v) = self.decode(&row?.1)?;
            if !self.hot.contains_key(&k) {
                f(&k, &v)?;
            }
        }
        Ok(())
    }

    fn listed_changes(
        &mut self,
        dirty: &[K],
        emit: &mut impl FnMut(&K, &V) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        for k in dirty {
            if let Some(s) = self.hot.get_mut(k).filter(|s| s.dirty) {
                s.dirty = false;
                emit(k, &s.v)?;
            }
        }
        let Some(cold) = self.cold.as_mut() else {
            return Ok(());
        };
        if cold.changed() == 0 {
            return Ok(());
        }
        // Changes evicted before the checkpoint: the file's copy is the value, unless the key
        // came back into memory (then it was listed above).
        for row in cold.changed_rows()? {
            let (k, v) = decode(&*self.layout, &self.to, &row?.1)?;
            if !self.hot.contains_key(&k) {
                emit(&k, &v)?;
            }
        }
        Ok(())
    }
}

impl<K, V> Drop for SpillMap<K, V> {
    fn drop(&mut self) {
        if let (Some(cold), Some(to)) = (&self.cold, &self.to) {
            tracing::info!(
                "{}: {} entries written in {} evictions, {} keys on disk, {} bytes",
                to.path.display(),
                self.evicted,
                self.evictions,
                cold.rows(),
                cold.file_bytes()
            );
        }
    }
}

/// The bytes an entry is noted for in the budget: its key's, and its value's when values grow.
fn entry_bytes<K, V>(layout: &dyn Layout<K, V>, grows: bool, k: &K, v: &V) -> u64 {
    layout.bytes(k) + if grows { layout.value_bytes(v) } else { 0 }
}

/// Bytes before each record of the file: the checkpoint interval it changed in (0: none).
const MARK: usize = 8;

/// The interval a record is marked with (0 when it is too short to hold one).
fn mark(record: &[u8]) -> u64 {
    record
        .get(..MARK)
        .and_then(|m| m.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// A record of the spill file `to` decoded; a damaged one is an error naming the file.
fn decode<K, V>(
    layout: &dyn Layout<K, V>,
    to: &Option<SpillTo>,
    record: &[u8],
) -> anyhow::Result<(K, V)> {
    let body = record.get(MARK..).context("a record without its mark");
    body.and_then(|b| layout.decode(b)).with_context(|| {
        let file = to.as_ref().map(|t| t.path.display().to_string());
        format!(
            "the spill file {} holds a damaged record",
            file.unwrap_or_default()
        )
    })
}

/// The file's row of an entry leaving memory, a changed one marked with `interval`.
fn row<K, V>(layout: &dyn Layout<K, V>, k: &K, s: &Slot<V>, interval: u64) -> Row {
    let mut order = Vec::new();
    layout.order(k, &mut order);
    let mark = if s.dirty { interval } else { 0 };
    let mut record = mark.to_le_bytes().to_vec();
    layout.encode(k, &s.v, &mut record);
    (order, record, s.dirty)
}

#[cfg(test)]
mod tests;
