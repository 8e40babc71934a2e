//! One worker's checkpoint store (Storm's state provider): for each task, its committed
//! key/value entries and (for a spout) its position, plus what checkpoints not yet known to be
//! committed prepared. An embedded ACID database (redb) under the state dir, or the same
//! tables in memory (`topology.state.provider: memory`).
//!
//! A checkpoint is written in two steps, as in Storm's state: `prepare` durably writes a task's
//! changes under the checkpoint's txid; once every task of the topology has prepared it, the
//! commit record ([`super::Commits`]) says so, and `fold` moves the prepared changes of every
//! txid up to it into the committed entries. A crash between the two leaves the prepared
//! changes; a restore folds what was committed and discards the rest.

use super::TaskKey;
use crate::tuple::Value;
use std::path::Path;

pub struct Store {
    // filled in by the implementation
}

impl Store {
    /// Open (creating it if missing) the store of a worker at `path`.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        let _ = path;
        todo!()
    }

    /// A store in memory.
    pub fn memory() -> anyhow::Result<Store> {
        todo!()
    }

    /// Durably write `task`'s changes (`None`: the key was removed) and, for a spout, its
    /// position, as prepared under `txid`, in one transaction.
    pub fn prepare(
        &self,
        txid: u64,
        task: &TaskKey,
        changes: &[(Value, Option<Value>)],
        position: Option<&Value>,
    ) -> anyhow::Result<()> {
        let _ = (txid, task, changes, position);
        todo!()
    }

    /// Fold what every txid up to `txid` prepared into the committed entries, oldest first, in
    /// one transaction. Folding again is harmless.
    pub fn fold(&self, txid: u64) -> anyhow::Result<()> {
        let _ = txid;
        todo!()
    }

    /// Drop what txids after `txid` prepared (never committed: a restore starts from `txid`).
    pub fn discard_after(&self, txid: u64) -> anyhow::Result<()> {
        let _ = txid;
        todo!()
    }

    /// `task`'s committed entries.
    pub fn entries(&self, task: &TaskKey) -> anyhow::Result<Vec<(Value, Value)>> {
        let _ = task;
        todo!()
    }

    /// `task`'s committed position (spouts).
    pub fn position(&self, task: &TaskKey) -> anyhow::Result<Option<Value>> {
        let _ = task;
        todo!()
    }

    /// Every task with committed entries or a position.
    pub fn tasks(&self) -> anyhow::Result<Vec<TaskKey>> {
        todo!()
    }
}
