//! Tests of value expressions (`map`'s `set`, computed filter operands): each operator and
//! function with its edge cases, the typed checker's messages, and a property test against a
//! small reference evaluator written here, independently of `calc`.

use super::{parse, Type};
use crate::tuple::Value;
use proptest::prelude::*;

fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

/// Evaluate `text` as a value over fields `x`, `y`, `s` with these values.
fn eval_with(text: &str, x: Value, y: Value, s: Value) -> Value {
    let expr = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let c = expr
        .compile_value(&names(&["x", "y", "s"]))
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    c.eval(&[x, y, s])
}

fn ev(text: &str) -> Value {
    eval_with(
        text,
        Value::Int(7),
        Value::Float(2.5),
        Value::str("Hello World"),
    )
}

fn s(text: &str) -> Value {
    Value::str(text)
}

fn table(cases: &[(&str, Value)]) {
    for (text, want) in cases {
        let got = ev(text);
        assert!(same(&got, want), "{text}: got {got:?}, want {want:?}");
    }
}

#[test]
fn arithmetic_precedence_and_types() {
    table(&[
        ("1 + 2 * 3", Value::Int(7)),
        ("(1 + 2) * 3", Value::Int(9)),
        ("10 - 4 - 3", Value::Int(3)),
        ("x / 2", Value::Float(3.5)),
        ("-x / 2", Value::Float(-3.5)),
        ("6 / 3", Value::Float(2.0)),
        ("x // 2", Value::Int(3)),
        ("-x // 2", Value::Int(-4)),
        ("x // -2", Value::Int(-4)),
        ("x // 2.0", Value::Float(3.0)),
        ("-7.5 // 2", Value::Float(-4.0)),
        ("x % 4", Value::Int(3)),
        ("-7 % 4", Value::Int(1)),
        ("7 % -4", Value::Int(-1)),
        ("-7.5 % 2", Value::Float(0.5)),
        ("x // 2 * 2 + x % 2", Value::Int(7)),
        ("x * y", Value::Float(17.5)),
        ("x / 2.0", Value::Float(3.5)),
        ("-y", Value::Float(-2.5)),
        ("- -x", Value::Int(7)),
        ("2-1", Value::Int(1)),
        ("x+1 > 7", Value::Bool(true)),
    ]);
}

#[test]
fn arithmetic_edge_cases_are_null_not_panics() {
    table(&[
        ("x / 0", Value::Null),
        ("x // 0", Value::Null),
        ("x % 0", Value::Null),
        ("x / 0.0", Value::Null),
        ("y // 0.0", Value::Null),
        ("y % -0.0", Value::Null),
        ("9223372036854775807 + 1", Value::Null),
        ("-9223372036854775807 - 2", Value::Null),
        ("4611686018427387904 * 2", Value::Null),
        ("-9223372036854775807 - 1", Value::Int(i64::MIN)),
        ("(-9223372036854775807 - 1) // -1", Value::Null),
        (
            "(-9223372036854775807 - 1) / -1",
            Value::Float(9.223_372_036_854_776e18),
        ),
        ("(-9223372036854775807 - 1) % -1", Value::Int(0)),
        ("-(-9223372036854775807 - 1)", Value::Null),
        ("1e308 * 10", Value::Null),
        ("null + 1", Value::Null),
        ("x + null", Value::Null),
    ]);
    // A string at run time (an untyped field) is not a number either.
    assert_eq!(
        eval_with("x + 1", s("3"), Value::Null, Value::Null),
        Value::Null
    );
}

