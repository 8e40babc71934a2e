//! The `parse` built-in, and what every component that reads a `format` shares with it
//! (`stdin`, `file`): the arguments, the check of the spec, the fields and their types, and
//! the `errors` stream.

use super::spec::{Format, Spec, FORMATS};
use super::types::FieldType;
use crate::components::builtin::{self as b, arg, ArgShape as A, Written};
use crate::components::Bolt;
use crate::expr::Type;
use crate::model::Component;
use std::path::Path;

/// What `parse` reads, and `stdin`/`file` with `format:`.
pub(crate) const READS_FORMAT: &[b::Arg] = &[
    arg("format", A::OneOf(FORMATS)),
    arg("fields", A::Fields),
    arg("header", A::Bool),
    arg("columns", A::Fields),
    arg("pattern", A::Text),
    arg("types", A::Map),
    arg("separator", A::Text),
    arg("pair_separator", A::Text),
];

/// The `parse` built-in.
pub(crate) struct ParseType;

impl b::Builtin for ParseType {
    fn name(&self) -> &'static str {
        "parse"
    }
    fn summary(&self) -> &'static str {
        "bolt: fields out of a line: json, csv, tsv, regex, logfmt, kv, combined"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        let mut args = vec![arg("field", A::Text)];
        args.extend_from_slice(READS_FORMAT);
        args
    }
    fn field_args(&self) -> &'static [&'static str] {
        &["field"]
    }
    fn output_fields(&self, c: &Component, _input: Option<&[String]>) -> b::Fields {
        Some(Some(parsed_fields(&c.args)))
    }
    fn extra_streams(
        &self,
        _c: &Component,
        _input: Option<&[String]>,
    ) -> Vec<(String, Vec<String>)> {
        vec![errors_stream()]
    }
    fn field_types(&self, cx: &b::TypeCx) -> Option<Vec<Type>> {
        Some(parsed_types(&cx.c.args, cx.fields.len()))
    }
    fn check(&self, w: &mut Written) {
        // (As the line spouts read them: `fields` without their file fields.)
        let args = crate::components::stdin_file::source_fields::reader_args(&w.args_json());
        check_spec(w, &args, None);
    }
    fn bolt(&self, c: &Component, _base: &Path) -> anyhow::Result<Box<dyn Bolt>> {
        Ok(Box::new(super::Parse::new(&c.args)?))
    }
}

/// The `errors` stream of a component that parses: the lines it could not read, and why.
pub(crate) fn errors_stream() -> (String, Vec<String>) {
    let fields = super::ERROR_FIELDS.iter().map(|f| f.to_string()).collect();
    (super::ERRORS_STREAM.into(), fields)
}

/// The fields a parsing component emits; none when its arguments are wrong (reported where
/// they are checked).
pub(crate) fn parsed_fields(args: &serde_json::Map<String, serde_json::Value>) -> Vec<String> {
    Spec::from_args(args)
        .map(|s| s.field_names())
        .unwrap_or_default()
}

/// The types of a parsing component's fields: those it converts to; the others as read,
/// which is not known here (a JSON value may be anything).
pub(crate) fn parsed_types(
    args: &serde_json::Map<String, serde_json::Value>,
    count: usize,
) -> Vec<Type> {
    let Ok(spec) = Spec::from_args(args) else {
        return vec![Type::Any; count];
    };
    spec.outputs
        .iter()
        .map(|(_, t)| match t {
            Some(FieldType::Int) => Type::Int,
            Some(FieldType::Float) => Type::Float,
            Some(FieldType::Str) => Type::Str,
            Some(FieldType::Bool) => Type::Bool,
            None => Type::Any,
        })
        .collect()
}

/// A parsing component's format and options must make sense together: checked as the runtime
/// reads them, each problem located at the argument it is about. `file`: the file a `file`
/// spout reads, whose header (when it has one and it is there) must have the columns asked for.
pub(crate) fn check_spec(
    w: &mut Written,
    args: &serde_json::Map<String, serde_json::Value>,
    file: Option<&str>,
) {
    let spec = match Spec::from_args(args) {
        Err(e) => {
            let span = w.arg_span(e.arg);
            w.error(e.message, span);
            return;
        }
        Ok(spec) => spec,
    };
    let header = matches!(spec.format, Format::Delimited { header: true, .. });
    if !header {
        return;
    }
    if let Err(why) = file.map_or(Ok(()), |f| file_header(&spec, f, w.base_dir)) {
        let span = w.arg_span("fields");
        w.error(why, span);
    }
    if w.parallelism > 1 {
        let span = w.arg_span("header");
        w.error(
            "`header: true` needs `parallelism: 1`: only one task would see the header line",
            span,
        )
        .help = Some(
            "give the names with `columns` instead, or read the file with `stdin(format=csv, header=true, …)`".into(),
        );
    }
}

/// When the file exists, its CSV/TSV header must have the columns asked for (the run would end
/// at its first line otherwise).
fn file_header(spec: &Spec, path: &str, base_dir: &Path) -> Result<(), String> {
    use std::io::BufRead;
    let Ok(f) = std::fs::File::open(base_dir.join(path)) else {
        return Ok(());
    };
    let mut first = Vec::new();
    let limit = super::DEFAULT_MAX_RECORD as u64;
    if std::io::Read::take(std::io::BufReader::new(f), limit)
        .read_until(b'\n', &mut first)
        .is_err()
    {
        return Ok(());
    }
    let line = String::from_utf8_lossy(&first);
    let line = line.trim_end_matches(['\n', '\r']);
    super::Parser::check_header(spec, line).map_err(|why| format!("`{path}`: {why}"))
}
