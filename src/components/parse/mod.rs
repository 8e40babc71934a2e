//! The `parse` bolt: reads one string field of each tuple (default: the first) as JSON, CSV,
//! TSV, a regex, logfmt, `key=value` pairs or a combined access log line, and emits the fields
//! it declares. A line it cannot read goes to stream `errors` (`line`, `reason`) when a stream
//! from it is wired, else it is dropped, counted, and warned about at a bounded rate: never a
//! crash, never a silently wrong value. `stdin` and `file` spouts given a `format` read their
//! lines with the same [`Parser`].

pub(crate) mod builtin;
mod cell_scan;
mod combined;
mod delimited;
mod drops;
mod header;
pub(crate) mod infer;
mod json;
mod json_scan;
mod json_stream;
mod pairs;
mod pattern;
mod quoted;
pub(crate) mod source;
pub mod spec;
mod types;

use super::{Bolt, BoltCollector, FatalError, TaskContext};
use crate::model::plan::{streams, StreamId};
use crate::tuple::{Tuple, Value, Values};
use spec::{Format, Spec};
use std::sync::{Arc, OnceLock};
use types::FieldType;

pub(crate) use drops::DropWarnings;
#[doc(hidden)]
pub use json::both_readers as json_readers;

/// Values read from `scratch` (which is left empty), converted (`types`) or inferred (`infer`:
/// a text format).
fn finish(
    types: &[Option<FieldType>],
    names: &[String],
    infer: bool,
    scratch: &mut Vec<Value>,
) -> Result<Values, String> {
    let mut values: Values = scratch.drain(..).collect();
    convert(types, names, infer, &mut values)?;
    Ok(values)
}

/// `values` converted (`types`) or inferred (`infer`: a text format), in place.
fn convert(
    types: &[Option<FieldType>],
    names: &[String],
    infer: bool,
    values: &mut [Value],
) -> Result<(), String> {
    if !infer && types.iter().all(Option::is_none) {
        return Ok(());
    }
    for (i, v) in values.iter_mut().enumerate() {
        let t = types.get(i).copied().flatten();
        *v = match (t, std::mem::replace(v, Value::Null)) {
            (Some(FieldType::Str), v) => FieldType::Str.convert(v)?,
            // An empty cell is no value: null, in a typed column and in an inferred one.
            (_, Value::Str(s)) if s.is_empty() && (infer || t.is_some()) => Value::Null,
            (Some(t), v) => t.convert(v).map_err(|e| {
                let name = names.get(i).map_or("?", String::as_str);
                format!("field `{name}`: {e}")
            })?,
            (None, v) if infer => infer::infer(v),
            (None, v) => v,
        };
    }
    Ok(())
}

/// A cell's text as [`convert`] makes it a value of type `t` (or inferred): `None` when the
/// type refuses it.
fn cell_value(t: Option<FieldType>, infer: bool, text: &str) -> Option<Value> {
    Some(match t {
        Some(FieldType::Str) => Value::str(text),
        // An empty cell is no value: null, in a typed column and in an inferred one.
        _ if text.is_empty() && (infer || t.is_some()) => Value::Null,
        Some(t) => t.convert(Value::str(text)).ok()?,
        None if infer => infer::text(text),
        None => Value::str(text),
    })
}

/// The part of reading lines that needs no state, done ahead by the line spout's reader thread
/// (so reading and emitting run on two cores): the values [`Parser::parse`] gives a line by
/// its fast path — JSON: one flat object; CSV/TSV: a line that quotes nothing, once the header
/// is read — which are its values whenever the parser is between records (no JSON value
/// stream open, no CSV record under way). A line it cannot read so, or whose conversion fails,
/// is left to the parser (its errors included).
pub struct Prefetch {
    ahead: Ahead,
    types: Vec<Option<FieldType>>,
    names: Vec<String>,
    infer: bool,
    /// The condition of a `filter` the spout runs for (see `Spout::run_filter`).
    filter: Option<crate::expr::Compiled>,
    /// The fold of a bolt the spout runs for (see `Spout::run_fold`).
    fold: Option<Box<dyn crate::components::ReaderFold>>,
}

