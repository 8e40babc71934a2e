//! The checkpoint store follows leadership. Nimbus keeps a topology's committed checkpoints in
//! a store of its own, copies each commit to the other nimbuses before recording it
//! (`replicate`), and records the last commit in the coordination tree, naming the holder
//! and the replicas. A nimbus that leads afterwards (a ZooKeeper blip, a frozen or dead
//! leader) and is not among them fetches the committed state from one of them (every nimbus
//! answers these requests, standby or not) into a fresh store before it coordinates anything.
//! Nothing is fetched partially: the copy is written beside the store and moved in place once
//! complete. When none can be reached, taking over is refused with an error naming them, and
//! tried again at the next request (a frozen nimbus that wakes up answers then).

use super::checkpoints::{holds, keeper_dir, task_keys};
use super::pages::page;
use super::{Known, Nimbus};
use crate::cluster::protocol::rpc::{Client, Request, StatePage};
use crate::state::{packed, Commits, Store, TaskKey};

impl Nimbus {
    /// The last checkpoint of topology `id` this nimbus's own store committed, or `wanted`
    /// (recorded in the tree) when its replica received that one whole (0: none here).
    pub(crate) fn checkpoint_held(&self, id: &str, wanted: Option<u64>) -> anyhow::Result<u64> {
        self.with_local_store(id, |commits, store| holds(commits, store, wanted))
            .map(|held| held.unwrap_or(0))
    }

    /// A page of `task`'s committed state in this nimbus's own store, which must have
    /// committed `txid` (a store that moved on or fell behind would hand over another state).
    pub(crate) fn checkpoint_export(
        &self,
        id: &str,
        txid: u64,
        task: &TaskKey,
        from: usize,
    ) -> anyhow::Result<StatePage> {
        let exported = self.with_local_store(id, |commits, store| {
            let held = holds(commits, store, Some(txid))?;
            anyhow::ensure!(
                held == txid,
                "this nimbus holds checkpoint {held} of {id}, not {txid}"
            );
            store.fold(held)?;
            Ok(page(store.committed_rows(task)?, from))
        })?;
        exported.ok_or_else(|| anyhow::anyhow!("this nimbus holds no checkpoints of {id}"))
    }

    /// Run `f` on this nimbus's commit record and store of topology `id`: the open keeper's,
    /// else the files under the data folder, opened for the call (`None` when there are none).
    fn with_local_store<R>(
        &self,
        id: &str,
        f: impl FnOnce(&Commits, &Store) -> anyhow::Result<R>,
    ) -> anyhow::Result<Option<R>> {
        // Held throughout: no keeper opens the same files meanwhile.
        let keepers = self.keepers();
        if let Some(k) = keepers.get(id) {
            return f(&k.commits, &k.store).map(Some);
        }
        let dir = keeper_dir(&self.data, id);
        if !dir.is_dir() {
            return Ok(None);
        }
        let commits = Commits::open(&dir)?;
        let store = Store::open(&dir.join("state.redb"))?;
        f(&commits, &store).map(Some)
    }

    /// Replace this nimbus's store of topology `id` (`held` is its last commit) by the one
    /// of the first of `holders` that answers: the tree says each holds checkpoint `wanted`.
    pub(super) fn fetch_from_any(
        &self,
        id: &str,
        holders: &[&String],
        (wanted, held): (u64, u64),
        known: &Known,
    ) -> anyhow::Result<()> {
        let mut failed = Vec::new();
        for holder in holders {
            match self.fetch_checkpoints(id, holder, (wanted, held), known) {
                Ok(()) => return Ok(()),
                Err(e) => failed.push(format!("{e:#}")),
            }
        }
        anyhow::ensure!(
            !failed.is_empty(),
            "checkpoint {wanted} of {id} was committed by a nimbus whose store is not here \
             (this one holds checkpoint {held}), and the record names no other to fetch it from"
        );
        anyhow::bail!("{}", failed.join("; "))
    }

    /// Replace this nimbus's store of topology `id` (`held` is its last commit) by the one
    /// of the nimbus at `holder`, which the tree says holds checkpoint `wanted`.
    fn fetch_checkpoints(
        &self,
        id: &str,
        holder: &str,
        (wanted, held): (u64, u64),
        known: &Known,
    ) -> anyhow::Result<()> {
        let peer = Client::new(holder, self.secret.clone());
        let fetch = || -> anyhow::Result<u64> {
            let txid: u64 = peer.call(&Request::CheckpointHeld {
                id: id.into(),
                wanted: Some(wanted),
            })?;
            anyhow::ensure!(txid >= wanted, "it holds checkpoint {txid}");
            let dir = keeper_dir(&self.data, id);
            let copy = dir.with_file_name(format!("{id}.fetching"));
            let _ = std::fs::remove_dir_all(&copy);
            copy_store(&peer, id, txid, &task_keys(known), &copy)?;
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => anyhow::bail!("cannot replace {}: {e}", dir.display()),
            }
            std::fs::rename(&copy, &dir)
                .map_err(|e| anyhow::anyhow!("cannot move {} in place: {e}", copy.display()))?;
            Ok(txid)
        };
        let txid = fetch().map_err(|e| {
            anyhow::anyhow!(
                "checkpoint {wanted} of {id} was committed by the nimbus at {holder}, whose store is \
                 not here (this one holds checkpoint {held}), and cannot be fetched from it: {e:#}"
            )
        })?;
        tracing::warn!(
            "nimbus: {id}: fetched checkpoint {txid} from the nimbus at {holder} (this one held checkpoint {held})"
        );
        Ok(())
    }
}

/// Copy checkpoint `txid` of topology `id` from `peer`, page by page, into a new store and
/// commit record in `dir`, made durable before the commit is recorded.
fn copy_store(
    peer: &Client,
    id: &str,
    txid: u64,
    keys: &[TaskKey],
    dir: &std::path::Path,
) -> anyhow::Result<()> {
    let commits = Commits::open(dir)?;
    let store = Store::open(&dir.join("state.redb"))?;
    for key in keys {
        let mut from = Some(0);
        while let Some(f) = from {
            let page: StatePage = peer.call(&Request::CheckpointExport {
                id: id.into(),
                txid,
                task: key.clone(),
                from: f,
            })?;
            store.restore_rows(key, &packed::unpack(&page.state)?)?;
            from = page.next;
        }
    }
    store.sync()?;
    commits.commit(txid)
}
