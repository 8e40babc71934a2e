//! Splitting a child's output into message texts as its bytes arrive, cut anywhere.

use super::{ProtocolError, END, EXCERPT_CHARS, MAX_MESSAGE_BYTES};

/// Splits a child's output into messages as its bytes arrive: lines (a trailing `\r` dropped) are joined with `\n` up to a line that is exactly `end`.
/// Bytes are read into [`Framer::spare`] and announced with [`Framer::filled`]; then
/// [`Framer::next_message`] hands out what is complete.
#[derive(Debug)]
pub struct Framer {
    buf: Vec<u8>,
    /// `buf[start..end]` is read and not yet split into lines.
    start: usize,
    end: usize,
    /// The message in progress: its lines so far, joined.
    msg: String,
    started: bool,
    /// `msg` holds a message handed out: clear it before the next line.
    handed_out: bool,
}

/// What [`Framer::next_message`] found.
#[derive(Debug, PartialEq)]
pub enum Framed<'a> {
    Message(&'a str),
    Error(ProtocolError),
}

const READ_CHUNK: usize = 64 * 1024;

impl Default for Framer {
    fn default() -> Framer {
        Framer {
            buf: vec![0; READ_CHUNK],
            start: 0,
            end: 0,
            msg: String::new(),
            started: false,
            handed_out: false,
        }
    }
}

impl Framer {
    /// Free space to read into (at least a few KiB).
    pub fn spare(&mut self) -> &mut [u8] {
        if self.buf.len() - self.end < READ_CHUNK / 4 {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.buf.len() - self.end < READ_CHUNK / 4 {
                // A line longer than the buffer: grow (bounded by the message limit below).
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        &mut self.buf[self.end..]
    }

    /// `n` bytes were read into [`Framer::spare`].
    pub fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    /// The next complete message (or a problem: invalid UTF-8, a message too long), or `None`
    /// until more bytes arrive. With `eof`, an unterminated last line counts as a line.
    pub fn next_message(&mut self, eof: bool) -> Option<Framed<'_>> {
        if self.handed_out {
            self.msg.clear();
            self.handed_out = false;
        }
        loop {
            let pending = &self.buf[self.start..self.end];
            let (line_end, next) = match pending.iter().position(|&b| b == b'\n') {
                Some(i) => (self.start + i, self.start + i + 1),
                None if eof && !pending.is_empty() => (self.end, self.end),
                None => {
                    if pending.len() > MAX_MESSAGE_BYTES {
                        let text = String::from_utf8_lossy(&pending[..EXCERPT_CHARS * 4]);
                        let err = ProtocolError::new(
                            "message longer than 16 MiB without an `end` line",
                            &text,
                        );
                        self.start = self.end;
                        self.msg = String::new();
                        self.started = false;
                        return Some(Framed::Error(err));
                    }
                    return None;
                }
            };
            let mut line = &self.buf[self.start..line_end];
            self.start = next;
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            // The usual message, one line and its `end` line both here: hand it out from the
            // buffer, uncopied.
            if !self.started && line != END.as_bytes() && line.len() <= MAX_MESSAGE_BYTES {
                let rest = &self.buf[next..self.end];
                let end_len = if rest.starts_with(b"end\n") {
                    4
                } else if rest.starts_with(b"end\r\n") {
                    5
                } else {
                    0
                };
                if end_len > 0 {
                    if let Ok(text) = std::str::from_utf8(line) {
                        self.start = next + end_len;
                        return Some(Framed::Message(text));
                    }
                }
            }
            if line == END.as_bytes() {
                self.started = false;
                self.handed_out = true;
                return Some(Framed::Message(&self.msg));
            }
            let Ok(text) = std::str::from_utf8(line) else {
                return Some(Framed::Error(ProtocolError::new(
                    "invalid UTF-8",
                    &String::from_utf8_lossy(line),
                )));
            };
            if self.started {
                self.msg.push('\n');
            }
            self.started = true;
            self.msg.push_str(text);
            if self.msg.len() > MAX_MESSAGE_BYTES {
                let err =
                    ProtocolError::new("message longer than 16 MiB without an `end` line", text);
                self.msg = String::new();
                self.started = false;
                return Some(Framed::Error(err));
            }
        }
    }
}