enum Ahead {
    Json(json::JsonFields),
    /// The layout the parser publishes once it knows it (after the header), and scratch.
    Delimited(Arc<OnceLock<delimited::Layout>>, Vec<usize>),
}

impl Prefetch {
    /// How many values a line gives.
    pub fn width(&self) -> usize {
        self.names.len()
    }

    /// The values of `line`, or `None` when the parser must read it (one list per line; the
    /// line spout reads a chunk's lines into one with [`Prefetch::read_into`]).
    pub fn read(&mut self, line: &str) -> Option<Values> {
        let mut values = Vec::new();
        self.read_into(line, &mut values)
            .then(|| values.into_iter().collect())
    }

    /// Evaluate `filter` on the values of each line read from now on (the values the spout
    /// would emit).
    pub(crate) fn set_filter(&mut self, filter: crate::expr::Compiled) {
        self.filter = Some(filter);
    }

    /// The filter lines are checked against, if any.
    pub(crate) fn filter(&self) -> Option<&crate::expr::Compiled> {
        self.filter.as_ref()
    }

    /// Fold the values of each line read from now on with `fold`, chunk by chunk.
    pub(crate) fn set_fold(&mut self, fold: Box<dyn crate::components::ReaderFold>) {
        self.fold = Some(fold);
    }

    /// The fold lines are taken by, if any.
    pub(crate) fn fold(&mut self) -> Option<&mut (dyn crate::components::ReaderFold + 'static)> {
        self.fold.as_deref_mut()
    }

    /// Append the values of `line` to `out`: whether it did (when not, `out` is as it was and
    /// the parser must read the line).
    pub fn read_into(&mut self, line: &str, out: &mut Vec<Value>) -> bool {
        let (types, infer) = (&self.types, self.infer);
        match &mut self.ahead {
            Ahead::Json(fields) => {
                let start = out.len();
                let converted = fields.extract_fast(line, out).is_some()
                    && out
                        .get_mut(start..)
                        .is_some_and(|v| convert(types, &self.names, infer, v).is_ok());
                if !converted {
                    out.truncate(start);
                }
                converted
            }
            // Each cell is converted as it is read: no text value is made for a number.
            Ahead::Delimited(layout, bounds) => {
                let value =
                    |k: usize, text: &str| cell_value(types.get(k).copied().flatten(), infer, text);
                layout
                    .get()
                    .and_then(|l| l.read_plain_as(line, bounds, out, value))
                    .is_some_and(|r| r.is_ok())
            }
        }
    }
}

/// The stream unreadable lines go to, and its fields.
pub(crate) const ERRORS_STREAM: &str = "errors";
const ERROR_FIELDS: &[&str] = &["line", "reason"];

/// One format's reader, with the conversions of `types`.
pub struct Parser {
    reader: FormatReader,
    types: Vec<Option<FieldType>>,
    names: Vec<String>,
    scratch: Vec<Value>,
    /// A text format: cells that read as numbers are numbers, empty cells null.
    infer: bool,
    /// Lines fed so far (the number of the line being read).
    line: u64,
    /// JSON that is not one object per line (an array, pretty-printed or concatenated
    /// values): cut into values here, from the first line that shows it on.
    stream: Option<json_stream::JsonStream>,
    /// Records a line gave beyond its first (JSON values several to a line).
    ready: std::collections::VecDeque<Result<Values, String>>,
    max_record: usize,
    /// The last text fed was a piece of a longer line (see [`Parser::parse_piece`]).
    in_piece: bool,
    /// CSV/TSV: the record layout, published once the header is read, for [`Prefetch`].
    published: Option<Arc<OnceLock<delimited::Layout>>>,
}

