//! Storm's multilang wire format, pure: every message is UTF-8 JSON followed by a line holding
//! exactly `end`; the messages the parent (ShellBolt / ShellSpout) sends; and the commands a
//! child may send back (`emit`, `ack`, `fail`, `log`, `error`, `metrics`, `sync`, the `pid`
//! answer of the handshake), parsed into types with located, truncated error texts.
//!
//! The hot path (an input tuple out, an `emit` / `ack` / task-id answer back) is written and
//! read without `serde_json::Value` trees: tuples are serialized straight from our values into
//! the output buffer, and the common commands are deserialized into typed fields, falling back
//! to the general parser (which names the problem) for anything unusual.

use crate::tuple::{Value as TupleValue, Values};
use compact_str::CompactString;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;

/// The line that ends every message.
pub const END: &str = "end";
/// Longest message we accept from a child before calling it a protocol error.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Offending texts quoted in errors are cut to this many characters.
pub const EXCERPT_CHARS: usize = 200;

/// What ends every message on the wire: a newline, `end`, a newline.
const FRAME_END: &[u8] = b"\nend\n";

/// Frame one message: its JSON, a newline, `end`, a newline.
pub fn frame(msg: &Value) -> String {
    let mut text = msg.to_string();
    text.push_str("\nend\n");
    text
}

/// [`frame`], appended to `buf`.
pub fn frame_into(buf: &mut Vec<u8>, msg: &Value) {
    // Writing JSON into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *buf, msg);
    buf.extend_from_slice(FRAME_END);
}

/// `text` cut to [`EXCERPT_CHARS`] characters (with `…` when cut), for error messages.
pub fn excerpt(text: &str) -> String {
    let mut chars = text.char_indices();
    match chars.nth(EXCERPT_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Gathers lines into messages: lines are joined with `\n` until a line that is exactly `end`
/// (a trailing `\r` is tolerated), so one message may span several lines.
#[derive(Debug, Default)]
pub struct Deframer {
    buf: String,
    started: bool,
}

impl Deframer {
    /// Feed one line without its line ending. Returns the whole message text at `end`.
    pub fn push_line(&mut self, line: &str) -> Option<String> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line == END {
            self.started = false;
            return Some(std::mem::take(&mut self.buf));
        }
        if self.started {
            self.buf.push('\n');
        }
        self.started = true;
        self.buf.push_str(line);
        None
    }

    /// Bytes gathered for the message in progress.
    pub fn pending_len(&self) -> usize {
        self.buf.len()
    }
}

/// What a child may send.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildMessage {
    /// The handshake answer `{"pid": N}`.
    Pid(u32),
    Command(Command),
}

/// A child's command (Storm's `ShellMsg`).
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Emit(Emit),
    Ack {
        id: CompactString,
    },
    Fail {
        id: CompactString,
    },
    Log {
        msg: String,
        level: LogLevel,
    },
    Error {
        msg: String,
    },
    Metrics {
        name: String,
        params: Value,
    },
    Sync,
    /// A command this runner does not know: ignored, as Storm's `ShellBolt` ignores it.
    Unknown {
        name: String,
    },
}

/// An `emit` command.
#[derive(Debug, Clone, PartialEq)]
pub struct Emit {
    /// `None` means the default stream.
    pub stream: Option<String>,
    pub tuple: Values,
    /// Direct emit to this task.
    pub task: Option<u32>,
    /// Bolts: ids of the input tuples this emit is anchored to.
    pub anchors: SmallVec<[CompactString; 1]>,
    /// Spouts: the message id that makes the tuple tracked.
    pub id: Option<TupleValue>,
    /// Answer with the receiving task ids (default true; never for direct emits).
    pub need_task_ids: bool,
}

/// Multilang log levels (Storm's `ShellLogHandler`): 0 trace … 4 error, 2 when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl LogLevel {
    fn from_number(n: i64) -> LogLevel {
        match n {
            i64::MIN..=0 => LogLevel::Trace,
            1 => LogLevel::Debug,
            2 => LogLevel::Info,
            3 => LogLevel::Warn,
            _ => LogLevel::Error,
        }
    }
}

/// A message that breaks the protocol; the text quotes the offending message (truncated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    pub problem: String,
    pub text: String,
    /// A message that is not JSON at all: the line where it stops being JSON (truncated),
    /// most likely something the child printed to its stdout.
    pub stray_line: Option<String>,
}

