//! The expression parser (nom): `or` binds loosest, then `and`, then `not`, then one
//! comparison between two operands, as in Python (`not len(word) < 3` is `not (len(word) < 3)`);
//! an operand is arithmetic (`+ -`, tighter `* / %`, tighter unary `-`) over fields, literals,
//! function calls and parentheses.

use crate::recursion_guard::Level;
use nom::bytes::complete::{tag, take_while, take_while1};
use nom::character::complete::{char, satisfy};
use nom::combinator::{not, recognize};
use nom::{IResult, Input, Parser};
use std::ops::Range;

use super::ast::{ArithOp, CmpOp, Node, NodeKind, KEYWORDS};
use super::syntax_error::PErr;
use super::ExprError;
use super::In;

type PResult<'a, T> = IResult<In<'a>, T, PErr>;

fn offset(i: &In) -> usize {
    i.location_offset()
}

fn err<'a, T>(i: &In<'a>, what: &'static str) -> PResult<'a, T> {
    Err(nom::Err::Error(PErr::expected(offset(i), what)))
}

fn failure<'a, T>(e: PErr) -> PResult<'a, T> {
    Err(nom::Err::Failure(e))
}

/// Turn a recoverable error into a failure (nom's `cut`).
fn commit<T>(r: PResult<'_, T>) -> PResult<'_, T> {
    r.map_err(|e| match e {
        nom::Err::Error(e) => nom::Err::Failure(e),
        other => other,
    })
}

/// Relabel a plain failure at the starting point as "expected `what`".
fn expect<'a, O>(
    what: &'static str,
    mut parser: impl Parser<In<'a>, Output = O, Error = PErr>,
) -> impl FnMut(In<'a>) -> PResult<'a, O> {
    move |i: In<'a>| {
        let start = offset(&i);
        match parser.parse(i) {
            Err(nom::Err::Error(e)) if e.offset == start => {
                Err(nom::Err::Error(PErr::expected(start, what)))
            }
            other => other,
        }
    }
}

fn ws(i: In) -> PResult<()> {
    take_while(char::is_whitespace).map(|_| ()).parse(i)
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A keyword, not followed by a name character (`or` is not the start of `order`).
fn keyword<'a>(word: &'static str) -> impl FnMut(In<'a>) -> PResult<'a, Range<usize>> {
    move |i: In<'a>| {
        let start = offset(&i);
        let (i, _) = tag(word).parse(i)?;
        let (i, _) = not(satisfy(is_name_char)).parse(i)?;
        Ok((i, start..start + word.len()))
    }
}

fn node(kind: NodeKind, span: Range<usize>) -> Node {
    NODES.with(|n| n.set(n.get() + 1));
    Node { kind, span }
}

/// The failure for an expression of more than `MAX_NODES` parts, once it gets there.
fn too_many_nodes<'a>(i: &In<'a>) -> Option<PResult<'a, Node>> {
    if NODES.with(|n| n.get()) <= MAX_NODES {
        return None;
    }
    let at = offset(i);
    Some(failure(PErr::message(
        at..at,
        format!("expression of more than {MAX_NODES} parts"),
    )))
}

/// The depth of the tree, counted without recursion (a tree too deep to walk recursively is
/// what this guards against).
fn tree_depth(root: &Node) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root, 1)];
    while let Some((n, d)) = stack.pop() {
        deepest = deepest.max(d);
        let children: Vec<&Node> = match &n.kind {
            NodeKind::Len(x) | NodeKind::Not(x) | NodeKind::Neg(x) => vec![x],
            NodeKind::Compare(_, _, l, r)
            | NodeKind::And(l, r)
            | NodeKind::Or(l, r)
            | NodeKind::Arith(_, _, l, r) => vec![l, r],
            NodeKind::Call(_, _, args) => args.iter().collect(),
            _ => Vec::new(),
        };
        stack.extend(children.into_iter().map(|c| (c, d + 1)));
    }
    deepest
}