/// What reads a line (or record) into fields, one per format.
enum FormatReader {
    Json(json::JsonFields),
    /// The combined log scanner, and the positions of the fields kept (all when `None`).
    Combined(Option<Vec<usize>>),
    Delimited(Box<delimited::Delimited>),
    Pattern(pattern::Pattern),
    Pairs(pairs::Pairs),
}

impl Parser {
    pub fn new(spec: &Spec) -> Result<Parser, String> {
        let reader = match &spec.format {
            Format::Json { paths } => FormatReader::Json(json::JsonFields::new(paths)),
            Format::Delimited {
                delimiter,
                header,
                columns,
                keep,
            } => FormatReader::Delimited(Box::new(delimited::Delimited::new(
                *delimiter,
                *header,
                columns.clone(),
                keep.clone(),
            ))),
            Format::Regex { pattern, keep } if pattern == spec::COMBINED_PATTERN => {
                FormatReader::Combined(keep.clone())
            }
            Format::Regex { pattern, keep } => {
                FormatReader::Pattern(pattern::Pattern::new(pattern, keep.clone())?)
            }
            Format::Pairs {
                logfmt,
                separator,
                pair_separator,
                keys,
            } => FormatReader::Pairs(pairs::Pairs::new(
                *logfmt,
                separator.clone(),
                pair_separator.clone(),
                keys.clone(),
            )),
        };
        Ok(Parser {
            infer: !matches!(reader, FormatReader::Json(_)),
            reader,
            types: spec.outputs.iter().map(|(_, t)| *t).collect(),
            names: spec.field_names(),
            scratch: Vec::new(),
            line: 0,
            stream: None,
            ready: std::collections::VecDeque::new(),
            max_record: DEFAULT_MAX_RECORD,
            in_piece: false,
            published: None,
        })
    }

    /// A reader of lines ahead for this parser (`spec` is the one it was made from), for JSON
    /// and CSV/TSV; `None` for the other formats.
    pub fn read_ahead(&mut self, spec: &Spec) -> Option<Prefetch> {
        let ahead = match (&self.reader, &spec.format) {
            (FormatReader::Json(_), Format::Json { paths }) => {
                Ahead::Json(json::JsonFields::new(paths))
            }
            (FormatReader::Delimited(_), _) => {
                let layout = self.published.get_or_insert_with(Arc::default).clone();
                Ahead::Delimited(layout, Vec::new())
            }
            _ => return None,
        };
        Some(Prefetch {
            ahead,
            types: self.types.clone(),
            names: self.names.clone(),
            infer: self.infer,
            filter: None,
            fold: None,
        })
    }

    /// Set the longest record read (a csv/tsv record, a JSON value of a stream), in bytes.
    pub(crate) fn set_max_record(&mut self, bytes: usize) {
        self.max_record = bytes;
        if let FormatReader::Delimited(d) = &mut self.reader {
            d.set_max_record(bytes);
        }
        if let Some(s) = &mut self.stream {
            s.set_max(bytes);
        }
    }

    /// The next record of the last line fed beyond the one `parse` gave (JSON values several
    /// to a line: the elements of an array).
    pub(crate) fn next_ready(&mut self) -> Option<Result<Values, String>> {
        self.ready.pop_front()
    }

    /// Whether a file's `first_line` (its header) has the columns `spec` asks for: the error
    /// when it lacks one (`storm validate` reads a `file` spout's header this way).
    fn check_header(spec: &Spec, first_line: &str) -> Result<(), String> {
        let mut parser = Parser::new(spec)?;
        let _ = parser.parse(first_line);
        match parser.fatal() {
            Some(why) => Err(why.to_string()),
            None => Ok(()),
        }
    }

    /// The number of the line last fed (1 for the first).
    pub(crate) fn line(&self) -> u64 {
        self.line
    }

    /// Why nothing at all can be read (the header lacks a column asked for): the run must end.
    pub(crate) fn fatal(&self) -> Option<&str> {
        match &self.reader {
            FormatReader::Delimited(d) => d.broken(),
            _ => None,
        }
    }