#[test]
fn string_functions() {
    table(&[
        ("lower(s)", s("hello world")),
        ("upper(s)", s("HELLO WORLD")),
        ("trim(\"  a b \")", s("a b")),
        ("len(s)", Value::Int(11)),
        ("substr(s, 1, 5)", s("Hello")),
        ("substr(s, 7)", s("World")),
        ("substr(s, 0, 3)", s("He")),
        ("substr(s, 20)", s("")),
        ("substr(s, 2, -1)", Value::Null),
        ("substr(\"héllo\", 2, 2)", s("él")),
        ("replace(s, \"o\", \"0\")", s("Hell0 W0rld")),
        ("replace(s, \"\", \"x\")", s("Hello World")),
        ("split_part(\"a,b,,c\", \",\", 2)", s("b")),
        ("split_part(\"a,b,,c\", \",\", 3)", s("")),
        ("split_part(\"a,b,,c\", \",\", 9)", s("")),
        ("split_part(\"a,b,,c\", \",\", -1)", s("c")),
        ("split_part(\"a,b,,c\", \",\", -9)", s("")),
        ("split_part(\"a,b\", \",\", 0)", Value::Null),
        ("split_part(\"a,b\", \"\", 1)", s("a,b")),
        ("concat(s, \"!\", x, null, y)", s("Hello World!72.5")),
        ("starts_with(s, \"Hell\")", Value::Bool(true)),
        ("ends_with(s, \"x\")", Value::Bool(false)),
        ("contains(s, \"o W\")", Value::Bool(true)),
        ("lower(null)", Value::Null),
    ]);
}

