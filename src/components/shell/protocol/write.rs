//! Writing the parent's messages: the handshake, spout commands, heartbeats, and the hot
//! path (input tuples and task-id answers) serialized straight into the output buffer.

use crate::tuple::Value as TupleValue;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{json, Value};
use std::io::Write;

/// What ends every message on the wire: a newline, `end`, a newline.
const FRAME_END: &[u8] = b"\nend\n";

/// Frame one message (its JSON, a newline, `end`, a newline), appended to `buf`.
pub(crate) fn frame_into(buf: &mut Vec<u8>, msg: &Value) {
    // Writing JSON into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *buf, msg);
    buf.extend_from_slice(FRAME_END);
}

/// The handshake: where to write the pid file, the configuration and the topology context.
pub(crate) fn handshake(pid_dir: &str, conf: Value, context: Value) -> Value {
    json!({ "pidDir": pid_dir, "conf": conf, "context": context })
}

/// The heartbeat tuple a bolt child must answer with `sync`.
pub(crate) fn heartbeat(id: &str) -> Value {
    json!({ "id": id, "comp": null, "stream": "__heartbeat", "task": -1, "tuple": [] })
}

/// A command to a spout child; each is answered by a turn ending in `sync`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SpoutCommand {
    Next,
    Ack(Value),
    Fail(Value),
    Activate,
    Deactivate,
}

impl SpoutCommand {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            SpoutCommand::Next => "next",
            SpoutCommand::Ack(_) => "ack",
            SpoutCommand::Fail(_) => "fail",
            SpoutCommand::Activate => "activate",
            SpoutCommand::Deactivate => "deactivate",
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        match self {
            SpoutCommand::Ack(id) | SpoutCommand::Fail(id) => {
                json!({ "command": self.name(), "id": id })
            }
            _ => json!({ "command": self.name() }),
        }
    }
}

/// The answer to an emit that needs task ids (a bare JSON list), framed and appended to `buf`.
pub(crate) fn write_task_ids(buf: &mut Vec<u8>, tasks: &[u32]) {
    buf.push(b'[');
    for (i, t) in tasks.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        // Writing into a Vec cannot fail.
        let _ = write!(buf, "{t}");
    }
    buf.push(b']');
    buf.extend_from_slice(FRAME_END);
}

/// One input tuple for a bolt, with the tuple id `id` (`task` is -1 for system tuples such as
/// ticks), framed and appended to `buf`, serialized straight from our values (the same text as
/// going through `serde_json::Value`).
pub(crate) fn write_bolt_tuple(
    buf: &mut Vec<u8>,
    id: u64,
    comp: &str,
    stream: &str,
    task: i64,
    values: &[TupleValue],
) {
    #[derive(Serialize)]
    struct BoltTuple<'a> {
        #[serde(serialize_with = "as_string")]
        id: u64,
        comp: &'a str,
        stream: &'a str,
        task: i64,
        tuple: JsonValues<'a>,
    }
    fn as_string<S: Serializer>(id: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(id)
    }
    let msg = BoltTuple {
        id,
        comp,
        stream,
        task,
        tuple: JsonValues(values),
    };
    // Writing JSON into a Vec cannot fail: our values have no non-string map keys.
    let _ = serde_json::to_writer(&mut *buf, &msg);
    buf.extend_from_slice(FRAME_END);
}

/// Our values as JSON, exactly as [`TupleValue::to_json`] makes them (a float that is not
/// finite is `null`).
struct JsonValues<'a>(&'a [TupleValue]);

struct JsonValue<'a>(&'a TupleValue);

impl Serialize for JsonValues<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for v in self.0 {
            seq.serialize_element(&JsonValue(v))?;
        }
        seq.end()
    }
}

impl Serialize for JsonValue<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            TupleValue::Null => s.serialize_unit(),
            TupleValue::Bool(b) => s.serialize_bool(*b),
            TupleValue::Int(i) => s.serialize_i64(*i),
            TupleValue::Float(f) if f.is_finite() => s.serialize_f64(*f),
            TupleValue::Float(_) => s.serialize_unit(),
            TupleValue::Str(t) => s.serialize_str(t),
            TupleValue::List(l) => JsonValues(l).serialize(s),
            TupleValue::Map(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m.iter() {
                    map.serialize_entry(k, &JsonValue(v))?;
                }
                map.end()
            }
        }
    }
}
