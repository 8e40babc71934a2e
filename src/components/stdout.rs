//! The `stdout` bolt: each tuple as one line — its values joined by TAB (the default), a JSON
//! object, or a CSV record (`format`), of all its fields or those `fields` names — through one
//! process-wide buffered writer; flushed when the executor goes idle and at the end. A closed
//! standard output stops the run quietly; any other failed write (a full disk) fails the run
//! with one error, since the output would be lost.

use super::builtin as b;
use super::{Bolt, BoltCollector, FatalError};
use crate::tuple::{Tuple, Value};
use std::io::Write;
use std::sync::{Mutex, OnceLock};

/// The one writer all `stdout` tasks share.
fn writer() -> &'static Mutex<std::io::BufWriter<std::io::Stdout>> {
    static W: OnceLock<Mutex<std::io::BufWriter<std::io::Stdout>>> = OnceLock::new();
    W.get_or_init(|| {
        Mutex::new(std::io::BufWriter::with_capacity(
            1 << 16,
            std::io::stdout(),
        ))
    })
}

/// Write what the output gate holds for checkpoint `committed` and before (`None`: all of
/// it, the run is over). Nothing when output is not held.
pub(crate) fn release_held(committed: Option<u64>) -> std::io::Result<()> {
    let Some(gate) = super::output_gate::get() else {
        return Ok(());
    };
    let mut w = writer().lock().unwrap_or_else(|e| e.into_inner());
    match committed {
        Some(txid) => gate.release(txid, &mut *w),
        None => gate.release_all(&mut *w),
    }
}

/// How tuples are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum OutputFormat {
    /// Values joined by TAB.
    #[default]
    Tsv,
    /// One JSON object per tuple, field names as keys.
    Json,
    /// RFC 4180 CSV, cells quoted where needed.
    Csv,
}

/// The formats `stdout` writes, as `format:` names them.
const FORMATS: &[&str] = &["tsv", "json", "csv"];

/// The CSV header is written once per process, whichever task writes first.
static HEADER_WRITTEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[derive(Default)]
struct Stdout {
    format: OutputFormat,
    /// `fields`: the fields written, in order (all when empty).
    wanted: Vec<String>,
    header: bool,
    /// Input field names, and the positions written.
    names: Vec<String>,
    picks: Option<Vec<usize>>,
    /// A CSV cell's text before quoting.
    cell: String,
    pending: String,
    /// Its task id, under which the output gate holds its lines.
    task: u32,
    /// The checkpoint round of the inputs being written (with the output gate).
    round: u64,
}

impl Stdout {
    fn new(args: &serde_json::Map<String, serde_json::Value>) -> Stdout {
        let format = match args.get("format").and_then(|v| v.as_str()) {
            Some("json") => OutputFormat::Json,
            Some("csv") => OutputFormat::Csv,
            _ => OutputFormat::Tsv,
        };
        let wanted = args
            .get("fields")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let header = args
            .get("header")
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        Stdout {
            format,
            wanted,
            header,
            ..Stdout::default()
        }
    }

    /// The values written for `input`, in order, with their names.
    fn cells<'a>(&'a self, input: &'a Tuple) -> impl Iterator<Item = (&'a str, &'a Value)> + 'a {
        let all = self.picks.is_none();
        let count = self.picks.as_ref().map_or(input.values.len(), Vec::len);
        (0..count).filter_map(move |i| {
            let at = if all { i } else { self.picks.as_ref()?[i] };
            let name = self.names.get(at).map_or("", String::as_str);
            Some((name, input.values.get(at)?))
        })
    }

    /// Append `input` as one line to what is pending (written in blocks).
    fn write_line(&mut self, input: &Tuple) {
        let mut out = std::mem::take(&mut self.pending);
        match self.format {
            OutputFormat::Tsv => {
                let mut cell = std::mem::take(&mut self.cell);
                for (i, (_, v)) in self.cells(input).enumerate() {
                    if i > 0 {
                        out.push('\t');
                    }
                    match v {
                        Value::Str(s) => push_tsv_cell(&mut out, s),
                        Value::List(_) | Value::Map(_) => {
                            cell.clear();
                            v.write_plain(&mut cell);
                            push_tsv_cell(&mut out, &cell);
                        }
                        _ => v.write_plain(&mut out),
                    }
                }
                self.cell = cell;
            }
            OutputFormat::Json => {
                let mut obj = serde_json::Map::new();
                for (name, v) in self.cells(input) {
                    obj.insert(name.to_string(), v.to_json());
                }
                out.push_str(&serde_json::Value::Object(obj).to_string());
            }
            OutputFormat::Csv => {
                // One cell's text at a time, in a buffer kept from line to line.
                let mut cell = std::mem::take(&mut self.cell);
                for (i, (_, v)) in self.cells(input).enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    cell.clear();
                    v.write_plain(&mut cell);
                    push_csv_cell(&mut out, &cell);
                }
                self.cell = cell;
            }
        }
        out.push('\n');
        self.pending = out;
    }

    fn write_header(&mut self) {
        use std::sync::atomic::Ordering;
        if !self.header || HEADER_WRITTEN.swap(true, Ordering::SeqCst) {
            return;
        }
        let names: Vec<&str> = match &self.picks {
            Some(p) => p
                .iter()
                .filter_map(|&i| self.names.get(i).map(String::as_str))
                .collect(),
            None => self.names.iter().map(String::as_str).collect(),
        };
        let mut line = String::new();
        for (i, n) in names.iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            push_csv_cell(&mut line, n);
        }
        self.pending.push_str(&line);
        self.pending.push('\n');
    }

    /// Write what is pending (and flush when asked). A failed write is fatal to the run: the
    /// error keeps the `io::Error`, so a closed pipe (`| head`) is still told apart and ends
    /// the run quietly.
    fn write_pending(&mut self, flush: bool) -> anyhow::Result<()> {
        if self.pending.is_empty() && !flush {
            return Ok(());
        }
        if let Some(gate) = super::output_gate::get() {
            // Held until the checkpoint covering it commits (a rollback may replay it).
            gate.write(self.task, self.round, &self.pending);
            self.pending.clear();
            return Ok(());
        }
        self.write_through(flush)
    }

    /// Write what is pending to standard output itself.
    fn write_through(&mut self, flush: bool) -> anyhow::Result<()> {
        let mut w = match writer().lock() {
            Ok(w) => w,
            Err(p) => p.into_inner(),
        };
        let res =
            w.write_all(self.pending.as_bytes())
                .and_then(|()| if flush { w.flush() } else { Ok(()) });
        self.pending.clear();
        res.map_err(|e| {
            anyhow::Error::from(e).context(FatalError("cannot write to standard output".into()))
        })
    }
}