    /// The values of one line; `Ok(None)` when it gives none yet (a CSV header, or a record
    /// that goes on in the next line).
    pub fn parse(&mut self, line: &str) -> Result<Option<Values>, String> {
        self.scratch.clear();
        if !std::mem::take(&mut self.in_piece) {
            self.line += 1;
        }
        // A byte-order mark (a file saved by some editors starts with one) is not part of the
        // first record.
        let line = match self.line {
            1 => line.strip_prefix('\u{feff}').unwrap_or(line),
            _ => line,
        };
        match &mut self.reader {
            FormatReader::Json(_) if self.stream.is_some() => return self.parse_stream(line),
            FormatReader::Json(j) => {
                // A blank line between records is no record (as jq reads them).
                let start = line.trim_start();
                if start.is_empty() {
                    return Ok(None);
                }
                if start.starts_with('[') {
                    return self.start_stream(line);
                }
                if let Err(e) = j.extract(line, &mut self.scratch) {
                    // `{` alone opens a pretty-printed object; `{…}{…}` is values one after
                    // another. Any other line that is not one object is an error for its line.
                    let opens = start.starts_with('{');
                    if opens && (start.trim_end() == "{" || several_values(line, self.max_record)) {
                        self.scratch.clear();
                        return self.start_stream(line);
                    }
                    return Err(e);
                }
            }
            FormatReader::Combined(keep) => {
                combined::extract(line, keep.as_deref(), &mut self.scratch)?
            }
            FormatReader::Pattern(p) => p.extract(line, &mut self.scratch)?,
            FormatReader::Pairs(p) => p.extract(line, &mut self.scratch)?,
            FormatReader::Delimited(d) => {
                let step = d.feed(line, &mut self.scratch);
                if let Some(slot) = self.published.as_ref().filter(|s| s.get().is_none()) {
                    if let Some(layout) = d.layout() {
                        let _ = slot.set(layout.clone());
                    }
                }
                match step? {
                    delimited::Step::Record => {}
                    delimited::Step::Pending | delimited::Step::Header => return Ok(None),
                }
            }
        }
        self.finish_values().map(Some)
    }

    /// A piece of a line too long to hold whole, which goes on in the next text fed (JSON
    /// only: read as a stream of values from here on).
    pub(crate) fn parse_piece(&mut self, piece: &str) -> Result<Option<Values>, String> {
        if !std::mem::replace(&mut self.in_piece, true) {
            self.line += 1;
        }
        if !matches!(self.reader, FormatReader::Json(_)) {
            return Err(delimited::too_long(self.max_record, false));
        }
        let stream = self
            .stream
            .get_or_insert_with(|| json_stream::JsonStream::new(self.max_record));
        let mut pieces = Vec::new();
        stream.feed_piece(piece, &mut pieces);
        self.take_pieces(pieces)
    }

    /// From this line on, read JSON as a stream of values.
    fn start_stream(&mut self, line: &str) -> Result<Option<Values>, String> {
        self.stream = Some(json_stream::JsonStream::new(self.max_record));
        self.parse_stream(line)
    }

    /// Feed `line` to the JSON value stream: the first record it completes (the others wait
    /// in `ready`).
    fn parse_stream(&mut self, line: &str) -> Result<Option<Values>, String> {
        let mut pieces = Vec::new();
        if let Some(stream) = self.stream.as_mut() {
            stream.feed(line, &mut pieces);
        }
        self.take_pieces(pieces)
    }

