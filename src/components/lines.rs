//! The `stdin` and `file` spouts: one tuple per input line, without its `\n` or `\r\n`. A reader
//! thread reads ahead in chunks so `next_tuple` never blocks; invalid UTF-8 is replaced and
//! counted. With acking on, each line is kept until its tree is acked and re-emitted on fail.

use super::replay::Replay;
use super::{Spout, SpoutCollector, SpoutStatus, TaskContext};
use crate::topology::plan::streams;
use crate::tuple::Value;
use compact_str::CompactString;
use crossbeam_channel::{Receiver, TryRecvError};
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const CHUNK_LINES: usize = 1024;

/// Where the lines come from.
pub enum Input {
    Stdin,
    File(PathBuf),
}

pub struct LineSpout {
    input: Option<Input>,
    chunks: Option<Receiver<Result<Vec<CompactString>, String>>>,
    current: std::vec::IntoIter<CompactString>,
    read_bytes: Arc<AtomicU64>,
    total_bytes: u64,
    invalid: Arc<AtomicU64>,
    /// Acking on: lines kept until acked, replayed on fail.
    replay: Replay<CompactString>,
    tracked: bool,
    done: bool,
    component: String,
}

impl LineSpout {
    pub fn new(input: Input, max_retries: Option<u32>) -> LineSpout {
        LineSpout {
            input: Some(input),
            chunks: None,
            current: Vec::new().into_iter(),
            read_bytes: Arc::new(AtomicU64::new(0)),
            total_bytes: 0,
            invalid: Arc::new(AtomicU64::new(0)),
            replay: Replay::new(max_retries),
            tracked: false,
            done: false,
            component: String::new(),
        }
    }

    fn emit(&mut self, line: CompactString, out: &mut dyn SpoutCollector) {
        if self.tracked {
            let seq = self.replay.track(line.clone());
            out.send(
                streams::DEFAULT,
                smallvec::smallvec![Value::Str(line)],
                Some(Value::Int(seq as i64)),
            );
        } else {
            out.send(
                streams::DEFAULT,
                smallvec::smallvec![Value::Str(line)],
                None,
            );
        }
    }
}

fn reader_thread(
    input: Input,
    tx: crossbeam_channel::Sender<Result<Vec<CompactString>, String>>,
    read_bytes: Arc<AtomicU64>,
    invalid: Arc<AtomicU64>,
) -> std::io::Result<()> {
    let source: Box<dyn Read + Send> = match &input {
        Input::Stdin => Box::new(std::io::stdin()),
        Input::File(p) => match std::fs::File::open(p) {
            Ok(f) => Box::new(f),
            Err(e) => {
                let _ = tx.send(Err(format!("cannot open {}: {e}", p.display())));
                return Ok(());
            }
        },
    };
    read_lines(
        BufReader::with_capacity(256 * 1024, source),
        &tx,
        &read_bytes,
        &invalid,
    );
    Ok(())
}

/// Read `reader` to its end, sending its lines on `tx` in chunks (or an error).
fn read_lines(
    mut reader: impl BufRead,
    tx: &crossbeam_channel::Sender<Result<Vec<CompactString>, String>>,
    read_bytes: &AtomicU64,
    invalid: &AtomicU64,
) {
    let mut lines = LineBuilder {
        tx,
        chunk: Vec::with_capacity(CHUNK_LINES),
        carry: Vec::new(),
        invalid,
        closed: false,
    };
    loop {
        let data = match reader.fill_buf() {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = tx.send(Err(format!("read error: {e}")));
                return;
            }
        };
        if data.is_empty() {
            break;
        }
        let n = data.len();
        // Whole lines are taken straight from the read buffer; a line cut by the buffer's end
        // waits in `carry` for the rest.
        let mut rest = data;
        if !lines.carry.is_empty() {
            match memchr::memchr(b'\n', rest) {
                Some(i) => {
                    lines.carry.extend_from_slice(&rest[..=i]);
                    let line = std::mem::take(&mut lines.carry);
                    lines.push_run(&line);
                    rest = &rest[i + 1..];
                }
                None => {
                    lines.carry.extend_from_slice(rest);
                    rest = &[];
                }
            }
        }
        if let Some(last) = memchr::memrchr(b'\n', rest) {
            lines.push_run(&rest[..=last]);
            lines.carry.extend_from_slice(&rest[last + 1..]);
        } else {
            lines.carry.extend_from_slice(rest);
        }
        reader.consume(n);
        read_bytes.fetch_add(n as u64, Ordering::Relaxed);
        // Send what this read gave before the next read may block (interactive input).
        lines.send();
        if lines.closed {
            return;
        }
    }
    if !lines.carry.is_empty() {
        let last = std::mem::take(&mut lines.carry);
        lines.push_line(&last);
    }
    lines.send();
}

/// Turns bytes into line strings for the reader thread, sent on in chunks.
struct LineBuilder<'a> {
    tx: &'a crossbeam_channel::Sender<Result<Vec<CompactString>, String>>,
    chunk: Vec<CompactString>,
    /// The start of a line the read buffer cut off.
    carry: Vec<u8>,
    invalid: &'a AtomicU64,
    /// The spout is gone (the run is ending): nothing more to read.
    closed: bool,
}

