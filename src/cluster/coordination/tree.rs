//! The in-memory coordination tree: ZooKeeper's data model (znodes with data and versions,
//! sequential and ephemeral nodes, sessions, one-shot watches) held in one process. `Tree` is
//! the plain structure; `SharedTree` puts it behind a lock and implements `CoordinationStore`
//! so nimbus, supervisors and workers of one process can share it.

use crate::cluster::coordination::znode_store::{
    parent_path, validate_path, CoordinationStore, CreateMode, EventKind, SessionId, Stat,
    StoreError, WatchedEvent, Watcher,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One znode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) data: Vec<u8>,
    pub(crate) stat: Stat,
    /// Child names.
    pub(crate) children: BTreeSet<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) timeout: Duration,
    pub(crate) last_seen: Instant,
}

/// The whole tree, its sessions and its pending watches.
#[derive(Debug)]
pub(crate) struct Tree {
    pub(crate) nodes: BTreeMap<String, Node>,
    pub(crate) sessions: HashMap<SessionId, Session>,
    pub(crate) next_session: SessionId,
    pub(crate) zxid: u64,
    data_watches: HashMap<String, Vec<Watcher>>,
    child_watches: HashMap<String, Vec<Watcher>>,
}

impl Default for Tree {
    fn default() -> Self {
        Tree::new()
    }
}

impl Tree {
    /// A tree holding only the root `/`.
    pub(crate) fn new() -> Tree {
        let mut nodes = BTreeMap::new();
        nodes.insert("/".to_string(), Node::empty(0, None));
        Tree::from_parts(nodes, HashMap::new(), 1, 0)
    }

    pub(crate) fn from_parts(
        nodes: BTreeMap<String, Node>,
        sessions: HashMap<SessionId, Session>,
        next_session: SessionId,
        zxid: u64,
    ) -> Tree {
        Tree {
            nodes,
            sessions,
            next_session,
            zxid,
            data_watches: HashMap::new(),
            child_watches: HashMap::new(),
        }
    }

    fn create(&mut self, path: &str, data: &[u8], mode: CreateMode) -> Result<String, StoreError> {
        validate_path(path)?;
        let parent = parent_path(path).ok_or_else(|| StoreError::NodeExists(path.to_string()))?;
        if let Some(owner) = mode.owner() {
            if !self.sessions.contains_key(&owner) {
                return Err(StoreError::SessionExpired(owner));
            }
        }
        let parent_node = self
            .nodes
            .get(parent)
            .ok_or_else(|| StoreError::NoNode(parent.to_string()))?;
        if parent_node.stat.ephemeral_owner.is_some() {
            return Err(StoreError::NoChildrenForEphemerals(parent.to_string()));
        }
        // ZooKeeper's sequential suffix: the parent's child version, ten digits.
        let path = if mode.is_sequential() {
            format!("{path}{:010}", parent_node.stat.cversion)
        } else {
            path.to_string()
        };
        if self.nodes.contains_key(&path) {
            return Err(StoreError::NodeExists(path));
        }
        self.zxid += 1;
        let zxid = self.zxid;
        let mut node = Node::empty(zxid, mode.owner());
        node.data = data.to_vec();
        node.stat.data_length = len_u32(data.len());
        self.nodes.insert(path.clone(), node);
        let name = path.rsplit('/').next().unwrap_or_default().to_string();
        if let Some(p) = self.nodes.get_mut(parent) {
            p.children.insert(name);
            p.stat.cversion += 1;
            p.stat.num_children = len_u32(p.children.len());
        }
        self.fire_data(&path, EventKind::NodeCreated);
        self.fire_children(parent, EventKind::NodeChildrenChanged);
        Ok(path)
    }

