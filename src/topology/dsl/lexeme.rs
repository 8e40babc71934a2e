//! The DSL's tokens and values: whitespace and comments, identifiers, quoted strings, and the
//! YAML-flow-like values (`42`, `true`, `word`, `"text"`, `[a, b]`, `{k: v}`) used for args,
//! options and config.

use nom::branch::alt;
use nom::bytes::complete::{tag, take_till, take_while, take_while1};
use nom::character::complete::{char, satisfy};
use nom::combinator::recognize;
use nom::multi::many0;
use nom::{IResult, Input, Parser};
use nom_locate::LocatedSpan;

use super::error::SyntaxError;
use crate::topology::raw::{RawValue, Span, Spanned};

/// Parser input: the text with its byte offset.
pub(super) type In<'a> = LocatedSpan<&'a str>;
pub(super) type PResult<'a, T> = IResult<In<'a>, T, SyntaxError>;

pub(super) fn offset(i: &In) -> usize {
    i.location_offset()
}

/// The span from `start` (an offset) to where `i` now is.
pub(super) fn span_from(start: usize, i: &In) -> Span {
    Span::new(start, offset(i))
}

/// Split off the first `bytes` bytes: (rest, taken).
pub(super) fn advance(i: In, bytes: usize) -> (In, In) {
    i.take_split(bytes.min(i.fragment().len()))
}

/// Relabel a plain failure at the starting point as "expected `what`".
pub(super) fn expect<'a, O, P>(
    what: &'static str,
    mut parser: P,
) -> impl FnMut(In<'a>) -> PResult<'a, O>
where
    P: Parser<In<'a>, Output = O, Error = SyntaxError>,
{
    move |i: In<'a>| {
        let start = offset(&i);
        match parser.parse(i) {
            Err(nom::Err::Error(e)) if e.offset == start => {
                Err(nom::Err::Error(SyntaxError::expected(start, what)))
            }
            other => other,
        }
    }
}

/// A plain (recoverable) error at `i`.
pub(super) fn fail<'a, T>(i: &In<'a>, what: &'static str) -> PResult<'a, T> {
    Err(nom::Err::Error(SyntaxError::expected(offset(i), what)))
}

/// An unrecoverable error at `i` (after a commitment such as an opening bracket).
pub(super) fn failure<'a, T>(e: SyntaxError) -> PResult<'a, T> {
    Err(nom::Err::Failure(e))
}

/// Turn a recoverable error into a failure (nom's `cut`).
pub(super) fn commit<T>(r: PResult<'_, T>) -> PResult<'_, T> {
    r.map_err(|e| match e {
        nom::Err::Error(e) => nom::Err::Failure(e),
        other => other,
    })
}

fn comment(i: In) -> PResult<In> {
    recognize((char('#'), take_till(|c| c == '\n' || c == '\r'))).parse(i)
}

/// Spaces, tabs, comments and backslash-newline continuations; not line ends.
pub(super) fn ws(i: In) -> PResult<()> {
    let blank = take_while1(|c| c == ' ' || c == '\t');
    let continuation = recognize((char('\\'), alt((tag("\r\n"), tag("\n")))));
    many0(alt((blank, comment, continuation)))
        .map(|_| ())
        .parse(i)
}

/// Whitespace including line ends.
pub(super) fn wsnl(i: In) -> PResult<()> {
    let blank = take_while1(|c: char| c == ' ' || c == '\t' || c == '\n' || c == '\r');
    let continuation = recognize((char('\\'), alt((tag("\r\n"), tag("\n")))));
    many0(alt((blank, comment, continuation)))
        .map(|_| ())
        .parse(i)
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

pub(super) fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Characters of an unquoted value: `word`, `42`, `-1.5e3`, `topology.workers`, `/tmp/x.txt`, `1m30s`.
pub(super) fn is_bare_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | '+' | '/' | '@' | '%' | '~')
}

/// An identifier (`[A-Za-z_][A-Za-z0-9_-]*`): component ids and types, option keys.
pub(super) fn ident(i: In) -> PResult<Spanned<String>> {
    let start = offset(&i);
    let (i, text) = expect(
        "a name",
        recognize((satisfy(is_ident_start), take_while(is_ident_char))),
    )(i)?;
    Ok((
        i,
        Spanned::new(
            text.fragment().to_string(),
            Span::new(start, start + text.len()),
        ),
    ))
}

