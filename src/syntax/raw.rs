//! What the user wrote, with a source span on every key and value. The YAML, Flux and DSL
//! front-ends all produce a `RawTopology`; `validate` turns it into the model and reports
//! every mistake at its place. Nothing beyond validation sees these types.

pub(crate) use crate::syntax::diag::Span;

/// A value with the place it was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

impl<T> Spanned<T> {
    pub(crate) fn new(value: T, span: Span) -> Spanned<T> {
        Spanned { value, span }
    }
}

/// A generic value tree with spans: config values, `args`, anything free-form.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// A string; `quoted` is true when written with quotes (its span then includes them).
    Str {
        text: String,
        quoted: bool,
    },
    List(Vec<Spanned<RawValue>>),
    Map(Vec<(Spanned<String>, Spanned<RawValue>)>),
}

impl RawValue {
    /// Plain JSON, spans dropped.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        match self {
            RawValue::Null => serde_json::Value::Null,
            RawValue::Bool(b) => serde_json::Value::Bool(*b),
            RawValue::Int(i) => serde_json::Value::from(*i),
            RawValue::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            RawValue::Str { text, .. } => serde_json::Value::String(text.clone()),
            RawValue::List(l) => {
                serde_json::Value::Array(l.iter().map(|v| v.value.to_json()).collect())
            }
            RawValue::Map(m) => serde_json::Value::Object(
                m.iter()
                    .map(|(k, v)| (k.value.clone(), v.value.to_json()))
                    .collect(),
            ),
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            RawValue::Str { text, .. } => Some(text),
            _ => None,
        }
    }

    /// Look a key up in a map value.
    pub(crate) fn get(&self, key: &str) -> Option<&Spanned<RawValue>> {
        match self {
            RawValue::Map(m) => m.iter().find(|(k, _)| k.value == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// The whole file as written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawTopology {
    pub(crate) name: Option<Spanned<String>>,
    /// `config:` entries in file order.
    pub(crate) config: Vec<(Spanned<String>, Spanned<RawValue>)>,
    pub(crate) spouts: Vec<RawComponent>,
    pub(crate) bolts: Vec<RawComponent>,
    pub(crate) streams: Vec<RawStream>,
    /// Problems the front-end found while reading (syntax, unknown keys, JVM classes...),
    /// reported together with validation's own.
    pub(crate) diagnostics: Vec<crate::syntax::diag::Diagnostic>,
}

/// One spout or bolt as written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawComponent {
    /// The whole entry, for errors about missing keys.
    pub(crate) span: Span,
    pub(crate) id: Option<Spanned<String>>,
    /// `type:` (or the built-in a Flux `className` maps to, spanned at the class name).
    pub(crate) ctype: Option<Spanned<String>>,
    pub(crate) args: Option<Spanned<RawValue>>,
    pub(crate) parallelism: Option<Spanned<i64>>,
    pub(crate) tasks: Option<Spanned<i64>>,
    /// `fields:` — output fields of the default stream.
    pub(crate) fields: Option<Spanned<Vec<Spanned<String>>>>,
    /// Named output streams: `streams: { name: [fields] }` or Flux `setNamedStream`.
    pub(crate) streams: Vec<(Spanned<String>, Vec<Spanned<String>>)>,
    pub(crate) command: Option<Spanned<Vec<Spanned<String>>>>,
    pub(crate) cwd: Option<Spanned<String>>,
    /// `tick:` as written (humantime text or seconds).
    pub(crate) tick: Option<Spanned<RawValue>>,
    /// `finish: true`: a shell bolt is told of the end of its input.
    pub(crate) finish: Option<Spanned<RawValue>>,
    /// `stateful: true|false`: the component keeps checkpointed state (or not, whatever
    /// `topology.stateful` says).
    pub(crate) stateful: Option<Spanned<RawValue>>,
    /// `chain: false`: the component never runs fused with its neighbours.
    pub(crate) chain: Option<Spanned<RawValue>>,
    /// Per-component `config:`.
    pub(crate) config: Vec<(Spanned<String>, Spanned<RawValue>)>,
}

/// One stream as written.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct RawStream {
    pub(crate) span: Span,
    pub(crate) from: Option<Spanned<String>>,
    pub(crate) to: Option<Spanned<String>>,
    /// Grouping type name as written.
    pub(crate) grouping: Option<Spanned<String>>,
    /// Grouping args (field names).
    pub(crate) grouping_args: Option<Spanned<Vec<Spanned<String>>>>,
    pub(crate) stream: Option<Spanned<String>>,
    pub(crate) name: Option<Spanned<String>>,
}
