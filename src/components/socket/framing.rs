//! Cutting a byte stream into frames (RFC 6587): newline-delimited, or octet-counted
//! (`LEN SP MSG`, for messages that may hold newlines). A frame longer than the limit is an
//! error of its own and the stream goes on after it (the rest of that line is skipped). An
//! octet-counted stream that sends a frame not starting with a length is read up to its next
//! newline, as rsyslog and Vector do. At the end of the stream what is left is the last frame:
//! a client that disconnects mid-line loses nothing it sent.

/// How frames are delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    Newline,
    OctetCounted,
}

impl Framing {
    pub(crate) const NAMES: &'static [&'static str] = &["newline", "octet_counted"];

    pub(crate) fn from_name(name: &str) -> Option<Framing> {
        match name {
            "newline" => Some(Framing::Newline),
            "octet_counted" => Some(Framing::OctetCounted),
            _ => None,
        }
    }
}

/// What a frame holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    Text(Vec<u8>),
    /// A frame past the limit (its first bytes kept for the error), or a length that is not
    /// one.
    Bad {
        start: Vec<u8>,
        reason: String,
    },
}

/// Bytes of a too-long frame kept to show in its error.
const SHOWN: usize = 200;

/// One connection's framer.
pub(crate) struct Framer {
    framing: Framing,
    max: usize,
    buf: Vec<u8>,
    /// Inside a frame past the limit: skipping to its end (bytes left of an octet-counted one,
    /// or `None`: to the next newline).
    skipping: Option<Option<usize>>,
}

impl Framer {
    pub(crate) fn new(framing: Framing, max: usize) -> Framer {
        Framer {
            framing,
            max,
            buf: Vec::new(),
            skipping: None,
        }
    }

    /// Feed bytes; the frames they complete go to `out`.
    pub(crate) fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<Frame>) {
        if self.skipping.is_some() {
            let used = skip(&mut self.skipping, bytes);
            bytes = &bytes[used..];
        }
        if bytes.is_empty() {
            return;
        }
        self.buf.extend_from_slice(bytes);
        self.cut(out);
    }

    /// Cut the whole frames in the buffer (skipping the rest of any too long).
    fn cut(&mut self, out: &mut Vec<Frame>) {
        let mut at = 0;
        while at < self.buf.len() {
            let rest = &self.buf[at..];
            let step = match self.framing == Framing::OctetCounted && rest[0].is_ascii_digit() {
                true => counted(self.max, rest, out),
                false => line(self.max, rest, out),
            };
            let Some((used, skipping)) = step else {
                break;
            };
            at += used;
            if skipping.is_some() {
                self.skipping = skipping;
                at += skip(&mut self.skipping, &self.buf[at..]);
            }
        }
        self.buf.drain(..at.min(self.buf.len()));
    }
    /// At the end of the stream: what is left is the last frame (an unterminated line, or the
    /// part of an octet-counted frame that came).
    pub(crate) fn finish(&mut self, out: &mut Vec<Frame>) {
        let rest = std::mem::take(&mut self.buf);
        if self.skipping.take().is_some() || rest.is_empty() {
            return;
        }
        let counted = self.framing == Framing::OctetCounted
            && rest
                .iter()
                .position(|b| !b.is_ascii_digit())
                .is_some_and(|i| i > 0 && rest[i] == b' ');
        let text = match counted {
            true => rest.splitn(2, |b| *b == b' ').nth(1).unwrap_or_default(),
            false => &rest[..],
        };
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if !text.is_empty() {
            out.push(Frame::Text(text.to_vec()));
        }
    }
}

/// What a step of cutting did: the bytes it used, and whether the rest of a frame past the
/// limit is to be skipped (`Some(Some(n))`: `n` more bytes; `Some(None)`: to the next newline).
type Step = Option<(usize, Option<Option<usize>>)>;

/// Skip part of a frame past the limit; returns how many of `bytes` were skipped.
fn skip(state: &mut Option<Option<usize>>, bytes: &[u8]) -> usize {
    match *state {
        None => 0,
        Some(Some(left)) => {
            let n = left.min(bytes.len());
            *state = (left > n).then_some(Some(left - n));
            n
        }
        Some(None) => match memchr::memchr(b'\n', bytes) {
            Some(i) => {
                *state = None;
                i + 1
            }
            None => bytes.len(),
        },
    }
}

/// A newline-delimited frame at the start of `rest`; `None` when it is not whole yet.
fn line(max: usize, rest: &[u8], out: &mut Vec<Frame>) -> Step {
    match memchr::memchr(b'\n', rest) {
        Some(i) if i <= max => {
            let text = rest[..i].strip_suffix(b"\r").unwrap_or(&rest[..i]);
            out.push(Frame::Text(text.to_vec()));
            Some((i + 1, None))
        }
        Some(i) => {
            out.push(too_long(max, &rest[..i]));
            Some((i + 1, None))
        }
        None if rest.len() > max => {
            out.push(too_long(max, rest));
            Some((rest.len(), Some(None)))
        }
        None => None,
    }
}

/// An octet-counted frame at the start of `rest` (which starts with a digit).
fn counted(max: usize, rest: &[u8], out: &mut Vec<Frame>) -> Step {
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == rest.len() && digits <= 10 {
        return None; // the length goes on
    }
    let len = std::str::from_utf8(&rest[..digits])
        .ok()
        .and_then(|d| d.parse::<usize>().ok())
        .filter(|_| digits <= 10 && rest.get(digits) == Some(&b' '));
    let Some(len) = len else {
        // Not `LEN SP`: the frame is read as a line.
        return line(max, rest, out);
    };
    let start = digits + 1;
    let have = rest.len() - start;
    if len > max {
        out.push(too_long(max, &rest[start..start + have.min(len)]));
        let left = len.saturating_sub(have);
        return Some((start + have.min(len), (left > 0).then_some(Some(left))));
    }
    if have < len {
        return None;
    }
    let msg = &rest[start..start + len];
    let msg = msg.strip_suffix(b"\n").unwrap_or(msg);
    out.push(Frame::Text(msg.to_vec()));
    Some((start + len, None))
}

fn too_long(max: usize, start: &[u8]) -> Frame {
    Frame::Bad {
        start: start[..start.len().min(SHOWN)].to_vec(),
        reason: format!("a frame is over the limit of {max} bytes"),
    }
}

#[cfg(test)]
mod tests;