#[test]
fn capture_takes_a_named_group() {
    table(&[
        (
            r#"capture(s, "(?P<first>\w+) (?P<second>\w+)", "second")"#,
            s("World"),
        ),
        (r#"capture(s, "(?P<n>\d+)", "n")"#, Value::Null),
        (r#"capture(s, "(?P<a>x)?H", "a")"#, Value::Null),
        (r#"capture(null, "(?P<a>x)", "a")"#, Value::Null),
    ]);
}

#[test]
fn casts() {
    table(&[
        ("int(\" 42 \")", Value::Int(42)),
        ("int(\"4x\")", Value::Null),
        ("int(\"3.5\")", Value::Null),
        ("int(y)", Value::Int(2)),
        ("int(-2.9)", Value::Int(-2)),
        ("int(1e300)", Value::Null),
        ("int(true)", Value::Int(1)),
        ("int(null)", Value::Null),
        ("float(\"2.5\")", Value::Float(2.5)),
        ("float(\"nan\")", Value::Null),
        ("float(x)", Value::Float(7.0)),
        ("str(x)", s("7")),
        ("str(y)", s("2.5")),
        ("str(null)", Value::Null),
        ("bool(\"TRUE\")", Value::Bool(true)),
        ("bool(\"0\")", Value::Bool(false)),
        ("bool(\"maybe\")", Value::Null),
        ("bool(x)", Value::Bool(true)),
    ]);
}

#[test]
fn null_handling() {
    table(&[
        ("coalesce(null, null, x)", Value::Int(7)),
        ("coalesce(null)", Value::Null),
        ("if(x > 5, \"big\", \"small\")", s("big")),
        ("if(x > 50, \"big\", \"small\")", s("small")),
        ("if(null, 1, 2)", Value::Int(2)),
        ("is_null(null)", Value::Bool(true)),
        ("is_null(x)", Value::Bool(false)),
        ("is_null(x / 0)", Value::Bool(true)),
    ]);
}

#[test]
fn time_functions() {
    table(&[
        (
            "parse_time(\"2026-11-02T08:01:30Z\")",
            Value::Int(1_793_606_490_000),
        ),
        (
            "parse_time(\"2026-11-02T09:01:30.250+01:00\")",
            Value::Int(1_793_606_490_250),
        ),
        ("parse_time(\"yesterday\")", Value::Null),
        (
            "parse_time(\"02/Nov/2026:08:01:30 +0000\", \"%d/%b/%Y:%H:%M:%S %z\")",
            Value::Int(1_793_606_490_000),
        ),
        (
            "parse_time(\"2026-11-02 08:01\", \"%Y-%m-%d %H:%M\")",
            Value::Int(1_793_606_460_000),
        ),
        ("parse_time(\"2026-11-02\", \"%H:%M\")", Value::Null),
        (
            "format_time(1793606490250, \"%Y-%m-%dT%H:%M:%S%.3fZ\")",
            s("2026-11-02T08:01:30.250Z"),
        ),
        ("format_time(0, \"%F %T\")", s("1970-01-01 00:00:00")),
        ("format_time(s, \"%F\")", Value::Null),
        (
            "trunc_time(1793606490250, 1m)",
            Value::Int(1_793_606_460_000),
        ),
        (
            "trunc_time(1793606490250, 1h)",
            Value::Int(1_793_606_400_000),
        ),
        ("trunc_time(-1, 1s)", Value::Int(-1000)),
        ("trunc_time(null, 1d)", Value::Null),
    ]);
}

#[test]
fn filters_use_functions_and_arithmetic() {
    let expr = parse("lower(w) == \"kafka\" and n * 2 >= 10").unwrap_or_else(|e| panic!("{e}"));
    let c = expr
        .compile(&names(&["w", "n"]))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(c.eval(&[s("KafKa"), Value::Int(5)]));
    assert!(!c.eval(&[s("KafKa"), Value::Int(4)]));
    assert!(!c.eval(&[s("storm"), Value::Int(9)]));
    assert!(!c.eval(&[s("kafka")]));
}

/// Problems found when checking `text` as a value over typed fields.
fn typed_report(text: &str, fields: &[(&str, Type)]) -> String {
    let n: Vec<String> = fields.iter().map(|(f, _)| f.to_string()).collect();
    let t: Vec<Type> = fields.iter().map(|(_, t)| *t).collect();
    let mut out = text.to_string();
    match parse(text) {
        Err(e) => out += &format!("\n  parse {}..{}: {e}", e.span.start, e.span.end),
        Ok(expr) => {
            let (ty, errors) = expr.check_value(Some(&n), &t);
            out += &format!(" : {}", ty.name());
            for e in errors {
                let under = text.get(e.span.clone()).unwrap_or("<bad span>");
                out += &format!("\n  {}..{} `{under}`: {e}", e.span.start, e.span.end);
            }
        }
    }
    out
}

#[test]
fn type_errors() {
    use Type::*;
    let f: &[(&str, Type)] = &[("status", Str), ("code", Int), ("ms", Float), ("raw", Any)];
    let cases = [
        "status >= 500",
        "code >= 500",
        "int(status) >= 500",
        "raw >= 500",
        "code == \"7\"",
        "status + 1",
        "\"a\" + \"b\"",
        "code * ms",
        "code / 2",
        "-status",
        "lower(code)",
        "substr(status, ms)",
        "if(status, 1, 2)",
        "if(code > 1, 1, 2.5)",
        "coalesce(raw, 0)",
        "nope(code)",
        "lowr(status)",
        "substr(status)",
        "capture(status, \"(\", \"x\")",
        "capture(status, status, \"x\")",
        "parse_time(status, \"%Y-%\")",
        "format_time(code, ms)",
        "trunc_time(code, 5)",
        "trunc_time(code, 0s)",
        "parse_time(status)",
    ];
    let out: Vec<String> = cases.iter().map(|c| typed_report(c, f)).collect();
    insta::assert_snapshot!(out.join("\n"));
}

/// A random expression and what it should evaluate to, computed by a reference evaluator
/// that knows nothing of `calc`: integers in i128 (so overflow is visible), floats as f64.
#[derive(Debug, Clone)]
enum Ref {
    Field(usize),
    Int(i64),
    Float(f64),
    Str(String),
    Null,
    Arith(char, Box<Ref>, Box<Ref>),
    Neg(Box<Ref>),
    Lower(Box<Ref>),
    Len(Box<Ref>),
    Coalesce(Box<Ref>, Box<Ref>),
    IntCast(Box<Ref>),
}

impl Ref {
    fn text(&self) -> String {
        match self {
            Ref::Field(k) => ["a", "b", "c"][*k].to_string(),
            Ref::Int(n) => format!("({n})"),
            Ref::Float(x) => format!("({x:?})"),
            Ref::Str(s) => format!("{s:?}"),
            Ref::Null => "null".into(),
            // `f` stands for `//` (one character, like the others).
            Ref::Arith('f', l, r) => format!("({} // {})", l.text(), r.text()),
            Ref::Arith(op, l, r) => format!("({} {op} {})", l.text(), r.text()),
            Ref::Neg(x) => format!("(-{})", x.text()),
            Ref::Lower(x) => format!("lower({})", x.text()),
            Ref::Len(x) => format!("len({})", x.text()),
            Ref::Coalesce(a, b) => format!("coalesce({}, {})", a.text(), b.text()),
            Ref::IntCast(x) => format!("int({})", x.text()),
        }
    }

    fn eval(&self, fields: &[Value]) -> Value {
        match self {
            Ref::Field(k) => fields[*k].clone(),
            Ref::Int(n) => Value::Int(*n),
            Ref::Float(x) => Value::Float(*x),
            Ref::Str(s) => Value::str(s),
            Ref::Null => Value::Null,
            Ref::Arith(op, l, r) => reference_arith(*op, l.eval(fields), r.eval(fields)),
            Ref::Neg(x) => reference_arith('-', Value::Int(0), x.eval(fields)),
            Ref::Lower(x) => match x.eval(fields) {
                Value::Str(s) => Value::str(&s.to_lowercase()),
                _ => Value::Null,
            },
            Ref::Len(x) => match x.eval(fields) {
                Value::Str(s) => Value::Int(s.chars().count() as i64),
                _ => Value::Null,
            },
            Ref::Coalesce(a, b) => match a.eval(fields) {
                Value::Null => b.eval(fields),
                v => v,
            },
            Ref::IntCast(x) => match x.eval(fields) {
                Value::Int(n) => Value::Int(n),
                // `as i128` saturates, far outside i64: the range check is `try_from`'s.
                Value::Float(f) if f.is_finite() => {
                    i64::try_from(f.trunc() as i128).map_or(Value::Null, Value::Int)
                }
                Value::Str(s) => s.trim().parse::<i64>().map_or(Value::Null, Value::Int),
                _ => Value::Null,
            },
        }
    }
}

/// Arithmetic as the language defines it (Python's), computed the long way: integers in
/// `i128`, `/` of integers as the decimal expansion of the exact quotient read back as a
/// float, `//` and `%` of floats as Python's `divmod` defines them (`f` is `//`).
fn reference_arith(op: char, l: Value, r: Value) -> Value {
    let float = |v: &Value| match v {
        Value::Int(n) => Some(*n as f64),
        Value::Float(x) => Some(*x),
        _ => None,
    };
    match (&l, &r) {
        (Value::Int(a), Value::Int(b)) if op == '/' => {
            if *b == 0 {
                Value::Null
            } else {
                Value::Float(decimal_quotient(*a, *b))
            }
        }
        (Value::Int(a), Value::Int(b)) => {
            let (a, b) = (i128::from(*a), i128::from(*b));
            // floor(a / b) with a positive divisor: a less its Euclidean remainder, divided.
            let floored = || {
                let (a, b) = if b < 0 { (-a, -b) } else { (a, b) };
                (a - a.rem_euclid(b)) / b
            };
            let exact = match op {
                '+' => Some(a + b),
                '-' => Some(a - b),
                '*' => Some(a * b),
                'f' => (b != 0).then(floored),
                _ => (b != 0).then(|| a - b * floored()),
            };
            exact
                .and_then(|n| i64::try_from(n).ok())
                .map_or(Value::Null, Value::Int)
        }
        _ => match (float(&l), float(&r)) {
            (Some(a), Some(b)) => {
                let x = match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    '/' if b == 0.0 => f64::NAN,
                    '/' => a / b,
                    'f' => python_divmod(a, b).0,
                    _ => python_divmod(a, b).1,
                };
                if x.is_finite() {
                    Value::Float(x)
                } else {
                    Value::Null
                }
            }
            _ => Value::Null,
        },
    }
}

/// Python's `divmod` on floats (its documented definition): NaN for a zero divisor.
fn python_divmod(a: f64, b: f64) -> (f64, f64) {
    if b == 0.0 {
        return (f64::NAN, f64::NAN);
    }
    let mut m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = 0.0f64.copysign(b);
    }
    let floordiv = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        0.0f64.copysign(a / b)
    };
    (floordiv, m)
}

