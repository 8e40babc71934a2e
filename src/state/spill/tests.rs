//! The spill map against a `BTreeMap`: random updates, checkpoints and restores under limits
//! of a few entries, so entries go to disk and come back all the time.

use super::*;
use crate::tuple::Value;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// A limit of its own (not the process's): `limit` bytes.
struct Tiny {
    held: u64,
    limit: u64,
}

impl Budget for Tiny {
    fn note(&mut self, bytes: u64) -> bool {
        self.held += bytes;
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
        anyhow::anyhow!("past the tiny limit at {} bytes", self.held)
    }
    fn limit(&self) -> Option<u64> {
        Some(self.limit)
    }
}

/// String keys, integer values: each entry counts 10 bytes.
struct Strings;

impl Layout<String, i64> for Strings {
    fn order(&self, key: &String, out: &mut Vec<u8>) {
        order::str_order(key, out)
    }
    fn encode(&self, key: &String, value: &i64, out: &mut Vec<u8>) {
        codec::encode(&Value::str(key), out);
        codec::encode(&Value::Int(*value), out);
    }
    fn decode(&self, record: &[u8]) -> anyhow::Result<(String, i64)> {
        let (k, used) = codec::decode(record)?;
        match (k, codec::from_bytes(&record[used..])?) {
            (Value::Str(k), Value::Int(v)) => Ok((k.to_string(), v)),
            other => anyhow::bail!("not an entry: {other:?}"),
        }
    }
    fn bytes(&self, _: &String) -> u64 {
        10
    }
}

use crate::state::codec;

fn map(dir: &std::path::Path, entries: u64, to: bool) -> SpillMap<String, i64> {
    let mut m = SpillMap::new(Box::new(Strings));
    let to = to.then(|| SpillTo {
        path: dir.join("spill").join("t-0.redb"),
        cache: 1 << 20,
    });
    m.bound(
        Box::new(Tiny {
            held: 0,
            limit: entries * 10,
        }),
        to,
    );
    m.track_changes(true);
    m.set_min_batch(0);
    m
}

#[derive(Debug, Clone)]
enum Op {
    Add(u8, i64),
    Checkpoint(bool),
    Emit,
    Restore,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        12 => (0u8..40, -3i64..4).prop_map(|(k, d)| Op::Add(k, d)),
        2 => any::<bool>().prop_map(Op::Checkpoint),
        1 => Just(Op::Emit),
        1 => Just(Op::Restore),
    ];
    proptest::collection::vec(op, 0..200)
}

fn key(k: u8) -> String {
    format!("k{k:02}")
}

/// Every entry in key order, as the map's sorted iteration gives it.
fn sorted(m: &mut SpillMap<String, i64>) -> Vec<(String, i64)> {
    if !m.spilled() {
        let mut all: Vec<(String, i64)> = m.hot().map(|(k, v)| (k.clone(), *v)).collect();
        all.sort();
        return all;
    }
    let rows = m.sorted().expect("reads").expect("spilled");
    rows.map(|r| r.map(|(_, k, v)| (k, v)))
        .collect::<anyhow::Result<_>>()
        .expect("reads")
}