impl ProtocolError {
    pub fn new(problem: impl Into<String>, text: &str) -> ProtocolError {
        ProtocolError {
            problem: problem.into(),
            text: excerpt(text),
            stray_line: None,
        }
    }

    /// `text` is not JSON: name the line where parsing failed, and say where other output
    /// belongs (a `print` in a component is the usual cause).
    fn not_json(e: &serde_json::Error, text: &str) -> ProtocolError {
        let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or(text);
        ProtocolError {
            stray_line: Some(excerpt(line)),
            ..ProtocolError::new(format!("invalid JSON ({e})"), text)
        }
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.stray_line {
            Some(line) => write!(
                f,
                "the child wrote {line:?} to its stdout, which is not a protocol message: {}. \
                 A multilang child must write only protocol messages to stdout: write other \
                 output to stderr, or send it with the `log` command",
                self.problem
            ),
            None => write!(f, "{} in message: {}", self.problem, self.text),
        }
    }
}

impl std::error::Error for ProtocolError {}

/// Parse one message text (as returned by [`Deframer::push_line`]).
pub fn parse(text: &str) -> Result<ChildMessage, ProtocolError> {
    match parse_typed(text) {
        Some(msg) => Ok(msg),
        None => parse_general(text),
    }
}

/// The general parser: through a `serde_json::Value`, naming what is wrong.
fn parse_general(text: &str) -> Result<ChildMessage, ProtocolError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ProtocolError::not_json(&e, text))?;
    let Value::Object(obj) = &value else {
        return Err(ProtocolError::new("expected a JSON object", text));
    };
    if let Some(pid) = obj.get("pid") {
        return pid
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .map(ChildMessage::Pid)
            .ok_or_else(|| ProtocolError::new("`pid` must be a positive integer", text));
    }
    let command = match obj.get("command") {
        Some(Value::String(c)) => c.as_str(),
        Some(_) => return Err(ProtocolError::new("`command` must be a string", text)),
        None => return Err(ProtocolError::new("no `command` field", text)),
    };
    let field = |name: &str| obj.get(name).filter(|v| !v.is_null());
    let string = |name: &str| -> Result<String, ProtocolError> {
        match field(name) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Ok(other.to_string()),
            None => Err(ProtocolError::new(
                format!("`{command}` needs an `{name}` field"),
                text,
            )),
        }
    };
    let cmd =
        match command {
            "sync" => Command::Sync,
            "ack" => Command::Ack {
                id: id_of(field("id"), command, text)?,
            },
            "fail" => Command::Fail {
                id: id_of(field("id"), command, text)?,
            },
            "log" => Command::Log {
                msg: string("msg")?,
                level: match field("level") {
                    None => LogLevel::Info,
                    Some(v) => LogLevel::from_number(v.as_i64().ok_or_else(|| {
                        ProtocolError::new("`level` must be an integer 0-4", text)
                    })?),
                },
            },
            "error" => Command::Error {
                msg: string("msg")?,
            },
            "metrics" => Command::Metrics {
                name: string("name")?,
                params: field("params").cloned().unwrap_or(Value::Null),
            },
            "emit" => Command::Emit(parse_emit(obj, text)?),
            other => Command::Unknown {
                name: excerpt(other),
            },
        };
    Ok(ChildMessage::Command(cmd))
}

fn id_of(v: Option<&Value>, command: &str, text: &str) -> Result<CompactString, ProtocolError> {
    match v {
        Some(Value::String(s)) => Ok(CompactString::new(s)),
        Some(Value::Number(n)) => Ok(CompactString::new(n.to_string())),
        Some(_) => Err(ProtocolError::new(
            format!("`{command}` id must be a string or a number"),
            text,
        )),
        None => Err(ProtocolError::new(
            format!("`{command}` needs an `id` field"),
            text,
        )),
    }
}

fn parse_emit(obj: &serde_json::Map<String, Value>, text: &str) -> Result<Emit, ProtocolError> {
    let field = |name: &str| obj.get(name).filter(|v| !v.is_null());
    let tuple = match field("tuple") {
        Some(Value::Array(values)) => values.iter().map(TupleValue::from_json).collect(),
        Some(_) => return Err(ProtocolError::new("`tuple` must be a list", text)),
        None => return Err(ProtocolError::new("`emit` needs a `tuple` field", text)),
    };
    let stream = match field("stream") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(ProtocolError::new("`stream` must be a string", text)),
        None => None,
    };
    let task = match field("task") {
        Some(v) => Some(
            v.as_u64()
                .and_then(|t| u32::try_from(t).ok())
                .ok_or_else(|| ProtocolError::new("`task` must be a task id", text))?,
        ),
        None => None,
    };
    let anchors = match field("anchors") {
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|a| id_of(Some(a), "emit", text))
            .collect::<Result<SmallVec<_>, _>>()?,
        Some(_) => return Err(ProtocolError::new("`anchors` must be a list of ids", text)),
        None => SmallVec::new(),
    };
    let need_task_ids = match field("need_task_ids") {
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(ProtocolError::new(
                "`need_task_ids` must be a boolean",
                text,
            ))
        }
        None => true,
    };
    Ok(Emit {
        stream,
        tuple,
        task,
        anchors,
        id: field("id").map(TupleValue::from_json),
        need_task_ids,
    })
}

