//! Worker log files (what Storm's workers write through log4j and its logviewer serves): a
//! supervisor keeps each worker's standard output and error, its multilang children's
//! included, in `DIR/workers-artifacts/TOPOLOGY-ID/PORT/worker.log` (Storm's layout; DIR is
//! `storm.log.dir`), rotated by size into `worker.log.1` … `worker.log.N`, and removes a
//! topology's folder once no worker of it runs here and nothing was written there for
//! `logviewer.cleanup.age.mins`. Nimbus's UI and `storm logs` read them by their relative
//! name (`TOPOLOGY-ID/PORT/worker.log`), which is checked so that no other file can be named.

use crate::config::Config;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The folder under `storm.log.dir` that holds the workers' logs (Storm's name).
const ARTIFACTS: &str = "workers-artifacts";
/// The current log of a worker.
pub(crate) const WORKER_LOG: &str = "worker.log";
/// How much of a log `/api/v1/log` and `storm logs` show by default: its last 50 KiB, as
/// Storm's logviewer does.
const DEFAULT_LENGTH: u64 = 51_200;
/// The most one read returns.
const MAX_LENGTH: u64 = 16 * 1024 * 1024;

/// Where and how a supervisor keeps its workers' logs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LogSettings {
    /// `storm.log.dir/workers-artifacts`, absolute.
    pub(crate) dir: PathBuf,
    /// A log past this size is rotated.
    max_bytes: u64,
    /// Rotated files kept (`worker.log.1` … `worker.log.N`); 0 keeps only the current file,
    /// truncated at the size.
    keep: usize,
    /// A topology's folder is removed this long after its last write, once no worker of it
    /// runs here.
    cleanup_age: Duration,
    /// How often old folders are looked for.
    pub(crate) cleanup_every: Duration,
}

impl LogSettings {
    /// From `storm.log.dir` (null: `storm.local.dir`/logs, `storm-local/logs` by default),
    /// `worker.log.max.bytes`, `worker.log.keep.files`, `logviewer.cleanup.age.mins` and
    /// `logviewer.cleanup.interval.secs`.
    pub(crate) fn from_config(config: &Config) -> anyhow::Result<LogSettings> {
        let dir = artifacts_dir(config);
        std::fs::create_dir_all(&dir)
            .map_err(|e| anyhow::anyhow!("storm.log.dir: cannot create {}: {e}", dir.display()))?;
        let dir = std::fs::canonicalize(&dir)
            .map_err(|e| anyhow::anyhow!("storm.log.dir: {}: {e}", dir.display()))?;
        let number = |key: &str, default: u64| config.get_u64(key).unwrap_or(default);
        Ok(LogSettings {
            dir,
            max_bytes: number("worker.log.max.bytes", 100 << 20).max(1),
            keep: usize::try_from(number("worker.log.keep.files", 9)).unwrap_or(usize::MAX),
            cleanup_age: Duration::from_secs(number("logviewer.cleanup.age.mins", 10_080) * 60),
            cleanup_every: Duration::from_secs(number("logviewer.cleanup.interval.secs", 10_800))
                .max(Duration::from_secs(1)),
        })
    }

    /// `workers-artifacts/ID/PORT`.
    fn worker_dir(&self, id: &str, port: u16) -> PathBuf {
        self.dir.join(id).join(port.to_string())
    }

    /// Send a worker's standard output and error (and its children's) to its log: one pipe
    /// for both, copied by a thread named after the slot until every writer has closed it.
    pub(crate) fn capture(
        &self,
        id: &str,
        port: u16,
        command: &mut std::process::Command,
    ) -> anyhow::Result<()> {
        let dir = self.worker_dir(id, port);
        std::fs::create_dir_all(&dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        let mut log = RotatingLog::open(dir.join(WORKER_LOG), self.max_bytes, self.keep)?;
        let (mut reader, writer) = pipe()?;
        command.stdout(writer.try_clone()?).stderr(writer);
        std::thread::Builder::new()
            .name(format!("worker-log-{port}"))
            .spawn(move || {
                let mut buf = vec![0u8; 64 << 10];
                loop {
                    match reader.read(&mut buf) {
                        Ok(0) => return,
                        Ok(n) => {
                            if let Err(e) = log.write(&buf[..n]) {
                                tracing::warn!("worker log {}: {e}", log.path.display());
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => return,
                    }
                }
            })?;
        Ok(())
    }

    /// Remove the topology folders nothing was written to for [`LogSettings::cleanup_age`]
    /// at `now`, but those of `running` topologies. Returns the ids removed.
    pub(crate) fn sweep(&self, now: SystemTime, running: &[String]) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut removed = Vec::new();
        for entry in entries.flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            if running.contains(&id) || !entry.path().is_dir() {
                continue;
            }
            let last = newest_write(&entry.path());
            if last.is_some_and(|t| now.duration_since(t).unwrap_or_default() >= self.cleanup_age)
                && std::fs::remove_dir_all(entry.path()).is_ok()
            {
                removed.push(id);
            }
        }
        removed
    }
}

/// A pipe: its read end, and its write end (both closed on exec, so that only the child
/// given the write end as its output holds it and the reader sees the end when it exits).
fn pipe() -> std::io::Result<(std::fs::File, std::fs::File)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe(2) to fill.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created by pipe(2) and are owned by nothing else.
    let (reader, writer) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    };
    for fd in fds {
        // SAFETY: fcntl on a descriptor this function owns (held by the Files above).
        if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok((reader, writer))
}

