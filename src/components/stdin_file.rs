//! The `stdin` and `file` spouts: one tuple per input line, without its `\n` or `\r\n`. A reader
//! thread reads ahead in chunks so `next_tuple` never blocks; invalid UTF-8 is replaced and
//! counted. With acking on, each line is kept until its tree is acked and re-emitted on fail:
//! kept as a range of the chunk it came in (no copy), and copied out only if it fails.
//! A checkpoint's position (`position.rs`) is the raw input offset after the last line emitted
//! plus the lines still kept; a restored spout emits those first, then reads on from the offset
//! (the reader thread starts at the first `next_tuple`, so a restore can say where).

pub(crate) mod builtin;
pub(crate) mod feed;
mod fingerprint;
mod follow;
mod glob;
mod owned_reads;
mod parallel;
mod position;
mod position_file;
mod read_ahead;
pub(crate) mod source_fields;

use super::replay::Replay;
use super::{Spout, SpoutCollector, SpoutStatus, TaskContext};
use crate::model::plan::streams;
use crate::tuple::Value;
use compact_str::CompactString;
use crossbeam_channel::TryRecvError;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// A chunk of lines is sent on at this many lines or bytes, whichever comes first (a line kept
/// for replay keeps its chunk: chunks stay small).
const CHUNK_LINES: usize = 1024;
const CHUNK_BYTES: usize = 256 * 1024;

/// With JSON input, a line longer than this is sent on in pieces of about this size, so a
/// minified array on one line is never held whole.
const PIECE_BYTES: usize = 1 << 20;

/// Lines the reader thread sends on together: their text end to end in one string, where
/// each one ends in it, and where each ends in the raw input (the byte after its `\n`: what a
/// checkpoint's position records). A line's text may still end in its `\n` or `\r\n` (lines
/// are copied a read at a time, line ends and all): [`LineChunk::line_bounds`] takes it off.
#[derive(Debug, Default)]
struct LineChunk {
    text: Arc<String>,
    /// Where each line (with its line end, if it kept one) ends in `text`.
    ends: Vec<usize>,
    raw_ends: Vec<u64>,
    /// The lines that are pieces of a longer one, going on in the next (JSON input only).
    pieces: Vec<usize>,
    /// A followed file: which file the lines came from (their raw ends are offsets in it).
    file: Option<follow::FileId>,
    /// The lines' values as the reader thread read them ahead; empty when nothing is.
    ahead: read_ahead::ReadAhead,
    /// Each line's 1-based number in its file (the pieces of a long line share it); empty
    /// unless `file_line` is asked for.
    numbers: Vec<u64>,
    /// A glob's matched path the lines came from.
    path: Option<Arc<str>>,
}

impl LineChunk {
    /// The bounds in `text` of line `i`, without its line end.
    fn line_bounds(&self, i: usize) -> Option<(usize, usize)> {
        let end = *self.ends.get(i)?;
        let start = match i {
            0 => 0,
            _ => *self.ends.get(i - 1)?,
        };
        let b = self.text.as_bytes().get(start..end)?;
        let eol = match b {
            [.., b'\r', b'\n'] => 2,
            [.., b'\n'] => 1,
            _ => 0,
        };
        Some((start, end - eol))
    }
}

/// What the reader thread sends: a chunk of lines, or why reading stopped.
type ChunkResult = Result<LineChunk, String>;

/// A line kept for replay: a range of its chunk while it is in flight (the chunk is shared, so
/// keeping costs no copy), its own copy once it failed (so a line failing again and again does
/// not hold its whole chunk).
#[derive(Debug, Clone)]
enum KeptLine {
    InChunk {
        text: Arc<String>,
        start: usize,
        end: usize,
    },
    Own(CompactString),
    /// With `format:`, the values the line (or record) gave: replayed as they were.
    Parsed(crate::tuple::Values),
    /// With `format:`, a line whose values were read ahead (`parse::Prefetch`), kept as its
    /// range in its chunk: a copy of its values per tuple in flight was a tenth of the
    /// spout's time, and such a line's values depend on the line alone, so they are read
    /// again from it when needed (a fail, a checkpoint's position; `LineSpout::read_again`).
    Ahead {
        text: Arc<String>,
        start: usize,
        end: usize,
    },
}

impl KeptLine {
    fn text(&self) -> &str {
        match self {
            KeptLine::InChunk { text, start, end } | KeptLine::Ahead { text, start, end } => {
                text.get(*start..*end).unwrap_or_default()
            }
            KeptLine::Own(s) => s,
            KeptLine::Parsed(_) => "",
        }
    }

    /// The tuple's values when it is emitted again (an `Ahead` line is made `Parsed` before it
    /// can be: see `LineSpout::read_again`).
    fn values(&self) -> crate::tuple::Values {
        match self {
            KeptLine::Parsed(v) => v.clone(),
            other => smallvec::smallvec![Value::str(other.text())],
        }
    }

    /// A range of a chunk made one read ahead.
    fn into_ahead(self) -> KeptLine {
        match self {
            KeptLine::InChunk { text, start, end } => KeptLine::Ahead { text, start, end },
            other => other,
        }
    }
}

/// Emit one read line: as it is, or parsed into fields (an unreadable one to `errors`).
/// `replay`: acking is on, so the tuple is kept until acked. An error ends the run (a header
/// without a column asked for; any unreadable line with `topology.strict`).
fn emit_line(
    parsing: Option<&mut Parsing>,
    replay: Option<&mut Replay<KeptLine>>,
    (line, piece): (&str, bool),
    read_ahead: Option<crate::tuple::Values>,
    keep: impl FnOnce() -> KeptLine,
    place: Option<(&source_fields::Placement, &Value, u64)>,
    out: &mut dyn SpoutCollector,
) -> Result<(), super::FatalError> {
    let placed = |values: crate::tuple::Values| match place {
        Some((p, path, n)) => p.place(&values, path, n),
        None => values,
    };
    let Some(p) = parsing else {
        if place.is_some() {
            // The file fields are kept with the line, so a replay gives them again.
            let values = placed(crate::tuple::one_str(line));
            let msg_id =
                replay.map(|r| Value::Int(r.track(KeptLine::Parsed(values.clone())) as i64));
            out.send(streams::DEFAULT, values, msg_id);
            return Ok(());
        }
        let msg_id = replay.map(|r| Value::Int(r.track(keep()) as i64));
        out.send(streams::DEFAULT, crate::tuple::one_str(line), msg_id);
        return Ok(());
    };
    // A line may give several records (the elements of a JSON array on one line).
    let mut replay = replay;
    // Values read ahead are read again from the line if needed; file fields are kept whole.
    let mut keep = Some(keep).filter(|_| place.is_none());
    let mut record = match (piece, read_ahead.and_then(|v| p.parser.prefetched(v))) {
        (false, Some(values)) => Some(Ok(values)),
        (true, _) => {
            keep = None;
            p.parser.parse_piece(line).transpose()
        }
        (false, None) => {
            keep = None;
            p.parser.parse(line).transpose()
        }
    };
    while let Some(r) = record {
        match r {
            Ok(values) => {
                p.warnings.read();
                let values = placed(values);
                let msg_id = replay.as_deref_mut().map(|r| {
                    let kept = match keep.take() {
                        Some(keep) => keep().into_ahead(),
                        None => KeptLine::Parsed(values.clone()),
                    };
                    Value::Int(r.track(kept) as i64)
                });
                out.send(streams::DEFAULT, values, msg_id);
            }
            Err(reason) => LineSpout::reject(p, line, &reason, out)?,
        }
        record = p.parser.next_ready();
    }
    Ok(())
}

