//! Reading a regular file (a `file` spout's, or stdin redirected from one) straight into the
//! chunks the spout gets: each read lands in a buffer that becomes a chunk's text as it is, its
//! whole lines; only the line the read cut goes on to the next buffer. The general reader
//! copies every byte once more, from its read buffer into the chunk (on 10 M JSON lines, a
//! twentieth of the run's CPU). A pipe or a terminal keeps the general reader: a read there
//! waits for as much as comes, which a buffer of whole reads would hold back.

use super::{read_lines, trim_eol_str, LineBuilder};
use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes read at a time, about what a chunk holds.
const READ_BYTES: u64 = 256 * 1024;

/// Whether reads of this input come from a regular file (stdin: when redirected from one).
pub(super) fn regular(input: &super::Input) -> bool {
    match input {
        super::Input::File(path) => std::fs::metadata(path).is_ok_and(|m| m.is_file()),
        super::Input::Stdin => {
            super::feed::get().is_none()
                && std::fs::metadata("/dev/stdin").is_ok_and(|m| m.is_file())
        }
    }
}

/// [`read_lines`] for a regular file: `reader` to its end, its lines sent on in chunks whose
/// text is the buffer each read filled. A line longer than `cut` with no end in sight goes to
/// the general reader, which cuts it in pieces, with the rest of the input.
pub(super) fn read_file_lines(
    reader: BufReader<Box<dyn Read + Send>>,
    start: u64,
    cut: Option<usize>,
    mut lines: LineBuilder<'_>,
    read_bytes: &AtomicU64,
) {
    tracing::debug!("reading a regular file straight into chunks");
    // What the buffered reader already holds (after a skip) comes first.
    let mut buf = reader.buffer().to_vec();
    let mut raw = reader.into_inner();
    // The raw offset of `buf`'s first byte.
    let mut at = start;
    loop {
        let before = buf.len();
        match (&mut raw).take(READ_BYTES).read_to_end(&mut buf) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                lines.out.send(Err(format!("read error: {e}")), Vec::new());
                return;
            }
        }
        let got = buf.len() - before;
        read_bytes.fetch_add(got as u64, Ordering::Relaxed);
        if got == 0 {
            if !buf.is_empty() {
                lines.push_line(&buf, at + buf.len() as u64);
            }
            lines.send();
            return;
        }
        let Some(last) = memchr::memrchr(b'\n', &buf) else {
            if cut.is_some_and(|c| buf.len() > c) {
                // The bytes held are read again from the buffer: not counted twice.
                read_bytes.fetch_sub(buf.len() as u64, Ordering::Relaxed);
                let rest = std::io::Cursor::new(buf).chain(raw);
                let rest: BufReader<Box<dyn Read + Send>> =
                    BufReader::with_capacity(READ_BYTES as usize, Box::new(rest));
                read_lines(rest, at, cut, lines, read_bytes);
                return;
            }
            continue;
        };
        let tail = buf.split_off(last + 1);
        // Room for the next read whole: a buffer that grew would double.
        let next = Vec::with_capacity(READ_BYTES as usize + tail.len());
        let whole = std::mem::replace(&mut buf, next);
        buf.extend_from_slice(&tail);
        let len = whole.len() as u64;
        lines.add_owned(whole, at);
        at += len;
        if lines.closed {
            return;
        }
    }
}

impl LineBuilder<'_> {
    /// The whole lines of `run` (each ending in `\n`; its first byte is raw offset `run_at`),
    /// which become a chunk's text as they are, and the chunk sent. Invalid UTF-8, or lines
    /// already gathered, take the copying way.
    fn add_owned(&mut self, run: Vec<u8>, run_at: u64) {
        let gathered = !self.text.is_empty() || !self.ends.is_empty() || !self.carry.is_empty();
        if gathered || simdutf8::basic::from_utf8(&run).is_err() {
            self.push_run(&run, run_at);
            self.send();
            return;
        }
        // SAFETY: `run` was just checked to be UTF-8.
        let text = unsafe { String::from_utf8_unchecked(run) };
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', text.as_bytes()) {
            self.note(trim_eol_str(text.get(start..end).unwrap_or_default()));
            start = end + 1;
            self.ends.push(start);
            self.raw_ends.push(run_at + start as u64);
        }
        self.text = text;
        self.send();
    }
}