proptest! {
    /// Under a limit of 1 to 6 entries, the map holds what a `BTreeMap` holds, lists every
    /// key once in key order, and its checkpoints (changes folded into a saved copy) hold it
    /// too; a restore from the last checkpoint gives back that checkpoint.
    #[test]
    fn a_spilling_map_holds_what_a_btree_map_holds(ops in ops(), entries in 1u64..7) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut m = map(dir.path(), entries, true);
        let mut want: BTreeMap<String, i64> = BTreeMap::new();
        let mut saved: BTreeMap<String, i64> = BTreeMap::new();
        let mut first = true;
        for op in ops {
            match op {
                Op::Add(k, d) => {
                    let got = m.update(key(k).as_str(), || key(k), || 0, |v| { *v += d; *v })
                        .expect("updates");
                    let w = want.entry(key(k)).or_insert(0);
                    *w += d;
                    prop_assert_eq!(got, *w);
                }
                Op::Checkpoint(all) => {
                    let all = all || first;
                    first = false;
                    let mut listed = Vec::new();
                    m.changes(all, |k, v| {
                        listed.push((k.clone(), *v));
                        Ok(())
                    })
                    .expect("changes");
                    let mut keys: Vec<&String> = listed.iter().map(|(k, _)| k).collect();
                    keys.sort();
                    keys.dedup();
                    prop_assert_eq!(keys.len(), listed.len(), "a key listed twice");
                    saved.extend(listed);
                    prop_assert_eq!(&saved, &want);
                }
                Op::Emit => {
                    let all = sorted(&mut m);
                    let reference: Vec<(String, i64)> = want.clone().into_iter().collect();
                    prop_assert_eq!(all, reference);
                }
                Op::Restore => {
                    m.clear().expect("clears");
                    for (k, v) in &saved {
                        m.restore(k.clone(), *v, |a, b| *a += b).expect("restores");
                    }
                    want = saved.clone();
                }
            }
        }
        let reference: Vec<(String, i64)> = want.into_iter().collect();
        prop_assert_eq!(sorted(&mut m), reference);
    }
}

/// Past half the limit, a full table spills half its entries rather than double: the
/// transient of growing (old and new table at once) is not in the keys' estimate.
#[test]
fn a_full_table_makes_room_instead_of_growing_past_half_the_limit() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut m = map(dir.path(), 1_000_000, true);
    m.bound(
        Box::new(Tiny {
            held: 0,
            limit: 100_000,
        }),
        Some(SpillTo {
            path: dir.path().join("t.redb"),
            cache: 1 << 20,
        }),
    );
    for k in 0..5000u32 {
        let key = format!("k{k}");
        m.update(key.as_str(), || key.clone(), || 0, |v| *v += 1)
            .expect("updates");
    }
    let bucket = std::mem::size_of::<(String, Slot<i64>)>() + 1;
    assert!(
        m.hot.capacity() * 8 / 7 * bucket <= 50_000,
        "{}",
        m.hot.capacity()
    );
    assert_eq!(sorted(&mut m).len(), 5000);
}

#[test]
fn without_a_place_to_spill_the_limit_is_the_budgets_error() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut m = map(dir.path(), 2, false);
    for k in 0..2 {
        m.update(key(k).as_str(), || key(k), || 0, |v| *v += 1)
            .expect("under the limit");
    }
    let err = m
        .update("k09", || "k09".into(), || 0, |v| *v += 1)
        .expect_err("past the limit");
    assert_eq!(err.to_string(), "past the tiny limit at 30 bytes");
    assert!(!dir.path().join("spill").exists());
}

#[test]
fn the_file_is_made_when_needed_and_removed_with_the_map() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("spill").join("t-0.redb");
    let mut m = map(dir.path(), 4, true);
    assert!(!file.exists(), "nothing spilled yet");
    for k in 0..40 {
        m.update(key(k).as_str(), || key(k), || 0, |v| *v += 1)
            .expect("updates");
    }
    assert!(file.exists());
    let (hot, cold, _) = m.sizes();
    assert!(hot <= 4 && cold >= 36, "{hot} in memory, {cold} on disk");
    assert_eq!(sorted(&mut m).len(), 40);
    drop(m);
    assert!(!file.exists(), "the spill file is removed with its map");
}

