//! A state dir (`--state-dir`, `topology.state.dir`): the commit record and one store per
//! worker (`worker-N.redb`), and what `storm state ls|dump|clear` show of them.

use super::commits::Committed;
use super::{Commits, Store, TaskKey};
use crate::tuple::Value;
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};

pub use super::paths::worker_path;
use super::paths::{commits_path, COMMITS_FILE};

/// A worker's store file found in a state dir.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WorkerFile {
    pub(crate) worker: usize,
    path: PathBuf,
}

/// What a state dir holds, as a resume would restore it.
#[derive(Debug)]
pub(crate) struct Contents {
    /// The topology's name and parallelisms, as its first run recorded them.
    pub(crate) shape: Option<super::commits::Shape>,
    pub(crate) committed: Option<Committed>,
    /// Every file of the dir with its size in bytes, by name.
    pub(crate) files: Vec<(String, u64)>,
    pub(crate) workers: Vec<WorkerContents>,
}

#[derive(Debug)]
pub(crate) struct WorkerContents {
    pub(crate) file: WorkerFile,
    pub(crate) tasks: Vec<TaskContents>,
}

/// One task's committed state.
#[derive(Debug)]
pub(crate) struct TaskContents {
    pub(crate) task: TaskKey,
    pub(crate) entries: Vec<(Value, Value)>,
    pub(crate) position: Option<Value>,
}

