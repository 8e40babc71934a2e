//! The DSL's statements as written: `name`, `config` and pipelines of components joined by
//! `|` edges. This is the syntax tree; `build` resolves ids and references into the raw form.

use nom::character::complete::{char, digit1, satisfy};
use nom::combinator::{not, opt, peek};
use nom::Parser;

use super::error::{SyntaxError, AFTER_ELEMENT, ARGUMENT};
use super::lexeme::{
    advance, commit, expect, fail, failure, ident, is_bare_char, is_ident_char, key, offset,
    span_from, string, ws, wsnl, PResult,
};
use super::value::value;
use super::In;
use crate::syntax::raw::{RawValue, Span, Spanned};

/// `key=value`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Setting {
    pub(crate) key: Spanned<String>,
    pub(crate) value: Spanned<RawValue>,
}

/// One item inside a component's parentheses.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Arg {
    Named(Setting),
    Positional(Spanned<RawValue>),
}

/// One option after a component's type.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Opt {
    /// `x4` or `*4`.
    Parallelism(Spanned<i64>),
    Setting(Setting),
}

/// `[id =] type [(args)] options...`, or a bare name that may be a reference.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Element {
    pub(crate) span: Span,
    pub(crate) id: Option<Spanned<String>>,
    pub(crate) ctype: Spanned<String>,
    /// The parenthesised arguments and the span of the parentheses.
    pub(crate) args: Option<(Span, Vec<Arg>)>,
    pub(crate) options: Vec<Opt>,
}

/// `|` or `| [grouping field... key=value...]`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Edge {
    /// The `|` itself.
    pub(crate) pipe: Span,
    pub(crate) grouping: Option<Spanned<String>>,
    pub(crate) fields: Vec<Spanned<String>>,
    /// Span of the bracket when there is one.
    bracket: Option<Span>,
    pub(crate) settings: Vec<Setting>,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Statement {
    Name(Spanned<String>),
    Config(Vec<Setting>),
    /// The first element, then each edge with the element it leads to.
    Pipeline(Element, Vec<(Edge, Element)>),
}

/// `key=value` (no spaces needed; `key = value` accepted too).
fn setting(i: In) -> PResult<Setting> {
    let (i, k) = key(i)?;
    let (i, _) = ws(i)?;
    let (i, _) = expect("`=`", char('=')).parse(i)?;
    let (i, _) = ws(i)?;
    let (i, v) = commit(value(i))?;
    Ok((i, Setting { key: k, value: v }))
}

/// `x4` / `*4`.
fn parallelism(i: In) -> PResult<Spanned<i64>> {
    let start = offset(&i);
    let (i, _) = satisfy(|c| c == 'x' || c == '*').parse(i)?;
    let (i, digits) = digit1(i)?;
    let (i, _) = not(satisfy(is_bare_char)).parse(i)?;
    let span = span_from(start, &i);
    match digits.fragment().parse::<i64>() {
        Ok(n) => Ok((i, Spanned::new(n, span))),
        Err(_) => failure(SyntaxError::message(span, "parallelism is too large")),
    }
}

fn option(i: In) -> PResult<Opt> {
    match parallelism(i) {
        Ok((rest, p)) => return Ok((rest, Opt::Parallelism(p))),
        Err(nom::Err::Failure(e)) => return Err(nom::Err::Failure(e)),
        Err(_) => {}
    }
    let (i, s) = expect("an option (`x4`, `key=value`)", setting)(i)?;
    Ok((i, Opt::Setting(s)))
}

/// `( arg, arg ... )` with commas or whitespace between.
fn args(i: In) -> PResult<(Span, Vec<Arg>)> {
    let start = offset(&i);
    let (mut i, _) = char('(').parse(i)?;
    let mut items = Vec::new();
    loop {
        let (j, _) = wsnl(i)?;
        if let Ok((k, _)) = char::<In, SyntaxError>(')').parse(j) {
            return Ok((k, (span_from(start, &k), items)));
        }
        let (j, arg) = match setting(j) {
            Ok((rest, s)) => (rest, Arg::Named(s)),
            Err(nom::Err::Failure(e)) => return Err(nom::Err::Failure(e)),
            Err(_) => {
                let (rest, v) = commit(expect(ARGUMENT, value)(j))?;
                (rest, Arg::Positional(v))
            }
        };
        items.push(arg);
        let (j, _) = wsnl(j)?;
        let (j, _) = opt(char(',')).parse(j)?;
        i = j;
    }
}

/// A component in a pipeline.
fn element(i: In) -> PResult<Element> {
    let start = offset(&i);
    let (i, first) = expect("a component", ident)(i)?;
    // `id = type`: an `=` that is not the start of an option list.
    let (i, id, ctype) = match (ws, char::<In, SyntaxError>('=')).parse(i) {
        Ok((j, _)) => {
            let (j, _) = ws(j)?;
            let (j, ctype) = commit(expect("a component type", ident)(j))?;
            (j, Some(first), ctype)
        }
        Err(_) => (i, None, first),
    };
    let (i, args) = match (ws, peek(char::<In, SyntaxError>('('))).parse(i) {
        Ok((j, _)) => {
            let (j, a) = commit(args(j))?;
            (j, Some(a))
        }
        Err(_) => (i, None),
    };
    let mut options = Vec::new();
    let mut i = i;
    loop {
        let (j, _) = ws(i)?;
        match option(j) {
            Ok((k, o)) => {
                options.push(o);
                i = k;
            }
            Err(nom::Err::Failure(e)) => return Err(nom::Err::Failure(e)),
            Err(_) => break,
        }
    }
    let span = span_from(start, &i);
    Ok((
        i,
        Element {
            span,
            id,
            ctype,
            args,
            options,
        },
    ))
}

