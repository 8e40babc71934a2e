//! A followed file (`file(follow=true)`): read as it grows, polled at a short bounded interval
//! (portable: no inotify), reopened by name after a rotation. A rename-and-create is seen as
//! the name pointing at another file (device and inode differ): the old file is read to its
//! end first, then the new one from byte 0. A copy-truncate is seen as the file being shorter
//! than what was read: it is read again from byte 0. A file gone from its name is waited for,
//! with a warning at most once a minute. `FollowJob` is the spout's reader thread for it.
//! Each file read is also identified by its content, as Vector's `checksum` fingerprinter
//! does: a checksum of its first [`PRINT_BYTES`] bytes, noted once the file has them (in a
//! [`Prints`] the spout reads for its positions), so a position names its file by device,
//! inode and fingerprint: a reused inode is not taken for the old file, and the old file is
//! found by its content when its inode does not find it.

use super::fingerprint::print_of;
use super::fingerprint::PRINT_BYTES;
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub(crate) struct FileId {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
}

impl FileId {
    pub(crate) fn of(meta: &std::fs::Metadata) -> FileId {
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

/// The fingerprints of the files a reader has read, by identity, as it learns them.
pub(crate) type Prints = Arc<std::sync::Mutex<std::collections::HashMap<FileId, u64>>>;

/// A file as a position names it: device and inode, and its fingerprint when it had one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Ident {
    pub(crate) id: FileId,
    pub(crate) print: Option<u64>,
}

impl Ident {
    /// Whether the file `id` with fingerprint `print` is this one: the same device and inode,
    /// and not another content: a file whose first bytes differ, or that is now shorter than
    /// a fingerprint while this one had one, is a new file (an inode reused, or emptied).
    pub(crate) fn is(&self, id: FileId, print: Option<u64>) -> bool {
        self.id == id
            && match (self.print, print) {
                (Some(a), b) => Some(a) == b,
                (None, _) => true,
            }
    }
}

/// The file beside `path` (in its folder) that is the file `old`: where a rotation renamed it
/// (same device, inode and fingerprint), else, when `old` had a fingerprint, a file with it
/// (moved by a copy). Not the file the name points at now.
fn find_rotated(path: &Path, old: Ident) -> Option<(PathBuf, FileId)> {
    let current = std::fs::metadata(path).ok().map(|m| FileId::of(&m));
    let files: Vec<(PathBuf, FileId)> = std::fs::read_dir(folder_of(path))
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter_map(|p| {
            let m = std::fs::metadata(&p).ok().filter(|m| m.is_file())?;
            Some((p, FileId::of(&m))).filter(|(_, id)| Some(*id) != current)
        })
        .collect();
    let print = |p: &Path| std::fs::File::open(p).ok().and_then(|f| print_of(&f));
    let by_inode = files
        .iter()
        .find(|(p, id)| *id == old.id && old.is(*id, print(p)));
    let by_print = || {
        let want = old.print?;
        files.iter().find(|(p, _)| print(p) == Some(want))
    };
    by_inode.or_else(by_print).cloned()
}

/// Files beside `path` that rotations made since the file `after` was last written and that
/// were never read: named as `path` plus a suffix (`app.log.1`, `app.log-2026…`), last written
/// at or after `after` (file times tick coarsely), not compressed archives, not one of `known` and not the file the
/// name points at now. Oldest first: the order the rotations made them.
fn unread_rotations(
    path: &Path,
    after: std::time::SystemTime,
    known: &[FileId],
) -> Vec<(PathBuf, FileId)> {
    let (dir, Some(name)) = (folder_of(path), path.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    let current = std::fs::metadata(path).ok().map(|m| FileId::of(&m));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(std::time::SystemTime, PathBuf, FileId)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let file = e.file_name();
            let file = file.to_str()?;
            let rotated = file.len() > name.len() && file.starts_with(name);
            let archive = [".gz", ".zst", ".bz2", ".xz", ".zip"]
                .iter()
                .any(|ext| file.ends_with(ext));
            if !rotated || archive {
                return None;
            }
            let meta = std::fs::metadata(e.path()).ok().filter(|m| m.is_file())?;
            let id = FileId::of(&meta);
            let written = meta.modified().ok()?;
            let fresh = written >= after && !known.contains(&id) && Some(id) != current;
            fresh.then(|| (written, e.path(), id))
        })
        .collect();
    found.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    found.into_iter().map(|(_, p, id)| (p, id)).collect()
}