/// Where the lines come from.
enum Input {
    Stdin,
    File(PathBuf),
}

impl Input {
    /// Its name in a position.
    fn kind(&self) -> &'static str {
        match self {
            Input::Stdin => "stdin",
            Input::File(_) => "file",
        }
    }
}

struct LineSpout {
    /// Until the reader thread starts (at the first `next_tuple`, after any `restore`).
    input: Option<Input>,
    /// `stdin` or `file`, for positions.
    kind: &'static str,
    /// Where reading starts in the raw input (a restored position's offset).
    start: u64,
    /// The raw input offset after the last line emitted (and, with `format:`, after the last
    /// record finished: a record over several lines is resumed from its first).
    offset: u64,
    /// Lines a restored position kept, emitted before reading goes on.
    restored: std::collections::VecDeque<KeptLine>,
    chunks: Option<parallel::Chunks>,
    /// The chunk being emitted, and how many of its lines have been.
    current: LineChunk,
    emitted: usize,
    read_bytes: Arc<AtomicU64>,
    total_bytes: u64,
    invalid: Arc<AtomicU64>,
    /// Acking on: lines kept until acked, replayed on fail.
    replay: Replay<KeptLine>,
    tracked: bool,
    done: bool,
    component: String,
    /// `format:` given: lines are read into fields.
    parsing: Option<Parsing>,
    /// JSON and CSV/TSV input: the reader thread reads lines into fields ahead (taken when it
    /// starts).
    prefetch: Vec<super::parse::Prefetch>,
    /// One more such reader, kept here: it reads an `Ahead` line's values again.
    again: Option<super::parse::Prefetch>,
    /// JSON input: a long line is read in pieces.
    cut_long: bool,
    /// `follow: true`: read as the file grows, through rotations.
    follow: Option<Following>,
    /// `fields` names `file_path` or `file_line`: where they go, and the path as written.
    placement: Option<(source_fields::Placement, Value)>,
    /// The number of the last line emitted in its file (what `offset` is after); kept in a
    /// position so `file_line` goes on right after a resume.
    line: u64,
    /// A restored position's line count, where the reader starts numbering.
    start_line: Option<u64>,
    /// `path` is a glob: where each of its files is.
    glob: Option<Globbing>,
    /// Followed without checkpoints, with a state dir: the position kept in a file.
    position_file: Option<position_file::PositionFile>,
    /// The reader threads evaluate the condition of the `filter` that alone receives the
    /// spout's lines (see `Spout::run_filter`).
    filtering: bool,
    /// Lines that condition rejected, passed over without being emitted.
    rejected: u64,
    /// The reader threads fold each chunk's lines for the bolt that alone receives the
    /// spout's lines (see `Spout::run_fold`).
    folding: bool,
    /// Chunks handed over folded, and their lines (logged at `debug` as the spout closes).
    folded: (u64, u64),
    /// Plain lines: the fold the reader thread runs, until it starts.
    plain_fold: Option<Box<dyn super::ReaderFold>>,
}

/// A glob's files, each with its own position.
struct Globbing {
    /// Stripped from matched paths for `file_path` (a relative pattern's folder).
    strip: Option<PathBuf>,
    /// Each file's offset after its last line emitted, and that line's number.
    files: glob::Starts,
    /// The fingerprints of its files (restored, and published by the readers).
    prints: follow::Prints,
    /// The file the last line emitted came from.
    last: Option<follow::FileId>,
}

/// How a followed file is read.
struct Following {
    /// `start_at: end`: a run not resumed from a position starts at the file's end.
    from_end: bool,
    /// Set when the spout goes: the reader stops waiting for more.
    closed: Arc<AtomicBool>,
    /// The file `offset` is in (set by the lines emitted, or by a restored position).
    file: Option<follow::FileId>,
    /// Resumed from a position: `start_at` no longer applies.
    resumed: bool,
    /// The fingerprints of the files read (and of a restored position's file), so a
    /// position names its file by content too.
    prints: follow::Prints,
}

/// A spout that reads its lines into fields (`stdin(format=json, fields=[…])`).
struct Parsing {
    parser: super::parse::Parser,
    errors: Option<crate::model::plan::StreamId>,
    warnings: super::parse::DropWarnings,
}

impl LineSpout {
    fn new(input: Input, max_retries: Option<u32>) -> LineSpout {
        LineSpout {
            kind: input.kind(),
            input: Some(input),
            start: 0,
            offset: 0,
            restored: std::collections::VecDeque::new(),
            chunks: None,
            current: LineChunk::default(),
            emitted: 0,
            read_bytes: Arc::new(AtomicU64::new(0)),
            total_bytes: 0,
            invalid: Arc::new(AtomicU64::new(0)),
            replay: Replay::new(max_retries),
            tracked: false,
            done: false,
            component: String::new(),
            parsing: None,
            prefetch: Vec::new(),
            again: None,
            cut_long: false,
            follow: None,
            placement: None,
            line: 0,
            start_line: None,
            glob: None,
            position_file: None,
            filtering: false,
            rejected: 0,
            folding: false,
            folded: (0, 0),
            plain_fold: None,
        }
    }

    /// `path` is a glob (`strip`: the folder a relative pattern was joined to).
    fn globbing(mut self, strip: Option<PathBuf>) -> LineSpout {
        self.kind = "file-glob";
        self.glob = Some(Globbing {
            strip,
            files: glob::Starts::new(),
            prints: follow::Prints::default(),
            last: None,
        });
        self
    }

    /// Give the file fields (`file_path`, `file_line`) where `placement` puts them; `path`
    /// is the file's path as the topology wrote it.
    fn with_file_fields(mut self, placement: source_fields::Placement, path: &str) -> LineSpout {
        self.placement = Some((placement, Value::str(path)));
        self
    }