    fn get_data(
        &mut self,
        path: &str,
        watch: Option<Watcher>,
    ) -> Result<(Vec<u8>, Stat), StoreError> {
        validate_path(path)?;
        let node = self
            .nodes
            .get(path)
            .ok_or_else(|| StoreError::NoNode(path.to_string()))?;
        let out = (node.data.clone(), node.stat.clone());
        if let Some(w) = watch {
            add_watch(&mut self.data_watches, path, w);
        }
        Ok(out)
    }

    fn set_data(
        &mut self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, StoreError> {
        validate_path(path)?;
        let zxid = self.zxid + 1;
        let node = self
            .nodes
            .get_mut(path)
            .ok_or_else(|| StoreError::NoNode(path.to_string()))?;
        check_version(path, version, node.stat.version)?;
        self.zxid = zxid;
        node.data = data.to_vec();
        node.stat.version += 1;
        node.stat.mzxid = zxid;
        node.stat.data_length = len_u32(data.len());
        let stat = node.stat.clone();
        self.fire_data(path, EventKind::NodeDataChanged);
        Ok(stat)
    }

    fn delete(&mut self, path: &str, version: Option<i32>) -> Result<(), StoreError> {
        validate_path(path)?;
        let parent = parent_path(path)
            .ok_or_else(|| StoreError::BadArguments("cannot delete the root".into()))?;
        let node = self
            .nodes
            .get(path)
            .ok_or_else(|| StoreError::NoNode(path.to_string()))?;
        check_version(path, version, node.stat.version)?;
        if !node.children.is_empty() {
            return Err(StoreError::NotEmpty(path.to_string()));
        }
        self.zxid += 1;
        self.nodes.remove(path);
        let name = path.rsplit('/').next().unwrap_or_default();
        if let Some(p) = self.nodes.get_mut(parent) {
            p.children.remove(name);
            p.stat.cversion += 1;
            p.stat.num_children = len_u32(p.children.len());
        }
        self.fire_data(path, EventKind::NodeDeleted);
        self.fire_children(path, EventKind::NodeDeleted);
        self.fire_children(parent, EventKind::NodeChildrenChanged);
        Ok(())
    }

    fn exists(&mut self, path: &str, watch: Option<Watcher>) -> Result<Option<Stat>, StoreError> {
        validate_path(path)?;
        if let Some(w) = watch {
            add_watch(&mut self.data_watches, path, w);
        }
        Ok(self.nodes.get(path).map(|n| n.stat.clone()))
    }

    fn children(&mut self, path: &str, watch: Option<Watcher>) -> Result<Vec<String>, StoreError> {
        validate_path(path)?;
        let node = self
            .nodes
            .get(path)
            .ok_or_else(|| StoreError::NoNode(path.to_string()))?;
        let kids = node.children.iter().cloned().collect();
        if let Some(w) = watch {
            add_watch(&mut self.child_watches, path, w);
        }
        Ok(kids)
    }

    fn open_session(&mut self, timeout: Duration) -> SessionId {
        let id = self.next_session;
        self.next_session += 1;
        self.sessions.insert(
            id,
            Session {
                timeout,
                last_seen: Instant::now(),
            },
        );
        id
    }

    fn touch_session(&mut self, session: SessionId) -> Result<(), StoreError> {
        let s = self
            .sessions
            .get_mut(&session)
            .ok_or(StoreError::SessionExpired(session))?;
        s.last_seen = Instant::now();
        Ok(())
    }

    /// End a session and delete its ephemeral nodes (ZooKeeper's session close or expiry).
    fn close_session(&mut self, session: SessionId) -> Result<(), StoreError> {
        self.sessions
            .remove(&session)
            .ok_or(StoreError::SessionExpired(session))?;
        let owned: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.stat.ephemeral_owner == Some(session))
            .map(|(p, _)| p.clone())
            .collect();
        for path in owned {
            // Ephemeral nodes have no children, so this cannot fail on NotEmpty.
            self.delete(&path, None)?;
        }
        Ok(())
    }