/// One TSV cell: a tab, line break or backslash in it written as `\t`, `\n`, `\r`, `\\`,
/// so a value stays one cell of one line.
pub(crate) fn push_tsv_cell(line: &mut String, cell: &str) {
    if !cell
        .bytes()
        .any(|b| matches!(b, b'\t' | b'\n' | b'\r' | b'\\'))
    {
        line.push_str(cell);
        return;
    }
    for c in cell.chars() {
        match c {
            '\t' => line.push_str("\\t"),
            '\n' => line.push_str("\\n"),
            '\r' => line.push_str("\\r"),
            '\\' => line.push_str("\\\\"),
            c => line.push(c),
        }
    }
}

/// One CSV cell: quoted when it holds a comma, a quote or a line break, quotes doubled.
pub(crate) fn push_csv_cell(line: &mut String, cell: &str) {
    if cell.contains([',', '"', '\n', '\r']) {
        line.push('"');
        line.push_str(&cell.replace('"', "\"\""));
        line.push('"');
    } else {
        line.push_str(cell);
    }
}

impl Bolt for Stdout {
    fn prepare(&mut self, ctx: &super::TaskContext) -> anyhow::Result<()> {
        self.names = super::input_fields(ctx);
        self.task = ctx.task_id;
        if !self.wanted.is_empty() {
            self.picks = Some(super::input_positions(ctx, &self.wanted)?);
        }
        if self.format == OutputFormat::Csv {
            self.write_header();
            // Written once per process, never held: a rollback does not write it again.
            self.write_through(true)?;
        }
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, _out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            return Ok(());
        }
        self.write_line(input);
        if self.pending.len() >= 1 << 16 {
            self.write_pending(false)?;
        }
        Ok(())
    }

    fn poll(&mut self, _out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.write_pending(true)
    }

    fn finish(&mut self, _out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.write_pending(true)
    }

    fn cleanup(&mut self) {
        // The run is ending either way; an error here was already reported by `finish`.
        let _ = self.write_pending(true);
    }
}

impl crate::components::CheckpointParticipant for Stdout {
    fn input_round(&mut self, round: u64) -> anyhow::Result<()> {
        if round != self.round && super::output_gate::get().is_some() {
            self.write_pending(false)?;
            self.round = round;
        }
        Ok(())
    }
    fn checkpoint_marker(&mut self, round: u64, txid: u64) -> anyhow::Result<()> {
        if let Some(gate) = super::output_gate::get() {
            self.write_pending(false)?;
            gate.mark(self.task, round, txid);
        }
        Ok(())
    }
}

/// The `stdout` built-in.
pub(crate) struct StdoutType;

impl b::Builtin for StdoutType {
    fn name(&self) -> &'static str {
        "stdout"
    }
    fn summary(&self) -> &'static str {
        "bolt: writes each tuple as a line on standard output: tsv, json or csv"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        use b::ArgShape as A;
        vec![
            b::arg("format", A::OneOf(FORMATS)),
            b::arg("fields", A::Fields),
            b::arg("header", A::Bool),
        ]
    }
    fn field_args(&self) -> &'static [&'static str] {
        &["fields"]
    }
    fn is_console(&self) -> bool {
        true
    }
    fn writes(&self, _kind: crate::model::ComponentKind) -> bool {
        true
    }
    fn checkpointed_bolt(
        &self,
        c: &crate::model::Component,
        _base: &std::path::Path,
    ) -> Option<anyhow::Result<Box<dyn crate::components::CheckpointParticipant>>> {
        Some(Ok(Box::new(Stdout::new(&c.args))))
    }
}