    /// Follow the file as it grows (`follow: true`), starting at its end with `from_end`.
    fn following(mut self, from_end: bool) -> LineSpout {
        self.follow = Some(Following {
            from_end,
            closed: Arc::default(),
            file: None,
            resumed: false,
            prints: follow::Prints::default(),
        });
        self
    }

    /// Read lines into fields as `parse` would (the spout's `format` and its options).
    fn parsing(mut self, spec: &super::parse::spec::Spec) -> Result<LineSpout, String> {
        self.cut_long = matches!(spec.format, super::parse::spec::Format::Json { .. });
        let mut parser = super::parse::Parser::new(spec)?;
        self.prefetch = (0..parallel::threads(true))
            .map_while(|_| parser.read_ahead(spec))
            .collect();
        self.again = parser.read_ahead(spec);
        self.parsing = Some(Parsing {
            parser,
            errors: None,
            warnings: super::parse::DropWarnings::new("stdin"),
        });
        Ok(self)
    }

    fn reject(
        p: &mut Parsing,
        line: &str,
        reason: &str,
        out: &mut dyn SpoutCollector,
    ) -> Result<(), super::FatalError> {
        if let Some(why) = p.parser.fatal() {
            return Err(super::FatalError(why.to_string()));
        }
        match p.errors {
            Some(stream) => {
                out.send(
                    stream,
                    smallvec::smallvec![Value::str(line), Value::str(reason)],
                    None,
                );
                Ok(())
            }
            None => {
                out.dropped(1);
                p.warnings.dropped(p.parser.line(), line, reason)
            }
        }
    }

    /// The values of an `Ahead` line, read again from it by `again` as the reader read them.
    /// That read depends on the line alone (JSON: the field paths; CSV/TSV: the layout the
    /// header gave, which never changes after), so it gives what it gave the first time; a
    /// line it cannot read now is an error that ends the run, never other values.
    fn read_again(
        again: Option<&mut super::parse::Prefetch>,
        kept: &KeptLine,
        component: &str,
    ) -> Result<crate::tuple::Values, super::FatalError> {
        again.and_then(|a| a.read(kept.text())).ok_or_else(|| {
            super::FatalError(format!(
                "{component}: a line read ahead cannot be read again to be replayed: {:?}",
                kept.text()
            ))
        })
    }

    /// Every `Ahead` line kept for replay made `Parsed`, for a position to save.
    fn parse_kept(&mut self) -> Result<(), super::FatalError> {
        let (again, component) = (&mut self.again, &self.component);
        self.replay.try_each_kept_mut(|kept| {
            if let KeptLine::Ahead { .. } = kept {
                *kept = KeptLine::Parsed(Self::read_again(again.as_mut(), kept, component)?);
            }
            Ok(())
        })
    }

    /// Emit the next line of the current chunk, if there is one left.
    fn emit_next(&mut self, out: &mut dyn SpoutCollector) -> Result<bool, super::FatalError> {
        if self.filtering {
            self.skip_rejected_lines(out);
        }
        if self.folding && self.emitted == 0 {
            self.hand_over_folded_chunk(out);
        }
        let Some((start, end)) = self.current.line_bounds(self.emitted) else {
            return Ok(false);
        };
        let raw_end = self.current.raw_ends.get(self.emitted).copied();
        let number = self.current.numbers.get(self.emitted).copied();
        let file = self.current.file;
        if let (Some(g), Some(p)) = (self.glob.as_mut(), self.parsing.as_ref()) {
            // A record over several lines cannot be cut by another file's lines.
            if g.last.is_some() && g.last != file && p.parser.pending() {
                return Err(super::FatalError(format!(
                    "{}: a record over several lines was cut by lines of another file of the glob; \
                     with a glob, each record must be on one line",
                    self.component
                )));
            }
            g.last = file;
        }
        let piece = self.current.pieces.contains(&self.emitted);
        let read_ahead = self.current.ahead.take(self.emitted);
        self.emitted += 1;
        let text = &self.current.text;
        let line = text.get(start..end).unwrap_or_default();
        let keep = || KeptLine::InChunk {
            text: text.clone(),
            start,
            end,
        };
        let replay = self.tracked.then_some(&mut self.replay);
        let place = self
            .placement
            .as_ref()
            .map(|(p, path)| (p, path, number.unwrap_or_default()));
        // A glob's matched path, made a value only when `file_path` may be asked for.
        let chunk_path = match place {
            Some(_) => self.current.path.as_ref().map(|p| Value::str(p)),
            None => None,
        };
        let place = place.map(|(p, path, n)| (p, chunk_path.as_ref().unwrap_or(path), n));
        emit_line(
            self.parsing.as_mut(),
            replay,
            (line, piece),
            read_ahead,
            keep,
            place,
            out,
        )?;
        self.emitted_up_to(raw_end, number, piece, file);
        Ok(true)
    }

    /// Pass over the lines the reader's filter rejected next in the current chunk: read ahead
    /// and between records, they are counted as the filter's drops instead of emitted, a run
    /// at once, when the collector can (see `SpoutCollector::skip_filtered`).
    fn skip_rejected_lines(&mut self, out: &mut dyn SpoutCollector) {
        let run = self.current.ahead.rejected_run(self.emitted);
        let Some(p) = self.parsing.as_mut().filter(|_| run > 0) else {
            return;
        };
        if !p.parser.prefetch_ready() || !out.skip_filtered(run as u64, self.tracked) {
            return;
        }
        self.rejected += run as u64;
        self.pass_over(run);
    }

    /// Move past the next `run` lines of the current chunk, which the collector took without
    /// their being emitted (rejected by a filter, or folded): the parser counts them read,
    /// and the position moves past them as past lines whose trees completed.
    fn pass_over(&mut self, run: usize) {
        if let Some(p) = self.parsing.as_mut() {
            p.parser.take_prefetched_lines(run as u64);
            p.warnings.read_lines(run as u64);
        }
        let last = self.emitted + run - 1;
        let raw_end = self.current.raw_ends.get(last).copied();
        let number = self.current.numbers.get(last).copied();
        self.emitted += run;
        self.emitted_up_to(raw_end, number, false, self.current.file);
    }

    /// Hand the chunk just begun over folded, when the reader's fold made one tuple of all its
    /// lines and the collector takes it (see `SpoutCollector::fold_ahead`): its lines are then
    /// passed over as lines whose trees completed.
    fn hand_over_folded_chunk(&mut self, out: &mut dyn SpoutCollector) {
        let lines = self.current.ends.len();
        let ready = self
            .parsing
            .as_ref()
            .is_none_or(|p| p.parser.prefetch_ready());
        if lines == 0 || !ready {
            return;
        }
        let Some(folded) = self.current.ahead.take_folded() else {
            return;
        };
        if !out.fold_ahead(lines as u64, self.tracked, folded) {
            return;
        }
        self.folded.0 += 1;
        self.folded.1 += lines as u64;
        self.pass_over(lines);
    }

