//! YAML topology files: a spanned value tree built from the events of serde-saphyr's parser
//! (`granit_parser`, which gives byte offsets for every node), and the reader that turns that
//! tree into a `RawTopology` for our own (Flux-shaped) format.

use crate::diag::Diagnostic;
use crate::topology::raw::{RawComponent, RawStream, RawTopology, RawValue, Span, Spanned};
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};
use std::collections::HashMap;

/// How deep nested collections may go before the file is rejected (a guard against stack abuse).
const MAX_DEPTH: usize = 64;

/// How many nodes aliases may expand to in all (a guard against "billion laughs" documents).
const MAX_NODES: usize = 1_000_000;

fn node_count(v: &RawValue) -> usize {
    match v {
        RawValue::List(items) => 1 + items.iter().map(|i| node_count(&i.value)).sum::<usize>(),
        RawValue::Map(entries) => {
            1 + entries
                .iter()
                .map(|(_, v)| 1 + node_count(&v.value))
                .sum::<usize>()
        }
        _ => 1,
    }
}

/// Parse YAML text into a spanned value tree. An empty document is `Null`.
pub fn parse_tree(text: &str) -> Result<Spanned<RawValue>, Diagnostic> {
    let mut parser = Parser::new_from_str(text);
    // Each open collection: its start offset, and the items (maps keep key/value pairs).
    enum Frame {
        Seq(usize, Vec<Spanned<RawValue>>),
        Map(
            usize,
            Vec<(Spanned<String>, Spanned<RawValue>)>,
            Option<Spanned<String>>,
        ),
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, (Spanned<RawValue>, usize)> = HashMap::new();
    let mut expanded = 0usize;
    let mut anchor_of: Vec<usize> = Vec::new();
    let mut root: Option<Spanned<RawValue>> = None;
    let mut duplicate: Option<Diagnostic> = None;
    let mut documents = 0usize;
    while let Some(next) = parser.next_event() {
        let (event, span) = match next {
            Ok(e) => e,
            Err(err) => {
                let at = byte_of_char(text, err.marker().index());
                let end = next_char_end(text, at);
                return Err(Diagnostic::error(
                    format!("YAML syntax: {}", err.kind()),
                    Span::new(at, end),
                ));
            }
        };
        let range = span.byte_range().unwrap_or(0..0);
        let here = Span::new(range.start, range.end);
        let node = match event {
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return Err(Diagnostic::error(
                        "a topology file holds one YAML document, found a second one",
                        here,
                    ));
                }
                continue;
            }
            Event::Scalar(value, style, anchor, _) => {
                let v = Spanned::new(scalar(&value, style), here);
                if anchor != 0 {
                    anchors.insert(anchor, (v.clone(), 1));
                }
                v
            }
            Event::Alias(id) => match anchors.get(&id) {
                Some((v, size)) => {
                    expanded += size;
                    if expanded > MAX_NODES {
                        return Err(Diagnostic::error(
                            format!("YAML aliases expand to more than {MAX_NODES} nodes"),
                            here,
                        ));
                    }
                    Spanned::new(v.value.clone(), here)
                }
                None => return Err(Diagnostic::error("YAML alias to an unknown anchor", here)),
            },
            Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(Diagnostic::error(
                        format!("YAML nested deeper than {MAX_DEPTH} levels"),
                        here,
                    ));
                }
                anchor_of.push(anchor);
                if matches!(event, Event::SequenceStart(..)) {
                    stack.push(Frame::Seq(here.start, Vec::new()));
                } else {
                    stack.push(Frame::Map(here.start, Vec::new(), None));
                }
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let anchor = anchor_of.pop().unwrap_or(0);
                let v = match stack.pop() {
                    Some(Frame::Seq(start, items)) => {
                        let end = items.last().map_or(here.end, |i| i.span.end);
                        Spanned::new(RawValue::List(items), Span::new(start, end.max(start)))
                    }
                    Some(Frame::Map(start, items, _)) => {
                        let end = items.last().map_or(here.end, |(_, v)| v.span.end);
                        Spanned::new(RawValue::Map(items), Span::new(start, end.max(start)))
                    }
                    None => continue,
                };
                if anchor != 0 {
                    let size = node_count(&v.value);
                    anchors.insert(anchor, (v.clone(), size));
                }
                v
            }
            _ => continue,
        };
        match stack.last_mut() {
            None => root = Some(node),
            Some(Frame::Seq(_, items)) => items.push(node),
            Some(Frame::Map(_, items, pending)) => match pending.take() {
                None => *pending = Some(Spanned::new(key_text(&node.value), node.span)),
                Some(key) => {
                    if duplicate.is_none() && items.iter().any(|(k, _)| k.value == key.value) {
                        duplicate = Some(Diagnostic::error(
                            format!("duplicate key `{}`", key.value),
                            key.span,
                        ));
                    }
                    items.push((key, node));
                }
            },
        }
    }
    if let Some(d) = duplicate {
        return Err(d);
    }
    Ok(root.unwrap_or_else(|| Spanned::new(RawValue::Null, Span::new(0, 0))))
}

