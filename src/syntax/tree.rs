//! The spanned YAML value tree: built from the events of serde-saphyr's parser
//! (`granit_parser`, which reports byte offsets for every node), with YAML 1.2 core-schema
//! scalars, aliases expanded within a budget, and duplicate keys reported.

use crate::syntax::diag::Diagnostic;
use crate::syntax::raw::{RawValue, Span, Spanned};
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};
use std::collections::{HashMap, HashSet};

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

/// Each open collection: its start offset, and the items (maps keep key/value pairs).
enum Frame {
    Seq(usize, Vec<Spanned<RawValue>>),
    Map(
        usize,
        Vec<(Spanned<String>, Spanned<RawValue>)>,
        Option<Spanned<String>>,
        HashSet<String>,
    ),
}

/// The tree being built from the parser's events.
#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    anchors: HashMap<usize, (Spanned<RawValue>, usize)>,
    expanded: usize,
    anchor_of: Vec<usize>,
    root: Option<Spanned<RawValue>>,
    duplicate: Option<Diagnostic>,
    documents: usize,
}

/// Parse YAML text into a spanned value tree. An empty document is `Null`.
pub(crate) fn parse_tree(text: &str) -> Result<Spanned<RawValue>, Diagnostic> {
    let mut parser = Parser::new_from_str(text);
    let mut tree = Builder::default();
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
        if let Some(node) = tree.node(event, here)? {
            tree.place(node);
        }
    }
    if let Some(d) = tree.duplicate {
        return Err(d);
    }
    Ok(tree
        .root
        .unwrap_or_else(|| Spanned::new(RawValue::Null, Span::new(0, 0))))
}

impl Builder {
    /// The node an event completes, if it completes one.
    fn node(&mut self, event: Event, here: Span) -> Result<Option<Spanned<RawValue>>, Diagnostic> {
        Ok(Some(match event {
            Event::DocumentStart(..) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(Diagnostic::error(
                        "a topology file holds one YAML document, found a second one",
                        here,
                    ));
                }
                return Ok(None);
            }
            Event::Scalar(value, style, anchor, _) => {
                let v = Spanned::new(scalar(&value, style), here);
                if anchor != 0 {
                    self.anchors.insert(anchor, (v.clone(), 1));
                }
                v
            }
            Event::Alias(id) => self.alias(id, here)?,
            Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                if self.stack.len() >= MAX_DEPTH {
                    return Err(Diagnostic::error(
                        format!("YAML nested deeper than {MAX_DEPTH} levels"),
                        here,
                    ));
                }
                self.anchor_of.push(anchor);
                if matches!(event, Event::SequenceStart(..)) {
                    self.stack.push(Frame::Seq(here.start, Vec::new()));
                } else {
                    self.stack
                        .push(Frame::Map(here.start, Vec::new(), None, HashSet::new()));
                }
                return Ok(None);
            }
            Event::SequenceEnd | Event::MappingEnd => return Ok(self.close(here)),
            _ => return Ok(None),
        }))
    }

    /// An alias: a copy of its anchor's node, counted against the expansion budget.
    fn alias(&mut self, id: usize, here: Span) -> Result<Spanned<RawValue>, Diagnostic> {
        match self.anchors.get(&id) {
            Some((v, size)) => {
                self.expanded += size;
                if self.expanded > MAX_NODES {
                    return Err(Diagnostic::error(
                        format!("YAML aliases expand to more than {MAX_NODES} nodes"),
                        here,
                    ));
                }
                Ok(Spanned::new(v.value.clone(), here))
            }
            None => Err(Diagnostic::error("YAML alias to an unknown anchor", here)),
        }
    }

    /// The end of a sequence or mapping: the collection, kept under its anchor if it has one.
    fn close(&mut self, here: Span) -> Option<Spanned<RawValue>> {
        let anchor = self.anchor_of.pop().unwrap_or(0);
        let v = match self.stack.pop()? {
            Frame::Seq(start, items) => {
                let end = items.last().map_or(here.end, |i| i.span.end);
                Spanned::new(RawValue::List(items), Span::new(start, end.max(start)))
            }
            Frame::Map(start, items, _, _) => {
                let end = items.last().map_or(here.end, |(_, v)| v.span.end);
                Spanned::new(RawValue::Map(items), Span::new(start, end.max(start)))
            }
        };
        if anchor != 0 {
            let size = node_count(&v.value);
            self.anchors.insert(anchor, (v.clone(), size));
        }
        Some(v)
    }

    /// Put a finished node where it belongs: the root, a list's item, a map's key or value.
    fn place(&mut self, node: Spanned<RawValue>) {
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq(_, items)) => items.push(node),
            Some(Frame::Map(_, items, pending, keys)) => match pending.take() {
                None => *pending = Some(Spanned::new(key_text(&node.value), node.span)),
                Some(key) => {
                    if !keys.insert(key.value.clone()) && self.duplicate.is_none() {
                        self.duplicate = Some(Diagnostic::error(
                            format!("duplicate key `{}`", key.value),
                            key.span,
                        ));
                    }
                    items.push((key, node));
                }
            },
        }
    }
}

/// A plain (unquoted) scalar's value: null, bool, integer, float or string.
pub(crate) fn resolve_scalar(text: &str) -> RawValue {
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