/// The folder `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Why a followed file's reading stopped: the caller reopens the name from byte 0, or ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The spout is gone: the run is ending.
    Closed,
    /// The name now points at another file (rename-and-create); the old one was read to its end.
    Rotated,
    /// The file is shorter than what was read (copy-truncate).
    Truncated,
}

/// A followed file as a `Read` that waits at its end: `read` gives 0 bytes only when reading
/// should stop, and `stop` then says why.
struct Follower {
    path: PathBuf,
    file: std::fs::File,
    id: FileId,
    /// Bytes of this file read so far (where the next read starts).
    at: u64,
    closed: Arc<AtomicBool>,
    stop: Option<Stop>,
    last_warning: Option<Instant>,
    /// Its fingerprint once it has [`PRINT_BYTES`] bytes, and where it is published.
    print: Option<u64>,
    prints: Option<Prints>,
}

impl Follower {
    /// `path` opened and read from byte `start`; `closed` is set when the spout goes.
    fn open(path: &Path, start: u64, closed: Arc<AtomicBool>) -> Result<Follower, String> {
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
            print: None,
            prints: None,
        })
    }

    /// Publish the file's fingerprint into `prints` as soon as it has one.
    fn with_prints(mut self, prints: Option<Prints>) -> Follower {
        self.prints = prints;
        self.note_print();
        self
    }

    /// Its fingerprint, if it has one yet.
    fn print(&mut self) -> Option<u64> {
        self.note_print();
        self.print
    }

    /// Learn the fingerprint (once the file is long enough) and publish it.
    fn note_print(&mut self) {
        if self.print.is_some() {
            return;
        }
        self.print = print_of(&self.file);
        if let (Some(print), Some(prints)) = (self.print, &self.prints) {
            let mut map = prints.lock().unwrap_or_else(|e| e.into_inner());
            map.insert(self.id, print);
        }
    }

    /// The file being read.
    fn id(&self) -> FileId {
        self.id
    }

    /// When the file being read was last written (None where the system cannot say).
    fn modified(&self) -> Option<std::time::SystemTime> {
        self.file.metadata().and_then(|m| m.modified()).ok()
    }

    /// Why the last `read` gave 0 bytes.
    fn stop(&self) -> Option<Stop> {
        self.stop
    }

    /// At the end of the file: whether to stop reading it (and why), looking at the name.
    fn look(&mut self) -> Option<Stop> {
        if self.closed.load(Ordering::Relaxed) {
            return Some(Stop::Closed);
        }
        if self.print.is_none() && self.at >= PRINT_BYTES as u64 {
            self.note_print();
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
    /// The file a restored position's offset is in (or the file under the name when the
    /// spout started): another file under the name now (another inode, or the same inode with
    /// another fingerprint) means it was rotated while the run was stopped, and the new one is
    /// read from byte 0 after the old one's tail.
    pub(super) expect: Option<Ident>,
    /// Where the fingerprints of the files read are published (for the spout's positions).
    pub(super) prints: Option<Prints>,
    pub(super) closed: Arc<AtomicBool>,
    pub(super) cut: Option<usize>,
    /// `Some` when lines are numbered (`file_line`): the lines before `start` when known
    /// (a restored position's count), else counted when the file is opened.
    pub(super) numbering: Option<Option<u64>>,
    /// A glob's matched path, stamped on each chunk (`file_path`).
    pub(super) shown: Option<Arc<str>>,
    /// A glob's files read by any of its readers: each file read here is added, so the
    /// glob's watcher does not follow it again under another name.
    pub(super) seen: Option<Seen>,
}

/// The files a glob's readers have read, by identity.
pub(super) type Seen = Arc<std::sync::Mutex<std::collections::HashSet<FileId>>>;

/// Where a followed file's reader sends its chunks and counts what it read.
pub(super) struct Sink<'a> {
    pub(super) tx: &'a crossbeam_channel::Sender<ChunkResult>,
    pub(super) read: &'a AtomicU64,
    pub(super) invalid: &'a AtomicU64,
}