/// Check that `dir` is a state dir: it exists and holds the commit record.
pub(crate) fn check(dir: &Path) -> anyhow::Result<()> {
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
pub(crate) fn worker_files(dir: &Path) -> anyhow::Result<Vec<WorkerFile>> {
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
pub(crate) fn read(dir: &Path) -> anyhow::Result<Contents> {
    check(dir)?;
    let commits = Commits::open_marked(dir)?;
    let committed = commits.committed()?;
    let shape = commits.shape()?;
    drop(commits);
    let txid = committed.as_ref().map_or(0, |c| c.txid);
    let mut workers = Vec::new();
    for file in worker_files(dir)? {
        let store = Store::open_marked(&file.path)?;
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

/// Remove the state dir `dir` and all it holds: refused unless it holds a commit record or a
/// worker store (damaged or not), and while a run holds one of them open (the database lock
/// that also keeps `storm state ls` out). The files stay locked by this process until they are
/// gone, so a run starting meanwhile cannot take them.
pub(crate) fn clear(dir: &Path) -> anyhow::Result<()> {
    let workers = worker_files(dir)?;
    let commits = commits_path(dir);
    if !commits.is_file() && workers.is_empty() {
        check(dir)?;
    }
    let mut held = Vec::new();
    for path in std::iter::once(commits).chain(workers.into_iter().map(|w| w.path)) {
        if let Some(db) = lock_unless_held(&path)? {
            held.push(db);
        }
    }
    let removed =
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()));
    drop(held);
    removed
}

/// Take the lock of the database file `path` (`None`: missing, or too damaged to open, which
/// is no run's); an error when a run holds it.
fn lock_unless_held(path: &Path) -> anyhow::Result<Option<redb::Database>> {
    if !path.is_file() {
        return Ok(None);
    }
    let opened = super::guard::caught(&path.display().to_string(), || {
        Ok(redb::Database::open(path))
    });
    match opened {
        Ok(Ok(db)) => Ok(Some(db)),
        Ok(Err(redb::DatabaseError::DatabaseAlreadyOpen)) => bail!(
            "{} is in use by a run (it holds {}); stop it first",
            path.parent().unwrap_or(path).display(),
            path.display()
        ),
        Ok(Err(_)) | Err(_) => Ok(None),
    }
}

/// What a state dir must hold before its stores are opened, so a damaged or partly deleted
/// one is refused rather than started over: no empty file, and a commit record whenever a
/// worker store is there. `storm run --fresh` or `storm state clear` start over instead.
pub(crate) fn check_parts(dir: &Path) -> anyhow::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let commits = commits_path(dir);
    let workers = worker_files(dir)?;
    let fix = format!(
        "`storm run --fresh` or `storm state clear {}` start over",
        dir.display()
    );
    for path in std::iter::once(&commits).chain(workers.iter().map(|w| &w.path)) {
        if let Ok(meta) = std::fs::metadata(path) {
            anyhow::ensure!(
                meta.len() > 0,
                "{} is empty: the state dir is damaged ({fix})",
                path.display()
            );
        }
    }
    anyhow::ensure!(
        commits.is_file() || workers.is_empty(),
        "{} holds worker stores but no commit record {COMMITS_FILE}: the state dir is damaged \
         ({fix})",
        dir.display()
    );
    Ok(())
}

/// After the commit record of `dir` is open: every worker store the committed checkpoint
/// needs (as the record counts them) is there; checked before the stores are opened, which
/// would make a missing one anew and empty.
pub(crate) fn check_needed_stores(dir: &Path, commits: &Commits) -> anyhow::Result<()> {
    let Some(committed) = commits.committed()? else {
        return Ok(());
    };
    let Some(workers) = commits.workers()? else {
        return Ok(());
    };
    for w in 0..workers as usize {
        let path = worker_path(dir, w);
        anyhow::ensure!(
            path.is_file(),
            "checkpoint {} in {} needs {}, which is missing: the state dir is damaged \
             (`storm run --fresh` or `storm state clear {}` start over)",
            committed.txid,
            commits_path(dir).display(),
            path.display(),
            dir.display()
        );
    }
    Ok(())
}

/// A state dir just made: its commit record and worker stores, still open.
pub(crate) struct Made {
    pub(crate) commits: Commits,
    pub(crate) stores: Vec<Store>,
}

/// Make the state dir `dir` if it does not exist yet, whole or not at all: its commit record
/// (with `init`'s records) and `workers` empty worker stores are written in a temporary dir
/// beside it, which is then renamed to `dir`. A crash meanwhile leaves at most the temporary
/// dir (a hidden `.NAME.new-PID`), never a half-made state dir. What it made is handed back
/// open (an open file follows its rename): closing and opening again would cost a run a few
/// synced writes per file for nothing.
pub(crate) fn create_atomically(
    dir: &Path,
    workers: usize,
    init: impl FnOnce(&Commits) -> anyhow::Result<()>,
) -> anyhow::Result<Option<Made>> {
    if dir.exists() {
        return Ok(None);
    }
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    let parent = parent.unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot make the state dir's parent {}", parent.display()))?;
    let name = dir
        .file_name()
        .map_or_else(|| "state".to_string(), |n| n.to_string_lossy().into_owned());
    let tmp = parent.join(format!(".{name}.new-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp)
        .with_context(|| format!("cannot make the state dir {}", tmp.display()))?;
    // The worker stores are made on threads of their own meanwhile: each file's making is
    // mostly waiting for its synced writes.
    let built = std::thread::scope(|scope| {
        let makers: Vec<_> = (0..workers)
            .map(|w| {
                let path = worker_path(&tmp, w);
                scope.spawn(move || Store::open(&path))
            })
            .collect();
        let commits = Commits::open(&tmp).and_then(|c| init(&c).map(|()| c));
        let stores = makers
            .into_iter()
            .map(|m| {
                m.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("making a worker store crashed")))
            })
            .collect::<anyhow::Result<Vec<Store>>>();
        Ok::<_, anyhow::Error>((commits?, stores?))
    });
    let (commits, stores) = match built {
        Ok(made) => made,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    if let Err(e) = std::fs::rename(&tmp, dir) {
        drop((commits, stores));
        let _ = std::fs::remove_dir_all(&tmp);
        // Another run made it meanwhile: use theirs.
        if !dir.exists() {
            return Err(e).with_context(|| format!("cannot make the state dir {}", dir.display()));
        }
        return Ok(None);
    }
    let stores = stores
        .into_iter()
        .enumerate()
        .map(|(w, s)| s.moved_to(&worker_path(dir, w)))
        .collect();
    Ok(Some(Made {
        commits: commits.moved_to(dir),
        stores,
    }))
}
