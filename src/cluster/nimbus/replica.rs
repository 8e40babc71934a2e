//! A nimbus's replica of another nimbus's checkpoints: the leader copies each checkpoint of a
//! topology whose workers run in several processes to every other registered nimbus before it
//! records the commit (`replicate`), so the checkpoint survives its leader. This side keeps
//! the copy in the same place and form as its own store (`checkpoints/ID` under its data
//! folder), so a replica that leads goes on from it as from its own, and answers fetches
//! from it.
//!
//! A whole copy is written beside the store and moved in place once complete. A checkpoint's
//! parts go into the replica's store as prepared, over the commit the leader last recorded
//! (`base`): a replica holding another one refuses them, and the leader sends it a whole copy
//! next. The last checkpoint received whole is noted (`replicated`) and folded in once the
//! leader's next parts show it recorded, or when this nimbus leads from it.

use super::checkpoints::{holds, keeper_dir};
use super::Nimbus;
use crate::cluster::protocol::rpc::ReplicaStep;
use crate::state::{packed, Commits, Store};
use std::path::{Path, PathBuf};

impl Nimbus {
    /// Take one step of the leader copying topology `id`'s checkpoints here.
    pub(crate) fn checkpoint_replica(&self, id: &str, step: ReplicaStep) -> anyhow::Result<()> {
        // Held throughout. A keeper this nimbus had open (it led before) is closed: the files
        // are the replica's now, and a keeper opens again from the tree if it leads again.
        let mut keepers = self.keepers();
        // The leader's own store is never written over by a nimbus that lost the lead.
        if self.zk.as_ref().is_some_and(|zk| zk.leads_now()) {
            anyhow::bail!("this nimbus leads: it keeps no replica of {id}");
        }
        keepers.remove(id);
        let dir = keeper_dir(&self.data, id);
        let whole = whole_copy_dir(&dir, id);
        match step {
            ReplicaStep::Reset => remove_dir(&whole),
            ReplicaStep::Forget => remove_dir(&whole).and_then(|()| remove_dir(&dir)),
            ReplicaStep::Rows { task, state } => {
                let store = Store::open(&whole.join("state.redb"))?;
                store.restore_rows(&task, &packed::unpack(&state)?)
            }
            ReplicaStep::Install { txid } => install(&whole, &dir, txid),
            ReplicaStep::Prepared {
                base,
                txid,
                task,
                state,
            } => {
                let (_, store) = open_at(&dir, id, base)?;
                store.prepare_rows(txid, &task, &packed::unpack(&state)?)
            }
            ReplicaStep::Ready { base, txid } => {
                let (commits, _) = open_at(&dir, id, base)?;
                commits.set_replicated(txid)
            }
        }
    }
}

/// Where a whole copy of topology `id`'s checkpoints is written before it replaces `dir`.
fn whole_copy_dir(dir: &Path, id: &str) -> PathBuf {
    dir.with_file_name(format!("{id}.replica"))
}

/// Remove `dir` and what it holds, if it is there.
fn remove_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => anyhow::bail!("cannot remove {}: {e}", dir.display()),
    }
}

/// Make the whole copy in `whole` hold checkpoint `txid`, durably, and move it to `dir`.
fn install(whole: &Path, dir: &Path, txid: u64) -> anyhow::Result<()> {
    {
        let commits = Commits::open(whole)?;
        Store::open(&whole.join("state.redb"))?.sync()?;
        anyhow::ensure!(
            commits.committed()?.is_none(),
            "{} holds a commit already (a copy started without a reset)",
            whole.display()
        );
        commits.commit(txid)?;
    }
    remove_dir(dir)?;
    std::fs::rename(whole, dir)
        .map_err(|e| anyhow::anyhow!("cannot move {} in place: {e}", whole.display()))
}

