//! The checkpoint store follows leadership. Nimbus keeps a topology's committed checkpoints in
//! a store of its own, and records the last commit in the coordination tree; when another
//! nimbus leads afterwards (a ZooKeeper blip, a frozen or dead leader) and finds that record
//! written by another nimbus (the record names the nimbus whose store holds the commit), it
//! fetches the committed state from that nimbus (every nimbus answers these requests, standby
//! or not) into a fresh store before it coordinates anything. Nothing is fetched partially:
//! the copy is written beside the store and moved in place once complete. When the holder
//! cannot be reached, taking over is refused with an error naming it, and tried again at the
//! next request (a frozen nimbus that wakes up answers then).

use super::checkpoints::{keeper_dir, page};
use super::{Known, Nimbus};
use crate::cluster::rpc::{Client, Request, StatePage};
use crate::runtime::checkpoint::{setup::saving_tasks, task_key};
use crate::state::{packed, Commits, Store, TaskKey};

impl Nimbus {
    /// The last checkpoint of topology `id` this nimbus's own store committed (0: none here).
    pub(crate) fn checkpoint_held(&self, id: &str) -> anyhow::Result<u64> {
        self.with_local_store(id, |commits, _| {
            Ok(commits.committed()?.map_or(0, |c| c.txid))
        })
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
            let held = commits.committed()?.map_or(0, |c| c.txid);
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
    /// of the nimbus at `holder`, which the tree says holds checkpoint `wanted`.
    pub(super) fn fetch_checkpoints(
        &self,
        id: &str,
        holder: &str,
        (wanted, held): (u64, u64),
        known: &Known,
    ) -> anyhow::Result<()> {
        let peer = Client::new(holder, self.secret.clone());
        let fetch = || -> anyhow::Result<u64> {
            let txid: u64 = peer.call(&Request::CheckpointHeld { id: id.into() })?;
            anyhow::ensure!(txid >= wanted, "it holds checkpoint {txid}");
            let dir = keeper_dir(&self.data, id);
            let copy = dir.with_extension("fetching");
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

/// The store names of topology `known`'s tasks that save checkpoints.
fn task_keys(known: &Known) -> Vec<TaskKey> {
    let plan = &known.plan;
    saving_tasks(&known.topology, plan)
        .into_iter()
        .filter_map(|task| {
            let component = plan.component_of_task(task);
            let first = *plan.component(component)?.tasks.start();
            Some(task_key(component, task - first))
        })
        .collect()
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