/// A key: an identifier that may also hold dots (`topology.workers`).
pub(super) fn key(i: In) -> PResult<Spanned<String>> {
    let start = offset(&i);
    let (i, text) = expect(
        "a key",
        recognize((
            satisfy(is_ident_start),
            take_while(|c| is_ident_char(c) || c == '.'),
        )),
    )(i)?;
    Ok((
        i,
        Spanned::new(
            text.fragment().to_string(),
            Span::new(start, start + text.len()),
        ),
    ))
}

/// A double-quoted string with escapes (`\" \\ \n \t \r \0 \/ \uXXXX \u{X..}`).
pub(super) fn dq_string(i: In) -> PResult<Spanned<String>> {
    let start = offset(&i);
    let frag: &str = i.fragment();
    if !frag.starts_with('"') {
        return fail(&i, "a string");
    }
    let mut out = String::new();
    let mut chars = frag.char_indices().skip(1).peekable();
    while let Some((k, c)) = chars.next() {
        match c {
            '"' => {
                let (rest, _) = advance(i, k + 1);
                return Ok((rest, Spanned::new(out, Span::new(start, start + k + 1))));
            }
            '\\' => {
                let Some((j, e)) = chars.next() else { break };
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    '"' | '\\' | '/' | '\'' => out.push(e),
                    'u' => {
                        let body = &frag[j + 1..];
                        let (hex, used) = if let Some(braced) = body.strip_prefix('{') {
                            let close = braced.find('}').unwrap_or(braced.len());
                            (&braced[..close], close + 2)
                        } else {
                            let n = body
                                .char_indices()
                                .take(4)
                                .take_while(|(_, c)| c.is_ascii_hexdigit())
                                .count();
                            (&body[..n], n)
                        };
                        let decoded = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32);
                        match decoded {
                            Some(ch) if !hex.is_empty() => out.push(ch),
                            _ => {
                                let end = (j + 1 + used).min(frag.len());
                                return failure(SyntaxError::message(
                                    Span::new(start + k, start + end),
                                    "invalid unicode escape (write `\\u{1F600}` or `\\u00e9`)",
                                ));
                            }
                        }
                        // Skip the characters the escape used.
                        while chars.peek().is_some_and(|(p, _)| *p < j + 1 + used) {
                            chars.next();
                        }
                    }
                    other => {
                        return failure(SyntaxError::message(
                            Span::new(start + k, start + j + other.len_utf8()),
                            format!("unknown escape `\\{other}` in string"),
                        ));
                    }
                }
            }
            c => out.push(c),
        }
    }
    failure(SyntaxError::message(
        Span::new(start, start + 1),
        "unterminated string: no closing `\"`",
    ))
}

/// A single-quoted string, taken literally (`''` stands for one quote).
pub(super) fn sq_string(i: In) -> PResult<Spanned<String>> {
    let start = offset(&i);
    let frag: &str = i.fragment();
    if !frag.starts_with('\'') {
        return fail(&i, "a string");
    }
    let mut out = String::new();
    let mut chars = frag.char_indices().skip(1).peekable();
    while let Some((k, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().is_some_and(|(_, n)| *n == '\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            let (rest, _) = advance(i, k + 1);
            return Ok((rest, Spanned::new(out, Span::new(start, start + k + 1))));
        }
        out.push(c);
    }
    failure(SyntaxError::message(
        Span::new(start, start + 1),
        "unterminated string: no closing `'`",
    ))
}

/// A quoted string of either kind.
pub(super) fn string(i: In) -> PResult<Spanned<String>> {
    expect("a string", alt((dq_string, sq_string)))(i)
}

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
    expect("a value", alt((quoted_value, list, map, bare)))(i)
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
        let (j, v) = commit(value(j))?;
        entries.push((k, v));
        let (j, _) = wsnl(j)?;
        let (j, _) = nom::combinator::opt(char(',')).parse(j)?;
        i = j;
    }
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