/// Parse a whole expression.
pub(crate) fn parse(text: &str) -> Result<Node, ExprError> {
    let i = In::new(text);
    NODES.with(|n| n.set(0));
    let result = (|| {
        let (i, _) = ws(i)?;
        let (i, root) = or_expr(i)?;
        let (i, _) = ws(i)?;
        if !i.fragment().is_empty() {
            return err(&i, "an operator, `and`, `or` or the end of the expression");
        }
        Ok((i, root))
    })();
    match result {
        Ok((_, root)) if tree_depth(&root) > MAX_TREE_DEPTH => Err(ExprError {
            span: root.span.clone(),
            message: format!(
                "expression nested more than {MAX_TREE_DEPTH} levels deep, counting each \
                 operator of a chain"
            ),
            help: Some("split it over several components, or shorten the chains".into()),
        }),
        Ok((_, root)) => Ok(root),
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(e.into_expr_error(text)),
        Err(nom::Err::Incomplete(_)) => {
            Err(PErr::expected(text.len(), "more").into_expr_error(text))
        }
    }
}

/// `a or b or c`, left-associative; likewise `and`.
fn binary<'a>(
    i: In<'a>,
    word: &'static str,
    operand: fn(In<'a>) -> PResult<'a, Node>,
    make: fn(Box<Node>, Box<Node>) -> NodeKind,
) -> PResult<'a, Node> {
    let (mut i, mut left) = operand(i)?;
    for _ in 0..MAX_CHAIN {
        if let Some(e) = too_many_nodes(&i) {
            return e;
        }
        let Ok((j, _)) = (ws, keyword(word), ws).parse(i) else {
            return Ok((i, left));
        };
        let (j, right) = commit(operand(j))?;
        let span = left.span.start..right.span.end;
        left = node(make(Box::new(left), Box::new(right)), span);
        i = j;
    }
    let at = offset(&i);
    failure(PErr::message(
        at..at,
        format!("more than {MAX_CHAIN} `{word}` in a row"),
    ))
}

fn or_expr(i: In) -> PResult<Node> {
    binary(i, "or", and_expr, NodeKind::Or)
}

fn and_expr(i: In) -> PResult<Node> {
    binary(i, "and", not_expr, NodeKind::And)
}

/// How deeply parentheses, `len(…)` and `not` may nest, and how long an `and`/`or` chain may
/// be: bounds the recursion of parsing, checking and evaluation.
const MAX_DEPTH: usize = 64;
const MAX_CHAIN: usize = 1000;
/// Bounds on the whole tree, chains included: its parts (so a rejected tree is small enough
/// to drop) and its depth (so checking, evaluating and printing it recurse safely).
const MAX_NODES: usize = 5000;
const MAX_TREE_DEPTH: usize = 512;

thread_local! {
    static DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    static NODES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One level of nesting, or the error for going deeper than `MAX_DEPTH`.
fn nesting(i: &In) -> Result<Level, nom::Err<PErr>> {
    Level::enter(&DEPTH, MAX_DEPTH).ok_or_else(|| {
        let at = offset(i);
        nom::Err::Failure(PErr::message(
            at..at + i.fragment().chars().next().map_or(0, char::len_utf8),
            format!("expression nested more than {MAX_DEPTH} levels deep"),
        ))
    })
}

fn not_expr(i: In) -> PResult<Node> {
    let _level = nesting(&i)?;
    if let Ok((j, kw)) = (keyword("not"), ws).parse(i).map(|(j, (kw, _))| (j, kw)) {
        let (j, inner) = commit(not_expr(j))?;
        let span = kw.start..inner.span.end;
        return Ok((j, node(NodeKind::Not(Box::new(inner)), span)));
    }
    comparison(i)
}

fn cmp_op(i: In) -> PResult<(CmpOp, Range<usize>)> {
    let start = offset(&i);
    for (symbol, op) in CmpOp::ALL {
        let first = symbol.chars().next().unwrap_or(' ');
        let r = if first.is_ascii_alphabetic() {
            keyword(symbol)(i).map(|(j, _)| j)
        } else {
            tag::<_, _, PErr>(*symbol).parse(i).map(|(j, _)| j)
        };
        if let Ok(j) = r {
            return Ok((j, (*op, start..start + symbol.len())));
        }
    }
    err(&i, "an operator")
}

fn comparison(i: In) -> PResult<Node> {
    let (i, left) = additive(i)?;
    let Ok((j, (op, op_span))) = (ws, cmp_op).parse(i).map(|(j, (_, o))| (j, o)) else {
        return Ok((i, left));
    };
    let (j, _) = ws(j)?;
    let (j, right) = commit(additive(j))?;
    if let Ok((_, (_, (_, again)))) = (ws, cmp_op).parse(j) {
        return failure(PErr::message(
            again,
            "comparisons do not chain: join them with `and`",
        ));
    }
    let span = left.span.start..right.span.end;
    Ok((
        j,
        node(
            NodeKind::Compare(op, op_span, Box::new(left), Box::new(right)),
            span,
        ),
    ))
}

/// `a + b - c`, left-associative, over `term`s.
fn additive(i: In) -> PResult<Node> {
    arithmetic(i, &[("+", ArithOp::Add), ("-", ArithOp::Sub)], term)
}

/// `a * b / c // d % e`, left-associative, over `unary`s.
fn term(i: In) -> PResult<Node> {
    arithmetic(
        i,
        &[
            ("*", ArithOp::Mul),
            // Before `/`, of which it is the longer form.
            ("//", ArithOp::FloorDiv),
            ("/", ArithOp::Div),
            ("%", ArithOp::Rem),
        ],
        unary,
    )
}

/// A left-associative chain of `next` joined by any of `ops` (bounded like `and`/`or`).
fn arithmetic<'a>(
    i: In<'a>,
    ops: &[(&str, ArithOp)],
    next: fn(In<'a>) -> PResult<'a, Node>,
) -> PResult<'a, Node> {
    let (mut i, mut left) = next(i)?;
    for _ in 0..MAX_CHAIN {
        if let Some(e) = too_many_nodes(&i) {
            return e;
        }
        let (j, _) = ws(i)?;
        let at = offset(&j);
        let Some(&(symbol, op)) = ops.iter().find(|(s, _)| j.fragment().starts_with(*s)) else {
            return Ok((i, left));
        };
        let (j, _) = j.take_split(symbol.len());
        let (j, _) = ws(j)?;
        let (j, right) = commit(next(j))?;
        let span = left.span.start..right.span.end;
        left = node(
            NodeKind::Arith(op, at..at + symbol.len(), Box::new(left), Box::new(right)),
            span,
        );
        i = j;
    }
    let at = offset(&i);
    failure(PErr::message(
        at..at,
        format!("more than {MAX_CHAIN} arithmetic operators in a row"),
    ))
}

