//! CSV and TSV (RFC 4180, with csv-core, the `csv` crate's allocation-free engine): one record
//! per line, or over several lines when a quoted cell holds a newline (the reader keeps its state
//! between lines). The first record names the columns with `header: true`; `columns` names them
//! otherwise; `fields` picks the columns emitted, and with neither names every cell in order.
//! Without a header, a first record whose cells are the names themselves is a header read as
//! data, and, named by `fields` alone, one with another number of cells is read by the wrong
//! positions: both end the run with an error that says what to write.

use crate::tuple::Value;
use csv_core::{ReadRecordResult, Reader, ReaderBuilder};

/// A quoted cell may hold newlines; past this many bytes an unfinished record is an error
/// (an unbalanced quote would otherwise swallow the rest of the input).
pub(crate) const MAX_RECORD_BYTES: usize = 1 << 20;

pub(crate) struct Delimited {
    reader: Reader,
    /// What the plain-line fast path needs to know (kept equal to the fields below).
    layout: Layout,
    /// Where each cell of a plain line ends (the fast path's scratch).
    bounds: Vec<usize>,
    /// Cell bytes of the record being read, and where each cell ends.
    cells: Vec<u8>,
    ends: Vec<usize>,
    used: (usize, usize),
    /// Bytes of the record so far (for the size bound), and its lines (for an error's `line`).
    pending: String,
    header: bool,
    /// The header was read (or restored): a resumed run skips it.
    header_read: bool,
    /// Column names (from `columns`, or the header once read).
    columns: Vec<String>,
    keep: Vec<String>,
    /// Which cell each output field takes (`None`: all cells in order).
    picks: Option<Vec<usize>>,
    /// The header lacks a column asked for: nothing can be read (an error for the run).
    broken: Option<String>,
    /// The longest record read, in bytes.
    max_record: usize,
    /// Neither `header` nor `columns`: `fields` names every cell, in order.
    positional: bool,
    /// The first record was read (and checked, see [`Delimited::first_record_refused`]).
    first_read: bool,
}

/// The error for a record past `max` bytes (`quoted`: a quoted cell went on over lines).
pub(crate) fn too_long(max: usize, quoted: bool) -> String {
    let size = if max % (1 << 20) == 0 {
        format!("{} MiB", max >> 20)
    } else {
        format!("{max} bytes")
    };
    let hint = if quoted {
        " (a quoted cell that is not closed reads on over the next lines)"
    } else {
        ""
    };
    format!("a record longer than {size}{hint}; the limit is topology.record.max.bytes")
}

/// The error for a record of `n` cells where `want` columns are named (`positional`: by
/// `fields` alone).
fn count_error(n: usize, want: usize, positional: bool) -> String {
    match positional {
        true => format!("{n} cells where `fields` names {want} (without `header` or `columns`, `fields` names every cell in order)"),
        false => format!("{n} cells where the header has {want} columns"),
    }
}

/// What one line gave.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// A whole record: its values were appended.
    Record,
    /// The record goes on in the next line (a quoted cell holds a newline).
    Pending,
    /// The header was read: nothing to emit.
    Header,
}

/// How the records after the header are laid out: what reading a plain line needs, with no
/// other state (so the line spout's reader thread can read lines ahead with it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Layout {
    delimiter: u8,
    /// The header's (or `columns`', or positional `fields`') column count; 0: not checked.
    columns: usize,
    picks: Option<Vec<usize>>,
    max_record: usize,
    /// The columns are named by `fields` alone, in order (for the error's words).
    positional: bool,
}

impl Layout {
    /// The fast path of a line that is one record on its own (no `\r` or `\n`, not empty,
    /// within the record limit) and quotes nothing or only whole cells (`quoted.rs`): its cells
    /// are read exactly as csv-core reads them; those asked for are appended to `out`
    /// (`bounds` is scratch). `None` (and `out` unchanged) when csv-core must read the line.
    pub(crate) fn read_plain(
        &self,
        line: &str,
        bounds: &mut Vec<usize>,
        out: &mut Vec<Value>,
    ) -> Option<Result<(), String>> {
        self.read_plain_as(line, bounds, out, |_, text| Some(Value::str(text)))
    }

