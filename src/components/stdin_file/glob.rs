//! A `file` path that is a glob (`/var/log/app/*.log`): the matching files, and the reader
//! thread that reads them. Without `follow`, every matching file is read once, in sorted
//! order. With `follow`, each matching file is followed by its own reader (rotations as for
//! one file), and the glob is looked at again at the same poll interval for new files. Files
//! are told apart by device and inode, so a file renamed to another matching name is not read
//! again, and, when followed, by a fingerprint of their first [`PRINT_BYTES`] bytes, so a copy
//! (or a move across file systems) of a file already read is not read again either. Each
//! chunk carries its file's identity and matched path.

use super::fingerprint::fingerprint;
use super::fingerprint::PRINT_BYTES;
use super::follow::{FileId, FollowJob, Seen};
use super::{read_lines, ChunkResult, LineBuilder};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the glob is looked at again for new files (the follow poll interval).
const POLL: Duration = Duration::from_millis(100);

/// How often a glob matching nothing is warned about while followed.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// Whether a path as written is a glob.
pub(crate) fn is_glob(path: &str) -> bool {
    path.contains(['*', '?', '['])
}

/// The regular files `pattern` matches, sorted by path.
fn matches(pattern: &Path) -> Result<Vec<PathBuf>, String> {
    let text = pattern
        .to_str()
        .ok_or_else(|| format!("{}: the glob is not UTF-8", pattern.display()))?;
    let paths = glob::glob(text).map_err(|e| format!("{text}: not a glob: {e}"))?;
    let mut found: Vec<PathBuf> = paths
        .filter_map(Result::ok)
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    Ok(found)
}

/// Where each file of a glob was: offset after its last line emitted, and that line's number.
pub(crate) type Starts = BTreeMap<FileId, (u64, u64)>;

/// The glob's reader thread: what it reads and how.
pub(super) struct GlobJob {
    pub(super) pattern: PathBuf,
    /// Stripped from matched paths for `file_path` (a relative pattern's folder).
    pub(super) strip: Option<PathBuf>,
    /// Where files of a restored position go on, and their fingerprints then.
    pub(super) starts: Starts,
    pub(super) restored_prints: std::collections::HashMap<FileId, u64>,
    /// Where the readers publish the fingerprints of their files (for positions).
    pub(super) prints: super::follow::Prints,
    /// `Some` with `follow: true`: set when the spout goes.
    pub(super) closed: Option<Arc<AtomicBool>>,
    /// `start_at: end` on a run not resumed: the files there at start are read from their end.
    pub(super) from_end: bool,
    pub(super) cut: Option<usize>,
    /// Lines are numbered (`file_line`).
    pub(super) numbered: bool,
}

impl GlobJob {
    /// A matched path as `file_path` gives it.
    fn shown(&self, path: &Path) -> Arc<str> {
        let shown = self
            .strip
            .as_ref()
            .and_then(|base| path.strip_prefix(base).ok())
            .unwrap_or(path);
        Arc::from(shown.to_string_lossy().as_ref())
    }

    /// Where reading `path` (the file `id`) starts, and the lines before it when known: where
    /// a restored position left the same file (its inode, unless its content differs: a
    /// reused inode; or, moved by a copy, its fingerprint), else at its start (its end on
    /// the first look with `start_at: end`).
    fn start_of(&self, path: &Path, id: FileId, first_look: bool) -> (u64, Option<u64>) {
        let print = fingerprint(path);
        let then = |id: &FileId| super::follow::Ident {
            id: *id,
            print: self.restored_prints.get(id).copied(),
        };
        let same = self
            .starts
            .get(&id)
            .filter(|_| then(&id).is(id, print))
            .or_else(|| {
                let print = print?;
                let (_, at) = self
                    .starts
                    .iter()
                    .find(|(i, _)| self.restored_prints.get(i) == Some(&print))?;
                tracing::info!(
                    "{}: the file a saved position was in, moved: going on from there",
                    path.display()
                );
                Some(at)
            });
        if let Some(&(offset, line)) = same {
            return (offset, Some(line));
        }
        match (first_look && self.from_end, std::fs::metadata(path)) {
            (true, Ok(m)) => (m.len(), None),
            _ => (0, Some(0)),
        }
    }

    pub(super) fn run(
        self,
        tx: crossbeam_channel::Sender<ChunkResult>,
        read: Arc<AtomicU64>,
        invalid: Arc<AtomicU64>,
    ) {
        match self.closed.clone() {
            None => self.read_all(&tx, &read, &invalid),
            Some(closed) => self.follow_all(closed, tx, read, invalid),
        }
    }

