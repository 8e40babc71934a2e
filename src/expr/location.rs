//! Where an expression's error lies in the topology file: an `ExprError` is located inside the
//! expression text, which was written in the file as a (possibly quoted, possibly escaped)
//! string. This maps the range back through the quoting, so the caret lands on the right column.

#[cfg(test)]
use crate::syntax::diag::Diagnostic;
use crate::syntax::raw::Span;
use std::ops::Range;

/// Every problem of a `where` expression as located file diagnostics: `expr_text` is the
/// expression (the decoded string), written at `literal` in `source`; `fields` are the input
/// fields when known. Empty when the expression is fine.
#[cfg(test)]
fn diagnostics(
    source: &str,
    literal: Span,
    expr_text: &str,
    fields: Option<&[String]>,
) -> Vec<Diagnostic> {
    let errors = match super::parse(expr_text) {
        Ok(expr) => expr.check_with(fields),
        Err(e) => vec![e],
    };
    errors
        .into_iter()
        .map(|e| {
            let span = source_span(source, literal, e.span);
            let d = Diagnostic::error(e.message, span);
            match e.help {
                Some(help) => d.with_help(help),
                None => d,
            }
        })
        .collect()
}

/// The file span of `inner` (a byte range of the decoded string) for a string written at
/// `literal` in `source`. Double-quoted strings with backslash escapes (DSL, YAML, JSON),
/// single-quoted strings with `''`, and plain text are understood; anything else (YAML block
/// scalars, folded lines) maps approximately, always inside `literal`.
pub(crate) fn source_span(source: &str, literal: Span, inner: Range<usize>) -> Span {
    let Some(written) = source.get(literal.start..literal.end) else {
        return literal;
    };
    let map = decoded_offsets(written);
    let at = |decoded: usize| -> usize {
        let local = map
            .iter()
            .find(|(d, _)| *d >= decoded)
            .map(|(_, s)| *s)
            .unwrap_or_else(|| map.last().map_or(written.len(), |(_, s)| *s));
        literal.start + local.min(written.len())
    };
    let start = at(inner.start);
    let end = at(inner.end).max(start);
    Span::new(start, end)
}

/// Pairs (decoded offset, offset in `written`) at each decoded character boundary, ending
/// with the end of the string's content.
fn decoded_offsets(written: &str) -> Vec<(usize, usize)> {
    let mut map = Vec::new();
    let quote = written.chars().next().filter(|c| *c == '"' || *c == '\'');
    let Some(quote) = quote else {
        // Plain text: one to one.
        let mut map: Vec<(usize, usize)> = written.char_indices().map(|(k, _)| (k, k)).collect();
        map.push((written.len(), written.len()));
        return map;
    };
    let body_end = if written.len() > 1 && written.ends_with(quote) {
        written.len() - 1
    } else {
        written.len()
    };
    let body = &written[1..body_end];
    let mut decoded = 0;
    let mut chars = body.char_indices().peekable();
    while let Some((k, c)) = chars.next() {
        map.push((decoded, k + 1));
        if quote == '\'' && c == '\'' && chars.peek().is_some_and(|(_, n)| *n == '\'') {
            chars.next();
            decoded += 1;
        } else if quote == '"' && c == '\\' {
            let Some((_, e)) = chars.next() else { break };
            decoded += match e {
                'u' | 'x' | 'U' => {
                    let digits = match e {
                        'x' => 2,
                        'U' => 8,
                        _ => 4,
                    };
                    let mut hex = String::new();
                    if chars.peek().is_some_and(|(_, c)| *c == '{') {
                        chars.next();
                        for (_, c) in chars.by_ref() {
                            if c == '}' {
                                break;
                            }
                            hex.push(c);
                        }
                    } else {
                        while hex.len() < digits
                            && chars.peek().is_some_and(|(_, c)| c.is_ascii_hexdigit())
                        {
                            if let Some((_, c)) = chars.next() {
                                hex.push(c);
                            }
                        }
                    }
                    u32::from_str_radix(&hex, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .map_or(1, char::len_utf8)
                }
                other => other.len_utf8(),
            };
        } else {
            decoded += c.len_utf8();
        }
    }
    map.push((decoded, body_end));
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file text under the mapped span.
    fn under(source: &str, literal: &str, inner: Range<usize>) -> String {
        let start = source.find(literal).unwrap_or(0);
        let span = source_span(source, Span::new(start, start + literal.len()), inner);
        source[span.start..span.end].to_string()
    }

    #[test]
    fn plain_and_quoted_strings_map_through_quotes_and_escapes() {
        let src = r#"filter("w == \"a\" and nope > 1")"#;
        // Decoded: w == "a" and nope > 1 ; `nope` is at 13..17.
        assert_eq!(under(src, r#""w == \"a\" and nope > 1""#, 13..17), "nope");
        let src = "where: 'it''s == nope'";
        assert_eq!(under(src, "'it''s == nope'", 8..12), "nope");
        let src = "where: nope > 1";
        assert_eq!(under(src, "nope > 1", 0..4), "nope");
        let src = r#"x: "\u00e9 == nope""#;
        assert_eq!(under(src, r#""\u00e9 == nope""#, 6..10), "nope");
    }

    #[test]
    fn diagnostics_point_into_the_file() {
        let src = "  - { id: f, type: filter, args: { where: \"wrod == 'a' and len(3) > 1\" } }";
        let start = src.find('"').unwrap_or(0);
        let end = src.rfind('"').map_or(0, |e| e + 1);
        let text = "wrod == 'a' and len(3) > 1";
        let fields = vec!["word".to_string()];
        let found: Vec<_> = diagnostics(src, Span::new(start, end), text, Some(&fields))
            .into_iter()
            .filter_map(|d| Some((src.get(d.span?.start..d.span?.end)?.to_string(), d.help)))
            .collect();
        assert_eq!(
            found,
            [
                ("wrod".to_string(), Some("did you mean `word`?".to_string())),
                ("3".to_string(), None)
            ]
        );
        // Fields unknown: only the type error remains.
        assert_eq!(diagnostics(src, Span::new(start, end), text, None).len(), 1);
        let syntax = diagnostics("x: \"a ==\"", Span::new(3, 9), "a ==", None);
        assert_eq!(syntax.first().and_then(|d| d.span), Some(Span::new(8, 8)));
    }

    #[test]
    fn out_of_range_stays_inside_the_literal() {
        let src = "a: \"abc\"";
        let span = source_span(src, Span::new(3, 8), 2..99);
        assert_eq!(span, Span::new(6, 7));
        assert_eq!(source_span(src, Span::new(3, 99), 0..1), Span::new(3, 99));
    }
}
