//! A Kafka message as tuple values: its payload as one `value` field, or read into fields by
//! `format` with `stdin`'s record readers; `fields` may also name the message's own
//! `kafka_key`, `kafka_partition`, `kafka_offset`, `kafka_timestamp`, its headers as a map
//! (`kafka_headers`) and one header (`kafka_header_<name>`), in any position.

use crate::components::parse::source::{fields_arg, without_source_fields};
use crate::components::parse::spec::Spec;
use crate::components::parse::Parser;
use crate::tuple::{Value, Values};
use serde_json::Value as Json;

/// The fields a message gives besides its payload.
const KAFKA_FIELDS: &[&str] = &[
    "kafka_key",
    "kafka_partition",
    "kafka_offset",
    "kafka_timestamp",
];

/// The field of every header (a map of name to value) and the prefix of one header's field.
const HEADERS_FIELD: &str = "kafka_headers";
const HEADER_PREFIX: &str = "kafka_header_";

/// Whether `name` is a field of the message rather than of its payload's records.
fn is_source_field(name: &str) -> bool {
    KAFKA_FIELDS.contains(&name)
        || name == HEADERS_FIELD
        || name
            .strip_prefix(HEADER_PREFIX)
            .is_some_and(|h| !h.is_empty())
}

/// A header name as a field name's tail: lower case, `-` and `.` as `_` (`trace-id` →
/// `trace_id`), as the `http` spout names its headers.
fn header_key(name: &str) -> String {
    name.to_ascii_lowercase().replace(['-', '.'], "_")
}

/// The payload's field without `format`.
const VALUE_FIELD: &str = "value";

type Args = serde_json::Map<String, Json>;

/// Where an output field's value comes from.
#[derive(Debug, Clone, PartialEq)]
enum Slot {
    /// The payload as text.
    Value,
    /// The `n`th value the reader gave.
    Read(usize),
    Key,
    Partition,
    Offset,
    Timestamp,
    /// Every header, as a map.
    Headers,
    /// The header whose [`header_key`] is this.
    Header(String),
}

/// What a message is read from.
pub(crate) struct Message<'a> {
    pub(crate) payload: Option<&'a [u8]>,
    pub(crate) key: Option<&'a [u8]>,
    pub(crate) partition: i32,
    pub(crate) offset: i64,
    /// Milliseconds since the epoch, when the message has a time.
    pub(crate) timestamp: Option<i64>,
    /// Its headers in order (name, value; a header may have no value), given only when the
    /// reader [wants them](RecordReader::wants_headers).
    pub(crate) headers: Vec<(&'a str, Option<&'a [u8]>)>,
}

/// Reads messages into tuple values.
pub(crate) struct RecordReader {
    parser: Option<Parser>,
    slots: Vec<Slot>,
}

/// The record arguments with the Kafka fields taken out of `fields` (what the reader reads).
fn reader_spec(args: &Args) -> Result<Spec, String> {
    let args = without_source_fields(args, &|f| is_source_field(f))?;
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
                "kafka_key" => Ok(Slot::Key),
                "kafka_partition" => Ok(Slot::Partition),
                "kafka_offset" => Ok(Slot::Offset),
                "kafka_timestamp" => Ok(Slot::Timestamp),
                HEADERS_FIELD => Ok(Slot::Headers),
                h if is_source_field(h) => Ok(Slot::Header(
                    h.trim_start_matches(HEADER_PREFIX).to_string(),
                )),
                VALUE_FIELD if !format => Ok(Slot::Value),
                other => match read.iter().position(|r| r == other) {
                    Some(i) => Ok(Slot::Read(i)),
                    None if format => Err(format!("the format gives no field `{other}`")),
                    None => Err(format!(
                        "without `format`, the fields are `value`, {}, {HEADERS_FIELD} and \
                         {HEADER_PREFIX}<name>; `{other}` needs a `format`",
                        KAFKA_FIELDS.join(", ")
                    )),
                },
            })
            .collect::<Result<Vec<_>, _>>()?;
        let parser = match format {
            true => Some(Parser::new(&reader_spec(args)?)?),
            false => None,
        };
        Ok(RecordReader { parser, slots })
    }

    /// Whether the fields hold headers (else [`Message::headers`] may be left empty).
    pub(crate) fn wants_headers(&self) -> bool {
        self.slots
            .iter()
            .any(|s| matches!(s, Slot::Headers | Slot::Header(_)))
    }

    /// Set the longest record read, in bytes.
    pub(crate) fn set_max_record(&mut self, bytes: usize) {
        if let Some(p) = &mut self.parser {
            p.set_max_record(bytes);
        }
    }

    /// The tuples of one message (usually one; a JSON array gives one per element), or why
    /// it cannot be read.
    pub(crate) fn read(&mut self, msg: &Message<'_>) -> Result<Vec<Values>, String> {
        let text = msg.payload.map(String::from_utf8_lossy);
        let Some(parser) = &mut self.parser else {
            let value = text.map_or(Value::Null, |t| Value::str(&t));
            return Ok(vec![self.fill(msg, &[value])]);
        };
        let Some(text) = text else {
            return Err("the message has no payload (a tombstone)".into());
        };
        let mut records = Vec::new();
        let mut next = parser.parse(&text).transpose();
        while let Some(r) = next {
            records.push(r?);
            next = parser.next_ready();
        }
        // One message is one whole record: nothing of it waits for the next.
        if let Some((_, reason)) = parser.unfinished() {
            return Err(reason.replace("at the end of input", "at the end of the message"));
        }
        if records.is_empty() {
            return Err("the message holds no record".into());
        }
        Ok(records.iter().map(|r| self.fill(msg, r)).collect())
    }

    fn fill(&self, msg: &Message<'_>, read: &[Value]) -> Values {
        let text =
            |b: Option<&[u8]>| b.map_or(Value::Null, |b| Value::str(&String::from_utf8_lossy(b)));
        self.slots
            .iter()
            .map(|s| match s {
                Slot::Value => read.first().cloned().unwrap_or(Value::Null),
                Slot::Read(i) => read.get(*i).cloned().unwrap_or(Value::Null),
                Slot::Key => text(msg.key),
                Slot::Partition => Value::Int(i64::from(msg.partition)),
                Slot::Offset => Value::Int(msg.offset),
                Slot::Timestamp => msg.timestamp.map_or(Value::Null, Value::Int),
                Slot::Headers => headers_map(msg),
                Slot::Header(key) => {
                    let last = msg
                        .headers
                        .iter()
                        .rev()
                        .find(|(n, _)| header_key(n) == *key);
                    last.map_or(Value::Null, |(_, v)| text(*v))
                }
            })
            .collect()
    }
}

