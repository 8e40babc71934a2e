//! Standard input kept for a rollback. When a checkpointed topology's workers run in several
//! processes, a lost worker rolls every worker back to the last committed checkpoint, the
//! `stdin` spout's home worker too, which starts again in this process from the position that
//! checkpoint recorded. Standard input cannot be read twice, so this process reads it through
//! one feed that keeps every byte from the committed position on (trimmed at each commit), and
//! each incarnation of the spout reads the feed from its restored offset. Reading ahead stops
//! at [`READ_AHEAD`] bytes past the furthest reader, so the feed holds at most what came since
//! the last commit plus that. Past [`IN_MEMORY`] bytes, the oldest chunks (read already, kept
//! only for a rollback) move to an unnamed temporary file (`spill_file.rs`), so a slow commit
//! costs disk, not memory.

use crate::components::spill_file::{Part, Spill};
use std::collections::VecDeque;
use std::io::Read;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

/// How far the feed reads ahead of its furthest reader.
const READ_AHEAD: usize = 8 << 20;
/// Bytes read from standard input at once.
const READ_STEP: usize = 256 << 10;
/// Kept bytes held in memory; past it, the oldest chunks move to the spill file.
const IN_MEMORY: usize = 32 << 20;

struct Kept {
    /// The input offset of the first kept byte.
    base: u64,
    /// The kept bytes, in the chunks they were read in (a trim frees whole chunks).
    chunks: VecDeque<Part>,
    /// Bytes kept in `chunks`.
    len: usize,
    /// Of those, bytes in memory.
    in_memory: usize,
    /// Where chunks past [`IN_MEMORY`] go.
    spill: Spill,
    /// Kept bytes the spill file could not take: later chunks stay in memory.
    spill_failed: bool,
    /// Standard input ended (or failed, with the error).
    ended: bool,
    error: Option<String>,
    /// Bumped by a rollback: readers of an older epoch see the end of their input.
    epoch: u64,
    /// The furthest offset any reader has read to.
    furthest: u64,
}

/// Standard input as every incarnation of the `stdin` spout reads it.
pub(crate) struct Feed {
    kept: Mutex<Kept>,
    changed: Condvar,
    /// Kept bytes held in memory before the oldest spill ([`IN_MEMORY`]).
    memory_limit: usize,
}

impl Default for Feed {
    fn default() -> Feed {
        Feed {
            kept: Mutex::default(),
            changed: Condvar::new(),
            memory_limit: IN_MEMORY,
        }
    }
}

static FEED: OnceLock<Arc<Feed>> = OnceLock::new();

/// Read standard input through the feed from now on (the first call starts its reader).
pub(crate) fn enable() -> anyhow::Result<Arc<Feed>> {
    if let Some(f) = FEED.get() {
        return Ok(f.clone());
    }
    let feed = Arc::new(Feed::default());
    if FEED.set(feed.clone()).is_err() {
        return FEED
            .get()
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("the stdin feed vanished"));
    }
    let pump = feed.clone();
    std::thread::Builder::new()
        .name("stdin-feed".into())
        .spawn(move || pump.pump(std::io::stdin()))?;
    Ok(feed)
}

/// The feed, when standard input is read through one.
pub(crate) fn get() -> Option<Arc<Feed>> {
    FEED.get().cloned()
}

impl Feed {
    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Read `input` into the feed to its end, never more than [`READ_AHEAD`] past the
    /// furthest reader.
    fn pump(&self, mut input: impl Read) {
        let mut buf = vec![0; READ_STEP];
        loop {
            {
                let mut kept = self.lock();
                while kept.base + kept.len as u64 > kept.furthest + READ_AHEAD as u64 {
                    kept = self.changed.wait(kept).unwrap_or_else(|e| e.into_inner());
                }
            }
            let read = input.read(&mut buf);
            let mut kept = self.lock();
            match read {
                Ok(0) => kept.ended = true,
                Ok(n) => {
                    kept.chunks.push_back(Part::Bytes(buf[..n].to_vec()));
                    kept.len += n;
                    kept.in_memory += n;
                    kept.spill_oldest(self.memory_limit);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    kept.error = Some(format!("read error: {e}"));
                    kept.ended = true;
                }
            }
            let ended = kept.ended;
            drop(kept);
            self.changed.notify_all();
            if ended {
                return;
            }
        }
    }