    /// The line just emitted (`piece`: a piece of a longer one) ended at raw offset `raw_end`
    /// of `file`, as line `number`: where a position resumes, unless a record is under way.
    fn emitted_up_to(
        &mut self,
        raw_end: Option<u64>,
        number: Option<u64>,
        piece: bool,
        file: Option<follow::FileId>,
    ) {
        let pending = self.parsing.as_ref().is_some_and(|p| p.parser.pending());
        if let (Some(raw_end), false) = (raw_end, pending) {
            self.offset = raw_end;
            if let Some(n) = number {
                // A piece's line is not finished: a resume goes on numbering it.
                self.line = if piece { n.saturating_sub(1) } else { n };
            }
            if let (Some(g), Some(id)) = (self.glob.as_mut(), file) {
                g.files.insert(id, (raw_end, self.line));
            }
            if let (Some(f), Some(id)) = (self.follow.as_mut(), file) {
                f.file = Some(id);
            }
        }
    }

    /// Emit the next line a restored position kept, if one is left: as a new tracked tuple.
    fn emit_restored(&mut self, out: &mut dyn SpoutCollector) -> bool {
        let Some(kept) = self.restored.pop_front() else {
            return false;
        };
        let values = kept.values();
        let msg_id = self
            .tracked
            .then(|| Value::Int(self.replay.track(kept) as i64));
        out.send(streams::DEFAULT, values, msg_id);
        true
    }

    /// What the reader thread of a glob reads: the matched files, from where they were left.
    fn glob_job(&self, g: &Globbing, pattern: PathBuf, cut: Option<usize>) -> glob::GlobJob {
        glob::GlobJob {
            pattern,
            strip: g.strip.clone(),
            starts: g.files.clone(),
            restored_prints: g.prints.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            prints: g.prints.clone(),
            closed: self.follow.as_ref().map(|f| f.closed.clone()),
            from_end: self
                .follow
                .as_ref()
                .is_some_and(|f| f.from_end && !f.resumed),
            cut,
            numbered: self.placement.is_some(),
        }
    }

    /// Start the reader thread (at the first `next_tuple`, so a `restore` can set where).
    fn start_reader(&mut self) -> anyhow::Result<()> {
        let Some(input) = self.input.take() else {
            return Ok(());
        };
        let (tx, rx) = crossbeam_channel::bounded(4);
        let (read, invalid) = (self.read_bytes.clone(), self.invalid.clone());
        read.store(self.start, Ordering::Relaxed);
        let start = self.start;
        let cut = self.cut_long.then_some(PIECE_BYTES);
        let name = format!("{}-reader", self.component);
        let mut prefetch = std::mem::take(&mut self.prefetch);
        prefetch.truncate(parallel::threads(self.filtering || self.folding));
        // Numbering lines (`file_line`): from the restored count, else counted at start.
        let numbering = self.placement.is_some().then_some(self.start_line);
        if let (Some(g), Input::File(pattern)) = (&self.glob, &input) {
            let job = self.glob_job(g, pattern.clone(), cut);
            std::thread::Builder::new()
                .name(name)
                .spawn(move || job.run(tx, read, invalid))?;
            self.chunks = Some(parallel::Chunks::One(rx));
            return Ok(());
        }
        if let (Some(f), Input::File(path)) = (self.follow.as_mut(), &input) {
            let start = match (f.from_end, f.resumed) {
                (true, false) => std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
                _ => start,
            };
            read.store(start, Ordering::Relaxed);
            // A position taken before the first line is emitted names the file read too (a
            // rotation before the reader saw one then reads the old file's rest first).
            if f.file.is_none() {
                f.file = std::fs::metadata(path).ok().map(|m| follow::FileId::of(&m));
                self.offset = start;
            }
            let print = f.file.and_then(|id| {
                let prints = f.prints.lock().unwrap_or_else(|e| e.into_inner());
                prints.get(&id).copied()
            });
            let job = follow::FollowJob {
                path: path.clone(),
                start,
                expect: f.file.map(|id| follow::Ident { id, print }),
                prints: Some(f.prints.clone()),
                closed: f.closed.clone(),
                cut,
                numbering: numbering.map(|n| n.filter(|_| f.resumed)),
                shown: None,
                seen: None,
            };
            std::thread::Builder::new()
                .name(name)
                .spawn(move || job.run(&tx, &read, &invalid))?;
            self.chunks = Some(parallel::Chunks::One(rx));
            return Ok(());
        }
        let reading = Reading {
            cut,
            prefetch: None,
            fold: self.plain_fold.take(),
            numbering,
        };
        let chunks = spawn_plain_reader(
            input,
            start,
            reading,
            prefetch,
            (tx, rx),
            name,
            read,
            invalid,
        )?;
        self.chunks = Some(chunks);
        Ok(())
    }
}

/// Start the reader thread of a plain input (stdin or one file, not followed): fields read
/// ahead on several threads when there are cores for them (`readers`, one per thread), else
/// on the reader thread itself. Returns the spout's end.
#[allow(clippy::too_many_arguments)]
fn spawn_plain_reader(
    input: Input,
    start: u64,
    mut reading: Reading,
    mut readers: Vec<super::parse::Prefetch>,
    (tx, rx): (
        crossbeam_channel::Sender<ChunkResult>,
        crossbeam_channel::Receiver<ChunkResult>,
    ),
    name: String,
    read: Arc<AtomicU64>,
    invalid: Arc<AtomicU64>,
) -> std::io::Result<parallel::Chunks> {
    let (out, chunks) = if readers.len() > 1 {
        let (spread, chunks) = parallel::spread(readers, &name)?;
        (Out::Spread(spread), chunks)
    } else {
        reading.prefetch = readers.pop();
        (Out::One(tx), parallel::Chunks::One(rx))
    };
    std::thread::Builder::new()
        .name(name)
        .spawn(move || reader_thread(input, start, reading, out, read, invalid))?;
    Ok(chunks)
}

/// Read `input` from raw offset `start` (a file seeks there; stdin skips that many bytes).
fn reader_thread(
    input: Input,
    start: u64,
    reading: Reading,
    mut out: Out,
    read_bytes: Arc<AtomicU64>,
    invalid: Arc<AtomicU64>,
) -> std::io::Result<()> {
    let source = match open_at(&input, start) {
        Ok(source) => source,
        Err(e) => {
            out.send(Err(e), Vec::new());
            return Ok(());
        }
    };
    let mut lines = LineBuilder::with_out(out, None, &invalid);
    lines.prefetch = reading.prefetch;
    lines.fold = reading.fold;
    if let (Some(known), Input::File(path)) = (reading.numbering, &input) {
        match known.map_or_else(|| lines_before(path, start), Ok) {
            Ok(n) => lines.numbering = Some(n),
            Err(e) => {
                lines.out.send(Err(e), Vec::new());
                return Ok(());
            }
        }
    }
    match owned_reads::regular(&input) {
        true => owned_reads::read_file_lines(source, start, reading.cut, lines, &read_bytes),
        false => read_lines(source, start, reading.cut, lines, &read_bytes),
    }
    Ok(())
}

