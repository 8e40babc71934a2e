//! YAML topology files in our own (Flux-shaped) format: typed reads from the spanned tree
//! (`tree`) with a located diagnostic for every value of the wrong kind or unknown key.

use crate::syntax::diag::Diagnostic;
use crate::syntax::raw::{RawComponent, RawStream, RawTopology, RawValue, Span, Spanned};

use crate::syntax::suggest::suggest;
pub(crate) use crate::syntax::tree::{parse_tree, resolve_scalar};

/// Typed reads from a spanned tree, collecting a diagnostic for each value of the wrong kind.
#[derive(Debug, Default)]
pub(crate) struct TreeReader {
    pub(crate) diagnostics: Vec<Diagnostic>,
}

impl TreeReader {
    pub(crate) fn error(&mut self, message: impl Into<String>, span: Span) {
        self.diagnostics.push(Diagnostic::error(message, span));
    }

    /// The entries of a map, or an error naming what was expected.
    pub(crate) fn map<'a>(
        &mut self,
        v: &'a Spanned<RawValue>,
        what: &str,
    ) -> &'a [(Spanned<String>, Spanned<RawValue>)] {
        match &v.value {
            RawValue::Map(m) => m,
            RawValue::Null => &[],
            _ => {
                self.error(format!("{what} must be a map"), v.span);
                &[]
            }
        }
    }

    pub(crate) fn list<'a>(
        &mut self,
        v: &'a Spanned<RawValue>,
        what: &str,
    ) -> &'a [Spanned<RawValue>] {
        match &v.value {
            RawValue::List(l) => l,
            RawValue::Null => &[],
            _ => {
                self.error(format!("{what} must be a list"), v.span);
                &[]
            }
        }
    }

    /// A string (numbers and booleans are accepted as their text, as YAML users expect).
    pub(crate) fn string(&mut self, v: &Spanned<RawValue>, what: &str) -> Option<Spanned<String>> {
        let text = match &v.value {
            RawValue::Str { text, .. } => text.clone(),
            RawValue::Int(i) => i.to_string(),
            RawValue::Float(f) => f.to_string(),
            RawValue::Bool(b) => b.to_string(),
            _ => {
                self.error(format!("{what} must be a string"), v.span);
                return None;
            }
        };
        Some(Spanned::new(text, v.span))
    }

    pub(crate) fn int(&mut self, v: &Spanned<RawValue>, what: &str) -> Option<Spanned<i64>> {
        match &v.value {
            RawValue::Int(i) => Some(Spanned::new(*i, v.span)),
            _ => {
                self.error(format!("{what} must be an integer"), v.span);
                None
            }
        }
    }

    /// A list of strings; a single string is read as a one-element list.
    pub(crate) fn strings(
        &mut self,
        v: &Spanned<RawValue>,
        what: &str,
    ) -> Option<Spanned<Vec<Spanned<String>>>> {
        match &v.value {
            RawValue::List(items) => {
                let out = items.iter().filter_map(|i| self.string(i, what)).collect();
                Some(Spanned::new(out, v.span))
            }
            RawValue::Str { .. } => {
                let one = self.string(v, what)?;
                Some(Spanned::new(vec![one], v.span))
            }
            _ => {
                self.error(format!("{what} must be a list of strings"), v.span);
                None
            }
        }
    }

    /// An unknown key: an error, with a suggestion among the known ones.
    pub(crate) fn unknown_key(&mut self, key: &Spanned<String>, known: &[&str], context: &str) {
        let mut d = Diagnostic::error(
            format!("unknown key `{}` in {context}", key.value),
            key.span,
        );
        match suggest(&key.value, known.iter().copied()) {
            Some(s) => d = d.with_help(format!("did you mean `{s}`?")),
            None => d = d.with_help(format!("known keys: {}", known.join(", "))),
        }
        self.diagnostics.push(d);
    }
}

const TOP_KEYS: &[&str] = &["name", "config", "spouts", "bolts", "streams"];
const COMPONENT_KEYS: &[&str] = &[
    "id",
    "type",
    "args",
    "parallelism",
    "tasks",
    "fields",
    "streams",
    "command",
    "cwd",
    "finish",
    "stateful",
    "chain",
    "tick",
    "config",
];
const STREAM_KEYS: &[&str] = &["from", "to", "grouping", "stream", "name"];
const GROUPING_KEYS: &[&str] = &["type", "args", "stream"];