    /// [`Layout::read_plain`], each cell asked for made a value by `value` from its index
    /// among those asked for and its text (a quoted cell's with `""` read as `"`). `None` (and
    /// `out` unchanged) when csv-core must read the line, or `value` gives `None` for a cell.
    pub(crate) fn read_plain_as(
        &self,
        line: &str,
        bounds: &mut Vec<usize>,
        out: &mut Vec<Value>,
        mut value: impl FnMut(usize, &str) -> Option<Value>,
    ) -> Option<Result<(), String>> {
        let quoted = self.split(line.as_bytes(), bounds)?;
        let n = bounds.len() / 2;
        let want = self.columns;
        if want > 0 && n != want {
            return Some(Err(count_error(n, want, self.positional)));
        }
        let at = out.len();
        let mut take = |k: usize, i: usize| {
            let text = line.get(*bounds.get(2 * i)?..*bounds.get(2 * i + 1)?)?;
            let v = match quoted {
                true => value(k, &super::quoted::unescape(text)),
                false => value(k, text),
            };
            out.push(v?);
            Some(())
        };
        let all = match &self.picks {
            Some(picks) => picks.iter().enumerate().try_for_each(|(k, &i)| take(k, i)),
            None => (0..n).try_for_each(|i| take(i, i)),
        };
        if all.is_none() {
            // A pick past the cells (never, as the count was checked), or a value refused.
            out.truncate(at);
            return None;
        }
        Some(Ok(()))
    }

    /// The (start, end) bounds of `b`'s cells into `bounds`, and whether the line quotes any;
    /// `None` when the fast path cannot read it (a line end inside, an empty or too long line,
    /// a quote used otherwise than around a whole cell).
    fn split(&self, b: &[u8], bounds: &mut Vec<usize>) -> Option<bool> {
        if !self.delimiter.is_ascii() || b.is_empty() || b.len() > self.max_record {
            return None;
        }
        bounds.clear();
        match super::cell_scan::plain_cells(b, self.delimiter, bounds) {
            Ok(()) => Some(false),
            Err(super::cell_scan::Stop::LineEnd) => None,
            // The cells before it are plain: read on from the cell that quotes.
            Err(super::cell_scan::Stop::Quote(from)) => {
                let rest = b.get(from..)?;
                if memchr::memchr2(b'\r', b'\n', rest).is_some() {
                    return None;
                }
                super::quoted::cells_from(b, from, self.delimiter, bounds)?;
                Some(true)
            }
        }
    }
}

impl Delimited {
    pub(crate) fn new(
        delimiter: u8,
        header: bool,
        columns: Vec<String>,
        keep: Vec<String>,
    ) -> Delimited {
        let positional = !header && columns.is_empty() && !keep.is_empty();
        let columns = match positional {
            true => keep.clone(),
            false => columns,
        };
        let mut d = Delimited {
            reader: ReaderBuilder::new().delimiter(delimiter).build(),
            layout: Layout {
                delimiter,
                columns: 0,
                picks: None,
                max_record: MAX_RECORD_BYTES,
                positional,
            },
            bounds: Vec::with_capacity(64),
            cells: vec![0; 1024],
            ends: vec![0; 64],
            used: (0, 0),
            pending: String::new(),
            header,
            header_read: false,
            columns,
            keep,
            picks: None,
            broken: None,
            max_record: MAX_RECORD_BYTES,
            positional,
            first_read: false,
        };
        if !d.columns.is_empty() {
            d.picks = d.resolve_picks().ok().flatten();
        }
        d
    }

    /// Set the longest record read, in bytes.
    pub(crate) fn set_max_record(&mut self, bytes: usize) {
        self.max_record = bytes.max(1);
    }

    /// Why nothing can be read, when the header lacks a column asked for.
    pub(crate) fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Feed one line (without its line end).
    pub(crate) fn feed(&mut self, line: &str, out: &mut Vec<Value>) -> Result<Step, String> {
        if let Some(why) = &self.broken {
            return Err(why.clone());
        }
        // The first record is read by csv-core, and checked (see `first_record_refused`).
        if self.pending.is_empty() && !self.header && self.first_read {
            if let Some(step) = self.feed_plain(line, out) {
                return step;
            }
        }
        if !self.pending.is_empty() {
            self.pending.push('\n');
        }
        self.pending.push_str(line);
        if self.pending.len() > self.max_record {
            let quoted = self.pending.len() > line.len();
            self.reset();
            return Err(too_long(self.max_record, quoted));
        }
        // An empty input means "end of input" to csv-core: an empty line is only its newline.
        let complete = (!line.is_empty() && self.read(line.as_bytes())?) || self.read(b"\n")?;
        if !complete {
            return Ok(Step::Pending);
        }
        let result = self.finish_record(out);
        self.reset();
        result
    }

    /// The fast path of a line that is one record on its own (see [`Layout::read_plain`]);
    /// `None` when csv-core must read the line.
    fn feed_plain(&mut self, line: &str, out: &mut Vec<Value>) -> Option<Result<Step, String>> {
        self.refresh_layout();
        let read = self.layout.read_plain(line, &mut self.bounds, out)?;
        Some(read.map(|()| Step::Record))
    }