/// The replica's commit record and store in `dir`, which must hold checkpoint `base` (the one
/// the leader recorded last). One received whole and now shown recorded is folded in first.
fn open_at(dir: &Path, id: &str, base: u64) -> anyhow::Result<(Commits, Store)> {
    anyhow::ensure!(
        dir.is_dir(),
        "this nimbus holds no replica of the checkpoints of {id}"
    );
    let commits = Commits::open(dir)?;
    let store = Store::open(&dir.join("state.redb"))?;
    let held = holds(&commits, &store, Some(base))?;
    anyhow::ensure!(
        held == base,
        "this nimbus's replica holds checkpoint {held} of {id}, not {base}"
    );
    Ok((commits, store))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{codec, RawState, TaskKey};
    use crate::tuple::Value;

    /// Rows of words and counts, packed.
    fn rows(words: &[(&str, i64)]) -> String {
        let rows = words
            .iter()
            .map(|(w, n)| {
                let key = codec::to_bytes(&Value::str(w));
                (key, Some(codec::to_bytes(&Value::Int(*n))))
            })
            .collect();
        packed::pack(&RawState {
            rows,
            position: None,
        })
    }

    /// What nimbus `n` exports of `key` at checkpoint `txid`.
    fn exported(n: &Nimbus, id: &str, txid: u64, key: &TaskKey) -> Vec<(Value, Value)> {
        let page = n.checkpoint_export(id, txid, key, 0).expect("exported");
        let raw = packed::unpack(&page.state).expect("packed");
        raw.rows
            .iter()
            .map(|(k, v)| {
                let v = v.as_ref().expect("a value");
                let decode = |b: &[u8]| codec::from_bytes(b).expect("decoded");
                (decode(k), decode(v))
            })
            .collect()
    }

    fn prepared(base: u64, txid: u64, key: &TaskKey, words: &[(&str, i64)]) -> ReplicaStep {
        ReplicaStep::Prepared {
            base,
            txid,
            task: key.clone(),
            state: rows(words),
        }
    }

    #[test]
    fn a_replica_takes_a_whole_copy_then_each_checkpoint_over_the_recorded_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let n = Nimbus::open(dir.path(), crate::config::layers::defaults()).expect("nimbus");
        let (id, key) = ("wc-1-1", crate::runtime::checkpoint::task_key("count", 0));
        let step = |s: ReplicaStep| n.checkpoint_replica(id, s);
        step(ReplicaStep::Reset).expect("reset");
        let whole = ReplicaStep::Rows {
            task: key.clone(),
            state: rows(&[("a", 1), ("b", 2)]),
        };
        step(whole).expect("rows");
        step(ReplicaStep::Install { txid: 3 }).expect("installed");
        assert_eq!(n.checkpoint_held(id, None).expect("held"), 3);

        // Parts over another commit than the one held are refused.
        let err = step(prepared(2, 4, &key, &[("a", 5)])).expect_err("refused");
        assert!(format!("{err:#}").contains("holds checkpoint 3"), "{err:#}");
        step(prepared(3, 4, &key, &[("a", 5)])).expect("prepared");
        step(ReplicaStep::Ready { base: 3, txid: 4 }).expect("ready");
        // Received whole: held once asked for it (the tree records it), and folded in.
        assert_eq!(n.checkpoint_held(id, None).expect("held"), 3);
        assert_eq!(n.checkpoint_held(id, Some(4)).expect("held"), 4);
        let ab = |a, b| {
            vec![
                (Value::str("a"), Value::Int(a)),
                (Value::str("b"), Value::Int(b)),
            ]
        };
        assert_eq!(exported(&n, id, 4, &key), ab(5, 2));

        // The next checkpoint, over 4; one received whole is folded in by the parts over it.
        step(prepared(4, 5, &key, &[("b", 7)])).expect("prepared");
        step(ReplicaStep::Ready { base: 4, txid: 5 }).expect("ready");
        step(prepared(5, 6, &key, &[("a", 9)])).expect("prepared over 5");
        assert_eq!(exported(&n, id, 5, &key), ab(5, 7));

        // A new whole copy replaces everything.
        step(ReplicaStep::Reset).expect("reset");
        step(ReplicaStep::Install { txid: 8 }).expect("installed");
        assert_eq!(n.checkpoint_held(id, None).expect("held"), 8);
        assert_eq!(exported(&n, id, 8, &key), Vec::new());
    }
}
