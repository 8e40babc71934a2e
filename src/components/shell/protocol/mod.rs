//! Storm's multilang wire format, pure: every message is UTF-8 JSON followed by a line holding
//! exactly `end`; the messages the parent (ShellBolt / ShellSpout) sends; and the commands a
//! child may send back (`emit`, `ack`, `fail`, `log`, `error`, `metrics`, `sync`, the `pid`
//! answer of the handshake), parsed into types with located, truncated error texts.
//!
//! The hot path (an input tuple out, an `emit` / `ack` / task-id answer back) is written and
//! read without `serde_json::Value` trees: tuples are serialized straight from our values into
//! the output buffer, and the common commands are deserialized into typed fields, falling back
//! to the general parser (which names the problem) for anything unusual.
//!
//! `framing` splits a child's output into message texts, `parse` turns one into a
//! [`ChildMessage`], and `write` writes the parent's messages; the types both sides share
//! live here.

use crate::tuple::{Value as TupleValue, Values};
use compact_str::CompactString;
use serde_json::Value;
use smallvec::SmallVec;
use std::fmt;

mod framing;
mod parse;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;
mod write;

pub use framing::{Framed, Framer};
pub use parse::parse;
pub(crate) use write::{
    frame_into, handshake, heartbeat, write_bolt_tuple, write_task_ids, SpoutCommand,
};

/// The line that ends every message.
const END: &str = "end";
/// Longest message we accept from a child before calling it a protocol error.
const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Offending texts quoted in errors are cut to this many characters.
const EXCERPT_CHARS: usize = 200;

/// `text` cut to [`EXCERPT_CHARS`] characters (with `…` when cut), for error messages.
pub(crate) fn excerpt(text: &str) -> String {
    let mut chars = text.char_indices();
    match chars.nth(EXCERPT_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// What a child may send.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildMessage {
    /// The handshake answer `{"pid": N}`.
    Pid(u32),
    Command(Command),
}

/// A child's command (Storm's `ShellMsg`).
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Emit(Emit),
    Ack {
        id: CompactString,
    },
    Fail {
        id: CompactString,
    },
    Log {
        msg: String,
        level: LogLevel,
    },
    Error {
        msg: String,
    },
    Metrics {
        name: String,
        params: Value,
    },
    Sync,
    /// A command this runner does not know: ignored, as Storm's `ShellBolt` ignores it.
    Unknown {
        name: String,
    },
}

/// An `emit` command.
#[derive(Debug, Clone, PartialEq)]
pub struct Emit {
    /// `None` means the default stream.
    pub(crate) stream: Option<String>,
    pub(crate) tuple: Values,
    /// Direct emit to this task.
    pub(crate) task: Option<u32>,
    /// Bolts: ids of the input tuples this emit is anchored to.
    pub(crate) anchors: SmallVec<[CompactString; 1]>,
    /// Spouts: the message id that makes the tuple tracked.
    pub(crate) id: Option<TupleValue>,
    /// Answer with the receiving task ids (default true; never for direct emits).
    pub(crate) need_task_ids: bool,
}

/// Multilang log levels (Storm's `ShellLogHandler`): 0 trace … 4 error, 2 when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl LogLevel {
    fn from_number(n: i64) -> LogLevel {
        match n {
            i64::MIN..=0 => LogLevel::Trace,
            1 => LogLevel::Debug,
            2 => LogLevel::Info,
            3 => LogLevel::Warn,
            _ => LogLevel::Error,
        }
    }
}

/// A message that breaks the protocol; the text quotes the offending message (truncated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    problem: String,
    text: String,
    /// A message that is not JSON at all: the line where it stops being JSON (truncated),
    /// most likely something the child printed to its stdout.
    stray_line: Option<String>,
}

impl ProtocolError {
    fn new(problem: impl Into<String>, text: &str) -> ProtocolError {
        ProtocolError {
            problem: problem.into(),
            text: excerpt(text),
            stray_line: None,
        }
    }

    /// `text` is not JSON: name the line where parsing failed, and say where other output
    /// belongs (a `print` in a component is the usual cause).
    fn not_json(e: &serde_json::Error, text: &str) -> ProtocolError {
        let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or(text);
        ProtocolError {
            stray_line: Some(excerpt(line)),
            ..ProtocolError::new(format!("invalid JSON ({e})"), text)
        }
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.stray_line {
            Some(line) => write!(
                f,
                "the child wrote {line:?} to its stdout, which is not a protocol message: {}. \
                 A multilang child must write only protocol messages to stdout: write other \
                 output to stderr, or send it with the `log` command",
                self.problem
            ),
            None => write!(f, "{} in message: {}", self.problem, self.text),
        }
    }
}

impl std::error::Error for ProtocolError {}