    /// Without `follow`: each matching file once, in sorted order; none is an error.
    fn read_all(
        &self,
        tx: &crossbeam_channel::Sender<ChunkResult>,
        read: &AtomicU64,
        invalid: &AtomicU64,
    ) {
        let files = match matches(&self.pattern) {
            Ok(f) if f.is_empty() => Err(format!("no file matches {}", self.pattern.display())),
            other => other,
        };
        let files = match files {
            Ok(f) => f,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        for path in files {
            let opened = std::fs::File::open(&path)
                .and_then(|f| Ok((FileId::of(&f.metadata()?), f)))
                .map_err(|e| format!("cannot open {}: {e}", path.display()));
            let (id, mut file) = match opened {
                Ok(o) => o,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            let (start, known) = self.start_of(&path, id, false);
            let mut lines = LineBuilder::new(tx, Some(id), invalid);
            lines.path = Some(self.shown(&path));
            if self.numbered {
                match known.map_or_else(|| super::lines_before(&path, start), Ok) {
                    Ok(n) => lines.numbering = Some(n),
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
            use std::io::{Seek, SeekFrom};
            if let Err(e) = file.seek(SeekFrom::Start(start)) {
                let _ = tx.send(Err(format!("cannot seek {}: {e}", path.display())));
                return;
            }
            let reader = std::io::BufReader::with_capacity(256 * 1024, file);
            read_lines(reader, start, self.cut, lines, read);
        }
    }

    /// With `follow`: every matching file followed by its own reader thread, the glob looked
    /// at again for new files until the spout goes.
    fn follow_all(
        self,
        closed: Arc<AtomicBool>,
        tx: crossbeam_channel::Sender<ChunkResult>,
        read: Arc<AtomicU64>,
        invalid: Arc<AtomicU64>,
    ) {
        let seen: Seen = Arc::default();
        let mut followed: HashSet<PathBuf> = HashSet::new();
        let mut prints = Prints::default();
        let mut first_look = true;
        let mut warned: Option<Instant> = None;
        while !closed.load(Ordering::Relaxed) {
            let files = matches(&self.pattern).unwrap_or_else(|e| {
                tracing::warn!("{e}");
                Vec::new()
            });
            if files.is_empty() && warned.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
                tracing::warn!(
                    "no file matches {} yet; waiting for one (this is said once a minute)",
                    self.pattern.display()
                );
                warned = Some(Instant::now());
            }
            prints.complete();
            for path in files {
                let Ok(meta) = std::fs::metadata(&path) else {
                    continue;
                };
                let id = FileId::of(&meta);
                let known = seen.lock().unwrap_or_else(|e| e.into_inner()).contains(&id);
                if followed.contains(&path) || known || prints.is_copy(&path, id) {
                    continue;
                }
                followed.insert(path.clone());
                prints.add(&path);
                let (start, lines) = self.start_of(&path, id, first_look);
                let job = FollowJob {
                    path: path.clone(),
                    start,
                    expect: Some(super::follow::Ident { id, print: None }),
                    prints: Some(self.prints.clone()),
                    closed: closed.clone(),
                    cut: self.cut,
                    numbering: self.numbered.then_some(lines),
                    shown: Some(self.shown(&path)),
                    seen: Some(seen.clone()),
                };
                let (jtx, read, invalid) = (tx.clone(), read.clone(), invalid.clone());
                let spawned = std::thread::Builder::new()
                    .name("file-glob-reader".into())
                    .spawn(move || job.run(&jtx, &read, &invalid));
                if let Err(e) = spawned {
                    let _ = tx.send(Err(format!(
                        "cannot start a reader for {}: {e}",
                        path.display()
                    )));
                    return;
                }
            }
            first_look = false;
            std::thread::sleep(POLL);
        }
    }
}

/// The fingerprints of the files a glob follows, and the files that had none yet.
#[derive(Default)]
struct Prints {
    known: std::collections::HashMap<u64, PathBuf>,
    /// Followed files shorter than [`PRINT_BYTES`] when last looked at.
    pending: Vec<PathBuf>,
    /// Files left out as copies, with the file they were: said once, looked at again only
    /// when another file is under the name.
    copies: std::collections::HashMap<PathBuf, FileId>,
}

impl Prints {
    /// Note the fingerprint of a file now followed (or look again later).
    fn add(&mut self, path: &Path) {
        match fingerprint(path) {
            Some(print) => {
                self.known
                    .entry(print)
                    .or_insert_with(|| path.to_path_buf());
            }
            None => self.pending.push(path.to_path_buf()),
        }
    }

    /// Fingerprint the followed files that have grown long enough.
    fn complete(&mut self) {
        for path in std::mem::take(&mut self.pending) {
            self.add(&path);
        }
    }

    /// Whether `path` (the file `id`) has the fingerprint of a file already followed.
    fn is_copy(&mut self, path: &Path, id: FileId) -> bool {
        if self.copies.get(path) == Some(&id) {
            return true;
        }
        let Some(first) = fingerprint(path).and_then(|p| self.known.get(&p)) else {
            return false;
        };
        tracing::info!(
            "{}: not read: its first {PRINT_BYTES} bytes are those of {}, already read (a copy \
             or a move)",
            path.display(),
            first.display()
        );
        self.copies.insert(path.to_path_buf(), id);
        true
    }
}