/// A plain (unquoted) scalar's value: null, bool, integer, float or string.
pub fn resolve_scalar(text: &str) -> RawValue {
    scalar(text, ScalarStyle::Plain)
}

/// YAML 1.2 core schema resolution of a scalar.
fn scalar(text: &str, style: ScalarStyle) -> RawValue {
    if style != ScalarStyle::Plain {
        let quoted = matches!(style, ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted);
        return RawValue::Str {
            text: text.to_string(),
            quoted,
        };
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return RawValue::Null,
        "true" | "True" | "TRUE" => return RawValue::Bool(true),
        "false" | "False" | "FALSE" => return RawValue::Bool(false),
        _ => {}
    }
    if let Ok(i) = text.parse::<i64>() {
        return RawValue::Int(i);
    }
    if let Some(hex) = text.strip_prefix("0x") {
        if let Ok(i) = i64::from_str_radix(hex, 16) {
            return RawValue::Int(i);
        }
    }
    let looks_numeric = text
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        && text.chars().any(|c| c.is_ascii_digit());
    if looks_numeric {
        if let Ok(f) = text.parse::<f64>() {
            return RawValue::Float(f);
        }
    }
    RawValue::Str {
        text: text.to_string(),
        quoted: false,
    }
}

/// A map key as text (keys that are numbers or booleans are read as written).
fn key_text(v: &RawValue) -> String {
    match v {
        RawValue::Str { text, .. } => text.clone(),
        RawValue::Null => String::new(),
        other => other.to_json().to_string(),
    }
}

fn byte_of_char(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}

fn next_char_end(text: &str, at: usize) -> usize {
    text.get(at..)
        .and_then(|rest| rest.chars().next())
        .map_or(at, |c| at + c.len_utf8())
}

/// Typed reads from a spanned tree, collecting a diagnostic for each value of the wrong kind.
#[derive(Debug, Default)]
pub struct Reader {
    pub diagnostics: Vec<Diagnostic>,
}

impl Reader {
    pub fn error(&mut self, message: impl Into<String>, span: Span) {
        self.diagnostics.push(Diagnostic::error(message, span));
    }

    /// The entries of a map, or an error naming what was expected.
    pub fn map<'a>(
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

