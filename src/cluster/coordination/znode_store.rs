//! The coordination-store interface: what nimbus, supervisors and workers may ask of the tree
//! that holds the cluster state. It mirrors ZooKeeper's client API (create / get / set / delete /
//! children / exists, versions, sequential and ephemeral nodes, one-shot watches, sessions), so
//! the in-memory tree (`tree.rs`) and a real ZooKeeper ensemble (`zookeeper.rs`) both implement it.

use crossbeam_channel::{Receiver, Sender};
use std::time::Duration;

/// A client session (ZooKeeper's session id). Ephemeral nodes belong to one and vanish with it.
pub(crate) type SessionId = u64;

/// ZooKeeper's error codes, as far as the operations here can produce them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("no node {0}")]
    NoNode(String),
    #[error("node {0} already exists")]
    NodeExists(String),
    #[error("bad version for {path}: expected {expected}, the node is at {actual}")]
    BadVersion {
        path: String,
        expected: i32,
        actual: i32,
    },
    #[error("node {0} has children")]
    NotEmpty(String),
    #[error("node {0} is ephemeral and cannot have children")]
    NoChildrenForEphemerals(String),
    #[error("invalid path {path:?}: {reason}")]
    BadPath { path: String, reason: &'static str },
    #[error("session {0} is not open (expired or closed)")]
    SessionExpired(SessionId),
    #[error("{0}")]
    BadArguments(String),
    /// The store could not be reached or did not answer in time (a ZooKeeper ensemble).
    #[error("coordination store unavailable: {0}")]
    Unavailable(String),
}

/// How a node is created (ZooKeeper's `CreateMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    Persistent,
    /// The name gets a 10-digit suffix from the parent's child counter.
    PersistentSequential,
    /// Removed when the owning session ends.
    Ephemeral(SessionId),
    EphemeralSequential(SessionId),
}

impl CreateMode {
    pub(crate) fn owner(self) -> Option<SessionId> {
        match self {
            CreateMode::Ephemeral(s) | CreateMode::EphemeralSequential(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential | CreateMode::EphemeralSequential(_)
        )
    }
}

/// A node's metadata (ZooKeeper's `Stat`, without the wall-clock times).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stat {
    /// Transaction that created the node.
    pub(crate) czxid: u64,
    /// Transaction that last changed the data.
    pub(crate) mzxid: u64,
    /// Data version: 0 at creation, +1 on every set.
    pub version: i32,
    /// Children version: +1 on every child created or deleted.
    pub cversion: i32,
    /// The session owning an ephemeral node.
    pub ephemeral_owner: Option<SessionId>,
    pub num_children: u32,
    pub data_length: u32,
}

/// What a watch reports (ZooKeeper's `WatchedEvent` types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    NodeCreated,
    NodeDeleted,
    NodeDataChanged,
    NodeChildrenChanged,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    pub kind: EventKind,
    pub path: String,
}

/// Where a watch delivers its (single) event. Registering the same watcher twice on one node
/// and kind delivers one event, as ZooKeeper does.
pub(crate) type Watcher = Sender<WatchedEvent>;

/// A new watcher and the receiver its events arrive on.
pub fn watcher() -> (Watcher, Receiver<WatchedEvent>) {
    crossbeam_channel::unbounded()
}

/// The ZooKeeper-shaped API over the cluster state. Every method is atomic.
pub trait CoordinationStore: Send + Sync {
    /// Create a node; returns the path created (with the suffix for sequential nodes).
    /// The parent must exist and must not be ephemeral.
    fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String, StoreError>;

    /// Data and stat of a node; with a watcher, one `NodeDataChanged` or `NodeDeleted` follows.
    fn get_data(&self, path: &str, watch: Option<Watcher>) -> Result<(Vec<u8>, Stat), StoreError>;

    /// Replace the data; with `Some(version)` only if the node is at that version.
    fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat, StoreError>;

    /// Delete a node without children; with `Some(version)` only if at that version.
    fn delete(&self, path: &str, version: Option<i32>) -> Result<(), StoreError>;

    /// The stat of a node, or `None`; the watcher fires on creation, change or deletion.
    fn exists(&self, path: &str, watch: Option<Watcher>) -> Result<Option<Stat>, StoreError>;

    /// Names (not paths) of the children, sorted; the watcher fires on a child created or
    /// deleted (`NodeChildrenChanged`) or on the node's deletion.
    fn children(&self, path: &str, watch: Option<Watcher>) -> Result<Vec<String>, StoreError>;

    /// Open a session that expires when not touched for `timeout`.
    fn open_session(&self, timeout: Duration) -> SessionId;

