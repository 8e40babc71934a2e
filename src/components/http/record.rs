//! Records received over the network as tuple values, for the `http` and `socket` spouts: the
//! text is read by `stdin`'s record readers (`format` and its arguments; without a format each
//! line is one `line` field), and `fields` may also name fields of where the text came from
//! (`http_remote`, `http_header_<name>`, `socket_remote`, …), in any position.

use crate::components::parse::spec::Spec;
use crate::components::parse::DropWarnings;
use crate::components::parse::Parser;
use crate::components::{FatalError, SpoutCollector};
use crate::model::plan::StreamId;
use crate::tuple::{Value, Values};
use serde_json::Value as Json;

type Args = serde_json::Map<String, Json>;

/// The one field without `format`.
pub(crate) const LINE_FIELD: &str = "line";

/// Where an output field's value comes from.
#[derive(Debug, Clone, PartialEq)]
enum Slot {
    /// The `n`th value the reader gave.
    Read(usize),
    /// The `n`th field of the source (see [`Layout::source_fields`]).
    Source(usize),
}

/// Which output field takes which value.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    slots: Vec<Slot>,
    source: Vec<String>,
    /// The output is what the reader gives, as it gives it.
    identity: bool,
}

pub(crate) use crate::components::parse::source::fields_arg;

/// The record arguments with the source's fields taken out of `fields`: what `stdin`'s
/// readers are given.
fn reader_args(args: &Args, is_source: &dyn Fn(&str) -> bool) -> Result<Args, String> {
    let mut args = crate::components::parse::source::without_source_fields(args, is_source)?;
    // Only source fields asked: the reader reads all it has.
    if args
        .get("fields")
        .and_then(Json::as_array)
        .is_some_and(Vec::is_empty)
    {
        args.remove("fields");
    }
    Ok(args)
}

/// The reader's spec, for a `format` other than the source's own ones.
pub(crate) fn reader_spec(args: &Args, is_source: &dyn Fn(&str) -> bool) -> Result<Spec, String> {
    Spec::from_args(&reader_args(args, is_source)?).map_err(|e| e.message)
}

/// The record arguments' problems, each with the argument it is about (`format`, `columns`,
/// `fields`, …), for a `format` of `stdin`'s readers.
pub(crate) fn check_reader(
    args: &Args,
    is_source: &dyn Fn(&str) -> bool,
) -> Vec<(&'static str, String)> {
    if !args.contains_key("format") {
        return Vec::new();
    }
    match reader_args(args, is_source) {
        Err(why) => vec![("fields", why)],
        Ok(r) => match Spec::from_args(&r) {
            Ok(_) => Vec::new(),
            Err(e) => vec![(e.arg, e.message)],
        },
    }
}

impl Layout {
    /// The layout for `fields` (or, without it, all of `read`): `read` are the fields the
    /// format gives, `is_source` says which other names the source gives.
    pub(crate) fn new(
        fields: Option<Vec<String>>,
        read: &[String],
        is_source: &dyn Fn(&str) -> bool,
        formatted: bool,
    ) -> Result<Layout, String> {
        let Some(fields) = fields else {
            return Ok(Layout {
                slots: (0..read.len()).map(Slot::Read).collect(),
                source: Vec::new(),
                identity: true,
            });
        };
        let mut source = Vec::new();
        let mut slots = Vec::new();
        for f in &fields {
            if let Some(i) = read.iter().position(|r| r == f) {
                slots.push(Slot::Read(i));
            } else if is_source(f) {
                slots.push(Slot::Source(source.len()));
                source.push(f.clone());
            } else if formatted {
                return Err(format!("the format gives no field `{f}`"));
            } else {
                return Err(format!(
                    "without `format` the record is one `{LINE_FIELD}` field; `{f}` needs a `format`"
                ));
            }
        }
        let identity =
            slots.len() == read.len() && slots.iter().enumerate().all(|(i, s)| *s == Slot::Read(i));
        Ok(Layout {
            slots,
            source,
            identity,
        })
    }

    /// The source fields asked for, in the order [`Layout::fill`] wants their values.
    pub(crate) fn source_fields(&self) -> &[String] {
        &self.source
    }

    /// The output values of a record: `read` from the reader, `source` the values of
    /// [`Layout::source_fields`].
    pub(crate) fn fill(&self, read: Values, source: &[Value]) -> Values {
        if self.identity {
            return read;
        }
        self.slots
            .iter()
            .map(|s| match s {
                Slot::Read(i) => read.get(*i).cloned().unwrap_or(Value::Null),
                Slot::Source(i) => source.get(*i).cloned().unwrap_or(Value::Null),
            })
            .collect()
    }
}

/// What reading a text gave: records (as the reader's values) and the lines that could not
/// be read, with why.
#[derive(Debug, Default)]
pub(crate) struct Read {
    pub(crate) records: Vec<Values>,
    pub(crate) bad: Vec<(String, String)>,
}

/// Read one line into `out`: with a parser, its records (a JSON array gives several);
/// without, the line itself. Blank lines are no record.
pub(crate) fn read_line(parser: Option<&mut Parser>, line: &str, out: &mut Read) {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let Some(parser) = parser else {
        if !line.trim().is_empty() {
            out.records.push(smallvec::smallvec![Value::str(line)]);
        }
        return;
    };
    let mut next = parser.parse(line).transpose();
    while let Some(r) = next {
        match r {
            Ok(values) => out.records.push(values),
            Err(reason) => out.bad.push((preview(line), reason)),
        }
        next = parser.next_ready();
    }
}