/// `a / b` (b not 0) to 400 significant decimal digits by long division, a final `1` if
/// anything is left (so a near-tie is not read as a tie), parsed by Rust's correctly rounding
/// float parser.
fn decimal_quotient(a: i64, b: i64) -> f64 {
    let (mut rest, b_abs) = (u128::from(a.unsigned_abs()), u128::from(b.unsigned_abs()));
    let whole = rest / b_abs;
    rest %= b_abs;
    let mut text = format!("{}{whole}.", if (a < 0) != (b < 0) { "-" } else { "" });
    for _ in 0..400 {
        rest *= 10;
        text.push(char::from(b'0' + (rest / b_abs) as u8));
        rest %= b_abs;
    }
    if rest != 0 {
        text.push('1');
    }
    text.parse().unwrap_or(f64::NAN)
}

fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        prop_oneof![
            Just(0i64),
            Just(-1),
            Just(i64::MAX),
            Just(i64::MIN),
            any::<i64>(),
            -5i64..5
        ]
        .prop_map(Value::Int),
        prop_oneof![Just(0.0f64), Just(-0.5), Just(1e308), -1e3f64..1e3].prop_map(Value::Float),
        prop_oneof![
            Just("".to_string()),
            Just("AbC".to_string()),
            Just(" 12 ".to_string()),
            "[a-zA-Z0-9 é]{0,6}"
        ]
        .prop_map(|s| Value::str(&s)),
    ]
}

