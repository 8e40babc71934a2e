//! Tests of the tree's ZooKeeper semantics: paths, versions, sequential and ephemeral nodes,
//! sessions and watches.

use super::*;
use crate::cluster::coordination::znode_store::watcher;

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

mod invariants {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Create(String, bool, bool),
        Set(String, Option<i32>),
        Delete(String, Option<i32>),
        CloseSession,
    }

    fn path() -> impl Strategy<Value = String> {
        proptest::collection::vec(prop_oneof!["a", "b", "c"], 1..4)
            .prop_map(|parts| format!("/{}", parts.join("/")))
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (path(), any::<bool>(), any::<bool>()).prop_map(|(p, e, s)| Op::Create(p, e, s)),
            (path(), proptest::option::of(0i32..3)).prop_map(|(p, v)| Op::Set(p, v)),
            (path(), proptest::option::of(0i32..3)).prop_map(|(p, v)| Op::Delete(p, v)),
            Just(Op::CloseSession),
        ]
    }

    proptest! {
        /// Whatever happens, the tree stays a tree (no orphans, children lists and counts
        /// match, no children under ephemeral nodes, owners are open sessions) and its
        /// snapshot restores it exactly.
        #[test]
        fn any_operations_keep_a_consistent_tree(ops in proptest::collection::vec(op(), 1..40)) {
            let mut t = Tree::new();
            let mut session = t.open_session(Duration::from_secs(60));
            for op in ops {
                let _ = match op {
                    Op::Create(p, eph, seq) => {
                        let mode = match (eph, seq) {
                            (false, false) => CreateMode::Persistent,
                            (false, true) => CreateMode::PersistentSequential,
                            (true, false) => CreateMode::Ephemeral(session),
                            (true, true) => CreateMode::EphemeralSequential(session),
                        };
                        t.create(&p, b"d", mode).map(|_| ())
                    }
                    Op::Set(p, v) => t.set_data(&p, b"x", v).map(|_| ()),
                    Op::Delete(p, v) => t.delete(&p, v),
                    Op::CloseSession => {
                        let r = t.close_session(session);
                        session = t.open_session(Duration::from_secs(60));
                        r
                    }
                };
            }
            for (path, node) in &t.nodes {
                if let Some(parent) = parent_path(path) {
                    let p = &t.nodes[parent];
                    let name = path.rsplit('/').next().unwrap_or_default();
                    prop_assert!(p.children.contains(name), "{} not listed in {}", path, parent);
                    prop_assert!(p.stat.ephemeral_owner.is_none(), "child under ephemeral {}", parent);
                }
                prop_assert_eq!(node.stat.num_children as usize, node.children.len());
                for kid in &node.children {
                    let kid_path = crate::cluster::coordination::znode_store::child_path(path, kid);
                    prop_assert!(t.nodes.contains_key(&kid_path));
                }
                if let Some(owner) = node.stat.ephemeral_owner {
                    prop_assert!(t.sessions.contains_key(&owner));
                }
            }
            let back = Tree::from_snapshot(t.snapshot()).unwrap();
            prop_assert_eq!(&back.nodes, &t.nodes);
        }
    }
}

/// The trait's helpers (`put`, `create_all`, `delete_all`), through the shared tree.
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
