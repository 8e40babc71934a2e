//! The compact DSL (`.storm` files and `-e TEXT`), parsed with nom into the same raw form as
//! YAML. `stdin | split x4 | count(word) x2 | stdout` is a whole word count; the grammar and
//! its rules are documented in `docs/dsl.md`.
//!
//! Parsing goes statement by statement: a syntax error is reported (located at the furthest
//! point reached, "expected …, found …") and parsing resumes at the next statement, so every
//! statement's errors are found in one pass.

mod build;
mod component;
mod error;
mod grammar;
mod lexeme;
mod value;

use crate::syntax::raw::{RawTopology, Span, Spanned};
use lexeme::{advance, wsnl};
use nom_locate::LocatedSpan;

/// Parser input: the text with its byte offset (shared by the lexemes, the grammar and the
/// syntax errors).
type In<'a> = LocatedSpan<&'a str>;

/// The topology name when the text has no `name` statement.
const DEFAULT_NAME: &str = "inline";

/// Parse DSL text. Syntax errors are reported in `RawTopology::diagnostics`, located by byte
/// offset in `text`; never panics. Without a `name` statement the name is `inline`.
pub fn parse(text: &str) -> RawTopology {
    parse_named(text, DEFAULT_NAME)
}

/// As `parse`, naming the topology `default_name` (spanned empty at offset 0) when the text
/// does not name it; a loader may pass the file stem.
fn parse_named(text: &str, default_name: &str) -> RawTopology {
    let mut diagnostics = Vec::new();
    let mut statements = Vec::new();
    let mut i = In::new(text);
    loop {
        i = skip_separators(i);
        if i.fragment().is_empty() {
            break;
        }
        let result = grammar::statement(i).and_then(|(rest, s)| {
            let (rest, ()) = grammar::statement_end(rest)?;
            Ok((rest, s))
        });
        match result {
            Ok((rest, s)) => {
                statements.push(s);
                i = rest;
            }
            Err(nom::Err::Error(e) | nom::Err::Failure(e)) => {
                diagnostics.push(e.to_diagnostic(text));
                i = recover(i, e.offset);
            }
            Err(nom::Err::Incomplete(_)) => break,
        }
    }
    let mut raw = build::build(&statements, &mut diagnostics);
    if raw.name.is_none() {
        raw.name = Some(Spanned::new(default_name.to_string(), Span::new(0, 0)));
    }
    raw.diagnostics = diagnostics;
    raw
}

/// Blank lines, comments and `;` between statements.
fn skip_separators(mut i: In) -> In {
    loop {
        if let Ok((rest, ())) = wsnl(i) {
            i = rest;
        }
        if i.fragment().starts_with(';') {
            i = advance(i, 1).0;
        } else {
            return i;
        }
    }
}

/// After a syntax error at `error_offset`: skip to the end of that line (and of any lines that
/// continue the same pipeline with a leading `|`), so the next statement is parsed afresh.
fn recover(i: In, error_offset: usize) -> In {
    let start = i.location_offset();
    let text: &str = i.fragment();
    let mut pos = error_offset.saturating_sub(start).min(text.len());
    while !text.is_char_boundary(pos) {
        pos += 1;
    }
    loop {
        match text[pos..].find(['\n', ';']) {
            None => return advance(i, text.len()).0,
            Some(k) => pos += k + 1,
        }
        let next = text[pos..].trim_start_matches([' ', '\t', '\r', '\n']);
        if !next.starts_with('|') {
            // Always make progress, even when the error was at the very start.
            return advance(i, pos.max(1)).0;
        }
    }
}

#[cfg(test)]
mod tests;