    /// Expire the sessions not touched within their timeout as of `now`.
    fn expire_sessions_at(&mut self, now: Instant) -> Vec<SessionId> {
        let mut stale: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|(_, s)| now.saturating_duration_since(s.last_seen) >= s.timeout)
            .map(|(id, _)| *id)
            .collect();
        stale.sort_unstable();
        stale.retain(|id| self.close_session(*id).is_ok());
        stale
    }

    fn fire_data(&mut self, path: &str, kind: EventKind) {
        fire(&mut self.data_watches, path, kind);
    }

    fn fire_children(&mut self, path: &str, kind: EventKind) {
        fire(&mut self.child_watches, path, kind);
    }
}

impl Node {
    fn empty(zxid: u64, owner: Option<SessionId>) -> Node {
        Node {
            data: Vec::new(),
            stat: Stat {
                czxid: zxid,
                mzxid: zxid,
                version: 0,
                cversion: 0,
                ephemeral_owner: owner,
                num_children: 0,
                data_length: 0,
            },
            children: BTreeSet::new(),
        }
    }
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn check_version(path: &str, expected: Option<i32>, actual: i32) -> Result<(), StoreError> {
    match expected {
        Some(v) if v != actual => Err(StoreError::BadVersion {
            path: path.to_string(),
            expected: v,
            actual,
        }),
        _ => Ok(()),
    }
}

/// Register a watcher unless the same channel already watches this node.
fn add_watch(table: &mut HashMap<String, Vec<Watcher>>, path: &str, w: Watcher) {
    let list = table.entry(path.to_string()).or_default();
    if !list.iter().any(|x| x.same_channel(&w)) {
        list.push(w);
    }
}

/// Watches are one-shot: delivered once, then forgotten. A dropped receiver is not an error.
fn fire(table: &mut HashMap<String, Vec<Watcher>>, path: &str, kind: EventKind) {
    if let Some(list) = table.remove(path) {
        for w in list {
            let _ = w.send(WatchedEvent {
                kind,
                path: path.to_string(),
            });
        }
    }
}

/// A tree shared between threads, implementing the store interface.
#[derive(Debug, Clone, Default)]
pub struct SharedTree {
    inner: Arc<Mutex<Tree>>,
}

impl SharedTree {
    pub fn new() -> SharedTree {
        SharedTree::from_tree(Tree::new())
    }

    pub(crate) fn from_tree(tree: Tree) -> SharedTree {
        SharedTree {
            inner: Arc::new(Mutex::new(tree)),
        }
    }

    /// Direct access to the tree (for snapshots and tests). A lock poisoned by a panicking
    /// holder is still usable: every operation leaves the tree consistent before it can panic.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Tree> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl CoordinationStore for SharedTree {
    fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String, StoreError> {
        self.lock().create(path, data, mode)
    }
    fn get_data(&self, path: &str, watch: Option<Watcher>) -> Result<(Vec<u8>, Stat), StoreError> {
        self.lock().get_data(path, watch)
    }
    fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat, StoreError> {
        self.lock().set_data(path, data, version)
    }
    fn delete(&self, path: &str, version: Option<i32>) -> Result<(), StoreError> {
        self.lock().delete(path, version)
    }
    fn exists(&self, path: &str, watch: Option<Watcher>) -> Result<Option<Stat>, StoreError> {
        self.lock().exists(path, watch)
    }
    fn children(&self, path: &str, watch: Option<Watcher>) -> Result<Vec<String>, StoreError> {
        self.lock().children(path, watch)
    }
    fn open_session(&self, timeout: Duration) -> SessionId {
        self.lock().open_session(timeout)
    }
    fn touch_session(&self, session: SessionId) -> Result<(), StoreError> {
        self.lock().touch_session(session)
    }
    fn close_session(&self, session: SessionId) -> Result<(), StoreError> {
        self.lock().close_session(session)
    }
    fn expire_sessions(&self) -> Vec<SessionId> {
        self.lock().expire_sessions_at(Instant::now())
    }
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
