//! The DSL's values, read like YAML flow values: `42`, `true`, `null`, `word`, `"text"`,
//! `[a, b]`, `{k: v}`; used for args, options and config.

use crate::recursion_guard::Level;
use nom::branch::alt;
use nom::bytes::complete::take_while1;
use nom::character::complete::char;
use nom::{Input, Parser};

use super::error::SyntaxError;
use super::lexeme::{commit, expect, is_bare_char, offset, span_from, string, ws, wsnl, PResult};
use super::In;
use crate::syntax::raw::{RawValue, Span, Spanned};

/// Read an unquoted scalar as YAML's core schema would: null, booleans, numbers, else text.
pub(super) fn classify(text: &str) -> RawValue {
    match text {
        "null" | "Null" | "NULL" | "~" => return RawValue::Null,
        "true" | "True" | "TRUE" => return RawValue::Bool(true),
        "false" | "False" | "FALSE" => return RawValue::Bool(false),
        ".inf" | "+.inf" => return RawValue::Float(f64::INFINITY),
        "-.inf" => return RawValue::Float(f64::NEG_INFINITY),
        ".nan" => return RawValue::Float(f64::NAN),
        _ => {}
    }
    if looks_numeric(text) {
        if let Ok(n) = text.parse::<i64>() {
            return RawValue::Int(n);
        }
        if let Ok(f) = text.parse::<f64>() {
            return RawValue::Float(f);
        }
    }
    RawValue::Str {
        text: text.to_string(),
        quoted: false,
    }
}

/// `[-+]? (digits [. digits?] | . digits) ([eE] [-+]? digits)?`
fn looks_numeric(text: &str) -> bool {
    let s = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(k) => (&s[..k], Some(&s[k + 1..])),
        None => (s, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (mantissa, None),
    };
    let digits = |t: &str| t.chars().all(|c| c.is_ascii_digit());
    let mantissa_ok = digits(int)
        && frac.is_none_or(digits)
        && (!int.is_empty() || frac.is_some_and(|f| !f.is_empty()));
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mantissa_ok && exponent_ok
}

/// An unquoted scalar.
pub(super) fn bare(i: In) -> PResult<Spanned<RawValue>> {
    let start = offset(&i);
    let (i, text) = expect("a value", take_while1(is_bare_char))(i)?;
    Ok((
        i,
        Spanned::new(
            classify(text.fragment()),
            Span::new(start, start + text.len()),
        ),
    ))
}

/// A call written bare, `sum(latency)` or `percentile(latency, 0.99) as p99`: one string, as if
/// quoted (the `ops` of `aggregate` read so). Parentheses must balance within the line.
fn call(i: In) -> PResult<Spanned<RawValue>> {
    let start = offset(&i);
    let (rest, name) = take_while1(is_bare_char)(i)?;
    let after = rest.fragment();
    let named = |from: &str| {
        from.strip_prefix(" as ")
            .map(|a| a.len() - a.trim_start_matches(is_bare_char).len())
            .filter(|n| *n > 0)
            .map_or(0, |n| " as ".len() + n)
    };
    if !after.starts_with('(') {
        // `count as n`: a call without arguments, named.
        let alias = named(after);
        if alias == 0 {
            return Err(nom::Err::Error(SyntaxError::message(
                Span::new(start, start + 1),
                "not a call",
            )));
        }
        let text = format!("{}{}", name.fragment(), &after[..alias]);
        let (rest, _) = nom::bytes::complete::take(alias)(rest)?;
        let span = Span::new(start, start + text.len());
        let value = RawValue::Str {
            text,
            quoted: false,
        };
        return Ok((rest, Spanned::new(value, span)));
    }
    let mut depth = 0usize;
    let mut end = None;
    for (at, c) in after.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    end = Some(at + 1);
                    break;
                }
            }
            '\n' => break,
            _ => {}
        }
    }
    let Some(len) = end else {
        return Err(nom::Err::Error(SyntaxError::message(
            Span::new(start, start + 1),
            "not a call",
        )));
    };
    // `avg(latency) as mean`: the name given to the call's result belongs to it.
    let len = len + named(&after[len..]);
    let text = format!("{}{}", name.fragment(), &after[..len]);
    let (rest, _) = nom::bytes::complete::take(len)(rest)?;
    let span = Span::new(start, start + text.len());
    Ok((
        rest,
        Spanned::new(
            RawValue::Str {
                text,
                quoted: false,
            },
            span,
        ),
    ))
}

