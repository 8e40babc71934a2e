//! Reading fields ahead on several threads: the reader thread deals its chunks of lines out
//! in turn to parse threads, each with its own copy of the format's fast path, and the spout
//! takes them back in the same turn, so the lines keep their order while a JSON or CSV input
//! is read on as many cores as the machine gives.

use super::read_ahead::ReadAhead;
use super::{ChunkResult, LineChunk};
use crate::components::parse::Prefetch;
use crossbeam_channel::{bounded, Receiver, Sender, TryRecvError};

/// Chunks queued into and out of each parse thread.
const QUEUED: usize = 2;

/// The most parse threads a reader starts.
const MAX_THREADS: usize = 4;

/// How many parse threads a reader of fields starts here: one per core but the one the
/// emitting thread needs, up to [`MAX_THREADS`]; one means the reader thread reads the fields
/// itself. (On 2 cores, two parse threads beside the reader, the spout and the acker measured
/// 8% slower than the reader reading the fields: 10 M JSON events, 6.28 s against 5.65 s.)
/// With a filter evaluated as lines are read, or a bolt's fold run on them (`filtering`), the
/// emitting thread has nothing to do for the lines rejected or folded, so every core parses. (On 2 cores, 10 M CSV events: 2.75 s
/// against 1.71 s when the filter keeps 3% of the lines; when it keeps them all, 3.72 s
/// against 3.76 s, the same within noise.)
pub(crate) fn threads(filtering: bool) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let spared = usize::from(!filtering);
    cores.saturating_sub(spared).clamp(1, MAX_THREADS)
}

/// A chunk on its way to a parse thread: the lines whose fields it reads (whole lines, not
/// pieces of a longer one) are flagged.
type Job = (ChunkResult, Vec<bool>);

/// The reader thread's end: deals chunks out in turn.
pub(crate) struct Spread {
    txs: Vec<Sender<Job>>,
    next: usize,
}

impl Spread {
    /// Send `chunk` to the next parse thread, its lines `whole` to be read. False when the
    /// spout is gone.
    pub(crate) fn send(&mut self, chunk: ChunkResult, whole: Vec<bool>) -> bool {
        let sent = self.txs[self.next].send((chunk, whole)).is_ok();
        self.next = (self.next + 1) % self.txs.len();
        sent
    }
}

/// The spout's end: chunks from one reader, or from parse threads taken in turn.
pub(crate) enum Chunks {
    One(Receiver<ChunkResult>),
    Dealt {
        rxs: Vec<Receiver<ChunkResult>>,
        next: usize,
    },
}

impl Chunks {
    /// The next chunk in the order it was read, if it is ready.
    pub(crate) fn try_recv(&mut self) -> Result<ChunkResult, TryRecvError> {
        match self {
            Chunks::One(rx) => rx.try_recv(),
            Chunks::Dealt { rxs, next } => {
                let got = rxs[*next].try_recv()?;
                *next = (*next + 1) % rxs.len();
                Ok(got)
            }
        }
    }
}

/// Start one parse thread per fast path in `readers` (named after `name`); returns the
/// reader's and the spout's ends.
pub(crate) fn spread(readers: Vec<Prefetch>, name: &str) -> std::io::Result<(Spread, Chunks)> {
    let (mut txs, mut rxs) = (Vec::new(), Vec::new());
    for (i, mut reader) in readers.into_iter().enumerate() {
        let (job_tx, job_rx) = bounded::<Job>(QUEUED);
        let (done_tx, done_rx) = bounded::<ChunkResult>(QUEUED);
        std::thread::Builder::new()
            .name(format!("{name}-parse-{i}"))
            .spawn(move || {
                for (mut chunk, whole) in job_rx {
                    if let Ok(c) = &mut chunk {
                        read_fields(&mut reader, c, &whole);
                    }
                    if done_tx.send(chunk).is_err() {
                        return;
                    }
                }
            })?;
        txs.push(job_tx);
        rxs.push(done_rx);
    }
    Ok((Spread { txs, next: 0 }, Chunks::Dealt { rxs, next: 0 }))
}

/// Read the fields of the lines of `chunk` flagged in `whole` (the others are the spout
/// parser's to read).
fn read_fields(reader: &mut Prefetch, chunk: &mut LineChunk, whole: &[bool]) {
    let mut ahead = ReadAhead::with_capacity(chunk.ends.len(), reader.width());
    for (i, &whole) in whole.iter().enumerate().take(chunk.ends.len()) {
        let line = chunk
            .line_bounds(i)
            .and_then(|(start, end)| chunk.text.get(start..end))
            .unwrap_or_default();
        ahead.read(reader, line, whole);
    }
    ahead.finish(reader);
    chunk.ahead = ahead;
}