/// `-x` (a minus before a digit is part of the number literal).
fn unary(i: In) -> PResult<Node> {
    let mut chars = i.fragment().chars();
    if chars.next() == Some('-') && !chars.next().is_some_and(|c| c.is_ascii_digit() || c == '.') {
        let _level = nesting(&i)?;
        let start = offset(&i);
        let (j, _) = i.take_split(1);
        let (j, _) = ws(j)?;
        let (j, inner) = commit(unary(j))?;
        let span = start..inner.span.end;
        return Ok((j, node(NodeKind::Neg(Box::new(inner)), span)));
    }
    operand(i)
}

fn operand<'a>(i: In<'a>) -> PResult<'a, Node> {
    expect(
        "an operand (a field, a string, a number, `len(…)`, `not` or `(`)",
        |i: In<'a>| {
            let c = i.fragment().chars().next();
            match c {
                Some('(') => parenthesised(i),
                Some('"') | Some('\'') => string(i),
                Some('`') => quoted_field(i),
                Some(c) if c.is_ascii_digit() || c == '-' || c == '.' => number(i),
                _ => word(i),
            }
        },
    )(i)
}

fn parenthesised(i: In) -> PResult<Node> {
    let start = offset(&i);
    let (i, _) = char('(').parse(i)?;
    let (i, _) = ws(i)?;
    let (i, mut inner) = commit(or_expr(i))?;
    let (i, _) = ws(i)?;
    let (i, _) = commit(expect("`)`", char(')'))(i))?;
    inner.span = start..offset(&i);
    Ok((i, inner))
}

/// A field name, `len(…)`, or a keyword literal.
fn word(i: In) -> PResult<Node> {
    let start = offset(&i);
    let (j, name) = recognize((
        satisfy(|c: char| c.is_ascii_alphabetic() || c == '_'),
        take_while(is_name_char),
    ))
    .parse(i)?;
    let name: &str = name.fragment();
    let span = start..start + name.len();
    match name {
        "true" => return Ok((j, node(NodeKind::Bool(true), span))),
        "false" => return Ok((j, node(NodeKind::Bool(false), span))),
        "null" => return Ok((j, node(NodeKind::Null, span))),
        "not" => return not_expr(i),
        "contains" | "starts_with" | "ends_with" if opens_call(j) => {}
        _ if KEYWORDS.contains(&name) => return err(&i, "an operand"),
        _ => {}
    }
    if name == "len" {
        if let Ok((k, _)) = (ws, char::<In, PErr>('(')).parse(j) {
            let (k, _) = ws(k)?;
            let (k, arg) = commit(or_expr(k))?;
            let (k, _) = ws(k)?;
            let (k, _) = commit(expect("`)`", char(')'))(k))?;
            let span = start..offset(&k);
            return Ok((k, node(NodeKind::Len(Box::new(arg)), span)));
        }
    }
    if opens_call(j) {
        return call(j, name, span);
    }
    Ok((j, node(NodeKind::Field(name.to_string()), span)))
}