/// Read our own YAML format from its tree.
pub(crate) fn read_topology(tree: &Spanned<RawValue>) -> RawTopology {
    let mut r = TreeReader::default();
    let mut raw = RawTopology::default();
    if !matches!(tree.value, RawValue::Map(_)) {
        r.error(
            "a topology file must be a YAML map (name, spouts, bolts, streams)",
            tree.span,
        );
    }
    for (key, value) in r.map(tree, "the topology").to_vec() {
        if !read_shared_key(&mut r, &key, &value, &mut raw, read_component, read_stream) {
            r.unknown_key(&key, TOP_KEYS, "the topology");
        }
    }
    raw.diagnostics = r.diagnostics;
    raw
}

/// The top-level keys our format and Flux share — `name`, `config`, `spouts`, `bolts`,
/// `streams` — read into `raw` with the format's own component and stream readers. Returns
/// false for any other key.
pub(super) fn read_shared_key(
    r: &mut TreeReader,
    key: &Spanned<String>,
    value: &Spanned<RawValue>,
    raw: &mut RawTopology,
    component: fn(&mut TreeReader, &Spanned<RawValue>) -> RawComponent,
    stream: fn(&mut TreeReader, &Spanned<RawValue>) -> RawStream,
) -> bool {
    match key.value.as_str() {
        "name" => raw.name = r.string(value, "`name`"),
        "config" => raw.config = r.map(value, "`config`").to_vec(),
        "spouts" | "bolts" => {
            let list: Vec<RawComponent> = r
                .list(value, &format!("`{}`", key.value))
                .iter()
                .map(|c| component(r, c))
                .collect();
            if key.value == "spouts" {
                raw.spouts = list;
            } else {
                raw.bolts = list;
            }
        }
        "streams" => {
            raw.streams = r
                .list(value, "`streams`")
                .iter()
                .map(|s| stream(r, s))
                .collect()
        }
        _ => return false,
    }
    true
}

fn read_component(r: &mut TreeReader, v: &Spanned<RawValue>) -> RawComponent {
    let mut c = RawComponent {
        span: v.span,
        ..RawComponent::default()
    };
    for (key, value) in r.map(v, "a component").to_vec() {
        match key.value.as_str() {
            "id" => c.id = r.string(&value, "`id`"),
            "type" => c.ctype = r.string(&value, "`type`"),
            "args" => {
                r.map(&value, "`args`");
                c.args = Some(value.clone());
            }
            "parallelism" => c.parallelism = r.int(&value, "`parallelism`"),
            // Flux's spelling is accepted too.
            "tasks" | "numTasks" => c.tasks = r.int(&value, "`tasks`"),
            "fields" => c.fields = r.strings(&value, "`fields`"),
            "streams" => {
                for (name, fields) in r.map(&value, "`streams`").to_vec() {
                    let fields = r
                        .strings(&fields, "stream fields")
                        .map(|f| f.value)
                        .unwrap_or_default();
                    c.streams.push((name, fields));
                }
            }
            "command" => c.command = r.strings(&value, "`command`"),
            "cwd" => c.cwd = r.string(&value, "`cwd`"),
            "tick" => c.tick = Some(value.clone()),
            "finish" => c.finish = Some(value.clone()),
            "stateful" => c.stateful = Some(value.clone()),
            "chain" => c.chain = Some(value.clone()),
            "config" => c.config = r.map(&value, "`config`").to_vec(),
            _ => r.unknown_key(&key, COMPONENT_KEYS, "a component"),
        }
    }
    c
}

fn read_stream(r: &mut TreeReader, v: &Spanned<RawValue>) -> RawStream {
    let mut s = RawStream {
        span: v.span,
        ..RawStream::default()
    };
    for (key, value) in r.map(v, "a stream").to_vec() {
        match key.value.as_str() {
            "from" => s.from = r.string(&value, "`from`"),
            "to" => s.to = r.string(&value, "`to`"),
            "stream" => s.stream = r.string(&value, "`stream`"),
            "name" => s.name = r.string(&value, "`name`"),
            "grouping" => match &value.value {
                RawValue::Map(entries) => {
                    for (gk, gv) in entries {
                        match gk.value.as_str() {
                            "type" => s.grouping = r.string(gv, "grouping `type`"),
                            "args" => s.grouping_args = r.strings(gv, "grouping `args`"),
                            "stream" | "streamId" => s.stream = r.string(gv, "`stream`"),
                            _ => r.unknown_key(gk, GROUPING_KEYS, "a grouping"),
                        }
                    }
                    if s.grouping.is_none() {
                        r.error("grouping has no `type`", value.span);
                    }
                }
                _ => s.grouping = r.string(&value, "`grouping`"),
            },
            _ => r.unknown_key(&key, STREAM_KEYS, "a stream"),
        }
    }
    s
}
