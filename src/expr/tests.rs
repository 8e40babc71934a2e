//! Tests of checking and evaluating expressions: truth tables over typed values, located check
//! errors, and that no input makes the parser panic.

use super::{parse, Compiled};
use crate::tuple::Value;
use proptest::prelude::*;

fn fields(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn compiled(text: &str, names: &[&str]) -> Compiled {
    let expr = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    expr.compile(&fields(names))
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Evaluate over one field `x`.
fn on_x(text: &str, x: Value) -> bool {
    compiled(text, &["x"]).eval(&[x])
}

#[test]
fn spec_example() {
    let c = compiled(r#"word contains "ka" and not len(word) < 3"#, &["word"]);
    let truth: Vec<(&str, bool)> = ["kafka", "ka", "oak", "kale", "storm"]
        .into_iter()
        .map(|w| (w, c.eval(&[Value::str(w)])))
        .collect();
    assert_eq!(
        truth,
        [
            ("kafka", true),
            ("ka", false),
            ("oak", false),
            ("kale", true),
            ("storm", false)
        ]
    );
}

#[test]
fn numbers_compare_across_int_and_float() {
    let table = [
        ("x == 3", Value::Int(3), true),
        ("x == 3", Value::Float(3.0), true),
        ("x == 3.5", Value::Int(3), false),
        ("x < 3.5", Value::Int(3), true),
        ("x >= 3", Value::Float(2.999), false),
        ("x > -1", Value::Int(0), true),
        ("x <= 9007199254740993", Value::Int(9007199254740993), true),
        ("x < 9007199254740993", Value::Int(9007199254740992), true),
        ("x != 1", Value::Float(f64::NAN), true),
        ("x < 1", Value::Float(f64::NAN), false),
    ];
    for (text, x, want) in table {
        assert_eq!(on_x(text, x.clone()), want, "{text} with {x:?}");
    }
}

#[test]
fn mixed_kinds_never_match_and_never_panic() {
    let table = [
        ("x == \"3\"", Value::Int(3), false),
        ("x != \"3\"", Value::Int(3), true),
        ("x < \"b\"", Value::Int(1), false),
        ("x > 1", Value::str("zzz"), false),
        ("x contains \"a\"", Value::Int(1), false),
        ("x starts_with \"a\"", Value::Null, false),
        ("x =~ \"a\"", Value::Bool(true), false),
        ("len(x) > 0", Value::Int(5), false),
        ("x == null", Value::Null, true),
        ("x == null", Value::str(""), false),
        ("x", Value::Bool(true), true),
        ("x", Value::str("true"), false),
        ("x == true", Value::Bool(true), true),
    ];
    for (text, x, want) in table {
        assert_eq!(on_x(text, x.clone()), want, "{text} with {x:?}");
    }
}

#[test]
fn string_operators() {
    let table = [
        ("x contains \"or\"", "storm", true),
        ("x starts_with \"st\"", "storm", true),
        ("x ends_with \"st\"", "storm", false),
        ("x =~ \"^s.o\"", "storm", true),
        ("x =~ '\\d{2}$'", "a12", true),
        ("x < \"b\"", "abc", true),
        ("len(x) == 5", "héllo", true),
        ("x == 'it''s'", "it's", true),
        ("x == \"tab\\there\"", "tab\there", true),
    ];
    for (text, x, want) in table {
        assert_eq!(on_x(text, Value::str(x)), want, "{text} with {x:?}");
    }
}

#[test]
fn lists_have_length_and_membership() {
    let list = Value::List(Box::new(vec![Value::str("a"), Value::Int(2)]));
    assert!(on_x("len(x) == 2", list.clone()));
    assert!(on_x("x contains \"a\"", list.clone()));
    assert!(on_x("x contains 2.0", list.clone()));
    assert!(!on_x("x contains \"b\"", list));
}

#[test]
fn boolean_connectives_truth_table() {
    let c = compiled("a == 1 or b == 1 and not c == 1", &["a", "b", "c"]);
    for bits in 0..8u8 {
        let [a, b, cv] = [bits & 1, (bits >> 1) & 1, (bits >> 2) & 1].map(|v| v == 1);
        let values = [a, b, cv].map(|v| Value::Int(i64::from(v)));
        assert_eq!(c.eval(&values), a || (b && !cv), "a={a} b={b} c={cv}");
    }
}

#[test]
fn fields_bind_by_position_and_short_tuples_are_missing() {
    let c = compiled("count > 2 and word == \"a\"", &["word", "count"]);
    assert!(c.eval(&[Value::str("a"), Value::Int(3)]));
    assert!(!c.eval(&[Value::str("b"), Value::Int(3)]));
    assert!(!c.eval(&[Value::str("a")]));
}

fn check_report(text: &str, names: &[&str]) -> String {
    match parse(text) {
        Err(e) => format!("{text}\n  parse {}..{}: {e}", e.span.start, e.span.end),
        Ok(expr) => {
            let mut out = text.to_string();
            for e in expr.check(&fields(names)) {
                let under = text.get(e.span.clone()).unwrap_or("<bad span>");
                out += &format!("\n  {}..{} `{under}`: {e}", e.span.start, e.span.end);
            }
            out
        }
    }
}

#[test]
fn check_errors_are_located() {
    let cases: &[(&str, &[&str])] = &[
        ("wrod contains \"ka\"", &["word"]),
        ("count > 1", &["word"]),
        ("len(3) > 1", &["word"]),
        ("word =~ \"(unclosed\"", &["word"]),
        ("word =~ word", &["word"]),
        ("\"a\" < 3", &[]),
        ("word == 1 and 2", &["word"]),
        ("not \"x\"", &[]),
        ("3 contains \"x\"", &[]),
        ("word starts_with 1", &["word"]),
        ("true < false", &[]),
        ("len(word) == \"3\"", &["word"]),
    ];
    let out: Vec<String> = cases.iter().map(|(t, f)| check_report(t, f)).collect();
    insta::assert_snapshot!(out.join("\n"));
}

#[test]
fn compile_reports_the_first_problem() {
    let expr = parse("nope == 1 and len(3) > 1").unwrap_or_else(|e| panic!("{e}"));
    let err = expr
        .compile(&fields(&["word"]))
        .err()
        .map(|e| (e.span, e.message));
    assert_eq!(err, Some((0..4, "unknown field `nope`".to_string())));
}

/// Inputs built from the language's own tokens.
fn token_soup() -> impl Strategy<Value = String> {
    let token = prop::sample::select(vec![
        "word",
        "len",
        "(",
        ")",
        "and",
        "or",
        "not",
        "==",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
        "=~",
        "contains",
        "starts_with",
        "ends_with",
        "\"a\"",
        "'b'",
        "\"",
        "'",
        "`",
        "3",
        "-2.5",
        "1e",
        " ",
        "\\",
        "é",
        "true",
        "null",
        ".",
    ]);
    prop::collection::vec(token, 0..25).prop_map(|t| t.join(" "))
}

fn exercise(text: &str) {
    match parse(text) {
        Err(e) => {
            assert!(
                e.span.start <= e.span.end && e.span.end <= text.len(),
                "{e:?} in {text:?}"
            );
            assert!(text.is_char_boundary(e.span.start) && text.is_char_boundary(e.span.end));
        }
        Ok(expr) => {
            let names = fields(&["word", "x"]);
            for e in expr.check(&names) {
                assert!(e.span.end <= text.len(), "{e:?} in {text:?}");
            }
            if let Ok(c) = expr.compile(&names) {
                let _ = c.eval(&[Value::str("kafka"), Value::Int(3)]);
                let _ = c.eval(&[]);
            }
        }
    }
}

proptest! {
    #[test]
    fn random_text_never_panics(text in "\\PC{0,40}") {
        exercise(&text);
    }

    #[test]
    fn token_soup_never_panics(text in token_soup()) {
        exercise(&text);
    }

    #[test]
    fn mutated_example_never_panics(pos in 0usize..45, insert in "\\PC{0,3}", cut in 0usize..4) {
        let base = r#"word contains "ka" and not len(word) < 3"#;
        let mut pos = pos.min(base.len());
        while !base.is_char_boundary(pos) { pos -= 1; }
        let end = (pos + cut).min(base.len());
        exercise(&format!("{}{}{}", &base[..pos], insert, &base[end..]));
    }
}

#[test]
fn compiled_filters_can_be_shared_between_executor_threads() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<Compiled>();
    assert_send_sync::<super::Expr>();
}
