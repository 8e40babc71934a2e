//! The `parse` bolt: reads one string field of each tuple (default: the first) as JSON, CSV,
//! TSV, a regex, logfmt, `key=value` pairs or a combined access log line, and emits the fields
//! it declares. A line it cannot read goes to stream `errors` (`line`, `reason`) when a stream
//! from it is wired, else it is dropped, counted, and warned about at a bounded rate: never a
//! crash, never a silently wrong value. `stdin` and `file` spouts given a `format` read their
//! lines with the same [`Parser`].

mod combined;
mod delimited;
mod header;
pub mod infer;
mod json;
mod json_flat;
mod pairs;
mod pattern;
pub mod spec;
pub mod types;

use super::{Bolt, BoltCollector, FatalError, TaskContext};
use crate::topology::plan::{streams, StreamId};
use crate::tuple::{Tuple, Value, Values};
use spec::{Format, Spec};
use std::time::Duration;
use types::FieldType;

/// The stream unreadable lines go to, and its fields.
pub const ERRORS_STREAM: &str = "errors";
pub const ERROR_FIELDS: &[&str] = &["line", "reason"];

/// One format's reader, with the conversions of `types`.
pub struct Parser {
    reader: Reader,
    types: Vec<Option<FieldType>>,
    names: Vec<String>,
    scratch: Vec<Value>,
    /// A text format: cells that read as numbers are numbers, empty cells null.
    infer: bool,
    /// Lines fed so far (the number of the line being read).
    line: u64,
}

enum Reader {
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
            Format::Json { paths } => Reader::Json(json::JsonFields::new(paths)),
            Format::Delimited {
                delimiter,
                header,
                columns,
                keep,
            } => Reader::Delimited(Box::new(delimited::Delimited::new(
                *delimiter,
                *header,
                columns.clone(),
                keep.clone(),
            ))),
            Format::Regex { pattern, keep } if pattern == spec::COMBINED_PATTERN => {
                Reader::Combined(keep.clone())
            }
            Format::Regex { pattern, keep } => {
                Reader::Pattern(pattern::Pattern::new(pattern, keep.clone())?)
            }
            Format::Pairs {
                logfmt,
                separator,
                pair_separator,
                keys,
            } => Reader::Pairs(pairs::Pairs::new(
                *logfmt,
                separator.clone(),
                pair_separator.clone(),
                keys.clone(),
            )),
        };
        Ok(Parser {
            infer: !matches!(reader, Reader::Json(_)),
            reader,
            types: spec.outputs.iter().map(|(_, t)| *t).collect(),
            names: spec.field_names(),
            scratch: Vec::new(),
            line: 0,
        })
    }

    /// Set the longest record read (csv/tsv), in bytes.
    pub fn set_max_record(&mut self, bytes: usize) {
        if let Reader::Delimited(d) = &mut self.reader {
            d.set_max_record(bytes);
        }
    }

    /// Whether a file's `first_line` (its header) has the columns `spec` asks for: the error
    /// when it lacks one (`storm validate` reads a `file` spout's header this way).
    pub fn check_header(spec: &Spec, first_line: &str) -> Result<(), String> {
        let mut parser = Parser::new(spec)?;
        let _ = parser.parse(first_line);
        match parser.fatal() {
            Some(why) => Err(why.to_string()),
            None => Ok(()),
        }
    }

    /// The number of the line last fed (1 for the first).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Why nothing at all can be read (the header lacks a column asked for): the run must end.
    pub fn fatal(&self) -> Option<&str> {
        match &self.reader {
            Reader::Delimited(d) => d.broken(),
            _ => None,
        }
    }

    /// The values of one line; `Ok(None)` when it gives none yet (a CSV header, or a record
    /// that goes on in the next line).
    pub fn parse(&mut self, line: &str) -> Result<Option<Values>, String> {
        self.scratch.clear();
        self.line += 1;
        // A byte-order mark (a file saved by some editors starts with one) is not part of the
        // first record.
        let line = match self.line {
            1 => line.strip_prefix('\u{feff}').unwrap_or(line),
            _ => line,
        };
        match &mut self.reader {
            Reader::Json(j) => {
                // A blank line between records is no record (as jq reads them).
                if line.trim().is_empty() {
                    return Ok(None);
                }
                j.extract(line, &mut self.scratch)?
            }
            Reader::Combined(keep) => combined::extract(line, keep.as_deref(), &mut self.scratch)?,
            Reader::Pattern(p) => p.extract(line, &mut self.scratch)?,
            Reader::Pairs(p) => p.extract(line, &mut self.scratch)?,
            Reader::Delimited(d) => match d.feed(line, &mut self.scratch)? {
                delimited::Step::Record => {}
                delimited::Step::Pending | delimited::Step::Header => return Ok(None),
            },
        }
        let mut values = Values::with_capacity(self.scratch.len());
        for (i, v) in self.scratch.drain(..).enumerate() {
            let t = self.types.get(i).copied().flatten();
            let v = match (t, v) {
                (Some(FieldType::Str), v) => FieldType::Str.convert(v)?,
                // An empty cell is no value: null, in a typed column and in an inferred one.
                (_, Value::Str(s)) if s.is_empty() && (self.infer || t.is_some()) => Value::Null,
                (Some(t), v) => t.convert(v).map_err(|e| {
                    let name = self.names.get(i).map_or("?", String::as_str);
                    format!("field `{name}`: {e}")
                })?,
                (None, v) if self.infer => infer::infer(v),
                (None, v) => v,
            };
            values.push(v);
        }
        Ok(Some(values))
    }

    /// A record is under way over several lines (fed in part).
    pub fn pending(&self) -> bool {
        matches!(&self.reader, Reader::Delimited(d) if d.is_pending())
    }

    /// The columns a header named, once one was read.
    pub fn header_columns(&self) -> Option<Vec<String>> {
        match &self.reader {
            Reader::Delimited(d) => d.header_columns().map(<[String]>::to_vec),
            _ => None,
        }
    }

    /// Go on after a header an earlier run read (the input is read from after it).
    pub fn restore_header(&mut self, columns: Vec<String>) -> Result<(), String> {
        match &mut self.reader {
            Reader::Delimited(d) => d.restore_header(columns),
            _ => Err("a header was given, but this format reads none".into()),
        }
    }

    /// At the end of input: a record left unfinished (an unclosed quote), as (text, reason).
    pub fn unfinished(&mut self) -> Option<(String, String)> {
        match &mut self.reader {
            Reader::Delimited(d) => d.unfinished().map(|t| {
                (
                    t,
                    "a quoted cell is not closed at the end of input".to_string(),
                )
            }),
            _ => None,
        }
    }
}

