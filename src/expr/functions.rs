//! The functions of the expression language: their names, what they take and yield (for the
//! checker), and what they compute (for the evaluator). Every function returns null rather
//! than failing: on a null or mistyped argument, a string that does not parse, an index out
//! of range or a result out of range.

use std::ops::RangeInclusive;

use jiff::fmt::strtime;
use jiff::tz::Offset;
use jiff::Timestamp;

use super::types::Type;
use crate::tuple::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Func {
    Lower,
    Upper,
    Trim,
    Substr,
    Replace,
    SplitPart,
    Concat,
    StartsWith,
    EndsWith,
    Contains,
    Capture,
    Int,
    Float,
    Str,
    Bool,
    Coalesce,
    If,
    IsNull,
    ParseTime,
    FormatTime,
    TruncTime,
    Abs,
    Round,
    Floor,
    Ceil,
}

/// Every function name (`len` is parsed on its own but is listed too).
pub(super) const NAMES: &[&str] = &[
    "len",
    "lower",
    "upper",
    "trim",
    "substr",
    "replace",
    "split_part",
    "concat",
    "starts_with",
    "ends_with",
    "contains",
    "capture",
    "int",
    "float",
    "str",
    "bool",
    "coalesce",
    "if",
    "is_null",
    "parse_time",
    "format_time",
    "trunc_time",
    "abs",
    "round",
    "floor",
    "ceil",
];

/// What an argument must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arg {
    Any,
    Str,
    Int,
    /// An integer or a float.
    Num,
    Cond,
    /// A string literal that compiles as a regex.
    Regex,
    /// A string literal that is a valid strftime format.
    Format,
    /// A string literal.
    Literal,
    /// A duration literal (`5m`).
    Duration,
}

/// Arguments and result of a function.
pub(super) struct Signature {
    pub(crate) arity: RangeInclusive<usize>,
    /// The expected argument at each position; the last one repeats.
    args: &'static [Arg],
    /// How the arguments are written, for "takes …" messages.
    shape: &'static str,
    result: Yields,
}

/// What a function yields.
#[derive(Clone, Copy)]
enum Yields {
    Fixed(Type),
    /// The type shared by the arguments from this position on (`if`, `coalesce`).
    JoinFrom(usize),
    /// The first argument's type (`round`).
    FirstArg,
}

impl Signature {
    pub(crate) fn arg(&self, k: usize) -> Arg {
        self.args
            .get(k)
            .or(self.args.last())
            .copied()
            .unwrap_or(Arg::Any)
    }

    /// `2 or 3 arguments (s, start[, len])`.
    pub(crate) fn describe_arity(&self) -> String {
        let (lo, hi) = (*self.arity.start(), *self.arity.end());
        let count = match (lo, hi) {
            (1, 1) => "1 argument".to_string(),
            (a, b) if a == b => format!("{a} arguments"),
            (a, usize::MAX) => format!("at least {a} argument{}", if a == 1 { "" } else { "s" }),
            (a, b) if b == a + 1 => format!("{a} or {b} arguments"),
            (a, b) => format!("{a} to {b} arguments"),
        };
        format!("{count} ({})", self.shape)
    }

    pub(crate) fn result(&self, args: &[Type]) -> Type {
        match self.result {
            Yields::Fixed(t) => t,
            Yields::JoinFrom(k) => args
                .get(k..)
                .unwrap_or_default()
                .iter()
                .copied()
                .reduce(Type::join)
                .map_or(Type::Any, |t| if t == Type::Null { Type::Any } else { t }),
            Yields::FirstArg => match args.first() {
                Some(t) if t.is_num() => *t,
                _ => Type::Any,
            },
        }
    }
}

fn sig(
    arity: RangeInclusive<usize>,
    args: &'static [Arg],
    shape: &'static str,
    result: Type,
) -> Signature {
    Signature {
        arity,
        args,
        shape,
        result: Yields::Fixed(result),
    }
}

