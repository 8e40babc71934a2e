//! The DSL's tokens: whitespace and comments, identifiers and keys, quoted strings, and the
//! small nom helpers (located errors, commitment) the rest of the parser shares.

use nom::branch::alt;
use nom::bytes::complete::{tag, take_till, take_while, take_while1};
use nom::character::complete::{char, satisfy};
use nom::combinator::recognize;
use nom::multi::many0;
use nom::{IResult, Input, Parser};

use super::error::SyntaxError;
use super::In;
use crate::syntax::raw::{Span, Spanned};

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