/// `storm.log.dir/workers-artifacts` as `config` says (null: `storm.local.dir`/logs,
/// `storm-local/logs` by default), as given (not created, not made absolute).
pub(crate) fn artifacts_dir(config: &Config) -> PathBuf {
    let base = match config.get("storm.log.dir").and_then(|v| v.as_str()) {
        Some(d) => PathBuf::from(d),
        None => {
            let local = config
                .get("storm.local.dir")
                .and_then(|v| v.as_str())
                .unwrap_or("storm-local");
            Path::new(local).join("logs")
        }
    };
    base.join(ARTIFACTS)
}

/// The latest modification time of the files under `dir`.
fn newest_write(dir: &Path) -> Option<SystemTime> {
    let mut newest = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let t = if entry.path().is_dir() {
            newest_write(&entry.path())
        } else {
            entry.metadata().and_then(|m| m.modified()).ok()
        };
        newest = newest.max(t);
    }
    newest
}

/// A log file rotated by size: past `max_bytes`, `worker.log.(k)` becomes `worker.log.(k+1)`
/// (the oldest beyond `keep` removed) and `worker.log` becomes `worker.log.1`.
struct RotatingLog {
    path: PathBuf,
    file: std::fs::File,
    written: u64,
    max_bytes: u64,
    keep: usize,
}

impl RotatingLog {
    /// Open `path` to append (a restarted worker goes on in the same file).
    fn open(path: PathBuf, max_bytes: u64, keep: usize) -> anyhow::Result<RotatingLog> {
        let file = append(&path)?;
        let written = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(RotatingLog {
            path,
            file,
            written,
            max_bytes,
            keep,
        })
    }

    /// Write `bytes`, rotating first when they would take the file past its size (a chunk
    /// larger than the size goes whole into a fresh file).
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.written > 0 && self.written + bytes.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        self.file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn numbered(&self, n: usize) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        if self.keep == 0 {
            self.file.set_len(0)?;
            self.file.seek(SeekFrom::Start(0))?;
            self.written = 0;
            return Ok(());
        }
        let _ = std::fs::remove_file(self.numbered(self.keep));
        for n in (1..self.keep).rev() {
            let from = self.numbered(n);
            if from.exists() {
                std::fs::rename(&from, self.numbered(n + 1))?;
            }
        }
        std::fs::rename(&self.path, self.numbered(1))?;
        self.file = append(&self.path).map_err(std::io::Error::other)?;
        self.written = 0;
        Ok(())
    }
}

fn append(path: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", path.display()))
}

/// Why a log cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LogError {
    /// The name is not a worker log's (`TOPOLOGY-ID/PORT/worker.log[.N]`).
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    NotFound(String),
}

/// The relative path a log's name stands for, when it names a worker log and nothing else:
/// `TOPOLOGY-ID/PORT/worker.log` or a rotated `worker.log.N`.
pub(crate) fn log_path(file: &str) -> Result<PathBuf, LogError> {
    let refuse = || {
        LogError::Refused(format!(
            "`{file}` is not a worker log: name one as TOPOLOGY-ID/PORT/worker.log (or a \
             rotated worker.log.N)"
        ))
    };
    let parts: Vec<&str> = file.split('/').collect();
    let [id, port, name] = parts.as_slice() else {
        return Err(refuse());
    };
    let id_ok = !id.is_empty()
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let port_ok = port.parse::<u16>().is_ok_and(|p| p > 0) && !port.starts_with('0');
    let name_ok = *name == WORKER_LOG
        || name
            .strip_prefix("worker.log.")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if id_ok && port_ok && name_ok {
        Ok(Path::new(id).join(port).join(name))
    } else {
        Err(refuse())
    }
}