    /// The layout of the records after the header (`None` while the header is still to be
    /// read, or when it lacks a column asked for).
    pub(crate) fn layout(&mut self) -> Option<&Layout> {
        if self.header || self.broken.is_some() {
            return None;
        }
        self.refresh_layout();
        Some(&self.layout)
    }

    /// Bring the plain-line layout up to date with the columns and picks.
    fn refresh_layout(&mut self) {
        if self.layout.columns != self.columns.len()
            || self.layout.picks != self.picks
            || self.layout.max_record != self.max_record
        {
            self.layout = Layout {
                delimiter: self.layout.delimiter,
                columns: self.columns.len(),
                picks: self.picks.clone(),
                max_record: self.max_record,
                positional: self.positional,
            };
        }
    }

    /// A record is under way (a quoted cell went on past the last line fed).
    pub(crate) fn is_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The column names, once a header was read (what a resumed run needs in its place).
    pub(crate) fn header_columns(&self) -> Option<&[String]> {
        self.header_read.then_some(self.columns.as_slice())
    }

    /// Take `columns` as the header a run before this one read: the input goes on after it.
    pub(crate) fn restore_header(&mut self, columns: Vec<String>) -> Result<(), String> {
        if !self.header {
            return Err("a header was given, but this reader reads none".into());
        }
        self.header = false;
        self.header_read = true;
        if self.columns.is_empty() {
            self.columns = columns;
        }
        self.picks = self.resolve_picks()?;
        Ok(())
    }

    /// The text of an unfinished record, for an error at the end of input.
    pub(crate) fn unfinished(&mut self) -> Option<String> {
        let text = std::mem::take(&mut self.pending);
        self.reset();
        (!text.is_empty()).then_some(text)
    }

    /// Run the reader over `input`; `true` once a record is complete.
    fn read(&mut self, mut input: &[u8]) -> Result<bool, String> {
        loop {
            let (res, n_in, n_out, n_ends) = self.reader.read_record(
                input,
                &mut self.cells[self.used.0..],
                &mut self.ends[self.used.1..],
            );
            input = &input[n_in..];
            self.used.0 += n_out;
            self.used.1 += n_ends;
            match res {
                ReadRecordResult::Record => return Ok(true),
                ReadRecordResult::InputEmpty if input.is_empty() => return Ok(false),
                ReadRecordResult::InputEmpty => {}
                ReadRecordResult::OutputFull => {
                    let n = self.cells.len();
                    self.cells.resize(n * 2, 0);
                }
                ReadRecordResult::OutputEndsFull => {
                    let n = self.ends.len();
                    self.ends.resize(n * 2, 0);
                }
                ReadRecordResult::End => return Ok(false),
            }
        }
    }

    /// Why the first record of `n` cells, without a header, shows the columns misnamed: its
    /// cells are the names themselves (a header read as data), or, named by `fields` alone,
    /// it has another number of cells (each field would take the cell at its position).
    fn first_record_refused(&self, n: usize) -> Option<String> {
        let names = &self.columns;
        let named = !names.is_empty()
            && n == names.len()
            && (0..n).all(|i| self.cell(i).is_ok_and(|c| c.trim() == names[i]));
        if named {
            return Some(format!(
                "the first line names the columns ({}): it is a header; read it as one with `header: true`",
                names.join(", ")
            ));
        }
        if self.positional && n != names.len() {
            // A few cells, each cut short, show which line it is.
            let mut cells: Vec<String> = (0..n.min(6))
                .map(|i| self.cell(i).unwrap_or("").chars().take(30).collect())
                .collect();
            if n > 6 {
                cells.push("…".into());
            }
            return Some(format!(
                "the first record has {n} cells ({}) where `fields` names {} ({}): without `header: true` or `columns`, `fields` names every cell in order; with a first line that names the columns, say `header: true`",
                cells.join(", "),
                names.len(),
                names.join(", ")
            ));
        }
        None
    }