    /// A reader from input offset `start` (a restored position's), for this epoch.
    pub(crate) fn reader_from(self: &Arc<Self>, start: u64) -> Result<FeedReader, String> {
        let kept = self.lock();
        if start < kept.base {
            return Err(format!(
                "stdin before byte {} is no longer kept; the restored position starts at {start}",
                kept.base
            ));
        }
        Ok(FeedReader {
            feed: self.clone(),
            at: start,
            epoch: kept.epoch,
        })
    }

    /// Forget the whole chunks before input offset `offset` (committed: no rollback goes
    /// there).
    pub(crate) fn trim(&self, offset: u64) {
        let mut kept = self.lock();
        while let Some(first) = kept.chunks.front().map(Part::len) {
            if kept.base + first as u64 > offset {
                break;
            }
            if let Some(Part::Bytes(b)) = kept.chunks.pop_front() {
                kept.in_memory -= b.len();
            }
            kept.base += first as u64;
            kept.len -= first;
        }
        kept.empty_spill_if_unused();
    }

    /// A rollback: readers of the old run see the end of their input.
    pub(crate) fn new_epoch(&self) {
        self.lock().epoch += 1;
        self.changed.notify_all();
    }

    #[cfg(test)]
    fn from_input(input: impl Read + Send + 'static) -> Arc<Feed> {
        Feed::from_input_keeping(input, IN_MEMORY)
    }

    /// A feed of `input` that keeps at most `memory_limit` bytes in memory.
    #[cfg(test)]
    fn from_input_keeping(input: impl Read + Send + 'static, memory_limit: usize) -> Arc<Feed> {
        let feed = Arc::new(Feed {
            memory_limit,
            ..Feed::default()
        });
        let pump = feed.clone();
        std::thread::spawn(move || pump.pump(input));
        feed
    }
}

/// One incarnation's reader of the feed.
pub(crate) struct FeedReader {
    feed: Arc<Feed>,
    at: u64,
    epoch: u64,
}

