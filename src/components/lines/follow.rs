//! A followed file (`file(follow=true)`): read as it grows, polled at a short bounded interval
//! (portable: no inotify), reopened by name after a rotation. A rename-and-create is seen as
//! the name pointing at another file (device and inode differ): the old file is read to its
//! end first, then the new one from byte 0. A copy-truncate is seen as the file being shorter
//! than what was read: it is read again from byte 0. A file gone from its name is waited for,
//! with a warning at most once a minute. `FollowJob` is the spout's reader thread for it.

use super::{open_at, read_lines, BufReader, ChunkResult, Input, LineBuilder};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the reader waits at the end of the file before looking again.
const POLL: Duration = Duration::from_millis(100);

/// How often a file missing from its name is warned about.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// Which file a name points at: (device, inode). Zero on systems without them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl FileId {
    pub fn of(meta: &std::fs::Metadata) -> FileId {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            FileId {
                dev: meta.dev(),
                ino: meta.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            FileId::default()
        }
    }
}

/// The file beside `path` (in its folder) that is the file `id`: where a rotation renamed it.
pub fn find_rotated(path: &Path, id: FileId) -> Option<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && FileId::of(&m) == id))
}

/// Why a followed file's reading stopped: the caller reopens the name from byte 0, or ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The spout is gone: the run is ending.
    Closed,
    /// The name now points at another file (rename-and-create); the old one was read to its end.
    Rotated,
    /// The file is shorter than what was read (copy-truncate).
    Truncated,
}

/// A followed file as a `Read` that waits at its end: `read` gives 0 bytes only when reading
/// should stop, and `stop` then says why.
pub struct Follower {
    path: PathBuf,
    file: std::fs::File,
    id: FileId,
    /// Bytes of this file read so far (where the next read starts).
    at: u64,
    closed: Arc<AtomicBool>,
    stop: Option<Stop>,
    last_warning: Option<Instant>,
}

impl Follower {
    /// `path` opened and read from byte `start`; `closed` is set when the spout goes.
    pub fn open(path: &Path, start: u64, closed: Arc<AtomicBool>) -> Result<Follower, String> {
        let mut file = std::fs::File::open(path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let meta = file
            .metadata()
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        file.seek(SeekFrom::Start(start))
            .map_err(|e| format!("cannot seek {} to byte {start}: {e}", path.display()))?;
        Ok(Follower {
            path: path.to_path_buf(),
            file,
            id: FileId::of(&meta),
            at: start,
            closed,
            stop: None,
            last_warning: None,
        })
    }

    /// The file being read.
    pub fn id(&self) -> FileId {
        self.id
    }

    /// Why the last `read` gave 0 bytes.
    pub fn stop(&self) -> Option<Stop> {
        self.stop
    }

    /// At the end of the file: whether to stop reading it (and why), looking at the name.
    fn look(&mut self) -> Option<Stop> {
        if self.closed.load(Ordering::Relaxed) {
            return Some(Stop::Closed);
        }
        match std::fs::metadata(&self.path) {
            Ok(meta) if FileId::of(&meta) != self.id => Some(Stop::Rotated),
            Ok(meta) if meta.len() < self.at => Some(Stop::Truncated),
            Ok(_) => None,
            Err(e) => {
                let due = self.last_warning.is_none_or(|t| t.elapsed() >= WARN_EVERY);
                if due {
                    tracing::warn!(
                        "{}: {e}; waiting for it to come back (this is said once a minute)",
                        self.path.display()
                    );
                    self.last_warning = Some(Instant::now());
                }
                None
            }
        }
    }
}

impl Read for Follower {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let n = self.file.read(buf)?;
            if n > 0 || buf.is_empty() {
                self.at += n as u64;
                return Ok(n);
            }
            if let Some(stop) = self.look() {
                // A rotated file may have grown between the read and the look: read it out.
                let n = match stop {
                    Stop::Rotated => self.file.read(buf)?,
                    _ => 0,
                };
                if n > 0 {
                    self.at += n as u64;
                    return Ok(n);
                }
                self.stop = Some(stop);
                return Ok(0);
            }
            std::thread::sleep(POLL);
        }
    }
}

/// A followed file's reader thread: what it reads and where it starts.
pub(super) struct FollowJob {
    pub(super) path: PathBuf,
    pub(super) start: u64,
    /// The file a restored position's offset is in: another file under the name now means
    /// it was rotated while the run was stopped, and the new one is read from byte 0.
    pub(super) expect: Option<FileId>,
    pub(super) closed: Arc<AtomicBool>,
    pub(super) cut: Option<usize>,
}