impl LineBuilder<'_> {
    fn add(&mut self, line: CompactString) {
        self.chunk.push(line);
        if self.chunk.len() >= CHUNK_LINES {
            self.send();
        }
    }

    /// Send the lines gathered so far.
    fn send(&mut self) {
        if self.chunk.is_empty() || self.closed {
            return;
        }
        let full = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK_LINES));
        self.closed = self.tx.send(Ok(full)).is_err();
    }

    /// A run of whole lines, each ending in `\n`: validated as UTF-8 in one pass (line ends
    /// are character boundaries), one line at a time only when that fails.
    fn push_run(&mut self, run: &[u8]) {
        match simdutf8::basic::from_utf8(run) {
            Ok(text) => {
                let mut start = 0;
                for end in memchr::memchr_iter(b'\n', run) {
                    self.add(CompactString::new(trim_eol_str(&text[start..end])));
                    start = end + 1;
                }
            }
            Err(_) => {
                for line in run.split_inclusive(|&b| b == b'\n') {
                    self.push_line(line);
                }
            }
        }
    }

    /// One line, with or without its `\n`; invalid UTF-8 is replaced and counted.
    fn push_line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let text = match std::str::from_utf8(line) {
            Ok(s) => CompactString::new(s),
            Err(_) => {
                self.invalid.fetch_add(1, Ordering::Relaxed);
                CompactString::new(String::from_utf8_lossy(line))
            }
        };
        self.add(text);
    }
}

/// A line without its `\r` (the `\n` is already cut off).
fn trim_eol_str(line: &str) -> &str {
    line.strip_suffix('\r').unwrap_or(line)
}

impl Spout for LineSpout {
    fn open(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.tracked = ctx.plan.ackers > 0;
        self.component = ctx.component.clone();
        let Some(input) = self.input.take() else {
            return Ok(());
        };
        if let Input::File(p) = &input {
            self.total_bytes = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        }
        let (tx, rx) = crossbeam_channel::bounded(4);
        let (read, invalid) = (self.read_bytes.clone(), self.invalid.clone());
        std::thread::Builder::new()
            .name(format!("{}-reader", ctx.component))
            .spawn(move || reader_thread(input, tx, read, invalid))?;
        self.chunks = Some(rx);
        Ok(())
    }

    fn next_tuple(&mut self, out: &mut dyn SpoutCollector) -> anyhow::Result<SpoutStatus> {
        if let Some((seq, line)) = self.replay.next_replay() {
            out.send(
                streams::DEFAULT,
                smallvec::smallvec![Value::Str(line)],
                Some(Value::Int(seq as i64)),
            );
            return Ok(SpoutStatus::Busy);
        }
        if let Some(line) = self.current.next() {
            self.emit(line, out);
            return Ok(SpoutStatus::Busy);
        }
        if self.done {
            return Ok(SpoutStatus::Exhausted);
        }
        let Some(rx) = &self.chunks else {
            self.done = true;
            return Ok(SpoutStatus::Exhausted);
        };
        match rx.try_recv() {
            Ok(Ok(chunk)) => {
                self.current = chunk.into_iter();
                Ok(SpoutStatus::Busy)
            }
            Ok(Err(e)) => {
                self.done = true;
                Err(super::FatalError(format!("{}: {e}", self.component)).into())
            }
            Err(TryRecvError::Empty) => Ok(SpoutStatus::Idle),
            Err(TryRecvError::Disconnected) => {
                self.done = true;
                Ok(SpoutStatus::Exhausted)
            }
        }
    }

    fn ack(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        self.replay.ack(&msg_id);
        Ok(())
    }

    fn fail(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        self.replay.fail(&msg_id);
        Ok(())
    }

    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.read_bytes.load(Ordering::Relaxed), self.total_bytes))
    }

    fn lost(&self) -> u64 {
        self.replay.lost()
    }

    fn close(&mut self) {
        let invalid = self.invalid.load(Ordering::Relaxed);
        if invalid > 0 {
            tracing::warn!(
                "{}: {invalid} line(s) had invalid UTF-8; bad bytes were replaced with U+FFFD",
                self.component
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line `read_lines` sends for `input` read through a buffer of `capacity` bytes.
    fn lines(input: &[u8], capacity: usize) -> (Vec<String>, u64) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let (read, invalid) = (AtomicU64::new(0), AtomicU64::new(0));
        read_lines(
            BufReader::with_capacity(capacity, input),
            &tx,
            &read,
            &invalid,
        );
        drop(tx);
        assert_eq!(read.load(Ordering::Relaxed), input.len() as u64);
        let all = rx
            .iter()
            .flat_map(|chunk| chunk.unwrap_or_default())
            .map(String::from)
            .collect();
        (all, invalid.load(Ordering::Relaxed))
    }

    #[test]
    fn lines_cut_by_the_read_buffer_come_out_whole() {
        let input = "one\r\ntwo é\n\nthree ß\r\nlast without newline".as_bytes();
        let expected = ["one", "two é", "", "three ß", "last without newline"];
        for capacity in [1, 2, 3, 5, 8, 64] {
            assert_eq!(
                lines(input, capacity),
                (expected.map(String::from).to_vec(), 0)
            );
        }
    }

    #[test]
    fn invalid_bytes_are_replaced_in_their_line_only() {
        let input = b"good\nbad \xff\xfe here\r\nfine \xc3\xa9\n";
        for capacity in [3, 1024] {
            let (got, invalid) = lines(input, capacity);
            assert_eq!(got, ["good", "bad \u{fffd}\u{fffd} here", "fine é"]);
            assert_eq!(invalid, 1);
        }
    }
}