/// The handshake: where to write the pid file, the configuration and the topology context.
pub fn handshake(pid_dir: &str, conf: Value, context: Value) -> Value {
    json!({ "pidDir": pid_dir, "conf": conf, "context": context })
}

/// One input tuple for a bolt (`task` is -1 for system tuples such as ticks).
pub fn bolt_tuple(id: &str, comp: &str, stream: &str, task: i64, values: Vec<Value>) -> Value {
    json!({ "id": id, "comp": comp, "stream": stream, "task": task, "tuple": values })
}

/// The heartbeat tuple a bolt child must answer with `sync`.
pub fn heartbeat(id: &str) -> Value {
    json!({ "id": id, "comp": null, "stream": "__heartbeat", "task": -1, "tuple": [] })
}

/// A command to a spout child; each is answered by a turn ending in `sync`.
#[derive(Debug, Clone, PartialEq)]
pub enum SpoutCommand {
    Next,
    Ack(Value),
    Fail(Value),
    Activate,
    Deactivate,
}

impl SpoutCommand {
    pub fn name(&self) -> &'static str {
        match self {
            SpoutCommand::Next => "next",
            SpoutCommand::Ack(_) => "ack",
            SpoutCommand::Fail(_) => "fail",
            SpoutCommand::Activate => "activate",
            SpoutCommand::Deactivate => "deactivate",
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            SpoutCommand::Ack(id) | SpoutCommand::Fail(id) => {
                json!({ "command": self.name(), "id": id })
            }
            _ => json!({ "command": self.name() }),
        }
    }
}

/// The answer to an emit that needs task ids: a bare JSON list.
pub fn task_ids(tasks: &[u32]) -> Value {
    Value::Array(tasks.iter().map(|t| Value::from(*t)).collect())
}