/// `[grouping field... key=value...]`, filling in `edge`.
fn bracket(i: In, mut edge: Edge) -> PResult<Edge> {
    let start = offset(&i);
    let (mut i, _) = char('[').parse(i)?;
    loop {
        let (j, _) = wsnl(i)?;
        if let Ok((k, _)) = char::<In, SyntaxError>(']').parse(j) {
            edge.bracket = Some(span_from(start, &k));
            return Ok((k, edge));
        }
        let j = match setting(j) {
            Ok((rest, s)) => {
                edge.settings.push(s);
                rest
            }
            Err(nom::Err::Failure(e)) => return Err(nom::Err::Failure(e)),
            Err(_) if edge.grouping.is_none() => {
                let (rest, g) = commit(expect("a grouping or `]`", ident)(j))?;
                edge.grouping = Some(g);
                rest
            }
            Err(_) => {
                let (rest, f) = commit(expect("a field name or `]`", field_name)(j))?;
                edge.fields.push(f);
                rest
            }
        };
        let (j, _) = wsnl(j)?;
        let (j, _) = opt(char(',')).parse(j)?;
        i = j;
    }
}

/// A field name: unquoted or quoted.
fn field_name(i: In) -> PResult<Spanned<String>> {
    if let Ok(r) = string(i) {
        return Ok(r);
    }
    let start = offset(&i);
    let (i, text) = nom::bytes::complete::take_while1(|c| is_ident_char(c) || c == '.').parse(i)?;
    Ok((
        i,
        Spanned::new(
            text.fragment().to_string(),
            Span::new(start, start + text.len()),
        ),
    ))
}

fn edge(i: In) -> PResult<Edge> {
    let start = offset(&i);
    let (i, _) = char('|').parse(i)?;
    let pipe = Span::new(start, start + 1);
    let plain = Edge {
        pipe,
        grouping: None,
        fields: Vec::new(),
        bracket: None,
        settings: Vec::new(),
    };
    let (j, _) = wsnl(i)?;
    match bracket(j, plain.clone()) {
        Ok(r) => Ok(r),
        Err(nom::Err::Failure(e)) => Err(nom::Err::Failure(e)),
        Err(_) => Ok((i, plain)),
    }
}

fn pipeline(i: In) -> PResult<Statement> {
    let (mut i, first) = element(i)?;
    let mut rest = Vec::new();
    loop {
        let (j, _) = wsnl(i)?;
        let (j, e) = match edge(j) {
            Ok(r) => r,
            Err(nom::Err::Failure(e)) => return Err(nom::Err::Failure(e)),
            Err(_) => break,
        };
        let (j, _) = wsnl(j)?;
        let (j, target) = commit(element(j))?;
        rest.push((e, target));
        i = j;
    }
    Ok((i, Statement::Pipeline(first, rest)))
}

/// `name` or `config` followed by blanks and not by `=` or `|` (which would make it a component).
fn keyword<'a>(word: &'static str, i: In<'a>) -> Option<In<'a>> {
    let frag: &str = i.fragment();
    let after = frag.strip_prefix(word)?;
    if !after.starts_with([' ', '\t']) {
        return None;
    }
    let (j, _) = advance(i, word.len());
    let (j, _) = ws(j).ok()?;
    let next = j.fragment().chars().next()?;
    (!matches!(next, '=' | '|' | ';' | '\n' | '\r')).then_some(j)
}

pub(super) fn statement(i: In) -> PResult<Statement> {
    if let Some(j) = keyword("name", i) {
        let start = offset(&j);
        if let Ok((rest, s)) = string(j) {
            return Ok((rest, Statement::Name(s)));
        }
        let (rest, text) = commit(expect(
            "a topology name",
            nom::bytes::complete::take_while1(is_bare_char),
        )(j))?;
        let span = Span::new(start, start + text.len());
        return Ok((rest, Statement::Name(Spanned::new(text.to_string(), span))));
    }
    if let Some(j) = keyword("config", i) {
        let (mut j, first) = commit(expect("a setting `key=value`", setting)(j))?;
        let mut settings = vec![first];
        loop {
            let (k, _) = ws(j)?;
            match setting(k) {
                Ok((k, s)) => {
                    settings.push(s);
                    j = k;
                }
                Err(nom::Err::Failure(e)) => return Err(nom::Err::Failure(e)),
                Err(_) => break,
            }
        }
        return Ok((j, Statement::Config(settings)));
    }
    expect("a statement (`name`, `config` or a pipeline)", pipeline)(i)
}

/// After a statement: blanks, then `;`, a line end or the end of the text.
pub(super) fn statement_end(i: In) -> PResult<()> {
    let (i, _) = ws(i)?;
    match i.fragment().chars().next() {
        None => Ok((i, ())),
        Some(';' | '\n' | '\r') => Ok((advance(i, 1).0, ())),
        Some(_) => fail(&i, AFTER_ELEMENT),
    }
}