/// An eviction of more entries than a write chunk holds writes them all, and the changes a
/// checkpoint lists after it still name every key changed, with its value.
#[test]
fn an_eviction_larger_than_a_chunk_keeps_every_entry_and_change() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut m = map(dir.path(), 60_000, true);
    m.set_min_batch(usize::MAX);
    let n = 50_000u32;
    for k in 0..n {
        let key = format!("k{k:05}");
        m.update(key.as_str(), || key.clone(), || 0, |v| *v += i64::from(k))
            .expect("updates");
    }
    m.set_min_batch(0);
    m.evict_all().expect("evicts");
    assert_eq!(m.evicted, u64::from(n));
    let mut changed = BTreeMap::new();
    m.changes(false, |k, v| {
        changed.insert(k.clone(), *v);
        Ok(())
    })
    .expect("lists changes");
    assert_eq!(changed.len(), n as usize);
    assert!((0..n).all(|k| changed.get(&format!("k{k:05}")) == Some(&i64::from(k))));
    let all = sorted(&mut m);
    assert_eq!(all.len(), n as usize);
    assert_eq!(all.first(), Some(&("k00000".to_string(), 0)));
}

/// `try_each` lists entries in memory and spilled ones alike, and the first error of its
/// callback ends the listing there and comes back (what `changes` relies on to stop a
/// checkpoint whose writing failed).
#[test]
fn try_each_lists_memory_and_spill_and_stops_at_the_first_error() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut m = map(dir.path(), 4, true);
    for k in 0..20u8 {
        m.update(key(k).as_str(), || key(k), || 0, |v| *v += 1)
            .expect("updates");
    }
    assert!(m.spilled(), "20 entries past a limit of 4 spill");
    let mut seen = Vec::new();
    m.try_each(|k, _| {
        seen.push(k.clone());
        Ok(())
    })
    .expect("lists");
    seen.sort();
    assert_eq!(seen, (0..20u8).map(key).collect::<Vec<_>>());
    let mut calls = 0;
    let err = m
        .try_each(|_, _| {
            calls += 1;
            match calls {
                7 => Err(anyhow::anyhow!("the sink is full")),
                _ => Ok(()),
            }
        })
        .expect_err("the callback's error");
    assert_eq!(
        (calls, err.to_string()),
        (7, "the sink is full".to_string())
    );
}

/// The record of changes stays within the limit: memory lists only the changed keys it holds,
/// the file the rest, and a checkpoint still lists every change once, with its value, and
/// nothing else — also for keys read back from the file and changed again.
#[test]
fn the_record_of_changes_is_bounded_by_the_keys_in_memory() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut m = map(dir.path(), 100, true);
    m.set_min_batch(10);
    let name = |k: u32| format!("k{k:05}");
    let mut listed_peak = 0;
    for k in 0..20_000u32 {
        let key = name(k);
        m.update(key.as_str(), || key.clone(), || 0, |v| *v += 1)
            .expect("updates");
        let listed = m.dirty.as_ref().map_or(0, Vec::len);
        assert!(
            listed <= m.hot.len(),
            "{listed} listed, {} held",
            m.hot.len()
        );
        listed_peak = listed_peak.max(listed);
    }
    assert!(listed_peak <= 110, "memory listed {listed_peak} changes");
    let changes = |m: &mut SpillMap<String, i64>| {
        let mut got = BTreeMap::new();
        m.changes(false, |k, v| {
            assert!(got.insert(k.clone(), *v).is_none(), "{k} listed twice");
            Ok(())
        })
        .expect("lists changes");
        got
    };
    let first = changes(&mut m);
    assert_eq!(first.len(), 20_000);
    assert!(first.values().all(|&v| v == 1));
    // Every tenth key again: most come back from the file, some are evicted again.
    for k in (0..20_000u32).step_by(10) {
        let key = name(k);
        m.update(key.as_str(), || key.clone(), || 0, |v| *v += 1)
            .expect("updates");
    }
    let second = changes(&mut m);
    let want: BTreeMap<String, i64> = (0..20_000u32).step_by(10).map(|k| (name(k), 2)).collect();
    assert_eq!(second, want);
    assert!(changes(&mut m).is_empty(), "nothing changed since");
    let all = sorted(&mut m);
    assert_eq!(all.len(), 20_000);
}