    /// The records of the values the stream cut: the first; the others wait in `ready`.
    fn take_pieces(&mut self, pieces: Vec<json_stream::Piece>) -> Result<Option<Values>, String> {
        for piece in pieces {
            self.scratch.clear();
            let record = match piece {
                json_stream::Piece::Value(text) => {
                    let read = match &mut self.reader {
                        FormatReader::Json(j) => j.extract(&text, &mut self.scratch),
                        _ => Err("not a JSON reader".to_string()),
                    };
                    read.and_then(|()| self.finish_values())
                }
                json_stream::Piece::TooLong => Err(delimited::too_long(self.max_record, false)),
                json_stream::Piece::Stray(c) => Err(format!("`{c}` outside a JSON value")),
            };
            self.ready.push_back(record);
        }
        self.ready.pop_front().transpose()
    }

    /// The values read into `scratch`, converted (`types`) or inferred (text formats).
    fn finish_values(&mut self) -> Result<Values, String> {
        finish(&self.types, &self.names, self.infer, &mut self.scratch)
    }

    /// The values the reader thread read ahead for the next line (see [`Prefetch`]), when
    /// they are what [`Parser::parse`] gives it now: between records (no JSON value stream
    /// open, no CSV record under way, past the header). `None`: read the line with `parse`.
    pub fn prefetched(&mut self, values: Values) -> Option<Values> {
        self.take_prefetched_lines(1).then_some(values)
    }

    /// Take the values read ahead for the next `n` lines as read, if they are what
    /// [`Parser::parse`] gives them now (see [`Parser::prefetch_ready`]).
    pub(crate) fn take_prefetched_lines(&mut self, n: u64) -> bool {
        let ready = self.prefetch_ready();
        if ready {
            self.line += n;
        }
        ready
    }

    /// Whether the values read ahead for the next line are what [`Parser::parse`] gives it
    /// now: between records (no JSON value stream open, no CSV record under way, past the
    /// header).
    pub(crate) fn prefetch_ready(&self) -> bool {
        // The first line may start with a byte-order mark, which `parse` strips.
        self.line > 0
            && match &self.reader {
                FormatReader::Json(_) => self.stream.is_none() && !self.in_piece,
                // The layout is published once the header is read, and never changes after.
                FormatReader::Delimited(d) => {
                    !d.is_pending() && self.published.as_ref().is_some_and(|s| s.get().is_some())
                }
                _ => false,
            }
    }

    /// A record is under way over several lines (fed in part).
    pub(crate) fn pending(&self) -> bool {
        matches!(&self.reader, FormatReader::Delimited(d) if d.is_pending())
            || self
                .stream
                .as_ref()
                .is_some_and(json_stream::JsonStream::is_open)
    }

    /// The columns a header named, once one was read.
    pub(crate) fn header_columns(&self) -> Option<Vec<String>> {
        match &self.reader {
            FormatReader::Delimited(d) => d.header_columns().map(<[String]>::to_vec),
            _ => None,
        }
    }

    /// Where a JSON value stream stands between records, for a checkpoint: `Some(true)`
    /// inside a top-level array, `Some(false)` between values, `None` when JSON is read line
    /// by line (or the format is not JSON).
    pub(crate) fn json_stream(&self) -> Option<bool> {
        self.stream.as_ref().map(json_stream::JsonStream::in_array)
    }

    /// Go on reading JSON values where an earlier run's stream stood (`in_array`: between the
    /// elements of a top-level array).
    pub(crate) fn resume_json_stream(&mut self, in_array: bool) {
        let mut stream = json_stream::JsonStream::new(self.max_record);
        if in_array {
            stream.resume_in_array();
        }
        self.stream = Some(stream);
    }

    /// Go on after a header an earlier run read (the input is read from after it).
    pub(crate) fn restore_header(&mut self, columns: Vec<String>) -> Result<(), String> {
        match &mut self.reader {
            FormatReader::Delimited(d) => d.restore_header(columns),
            _ => Err("a header was given, but this format reads none".into()),
        }
    }