impl FollowJob {
    /// The chunk builder for the file `id` (noted as seen).
    fn builder<'a>(
        &self,
        tx: &'a crossbeam_channel::Sender<ChunkResult>,
        id: FileId,
        invalid: &'a AtomicU64,
    ) -> LineBuilder<'a> {
        if let Some(seen) = &self.seen {
            seen.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
        }
        let mut lines = LineBuilder::new(tx, Some(id), invalid);
        lines.path = self.shown.clone();
        lines
    }

    /// How many lines come before `start` when lines are numbered. A restored count is of the
    /// first file read (`first_file`) at the restored offset only; otherwise they are counted.
    fn numbering_at(&self, start: u64, first_file: bool) -> Result<Option<u64>, String> {
        let restored = self
            .numbering
            .flatten()
            .filter(|_| first_file && start == self.start);
        Ok(match (self.numbering, restored) {
            (None, _) => None,
            (Some(_), Some(n)) => Some(n),
            (Some(_), None) => Some(super::lines_before(&self.path, start)?),
        })
    }

    /// The file could not be opened after a rotation: between a rename and the create, the name
    /// is missing for a moment. Warn (once a minute), wait a poll; false when the spout went.
    fn wait_to_retry(&self, e: &str, warned: &mut Option<Instant>) -> bool {
        let due = warned.is_none_or(|t: Instant| t.elapsed() >= WARN_EVERY);
        if due {
            tracing::warn!("{e}; retrying (this is said once a minute)");
            *warned = Some(Instant::now());
        }
        std::thread::sleep(POLL);
        !self.closed.load(Ordering::Relaxed)
    }

    /// Read the file, and each file its name points at after a rotation, until the spout goes.
    pub(super) fn run(
        self,
        tx: &crossbeam_channel::Sender<ChunkResult>,
        read: &AtomicU64,
        invalid: &AtomicU64,
    ) {
        let sink = Sink { tx, read, invalid };
        let mut start = self.start;
        let mut first = true;
        let mut warned = None;
        // Every file read so far: a rotated file found beside the name is read only once.
        let mut known = Vec::new();
        loop {
            let opened = Follower::open(&self.path, start, self.closed.clone());
            let mut source = match opened {
                Ok(s) => s.with_prints(self.prints.clone()),
                // A file a glob matched that is gone before it was opened (deleted by a
                // log rotation): nothing to read, and the glob's other files go on.
                Err(e) if first && self.seen.is_some() && !self.path.exists() => {
                    tracing::warn!("{e}: gone before it was read; left out");
                    return;
                }
                Err(e) if first => {
                    let _ = tx.send(Err(e));
                    return;
                }
                Err(e) if self.wait_to_retry(&e, &mut warned) => continue,
                Err(_) => return,
            };
            let len = std::fs::metadata(&self.path).map_or(start, |m| m.len());
            let (id, print) = (source.id(), source.print());
            let moved = first && self.expect.is_some_and(|e| !e.is(id, print));
            if moved || (first && start > len) {
                first = false;
                if moved && !self.resume_moved(start, &mut known, &sink) {
                    return;
                }
                start = 0;
                read.store(0, Ordering::Relaxed);
                continue;
            }
            first = false;
            let id = source.id();
            let mut lines = self.builder(tx, id, invalid);
            lines.numbering = match self.numbering_at(start, known.is_empty()) {
                Ok(n) => n,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            known.push(id);
            let reader = BufReader::with_capacity(256 * 1024, &mut source);
            read_lines(reader, start, self.cut, lines, read);
            match source.stop() {
                Some(Stop::Rotated) => {
                    let after = source.modified();
                    if !self.catch_up(after, &mut known, &sink) {
                        return;
                    }
                    start = 0;
                    read.store(0, Ordering::Relaxed);
                }
                Some(Stop::Truncated) => {
                    start = 0;
                    read.store(0, Ordering::Relaxed);
                }
                // Closed, or the spout stopped taking chunks.
                _ => return,
            }
        }
    }

    /// A restored position is in a file the name no longer points at (rotated while the run
    /// was stopped): the old file's unread tail, then every rotation made after it; false when
    /// the spout is gone or a file cannot be read.
    fn resume_moved(&self, start: u64, known: &mut Vec<FileId>, sink: &Sink) -> bool {
        let old = self.expect.and_then(|e| find_rotated(&self.path, e));
        let Some((old, id)) = old else {
            tracing::warn!(
                "{}: not the file the saved position was in (rotated or truncated while \
                 stopped, the old one not found beside it): reading it from its start; unread \
                 lines of the old one are lost",
                self.path.display()
            );
            return true;
        };
        tracing::info!(
            "{}: was rotated while stopped: reading the rest of {} first",
            self.path.display(),
            old.display()
        );
        known.push(id);
        let after = std::fs::metadata(&old).and_then(|m| m.modified()).ok();
        self.read_whole(&old, start, id, sink) && self.catch_up(after, known, sink)
    }

    /// After a rename-and-create: the files rotations made after the one just finished (last
    /// written at `after`) that were never read, read whole, oldest first. Two rotations
    /// between two looks at the name (or while the run was stopped) lose nothing this way.
    fn catch_up(
        &self,
        after: Option<std::time::SystemTime>,
        known: &mut Vec<FileId>,
        sink: &Sink,
    ) -> bool {
        let Some(after) = after else {
            return !self.closed.load(Ordering::Relaxed);
        };
        for (file, id) in unread_rotations(&self.path, after, known) {
            tracing::info!(
                "{}: reading {}, rotated before it was read",
                self.path.display(),
                file.display()
            );
            known.push(id);
            if !self.read_whole(&file, 0, id, sink) {
                return false;
            }
        }
        !self.closed.load(Ordering::Relaxed)
    }

    /// Read `file` (the file `id`, no longer under the name) from `start` to its end; false
    /// when the spout is gone or it cannot be read (then said as an error).
    fn read_whole(&self, file: &Path, start: u64, id: FileId, sink: &Sink) -> bool {
        match open_at(&Input::File(file.to_path_buf()), start) {
            Ok(source) => {
                let print = std::fs::File::open(file).ok().and_then(|f| print_of(&f));
                if let (Some(print), Some(prints)) = (print, &self.prints) {
                    let mut map = prints.lock().unwrap_or_else(|e| e.into_inner());
                    map.insert(id, print);
                }
                let mut lines = self.builder(sink.tx, id, sink.invalid);
                // The old file of a restored position: its count goes on.
                lines.numbering = match self.numbering {
                    None => None,
                    Some(Some(n)) if start > 0 => Some(n),
                    Some(_) => match super::lines_before(file, start) {
                        Ok(n) => Some(n),
                        Err(e) => {
                            let _ = sink.tx.send(Err(e));
                            return false;
                        }
                    },
                };
                read_lines(source, start, self.cut, lines, sink.read);
                !self.closed.load(Ordering::Relaxed)
            }
            Err(e) => {
                let _ = sink.tx.send(Err(e));
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
    fn a_file_is_its_inode_and_its_fingerprint() {
        let id = FileId { dev: 1, ino: 7 };
        let known = Ident {
            id,
            print: Some(42),
        };
        assert!(known.is(id, Some(42)));
        assert!(!known.is(id, Some(43)), "the inode reused by other content");
        assert!(!known.is(id, None), "emptied, or reused by a shorter file");
        assert!(
            !known.is(FileId { dev: 1, ino: 8 }, Some(42)),
            "another inode"
        );
        let short = Ident { id, print: None };
        assert!(
            short.is(id, Some(42)) && short.is(id, None),
            "no print: by inode only"
        );
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

    /// Sets a file's modification time `secs` seconds from now.
    fn touch(path: &Path, secs: i64) {
        let now = std::time::SystemTime::now();
        let at = if secs < 0 {
            now - Duration::from_secs(secs.unsigned_abs())
        } else {
            now + Duration::from_secs(secs as u64)
        };
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .expect("open");
        f.set_modified(at).expect("set mtime");
    }

    #[test]
    fn rotations_after_the_finished_file_are_found_oldest_first_and_archives_are_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("app.log");
        let id_of = |p: &Path| FileId::of(&std::fs::metadata(p).expect("meta"));
        // Yesterday's rotation, and the file being read (A), last written a minute ago.
        append(&dir.path().join("app.log.0"), "old\n");
        touch(&dir.path().join("app.log.0"), -3600);
        append(&path, "a\n");
        touch(&path, -60);
        let a = id_of(&path);
        let a_written = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .expect("mtime");
        // A rotated, B written and rotated, then C: two rotations between two looks.
        std::fs::rename(&path, dir.path().join("app.log.1")).expect("rotate A");
        append(&path, "b\n");
        touch(&path, -30);
        std::fs::rename(&path, dir.path().join("app.log.2")).expect("rotate B");
        append(&dir.path().join("app.log.2.gz"), "zip");
        append(&dir.path().join("other.log"), "x\n");
        append(&path, "c\n");
        let found = unread_rotations(&path, a_written, &[a]);
        let names: Vec<_> = found
            .iter()
            .map(|(p, _)| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("?")
                    .to_string()
            })
            .collect();
        assert_eq!(names, ["app.log.2"]);
        // Once read, it is known and not found again.
        let b = found[0].1;
        assert!(unread_rotations(&path, a_written, &[a, b]).is_empty());
    }
}
