//! Syntax errors of the expression parser: the furthest failure and what was expected there,
//! turned into an `ExprError` ("expected …, found …") located inside the expression.

use nom::error::{ErrorKind, ParseError};
use std::ops::Range;

use super::ast::KEYWORDS;
use super::ExprError;
use super::In;

/// The furthest failure, with what would have been accepted there.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PErr {
    pub(crate) offset: usize,
    expected: Vec<&'static str>,
    /// A specific complaint with its range, instead of "expected …".
    message: Option<(Range<usize>, String)>,
}

impl PErr {
    pub(crate) fn expected(offset: usize, what: &'static str) -> PErr {
        PErr {
            offset,
            expected: vec![what],
            message: None,
        }
    }

    pub(crate) fn message(span: Range<usize>, text: impl Into<String>) -> PErr {
        PErr {
            offset: span.start,
            expected: Vec::new(),
            message: Some((span, text.into())),
        }
    }

    pub(crate) fn into_expr_error(self, text: &str) -> ExprError {
        if let Some((span, message)) = self.message {
            return ExprError {
                span,
                message,
                help: None,
            };
        }
        let offset = self.offset.min(text.len());
        let (found, len) = describe_at(text, offset);
        let expected = match self.expected.as_slice() {
            [] => "something else".to_string(),
            [one] => (*one).to_string(),
            [init @ .., last] => format!("{} or {last}", init.join(", ")),
        };
        ExprError {
            span: offset..offset + len,
            message: format!("expected {expected}, found {found}"),
            help: None,
        }
    }
}

impl<'a> ParseError<In<'a>> for PErr {
    fn from_error_kind(input: In<'a>, _kind: ErrorKind) -> Self {
        PErr {
            offset: input.location_offset(),
            expected: Vec::new(),
            message: None,
        }
    }

    fn append(_input: In<'a>, _kind: ErrorKind, other: Self) -> Self {
        other
    }

    fn or(mut self, other: Self) -> Self {
        if other.offset > self.offset || self.message.is_none() && other.message.is_some() {
            return other;
        }
        if other.offset == self.offset {
            for e in other.expected {
                if !self.expected.contains(&e) {
                    self.expected.push(e);
                }
            }
        }
        self
    }
}

/// The token at `offset`, for "found …", and its byte length.
fn describe_at(text: &str, offset: usize) -> (String, usize) {
    let rest = text.get(offset..).unwrap_or("");
    match rest.chars().next() {
        None => ("end of expression".to_string(), 0),
        Some(c) if c.is_alphanumeric() || c == '_' => {
            let word: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
                .take(30)
                .collect();
            let len = word.len();
            if KEYWORDS.contains(&word.as_str()) {
                (format!("keyword `{word}`"), len)
            } else {
                (format!("`{word}`"), len)
            }
        }
        Some(c) => (format!("`{c}`"), c.len_utf8()),
    }
}
