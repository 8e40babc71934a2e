//! Tuple values: the JSON-like data that flows between components, and the tuple
//! envelope the runtime carries (values, source, stream, and Storm's message id for acking).

use crate::model::plan::{streams, StreamId};
use compact_str::CompactString;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub(crate) mod numeric;

/// One value inside a tuple. Strings are small-string optimised: words of up to 24 bytes never
/// allocate, which is what makes word counts cheap.
///
/// Equality and hashing are those of keys (of the keyed built-ins: counts, groups, joins…) and agree
/// with the expression `==`: a float with an integral value equals the integer (`1.0 == 1`),
/// `-0.0 == 0`, and NaN equals NaN (see `numeric`). A boolean is never a number.
#[derive(Debug, Clone)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(CompactString),
    /// Boxed, like `Map`, so a value is 24 bytes (the size of a string): every tuple in every
    /// queue is smaller.
    List(Box<Vec<Value>>),
    Map(Box<BTreeMap<String, Value>>),
}

impl PartialEq for Value {
    #[inline]
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Int(a), Value::Float(b)) | (Value::Float(b), Value::Int(a)) => {
                numeric::cmp_int_float(*a, *b).is_eq()
            }
            (Value::Float(a), Value::Float(b)) => numeric::cmp_floats(*a, *b).is_eq(),
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Map(a), Value::Map(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

impl std::hash::Hash for Value {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // Strings (the common key) hash as their bytes alone: cheaper, and a string equal to
        // another value's bytes only costs an equality check.
        if let Value::Str(s) = self {
            return s.as_str().hash(state);
        }
        // A float equal to an integer hashes as that integer (`Eq` says they are equal).
        if let Value::Float(f) = self {
            if let Some(i) = numeric::float_as_int(*f) {
                return Value::Int(i).hash(state);
            }
        }
        std::mem::discriminant(self).hash(state);
        match self {
            Value::Null => {}
            Value::Bool(b) => b.hash(state),
            Value::Int(i) => i.hash(state),
            Value::Float(f) => numeric::float_key_bits(*f).hash(state),
            Value::Str(s) => s.hash(state),
            Value::List(l) => l.hash(state),
            Value::Map(m) => m.hash(state),
        }
    }
}

impl Value {
    /// A list of integers as one (saved state reads its times this way); `None` for anything
    /// else.
    pub(crate) fn int_list(&self) -> Option<Vec<i64>> {
        let Value::List(l) = self else {
            return None;
        };
        l.iter()
            .map(|v| match v {
                Value::Int(i) => Some(*i),
                _ => None,
            })
            .collect()
    }

    /// A list value.
    pub(crate) fn list(items: Vec<Value>) -> Value {
        Value::List(Box::new(items))
    }

    /// The integer field `name` of a map value (saved state reads its progress this way).
    pub(crate) fn int_field(&self, name: &str) -> Result<i64, String> {
        match self {
            Value::Map(m) => match m.get(name) {
                Some(Value::Int(i)) => Ok(*i),
                _ => Err(format!("the progress has no integer `{name}`")),
            },
            _ => Err("the progress is a map".into()),
        }
    }

    pub fn str(s: &str) -> Value {
        Value::Str(CompactString::new(s))
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// The number, exact when an integer; `None` for anything else.
    pub(crate) fn as_num(&self) -> Option<numeric::Num> {
        match self {
            Value::Int(i) => Some(numeric::Num::Int(*i)),
            Value::Float(f) => Some(numeric::Num::Float(*f)),
            _ => None,
        }
    }

    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// Convert from JSON (args, multilang messages).
    pub fn from_json(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::str(s),
            serde_json::Value::Array(a) => {
                Value::List(Box::new(a.iter().map(Value::from_json).collect()))
            }
            serde_json::Value::Object(o) => Value::Map(Box::new(
                o.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect(),
            )),
        }
    }

    /// Convert to JSON (multilang messages, `--stats`, lists and maps in `stdout`).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Str(s) => serde_json::Value::String(s.to_string()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Value::to_json).collect()),
            Value::Map(m) => {
                serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }

    /// The value as `stdout` writes it, on its own.
    pub(crate) fn plain_text(&self) -> String {
        let mut s = String::new();
        self.write_plain(&mut s);
        s
    }

    /// The text keys match by in `lookup` and `join`: as `stdout` writes it (a CSV cell
    /// `"42"` matches the integer `42`, and `1.0` prints as `1`), but with every float equal
    /// to an integer written as that integer (`-0.0` as `0`, and inside lists and maps too),
    /// so values equal by `==` have one text.
    pub(crate) fn key_text(&self) -> String {
        match self {
            Value::Float(_) | Value::List(_) | Value::Map(_) => self.as_key().plain_text(),
            _ => self.plain_text(),
        }
    }

