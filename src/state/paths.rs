//! Where a state dir keeps its files: the commit record and one store per worker.

use std::path::{Path, PathBuf};

/// The commit record's file name: a dir holding one is a state dir.
pub(crate) const COMMITS_FILE: &str = "checkpoint.redb";

/// The commit record's file in `dir`.
pub(crate) fn commits_path(dir: &Path) -> PathBuf {
    dir.join(COMMITS_FILE)
}

/// Worker `worker`'s store in `dir`.
pub fn worker_path(dir: &Path, worker: usize) -> PathBuf {
    dir.join(format!("worker-{worker}.redb"))
}

/// The dir of the scratch files keyed state spills to (see `state::spill`).
pub(crate) fn spill_dir(dir: &Path) -> PathBuf {
    dir.join("spill")
}