fn quoted_value(i: In) -> PResult<Spanned<RawValue>> {
    let (i, s) = string(i)?;
    Ok((
        i,
        Spanned::new(
            RawValue::Str {
                text: s.value,
                quoted: true,
            },
            s.span,
        ),
    ))
}

/// Any value: string, list, map or unquoted scalar.
pub(super) fn value(i: In) -> PResult<Spanned<RawValue>> {
    let _level = nesting(&i)?;
    expect("a value", alt((quoted_value, list, map, call, bare)))(i)
}

/// How deeply lists and maps may nest: bounds the parser's recursion.
const MAX_DEPTH: usize = 64;

thread_local! {
    static DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One level of nesting, or the error for going deeper than `MAX_DEPTH`.
fn nesting(i: &In) -> Result<Level, nom::Err<SyntaxError>> {
    Level::enter(&DEPTH, MAX_DEPTH).ok_or_else(|| {
        let at = offset(i);
        nom::Err::Failure(SyntaxError::message(
            Span::new(at, at + 1),
            format!("lists and maps nested more than {MAX_DEPTH} levels deep"),
        ))
    })
}

/// `[v, v ...]`: commas or whitespace between items, a trailing comma allowed.
fn list(i: In) -> PResult<Spanned<RawValue>> {
    let start = offset(&i);
    let (mut i, _) = char('[').parse(i)?;
    let mut items = Vec::new();
    loop {
        let (j, _) = wsnl(i)?;
        if let Ok((k, _)) = char::<In, SyntaxError>(']').parse(j) {
            return Ok((k, Spanned::new(RawValue::List(items), span_from(start, &k))));
        }
        let (j, v) = commit(expect("a value or `]`", value)(j))?;
        items.push(v);
        let (j, _) = wsnl(j)?;
        let (j, _) = nom::combinator::opt(char(',')).parse(j)?;
        i = j;
    }
}

/// A map key: quoted, or unquoted text.
fn map_key(i: In) -> PResult<Spanned<String>> {
    if let Ok((rest, s)) = string(i) {
        return Ok((rest, s));
    }
    let start = offset(&i);
    let (i, text) = expect("a key", take_while1(is_bare_char))(i)?;
    Ok((
        i,
        Spanned::new(
            text.fragment().to_string(),
            Span::new(start, start + text.len()),
        ),
    ))
}

/// `{k: v, k: v ...}`.
fn map(i: In) -> PResult<Spanned<RawValue>> {
    let start = offset(&i);
    let (mut i, _) = char('{').parse(i)?;
    let mut entries = Vec::new();
    loop {
        let (j, _) = wsnl(i)?;
        if let Ok((k, _)) = char::<In, SyntaxError>('}').parse(j) {
            return Ok((
                k,
                Spanned::new(RawValue::Map(entries), span_from(start, &k)),
            ));
        }
        let (j, k) = commit(expect("a key or `}`", map_key)(j))?;
        let (j, _) = ws(j)?;
        let (j, _) = commit(expect("`:`", char(':'))(j))?;
        let (j, _) = wsnl(j)?;
        let (j, v) = commit(entry_value(j))?;
        entries.push((k, v));
        let (j, _) = wsnl(j)?;
        let (j, _) = nom::combinator::opt(char(',')).parse(j)?;
        i = j;
    }
}

/// A map entry's value: any value, or an unquoted expression running to the next `,`, `}`
/// or line end outside brackets and quotes, as in `set={total: price * qty}`.
fn entry_value(i: In) -> PResult<Spanned<RawValue>> {
    let starts_plain = !i.fragment().starts_with(['"', '\'', '[', '{']);
    match value(i) {
        Ok((rest, _)) if starts_plain && continues_as_expression(rest.fragment()) => expression(i),
        Err(nom::Err::Error(_)) if i.fragment().starts_with(['(', '-', '!', '`']) => expression(i),
        other => other,
    }
}

/// Whether more of the same entry follows a scalar: anything but a separator, a line end, a
/// comment or the next `key:`.
fn continues_as_expression(rest: &str) -> bool {
    let text = rest.trim_start_matches([' ', '\t']);
    let Some(c) = text.chars().next() else {
        return false;
    };
    if matches!(c, ',' | '}' | '\n' | '\r' | '#') {
        return false;
    }
    let key_len = text.find(|c: char| !is_bare_char(c)).unwrap_or(text.len());
    let after_key = text[key_len..].trim_start_matches([' ', '\t']);
    !(key_len > 0 && after_key.starts_with(':'))
}

/// The text up to the end of the entry, unquoted (`a + b`, `lower(x)`).
fn expression(i: In) -> PResult<Spanned<RawValue>> {
    let start = offset(&i);
    let text: &str = i.fragment();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut end = text.len();
    for (k, c) in text.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' && q == '"' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            ',' | '}' | '\n' | '\r' if depth == 0 => {
                end = k;
                break;
            }
            ' ' | '\t' if depth == 0 && !continues_as_expression(&text[k..]) => {
                end = k;
                break;
            }
            _ => {}
        }
    }
    let body = text[..end].trim_end();
    if body.is_empty() {
        return Err(nom::Err::Error(SyntaxError::expected(start, "a value")));
    }
    let (rest, _) = i.take_split(body.len());
    let raw = RawValue::Str {
        text: body.to_string(),
        quoted: false,
    };
    Ok((
        rest,
        Spanned::new(raw, Span::new(start, start + body.len())),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_value(text: &str) -> Result<Spanned<RawValue>, SyntaxError> {
        match value(In::new(text)) {
            Ok((_, v)) => Ok(v),
            Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(e),
            Err(nom::Err::Incomplete(_)) => Err(SyntaxError::expected(0, "more")),
        }
    }

    #[test]
    fn scalars_follow_yaml_core_schema() {
        assert_eq!(classify("42"), RawValue::Int(42));
        assert_eq!(classify("-7"), RawValue::Int(-7));
        assert_eq!(classify("1.5e3"), RawValue::Float(1500.0));
        assert_eq!(classify("true"), RawValue::Bool(true));
        assert_eq!(classify("~"), RawValue::Null);
        assert_eq!(classify("1m30s").as_str(), Some("1m30s"));
        assert_eq!(classify("e5").as_str(), Some("e5"));
        assert_eq!(classify("inf").as_str(), Some("inf"));
        assert_eq!(classify("1.2.3").as_str(), Some("1.2.3"));
        assert_eq!(classify("-").as_str(), Some("-"));
    }

    #[test]
    fn strings_decode_escapes_and_keep_spans() {
        let v = parse_value(r#""a\"b\n\u00e9\u{1F600}" rest"#).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(v.value.as_str(), Some("a\"b\né😀"));
        assert_eq!(v.span, Span::new(0, 23));
        let v = parse_value("'it''s'").unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(v.value.as_str(), Some("it's"));
    }

    #[test]
    fn bad_escape_is_located_at_the_backslash() {
        let e = parse_value(r#""ab\qc""#).err();
        assert_eq!(e.map(|e| (e.offset, e.len)), Some((3, 2)));
    }

    #[test]
    fn lists_and_maps_nest_with_spans() {
        let v =
            parse_value("{fields: [word, lang] emit: tick}").unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            v.value.to_json(),
            serde_json::json!({"fields": ["word", "lang"], "emit": "tick"})
        );
        let fields = v.value.get("fields").map(|f| f.span);
        assert_eq!(fields, Some(Span::new(9, 21)));
    }

    #[test]
    fn map_values_may_be_unquoted_expressions() {
        let v = parse_value(r#"{total: a + b, n: lower(w), s: split_part(l, ", ", 2) k: 1}"#)
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            v.value.to_json(),
            serde_json::json!({"total": "a + b", "n": "lower(w)", "s": "split_part(l, \", \", 2)", "k": 1})
        );
        let total = v.value.get("total").map(|t| t.span);
        assert_eq!(total, Some(Span::new(8, 13)));
        let v = parse_value("{x: (a) * -2}").unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(v.value.to_json(), serde_json::json!({"x": "(a) * -2"}));
        // Plain values keep their types.
        let v = parse_value("{a: 1 b: [x] c: \"q\"}").unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            v.value.to_json(),
            serde_json::json!({"a": 1, "b": ["x"], "c": "q"})
        );
    }

    #[test]
    fn unclosed_list_says_what_was_expected() {
        let e = parse_value("[a, b").err();
        assert_eq!(
            e.map(|e| (e.offset, e.problem)),
            Some((
                5,
                super::super::error::Problem::Expected(vec!["a value or `]`"])
            ))
        );
    }
}
