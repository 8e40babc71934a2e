//! The `file` sink with state (`stateful: true`): part files are written under a staging dir
//! and published (renamed to their names) once the checkpoint after they closed commits, in
//! the manner of Flink's FileSink (in-progress → pending → finished). A checkpoint saves each
//! open part's name and synced length, and the closed parts not yet published; a resumed run
//! publishes those, cuts each open part back to its saved length and goes on writing it, and
//! removes whatever else the staging dir holds (written after the checkpoint: the replayed
//! inputs write it again). So a published file holds each record once, whole.

use super::part::sync_dir;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

/// A closed part waiting for its checkpoint's commit: where it is, where it goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pending {
    pub(crate) temp: PathBuf,
    pub(crate) target: PathBuf,
}

/// An open part as a checkpoint saves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SavedPart {
    pub(crate) bucket: String,
    pub(crate) temp: PathBuf,
    pub(crate) target: PathBuf,
    pub(crate) len: u64,
    pub(crate) records: u64,
    pub(crate) bytes: u64,
}

/// What a checkpoint saves of the sink.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Saved {
    pub(crate) seq: u64,
    pub(crate) parts: Vec<SavedPart>,
    pub(crate) pending: Vec<Pending>,
    pub(crate) next: BTreeMap<String, u64>,
}

/// The stateful side of the sink.
#[derive(Debug, Default)]
pub(crate) struct Txn {
    /// Names the staging files.
    pub(crate) seq: u64,
    /// Parts closed since the last save.
    pub(crate) closed: Vec<Pending>,
    /// Parts set aside by the last save, until its checkpoint's marker.
    pub(crate) prepared: Option<Vec<Pending>>,
    /// Each checkpoint's parts (its txid), oldest first, until it commits.
    pub(crate) ready: VecDeque<(u64, Vec<Pending>)>,
    pub(crate) last_marker: Option<u64>,
    /// `finish` ran (the input ended) and a save came after it.
    pub(crate) finished: bool,
    pub(crate) saved_after_finish: bool,
    /// The staging dir was cleared of what no checkpoint refers to.
    pub(crate) cleaned: bool,
}

impl Txn {
    /// Every part not yet published, in order.
    pub(crate) fn unpublished(&self) -> Vec<Pending> {
        let mut out: Vec<Pending> = self
            .ready
            .iter()
            .flat_map(|r| r.1.iter().cloned())
            .collect();
        out.extend(self.prepared.iter().flatten().cloned());
        out
    }

    /// The parts of the checkpoints committed by now (`committed`: the last one).
    pub(crate) fn due(&mut self, committed: u64) -> Vec<Pending> {
        let mut out = Vec::new();
        while self.ready.front().is_some_and(|r| r.0 <= committed) {
            if let Some((_, parts)) = self.ready.pop_front() {
                out.extend(parts);
            }
        }
        out
    }
}

/// Publish `p`: rename it to its name (made with its directories), synced. Done already when
/// only the name exists; a file already there under the name is kept, and `p` gets the next
/// free part name instead (said in a warning).
pub(crate) fn publish(p: &Pending) -> std::io::Result<PathBuf> {
    if !p.temp.exists() {
        if !p.target.exists() {
            tracing::warn!(
                "file sink: {} (for {}) is gone: its records are not published",
                p.temp.display(),
                p.target.display()
            );
        }
        return Ok(p.target.clone());
    }
    let mut target = p.target.clone();
    let mut n = 1;
    while target.exists() {
        target = super::names::part_name(&p.target, None, n);
        n += 1;
    }
    if target != p.target {
        tracing::warn!(
            "file sink: {} exists already (not written by this sink); publishing as {}",
            p.target.display(),
            target.display()
        );
    }
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display()))
    })?;
    std::fs::rename(&p.temp, &target).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "cannot publish {} as {}: {e}",
                p.temp.display(),
                target.display()
            ),
        )
    })?;
    sync_dir(dir)?;
    Ok(target)
}

/// Remove every file of `staging` but those in `keep`.
pub(crate) fn clear_staging(staging: &Path, keep: &[&Path]) -> std::io::Result<usize> {
    let mut removed = 0;
    let entries = match std::fs::read_dir(staging) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => {
            return Err(std::io::Error::new(
                e.kind(),
                format!("cannot list {}: {e}", staging.display()),
            ))
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_file() && !keep.contains(&path.as_path()) {
            std::fs::remove_file(&path).map_err(|e| {
                std::io::Error::new(e.kind(), format!("cannot remove {}: {e}", path.display()))
            })?;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_renames_once_and_never_overwrites() {
        let dir = tempfile::tempdir().expect("tempdir");
        let temp = dir.path().join("t1");
        std::fs::write(&temp, "a\n").expect("write");
        let p = Pending {
            temp: temp.clone(),
            target: dir.path().join("out/x.log"),
        };
        assert_eq!(publish(&p).ok(), Some(p.target.clone()));
        // Again (a resumed run): done already.
        assert_eq!(publish(&p).ok(), Some(p.target.clone()));
        std::fs::write(&temp, "b\n").expect("write");
        let other = publish(&p).expect("publish");
        assert_eq!(other, dir.path().join("out/x.1.log"));
        assert_eq!(std::fs::read_to_string(&p.target).ok(), Some("a\n".into()));
    }

    #[test]
    fn committed_checkpoints_are_due_in_order() {
        let p = |s: &str| Pending {
            temp: s.into(),
            target: s.into(),
        };
        let mut t = Txn::default();
        t.ready.push_back((3, vec![p("a")]));
        t.ready.push_back((5, vec![p("b")]));
        t.prepared = Some(vec![p("c")]);
        assert_eq!(t.unpublished().len(), 3);
        assert_eq!(t.due(4), vec![p("a")]);
        assert_eq!(t.due(4), vec![]);
        assert_eq!(t.due(9), vec![p("b")]);
    }
}