fn any_ref() -> impl Strategy<Value = Ref> {
    let leaf = prop_oneof![
        (0usize..3).prop_map(Ref::Field),
        prop_oneof![Just(0i64), Just(i64::MAX), -3i64..3].prop_map(Ref::Int),
        prop_oneof![Just(0.0f64), Just(2.5)].prop_map(Ref::Float),
        "[a-zA-Z]{0,3}".prop_map(Ref::Str),
        Just(Ref::Null),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        let b = |x: Ref| Box::new(x);
        prop_oneof![
            (
                prop::sample::select(vec!['+', '-', '*', '/', 'f', '%']),
                inner.clone(),
                inner.clone()
            )
                .prop_map(move |(op, l, r)| Ref::Arith(op, b(l), b(r))),
            inner.clone().prop_map(move |x| Ref::Neg(b(x))),
            inner.clone().prop_map(move |x| Ref::Lower(b(x))),
            inner.clone().prop_map(move |x| Ref::Len(b(x))),
            inner.clone().prop_map(move |x| Ref::IntCast(b(x))),
            (inner.clone(), inner).prop_map(move |(x, y)| Ref::Coalesce(b(x), b(y))),
        ]
    })
}

/// The same value of the same type: `Value`'s `==` says `1 == 1.0`, which is not what these
/// tests check. Floats as `==` on floats (`-0.0` is `0.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::Int(_), Value::Float(_)) | (Value::Float(_), Value::Int(_)) => false,
        _ => a == b,
    }
}