/// At the end of a text: a record left open (an unclosed quote or JSON value) is bad.
pub(crate) fn read_end(parser: Option<&mut Parser>, what: &str, out: &mut Read) {
    if let Some((text, reason)) = parser.and_then(Parser::unfinished) {
        out.bad
            .push((text, reason.replace("at the end of input", what)));
    }
}

/// Read a whole text (a request body) with a fresh parser for `spec`.
pub(crate) fn read_text(
    spec: Option<&Spec>,
    text: &str,
    max_record: usize,
) -> Result<Read, String> {
    let mut parser = spec.map(Parser::new).transpose()?;
    if let Some(p) = &mut parser {
        p.set_max_record(max_record);
    }
    let mut out = Read::default();
    for line in text.split_terminator('\n') {
        read_line(parser.as_mut(), line, &mut out);
        if let Some(why) = parser.as_ref().and_then(|p| p.fatal()) {
            return Err(why.to_string());
        }
    }
    read_end(parser.as_mut(), "at the end of the body", &mut out);
    Ok(out)
}

/// A line as kept on the `errors` stream: at most 4 KiB of it.
fn preview(line: &str) -> String {
    const MOST: usize = 4096;
    if line.len() <= MOST {
        return line.to_string();
    }
    let mut end = MOST;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_string()
}

/// Record `at` (counted from 1) could not be read: its text and the reason on the `errors`
/// stream when one is wired, else dropped, counted and warned about (with `topology.strict`,
/// the error that ends the run).
pub(crate) fn unreadable(
    errors: Option<StreamId>,
    warnings: &mut DropWarnings,
    at: u64,
    line: &str,
    reason: &str,
    out: &mut dyn SpoutCollector,
) -> Result<(), FatalError> {
    match errors {
        Some(stream) => {
            let values = smallvec::smallvec![Value::str(line), Value::str(reason)];
            out.send(stream, values, None);
            Ok(())
        }
        None => {
            out.dropped(1);
            warnings.dropped(at, line, reason)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn is_http(f: &str) -> bool {
        f.starts_with("http_")
    }

    #[test]
    fn source_fields_go_where_fields_names_them() {
        let args = json!({"format": "json", "fields": ["http_remote", "service", "n"]});
        let args = args.as_object().cloned().unwrap_or_default();
        let spec = reader_spec(&args, &is_http).expect("spec");
        let read = spec.field_names();
        assert_eq!(read, ["service", "n"]);
        let fields = fields_arg(&args).expect("fields");
        let layout = Layout::new(fields, &read, &is_http, true).expect("layout");
        assert_eq!(layout.source_fields(), ["http_remote"]);
        let got = read_text(Some(&spec), "{\"service\":\"api\",\"n\":3}\n", 1 << 20).expect("read");
        let values = layout.fill(got.records[0].clone(), &[Value::str("1.2.3.4:5")]);
        let want = vec![Value::str("1.2.3.4:5"), Value::str("api"), Value::Int(3)];
        assert_eq!(values, Values::from_vec(want));
    }

    #[test]
    fn arrays_ndjson_and_csv_read_the_same_records() {
        let spec =
            |j: Json| Spec::from_args(&j.as_object().cloned().unwrap_or_default()).expect("spec");
        let json_spec = spec(json!({"format": "json", "fields": ["a"]}));
        let array = read_text(Some(&json_spec), "[{\"a\":1},{\"a\":2}]", 1 << 20).expect("read");
        let lines = read_text(Some(&json_spec), "{\"a\":1}\r\n{\"a\":2}", 1 << 20).expect("read");
        assert_eq!(array.records, lines.records);
        assert_eq!(array.records.len(), 2);
        let csv = spec(json!({"format": "csv", "header": true, "fields": ["a", "b"]}));
        let got = read_text(Some(&csv), "a,b\n1,x\n2,\"open", 1 << 20).expect("read");
        assert_eq!(got.records.len(), 1);
        assert_eq!(got.bad.len(), 1, "{:?}", got.bad);
        assert!(got.bad[0].1.contains("end of the body"), "{:?}", got.bad);
    }

    #[test]
    fn fields_may_reorder_every_field_the_reader_gives() {
        let read: Vec<String> = vec!["a".into(), "b".into()];
        let fields = Some(vec!["b".to_string(), "a".to_string()]);
        let layout = Layout::new(fields, &read, &is_http, true).expect("layout");
        let got = layout.fill(smallvec::smallvec![Value::Int(1), Value::Int(2)], &[]);
        assert_eq!(got, Values::from_vec(vec![Value::Int(2), Value::Int(1)]));
    }

    #[test]
    fn without_format_each_line_is_one_field() {
        let got = read_text(None, "a\n\nb\r\n", 10).expect("read");
        let want: Vec<Values> = vec![
            smallvec::smallvec![Value::str("a")],
            smallvec::smallvec![Value::str("b")],
        ];
        assert_eq!(got.records, want);
        let layout = Layout::new(Some(vec!["x".into()]), &["line".into()], &is_http, false);
        assert!(layout.is_err());
    }
}