    /// This value with every float equal to an integer made that integer.
    fn as_key(&self) -> Value {
        match self {
            Value::Float(f) => numeric::float_as_int(*f).map_or(Value::Float(*f), Value::Int),
            Value::List(l) => Value::list(l.iter().map(Value::as_key).collect()),
            Value::Map(m) => Value::Map(Box::new(
                m.iter().map(|(k, v)| (k.clone(), v.as_key())).collect(),
            )),
            other => other.clone(),
        }
    }

    /// Append this value as `stdout` prints it: strings as they are, numbers in decimal,
    /// null as empty, lists and maps as JSON.
    pub(crate) fn write_plain(&self, out: &mut String) {
        match self {
            Value::Null => {}
            Value::Bool(b) => {
                let _ = write!(out, "{b}");
            }
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Float(f) => {
                let _ = write!(out, "{f}");
            }
            Value::Str(s) => out.push_str(s),
            Value::List(_) | Value::Map(_) => out.push_str(&self.to_json().to_string()),
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::str(s)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}

/// The values of one tuple. A single value (a line, a word) lives inline in the tuple: no
/// allocation. Two or more take one allocation; inline room for a second would push the tuple
/// past a cache line, which costs every tuple more than the allocation costs the wider ones.
pub type Values = smallvec::SmallVec<[Value; 1]>;

/// The values of a tuple holding the string `s` alone, written straight into place (a value
/// built elsewhere and then copied in is read back before its stores are done: a
/// store-forwarding stall).
#[inline(always)]
pub(crate) fn one_str(s: &str) -> Values {
    let mut values = Values::new();
    if values.capacity() == 0 {
        values.push(Value::Str(crate::short_str::word(s)));
        return values;
    }
    // SAFETY: a new `Values` with room for a value (checked above: it holds one inline) may
    // have slot 0 written at `as_mut_ptr`; the length is set to one only after that.
    unsafe {
        values
            .as_mut_ptr()
            .write(Value::Str(crate::short_str::word(s)));
        values.set_len(1);
    }
    values
}

/// A tuple as a bolt receives it.
///
/// Exactly one cache line (checked below): tuples are what executors hand each other, and on
/// the way from one core to another every line a tuple touches is a transfer. The target task
/// travels with the batch (`Message::Tuples`), not with each tuple.
#[derive(Debug, Clone, PartialEq)]
#[repr(align(64))]
pub struct Tuple {
    pub values: Values,
    /// Emitting task (`plan::SYSTEM_TASK` for ticks).
    pub source_task: u32,
    /// Stream on the emitting component.
    pub stream: StreamId,
    /// Storm's MessageId: the trees this tuple belongs to. Empty for untracked tuples.
    pub anchors: Anchors,
}

const _: () = assert!(std::mem::size_of::<Tuple>() == 64);

/// One tree a tuple belongs to (an entry of Storm's `MessageId.anchorsToIds`).
#[derive(Debug, Clone, PartialEq)]
pub struct Anchor {
    /// The root id: the spout tuple's tree, which also picks the acker task.
    pub(crate) root: u64,
    /// What acking this tuple sends for `root`: its own edge id, XORed with the edge id of
    /// every tuple since emitted anchored to it. Storm keeps the second part apart, as one
    /// `ackVal` per tuple, and XORs it in at the ack; folding it in here as each edge is
    /// made is the same XOR, and keeps the tuple within a cache line. The receiving
    /// executor alone changes it; on the wire it is the bare edge id.
    pub(crate) ack: std::cell::Cell<u64>,
}

impl Anchor {
    pub fn new(root: u64, edge: u64) -> Anchor {
        Anchor {
            root,
            ack: std::cell::Cell::new(edge),
        }
    }
}

/// The trees of one tuple: almost always zero or one.
pub(crate) type Anchors = smallvec::SmallVec<[Anchor; 1]>;

impl Tuple {
    pub fn new(values: Values, source_task: u32, stream: StreamId) -> Tuple {
        Tuple {
            values,
            source_task,
            stream,
            anchors: Anchors::new(),
        }
    }

    pub(crate) fn is_tick(&self) -> bool {
        self.stream == streams::TICK
    }
}

#[cfg(test)]
mod tests {
    use super::Value;

    /// Values equal by `==` match by one text in `join` and `lookup`.
    #[test]
    fn equal_values_have_one_key_text() {
        let list = |x: Value| Value::list(vec![Value::str("a"), x]);
        assert_eq!(Value::Float(-0.0).key_text(), "0");
        assert_eq!(Value::Float(1.0).key_text(), Value::Int(1).key_text());
        assert_eq!(Value::Float(2.5).key_text(), "2.5");
        assert_eq!(
            list(Value::Float(1.0)).key_text(),
            list(Value::Int(1)).key_text()
        );
        assert_eq!(list(Value::Float(1.0)).key_text(), r#"["a",1]"#);
    }
}