    /// Keep a session alive (a ZooKeeper client's ping).
    fn touch_session(&self, session: SessionId) -> Result<(), StoreError>;

    /// End a session: its ephemeral nodes are deleted (and their watches fire).
    fn close_session(&self, session: SessionId) -> Result<(), StoreError>;

    /// Expire every session not touched within its timeout; returns the ones expired.
    fn expire_sessions(&self) -> Vec<SessionId>;

    /// Create a node and any missing ancestors, all persistent with empty data; existing
    /// nodes are left as they are (Storm's `mkdirs`).
    fn create_all(&self, path: &str) -> Result<(), StoreError> {
        let mut prefix = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            prefix.push('/');
            prefix.push_str(part);
            match self.create(&prefix, &[], CreateMode::Persistent) {
                Ok(_) | Err(StoreError::NodeExists(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Create or overwrite a persistent node's data, creating missing ancestors (as Storm's
    /// own coordination code sets data).
    fn put(&self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        match self.set_data(path, data, None) {
            Ok(_) => Ok(()),
            Err(StoreError::NoNode(_)) => {
                if let Some((parent, _)) = path.rsplit_once('/') {
                    if !parent.is_empty() {
                        self.create_all(parent)?;
                    }
                }
                match self.create(path, data, CreateMode::Persistent) {
                    Ok(_) => Ok(()),
                    // Created by someone else in between: overwrite it.
                    Err(StoreError::NodeExists(_)) => self.set_data(path, data, None).map(|_| ()),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Delete a node and everything under it (Storm's `delete-recursive`); a missing node is
    /// not an error.
    fn delete_all(&self, path: &str) -> Result<(), StoreError> {
        let kids = match self.children(path, None) {
            Ok(k) => k,
            Err(StoreError::NoNode(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        for kid in kids {
            self.delete_all(&child_path(path, &kid))?;
        }
        match self.delete(path, None) {
            Ok(()) | Err(StoreError::NoNode(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The path of a child.
pub(crate) fn child_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// The parent of a path (`None` for the root).
pub(crate) fn parent_path(path: &str) -> Option<&str> {
    match path.rfind('/') {
        Some(0) if path.len() > 1 => Some("/"),
        Some(0) | None => None,
        Some(i) => Some(&path[..i]),
    }
}

/// Check a path as ZooKeeper does: absolute, no empty, `.` or `..` parts, no trailing slash.
pub(crate) fn validate_path(path: &str) -> Result<(), StoreError> {
    let bad = |reason| {
        Err(StoreError::BadPath {
            path: path.to_string(),
            reason,
        })
    };
    if !path.starts_with('/') {
        return bad("must start with '/'");
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return bad("must not end with '/'");
    }
    for part in path[1..].split('/') {
        if part.is_empty() {
            return bad("empty node name");
        }
        if part == "." || part == ".." {
            return bad("relative names are not allowed");
        }
        if part.chars().any(char::is_control) {
            return bad("control characters are not allowed");
        }
    }
    Ok(())
}

/// A shared store is a store (so `ClusterState<Arc<dyn CoordinationStore>>` works).
impl<T: CoordinationStore + ?Sized> CoordinationStore for std::sync::Arc<T> {
    fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String, StoreError> {
        (**self).create(path, data, mode)
    }
    fn get_data(&self, path: &str, watch: Option<Watcher>) -> Result<(Vec<u8>, Stat), StoreError> {
        (**self).get_data(path, watch)
    }
    fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat, StoreError> {
        (**self).set_data(path, data, version)
    }
    fn delete(&self, path: &str, version: Option<i32>) -> Result<(), StoreError> {
        (**self).delete(path, version)
    }
    fn exists(&self, path: &str, watch: Option<Watcher>) -> Result<Option<Stat>, StoreError> {
        (**self).exists(path, watch)
    }
    fn children(&self, path: &str, watch: Option<Watcher>) -> Result<Vec<String>, StoreError> {
        (**self).children(path, watch)
    }
    fn open_session(&self, timeout: Duration) -> SessionId {
        (**self).open_session(timeout)
    }
    fn touch_session(&self, session: SessionId) -> Result<(), StoreError> {
        (**self).touch_session(session)
    }
    fn close_session(&self, session: SessionId) -> Result<(), StoreError> {
        (**self).close_session(session)
    }
    fn expire_sessions(&self) -> Vec<SessionId> {
        (**self).expire_sessions()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_of_paths() {
        assert_eq!(parent_path("/a/b"), Some("/a"));
        assert_eq!(parent_path("/a"), Some("/"));
        assert_eq!(parent_path("/"), None);
        assert_eq!(child_path("/", "a"), "/a");
    }
}