    /// At the end of input: a record left unfinished (an unclosed quote), as (text, reason).
    pub(crate) fn unfinished(&mut self) -> Option<(String, String)> {
        if let Some(text) = self
            .stream
            .as_mut()
            .and_then(json_stream::JsonStream::unfinished)
        {
            let reason = "a JSON value or array is not closed at the end of input".to_string();
            return Some((text.chars().take(200).collect(), reason));
        }
        match &mut self.reader {
            FormatReader::Delimited(d) => d.unfinished().map(|t| {
                (
                    t,
                    "a quoted cell is not closed at the end of input".to_string(),
                )
            }),
            _ => None,
        }
    }
}

/// Whether `line` holds more than one JSON value (`{…}{…}`). (A line left open is not taken
/// for the start of a stream: a cut-off JSON line must stay an error of its own line.)
fn several_values(line: &str, max: usize) -> bool {
    let mut s = json_stream::JsonStream::new(max);
    let mut pieces = Vec::new();
    s.feed(line, &mut pieces);
    pieces.len() > 1
}

/// The config key that makes a dropped line an error (`storm run --strict`).
pub(crate) const STRICT_KEY: &str = "topology.strict";

/// The longest record a reader takes unless `topology.record.max.bytes` says otherwise.
pub(crate) const DEFAULT_MAX_RECORD: usize = delimited::MAX_RECORD_BYTES;

/// The config key of the longest record a reader takes, in bytes.
pub(crate) const MAX_RECORD_KEY: &str = "topology.record.max.bytes";

struct Parse {
    spec: Spec,
    parser: Option<Parser>,
    /// Position of the field read.
    field: usize,
    /// The `errors` stream when a stream from this component reads it.
    errors: Option<StreamId>,
    warnings: DropWarnings,
    text: String,
}

