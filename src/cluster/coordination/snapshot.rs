//! Saving the coordination tree to a JSON file and restoring it, so a restarted nimbus carries
//! on where it stopped (ZooKeeper's snapshot files, in a readable form). Sessions are saved
//! with their timeouts and restored as freshly touched: a supervisor that does not come back
//! loses its ephemeral nodes one timeout after the restart. Watches are not saved.

use crate::cluster::coordination::tree::{Node, Session, Tree};
use crate::cluster::coordination::znode_store::{parent_path, validate_path, SessionId, Stat};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TreeSnapshot {
    format: u32,
    zxid: u64,
    next_session: SessionId,
    sessions: Vec<SessionSnapshot>,
    /// Parents before children.
    nodes: Vec<NodeSnapshot>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SessionSnapshot {
    id: SessionId,
    timeout_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct NodeSnapshot {
    path: String,
    /// The data when it is UTF-8 text (always, for the JSON Storm writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<String>,
    /// The data when it is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data_bytes: Option<Vec<u8>>,
    stat: Stat,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum SnapshotError {
    #[error("cannot read or write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a coordination-tree snapshot: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("inconsistent snapshot: {0}")]
    Invalid(String),
}

impl Tree {
    pub(crate) fn snapshot(&self) -> TreeSnapshot {
        let mut sessions: Vec<SessionSnapshot> = self
            .sessions
            .iter()
            .map(|(id, s)| SessionSnapshot {
                id: *id,
                timeout_ms: u64::try_from(s.timeout.as_millis()).unwrap_or(u64::MAX),
            })
            .collect();
        sessions.sort_by_key(|s| s.id);
        // BTreeMap order puts every parent before its children ("/a" < "/a/b").
        let nodes = self
            .nodes
            .iter()
            .map(|(path, n)| {
                let (data, data_bytes) = match String::from_utf8(n.data.clone()) {
                    Ok(text) if text.is_empty() => (None, None),
                    Ok(text) => (Some(text), None),
                    Err(e) => (None, Some(e.into_bytes())),
                };
                NodeSnapshot {
                    path: path.clone(),
                    data,
                    data_bytes,
                    stat: n.stat.clone(),
                }
            })
            .collect();
        TreeSnapshot {
            format: FORMAT,
            zxid: self.zxid,
            next_session: self.next_session,
            sessions,
            nodes,
        }
    }

    /// Rebuild a tree, checking that it is one: valid paths, no orphans, no children under
    /// ephemeral nodes, ephemeral owners among the sessions.
    pub(crate) fn from_snapshot(snap: TreeSnapshot) -> Result<Tree, SnapshotError> {
        let invalid = |m: String| Err(SnapshotError::Invalid(m));
        if snap.format != FORMAT {
            return invalid(format!(
                "unknown format {} (expected {FORMAT})",
                snap.format
            ));
        }
        let now = Instant::now();
        let sessions: HashMap<SessionId, Session> = snap
            .sessions
            .iter()
            .map(|s| {
                (
                    s.id,
                    Session {
                        timeout: Duration::from_millis(s.timeout_ms),
                        last_seen: now,
                    },
                )
            })
            .collect();
        let mut nodes: BTreeMap<String, Node> = BTreeMap::new();
        for n in snap.nodes {
            if let Err(e) = validate_path(&n.path) {
                return invalid(e.to_string());
            }
            if nodes.contains_key(&n.path) {
                return invalid(format!("node {} appears twice", n.path));
            }
            if let Some(owner) = n.stat.ephemeral_owner {
                if !sessions.contains_key(&owner) {
                    return invalid(format!("{} belongs to unknown session {owner}", n.path));
                }
            }
            if let Some(parent) = parent_path(&n.path) {
                let name = n.path.rsplit('/').next().unwrap_or_default().to_string();
                let Some(p) = nodes.get_mut(parent) else {
                    return invalid(format!("{} comes before its parent {parent}", n.path));
                };
                if p.stat.ephemeral_owner.is_some() {
                    return invalid(format!("ephemeral {parent} has a child"));
                }
                p.children.insert(name);
            }
            let data = match (n.data, n.data_bytes) {
                (Some(text), None) => text.into_bytes(),
                (None, Some(bytes)) => bytes,
                (None, None) => Vec::new(),
                (Some(_), Some(_)) => return invalid(format!("{} has two data fields", n.path)),
            };
            nodes.insert(
                n.path,
                Node {
                    data,
                    stat: n.stat,
                    children: BTreeSet::new(),
                },
            );
        }
        if !nodes.contains_key("/") {
            return invalid("the root / is missing".into());
        }
        for n in nodes.values_mut() {
            n.stat.num_children = u32::try_from(n.children.len()).unwrap_or(u32::MAX);
        }
        let next_session = snap
            .next_session
            .max(sessions.keys().max().map_or(1, |m| m + 1));
        Ok(Tree::from_parts(nodes, sessions, next_session, snap.zxid))
    }

    /// Write the snapshot to `path` (through a temporary file and a rename, so a crash never
    /// leaves half a file).
    pub(crate) fn save(&self, path: &Path) -> Result<(), SnapshotError> {
        let io = |source| SnapshotError::Io {
            path: path.to_path_buf(),
            source,
        };
        let text = serde_json::to_string_pretty(&self.snapshot())
            .map_err(|e| io(std::io::Error::other(e)))?;
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    pub(crate) fn load(path: &Path) -> Result<Tree, SnapshotError> {
        let text = std::fs::read_to_string(path).map_err(|source| SnapshotError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let snap: TreeSnapshot =
            serde_json::from_str(&text).map_err(|source| SnapshotError::Parse {
                path: path.to_path_buf(),
                source,
            })?;
        Tree::from_snapshot(snap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::coordination::tree::SharedTree;
    use crate::cluster::coordination::znode_store::{CoordinationStore, CreateMode};

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