impl Read for FeedReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let feed = self.feed.clone();
        let mut kept = feed.lock();
        loop {
            if kept.epoch != self.epoch {
                return Ok(0);
            }
            if self.at < kept.base {
                return Err(std::io::Error::other(format!(
                    "stdin before byte {} is no longer kept",
                    kept.base
                )));
            }
            let from = (self.at - kept.base) as usize;
            if from < kept.len {
                let n = kept.copy_from(from, buf)?;
                self.at += n as u64;
                kept.furthest = kept.furthest.max(self.at);
                drop(kept);
                feed.changed.notify_all();
                return Ok(n);
            }
            if kept.ended {
                return match &kept.error {
                    Some(e) => Err(std::io::Error::other(e.clone())),
                    None => Ok(0),
                };
            }
            kept = feed.changed.wait(kept).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Default for Kept {
    fn default() -> Kept {
        Kept {
            base: 0,
            chunks: VecDeque::new(),
            len: 0,
            in_memory: 0,
            spill: Spill::new("storm-kept-stdin"),
            spill_failed: false,
            ended: false,
            error: None,
            epoch: 0,
            furthest: 0,
        }
    }
}

impl Kept {
    /// Copy into `buf` what the chunks hold from byte `from` on, up to the end of that chunk:
    /// the bytes copied.
    fn copy_from(&self, mut from: usize, buf: &mut [u8]) -> std::io::Result<usize> {
        for chunk in &self.chunks {
            if from < chunk.len() {
                let n = buf.len().min(chunk.len() - from);
                self.spill.read(chunk, from, &mut buf[..n])?;
                return Ok(n);
            }
            from -= chunk.len();
        }
        Ok(0)
    }

    /// Move the oldest chunks in memory to the spill file until at most `limit` bytes are in
    /// memory. Should the file fail (no temp folder, a full disk), they stay in memory, and a
    /// warning says so once.
    fn spill_oldest(&mut self, limit: usize) {
        if self.in_memory <= limit || self.spill_failed {
            return;
        }
        if let Err(e) = self.try_spill(limit) {
            self.spill_failed = true;
            tracing::warn!(
                "stdin: cannot move input kept for a rollback to a temporary file ({e}); \
                 keeping it in memory"
            );
        }
    }

    fn try_spill(&mut self, limit: usize) -> std::io::Result<()> {
        for chunk in self.chunks.iter_mut() {
            if self.in_memory <= limit {
                break;
            }
            self.in_memory -= self.spill.move_out(chunk)?;
        }
        Ok(())
    }

    /// Empty the spill file once no kept chunk is in it.
    fn empty_spill_if_unused(&mut self) {
        if self.in_memory == self.len {
            self.spill.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Input that arrives in the parts sent, as a pipe's does.
    struct Pipe(std::sync::mpsc::Receiver<Vec<u8>>);

    impl Read for Pipe {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.0.recv() {
                Ok(b) => {
                    buf[..b.len()].copy_from_slice(&b);
                    Ok(b.len())
                }
                Err(_) => Ok(0),
            }
        }
    }

    fn read_all(mut r: FeedReader) -> Vec<u8> {
        let mut out = Vec::new();
        r.read_to_end(&mut out).expect("reads");
        out
    }

    #[test]
    fn a_reader_from_an_offset_reads_the_input_from_there_to_its_end() {
        let input: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let feed = Feed::from_input(std::io::Cursor::new(input.clone()));
        assert_eq!(read_all(feed.reader_from(0).expect("kept")), input);
        assert_eq!(
            read_all(feed.reader_from(1234).expect("kept")),
            input[1234..]
        );
    }

    #[test]
    fn trimmed_bytes_are_refused_and_the_rest_still_read() {
        let input = b"one\ntwo\nthree\n".to_vec();
        let feed = Feed::from_input(std::io::Cursor::new(input.clone()));
        assert_eq!(read_all(feed.reader_from(0).expect("kept")), input);
        // Whole chunks only: the one chunk stays until an offset past its end.
        feed.trim(4);
        assert_eq!(
            read_all(feed.reader_from(2).expect("kept")),
            b"e\ntwo\nthree\n"
        );
        feed.trim(input.len() as u64);
        assert!(feed.reader_from(2).is_err());
        let end = input.len() as u64;
        assert_eq!(read_all(feed.reader_from(end).expect("kept")), b"");
    }

    #[test]
    fn reads_across_chunks_and_trims_whole_chunks_only() {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let feed = Feed::from_input(Pipe(rx));
        for part in [&b"ab"[..], b"cde", b"f\n"] {
            tx.send(part.to_vec()).expect("sent");
        }
        drop(tx);
        assert_eq!(read_all(feed.reader_from(1).expect("kept")), b"bcdef\n");
        feed.trim(3);
        assert!(feed.reader_from(1).is_err(), "the first chunk went");
        assert_eq!(read_all(feed.reader_from(2).expect("kept")), b"cdef\n");
    }

    proptest::proptest! {
        /// A feed that spills its oldest chunks (at most `limit` bytes in memory, down to
        /// none) reads back exactly the input from any kept offset, before and after a trim,
        /// and empties its file once every spilled chunk is trimmed.
        #[test]
        fn spilled_chunks_read_back_as_the_input(
            parts in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 1..40), 1..20),
            limit in 0usize..64,
            from in 0usize..400,
            cut in 0usize..400,
        ) {
            let input: Vec<u8> = parts.concat();
            let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
            let feed = Feed::from_input_keeping(Pipe(rx), limit);
            for part in &parts {
                tx.send(part.clone()).expect("sent");
            }
            drop(tx);
            proptest::prop_assert_eq!(read_all(feed.reader_from(0).expect("kept")), input.clone());
            let from = from.min(input.len());
            proptest::prop_assert_eq!(read_all(feed.reader_from(from as u64).expect("kept")), input[from..].to_vec());
            feed.trim(cut.min(input.len()) as u64);
            let base = feed.lock().base as usize;
            let from = from.max(base);
            proptest::prop_assert_eq!(read_all(feed.reader_from(from as u64).expect("kept")), input[from..].to_vec());
            proptest::prop_assert!(feed.lock().in_memory <= limit.max(parts.last().map_or(0, Vec::len)));
            feed.trim(input.len() as u64);
            let kept = feed.lock();
            let spilled = kept.chunks.iter().any(|c| matches!(c, Part::Spilled { .. }));
            proptest::prop_assert!(!spilled);
            proptest::prop_assert_eq!(kept.spill.written(), 0);
        }
    }

    #[test]
    fn a_new_epoch_ends_the_old_readers() {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let feed = Feed::from_input(Pipe(rx));
        tx.send(b"a\n".to_vec()).expect("sent");
        let mut old = feed.reader_from(0).expect("kept");
        let mut buf = [0; 8];
        assert_eq!(old.read(&mut buf).expect("reads"), 2);
        let waiting = std::thread::spawn(move || old.read(&mut [0; 8]).expect("reads"));
        std::thread::sleep(std::time::Duration::from_millis(50));
        feed.new_epoch();
        assert_eq!(waiting.join().expect("joined"), 0, "the old reader ends");
        tx.send(b"b\n".to_vec()).expect("sent");
        drop(tx);
        assert_eq!(read_all(feed.reader_from(0).expect("kept")), b"a\nb\n");
    }
}
