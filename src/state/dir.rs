//! A state dir (`--state-dir`, `topology.state.dir`): the commit record and one store per
//! worker (`worker-N.redb`), and what `storm state ls|dump|clear` show of them.

use std::path::{Path, PathBuf};

/// The commit record's file in `dir`.
pub fn commits_path(dir: &Path) -> PathBuf {
    dir.join("checkpoint.redb")
}

/// Worker `worker`'s store in `dir`.
pub fn worker_path(dir: &Path, worker: usize) -> PathBuf {
    dir.join(format!("worker-{worker}.redb"))
}