/// Every header of `msg` as a map of name to text (the last of a name wins; non-UTF-8 bytes
/// read as U+FFFD, a header without a value as null).
fn headers_map(msg: &Message<'_>) -> Value {
    let map = msg
        .headers
        .iter()
        .map(|(n, v)| {
            let v = v.map_or(Value::Null, |b| Value::str(&String::from_utf8_lossy(b)));
            (n.to_string(), v)
        })
        .collect();
    Value::Map(Box::new(map))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(j: Json) -> Args {
        j.as_object().cloned().unwrap_or_default()
    }

    fn msg(payload: &[u8]) -> Message<'_> {
        Message {
            payload: Some(payload),
            key: Some(b"k1"),
            partition: 2,
            offset: 41,
            timestamp: Some(1_700_000_000_000),
            headers: vec![
                ("Trace-Id", Some(b"t1")),
                ("env", Some(b"dev")),
                ("trace-id", Some(b"t2")),
                ("raw", Some(b"\xff!")),
                ("empty", None),
            ],
        }
    }

    #[test]
    fn headers_are_a_map_and_one_header_a_field() {
        let a = args(serde_json::json!({
            "fields": ["value", "kafka_headers", "kafka_header_trace_id", "kafka_header_raw",
                       "kafka_header_empty", "kafka_header_missing"]
        }));
        let mut r = RecordReader::new(&a).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.wants_headers());
        let got = r.read(&msg(b"hello")).unwrap_or_default();
        let map: std::collections::BTreeMap<String, Value> = [
            ("Trace-Id", Value::str("t1")),
            ("env", Value::str("dev")),
            ("trace-id", Value::str("t2")),
            ("raw", Value::str("\u{fffd}!")),
            ("empty", Value::Null),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let want = vec![
            Value::str("hello"),
            Value::Map(Box::new(map)),
            Value::str("t2"),
            Value::str("\u{fffd}!"),
            Value::Null,
            Value::Null,
        ];
        assert_eq!(
            got,
            vec![Values::from_vec(want)],
            "the last `trace-id` wins"
        );
        let plain =
            RecordReader::new(&args(serde_json::json!({}))).unwrap_or_else(|e| panic!("{e}"));
        assert!(!plain.wants_headers());
    }

    #[test]
    fn without_format_the_payload_is_one_value_field() {
        let mut r =
            RecordReader::new(&args(serde_json::json!({}))).unwrap_or_else(|e| panic!("{e}"));
        let got = r.read(&msg(b"hello")).unwrap_or_default();
        assert_eq!(got, vec![Values::from_vec(vec![Value::str("hello")])]);
    }

    #[test]
    fn kafka_fields_go_where_fields_names_them() {
        let a = args(serde_json::json!({
            "format": "json",
            "fields": ["kafka_key", "service", "kafka_partition", "kafka_offset", "n", "kafka_timestamp"]
        }));
        assert_eq!(
            output_fields(&a).unwrap_or_default(),
            [
                "kafka_key",
                "service",
                "kafka_partition",
                "kafka_offset",
                "n",
                "kafka_timestamp"
            ]
        );
        let mut r = RecordReader::new(&a).unwrap_or_else(|e| panic!("{e}"));
        let got = r
            .read(&msg(br#"{"service": "api", "n": 3}"#))
            .unwrap_or_default();
        let want = vec![
            Value::str("k1"),
            Value::str("api"),
            Value::Int(2),
            Value::Int(41),
            Value::Int(3),
            Value::Int(1_700_000_000_000),
        ];
        assert_eq!(got, vec![Values::from_vec(want)]);
    }

    #[test]
    fn an_unreadable_message_is_an_error_and_the_next_reads_cleanly() {
        let a = args(
            serde_json::json!({"format": "csv", "columns": ["a", "b"], "types": {"b": "int"}}),
        );
        let mut r = RecordReader::new(&a).unwrap_or_else(|e| panic!("{e}"));
        let err = r.read(&msg(b"x,\"open")).err().unwrap_or_default();
        assert!(err.contains("end of the message"), "{err}");
        let got = r.read(&msg(b"y,2")).unwrap_or_default();
        assert_eq!(
            got,
            vec![Values::from_vec(vec![Value::str("y"), Value::Int(2)])]
        );
        let tomb = Message {
            payload: None,
            ..msg(b"")
        };
        assert!(r.read(&tomb).is_err());
    }

    #[test]
    fn a_field_without_format_is_refused() {
        let a = args(serde_json::json!({"fields": ["value", "service"]}));
        let err = RecordReader::new(&a).err().unwrap_or_default();
        assert!(err.contains("`service` needs a `format`"), "{err}");
    }
}