impl FollowJob {
    /// Read the file, and each file its name points at after a rotation, until the spout goes.
    pub(super) fn run(
        self,
        tx: &crossbeam_channel::Sender<ChunkResult>,
        read: &AtomicU64,
        invalid: &AtomicU64,
    ) {
        let mut start = self.start;
        let mut first = true;
        let mut warned = None;
        loop {
            let mut source = match Follower::open(&self.path, start, self.closed.clone()) {
                Ok(s) => s,
                Err(e) if first => {
                    let _ = tx.send(Err(e));
                    return;
                }
                Err(e) => {
                    // Between a rename and the create, the name is missing for a moment.
                    let due = warned.is_none_or(|t: Instant| t.elapsed() >= WARN_EVERY);
                    if due {
                        tracing::warn!("{e}; retrying (this is said once a minute)");
                        warned = Some(Instant::now());
                    }
                    std::thread::sleep(POLL);
                    if self.closed.load(Ordering::Relaxed) {
                        return;
                    }
                    continue;
                }
            };
            let len = std::fs::metadata(&self.path).map_or(start, |m| m.len());
            let moved = first && self.expect.is_some_and(|id| id != source.id());
            if moved || (first && start > len) {
                first = false;
                let old = self.expect.filter(|_| moved).and_then(|id| {
                    let old = find_rotated(&self.path, id)?;
                    Some((old, id))
                });
                match old {
                    // Rotated while stopped, and the old file is beside it: its tail first.
                    Some((old, id)) => {
                        if !self.read_tail(&old, start, id, tx, read, invalid) {
                            return;
                        }
                    }
                    None => tracing::warn!(
                        "{}: not the file the saved position was in (rotated or truncated \
                         while stopped, the old one not found beside it): reading it from its \
                         start; unread lines of the old one are lost",
                        self.path.display()
                    ),
                }
                start = 0;
                read.store(0, Ordering::Relaxed);
                continue;
            }
            first = false;
            let id = Some(source.id());
            let reader = BufReader::with_capacity(256 * 1024, &mut source);
            read_lines(
                reader,
                start,
                self.cut,
                LineBuilder::new(tx, id, invalid),
                read,
            );
            match source.stop() {
                Some(Stop::Rotated) | Some(Stop::Truncated) => {
                    start = 0;
                    read.store(0, Ordering::Relaxed);
                }
                // Closed, or the spout stopped taking chunks.
                _ => return,
            }
        }
    }
}

impl FollowJob {
    /// Read the rest of `old` (the file a saved position was in, renamed) from `start` to its
    /// end; false when the spout is gone or it cannot be read (then said as an error).
    fn read_tail(
        &self,
        old: &std::path::Path,
        start: u64,
        id: FileId,
        tx: &crossbeam_channel::Sender<ChunkResult>,
        read: &AtomicU64,
        invalid: &AtomicU64,
    ) -> bool {
        match open_at(&Input::File(old.to_path_buf()), start) {
            Ok(source) => {
                tracing::info!(
                    "{}: was rotated while stopped: reading the rest of {} first",
                    self.path.display(),
                    old.display()
                );
                read_lines(
                    source,
                    start,
                    self.cut,
                    LineBuilder::new(tx, Some(id), invalid),
                    read,
                );
                !self.closed.load(Ordering::Relaxed)
            }
            Err(e) => {
                let _ = tx.send(Err(e));
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn append(path: &Path, text: &str) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .expect("open for append");
        f.write_all(text.as_bytes()).expect("append");
    }

    #[test]
    fn a_truncated_file_stops_reading_as_truncated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.log");
        append(&path, "one\ntwo\n");
        let mut f = Follower::open(&path, 0, Arc::default()).expect("open");
        let mut text = String::new();
        let mut buf = [0u8; 64];
        let n = f.read(&mut buf).expect("read");
        text.push_str(std::str::from_utf8(&buf[..n]).expect("utf8"));
        assert_eq!(text, "one\ntwo\n");
        std::fs::write(&path, "x\n").expect("truncate");
        assert_eq!(f.read(&mut buf).expect("read"), 0);
        assert_eq!(f.stop(), Some(Stop::Truncated));
    }

    #[test]
    fn a_renamed_file_is_read_to_its_end_then_stops_as_rotated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.log");
        append(&path, "one\n");
        let mut f = Follower::open(&path, 0, Arc::default()).expect("open");
        let mut buf = [0u8; 64];
        assert_eq!(f.read(&mut buf).expect("read"), 4);
        let old = dir.path().join("a.log.1");
        std::fs::rename(&path, &old).expect("rename");
        append(&old, "tail\n");
        append(&path, "new\n");
        let n = f.read(&mut buf).expect("read");
        assert_eq!(&buf[..n], b"tail\n");
        assert_eq!(f.read(&mut buf).expect("read"), 0);
        assert_eq!(f.stop(), Some(Stop::Rotated));
    }

    #[test]
    fn a_closed_spout_stops_the_wait() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.log");
        append(&path, "");
        let closed = Arc::new(AtomicBool::new(true));
        let mut f = Follower::open(&path, 0, closed).expect("open");
        let mut buf = [0u8; 8];
        assert_eq!(f.read(&mut buf).expect("read"), 0);
        assert_eq!(f.stop(), Some(Stop::Closed));
    }
}
