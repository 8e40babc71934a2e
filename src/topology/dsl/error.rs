//! Syntax errors of the DSL parser: the furthest failure offset with what was expected there,
//! turned into a located `Diagnostic` ("expected …, found …").

use crate::syntax::diag::Diagnostic;
use crate::syntax::raw::Span;
use nom::error::{ErrorKind, ParseError};

use super::In;

/// What went wrong at one offset.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Problem {
    /// The things that would have been accepted there.
    Expected(Vec<&'static str>),
    /// A specific complaint (bad escape, number too large, ...).
    Message(String),
}

/// A syntax error at a byte offset of the DSL text.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SyntaxError {
    pub(crate) offset: usize,
    /// Length of the offending text for `Message` errors (0: one character or end).
    pub(crate) len: usize,
    pub(crate) problem: Problem,
}

impl SyntaxError {
    pub(crate) fn expected(offset: usize, what: &'static str) -> SyntaxError {
        SyntaxError {
            offset,
            len: 0,
            problem: Problem::Expected(vec![what]),
        }
    }

    pub(crate) fn message(span: Span, message: impl Into<String>) -> SyntaxError {
        SyntaxError {
            offset: span.start,
            len: span.end.saturating_sub(span.start),
            problem: Problem::Message(message.into()),
        }
    }

    /// Render against the source text.
    pub(crate) fn to_diagnostic(&self, text: &str) -> Diagnostic {
        let offset = self.offset.min(text.len());
        let (found, found_len) = describe_at(text, offset);
        match &self.problem {
            Problem::Message(m) => {
                let end = if self.len > 0 {
                    (offset + self.len).min(text.len())
                } else {
                    offset + found_len
                };
                Diagnostic::error(m.clone(), Span::new(offset, end))
            }
            Problem::Expected(list) => {
                let message = if list.is_empty() {
                    format!("unexpected {found}")
                } else {
                    format!("expected {}, found {found}", join_alternatives(list))
                };
                let d = Diagnostic::error(message, Span::new(offset, offset + found_len));
                match hint(text, offset, list) {
                    Some(help) => d.with_help(help),
                    None => d,
                }
            }
        }
    }
}

/// A hint for common slips: YAML habits, arrows, unquoted expressions, a missing `|`.
fn hint(text: &str, offset: usize, expected: &[&'static str]) -> Option<&'static str> {
    let rest = text.get(offset..).unwrap_or("");
    if rest.starts_with(':') {
        return Some("the DSL writes `name NAME` and `key=value`; `:` only separates keys from values inside `{…}`");
    }
    if rest.starts_with("->") || rest.starts_with("=>") {
        return Some("streams are written with `|`: `stdin | split`");
    }
    if expected.contains(&ARGUMENT) {
        if rest.is_empty() || rest.starts_with(['|', '\n', '\r', ';']) {
            return Some("is the closing `)` missing?");
        }
        return Some("quote an argument that has spaces or symbols: `filter(\"len(word) > 3\")`");
    }
    if expected.contains(&AFTER_ELEMENT) && rest.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Some("options are `x4` or `key=value`; is a `|` missing before it?");
    }
    None
}

/// What an argument list expects next (shared with the grammar, for `hint`).
pub(super) const ARGUMENT: &str = "an argument or `)`";
/// What may follow a component (shared with the grammar, for `hint`).
pub(super) const AFTER_ELEMENT: &str = "`|`, an option, `;` or end of line";

/// `a`, `a or b`, `a, b or c`.
fn join_alternatives(list: &[&'static str]) -> String {
    match list {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// Describe the token at `offset` for "found …", with its byte length.
pub(super) fn describe_at(text: &str, offset: usize) -> (String, usize) {
    let rest = text.get(offset..).unwrap_or("");
    let Some(first) = rest.chars().next() else {
        return ("end of input".to_string(), 0);
    };
    match first {
        '\n' | '\r' => ("end of line".to_string(), first.len_utf8()),
        c if c.is_alphanumeric() || c == '_' => {
            let word: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
                .take(30)
                .collect();
            let len = word.len();
            (format!("`{word}`"), len)
        }
        c if c.is_whitespace() => ("whitespace".to_string(), c.len_utf8()),
        c => (format!("`{c}`"), c.len_utf8()),
    }
}

impl<'a> ParseError<In<'a>> for SyntaxError {
    fn from_error_kind(input: In<'a>, _kind: ErrorKind) -> Self {
        SyntaxError {
            offset: input.location_offset(),
            len: 0,
            problem: Problem::Expected(Vec::new()),
        }
    }

    fn append(_input: In<'a>, _kind: ErrorKind, other: Self) -> Self {
        other
    }

    /// Keep the error that got furthest; at the same place, merge what was expected.
    fn or(self, other: Self) -> Self {
        match self.offset.cmp(&other.offset) {
            std::cmp::Ordering::Greater => self,
            std::cmp::Ordering::Less => other,
            std::cmp::Ordering::Equal => match (self.problem, other.problem) {
                (Problem::Expected(mut a), Problem::Expected(b)) => {
                    for item in b {
                        if !a.contains(&item) {
                            a.push(item);
                        }
                    }
                    SyntaxError {
                        offset: self.offset,
                        len: 0,
                        problem: Problem::Expected(a),
                    }
                }
                (Problem::Message(m), _) => SyntaxError {
                    offset: self.offset,
                    len: self.len,
                    problem: Problem::Message(m),
                },
                (_, problem) => SyntaxError {
                    offset: other.offset,
                    len: other.len,
                    problem,
                },
            },
        }
    }
}
