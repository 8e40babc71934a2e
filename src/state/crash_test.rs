//! Crash safety of the store and the commit record: a child process (this test binary, run on
//! its ignored `child_checkpoints_until_killed` test) prepares, commits and folds checkpoints
//! in a loop while the parent SIGKILLs it at random moments. After each kill the parent
//! restores as a run would (fold to the committed txid, discard the rest) and checks the
//! committed entries against what the child's deterministic sequence wrote up to that txid.

use super::{Commits, Store, TaskKey};
use crate::tuple::Value;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Tells the child test where to write (unset: the child test does nothing).
const DIR_VAR: &str = "STORM_CRASH_TEST_DIR";
const KILLS: usize = 6;

fn tasks() -> [TaskKey; 2] {
    let task = |index| TaskKey {
        component: "count".into(),
        index,
    };
    [task(0), task(1)]
}

/// What checkpoint `txid` changes in task `index`: twenty keys set, and one removed every
/// third checkpoint (a key not set in the same checkpoint).
fn changes(txid: u64, index: u32) -> Vec<(Value, Option<Value>)> {
    let key = |n: u64| Value::str(&format!("k{index}-{}", n % 50));
    let mut out: Vec<_> = (0..20)
        .map(|j| (key(txid * 7 + j), Some(Value::Int((txid * 100 + j) as i64))))
        .collect();
    if txid % 3 == 0 {
        let removed = key(txid * 7 + 20 + txid % 10);
        if !out.iter().any(|(k, _)| *k == removed) {
            out.push((removed, None));
        }
    }
    out
}

/// The oracle: task `index`'s entries after checkpoints 1..=txid, applied one after another.
fn expected(txid: u64, index: u32) -> Vec<(Value, Value)> {
    let mut map = BTreeMap::new();
    for t in 1..=txid {
        for (k, v) in changes(t, index) {
            match v {
                Some(v) => map.insert(k.to_json().to_string(), (k, v)),
                None => map.remove(&k.to_json().to_string()),
            };
        }
    }
    let mut out: Vec<_> = map.into_values().collect();
    out.sort_by_key(|(k, _)| super::codec::to_bytes(k));
    out
}

/// Restore as a run would: the committed txid, with the store folded to it and the rest gone.
fn restore(dir: &Path) -> anyhow::Result<(Store, Commits, u64)> {
    let commits = Commits::open(dir)?;
    let store = Store::open(&super::dir::worker_path(dir, 0))?;
    let txid = commits.committed()?.map_or(0, |c| c.txid);
    store.fold(txid)?;
    store.discard_after(txid)?;
    Ok((store, commits, txid))
}

#[test]
#[ignore = "the child process of committed_state_survives_sigkill"]
fn child_checkpoints_until_killed() {
    let Some(dir) = std::env::var_os(DIR_VAR) else {
        eprintln!("{DIR_VAR} is not set: this is the child of committed_state_survives_sigkill");
        return;
    };
    let (store, commits, mut txid) = restore(Path::new(&dir)).unwrap_or_else(|e| panic!("{e:#}"));
    for _ in 0..100_000 {
        txid += 1;
        for (index, task) in tasks().iter().enumerate() {
            let position = Value::Int(txid as i64);
            let changes = changes(txid, index as u32);
            let r = store.prepare(txid, task, &changes, Some(&position));
            r.unwrap_or_else(|e| panic!("{e:#}"));
        }
        commits.commit(txid).unwrap_or_else(|e| panic!("{e:#}"));
        store.fold(txid).unwrap_or_else(|e| panic!("{e:#}"));
    }
}

#[test]
fn committed_state_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut last = 0;
    for kill in 0..KILLS {
        let mut child = std::process::Command::new(&exe)
            .args([
                "--exact",
                "state::crash_test::child_checkpoints_until_killed",
            ])
            .args(["--ignored", "--nocapture", "--test-threads=1"])
            .env(DIR_VAR, dir.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        std::thread::sleep(Duration::from_millis(rng.random_range(150..600)));
        let status = child.try_wait().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            status.is_none(),
            "the child ended before it was killed: {status:?}"
        );
        child.kill().unwrap_or_else(|e| panic!("{e}"));
        let _ = child.wait();
        let (store, _, txid) = restore(dir.path()).unwrap_or_else(|e| panic!("{e:#}"));
        assert!(
            txid >= last,
            "kill {kill}: committed txid went back from {last} to {txid}"
        );
        for (index, task) in tasks().iter().enumerate() {
            let got = store.entries(task).unwrap_or_else(|e| panic!("{e:#}"));
            assert_eq!(
                got,
                expected(txid, index as u32),
                "kill {kill}, txid {txid}, {task}"
            );
            let position = store.position(task).ok().flatten();
            let want = (txid > 0).then_some(Value::Int(txid as i64));
            assert_eq!(position, want, "kill {kill}, {task}");
        }
        assert_eq!(store.prepared_txids().ok(), Some(vec![]));
        eprintln!("kill {kill}: committed {txid}");
        last = txid;
    }
    assert!(
        last > KILLS as u64,
        "the children committed only {last} checkpoints"
    );
}
