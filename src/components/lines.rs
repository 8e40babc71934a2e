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
    let mut reader = BufReader::with_capacity(256 * 1024, source);
    let mut buf = Vec::with_capacity(256);
    let mut chunk = Vec::with_capacity(CHUNK_LINES);
    loop {
        buf.clear();
        let n = match reader.read_until(b'\n', &mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = tx.send(Err(format!("read error: {e}")));
                return Ok(());
            }
        };
        if n == 0 {
            break;
        }
        read_bytes.fetch_add(n as u64, Ordering::Relaxed);
        let mut line = &buf[..];
        if let Some(rest) = line.strip_suffix(b"\n") {
            line = rest;
            if let Some(rest) = line.strip_suffix(b"\r") {
                line = rest;
            }
        }
        let text = match std::str::from_utf8(line) {
            Ok(s) => CompactString::new(s),
            Err(_) => {
                invalid.fetch_add(1, Ordering::Relaxed);
                CompactString::new(String::from_utf8_lossy(line))
            }
        };
        chunk.push(text);
        // Hand over full chunks, and partial ones when no more input is ready (interactive use).
        if chunk.len() >= CHUNK_LINES || reader.buffer().is_empty() {
            if tx.send(Ok(std::mem::take(&mut chunk))).is_err() {
                return Ok(());
            }
            chunk.reserve(CHUNK_LINES);
        }
    }
    if !chunk.is_empty() {
        let _ = tx.send(Ok(chunk));
    }
    Ok(())
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