/// How a reader thread reads lines besides where from.
struct Reading {
    /// A line longer than this goes in pieces.
    cut: Option<usize>,
    prefetch: Option<super::parse::Prefetch>,
    /// Plain lines folded as they are read (see `Spout::run_fold`).
    fold: Option<Box<dyn super::ReaderFold>>,
    /// `Some` when lines are numbered: the lines before the start, when known.
    numbering: Option<Option<u64>>,
}

/// The number of lines (`\n`s) in the first `end` bytes of `path`: where numbering starts
/// when reading starts past byte 0 without a known line count.
fn lines_before(path: &std::path::Path, end: u64) -> Result<u64, String> {
    if end == 0 {
        return Ok(0);
    }
    let f =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut reader = BufReader::with_capacity(256 * 1024, f.take(end));
    let mut n = 0u64;
    loop {
        let data = match reader.fill_buf() {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        if data.is_empty() {
            return Ok(n);
        }
        n += memchr::memchr_iter(b'\n', data).count() as u64;
        let len = data.len();
        reader.consume(len);
    }
}

/// `input`, read from raw offset `start`.
fn open_at(input: &Input, start: u64) -> Result<BufReader<Box<dyn Read + Send>>, String> {
    use std::io::{Seek, SeekFrom};
    let source: Box<dyn Read + Send> = match input {
        Input::Stdin => match feed::get() {
            // Kept for a rollback: read from the position's offset, nothing to skip.
            Some(feed) => {
                let from = Box::new(feed.reader_from(start)?);
                return Ok(BufReader::with_capacity(256 * 1024, from));
            }
            None => Box::new(std::io::stdin()),
        },
        Input::File(p) => {
            let mut f =
                std::fs::File::open(p).map_err(|e| format!("cannot open {}: {e}", p.display()))?;
            f.seek(SeekFrom::Start(start))
                .map_err(|e| format!("cannot seek {} to byte {start}: {e}", p.display()))?;
            Box::new(f)
        }
    };
    let mut reader = BufReader::with_capacity(256 * 1024, source);
    if let Input::Stdin = input {
        // The same input given again: skip what the position says was read.
        skip(&mut reader, start)?;
    }
    Ok(reader)
}

/// Read and drop the first `n` bytes of stdin (an error if it has fewer).
fn skip(reader: &mut impl Read, n: u64) -> Result<(), String> {
    let skipped = std::io::copy(&mut reader.take(n), &mut std::io::sink())
        .map_err(|e| format!("skipping {n} bytes of stdin: {e}"))?;
    if skipped < n {
        return Err(format!(
            "stdin ended at byte {skipped}, before the restored position's offset {n} \
             (give the run the same input again)"
        ));
    }
    Ok(())
}

/// Read `reader` to its end, sending its lines on in chunks (or an error) through `lines`; its
/// first byte is byte `start` of the input. `cut`: a line longer than this goes in pieces.
fn read_lines(
    mut reader: impl BufRead,
    start: u64,
    cut: Option<usize>,
    mut lines: LineBuilder<'_>,
    read_bytes: &AtomicU64,
) {
    // The raw offset of the read buffer's first byte.
    let mut at = start;
    loop {
        let data = match reader.fill_buf() {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                lines.out.send(Err(format!("read error: {e}")), Vec::new());
                return;
            }
        };
        if data.is_empty() {
            break;
        }
        let n = data.len();
        // Whole lines are taken straight from the read buffer; a line cut by the buffer's end
        // waits in `carry` for the rest.
        let (mut rest, mut rest_at) = (data, at);
        if !lines.carry.is_empty() {
            match memchr::memchr(b'\n', rest) {
                Some(i) => {
                    lines.carry.extend_from_slice(&rest[..=i]);
                    let line = std::mem::take(&mut lines.carry);
                    rest_at += i as u64 + 1;
                    lines.push_run(&line, rest_at - line.len() as u64);
                    rest = &rest[i + 1..];
                }
                None => {
                    lines.carry.extend_from_slice(rest);
                    rest = &[];
                }
            }
        }
        if let Some(last) = memchr::memrchr(b'\n', rest) {
            lines.push_run(&rest[..=last], rest_at);
            lines.carry.extend_from_slice(&rest[last + 1..]);
        } else {
            lines.carry.extend_from_slice(rest);
        }
        if let Some(cut) = cut.filter(|&c| lines.carry.len() > c) {
            lines.push_piece(cut, at + n as u64);
        }
        reader.consume(n);
        at += n as u64;
        read_bytes.fetch_add(n as u64, Ordering::Relaxed);
        // Send what this read gave before the next read may block (interactive input).
        lines.send();
        if lines.closed {
            return;
        }
    }
    if !lines.carry.is_empty() {
        let last = std::mem::take(&mut lines.carry);
        lines.push_line(&last, at);
    }
    lines.send();
}

/// Turns bytes into lines for the reader thread, sent on in chunks.
struct LineBuilder<'a> {
    out: Out<'a>,
    /// The chunk being gathered: its lines end to end, and where each ends.
    text: String,
    ends: Vec<usize>,
    raw_ends: Vec<u64>,
    pieces: Vec<usize>,
    /// The start of a line the read buffer cut off.
    carry: Vec<u8>,
    invalid: &'a AtomicU64,
    /// The spout is gone (the run is ending): nothing more to read.
    closed: bool,
    /// The followed file read, stamped on each chunk.
    file: Option<follow::FileId>,
    /// Lines are read into fields ahead, and their values sent with them.
    prefetch: Option<super::parse::Prefetch>,
    /// Plain lines are folded for a bolt (see `Spout::run_fold`), what it made of each chunk
    /// sent with it.
    fold: Option<Box<dyn super::ReaderFold>>,
    ahead: read_ahead::ReadAhead,
    /// Read ahead by parse threads (`Out::Spread`): which lines of the chunk they read.
    whole: Vec<bool>,
    /// The last line added was a piece of a longer one.
    after_piece: bool,
    /// Lines are numbered (`file_line`): how many were finished before the next one.
    numbering: Option<u64>,
    numbers: Vec<u64>,
    /// A glob's matched path, stamped on each chunk.
    path: Option<Arc<str>>,
}

