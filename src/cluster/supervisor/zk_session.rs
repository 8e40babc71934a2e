//! A supervisor's own ZooKeeper session, used when `storm.zookeeper.servers` is set (as
//! Storm's supervisors do): the supervisor creates its ephemeral `/supervisors/{id}` node on
//! its own session (so the node lives and dies with the supervisor, not with a nimbus), and
//! learns its work by watching `/assignments` (its children, and each assignment's data).
//!
//! Watches are one-shot: each one that fires is registered again by the read that follows it.
//! When the session expires the store opens a new one (its epoch moves): the node is created
//! again and every watch registered again on the new session.

use crate::cluster::coordination::layout::{AssignmentInfo, SupervisorInfo};
use crate::cluster::coordination::znode_store::{
    child_path, watcher, CoordinationStore, StoreError, WatchedEvent, Watcher,
};
use crate::cluster::coordination::zookeeper::{ZkSettings, ZkStore, OWN_SESSION};
use crate::cluster::nimbus::cluster_state::ClusterState;
use crate::cluster::protocol::rpc::{self, SlotWork};
use crossbeam_channel::Receiver;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the supervisor rewrites its node (its uptime and time, Storm's
/// `supervisor.heartbeat.frequency.secs`), and re-creates it should it be gone.
const REFRESH: Duration = Duration::from_secs(3);

/// Where a supervisor finds the ensemble.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ZkSupervisorSettings {
    pub(crate) settings: ZkSettings,
    /// `storm.zookeeper.root`.
    pub(crate) root: String,
}

/// A supervisor's session with the ensemble: its registration and its assignment watches.
pub(crate) struct ZkSupervisor {
    store: Arc<ZkStore>,
    state: ClusterState<Arc<ZkStore>>,
    id: String,
    /// The store epoch and time of the last registration.
    registered: Option<(u64, Instant)>,
    watch: AssignmentWatch,
}

impl ZkSupervisor {
    /// Connect to the ensemble; fails when no server answers within the connection timeout.
    pub(crate) fn connect(zk: &ZkSupervisorSettings, id: &str) -> anyhow::Result<ZkSupervisor> {
        let store = Arc::new(
            ZkStore::connect(zk.settings.clone())
                .map_err(|e| anyhow::anyhow!("storm.zookeeper.servers: {e}"))?,
        );
        let state = ClusterState::new(store.clone(), &zk.root)?;
        let watch = AssignmentWatch::new(state.layout().assignments());
        Ok(ZkSupervisor {
            store,
            state,
            id: id.to_string(),
            registered: None,
            watch,
        })
    }

    /// Register (when due) and read the assignments that changed: the slots assigned to this
    /// supervisor. An error leaves the workers as they are; the caller tries again later.
    /// While disconnected it fails at once rather than wait out the connection timeout, so
    /// the workers stay supervised.
    pub(crate) fn beat(&mut self, info: &SupervisorInfo) -> Result<Vec<SlotWork>, String> {
        self.store.renew().map_err(|e| self.said(e))?;
        if !self.store.connected() {
            return Err(format!(
                "disconnected from ZooKeeper at {}",
                self.store.address()
            ));
        }
        self.register(info)?;
        let epoch = self.store.epoch();
        self.watch
            .sync(&*self.store, epoch)
            .map_err(|e| self.said(e))?;
        Ok(self.watch.work_of(&self.id))
    }

    /// Create or refresh `/supervisors/{id}` on this supervisor's session: at once on a new
    /// session, else every [`REFRESH`]. Refused while another live supervisor claims one of
    /// its slots.
    fn register(&mut self, info: &SupervisorInfo) -> Result<(), String> {
        let epoch = self.store.epoch();
        let due = match self.registered {
            Some((e, at)) => e != epoch || at.elapsed() >= REFRESH,
            None => true,
        };
        if !due {
            return Ok(());
        }
        let live = self.state.supervisors().map_err(|e| self.said(e))?;
        if let Some(clash) = crate::cluster::nimbus::slot_clash(&live, &self.id, info) {
            self.registered = None;
            return Err(format!("not registered (it gets no work): {clash}"));
        }
        self.state
            .supervisor_heartbeat(OWN_SESSION, &self.id, info)
            .map_err(|e| self.said(e))?;
        if self.registered.is_none_or(|(e, _)| e != epoch) {
            tracing::info!(
                "supervisor {}: registered in ZooKeeper at {}",
                self.id,
                self.store.address()
            );
        }
        self.registered = Some((epoch, Instant::now()));
        Ok(())
    }

    /// An error of the ensemble, naming it.
    fn said(&self, e: impl std::fmt::Display) -> String {
        format!("ZooKeeper at {}: {e}", self.store.address())
    }

    /// Remove the supervisor's node (its session closes when the store is dropped).
    pub(crate) fn unregister(&self) {
        let path = self.state.layout().supervisor(&self.id);
        let _ = self.store.delete(&path, None);
    }
}

/// The assignments as last read, kept current by watches on `/assignments` and on each
/// assignment.
struct AssignmentWatch {
    dir: String,
    /// The store epoch the watches were registered on.
    epoch: Option<u64>,
    watcher: Watcher,
    events: Receiver<WatchedEvent>,
    /// Topology id → its assignment (`None` when it does not parse).
    known: BTreeMap<String, Option<AssignmentInfo>>,
    /// The children are to be listed again (and watched).
    list: bool,
    /// Assignments to read again (and watch).
    stale: BTreeSet<String>,
}

impl AssignmentWatch {
    fn new(dir: String) -> AssignmentWatch {
        let (watcher, events) = watcher();
        AssignmentWatch {
            dir,
            epoch: None,
            watcher,
            events,
            known: BTreeMap::new(),
            list: true,
            stale: BTreeSet::new(),
        }
    }