impl Func {
    pub(crate) fn from_name(name: &str) -> Option<Func> {
        use Func::*;
        Some(match name {
            "lower" => Lower,
            "upper" => Upper,
            "trim" => Trim,
            "substr" => Substr,
            "replace" => Replace,
            "split_part" => SplitPart,
            "concat" => Concat,
            "starts_with" => StartsWith,
            "ends_with" => EndsWith,
            "contains" => Contains,
            "capture" => Capture,
            "int" => Int,
            "float" => Float,
            "str" => Str,
            "bool" => Bool,
            "coalesce" => Coalesce,
            "if" => If,
            "is_null" => IsNull,
            "parse_time" => ParseTime,
            "format_time" => FormatTime,
            "trunc_time" => TruncTime,
            "abs" => Abs,
            "round" => Round,
            "floor" => Floor,
            "ceil" => Ceil,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        use Func::*;
        match self {
            Lower => "lower",
            Upper => "upper",
            Trim => "trim",
            Substr => "substr",
            Replace => "replace",
            SplitPart => "split_part",
            Concat => "concat",
            StartsWith => "starts_with",
            EndsWith => "ends_with",
            Contains => "contains",
            Capture => "capture",
            Int => "int",
            Float => "float",
            Str => "str",
            Bool => "bool",
            Coalesce => "coalesce",
            If => "if",
            IsNull => "is_null",
            ParseTime => "parse_time",
            FormatTime => "format_time",
            TruncTime => "trunc_time",
            Abs => "abs",
            Round => "round",
            Floor => "floor",
            Ceil => "ceil",
        }
    }

    pub(crate) fn signature(self) -> Signature {
        use Arg as A;
        use Func::*;
        match self {
            Lower | Upper | Trim => sig(1..=1, &[A::Str], "s", Type::Str),
            Substr => sig(2..=3, &[A::Str, A::Int], "s, start[, len]", Type::Str),
            Replace => sig(3..=3, &[A::Str], "s, from, to", Type::Str),
            SplitPart => sig(3..=3, &[A::Str, A::Str, A::Int], "s, sep, n", Type::Str),
            Concat => sig(1..=usize::MAX, &[A::Any], "a, b, …", Type::Str),
            StartsWith | EndsWith => sig(2..=2, &[A::Str], "s, p", Type::Bool),
            Contains => sig(2..=2, &[A::Any], "s, p", Type::Bool),
            Capture => sig(
                3..=3,
                &[A::Str, A::Regex, A::Literal],
                "s, REGEX, \"group\"",
                Type::Str,
            ),
            Int => sig(1..=1, &[A::Any], "x", Type::Int),
            Float => sig(1..=1, &[A::Any], "x", Type::Float),
            Str => sig(1..=1, &[A::Any], "x", Type::Str),
            Bool => sig(1..=1, &[A::Any], "x", Type::Bool),
            IsNull => sig(1..=1, &[A::Any], "x", Type::Bool),
            Coalesce => Signature {
                arity: 1..=usize::MAX,
                args: &[A::Any],
                shape: "a, b, …",
                result: Yields::JoinFrom(0),
            },
            If => Signature {
                arity: 3..=3,
                args: &[A::Cond, A::Any],
                shape: "condition, then, else",
                result: Yields::JoinFrom(1),
            },
            ParseTime => sig(1..=2, &[A::Any, A::Format], "s[, FORMAT]", Type::Int),
            FormatTime => sig(2..=2, &[A::Int, A::Format], "t, FORMAT", Type::Str),
            TruncTime => sig(2..=2, &[A::Int, A::Duration], "t, DURATION", Type::Int),
            // An integer stays an integer, a float a float.
            Abs | Floor | Ceil => Signature {
                arity: 1..=1,
                args: &[A::Num],
                shape: "x",
                result: Yields::JoinFrom(0),
            },
            Round => Signature {
                arity: 1..=2,
                args: &[A::Num, A::Int],
                shape: "x[, digits]",
                result: Yields::FirstArg,
            },
        }
    }
}

/// Whether `format` is a strftime format we can use (it formats a time).
pub(super) fn check_time_format(format: &str) -> Result<(), String> {
    strtime::format(format, Timestamp::UNIX_EPOCH)
        .map(|_| ())
        .map_err(|e| {
            let text = e.to_string();
            let reason = text.strip_prefix("strftime formatting failed: ");
            reason.unwrap_or(&text).to_string()
        })
}

/// A string's text, or null.
fn text(v: &Value) -> Option<&str> {
    v.as_str()
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(n) => Some(*n),
        _ => None,
    }
}

fn from_opt(v: Option<Value>) -> Value {
    v.unwrap_or(Value::Null)
}

/// Lower, upper or trim a string.
pub(super) fn one_string(f: Func, s: &Value) -> Value {
    let Some(s) = text(s) else {
        return Value::Null;
    };
    match f {
        Func::Lower => Value::Str(s.to_lowercase().into()),
        Func::Upper => Value::Str(s.to_uppercase().into()),
        _ => Value::str(s.trim()),
    }
}

/// `substr(s, start[, len])`: characters from `start` (1-based; before 1 counts into the
/// nothing before the string, as in SQL), `len` of them or to the end.
pub(super) fn substr(s: &Value, start: &Value, len: Option<&Value>) -> Value {
    let (Some(s), Some(start)) = (text(s), int(start)) else {
        return Value::Null;
    };
    let end = match len.map(int) {
        None => i64::MAX,
        Some(None) => return Value::Null,
        Some(Some(n)) if n < 0 => return Value::Null,
        Some(Some(n)) => start.saturating_add(n),
    };
    let from = usize::try_from(start.max(1) - 1).unwrap_or(usize::MAX);
    let to = usize::try_from(end.max(1) - 1).unwrap_or(usize::MAX);
    let taken: String = s.chars().skip(from).take(to.saturating_sub(from)).collect();
    Value::Str(taken.into())
}

/// `replace(s, from, to)`: every occurrence; an empty `from` changes nothing.
pub(super) fn replace(s: &Value, from: &Value, to: &Value) -> Value {
    match (text(s), text(from), text(to)) {
        (Some(s), Some(""), Some(_)) => Value::str(s),
        (Some(s), Some(from), Some(to)) => Value::Str(s.replace(from, to).into()),
        _ => Value::Null,
    }
}

/// `split_part(s, sep, n)`: the `n`th piece (1-based; negative counts from the end), empty
/// when there is no such piece, as in PostgreSQL; `n = 0` is null.
pub(super) fn split_part(s: &Value, sep: &Value, n: &Value) -> Value {
    let (Some(s), Some(sep), Some(n)) = (text(s), text(sep), int(n)) else {
        return Value::Null;
    };
    if n == 0 {
        return Value::Null;
    }
    let pieces: Vec<&str> = if sep.is_empty() {
        vec![s]
    } else {
        s.split(sep).collect()
    };
    let index = if n > 0 {
        usize::try_from(n - 1).ok()
    } else {
        usize::try_from(n.unsigned_abs())
            .ok()
            .and_then(|back| pieces.len().checked_sub(back))
    };
    Value::str(index.and_then(|k| pieces.get(k)).copied().unwrap_or(""))
}

/// The text of a value as `stdout` prints it (null: empty).
pub(super) fn push_text(v: &Value, out: &mut String) {
    v.write_plain(out);
}

/// `str(x)`: the text of a value; null stays null.
pub(super) fn to_str(v: &Value) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Str(_) => v.clone(),
        other => {
            let mut out = String::new();
            push_text(other, &mut out);
            Value::Str(out.into())
        }
    }
}