impl<'a> LineBuilder<'a> {
    fn new(
        tx: &'a crossbeam_channel::Sender<ChunkResult>,
        file: Option<follow::FileId>,
        invalid: &'a AtomicU64,
    ) -> LineBuilder<'a> {
        LineBuilder::with_out(Out::Shared(tx), file, invalid)
    }

    fn with_out(
        out: Out<'a>,
        file: Option<follow::FileId>,
        invalid: &'a AtomicU64,
    ) -> LineBuilder<'a> {
        LineBuilder {
            out,
            text: String::new(),
            ends: Vec::with_capacity(CHUNK_LINES),
            raw_ends: Vec::with_capacity(CHUNK_LINES),
            pieces: Vec::new(),
            carry: Vec::new(),
            invalid,
            closed: false,
            file,
            prefetch: None,
            fold: None,
            ahead: Default::default(),
            whole: Vec::new(),
            after_piece: false,
            numbering: None,
            numbers: Vec::new(),
            path: None,
        }
    }

    fn add(&mut self, line: &str, raw_end: u64) {
        self.note(line);
        self.text.push_str(line);
        self.ends.push(self.text.len());
        self.raw_ends.push(raw_end);
        if self.full(0) {
            self.send();
        }
    }

    /// The whole lines of `run` (each ending in `\n`; its first byte is raw offset `run_at`),
    /// copied into the chunk a stretch at a time with their line ends, not a line at a time.
    fn add_run(&mut self, run: &str, run_at: u64) {
        // `run[copied..]` is not in `text` yet.
        let mut copied = 0;
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', run.as_bytes()) {
            self.note(trim_eol_str(run.get(start..end).unwrap_or_default()));
            start = end + 1;
            self.ends.push(self.text.len() + start - copied);
            self.raw_ends.push(run_at + start as u64);
            if self.full(start - copied) {
                self.text
                    .push_str(run.get(copied..start).unwrap_or_default());
                copied = start;
                self.send();
            }
        }
        self.text.push_str(run.get(copied..).unwrap_or_default());
    }

    /// The chunk is full (with `pending` bytes of its lines still to copy): it goes on.
    fn full(&self, pending: usize) -> bool {
        self.ends.len() >= CHUNK_LINES || self.text.len() + pending >= CHUNK_BYTES
    }

    /// What is kept of a line besides its text: its number, and its values read ahead (or
    /// whether parse threads read them).
    fn note(&mut self, line: &str) {
        if let Some(done) = self.numbering.as_mut() {
            // The pieces of a long line share its number; its last part finishes it.
            self.numbers.push(*done + 1);
            if self.pieces.last() != Some(&self.ends.len()) {
                *done += 1;
            }
        }
        if let Some(fold) = self.fold.as_mut() {
            match self.pieces.last() == Some(&self.ends.len()) {
                true => fold.abandon(),
                false => fold.add_text(line),
            }
        }
        if self.prefetch.is_some() || self.out.spread() {
            // A piece, and the rest of a line cut in pieces, are the spout parser's to read.
            let piece = self.pieces.last() == Some(&self.ends.len());
            let whole = !piece && !std::mem::replace(&mut self.after_piece, piece);
            match self.prefetch.as_mut() {
                Some(p) => self.ahead.read(p, line, whole),
                None => self.whole.push(whole),
            }
        }
    }

    /// The values read ahead so far, and room for the next chunk's as many.
    fn next_ahead(&mut self) -> read_ahead::ReadAhead {
        let Some(p) = self.prefetch.as_mut() else {
            let mut ahead = read_ahead::ReadAhead::default();
            ahead.set_folded(self.fold.as_mut().and_then(|f| f.finish()));
            return ahead;
        };
        self.ahead.finish(p);
        let width = p.width();
        let next = read_ahead::ReadAhead::with_capacity(CHUNK_LINES, width);
        std::mem::replace(&mut self.ahead, next)
    }

    /// Send the lines gathered so far.
    fn send(&mut self) {
        if self.ends.is_empty() || self.closed {
            return;
        }
        let next = String::with_capacity(self.text.len().min(CHUNK_BYTES));
        let chunk = LineChunk {
            text: Arc::new(std::mem::replace(&mut self.text, next)),
            ends: std::mem::replace(&mut self.ends, Vec::with_capacity(CHUNK_LINES)),
            raw_ends: std::mem::replace(&mut self.raw_ends, Vec::with_capacity(CHUNK_LINES)),
            pieces: std::mem::take(&mut self.pieces),
            file: self.file,
            ahead: self.next_ahead(),
            numbers: std::mem::take(&mut self.numbers),
            path: self.path.clone(),
        };
        let whole = std::mem::take(&mut self.whole);
        self.closed = !self.out.send(Ok(chunk), whole);
    }

    /// The first `cut` bytes of the line gathered in `carry` (less, to end on a character),
    /// as a piece of a line; `carry_end` is the raw offset where `carry` ends.
    fn push_piece(&mut self, cut: usize, carry_end: u64) {
        let mut end = cut.min(self.carry.len());
        // Back off to the start of a UTF-8 character (at most 3 continuation bytes).
        while end > 0 && end + 3 > cut && (self.carry[end] & 0xC0) == 0x80 {
            end -= 1;
        }
        let piece: Vec<u8> = self.carry.drain(..end).collect();
        let raw_end = carry_end - self.carry.len() as u64;
        self.pieces.push(self.ends.len());
        match std::str::from_utf8(&piece) {
            Ok(text) => self.add(text, raw_end),
            Err(_) => {
                self.invalid.fetch_add(1, Ordering::Relaxed);
                self.add(&String::from_utf8_lossy(&piece), raw_end);
            }
        }
    }

    /// A run of whole lines, each ending in `\n`, starting at raw offset `run_at`: validated
    /// as UTF-8 in one pass (line ends are character boundaries), one line at a time only when
    /// that fails.
    fn push_run(&mut self, run: &[u8], run_at: u64) {
        match simdutf8::basic::from_utf8(run) {
            Ok(text) => self.add_run(text, run_at),
            Err(_) => {
                let mut raw_end = run_at;
                for line in run.split_inclusive(|&b| b == b'\n') {
                    raw_end += line.len() as u64;
                    self.push_line(line, raw_end);
                }
            }
        }
    }

    /// One line, with or without its `\n`, ending at raw offset `raw_end`; invalid UTF-8 is
    /// replaced and counted.
    fn push_line(&mut self, line: &[u8], raw_end: u64) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match std::str::from_utf8(line) {
            Ok(s) => self.add(s, raw_end),
            Err(_) => {
                self.invalid.fetch_add(1, Ordering::Relaxed);
                self.add(&String::from_utf8_lossy(line), raw_end);
            }
        }
    }
}

/// Where a reader thread's chunks go: to the spout, or dealt out to parse threads.
enum Out<'a> {
    One(crossbeam_channel::Sender<ChunkResult>),
    Shared(&'a crossbeam_channel::Sender<ChunkResult>),
    Spread(parallel::Spread),
}

