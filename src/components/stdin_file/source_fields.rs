//! The `file` spout's own fields, `file_path` (the path a line came from, as written) and
//! `file_line` (its 1-based line number in that file): where `fields` puts them among the
//! values a line (or, with `format`, a record) gives.

use crate::components::parse::source::{fields_arg, without_source_fields};
use crate::tuple::{Value, Values};
use serde_json::Value as Json;

/// The fields a `file` spout gives besides what it reads.
const FILE_FIELDS: &[&str] = &["file_path", "file_line"];

type Args = serde_json::Map<String, Json>;

/// Whether `fields` names a file field: then the spout's output fields are `fields` as written.
pub(crate) fn asked(args: &Args) -> Option<Vec<String>> {
    fields_arg(args)
        .ok()
        .flatten()
        .filter(|f| f.iter().any(|n| FILE_FIELDS.contains(&n.as_str())))
}

/// The arguments without the file fields in `fields` (what the record reader reads).
pub(crate) fn reader_args(args: &Args) -> Args {
    // `fields` that is not a list of names is left for the reader to refuse.
    without_source_fields(args, &|f| FILE_FIELDS.contains(&f)).unwrap_or_else(|_| args.clone())
}

/// Where an output field's value comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Slot {
    /// The `n`th value the line (or record) gave.
    Read(usize),
    Path,
    Line,
}

/// The output fields' places: built when `fields` names a file field.
#[derive(Debug, Clone)]
pub(crate) struct Placement {
    slots: Vec<Slot>,
}

impl Placement {
    /// For `args` (a `file` spout's); `None` when `fields` names no file field. An error names
    /// a field that neither the reader nor the file gives.
    pub(crate) fn new(args: &Args) -> Result<Option<Placement>, String> {
        let Some(fields) = asked(args) else {
            return Ok(None);
        };
        let format = args.contains_key("format");
        let read = match format {
            true => crate::components::parse::spec::Spec::from_args(&reader_args(args))
                .map_err(|e| e.message)?
                .field_names(),
            false => vec!["line".to_string()],
        };
        let slots = fields
            .iter()
            .map(|f| match f.as_str() {
                "file_path" => Ok(Slot::Path),
                "file_line" => Ok(Slot::Line),
                other => match read.iter().position(|r| r == other) {
                    Some(i) => Ok(Slot::Read(i)),
                    None if format => Err(format!("the format gives no field `{other}`")),
                    None => Err(format!(
                        "without `format`, the fields are `line`, {}; `{other}` needs a `format`",
                        FILE_FIELDS.join(", ")
                    )),
                },
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(Placement { slots }))
    }

    /// The output values for `read` (what the line gave), from line `line` of `path`.
    pub(crate) fn place(&self, read: &[Value], path: &Value, line: u64) -> Values {
        self.slots
            .iter()
            .map(|s| match s {
                Slot::Read(i) => read.get(*i).cloned().unwrap_or(Value::Null),
                Slot::Path => path.clone(),
                Slot::Line => Value::Int(i64::try_from(line).unwrap_or(i64::MAX)),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(j: Json) -> Args {
        j.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn file_fields_go_where_fields_names_them() {
        let a =
            args(serde_json::json!({"format": "json", "fields": ["file_line", "n", "file_path"]}));
        let p = Placement::new(&a).ok().flatten();
        let p = p.unwrap_or_else(|| panic!("a placement"));
        let got = p.place(&[Value::Int(7)], &Value::str("a.log"), 3);
        assert_eq!(
            got.to_vec(),
            vec![Value::Int(3), Value::Int(7), Value::str("a.log")]
        );
        assert_eq!(
            reader_args(&a).get("fields"),
            Some(&serde_json::json!(["n"]))
        );
    }

    #[test]
    fn without_format_only_line_and_the_file_fields_are_known() {
        let a = args(serde_json::json!({"fields": ["file_path", "line"]}));
        assert!(matches!(Placement::new(&a), Ok(Some(_))));
        let a = args(serde_json::json!({"fields": ["file_path", "word"]}));
        let err = Placement::new(&a).err().unwrap_or_default();
        assert!(err.contains("`word` needs a `format`"), "{err}");
        let a = args(serde_json::json!({"fields": ["line"]}));
        assert!(matches!(Placement::new(&a), Ok(None)));
    }
}