/// Whether a `(` follows: the word before it names a function.
fn opens_call(i: In) -> bool {
    (ws, char::<In, PErr>('(')).parse(i).is_ok()
}

/// The arguments of a call to `name` (written at `name_span`): `(a, b, …)`.
fn call<'a>(i: In<'a>, name: &str, name_span: Range<usize>) -> PResult<'a, Node> {
    let _level = nesting(&i)?;
    let (mut i, _) = (ws, char('(')).parse(i)?;
    let mut args = Vec::new();
    for _ in 0..MAX_CHAIN {
        if let Some(e) = too_many_nodes(&i) {
            return e;
        }
        let (j, _) = ws(i)?;
        if args.is_empty() {
            if let Ok((k, _)) = char::<In, PErr>(')').parse(j) {
                return Ok((k, call_node(name, name_span, args, &k)));
            }
        }
        let (j, arg) = commit(or_expr(j))?;
        args.push(arg);
        let (j, _) = ws(j)?;
        if let Ok((k, _)) = char::<In, PErr>(')').parse(j) {
            return Ok((k, call_node(name, name_span, args, &k)));
        }
        let (j, _) = commit(expect("`,` or `)`", char(','))(j))?;
        i = j;
    }
    let at = offset(&i);
    failure(PErr::message(
        at..at,
        format!("more than {MAX_CHAIN} arguments"),
    ))
}

fn call_node(name: &str, name_span: Range<usize>, args: Vec<Node>, end: &In) -> Node {
    let span = name_span.start..offset(end);
    node(NodeKind::Call(name.to_string(), name_span, args), span)
}

/// `` `any name` ``: a field whose name is not a plain word.
fn quoted_field(i: In) -> PResult<Node> {
    let start = offset(&i);
    let (j, _) = char('`').parse(i)?;
    let (j, name) = take_while(|c| c != '`').parse(j)?;
    let (j, _) = match char::<In, PErr>('`').parse(j) {
        Ok(r) => r,
        Err(_) => {
            return failure(PErr::message(
                start..start + 1,
                "unterminated field name: no closing '`'",
            ))
        }
    };
    let span = start..offset(&j);
    Ok((j, node(NodeKind::Field(name.fragment().to_string()), span)))
}

