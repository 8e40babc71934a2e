//! A stream entry as tuple values. Without `format`, the entry's fields by name (`fields`),
//! or its record field as one `value`; with `format`, the record field (`field`, default the
//! entry's first) read by `stdin`'s record readers. `fields` may also name `redis_id`, the
//! entry's id, in any position.

use crate::components::parse::source::{fields_arg, without_source_fields};
use crate::components::parse::spec::Spec;
use crate::components::parse::Parser;
use crate::tuple::{Value, Values};
use serde_json::Value as Json;

/// The field holding the entry's id.
const ID_FIELD: &str = "redis_id";
/// The record's field without `format` and `fields`.
const VALUE_FIELD: &str = "value";

type Args = serde_json::Map<String, Json>;

#[derive(Debug, Clone, PartialEq)]
enum Slot {
    /// The record field's text.
    Value,
    Id,
    /// An entry field by name (without `format`).
    Entry(String),
    /// The `n`th value the reader gave.
    Read(usize),
}

pub(crate) struct RecordReader {
    parser: Option<Parser>,
    slots: Vec<Slot>,
    field: Option<String>,
}

/// The record arguments without `redis_id` in `fields` (what the format reads).
fn reader_spec(args: &Args) -> Result<Spec, String> {
    let mut args = without_source_fields(args, &|f| f == ID_FIELD)?;
    for own in [
        "url",
        "stream",
        "group",
        "consumer",
        "claim_after",
        "field",
        "max_retries",
    ] {
        args.remove(own);
    }
    Spec::from_args(&args).map_err(|e| e.message)
}

/// The spout's output fields for its arguments.
pub(crate) fn output_fields(args: &Args) -> Result<Vec<String>, String> {
    if let Some(fields) = fields_arg(args)? {
        return Ok(fields);
    }
    match args.contains_key("format") {
        true => Ok(reader_spec(args)?.field_names()),
        false => Ok(vec![VALUE_FIELD.to_string()]),
    }
}

impl RecordReader {
    pub(crate) fn new(args: &Args) -> Result<RecordReader, String> {
        let fields = output_fields(args)?;
        let format = args.contains_key("format");
        let read = match format {
            true => reader_spec(args)?.field_names(),
            false => Vec::new(),
        };
        let slots = fields
            .iter()
            .map(|f| match f.as_str() {
                ID_FIELD => Ok(Slot::Id),
                VALUE_FIELD if !format => Ok(Slot::Value),
                other if !format => Ok(Slot::Entry(other.to_string())),
                other => read
                    .iter()
                    .position(|r| r == other)
                    .map(Slot::Read)
                    .ok_or_else(|| format!("the format gives no field `{other}`")),
            })
            .collect::<Result<Vec<_>, String>>()?;
        let parser = match format {
            true => Some(Parser::new(&reader_spec(args)?)?),
            false => None,
        };
        let field = args.get("field").and_then(Json::as_str).map(String::from);
        Ok(RecordReader {
            parser,
            slots,
            field,
        })
    }

    /// The tuples of one entry (a JSON array gives several), or why it cannot be read.
    pub(crate) fn read(
        &mut self,
        id: &str,
        entry: &[(String, String)],
    ) -> Result<Vec<Values>, String> {
        let record = match &self.field {
            Some(f) => entry.iter().find(|(k, _)| k == f).map(|(_, v)| v.as_str()),
            None => entry.first().map(|(_, v)| v.as_str()),
        };
        let Some(parser) = &mut self.parser else {
            return Ok(vec![self.fill(id, entry, record, &[])]);
        };
        let Some(text) = record else {
            return Err(format!(
                "entry {id} has no field `{}`",
                self.field.as_deref().unwrap_or("?")
            ));
        };
        let mut records = Vec::new();
        let mut next = parser.parse(text).transpose();
        while let Some(r) = next {
            records.push(r?);
            next = parser.next_ready();
        }
        if let Some((_, reason)) = parser.unfinished() {
            return Err(reason.replace("at the end of input", "at the end of the entry"));
        }
        if records.is_empty() {
            return Err(format!("entry {id} holds no record"));
        }
        Ok(records
            .iter()
            .map(|r| self.fill(id, entry, record, r))
            .collect())
    }

    fn fill(
        &self,
        id: &str,
        entry: &[(String, String)],
        record: Option<&str>,
        read: &[Value],
    ) -> Values {
        let infer = |s: &str| crate::components::parse::infer::infer(Value::str(s));
        self.slots
            .iter()
            .map(|s| match s {
                Slot::Value => record.map_or(Value::Null, Value::str),
                Slot::Id => Value::str(id),
                Slot::Entry(name) => entry
                    .iter()
                    .find(|(k, _)| k == name)
                    .map_or(Value::Null, |(_, v)| infer(v)),
                Slot::Read(i) => read.get(*i).cloned().unwrap_or(Value::Null),
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

    fn entry(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn entries_read_by_name_by_value_or_by_format() {
        let e = entry(&[("user", "ann"), ("n", "3")]);
        let mut r = RecordReader::new(&args(serde_json::json!({}))).expect("reader");
        assert_eq!(
            r.read("1-0", &e),
            Ok(vec![Values::from_vec(vec![Value::str("ann")])])
        );
        let mut r = RecordReader::new(&args(
            serde_json::json!({"fields": ["redis_id", "n", "user"]}),
        ))
        .expect("reader");
        let want = vec![Value::str("1-0"), Value::Int(3), Value::str("ann")];
        assert_eq!(r.read("1-0", &e), Ok(vec![Values::from_vec(want)]));
        let j = entry(&[("data", r#"{"a": 1}"#)]);
        let a = args(serde_json::json!({"format": "json", "fields": ["a", "redis_id"]}));
        assert_eq!(output_fields(&a), Ok(vec!["a".into(), "redis_id".into()]));
        let mut r = RecordReader::new(&a).expect("reader");
        let want = vec![Value::Int(1), Value::str("2-0")];
        assert_eq!(r.read("2-0", &j), Ok(vec![Values::from_vec(want)]));
        assert!(r.read("3-0", &entry(&[("data", "{")])).is_err());
    }
}
