//! A state dir (`--state-dir`, `topology.state.dir`): the commit record and one store per
//! worker (`worker-N.redb`), and what `storm state ls|dump|clear` show of them.

use super::commits::Committed;
use super::{Commits, Store, TaskKey};
use crate::tuple::Value;
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};

pub use super::paths::{commits_path, worker_path, COMMITS_FILE};

/// A worker's store file found in a state dir.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerFile {
    pub worker: usize,
    pub path: PathBuf,
}

/// What a state dir holds, as a resume would restore it.
#[derive(Debug)]
pub struct Contents {
    /// The topology's name and parallelisms, as its first run recorded them.
    pub shape: Option<super::commits::Shape>,
    pub committed: Option<Committed>,
    /// Every file of the dir with its size in bytes, by name.
    pub files: Vec<(String, u64)>,
    pub workers: Vec<WorkerContents>,
}

#[derive(Debug)]
pub struct WorkerContents {
    pub file: WorkerFile,
    pub tasks: Vec<TaskContents>,
}

/// One task's committed state.
#[derive(Debug)]
pub struct TaskContents {
    pub task: TaskKey,
    pub entries: Vec<(Value, Value)>,
    pub position: Option<Value>,
}

/// Check that `dir` is a state dir: it exists and holds the commit record.
pub fn check(dir: &Path) -> anyhow::Result<()> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => bail!("{} is not a directory", dir.display()),
        Err(e) => bail!("cannot read {}: {e}", dir.display()),
    }
    if !commits_path(dir).is_file() {
        bail!(
            "{} is not a state dir: it holds no {}",
            dir.display(),
            COMMITS_FILE
        );
    }
    Ok(())
}

/// The worker stores in `dir` (`worker-N.redb`), by worker number.
pub fn worker_files(dir: &Path) -> anyhow::Result<Vec<WorkerFile>> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
        let name = entry.file_name();
        let worker = name.to_str().and_then(|n| {
            n.strip_prefix("worker-")?
                .strip_suffix(".redb")?
                .parse()
                .ok()
        });
        if let Some(worker) = worker {
            files.push(WorkerFile {
                worker,
                path: entry.path(),
            });
        }
    }
    files.sort_by_key(|f| f.worker);
    Ok(files)
}

/// Read what `dir` holds. Each store is first brought to the committed checkpoint (folded to
/// it, later prepared checkpoints discarded), as a resume would.
pub fn read(dir: &Path) -> anyhow::Result<Contents> {
    check(dir)?;
    let commits = Commits::open(dir)?;
    let committed = commits.committed()?;
    let shape = commits.shape()?;
    drop(commits);
    let txid = committed.as_ref().map_or(0, |c| c.txid);
    let mut workers = Vec::new();
    for file in worker_files(dir)? {
        let store = Store::open(&file.path)?;
        store.fold(txid)?;
        store.discard_after(txid)?;
        let mut tasks = Vec::new();
        for task in store.tasks()? {
            let entries = store.entries(&task)?;
            let position = store.position(&task)?;
            tasks.push(TaskContents {
                task,
                entries,
                position,
            });
        }
        workers.push(WorkerContents { file, tasks });
    }
    Ok(Contents {
        shape,
        committed,
        files: file_sizes(dir)?,
        workers,
    })
}

/// Each file in `dir` with its size, by name.
fn file_sizes(dir: &Path) -> anyhow::Result<Vec<(String, u64)>> {
    let mut files = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
        let meta = entry
            .metadata()
            .with_context(|| format!("cannot read {}", entry.path().display()))?;
        if meta.is_file() {
            files.push((entry.file_name().to_string_lossy().into_owned(), meta.len()));
        }
    }
    files.sort();
    Ok(files)
}

/// Remove the state dir `dir` and all it holds (refused unless it is a state dir).
pub fn clear(dir: &Path) -> anyhow::Result<()> {
    check(dir)?;
    std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))
}