impl Parse {
    fn new(args: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Parse> {
        let spec = Spec::from_args(args).map_err(|e| anyhow::anyhow!("parse: {}", e.message))?;
        Ok(Parse {
            spec,
            parser: None,
            field: 0,
            errors: None,
            warnings: DropWarnings::new("parse"),
            text: String::new(),
        })
    }

    /// An unreadable line: to the `errors` stream, or dropped and counted.
    fn reject(
        &mut self,
        line: &str,
        reason: String,
        anchor: Option<&Tuple>,
        out: &mut dyn BoltCollector,
    ) -> Result<(), FatalError> {
        let at = self.parser.as_ref().map_or(0, Parser::line);
        if let Some(why) = self.parser.as_ref().and_then(Parser::fatal) {
            return Err(FatalError(why.to_string()));
        }
        match self.errors {
            Some(stream) => {
                let values: Values = smallvec::smallvec![Value::str(line), Value::str(&reason)];
                let anchors: Vec<&Tuple> = anchor.into_iter().collect();
                out.send(stream, &anchors, values);
                Ok(())
            }
            None => {
                out.dropped(1);
                self.warnings.dropped(at, line, &reason)
            }
        }
    }
}

impl Bolt for Parse {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.field = match &self.spec.field {
            Some(f) => super::input_positions(ctx, std::slice::from_ref(f))?[0],
            None => 0,
        };
        self.parser =
            Some(Parser::new(&self.spec).map_err(|e| anyhow::anyhow!("{}: {e}", ctx.component))?);
        if let (Some(p), Some(max)) = (self.parser.as_mut(), ctx.config.get_u64(MAX_RECORD_KEY)) {
            p.set_max_record(usize::try_from(max).unwrap_or(usize::MAX));
        }
        self.errors = super::wired_stream(ctx, ERRORS_STREAM);
        self.warnings = DropWarnings::for_task(ctx);
        // Another task may read what this one could not: only a lone task judges the input.
        self.warnings.judge_input = ctx.spec().is_some_and(|c| c.parallelism <= 1);
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            return Ok(());
        }
        let Some(parser) = self.parser.as_mut() else {
            anyhow::bail!("parse used before prepare");
        };
        let line: &str = match input.values.get(self.field) {
            Some(Value::Str(s)) => s,
            Some(other) => {
                self.text.clear();
                other.write_plain(&mut self.text);
                &self.text
            }
            None => "",
        };
        // A line may give several records (the elements of a JSON array on one line); its
        // text is copied only when one of them is an error.
        let mut record = parser.parse(line).transpose();
        let text = if matches!(record, Some(Err(_))) || !parser.ready.is_empty() {
            line.to_string()
        } else {
            String::new()
        };
        while let Some(r) = record {
            match r {
                Ok(values) => {
                    self.warnings.read();
                    out.send(streams::DEFAULT, &[input], values)
                }
                Err(reason) => self.reject(&text, reason, Some(input), out)?,
            }
            record = match self.parser.as_mut() {
                Some(p) => p.next_ready(),
                None => None,
            };
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if let Some((text, reason)) = self.parser.as_mut().and_then(Parser::unfinished) {
            self.reject(&text, reason, None, out)?;
        }
        self.warnings.nothing_read()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn csv_parser(columns: usize) -> Parser {
        let fields: Vec<String> = (0..columns).map(|i| format!("c{i}")).collect();
        let args = serde_json::json!({"format": "csv", "header": true, "fields": fields});
        let spec = Spec::from_args(args.as_object().unwrap_or(&serde_json::Map::new()))
            .unwrap_or_else(|e| panic!("{e:?}"));
        Parser::new(&spec).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A cell as a CSV writer writes it.
    fn quoted(cell: &str) -> String {
        if cell.contains([',', '"']) {
            format!("\"{}\"", cell.replace('"', "\"\""))
        } else {
            cell.to_string()
        }
    }

    proptest! {
        /// Every cell of a random table reads back as written: numbers are numbers and
        /// print as written (a decimal without its trailing zeros), ids with leading zeros and
        /// other text stay text, an empty cell is null.
        #[test]
        fn csv_cells_read_back_as_written(
            rows in proptest::collection::vec(proptest::collection::vec(
                prop_oneof![
                    any::<i32>().prop_map(|i| i.to_string()),
                    (0u32..100_000, 0u32..1000).prop_map(|(a, b)| format!("{a}.{b:03}")),
                    (0u32..1000).prop_map(|i| format!("0{i}")),
                    Just(String::new()),
                    "[a-z ,\"]{1,6}",
                    Just("+1".to_string()),
                    Just("1e5".to_string()),
                ], 3), 1..10),
        ) {
            let mut p = csv_parser(3);
            prop_assert_eq!(p.parse("c0,c1,c2"), Ok(None));
            for row in &rows {
                let line: Vec<String> = row.iter().map(|c| quoted(c)).collect();
                let values = p.parse(&line.join(",")).map_err(TestCaseError::fail)?;
                let values = values.ok_or_else(|| TestCaseError::fail("a record"))?;
                for (cell, v) in row.iter().zip(values.iter()) {
                    let mut shown = String::new();
                    v.write_plain(&mut shown);
                    match v {
                        Value::Float(_) => {
                            let trimmed = cell.trim_end_matches('0').trim_end_matches('.');
                            prop_assert_eq!(&shown, trimmed);
                        }
                        Value::Null => prop_assert_eq!(cell.as_str(), ""),
                        Value::Int(_) => prop_assert_eq!(&shown, cell),
                        Value::Str(_) => {
                            prop_assert_eq!(&shown, cell);
                            prop_assert!(infer::number(cell).is_none());
                        }
                        other => prop_assert!(false, "{other:?}"),
                    }
                }
            }
        }

        /// What the reader thread reads ahead for a JSON line is what the spout's parser reads
        /// for it (with `types` converting): on whole objects and on objects damaged at random
        /// (a byte replaced, dropped or doubled), a line read ahead gives the parser's values.
        #[test]
        fn json_read_ahead_equals_the_parser(
            doc in proptest::collection::btree_map("[abc]", prop_oneof![
                any::<i64>().prop_map(serde_json::Value::from),
                any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(serde_json::Value::from),
                "[a-z \"\\\\\u{e9}]{0,6}".prop_map(serde_json::Value::from),
                Just(serde_json::json!({"x": [1, null]})),
                Just(serde_json::Value::Null),
                any::<bool>().prop_map(serde_json::Value::from),
            ], 0..5),
            at in 0usize..200,
            byte in prop_oneof![Just(b'"'), Just(b'\\'), Just(b','), Just(b'}'), Just(b'0'), Just(b' '), Just(b'e'), Just(b'[')],
            how in 0u8..4,
            typed in any::<bool>(),
        ) {
            let mut line = serde_json::Value::Object(doc.into_iter().collect()).to_string().into_bytes();
            let at = at % line.len();
            match how {
                0 => line[at] = byte,
                1 => { line.remove(at); }
                2 => line.insert(at, line[at]),
                _ => {}
            }
            let Ok(line) = String::from_utf8(line) else { return Ok(()) };
            let args = match typed {
                true => serde_json::json!({"format": "json", "fields": ["a", "b", "c"], "types": {"a": "int", "b": "str"}}),
                false => serde_json::json!({"format": "json", "fields": ["a", "b", "c"]}),
            };
            let spec = Spec::from_args(args.as_object().unwrap_or(&serde_json::Map::new()))
                .map_err(|e| TestCaseError::fail(e.message))?;
            let mut parser = Parser::new(&spec).map_err(TestCaseError::fail)?;
            let mut ahead = parser.read_ahead(&spec).ok_or_else(|| TestCaseError::fail("json reads ahead"))?;
            prop_assert_eq!(parser.parse("{}"), Ok(Some(smallvec::smallvec![Value::Null; 3])));
            if let Some(values) = ahead.read(&line) {
                prop_assert_eq!(Ok(Some(values)), parser.parse(&line), "{}", line);
            }
        }

        /// A CSV table written by the `csv` crate (quoted cells with commas, quotes and
        /// newlines among plain ones, numbers, decimals and empty cells, typed or inferred), read
        /// line by line as the spout reads it: taking what the reader thread read ahead
        /// wherever the parser accepts it gives the records the parser gives alone, errors
        /// included.
        #[test]
        fn csv_read_ahead_equals_the_parser(
            rows in proptest::collection::vec(proptest::collection::vec("[a-c0-9 ,.\"\n-]{0,12}", 1..5), 1..12),
            tab in any::<bool>(),
            typed in any::<bool>(),
        ) {
            let delimiter = if tab { b'\t' } else { b',' };
            let mut w = csv::WriterBuilder::new().delimiter(delimiter).flexible(true)
                .terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
            w.write_record(["c0", "c1", "c2"]).map_err(|e| TestCaseError::fail(e.to_string()))?;
            for r in &rows {
                w.write_record(r).map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            let text = String::from_utf8(w.into_inner().map_err(|e| TestCaseError::fail(e.to_string()))?)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let format = if tab { "tsv" } else { "csv" };
            let mut args = serde_json::json!({"format": format, "header": true, "fields": ["c2", "c0"]});
            if typed {
                args["types"] = serde_json::json!({"c2": "int", "c0": "float"});
            }
            let spec = Spec::from_args(args.as_object().unwrap_or(&serde_json::Map::new()))
                .map_err(|e| TestCaseError::fail(e.message))?;
            let mut alone = Parser::new(&spec).map_err(TestCaseError::fail)?;
            let mut with = Parser::new(&spec).map_err(TestCaseError::fail)?;
            let mut ahead = with.read_ahead(&spec).ok_or_else(|| TestCaseError::fail("csv reads ahead"))?;
            for line in text.strip_suffix('\n').unwrap_or(&text).split('\n') {
                let expected = alone.parse(line);
                let got = match ahead.read(line).and_then(|v| with.prefetched(v)) {
                    Some(values) => Ok(Some(values)),
                    None => with.parse(line),
                };
                prop_assert_eq!(got, expected, "{:?}", line);
            }
        }
    }
}