proptest! {
    #[test]
    fn evaluator_agrees_with_the_reference(
        e in any_ref(),
        fields in prop::collection::vec(any_value(), 3),
    ) {
        let text = e.text();
        let fail = |what: String| TestCaseError::fail(format!("{text}: {what}"));
        let expr = parse(&text).map_err(|e| fail(e.to_string()))?;
        // Literals of the wrong type (`lower(3)`) are rejected before any tuple: not ours
        // to evaluate.
        let (_, errors) = expr.check_value(Some(&names(&["a", "b", "c"])), &[]);
        prop_assume!(errors.is_empty());
        let c = expr
            .compile_value(&names(&["a", "b", "c"]))
            .map_err(|e| fail(e.to_string()))?;
        let got = c.eval(&fields);
        let want = e.eval(&fields);
        prop_assert!(same(&got, &want), "{text} over {fields:?}: got {got:?}, want {want:?}");
    }
}

#[test]
fn documented_examples_parse() {
    let doc = include_str!("../../docs/expressions.md");
    let block = doc
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap_or_default();
    let examples: Vec<&str> = block.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(examples.len() >= 4, "{block}");
    for text in examples {
        let expr = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let (_, errors) = expr.check_value(None, &[]);
        assert!(errors.is_empty(), "{text}: {errors:?}");
    }
}

/// Inputs built from the tokens of arithmetic and function calls.
fn call_soup() -> impl Strategy<Value = String> {
    let token = prop::sample::select(vec![
        "x",
        "s",
        "(",
        ")",
        ",",
        "+",
        "-",
        "*",
        "/",
        "%",
        "lower",
        "substr",
        "split_part",
        "concat",
        "capture",
        "int",
        "if",
        "coalesce",
        "parse_time",
        "format_time",
        "trunc_time",
        "contains",
        "5m",
        "0s",
        "\"%Y\"",
        "\"(?P<a>.)\"",
        "\"a\"",
        "3",
        "-9223372036854775807",
        "null",
        "==",
        ">",
        "and",
        "not",
    ]);
    prop::collection::vec(token, 0..20).prop_map(|t| t.join(" "))
}

proptest! {
    #[test]
    fn calls_and_arithmetic_never_panic(text in call_soup(), x in any_value(), y in any_value()) {
        let fields = names(&["x", "y", "s"]);
        if let Ok(expr) = parse(&text) {
            for e in expr.check_value(Some(&fields), &[Type::Int, Type::Any, Type::Str]).1 {
                prop_assert!(e.span.end <= text.len(), "{e:?} in {text:?}");
            }
            if let Ok(c) = expr.compile_value(&fields) {
                let _ = c.eval(&[x.clone(), y.clone(), Value::str("a b")]);
                let _ = c.eval(&[]);
            }
            if let Ok(c) = expr.compile(&fields) {
                let _ = c.eval(&[x, y, Value::str("a b")]);
            }
        }
    }
}

#[test]
fn numeric_functions() {
    table(&[
        ("abs(-x)", Value::Int(7)),
        ("abs(-y)", Value::Float(2.5)),
        ("abs(-9223372036854775807 - 1)", Value::Null),
        ("floor(y)", Value::Float(2.0)),
        ("floor(-y)", Value::Float(-3.0)),
        ("ceil(y)", Value::Float(3.0)),
        ("ceil(-0.5)", Value::Float(0.0)),
        ("floor(x)", Value::Int(7)),
        // Halves away from zero, as DuckDB.
        ("round(y)", Value::Float(3.0)),
        ("round(-y)", Value::Float(-3.0)),
        ("round(2.71828, 2)", Value::Float(2.72)),
        ("round(1250.0, -2)", Value::Float(1300.0)),
        ("round(x)", Value::Int(7)),
        ("round(1250, -2)", Value::Int(1300)),
        ("round(-1250, -2)", Value::Int(-1300)),
        ("round(1249, -2)", Value::Int(1200)),
        ("round(x, -30)", Value::Int(0)),
        ("round(9223372036854775807, -1)", Value::Null),
        ("round(1e300, 10)", Value::Float(1e300)),
        ("abs(null)", Value::Null),
        ("round(y, null)", Value::Null),
    ]);
    assert_eq!(
        eval_with("abs(s)", s("3"), Value::Null, s("3")),
        Value::Null
    );
}