impl Out<'_> {
    /// Send `chunk` on (`whole`: its lines the parse threads read). False when the spout is gone.
    fn send(&mut self, chunk: ChunkResult, whole: Vec<bool>) -> bool {
        match self {
            Out::One(tx) => tx.send(chunk).is_ok(),
            Out::Shared(tx) => tx.send(chunk).is_ok(),
            Out::Spread(s) => s.send(chunk, whole),
        }
    }

    fn spread(&self) -> bool {
        matches!(self, Out::Spread(_))
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
        if let Some(p) = self.parsing.as_mut() {
            p.errors = super::wired_stream(ctx, super::parse::ERRORS_STREAM);
            p.warnings = super::parse::DropWarnings::for_task(ctx);
            if let Some(max) = ctx.config.get_u64(super::parse::MAX_RECORD_KEY) {
                p.parser
                    .set_max_record(usize::try_from(max).unwrap_or(usize::MAX));
            }
        }
        self.replay.set_label(&ctx.component, ctx.task_id);
        if self.follow.is_some() {
            let followed = match &self.input {
                Some(Input::File(p)) => p.clone(),
                _ => PathBuf::new(),
            };
            self.position_file = position_file::PositionFile::for_task(ctx, &followed)?;
            let saved = self.position_file.as_ref().map(|f| f.load()).transpose();
            let saved = saved.map_err(|e| anyhow::anyhow!("{}: {e}", self.component))?;
            if let Some(position) = saved.flatten() {
                self.restore(position)?;
            }
        }
        if let (Some(Input::File(p)), None) = (&self.input, &self.glob) {
            self.total_bytes = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        }
        Ok(())
    }

    fn next_tuple(&mut self, out: &mut dyn SpoutCollector) -> anyhow::Result<SpoutStatus> {
        if self.position_file.as_ref().is_some_and(|f| f.due()) {
            let position = position::of(self);
            if let Some(f) = self.position_file.as_mut() {
                f.save(&position);
            }
        }
        if let Some((seq, line)) = self.replay.next_replay() {
            out.send(
                streams::DEFAULT,
                line.values(),
                Some(Value::Int(seq as i64)),
            );
            return Ok(SpoutStatus::Busy);
        }
        if self.emit_restored(out) || self.emit_next(out)? {
            return Ok(SpoutStatus::Busy);
        }
        if self.done {
            return Ok(SpoutStatus::Exhausted);
        }
        if self.input.is_some() {
            self.start_reader()?;
        }
        let Some(rx) = self.chunks.as_mut() else {
            self.done = true;
            return Ok(SpoutStatus::Exhausted);
        };
        match rx.try_recv() {
            Ok(Ok(chunk)) => {
                self.current = chunk;
                self.emitted = 0;
                Ok(SpoutStatus::Busy)
            }
            Ok(Err(e)) => {
                self.done = true;
                Err(super::FatalError(format!("{}: {e}", self.component)).into())
            }
            Err(TryRecvError::Empty) => Ok(SpoutStatus::Idle),
            Err(TryRecvError::Disconnected) => {
                self.done = true;
                if let Some(p) = self.parsing.as_mut() {
                    if let Some((text, reason)) = p.parser.unfinished() {
                        Self::reject(p, &text, &reason, out)?;
                        p.warnings.nothing_read()?;
                        return Ok(SpoutStatus::Busy);
                    }
                    p.warnings.nothing_read()?;
                }
                Ok(SpoutStatus::Exhausted)
            }
        }
    }

    fn ack(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        self.replay.ack(&msg_id);
        Ok(())
    }

    fn fail(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        if let Some(kept) = self.replay.kept_mut(&msg_id) {
            match kept {
                // Keep its own copy, not the whole chunk, while it waits to be replayed.
                KeptLine::InChunk { .. } => *kept = KeptLine::Own(CompactString::new(kept.text())),
                KeptLine::Ahead { .. } => {
                    let values = Self::read_again(self.again.as_mut(), kept, &self.component)?;
                    *kept = KeptLine::Parsed(values);
                }
                KeptLine::Own(_) | KeptLine::Parsed(_) => {}
            }
        }
        self.replay.fail(&msg_id);
        Ok(())
    }

    fn position(&mut self) -> Option<Value> {
        Some(position::of(self))
    }

    fn restore(&mut self, position: Value) -> anyhow::Result<()> {
        position::restore(self, position)
            .map_err(|e| anyhow::anyhow!("{}: cannot resume: {e}", self.component))
    }

    fn progress(&self) -> Option<(u64, u64)> {
        // A followed file has no end to be a fraction of.
        if self.follow.is_some() {
            return None;
        }
        Some((self.read_bytes.load(Ordering::Relaxed), self.total_bytes))
    }

    fn lost(&self) -> u64 {
        self.replay.lost()
    }

    /// Taken when lines are read into fields ahead (JSON, CSV/TSV; not a glob's or a followed
    /// file's, whose readers read no fields) and the tuple is those fields alone (no file
    /// fields): the reader threads then evaluate it on the values they read. Before the reader
    /// starts, so every line is checked.
    fn run_filter(&mut self, filter: &crate::expr::Compiled) -> bool {
        let reads_ahead = self.glob.is_none() && self.follow.is_none();
        if self.parsing.is_none() || self.placement.is_some() || !reads_ahead {
            return false;
        }
        if self.chunks.is_none() && !self.prefetch.is_empty() {
            for p in &mut self.prefetch {
                p.set_filter(filter.clone());
            }
            self.filtering = true;
        }
        self.filtering
    }

    /// Taken under the same conditions as a filter (see `run_filter`), when no filter is.
    /// Plain lines (no `format`) are folded by the reader thread itself.
    fn run_fold(&mut self, fold: Box<dyn super::ReaderFold>) -> bool {
        let reads_ahead = self.glob.is_none() && self.follow.is_none();
        if self.placement.is_some() || !reads_ahead || self.filtering {
            return false;
        }
        if self.parsing.is_none() {
            if self.chunks.is_none() && self.input.is_some() {
                self.plain_fold = Some(fold);
                self.folding = true;
            }
            return self.folding;
        }
        if self.chunks.is_none() && !self.prefetch.is_empty() {
            for p in &mut self.prefetch {
                p.set_fold(fold.fresh());
            }
            self.folding = true;
        }
        self.folding
    }

    fn close(&mut self) {
        if self.filtering {
            tracing::debug!(
                "{}: {} lines rejected by the filter after it where they were read",
                self.component,
                self.rejected
            );
        }
        if self.folding {
            let (chunks, lines) = self.folded;
            tracing::debug!(
                "{}: {chunks} chunks ({lines} lines) folded where they were read",
                self.component
            );
        }
        if let Some(f) = &self.follow {
            f.closed.store(true, Ordering::Relaxed);
        }
        if self.position_file.is_some() {
            let position = position::of(self);
            if let Some(f) = self.position_file.as_mut() {
                f.save(&position);
            }
        }
        let invalid = self.invalid.load(Ordering::Relaxed);
        if invalid > 0 {
            tracing::warn!(
                "{}: {invalid} line(s) had invalid UTF-8; bad bytes were replaced with U+FFFD",
                self.component
            );
        }
    }
}