    fn cell(&self, i: usize) -> Result<&str, String> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        let bytes = self.cells.get(start..self.ends[i]).unwrap_or_default();
        std::str::from_utf8(bytes).map_err(|_| format!("cell {} is not valid UTF-8", i + 1))
    }

    fn finish_record(&mut self, out: &mut Vec<Value>) -> Result<Step, String> {
        let n = self.used.1;
        if self.header {
            self.header = false;
            self.header_read = true;
            if self.columns.is_empty() {
                self.columns = (0..n)
                    .map(|i| self.cell(i).map(str::to_string))
                    .collect::<Result<_, _>>()?;
            }
            self.picks = match self.resolve_picks() {
                Ok(picks) => picks,
                Err(why) => {
                    self.broken = Some(why.clone());
                    return Err(why);
                }
            };
            return Ok(Step::Header);
        }
        if !std::mem::replace(&mut self.first_read, true) {
            if let Some(why) = self.first_record_refused(n) {
                self.broken = Some(why.clone());
                return Err(why);
            }
        }
        let want = self.columns.len();
        if want > 0 && n != want {
            return Err(count_error(n, want, self.positional));
        }
        match &self.picks {
            Some(picks) => {
                for &i in picks {
                    out.push(Value::str(self.cell(i)?));
                }
            }
            None => {
                for i in 0..n {
                    out.push(Value::str(self.cell(i)?));
                }
            }
        }
        Ok(Step::Record)
    }

    /// The cells `keep` names, once the columns are known.
    fn resolve_picks(&self) -> Result<Option<Vec<usize>>, String> {
        if self.keep.is_empty() {
            return Ok(None);
        }
        let picks = self
            .keep
            .iter()
            .map(|k| {
                self.columns
                    .iter()
                    .position(|c| c == k)
                    .ok_or_else(|| super::header::missing(k, &self.columns))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(picks))
    }

    fn reset(&mut self) {
        self.reader.reset();
        self.used = (0, 0);
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(d: &mut Delimited, lines: &[&str]) -> Vec<Result<Vec<Value>, String>> {
        let mut got = Vec::new();
        for l in lines {
            let mut out = Vec::new();
            match d.feed(l, &mut out) {
                Ok(Step::Record) => got.push(Ok(out)),
                Ok(_) => {}
                Err(e) => got.push(Err(e)),
            }
        }
        got
    }

    fn strs(v: &[&str]) -> Vec<Value> {
        v.iter().map(|s| Value::str(s)).collect()
    }

    #[test]
    fn header_quotes_and_embedded_newlines() {
        let mut d = Delimited::new(b',', true, vec![], vec!["msg".into(), "a".into()]);
        let got = feed_all(
            &mut d,
            &[
                "a,b,msg",
                "1,2,plain",
                r#"3,4,"say ""hi"", ok""#,
                r#"5,6,"two"#,
                r#"lines""#,
            ],
        );
        assert_eq!(
            got,
            vec![
                Ok(strs(&["plain", "1"])),
                Ok(strs(&["say \"hi\", ok", "3"])),
                Ok(strs(&["two\nlines", "5"])),
            ]
        );
    }

    #[test]
    fn wrong_cell_counts_and_missing_columns_are_errors() {
        let mut d = Delimited::new(b',', true, vec![], vec![]);
        let got = feed_all(&mut d, &["a,b", "1,2,3", "4,5"]);
        assert!(got[0].is_err());
        assert_eq!(got[1], Ok(strs(&["4", "5"])));
        let mut d = Delimited::new(b',', true, vec![], vec!["zz".into()]);
        let mut out = Vec::new();
        assert!(d.feed("a,b", &mut out).is_err());
    }

    #[test]
    fn tabs_and_columns_without_header() {
        let mut d = Delimited::new(b'\t', false, vec!["x".into(), "y".into()], vec!["y".into()]);
        assert_eq!(
            feed_all(&mut d, &["1\t2", "3\t4"]),
            vec![Ok(strs(&["2"])), Ok(strs(&["4"]))]
        );
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn fields_alone_name_every_cell_in_order_and_other_counts_are_errors() {
        let mut d = Delimited::new(b',', false, vec![], names(&["level", "service"]));
        let got = feed_all(&mut d, &["error,a", "info,b,extra", "warn,c"]);
        assert_eq!(got[0], Ok(strs(&["error", "a"])));
        let third = got[1].as_ref().expect_err("three cells for two fields");
        assert!(third.contains("3 cells where `fields` names 2"), "{third}");
        assert_eq!(got[2], Ok(strs(&["warn", "c"])));
        assert_eq!(
            d.broken(),
            None,
            "a later record is an error of its own line"
        );
    }

    #[test]
    fn a_first_record_that_misplaces_the_fields_ends_the_run() {
        // A file with a header, read without `header: true`: each field would take the cell
        // at its position (`level` the time, `service` the level).
        let mut d = Delimited::new(b',', false, vec![], names(&["level", "service"]));
        let got = feed_all(&mut d, &["ts,level,service", "1,error,a"]);
        let why = got[0].as_ref().expect_err("refused");
        assert!(
            why.contains("the first record has 3 cells (ts, level, service)"),
            "{why}"
        );
        assert!(why.contains("header: true"), "{why}");
        assert_eq!(d.broken(), Some(why.as_str()), "nothing more is read");
        assert_eq!(got[1].as_ref().expect_err("broken"), why);
    }

    #[test]
    fn a_header_read_as_data_ends_the_run() {
        for (columns, keep) in [(vec![], names(&["a", "b"])), (names(&["a", "b"]), vec![])] {
            let mut d = Delimited::new(b',', false, columns, keep);
            let got = feed_all(&mut d, &[" a , b", "1,2"]);
            let why = got[0].as_ref().expect_err("a header as data");
            assert!(
                why.contains("the first line names the columns (a, b)"),
                "{why}"
            );
            assert!(d.broken().is_some());
        }
        // With `header: true` the same lines read as they should.
        let mut d = Delimited::new(b',', true, vec![], names(&["b"]));
        assert_eq!(feed_all(&mut d, &["a,b", "1,2"]), vec![Ok(strs(&["2"]))]);
    }

    #[test]
    fn an_unclosed_quote_is_bounded() {
        let mut d = Delimited::new(b',', false, vec!["a".into()], vec![]);
        let mut out = Vec::new();
        assert_eq!(d.feed("\"open", &mut out), Ok(Step::Pending));
        assert_eq!(d.unfinished().as_deref(), Some("\"open"));
        let long = "x".repeat(MAX_RECORD_BYTES);
        assert_eq!(d.feed("\"", &mut out), Ok(Step::Pending));
        assert!(d.feed(&long, &mut out).is_err());
    }

    use proptest::prelude::*;

    proptest! {
        /// Records written by the `csv` crate, cut into lines as the line spout cuts them, read
        /// back equal to what the `csv` crate reads.
        #[test]
        fn reads_what_the_csv_crate_reads(
            rows in proptest::collection::vec(proptest::collection::vec("[a-c ,\"\n\u{e9}]{0,6}", 3), 1..8),
            tab in any::<bool>(),
        ) {
            let delimiter = if tab { b'\t' } else { b',' };
            let mut w = csv::WriterBuilder::new().delimiter(delimiter).terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
            for r in &rows {
                w.write_record(r).expect("write");
            }
            let text = String::from_utf8(w.into_inner().expect("flush")).expect("utf8");
            let expected: Vec<Vec<String>> = csv::ReaderBuilder::new()
                .delimiter(delimiter)
                .has_headers(false)
                .from_reader(text.as_bytes())
                .records()
                .map(|r| r.expect("csv reads its own").iter().map(str::to_string).collect())
                .collect();
            let columns = vec!["a".to_string(), "b".to_string(), "c".to_string()];
            let mut d = Delimited::new(delimiter, false, columns, vec![]);
            let mut got = Vec::new();
            for line in text.strip_suffix('\n').unwrap_or(&text).split('\n') {
                let mut out = Vec::new();
                if d.feed(line, &mut out).expect("reads") == Step::Record {
                    got.push(out.iter().map(|v| v.as_str().unwrap_or_default().to_string()).collect::<Vec<_>>());
                }
            }
            prop_assert_eq!(got, expected);
        }

        /// Wherever the plain-line fast path answers, its cells are the ones the `csv` crate
        /// reads from the line (and with a header's column count, the same count error).
        #[test]
        fn the_plain_path_reads_what_the_csv_crate_reads(
            line in "[ab ,;\t\"\r\n\u{e9}]{0,12}",
            tab in any::<bool>(),
            columns in 0usize..4,
        ) {
            let delimiter = if tab { b'\t' } else { b',' };
            let names: Vec<String> = (0..columns).map(|i| format!("c{i}")).collect();
            let mut d = Delimited::new(delimiter, false, names, vec![]);
            let mut fast = Vec::new();
            let Some(step) = d.feed_plain(&line, &mut fast) else { return Ok(()) };
            let record = csv::ReaderBuilder::new()
                .delimiter(delimiter)
                .has_headers(false)
                .flexible(true)
                .from_reader(line.as_bytes())
                .records()
                .next();
            let Some(Ok(record)) = record else {
                return Err(TestCaseError::fail(format!("{line:?}: the fast path answered, the csv crate read no record")));
            };
            let expected: Vec<Value> = record.iter().map(Value::str).collect();
            match step {
                Ok(Step::Record) => prop_assert_eq!(fast, expected),
                Ok(other) => return Err(TestCaseError::fail(format!("{line:?}: {other:?}"))),
                Err(_) => prop_assert!(columns > 0 && expected.len() != columns, "{:?}", line),
            }
        }
    }
}