/// A piece of a log: `length` bytes from `start`, of a file of `size` bytes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct LogChunk {
    start: u64,
    length: u64,
    size: u64,
    /// The bytes as text (invalid UTF-8 replaced).
    pub(crate) text: String,
}

/// Read `length` bytes (default [`DEFAULT_LENGTH`], at most [`MAX_LENGTH`]) from `start`
/// (default: the last `length` bytes) of `path`.
pub(crate) fn read_chunk(
    path: &Path,
    start: Option<u64>,
    length: Option<u64>,
) -> std::io::Result<LogChunk> {
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let length = length.unwrap_or(DEFAULT_LENGTH).min(MAX_LENGTH);
    let start = start.unwrap_or(size.saturating_sub(length)).min(size);
    let length = length.min(size - start);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::with_capacity(usize::try_from(length).unwrap_or(0));
    file.take(length).read_to_end(&mut bytes)?;
    Ok(LogChunk {
        start,
        length: bytes.len() as u64,
        size,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_worker_logs_can_be_named() {
        assert_eq!(
            log_path("wc-1-17/6700/worker.log").ok(),
            Some(PathBuf::from("wc-1-17/6700/worker.log"))
        );
        assert!(log_path("wc-1-17/6700/worker.log.3").is_ok());
        for bad in [
            "../6700/worker.log",
            "wc/../../etc/passwd",
            "/etc/passwd",
            "wc-1/6700/../worker.log",
            "wc-1/6700/worker.yaml",
            "wc-1/x/worker.log",
            "wc-1/06700/worker.log",
            "wc-1/6700/worker.log.",
            "wc-1/6700/worker.log.1/x",
            "../../x/6700/worker.log",
            "./6700/worker.log",
            "",
        ] {
            assert!(matches!(log_path(bad), Err(LogError::Refused(_))), "{bad}");
        }
    }

    #[test]
    fn a_log_rotates_by_size_and_keeps_n_files() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("worker.log");
        let mut log = RotatingLog::open(path.clone(), 10, 2).unwrap_or_else(|e| panic!("{e}"));
        for line in [
            "aaaa\n", "bbbb\n", "cccc\n", "dddd\n", "eeee\n", "ffff\n", "gg\n",
        ] {
            log.write(line.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        }
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        assert_eq!(read(&path), "gg\n");
        assert_eq!(read(&dir.path().join("worker.log.1")), "eeee\nffff\n");
        assert_eq!(read(&dir.path().join("worker.log.2")), "cccc\ndddd\n");
        assert!(!dir.path().join("worker.log.3").exists());
    }

    #[test]
    fn a_chunk_is_the_tail_by_default_and_bounded_by_the_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("worker.log");
        std::fs::write(&path, "0123456789").unwrap_or_else(|e| panic!("{e}"));
        let tail = read_chunk(&path, None, Some(4)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (tail.start, tail.length, tail.text.as_str()),
            (6, 4, "6789")
        );
        let mid = read_chunk(&path, Some(2), Some(3)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mid.text, "234");
        let past = read_chunk(&path, Some(50), Some(3)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((past.start, past.length, past.size), (10, 0, 10));
    }

    #[test]
    fn old_folders_of_topologies_not_running_are_swept() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let settings = LogSettings {
            dir: dir.path().to_path_buf(),
            max_bytes: 100,
            keep: 1,
            cleanup_age: Duration::from_secs(60),
            cleanup_every: Duration::from_secs(1),
        };
        for id in ["old-1-1", "live-2-2"] {
            let w = settings.worker_dir(id, 6700);
            std::fs::create_dir_all(&w).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(w.join(WORKER_LOG), "x").unwrap_or_else(|e| panic!("{e}"));
        }
        let now = SystemTime::now();
        assert!(settings.sweep(now, &[]).is_empty(), "nothing is old yet");
        let later = now + Duration::from_secs(120);
        assert_eq!(settings.sweep(later, &["live-2-2".into()]), ["old-1-1"]);
        assert!(settings.worker_dir("live-2-2", 6700).exists());
    }
}