impl Drop for LineSpout {
    fn drop(&mut self) {
        if let Some(f) = &self.follow {
            f.closed.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line `read_lines` sends for `input` read through a buffer of `capacity` bytes.
    fn lines(input: &[u8], capacity: usize) -> (Vec<String>, u64) {
        let (lines, _, invalid) = lines_and_ends(input, capacity, 0);
        (lines, invalid)
    }

    /// Every line `read_lines` sends for `input` (byte `start` of a larger input) read through
    /// a buffer of `capacity` bytes, with each line's raw end.
    fn lines_and_ends(input: &[u8], capacity: usize, start: u64) -> (Vec<String>, Vec<u64>, u64) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let (read, invalid) = (AtomicU64::new(0), AtomicU64::new(0));
        read_lines(
            BufReader::with_capacity(capacity, input),
            start,
            None,
            LineBuilder::new(&tx, None, &invalid),
            &read,
        );
        drop(tx);
        assert_eq!(read.load(Ordering::Relaxed), input.len() as u64);
        let chunks: Vec<LineChunk> = rx.iter().map(|c| c.unwrap_or_default()).collect();
        let raw_ends = chunks.iter().flat_map(|c| c.raw_ends.clone()).collect();
        let all = chunks
            .into_iter()
            .flat_map(|chunk| {
                (0..chunk.ends.len())
                    .map(|i| {
                        let (start, end) = chunk.line_bounds(i).expect("a line");
                        chunk.text[start..end].to_string()
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        (all, raw_ends, invalid.load(Ordering::Relaxed))
    }

    /// Lines copied a read at a time still go in chunks of at most `CHUNK_LINES` lines and
    /// about `CHUNK_BYTES` bytes (one line over at most), with their line ends kept in the text
    /// and taken off each line.
    #[test]
    fn a_read_of_many_lines_is_cut_into_bounded_chunks() {
        let long = "x".repeat(999);
        let mut input = String::new();
        for i in 0..700 {
            input.push_str(&format!("{i}{long}\r\n"));
        }
        for i in 0..3000 {
            input.push_str(&format!("{i}\n"));
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        let (read, invalid) = (AtomicU64::new(0), AtomicU64::new(0));
        let capacity = input.len() + 1;
        read_lines(
            BufReader::with_capacity(capacity, input.as_bytes()),
            0,
            None,
            LineBuilder::new(&tx, None, &invalid),
            &read,
        );
        drop(tx);
        let chunks: Vec<LineChunk> = rx.iter().map(|c| c.expect("a chunk")).collect();
        assert!(chunks.len() >= 5, "{} chunks", chunks.len());
        let mut got = Vec::new();
        for c in &chunks {
            assert!(c.ends.len() <= CHUNK_LINES);
            assert!(c.text.len() <= CHUNK_BYTES + 1024, "{} bytes", c.text.len());
            for i in 0..c.ends.len() {
                let (start, end) = c.line_bounds(i).expect("a line");
                got.push(c.text[start..end].to_string());
            }
        }
        let want: Vec<String> = input.lines().map(str::to_string).collect();
        assert_eq!(got, want);
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

    /// Keeps what a spout emits: (line, message id).
    #[derive(Default)]
    struct Emitted(Vec<(String, Option<Value>)>);

    impl SpoutCollector for Emitted {
        fn emit(
            &mut self,
            _: crate::model::plan::StreamId,
            values: crate::tuple::Values,
            msg_id: Option<Value>,
        ) -> Vec<u32> {
            let line = values.first().and_then(Value::as_str).unwrap_or_default();
            self.0.push((line.to_string(), msg_id));
            Vec::new()
        }
        fn emit_direct(
            &mut self,
            _: u32,
            _: crate::model::plan::StreamId,
            _: crate::tuple::Values,
            _: Option<Value>,
        ) {
        }
        fn report_error(&mut self, _: &str) {}
    }

    #[test]
    fn kept_lines_share_their_chunk_until_they_fail() {
        let mut spout = LineSpout::new(Input::Stdin, None);
        spout.tracked = true;
        let text = Arc::new("onetwothree".to_string());
        spout.current = LineChunk {
            text: text.clone(),
            ends: vec![3, 6, 11],
            ..LineChunk::default()
        };
        let mut out = Emitted::default();
        while spout.emit_next(&mut out).unwrap_or(false) {}
        let lines: Vec<&str> = out.0.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(lines, ["one", "two", "three"]);
        assert_eq!(
            Arc::strong_count(&text),
            5,
            "the spout and three kept lines share it"
        );
        let ids: Vec<Value> = out
            .0
            .iter()
            .map(|(_, id)| id.clone().unwrap_or(Value::Null))
            .collect();
        let id = |i: usize| ids[i].clone();
        spout.ack(id(0), &mut out).unwrap_or_default();
        spout.fail(id(1), &mut out).unwrap_or_default();
        assert_eq!(
            Arc::strong_count(&text),
            3,
            "acked and failed lines let go of it"
        );
        spout.current = LineChunk::default();
        assert!(matches!(spout.next_tuple(&mut out), Ok(SpoutStatus::Busy)));
        assert_eq!(
            out.0.last().map(|(l, _)| l.as_str()),
            Some("two"),
            "replayed"
        );
        spout.ack(id(1), &mut out).unwrap_or_default();
        spout.ack(id(2), &mut out).unwrap_or_default();
        assert_eq!(Arc::strong_count(&text), 1);
    }

    #[test]
    fn raw_ends_count_input_bytes_before_replacement_and_trimming() {
        let input = b"one\r\nbad \xff\xfe\n\nfine \xc3\xa9\r\nlast";
        // The oracle: each `\n`'s offset plus one, and the end for the unfinished last line.
        let mut expected: Vec<u64> = (0..input.len())
            .filter(|&i| input[i] == b'\n')
            .map(|i| 1000 + i as u64 + 1)
            .collect();
        expected.push(1000 + input.len() as u64);
        for capacity in [1, 2, 3, 5, 8, 1024] {
            let (got, ends, _) = lines_and_ends(input, capacity, 1000);
            assert_eq!(got.len(), 5);
            assert_eq!(ends, expected, "read {capacity} bytes at a time");
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