/// [`task_ids`], framed and appended to `buf`.
pub fn write_task_ids(buf: &mut Vec<u8>, tasks: &[u32]) {
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

/// [`bolt_tuple`] with the tuple id `id`, framed and appended to `buf`, serialized straight
/// from our values (the same text as going through `serde_json::Value`).
pub fn write_bolt_tuple(
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

/// A JSON value read straight into our value, as [`TupleValue::from_json`] converts one
/// (integers beyond `i64` become floats).
struct FromJson(TupleValue);

impl<'de> Deserialize<'de> for FromJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FromJson, D::Error> {
        d.deserialize_any(FromJsonVisitor).map(FromJson)
    }
}

struct FromJsonVisitor;

impl<'de> Visitor<'de> for FromJsonVisitor {
    type Value = TupleValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<TupleValue, E> {
        Ok(TupleValue::Null)
    }
    fn visit_none<E>(self) -> Result<TupleValue, E> {
        Ok(TupleValue::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<TupleValue, E> {
        Ok(TupleValue::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> Result<TupleValue, E> {
        Ok(TupleValue::Int(i))
    }
    fn visit_u64<E>(self, u: u64) -> Result<TupleValue, E> {
        Ok(match i64::try_from(u) {
            Ok(i) => TupleValue::Int(i),
            Err(_) => TupleValue::Float(u as f64),
        })
    }
    fn visit_f64<E>(self, f: f64) -> Result<TupleValue, E> {
        Ok(TupleValue::Float(f))
    }
    fn visit_str<E>(self, s: &str) -> Result<TupleValue, E> {
        Ok(TupleValue::str(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TupleValue, A::Error> {
        let mut list = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(FromJson(v)) = seq.next_element()? {
            list.push(v);
        }
        Ok(TupleValue::List(Box::new(list)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TupleValue, A::Error> {
        let mut m = BTreeMap::new();
        while let Some((k, FromJson(v))) = map.next_entry::<String, FromJson>()? {
            m.insert(k, v);
        }
        Ok(TupleValue::Map(Box::new(m)))
    }
}

/// An emit's `tuple`: a JSON list read straight into our values.
struct TupleField(Values);

impl<'de> Deserialize<'de> for TupleField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TupleField, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = Values;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Values, A::Error> {
                let mut values = Values::new();
                while let Some(FromJson(v)) = seq.next_element()? {
                    values.push(v);
                }
                Ok(values)
            }
        }
        d.deserialize_seq(ListVisitor).map(TupleField)
    }
}

/// A tuple id as [`id_of`] takes it: a string, or an integer as its decimal text. Anything
/// else fails, leaving the message to the general parser.
struct IdField(CompactString);

impl<'de> Deserialize<'de> for IdField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<IdField, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = CompactString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_str<E>(self, s: &str) -> Result<CompactString, E> {
                Ok(CompactString::new(s))
            }
            fn visit_i64<E>(self, i: i64) -> Result<CompactString, E> {
                Ok(CompactString::new(i.to_string()))
            }
            fn visit_u64<E>(self, u: u64) -> Result<CompactString, E> {
                Ok(CompactString::new(u.to_string()))
            }
        }
        d.deserialize_any(IdVisitor).map(IdField)
    }
}

/// The common commands, read into typed fields and built at once (`None`: leave the message
/// to the general parser). Any surprise (a wrong type, a duplicate or escaped key, an escaped
/// command name …) fails deserialization, and the general parser decides too.
struct TypedMessage(Option<ChildMessage>);

impl<'de> Deserialize<'de> for TypedMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TypedMessage, D::Error> {
        d.deserialize_map(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = TypedMessage;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TypedMessage, A::Error> {
        let mut command: Option<&'de str> = None;
        let mut pid = false;
        let mut id: Option<FromJson> = None;
        let mut stream: Option<String> = None;
        let mut tuple: Option<TupleField> = None;
        let mut task: Option<u32> = None;
        let mut anchors: Option<Anchors> = None;
        let mut need_task_ids: Option<bool> = None;
        let mut msg: Option<String> = None;
        let mut level: Option<i64> = None;
        let mut name: Option<String> = None;
        let mut params: Option<Value> = None;
        let mut seen = 0u16;
        while let Some(key) = map.next_key::<&'de str>()? {
            let bit = match key {
                "command" => 0,
                "pid" => 1,
                "id" => 2,
                "stream" => 3,
                "tuple" => 4,
                "task" => 5,
                "anchors" => 6,
                "need_task_ids" => 7,
                "msg" => 8,
                "level" => 9,
                "name" => 10,
                "params" => 11,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if seen & (1 << bit) != 0 {
                return Err(de::Error::custom("duplicate field"));
            }
            seen |= 1 << bit;
            match bit {
                0 => command = map.next_value()?,
                1 => {
                    // Present at all (even `null`): the handshake answer, for the general parser.
                    map.next_value::<IgnoredAny>()?;
                    pid = true;
                }
                2 => id = map.next_value()?,
                3 => stream = map.next_value()?,
                4 => tuple = map.next_value()?,
                5 => task = map.next_value()?,
                6 => anchors = map.next_value()?,
                7 => need_task_ids = map.next_value()?,
                8 => msg = map.next_value()?,
                9 => level = map.next_value()?,
                10 => name = map.next_value()?,
                _ => params = map.next_value()?,
            }
        }
        let id_text = |id: Option<FromJson>| match id {
            Some(FromJson(TupleValue::Str(s))) => Some(s),
            Some(FromJson(TupleValue::Int(i))) => Some(CompactString::new(i.to_string())),
            _ => None,
        };
        let cmd = match command {
            _ if pid => None,
            Some("emit") => tuple.map(|TupleField(tuple)| {
                Command::Emit(Emit {
                    stream,
                    tuple,
                    task,
                    anchors: anchors.map(|a| a.0).unwrap_or_default(),
                    id: id.map(|FromJson(v)| v),
                    need_task_ids: need_task_ids.unwrap_or(true),
                })
            }),
            Some("ack") => id_text(id).map(|id| Command::Ack { id }),
            Some("fail") => id_text(id).map(|id| Command::Fail { id }),
            Some("sync") => Some(Command::Sync),
            Some("log") => msg.map(|msg| Command::Log {
                msg,
                level: level.map_or(LogLevel::Info, LogLevel::from_number),
            }),
            Some("error") => msg.map(|msg| Command::Error { msg }),
            Some("metrics") => name.map(|name| Command::Metrics {
                name,
                params: params.unwrap_or(Value::Null),
            }),
            _ => None,
        };
        Ok(TypedMessage(cmd.map(ChildMessage::Command)))
    }
}

/// An emit's `anchors`: a list of tuple ids (almost always one).
struct Anchors(SmallVec<[CompactString; 1]>);

impl<'de> Deserialize<'de> for Anchors {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Anchors, D::Error> {
        struct AnchorsVisitor;
        impl<'de> Visitor<'de> for AnchorsVisitor {
            type Value = Anchors;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of ids")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Anchors, A::Error> {
                let mut ids = SmallVec::new();
                while let Some(IdField(id)) = seq.next_element()? {
                    ids.push(id);
                }
                Ok(Anchors(ids))
            }
        }
        d.deserialize_seq(AnchorsVisitor)
    }
}

/// `ack` and `fail` of a numeric id, as Python's `json.dumps` and compact JSON writers write
/// them: recognized by their text alone. Half of what a busy bolt says.
fn parse_verdict(text: &str) -> Option<ChildMessage> {
    const FORMS: [(&str, bool); 4] = [
        ("{\"command\": \"ack\", \"id\": \"", true),
        ("{\"command\": \"fail\", \"id\": \"", false),
        ("{\"command\":\"ack\",\"id\":\"", true),
        ("{\"command\":\"fail\",\"id\":\"", false),
    ];
    for (prefix, ack) in FORMS {
        if let Some(id) = text
            .strip_prefix(prefix)
            .and_then(|r| r.strip_suffix("\"}"))
        {
            if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let id = CompactString::new(id);
            return Some(ChildMessage::Command(if ack {
                Command::Ack { id }
            } else {
                Command::Fail { id }
            }));
        }
    }
    None
}

/// The typed fast path of [`parse`]: `None` when the general parser must look.
fn parse_typed(text: &str) -> Option<ChildMessage> {
    if let Some(m) = parse_verdict(text) {
        return Some(m);
    }
    serde_json::from_str::<TypedMessage>(text).ok()?.0
}

/// Splits a child's output into messages as its bytes arrive, with [`Deframer`]'s rules:
/// lines (a trailing `\r` dropped) are joined with `\n` up to a line that is exactly `end`.
/// Bytes are read into [`Framer::spare`] and announced with [`Framer::filled`]; then
/// [`Framer::next_message`] hands out what is complete.
#[derive(Debug)]
pub struct Framer {
    buf: Vec<u8>,
    /// `buf[start..end]` is read and not yet split into lines.
    start: usize,
    end: usize,
    /// The message in progress: its lines so far, joined.
    msg: String,
    started: bool,
    /// `msg` holds a message handed out: clear it before the next line.
    handed_out: bool,
}

/// What [`Framer::next_message`] found.
#[derive(Debug, PartialEq)]
pub enum Framed<'a> {
    Message(&'a str),
    Error(ProtocolError),
}

const READ_CHUNK: usize = 64 * 1024;

impl Default for Framer {
    fn default() -> Framer {
        Framer {
            buf: vec![0; READ_CHUNK],
            start: 0,
            end: 0,
            msg: String::new(),
            started: false,
            handed_out: false,
        }
    }
}

impl Framer {
    /// Free space to read into (at least a few KiB).
    pub fn spare(&mut self) -> &mut [u8] {
        if self.buf.len() - self.end < READ_CHUNK / 4 {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.buf.len() - self.end < READ_CHUNK / 4 {
                // A line longer than the buffer: grow (bounded by the message limit below).
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        &mut self.buf[self.end..]
    }

    /// `n` bytes were read into [`Framer::spare`].
    pub fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    /// The next complete message (or a problem: invalid UTF-8, a message too long), or `None`
    /// until more bytes arrive. With `eof`, an unterminated last line counts as a line.
    pub fn next_message(&mut self, eof: bool) -> Option<Framed<'_>> {
        if self.handed_out {
            self.msg.clear();
            self.handed_out = false;
        }
        loop {
            let pending = &self.buf[self.start..self.end];
            let (line_end, next) = match pending.iter().position(|&b| b == b'\n') {
                Some(i) => (self.start + i, self.start + i + 1),
                None if eof && !pending.is_empty() => (self.end, self.end),
                None => {
                    if pending.len() > MAX_MESSAGE_BYTES {
                        let text = String::from_utf8_lossy(&pending[..EXCERPT_CHARS * 4]);
                        let err = ProtocolError::new(
                            "message longer than 16 MiB without an `end` line",
                            &text,
                        );
                        self.start = self.end;
                        self.msg = String::new();
                        self.started = false;
                        return Some(Framed::Error(err));
                    }
                    return None;
                }
            };
            let mut line = &self.buf[self.start..line_end];
            self.start = next;
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            // The usual message, one line and its `end` line both here: hand it out from the
            // buffer, uncopied.
            if !self.started && line != END.as_bytes() && line.len() <= MAX_MESSAGE_BYTES {
                let rest = &self.buf[next..self.end];
                let end_len = if rest.starts_with(b"end\n") {
                    4
                } else if rest.starts_with(b"end\r\n") {
                    5
                } else {
                    0
                };
                if end_len > 0 {
                    if let Ok(text) = std::str::from_utf8(line) {
                        self.start = next + end_len;
                        return Some(Framed::Message(text));
                    }
                }
            }
            if line == END.as_bytes() {
                self.started = false;
                self.handed_out = true;
                return Some(Framed::Message(&self.msg));
            }
            let Ok(text) = std::str::from_utf8(line) else {
                return Some(Framed::Error(ProtocolError::new(
                    "invalid UTF-8",
                    &String::from_utf8_lossy(line),
                )));
            };
            if self.started {
                self.msg.push('\n');
            }
            self.started = true;
            self.msg.push_str(text);
            if self.msg.len() > MAX_MESSAGE_BYTES {
                let err =
                    ProtocolError::new("message longer than 16 MiB without an `end` line", text);
                self.msg = String::new();
                self.started = false;
                return Some(Framed::Error(err));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deframe(input: &str) -> Vec<String> {
        let mut d = Deframer::default();
        input.lines().filter_map(|l| d.push_line(l)).collect()
    }

    #[test]
    fn messages_may_span_lines_and_end_at_end() {
        let msgs = deframe("{\"command\":\n\"sync\"}\nend\r\n{\"pid\": 7}\nend\n");
        assert_eq!(msgs, vec!["{\"command\":\n\"sync\"}", "{\"pid\": 7}"]);
        assert_eq!(parse(&msgs[0]), Ok(ChildMessage::Command(Command::Sync)));
        assert_eq!(parse(&msgs[1]), Ok(ChildMessage::Pid(7)));
    }

    #[test]
    fn frame_appends_end_line() {
        assert_eq!(frame(&task_ids(&[3, 4])), "[3,4]\nend\n");
    }

    #[test]
    fn emit_defaults_and_fields() {
        let m = parse(r#"{"command":"emit","tuple":["a",1],"anchors":["5",6]}"#);
        let Ok(ChildMessage::Command(Command::Emit(e))) = m else {
            panic!("not an emit: {m:?}");
        };
        assert_eq!(e.stream, None);
        assert_eq!(e.anchors.as_slice(), ["5", "6"]);
        assert!(e.need_task_ids);
        assert_eq!(e.task, None);
        let m = parse(
            r#"{"command":"emit","tuple":[],"stream":"s","task":4,"id":{"k":1},"need_task_ids":false}"#,
        );
        let Ok(ChildMessage::Command(Command::Emit(e))) = m else {
            panic!("not an emit: {m:?}");
        };
        assert_eq!(e.stream.as_deref(), Some("s"));
        assert_eq!(e.task, Some(4));
        assert_eq!(e.id, Some(TupleValue::from_json(&json!({"k": 1}))));
        assert!(!e.need_task_ids);
    }

    #[test]
    fn log_levels_default_to_info() {
        let m = parse(r#"{"command":"log","msg":"hi"}"#);
        assert_eq!(
            m,
            Ok(ChildMessage::Command(Command::Log {
                msg: "hi".into(),
                level: LogLevel::Info
            }))
        );
        let m = parse(r#"{"command":"log","msg":"x","level":4}"#);
        assert!(matches!(
            m,
            Ok(ChildMessage::Command(Command::Log {
                level: LogLevel::Error,
                ..
            }))
        ));
    }

    #[test]
    fn errors_name_the_problem_and_quote_the_text() {
        let err = |t: &str| parse(t).err().map(|e| e.to_string()).unwrap_or_default();
        let stray = err("{not json");
        assert!(
            stray.starts_with(r#"the child wrote "{not json" to its stdout, which is not a protocol message: invalid JSON ("#),
            "{stray}"
        );
        assert!(
            stray.contains("write only protocol messages to stdout"),
            "{stray}"
        );
        // A print before a message: the line named is the printed one.
        let printed = parse("debug: a\n{\"command\": \"sync\"}").err();
        assert_eq!(
            printed.and_then(|e| e.stray_line),
            Some("debug: a".to_string())
        );
        assert_eq!(err("[1]"), "expected a JSON object in message: [1]");
        assert_eq!(
            parse(r#"{"command":"jump","far":true}"#),
            Ok(ChildMessage::Command(Command::Unknown {
                name: "jump".into()
            }))
        );
        assert_eq!(
            err(r#"{"command":"emit","tuple":"x"}"#),
            r#"`tuple` must be a list in message: {"command":"emit","tuple":"x"}"#
        );
        assert_eq!(
            err(r#"{"command":"ack"}"#),
            r#"`ack` needs an `id` field in message: {"command":"ack"}"#
        );
        let long = format!("{{\"command\":7,\"x\":\"{}\"}}", "x".repeat(500));
        assert!(err(&long).chars().count() < 2 * EXCERPT_CHARS + 80);
    }

    #[test]
    fn excerpt_cuts_on_char_boundaries() {
        let s = "é".repeat(300);
        let e = excerpt(&s);
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.ends_with('…'));
        assert_eq!(excerpt("short"), "short");
    }

    #[test]
    fn parent_messages_have_storm_shapes() {
        assert_eq!(
            heartbeat("9").to_string(),
            r#"{"id":"9","comp":null,"stream":"__heartbeat","task":-1,"tuple":[]}"#
        );
        assert_eq!(
            SpoutCommand::Ack(json!(12)).to_json().to_string(),
            r#"{"command":"ack","id":12}"#
        );
        assert_eq!(
            SpoutCommand::Next.to_json().to_string(),
            r#"{"command":"next"}"#
        );
    }

    #[test]
    fn common_commands_take_the_typed_path() {
        for text in [
            r#"{"command": "emit", "tuple": ["a", 1, 2.5, null, true, [1], {"k": "v"}], "anchors": ["5"]}"#,
            r#"{"command": "emit", "tuple": [], "stream": "s\n", "task": 4, "need_task_ids": false}"#,
            r#"{"command": "emit", "tuple": [1], "id": {"x": [1, 2]}, "extra": 7}"#,
            r#"{"command": "ack", "id": "17"}"#,
            r#"{"command":"ack","id":"17"}"#,
            r#"{"command": "fail", "id": "18"}"#,
            r#"{"command":"fail","id":"18"}"#,
            r#"{"command": "fail", "id": 18}"#,
            r#"{"command": "sync"}"#,
            r#"{"command": "log", "msg": "line 1\nline 2", "level": 3}"#,
            r#"{"command": "error", "msg": "Traceback ..."}"#,
            r#"{"command": "metrics", "name": "m", "params": {"a": 1}}"#,
        ] {
            let typed = parse_typed(text);
            assert!(typed.is_some(), "not typed: {text}");
            assert_eq!(typed.map(Ok), Some(parse_general(text)), "{text}");
        }
        // The handshake answer, and anything odd, is the general parser's.
        for text in [
            r#"{"pid": 12}"#,
            r#"{"pid": null, "command": "sync"}"#,
            r#"{"command": "ack", "id": 1.5}"#,
            r#"{"command": "ack", "id": null}"#,
            r#"{"command": "emit", "tuple": null}"#,
            r#"{"command": "log", "msg": 5}"#,
            r#"{"command": "sync", "command": "ack"}"#,
            r#"{"command": "ack", "id": 18446744073709551615}"#,
            r#"{"command": "ack", "id": "1\"}"#,
            r#"{"command": "ack", "id": "1", "id": "2"}"#,
        ] {
            assert_eq!(parse_typed(text), None, "{text}");
        }
    }

    #[test]
    fn task_id_answers_and_tuples_are_written_as_json_would_be() {
        for tasks in [&[][..], &[3], &[3, 4, 4000000000]] {
            let mut buf = Vec::new();
            write_task_ids(&mut buf, tasks);
            assert_eq!(String::from_utf8_lossy(&buf), frame(&task_ids(tasks)));
        }
        let mut buf = Vec::new();
        let values = [TupleValue::str("a \"b\"\n"), TupleValue::Float(f64::NAN)];
        write_bolt_tuple(&mut buf, 17, "split", "default", -1, &values);
        assert_eq!(
            String::from_utf8_lossy(&buf),
            "{\"id\":\"17\",\"comp\":\"split\",\"stream\":\"default\",\"task\":-1,\"tuple\":[\"a \\\"b\\\"\\n\",null]}\nend\n"
        );
    }

    /// Everything the framer hands out when `input` arrives cut at `cuts`, then ends.
    fn framed(input: &[u8], cuts: &[usize]) -> Vec<Result<String, String>> {
        let mut f = Framer::default();
        let mut out = Vec::new();
        let mut at = 0;
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.push(input.len());
        for cut in cuts {
            let chunk = &input[at..cut.max(at)];
            at = cut.max(at);
            let spare = f.spare();
            spare[..chunk.len()].copy_from_slice(chunk);
            f.filled(chunk.len());
            while let Some(m) = f.next_message(false) {
                out.push(match m {
                    Framed::Message(t) => Ok(t.to_string()),
                    Framed::Error(e) => Err(e.to_string()),
                });
            }
        }
        while let Some(m) = f.next_message(true) {
            out.push(match m {
                Framed::Message(t) => Ok(t.to_string()),
                Framed::Error(e) => Err(e.to_string()),
            });
        }
        out
    }

    #[test]
    fn framer_reports_invalid_utf8_by_line_and_goes_on() {
        let out = framed(b"{\"a\":\n\xff\xfe\n1}\nend\n", &[3, 9]);
        assert_eq!(
            out,
            vec![
                Err("invalid UTF-8 in message: \u{fffd}\u{fffd}".to_string()),
                Ok("{\"a\":\n1}".to_string())
            ]
        );
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            "[a-z\"\\\\\n\u{e9}]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map("[a-z]{0,3}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// The typed fast path never disagrees with the general parser: same message, or it
        /// leaves the message to it.
        #[test]
        fn typed_parsing_agrees_with_the_general_parser(
            command in proptest::prop_oneof![
                proptest::strategy::Just(Value::Null),
                proptest::strategy::Strategy::prop_map(
                    "emit|ack|fail|sync|log|error|metrics|jump",
                    Value::from,
                ),
                json_value(),
            ],
            fields in proptest::collection::vec(
                ("id|stream|tuple|task|anchors|need_task_ids|msg|level|name|params|pid|x", json_value()),
                0..5,
            ),
        ) {
            let mut obj = serde_json::Map::new();
            if !command.is_null() {
                obj.insert("command".into(), command);
            }
            for (k, v) in fields {
                obj.insert(k, v);
            }
            let text = Value::Object(obj).to_string();
            if let Some(typed) = parse_typed(&text) {
                proptest::prop_assert_eq!(Ok(typed), parse_general(&text));
            }
        }

        #[test]
        fn tuples_are_written_as_through_json(
            values in proptest::collection::vec(json_value(), 0..4),
            id in proptest::prelude::any::<u64>(),
            task in proptest::prelude::any::<i64>(),
            comp in "[a-z\"\u{e9}]{0,5}",
        ) {
            let ours: Vec<TupleValue> = values.iter().map(TupleValue::from_json).collect();
            let mut buf = Vec::new();
            write_bolt_tuple(&mut buf, id, &comp, "default", task, &ours);
            let json = frame(&bolt_tuple(
                &id.to_string(),
                &comp,
                "default",
                task,
                ours.iter().map(TupleValue::to_json).collect(),
            ));
            proptest::prop_assert_eq!(String::from_utf8_lossy(&buf), json);
        }

        /// Cut anywhere, the framer hands out what the line deframer does.
        #[test]
        fn framer_agrees_with_the_line_deframer(
            lines in proptest::collection::vec("end|end\r|\\{\\}|a\r?|b|", 0..12),
            cuts in proptest::collection::vec(proptest::prelude::any::<usize>(), 0..6),
            newline_at_end in proptest::prelude::any::<bool>(),
        ) {
            let mut input = lines.join("\n");
            if newline_at_end {
                input.push('\n');
            }
            let ours = framed(input.as_bytes(), &cuts);
            let theirs: Vec<Result<String, String>> = deframe(&input).into_iter().map(Ok).collect();
            proptest::prop_assert_eq!(ours, theirs);
        }

        #[test]
        fn framing_round_trips_any_json_string(s in ".*") {
            let msg = json!({"command": "log", "msg": s});
            let mut d = Deframer::default();
            let framed = frame(&msg);
            let out: Vec<String> = framed.lines().filter_map(|l| d.push_line(l)).collect();
            proptest::prop_assert_eq!(out.len(), 1);
            let back: Value = serde_json::from_str(&out[0]).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            proptest::prop_assert_eq!(back, msg);
        }
    }
}