    /// Start over on a new session: a new channel (events of the old session's watches are
    /// dropped with it), everything read and watched again.
    fn reset(&mut self, epoch: u64) {
        let (watcher, events) = watcher();
        self.watcher = watcher;
        self.events = events;
        self.epoch = Some(epoch);
        self.known.clear();
        self.stale.clear();
        self.list = true;
    }

    /// Read again what the fired watches name, registering each watch again; everything
    /// when `epoch` (the session the store is on) moved.
    fn sync(&mut self, store: &dyn CoordinationStore, epoch: u64) -> Result<(), StoreError> {
        if self.epoch != Some(epoch) {
            self.reset(epoch);
        }
        for event in self.events.try_iter() {
            if event.path == self.dir {
                self.list = true;
            } else if let Some(name) = event.path.rsplit('/').next() {
                self.stale.insert(name.to_string());
            }
        }
        if self.list {
            self.list_children(store)?;
        }
        while let Some(name) = self.stale.first().cloned() {
            self.read(store, &name)?;
            self.stale.remove(&name);
        }
        Ok(())
    }

    /// List `/assignments` with a watch: new children are to be read, gone ones forgotten.
    fn list_children(&mut self, store: &dyn CoordinationStore) -> Result<(), StoreError> {
        let kids: BTreeSet<String> = store
            .children(&self.dir, Some(self.watcher.clone()))?
            .into_iter()
            .collect();
        self.list = false;
        self.known.retain(|id, _| kids.contains(id));
        self.stale.retain(|id| kids.contains(id));
        let new: Vec<String> = kids
            .into_iter()
            .filter(|id| !self.known.contains_key(id))
            .collect();
        self.stale.extend(new);
        Ok(())
    }

    /// Read one assignment with a watch on its data.
    fn read(&mut self, store: &dyn CoordinationStore, id: &str) -> Result<(), StoreError> {
        let path = child_path(&self.dir, id);
        match store.get_data(&path, Some(self.watcher.clone())) {
            Ok((data, _)) => {
                let parsed = serde_json::from_slice(&data).ok();
                if parsed.is_none() {
                    tracing::warn!("supervisor: {path} does not hold an assignment; ignored");
                }
                self.known.insert(id.to_string(), parsed);
                Ok(())
            }
            Err(StoreError::NoNode(_)) => {
                self.known.remove(id);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// The slots the known assignments give `supervisor`.
    fn work_of(&self, supervisor: &str) -> Vec<SlotWork> {
        let mut out = Vec::new();
        for (id, a) in &self.known {
            let Some(a) = a else { continue };
            out.extend(rpc::slot_work(id, a, supervisor));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::coordination::layout::NodePort;
    use crate::cluster::coordination::tree::SharedTree;

    fn assignment(slots: &[(u32, &str, u16)]) -> Vec<u8> {
        let mut a = AssignmentInfo::default();
        for (task, node, port) in slots {
            a.node_host.insert(node.to_string(), "127.0.0.1".into());
            let np = NodePort {
                node: node.to_string(),
                port: *port,
            };
            a.task_to_node_port.insert(*task, np);
        }
        serde_json::to_vec(&a).unwrap()
    }

    fn ports(watch: &AssignmentWatch, node: &str) -> Vec<(String, u16)> {
        let work = watch.work_of(node);
        work.into_iter().map(|w| (w.topology, w.port)).collect()
    }

    /// Each change reaches the watch by the event it fires (the embedded tree's watches, which
    /// fire as ZooKeeper's do); without an event nothing is read again, except on a new session.
    #[test]
    fn the_assignments_follow_the_watches() {
        let tree = SharedTree::new();
        tree.create_all("/storm/assignments").unwrap();
        let put = |id: &str, data: &[u8]| tree.put(&format!("/storm/assignments/{id}"), data);
        put("t1", &assignment(&[(1, "s1", 6700), (2, "s2", 6700)])).unwrap();
        let mut watch = AssignmentWatch::new("/storm/assignments".into());
        watch.sync(&tree, 1).unwrap();
        assert_eq!(ports(&watch, "s1"), [("t1".to_string(), 6700)]);

        // A new topology, a changed one, a removed one.
        put("t2", &assignment(&[(1, "s1", 6701)])).unwrap();
        watch.sync(&tree, 1).unwrap();
        assert_eq!(
            ports(&watch, "s1"),
            [("t1".to_string(), 6700), ("t2".to_string(), 6701)]
        );
        put("t1", &assignment(&[(1, "s2", 6700), (2, "s2", 6701)])).unwrap();
        watch.sync(&tree, 1).unwrap();
        assert_eq!(ports(&watch, "s1"), [("t2".to_string(), 6701)]);
        tree.delete("/storm/assignments/t2", None).unwrap();
        watch.sync(&tree, 1).unwrap();
        assert_eq!(ports(&watch, "s1"), []);
        assert_eq!(
            ports(&watch, "s2"),
            [("t1".to_string(), 6700), ("t1".to_string(), 6701)]
        );

        // Nothing fired: nothing is read again (a stale entry stays stale) ...
        watch.known.insert("t1".into(), None);
        watch.sync(&tree, 1).unwrap();
        assert_eq!(ports(&watch, "s2"), [], "read again without an event");
        // ... until the session is new: then everything is read, and watched, again.
        watch.sync(&tree, 2).unwrap();
        assert_eq!(ports(&watch, "s2").len(), 2);
        put("t1", &assignment(&[(1, "s1", 6702)])).unwrap();
        watch.sync(&tree, 2).unwrap();
        assert_eq!(ports(&watch, "s1"), [("t1".to_string(), 6702)]);
    }
}