    pub fn list<'a>(&mut self, v: &'a Spanned<RawValue>, what: &str) -> &'a [Spanned<RawValue>] {
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
    pub fn string(&mut self, v: &Spanned<RawValue>, what: &str) -> Option<Spanned<String>> {
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

    pub fn int(&mut self, v: &Spanned<RawValue>, what: &str) -> Option<Spanned<i64>> {
        match &v.value {
            RawValue::Int(i) => Some(Spanned::new(*i, v.span)),
            _ => {
                self.error(format!("{what} must be an integer"), v.span);
                None
            }
        }
    }

    /// A list of strings; a single string is read as a one-element list.
    pub fn strings(
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
    pub fn unknown_key(&mut self, key: &Spanned<String>, known: &[&str], context: &str) {
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

/// The closest candidate to `word`, if one is close enough to be a likely typo.
pub fn suggest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    candidates
        .map(|c| (strsim::jaro_winkler(&lower, &c.to_ascii_lowercase()), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
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
    "tick",
    "config",
];
const STREAM_KEYS: &[&str] = &["from", "to", "grouping", "stream", "name"];
const GROUPING_KEYS: &[&str] = &["type", "args", "stream"];

/// Read our own YAML format from its tree.
pub fn read_topology(tree: &Spanned<RawValue>) -> RawTopology {
    let mut r = Reader::default();
    let mut raw = RawTopology::default();
    if !matches!(tree.value, RawValue::Map(_)) {
        r.error(
            "a topology file must be a YAML map (name, spouts, bolts, streams)",
            tree.span,
        );
    }
    for (key, value) in r.map(tree, "the topology").to_vec() {
        match key.value.as_str() {
            "name" => raw.name = r.string(&value, "`name`"),
            "config" => raw.config = r.map(&value, "`config`").to_vec(),
            "spouts" | "bolts" => {
                let list: Vec<RawComponent> = r
                    .list(&value, &format!("`{}`", key.value))
                    .iter()
                    .map(|c| read_component(&mut r, c))
                    .collect();
                if key.value == "spouts" {
                    raw.spouts = list;
                } else {
                    raw.bolts = list;
                }
            }
            "streams" => {
                raw.streams = r
                    .list(&value, "`streams`")
                    .iter()
                    .map(|s| read_stream(&mut r, s))
                    .collect()
            }
            _ => r.unknown_key(&key, TOP_KEYS, "the topology"),
        }
    }
    raw.diagnostics = r.diagnostics;
    raw
}

fn read_component(r: &mut Reader, v: &Spanned<RawValue>) -> RawComponent {
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
            "tasks" => c.tasks = r.int(&value, "`tasks`"),
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
            "config" => c.config = r.map(&value, "`config`").to_vec(),
            _ => r.unknown_key(&key, COMPONENT_KEYS, "a component"),
        }
    }
    c
}

fn read_stream(r: &mut Reader, v: &Spanned<RawValue>) -> RawStream {
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
                            "stream" => s.stream = r.string(gv, "`stream`"),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(text: &str, s: Span) -> &str {
        &text[s.start..s.end]
    }

    #[test]
    fn spans_are_byte_ranges_even_after_multibyte_text() {
        let text = "# héllo wörld\nname: \"ünï\"\nlist: [a, bb]\n";
        let tree = parse_tree(text).expect("valid yaml");
        let name = tree.value.get("name").expect("name");
        assert_eq!(slice(text, name.span), "\"ünï\"");
        let list = tree.value.get("list").expect("list");
        let RawValue::List(items) = &list.value else {
            panic!("not a list")
        };
        assert_eq!(slice(text, items[1].span), "bb");
        let RawValue::Map(m) = &tree.value else {
            panic!("not a map")
        };
        assert_eq!(slice(text, m[1].0.span), "list");
    }

    #[test]
    fn scalars_resolve_like_yaml_core_schema() {
        let tree = parse_tree("a: 1\nb: 1.5\nc: true\nd: ~\ne: '1'\nf: 1m 30s\n").expect("yaml");
        assert_eq!(
            tree.value.get("a").map(|v| &v.value),
            Some(&RawValue::Int(1))
        );
        assert_eq!(
            tree.value.get("b").map(|v| &v.value),
            Some(&RawValue::Float(1.5))
        );
        assert_eq!(
            tree.value.get("c").map(|v| &v.value),
            Some(&RawValue::Bool(true))
        );
        assert_eq!(tree.value.get("d").map(|v| &v.value), Some(&RawValue::Null));
        assert_eq!(
            tree.value.get("e").and_then(|v| v.value.as_str()),
            Some("1")
        );
        assert_eq!(
            tree.value.get("f").and_then(|v| v.value.as_str()),
            Some("1m 30s")
        );
    }

    #[test]
    fn syntax_errors_and_duplicate_keys_are_located() {
        let err = parse_tree("a: [1, 2\nb: 3\n").expect_err("unclosed flow list");
        assert!(err.message.starts_with("YAML syntax"), "{}", err.message);
        let text = "a: 1\na: 2\n";
        let err = parse_tree(text).expect_err("duplicate");
        assert_eq!(err.span.map(|s| s.start), Some(5));
    }

    #[test]
    fn alias_bombs_and_deep_nesting_are_refused() {
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 0..8 {
            let prev = if i == 0 {
                "a".to_string()
            } else {
                format!("b{}", i - 1)
            };
            let refs = vec![format!("*{prev}"); 10].join(", ");
            bomb.push_str(&format!("b{i}: &b{i} [{refs}]\n"));
        }
        let err = parse_tree(&bomb).expect_err("too big");
        assert!(err.message.contains("aliases expand"), "{}", err.message);
        for depth in [100, 100_000] {
            let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let err = parse_tree(&deep).expect_err("too deep");
            assert!(
                err.message.contains("nested deeper") || err.message.contains("recursion limit"),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn aliases_copy_the_anchored_value() {
        let tree = parse_tree("a: &x [1, 2]\nb: *x\n").expect("yaml");
        assert_eq!(
            tree.value.get("b").map(|v| v.value.to_json().to_string()),
            Some("[1,2]".into())
        );
    }
}