fn number(i: In) -> PResult<Node> {
    let start = offset(&i);
    let (j, text) =
        take_while1(|c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'))
            .parse(i)?;
    let text: &str = text.fragment();
    // Only `e+`/`e-` may carry a sign after the first character.
    let mut len = text.len();
    for (k, c) in text.char_indices().skip(1) {
        if matches!(c, '-' | '+') && !text[..k].ends_with(['e', 'E']) {
            len = k;
            break;
        }
    }
    let text = &text[..len];
    let (j, _) = if len < j.location_offset() - start {
        i.take_split(len)
    } else {
        (j, i)
    };
    let span = start..start + len;
    if let Ok(n) = text.parse::<i64>() {
        return Ok((j, node(NodeKind::Int(n), span)));
    }
    let numeric = text
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'));
    match text.parse::<f64>() {
        Ok(x) if numeric && x.is_finite() => Ok((j, node(NodeKind::Float(x), span))),
        _ => match duration_ms(text) {
            Some(ms) => Ok((j, node(NodeKind::Duration(ms), span))),
            None => failure(PErr::message(span, format!("`{text}` is not a number"))),
        },
    }
}

/// A duration literal (`250ms`, `1s`, `5m`, `1h`, `1d`) in milliseconds.
pub(super) fn duration_ms(text: &str) -> Option<i64> {
    let digits = text.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = text.split_at(digits);
    let scale = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.parse::<i64>().ok()?.checked_mul(scale)
}

/// A string literal: double-quoted with escapes, or single-quoted (`''` for a quote).
fn string(i: In) -> PResult<Node> {
    let start = offset(&i);
    let frag: &str = i.fragment();
    let Some(quote) = frag.chars().next().filter(|c| *c == '"' || *c == '\'') else {
        return err(&i, "a string");
    };
    let mut out = String::new();
    let mut chars = frag.char_indices().skip(1).peekable();
    while let Some((k, c)) = chars.next() {
        if c == quote {
            if quote == '\'' && chars.peek().is_some_and(|(_, n)| *n == '\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            let (rest, _) = i.take_split(k + 1);
            return Ok((rest, node(NodeKind::Str(out), start..start + k + 1)));
        }
        if c == '\\' && quote == '"' {
            let Some((j, e)) = chars.next() else { break };
            let decoded = match e {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                '0' => '\0',
                '"' | '\\' | '/' | '\'' => e,
                // Regex escapes pass through, so `=~ "\d+"` means what it says.
                other => {
                    out.push('\\');
                    other
                }
            };
            let _ = j;
            out.push(decoded);
            continue;
        }
        out.push(c);
    }
    failure(PErr::message(
        start..start + 1,
        format!("unterminated string: no closing `{quote}`"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        match parse(text) {
            Ok(n) => n.to_string(),
            Err(e) => format!("{}: {}", e.span.start, e.message),
        }
    }

    #[test]
    fn precedence_is_or_and_not_comparison() {
        assert_eq!(
            shown(r#"word contains "ka" and not len(word) < 3"#),
            r#"((word contains "ka") and (not (len(word) < 3)))"#
        );
        assert_eq!(
            shown("a == 1 or b == 2 and c == 3"),
            "((a == 1) or ((b == 2) and (c == 3)))"
        );
        assert_eq!(shown("not not a"), "(not (not a))");
        assert_eq!(shown("(a or b) and c"), "((a or b) and c)");
        assert_eq!(shown("order or android"), "(order or android)");
        assert_eq!(
            shown("x >= -2.5e3 and y != 'it''s'"),
            r#"((x >= -2500.0) and (y != "it's"))"#
        );
        assert_eq!(
            shown("`my field` starts_with \"a\""),
            r#"(`my field` starts_with "a")"#
        );
    }

    #[test]
    fn spans_cover_what_was_written() {
        let Ok(n) = parse(" len(w) > 3 ") else {
            panic!("parses")
        };
        assert_eq!(n.span, 1..11);
        let NodeKind::Compare(_, op, l, r) = n.kind else {
            panic!("a comparison")
        };
        assert_eq!((op, l.span, r.span), (8..9, 1..7, 10..11));
    }

    #[test]
    fn regex_escapes_are_kept() {
        let Ok(n) = parse(r#"w =~ "^\d+\.x$""#) else {
            panic!("parses")
        };
        let NodeKind::Compare(_, _, _, r) = n.kind else {
            panic!("a comparison")
        };
        assert_eq!(r.kind, NodeKind::Str(r"^\d+\.x$".to_string()));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("{}a{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(shown(&deep).contains("nested more than 64 levels"));
        let nots = "not ".repeat(100_000) + "a";
        assert!(shown(&nots).contains("nested more than 64 levels"));
        let chain = vec!["a == 1"; 5000].join(" and ");
        assert!(shown(&chain).contains("more than 1000 `and` in a row"));
        let ok = vec!["a == 1"; 500].join(" or ");
        assert!(parse(&ok).is_ok());
        // Chains inside chains: bounded as a whole, however they nest.
        let mut nested = "x".to_string();
        for _ in 0..60 {
            nested = format!("({nested}{})", " + 1".repeat(999));
        }
        assert!(shown(&nested).contains("more than 5000 parts"));
        let mut nested = "x".to_string();
        for _ in 0..6 {
            nested = format!("({nested}{})", " + 1".repeat(99));
        }
        assert!(shown(&nested).contains("nested more than 512 levels deep"));
        // The depth counter is released after an error.
        assert!(parse("((a))").is_ok());
    }

    #[test]
    fn syntax_errors() {
        let cases = [
            "",
            "word ==",
            "word == 1 2",
            "(a == 1",
            "len(word",
            "a and or b",
            "\"abc",
            "a < 1.2.3",
            "word contain \"x\"",
            "a == 1 == 2",
            "`oops",
            "!",
        ];
        let out: Vec<String> = cases
            .iter()
            .map(|c| format!("{c:?} -> {}", shown(c)))
            .collect();
        insta::assert_snapshot!(out.join("\n"));
    }
}