/// `int(x)`: integers as they are, floats truncated (when in range), strings parsed
/// (surrounding spaces allowed), booleans 1 or 0.
pub(super) fn to_int(v: &Value) -> Value {
    from_opt(
        match v {
            Value::Int(n) => Some(*n),
            Value::Float(x) => float_to_int(*x),
            Value::Str(s) => s.trim().parse::<i64>().ok(),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
        .map(Value::Int),
    )
}

fn float_to_int(x: f64) -> Option<i64> {
    // i64::MAX as f64 rounds up to 2^63, which is out of range: hence `<`.
    (x.is_finite() && x >= i64::MIN as f64 && x < i64::MAX as f64).then_some(x.trunc() as i64)
}

/// `float(x)`: numbers as floats, strings parsed (finite only), booleans 1.0 or 0.0.
pub(super) fn to_float(v: &Value) -> Value {
    from_opt(
        match v {
            Value::Int(n) => Some(*n as f64),
            Value::Float(x) => Some(*x),
            Value::Str(s) => s.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
            Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            _ => None,
        }
        .map(Value::Float),
    )
}

/// `bool(x)`: booleans as they are, numbers true unless zero, the strings `true`/`false`/
/// `1`/`0` (any case, surrounding spaces allowed).
pub(super) fn to_bool(v: &Value) -> Value {
    from_opt(
        match v {
            Value::Bool(b) => Some(*b),
            Value::Int(n) => Some(*n != 0),
            Value::Float(x) => Some(*x != 0.0),
            Value::Str(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "1" => Some(true),
                "false" | "0" => Some(false),
                _ => None,
            },
            _ => None,
        }
        .map(Value::Bool),
    )
}

/// `parse_time(s[, FORMAT])`: epoch milliseconds of an RFC 3339 time, or of a time in
/// `FORMAT` (UTC unless it has an offset). An integer is taken as epoch milliseconds already.
pub(super) fn parse_time(v: &Value, format: Option<&str>) -> Value {
    let s = match v {
        Value::Int(_) => return v.clone(),
        Value::Str(s) => s.as_str(),
        _ => return Value::Null,
    };
    let ts = match format {
        None => s.trim().parse::<Timestamp>().ok(),
        Some(f) => strtime::parse(f, s).ok().and_then(|tm| {
            if tm.offset().is_some() {
                return tm.to_timestamp().ok();
            }
            Offset::UTC.to_timestamp(tm.to_datetime().ok()?).ok()
        }),
    };
    from_opt(ts.map(|t| Value::Int(t.as_millisecond())))
}

/// `format_time(t, FORMAT)`: epoch milliseconds as text, in UTC.
pub(super) fn format_time(t: &Value, format: &str) -> Value {
    let Some(ms) = int(t) else {
        return Value::Null;
    };
    let Ok(ts) = Timestamp::from_millisecond(ms) else {
        return Value::Null;
    };
    from_opt(
        strtime::format(format, ts)
            .ok()
            .map(|s| Value::Str(s.into())),
    )
}

/// `trunc_time(t, D)`: `t` floored to a multiple of `D` milliseconds since the epoch.
pub(super) fn trunc_time(t: &Value, every_ms: i64) -> Value {
    match int(t) {
        Some(ms) if every_ms > 0 => Value::Int(ms - ms.rem_euclid(every_ms)),
        _ => Value::Null,
    }
}

/// `abs(x)`: null for the one integer whose absolute value is out of range.
pub(super) fn abs(v: &Value) -> Value {
    match v {
        Value::Int(n) => n.checked_abs().map_or(Value::Null, Value::Int),
        Value::Float(x) => Value::Float(x.abs()),
        _ => Value::Null,
    }
}

/// `floor(x)` or `ceil(x)`: an integer as it is, a float to a whole float.
pub(super) fn floor_or_ceil(v: &Value, up: bool) -> Value {
    match v {
        Value::Int(_) => v.clone(),
        // `+ 0.0` writes `ceil(-0.5)` as `0`, not `-0`.
        Value::Float(x) => Value::Float(if up { x.ceil() } else { x.floor() } + 0.0),
        _ => Value::Null,
    }
}

/// `round(x[, digits])`: to `digits` decimals (default 0; negative rounds to tens, hundreds…),
/// halves away from zero as in DuckDB and SQL (`round(2.5)` is `3`, `round(-2.5)` is `-3`).
/// An integer stays an integer, a float a float.
pub(super) fn round(v: &Value, digits: Option<&Value>) -> Value {
    let digits = match digits {
        None => 0,
        Some(Value::Int(d)) => *d,
        Some(_) => return Value::Null,
    };
    match v {
        Value::Int(n) if digits >= 0 => Value::Int(*n),
        Value::Int(n) => round_int(*n, digits.unsigned_abs()).map_or(Value::Null, Value::Int),
        Value::Float(x) => Value::Float(round_float(*x, digits)),
        _ => Value::Null,
    }
}

/// `n` rounded to a multiple of `10^places`, halves away from zero; `None` out of range.
fn round_int(n: i64, places: u64) -> Option<i64> {
    let Some(unit) = u32::try_from(places)
        .ok()
        .and_then(|p| 10i64.checked_pow(p))
    else {
        // A unit above every integer: everything rounds to 0.
        return Some(0);
    };
    let rest = n % unit;
    let down = n - rest;
    if rest.unsigned_abs() * 2 >= unit.unsigned_abs() {
        down.checked_add(unit * n.signum())
    } else {
        Some(down)
    }
}

fn round_float(x: f64, digits: i64) -> f64 {
    let Ok(d) = i32::try_from(digits.clamp(-400, 400)) else {
        return x;
    };
    let scale = 10f64.powi(d.abs());
    let scaled = if d >= 0 { x * scale } else { x / scale };
    if !scaled.is_finite() {
        // More digits than a float holds: nothing to round.
        return x;
    }
    // `+ 0.0` writes `round(-0.4)` as `0`, not `-0`.
    let rounded = scaled.round() + 0.0;
    if d >= 0 {
        rounded / scale
    } else {
        rounded * scale
    }
}
