//! Parsing one message text from a child: a typed fast path for the common commands, and
//! the general parser through `serde_json::Value`, which names what is wrong.

use super::{excerpt, ChildMessage, Command, Emit, LogLevel, ProtocolError};
use crate::tuple::{Value as TupleValue, Values};
use compact_str::CompactString;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::fmt;

/// Parse one message text (as handed out by [`super::Framer::next_message`]).
pub fn parse(text: &str) -> Result<ChildMessage, ProtocolError> {
    match parse_typed(text) {
        Some(msg) => Ok(msg),
        None => parse_general(text),
    }
}

/// The general parser: through a `serde_json::Value`, naming what is wrong.
pub(super) fn parse_general(text: &str) -> Result<ChildMessage, ProtocolError> {
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
        // One id alone, as Storm's JsonSerializer accepts it (a string taken as a list of one).
        Some(Value::String(id)) => SmallVec::from_elem(CompactString::new(id), 1),
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
        let mut fields = MessageFields::default();
        let mut seen = 0u16;
        while let Some(key) = map.next_key::<&'de str>()? {
            let Some(bit) = field_bit(key) else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            if seen & (1 << bit) != 0 {
                return Err(de::Error::custom("duplicate field"));
            }
            seen |= 1 << bit;
            fields.read(bit, &mut map)?;
        }
        Ok(TypedMessage(fields.command().map(ChildMessage::Command)))
    }
}

/// Which known field `key` is, as a bit number for spotting duplicates (`None`: a field the
/// typed path ignores).
fn field_bit(key: &str) -> Option<u8> {
    Some(match key {
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
        _ => return None,
    })
}

/// The known fields of a message, as the typed path reads them.
#[derive(Default)]
struct MessageFields<'de> {
    command: Option<&'de str>,
    pid: bool,
    id: Option<FromJson>,
    stream: Option<String>,
    tuple: Option<TupleField>,
    task: Option<u32>,
    anchors: Option<Anchors>,
    need_task_ids: Option<bool>,
    msg: Option<String>,
    level: Option<i64>,
    name: Option<String>,
    params: Option<Value>,
}

impl<'de> MessageFields<'de> {
    /// Read the value of the field numbered `bit` (by [`field_bit`]).
    fn read<A: MapAccess<'de>>(&mut self, bit: u8, map: &mut A) -> Result<(), A::Error> {
        match bit {
            0 => self.command = map.next_value()?,
            1 => {
                // Present at all (even `null`): the handshake answer, for the general parser.
                map.next_value::<IgnoredAny>()?;
                self.pid = true;
            }
            2 => self.id = map.next_value()?,
            3 => self.stream = map.next_value()?,
            4 => self.tuple = map.next_value()?,
            5 => self.task = map.next_value()?,
            6 => self.anchors = map.next_value()?,
            7 => self.need_task_ids = map.next_value()?,
            8 => self.msg = map.next_value()?,
            9 => self.level = map.next_value()?,
            10 => self.name = map.next_value()?,
            _ => self.params = map.next_value()?,
        }
        Ok(())
    }

    /// The command these fields make (`None`: leave the message to the general parser).
    fn command(self) -> Option<Command> {
        let id_text = |id: Option<FromJson>| match id {
            Some(FromJson(TupleValue::Str(s))) => Some(s),
            Some(FromJson(TupleValue::Int(i))) => Some(CompactString::new(i.to_string())),
            _ => None,
        };
        match self.command {
            _ if self.pid => None,
            Some("emit") => self.tuple.map(|TupleField(tuple)| {
                Command::Emit(Emit {
                    stream: self.stream,
                    tuple,
                    task: self.task,
                    anchors: self.anchors.map(|a| a.0).unwrap_or_default(),
                    id: self.id.map(|FromJson(v)| v),
                    need_task_ids: self.need_task_ids.unwrap_or(true),
                })
            }),
            Some("ack") => id_text(self.id).map(|id| Command::Ack { id }),
            Some("fail") => id_text(self.id).map(|id| Command::Fail { id }),
            Some("sync") => Some(Command::Sync),
            Some("log") => self.msg.map(|msg| Command::Log {
                msg,
                level: self.level.map_or(LogLevel::Info, LogLevel::from_number),
            }),
            Some("error") => self.msg.map(|msg| Command::Error { msg }),
            Some("metrics") => self.name.map(|name| Command::Metrics {
                name,
                params: self.params.unwrap_or(Value::Null),
            }),
            _ => None,
        }
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
pub(super) fn parse_typed(text: &str) -> Option<ChildMessage> {
    if let Some(m) = parse_verdict(text) {
        return Some(m);
    }
    serde_json::from_str::<TypedMessage>(text).ok()?.0
}
