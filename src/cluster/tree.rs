//! The in-memory coordination tree: ZooKeeper's data model (znodes with data and versions,
//! sequential and ephemeral nodes, sessions, one-shot watches) held in one process. `Tree` is
//! the plain structure; `SharedTree` puts it behind a lock and implements `CoordinationStore`
//! so nimbus, supervisors and workers of one process can share it.

use super::store::{
    parent_path, validate_path, CoordinationStore, CreateMode, EventKind, SessionId, Stat,
    StoreError, WatchedEvent, Watcher,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One znode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub data: Vec<u8>,
    pub stat: Stat,
    /// Child names.
    pub children: BTreeSet<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) timeout: Duration,
    pub(crate) last_seen: Instant,
}

/// The whole tree, its sessions and its pending watches.
#[derive(Debug)]
pub struct Tree {
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
    pub fn new() -> Tree {
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

    pub fn node(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    pub fn create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<String, StoreError> {
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

    pub fn get_data(
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

    pub fn set_data(
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

    pub fn delete(&mut self, path: &str, version: Option<i32>) -> Result<(), StoreError> {
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

    pub fn exists(
        &mut self,
        path: &str,
        watch: Option<Watcher>,
    ) -> Result<Option<Stat>, StoreError> {
        validate_path(path)?;
        if let Some(w) = watch {
            add_watch(&mut self.data_watches, path, w);
        }
        Ok(self.nodes.get(path).map(|n| n.stat.clone()))
    }

    pub fn children(
        &mut self,
        path: &str,
        watch: Option<Watcher>,
    ) -> Result<Vec<String>, StoreError> {
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

    pub fn open_session(&mut self, timeout: Duration) -> SessionId {
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

    pub fn touch_session(&mut self, session: SessionId) -> Result<(), StoreError> {
        let s = self
            .sessions
            .get_mut(&session)
            .ok_or(StoreError::SessionExpired(session))?;
        s.last_seen = Instant::now();
        Ok(())
    }

    /// End a session and delete its ephemeral nodes (ZooKeeper's session close or expiry).
    pub fn close_session(&mut self, session: SessionId) -> Result<(), StoreError> {
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
    pub fn expire_sessions_at(&mut self, now: Instant) -> Vec<SessionId> {
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

    pub fn from_tree(tree: Tree) -> SharedTree {
        SharedTree {
            inner: Arc::new(Mutex::new(tree)),
        }
    }

    /// Direct access to the tree (for snapshots and tests). A lock poisoned by a panicking
    /// holder is still usable: every operation leaves the tree consistent before it can panic.
    pub fn lock(&self) -> MutexGuard<'_, Tree> {
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
mod tests {
    use super::*;
    use crate::cluster::store::watcher;

    fn tree_with(paths: &[&str]) -> Tree {
        let mut t = Tree::new();
        for p in paths {
            t.create(p, b"", CreateMode::Persistent).unwrap();
        }
        t
    }

    #[test]
    fn parent_must_exist_and_names_are_unique() {
        let mut t = tree_with(&["/a"]);
        assert_eq!(
            t.create("/b/c", b"", CreateMode::Persistent),
            Err(StoreError::NoNode("/b".into()))
        );
        assert_eq!(
            t.create("/a", b"", CreateMode::Persistent),
            Err(StoreError::NodeExists("/a".into()))
        );
        assert!(matches!(
            t.create("a/b", b"", CreateMode::Persistent),
            Err(StoreError::BadPath { .. })
        ));
        assert!(matches!(
            t.create("/a/", b"", CreateMode::Persistent),
            Err(StoreError::BadPath { .. })
        ));
        assert_eq!(t.children("/", None).unwrap(), ["a"]);
    }

    #[test]
    fn versions_count_changes_and_guard_set_and_delete() {
        let mut t = tree_with(&["/a"]);
        assert_eq!(t.get_data("/a", None).unwrap().1.version, 0);
        assert_eq!(t.set_data("/a", b"1", Some(0)).unwrap().version, 1);
        assert_eq!(t.set_data("/a", b"2", None).unwrap().version, 2);
        assert_eq!(
            t.set_data("/a", b"3", Some(1)),
            Err(StoreError::BadVersion {
                path: "/a".into(),
                expected: 1,
                actual: 2
            })
        );
        assert_eq!(t.get_data("/a", None).unwrap().0, b"2");
        assert!(matches!(
            t.delete("/a", Some(0)),
            Err(StoreError::BadVersion { .. })
        ));
        t.delete("/a", Some(2)).unwrap();
        assert_eq!(t.exists("/a", None).unwrap(), None);
        // The parent's child version counts creations and deletions.
        assert_eq!(t.exists("/", None).unwrap().map(|s| s.cversion), Some(2));
    }

    #[test]
    fn no_orphans_and_no_root_deletion() {
        let mut t = tree_with(&["/a", "/a/b"]);
        assert_eq!(t.delete("/a", None), Err(StoreError::NotEmpty("/a".into())));
        assert!(matches!(
            t.delete("/", None),
            Err(StoreError::BadArguments(_))
        ));
        assert_eq!(t.delete("/zz", None), Err(StoreError::NoNode("/zz".into())));
        t.delete("/a/b", None).unwrap();
        t.delete("/a", None).unwrap();
    }

    #[test]
    fn sequential_names_count_from_the_parents_child_version() {
        let mut t = tree_with(&["/q", "/q/x"]);
        let a = t
            .create("/q/e", b"", CreateMode::PersistentSequential)
            .unwrap();
        let b = t
            .create("/q/e", b"", CreateMode::PersistentSequential)
            .unwrap();
        assert_eq!(a, "/q/e0000000001");
        assert_eq!(b, "/q/e0000000002");
    }

    #[test]
    fn ephemeral_nodes_go_with_their_session_and_have_no_children() {
        let mut t = tree_with(&["/s"]);
        let s1 = t.open_session(Duration::from_secs(60));
        let s2 = t.open_session(Duration::from_secs(60));
        t.create("/s/one", b"x", CreateMode::Ephemeral(s1)).unwrap();
        t.create("/s/two", b"y", CreateMode::Ephemeral(s2)).unwrap();
        assert_eq!(
            t.create("/s/one/kid", b"", CreateMode::Persistent),
            Err(StoreError::NoChildrenForEphemerals("/s/one".into()))
        );
        t.close_session(s1).unwrap();
        assert_eq!(t.children("/s", None).unwrap(), ["two"]);
        assert_eq!(
            t.create("/s/again", b"", CreateMode::Ephemeral(s1)),
            Err(StoreError::SessionExpired(s1))
        );
        assert_eq!(t.close_session(s1), Err(StoreError::SessionExpired(s1)));
    }

    #[test]
    fn sessions_expire_after_their_timeout_unless_touched() {
        let mut t = tree_with(&["/s"]);
        let quick = t.open_session(Duration::from_secs(5));
        let slow = t.open_session(Duration::from_secs(500));
        t.create("/s/q", b"", CreateMode::Ephemeral(quick)).unwrap();
        t.create("/s/l", b"", CreateMode::Ephemeral(slow)).unwrap();
        let later = Instant::now() + Duration::from_secs(10);
        assert_eq!(t.expire_sessions_at(later), vec![quick]);
        assert_eq!(t.children("/s", None).unwrap(), ["l"]);
        assert_eq!(
            t.touch_session(quick),
            Err(StoreError::SessionExpired(quick))
        );
        t.touch_session(slow).unwrap();
    }

    #[test]
    fn data_watches_fire_once() {
        let mut t = tree_with(&["/a"]);
        let (w, rx) = watcher();
        t.get_data("/a", Some(w.clone())).unwrap();
        t.get_data("/a", Some(w)).unwrap(); // same watcher twice: one event
        t.set_data("/a", b"1", None).unwrap();
        t.set_data("/a", b"2", None).unwrap();
        let events: Vec<WatchedEvent> = rx.try_iter().collect();
        assert_eq!(
            events,
            [WatchedEvent {
                kind: EventKind::NodeDataChanged,
                path: "/a".into()
            }]
        );
    }

    #[test]
    fn exists_watch_sees_creation_and_child_watch_sees_children() {
        let mut t = tree_with(&["/p"]);
        let (w, rx) = watcher();
        assert_eq!(t.exists("/p/c", Some(w.clone())).unwrap(), None);
        t.children("/p", Some(w)).unwrap();
        t.create("/p/c", b"", CreateMode::Persistent).unwrap();
        t.create("/p/d", b"", CreateMode::Persistent).unwrap();
        let kinds: Vec<(EventKind, String)> = rx.try_iter().map(|e| (e.kind, e.path)).collect();
        assert_eq!(
            kinds,
            [
                (EventKind::NodeCreated, "/p/c".to_string()),
                (EventKind::NodeChildrenChanged, "/p".to_string())
            ]
        );
    }

    #[test]
    fn deleting_fires_deleted_on_the_node_and_children_changed_on_the_parent() {
        let mut t = tree_with(&["/p", "/p/c"]);
        let (w, rx) = watcher();
        let (pw, prx) = watcher();
        t.get_data("/p/c", Some(w.clone())).unwrap();
        t.children("/p/c", Some(w)).unwrap();
        t.children("/p", Some(pw)).unwrap();
        t.delete("/p/c", None).unwrap();
        let kinds: Vec<EventKind> = rx.try_iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EventKind::NodeDeleted, EventKind::NodeDeleted]);
        let kinds: Vec<EventKind> = prx.try_iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EventKind::NodeChildrenChanged]);
    }

    #[test]
    fn session_end_fires_watches_on_its_ephemeral_nodes() {
        let store = SharedTree::new();
        store.create_all("/supervisors").unwrap();
        let s = store.open_session(Duration::from_secs(30));
        store
            .create("/supervisors/a", b"{}", CreateMode::Ephemeral(s))
            .unwrap();
        let (w, rx) = watcher();
        store.children("/supervisors", Some(w)).unwrap();
        let waiter = std::thread::spawn(move || rx.recv_timeout(Duration::from_secs(5)));
        store.close_session(s).unwrap();
        let event = waiter.join().unwrap().unwrap();
        assert_eq!(event.kind, EventKind::NodeChildrenChanged);
        assert_eq!(
            store.children("/supervisors", None).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn store_helpers_make_parents_overwrite_and_delete_subtrees() {
        let store = SharedTree::new();
        store.put("/x/y/z", b"1").unwrap();
        store.put("/x/y/z", b"2").unwrap();
        assert_eq!(store.get_data("/x/y/z", None).unwrap().0, b"2");
        store.create_all("/x/y/w").unwrap();
        store.delete_all("/x").unwrap();
        assert_eq!(store.children("/", None).unwrap(), Vec::<String>::new());
        store.delete_all("/x").unwrap();
    }

    #[test]
    fn snapshot_round_trips_through_a_file() {
        let store = SharedTree::new();
        store
            .put("/storm/storms/t-1-5", br#"{"name":"t"}"#)
            .unwrap();
        store.put("/storm/raw", &[0xff, 0x00, 0x01]).unwrap();
        let s = store.open_session(Duration::from_secs(30));
        store
            .create("/storm/sup", b"{}", CreateMode::Ephemeral(s))
            .unwrap();
        store
            .set_data("/storm/storms/t-1-5", br#"{"name":"u"}"#, Some(0))
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tree.json");
        store.lock().save(&file).unwrap();
        let back = Tree::load(&file).unwrap();
        assert_eq!(back.nodes, store.lock().nodes);
        assert_eq!(back.snapshot(), store.lock().snapshot());
        // The restored session still owns its node, and new sessions get fresh ids.
        let restored = SharedTree::from_tree(back);
        let fresh = restored.open_session(Duration::from_secs(1));
        assert!(fresh > s);
        restored.close_session(s).unwrap();
        assert_eq!(restored.exists("/storm/sup", None).unwrap(), None);
    }

    #[test]
    fn a_snapshot_with_an_orphan_is_refused() {
        let mut snap = Tree::new().snapshot();
        let mut orphan = snap.nodes[0].clone();
        orphan.path = "/a/b".into();
        snap.nodes.push(orphan);
        let err = Tree::from_snapshot(snap).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("inconsistent snapshot: /a/b comes before its parent /a")
        );
    }

    #[test]
    fn loading_a_file_that_is_not_a_snapshot_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.json");
        std::fs::write(&file, "[1,2]").unwrap();
        let msg = Tree::load(&file)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            msg.contains("bad.json is not a coordination-tree snapshot"),
            "{msg}"
        );
    }
}