/// Warnings about dropped lines: the first few, then one line per period with how many more;
/// with `topology.strict`, the first dropped line is an error that ends the run. Also the
/// tally of what was read, for a run of which nothing could be.
pub struct DropWarnings {
    component: String,
    shown: u32,
    later: crate::logging::Throttle,
    strict: bool,
    /// Records read, lines dropped, and the first reasons (with line numbers).
    read: u64,
    dropped: u64,
    first: Vec<String>,
    /// Whether lines dropped with none read is an error at the end of input.
    pub judge_input: bool,
}

impl DropWarnings {
    const FIRST: u32 = 3;
    const PERIOD: Duration = Duration::from_secs(10);

    pub fn new(component: &str) -> DropWarnings {
        DropWarnings {
            component: component.to_string(),
            shown: 0,
            later: crate::logging::Throttle::new(Self::PERIOD),
            strict: false,
            read: 0,
            dropped: 0,
            first: Vec::new(),
            judge_input: true,
        }
    }

    /// For a task: strict when `topology.strict` is on.
    pub fn for_task(ctx: &TaskContext) -> DropWarnings {
        let mut w = DropWarnings::new(&ctx.component);
        w.strict = ctx.config.get_bool(STRICT_KEY).unwrap_or(false);
        w
    }

    /// A record was read.
    #[inline]
    pub fn read(&mut self) {
        self.read += 1;
    }

    /// Line `at` was dropped for `reason`: warned about (bounded), or with `strict` the error
    /// that ends the run.
    pub fn dropped(&mut self, at: u64, line: &str, reason: &str) -> Result<(), FatalError> {
        let preview: String = line.chars().take(120).collect();
        self.dropped += 1;
        if self.first.len() < Self::FIRST as usize {
            self.first.push(format!("line {at}: {reason}"));
        }
        if self.strict {
            return Err(FatalError(format!(
                "line {at}: {reason}: {preview:?} (topology.strict: a line that cannot be read ends the run)"
            )));
        }
        let held = if self.shown < Self::FIRST {
            self.shown += 1;
            0
        } else {
            match self.later.allow() {
                Some(held) => held,
                None => return Ok(()),
            }
        };
        tracing::warn!(
            "{}: dropped line {at}, which it cannot read: {reason}: {preview:?}{}; wire its `errors` stream to keep such lines",
            self.component,
            crate::logging::held_back(held)
        );
        Ok(())
    }

    /// At the end of input: the error when lines came but none could be read.
    pub fn nothing_read(&self) -> Result<(), FatalError> {
        if self.read > 0 || self.dropped == 0 || !self.judge_input {
            return Ok(());
        }
        Err(FatalError(format!(
            "none of the {} line(s) of input could be read; first reasons: {}",
            self.dropped,
            self.first.join("; ")
        )))
    }
}

/// The config key that makes a dropped line an error (`storm run --strict`).
pub const STRICT_KEY: &str = "topology.strict";

/// The longest record a reader takes unless `topology.record.max.bytes` says otherwise.
pub const DEFAULT_MAX_RECORD: usize = delimited::MAX_RECORD_BYTES;

/// The config key of the longest record a reader takes, in bytes.
pub const MAX_RECORD_KEY: &str = "topology.record.max.bytes";

pub struct Parse {
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
    pub fn new(args: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Parse> {
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
        match parser.parse(line) {
            Ok(Some(values)) => {
                self.warnings.read();
                out.send(streams::DEFAULT, &[input], values)
            }
            Ok(None) => {}
            Err(reason) => {
                let line = line.to_string();
                self.reject(&line, reason, Some(input), out)?;
            }
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
