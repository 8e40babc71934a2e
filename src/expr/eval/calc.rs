//! Evaluation of expressions that compute a value (arithmetic, functions): what `map`'s `set`
//! produces, and the operands of a filter that are more than a field or a literal.
//!
//! Arithmetic, as in Python: `+ - * // %` of two integers give an integer, with a float a
//! float; `/` always gives a float (`7 / 2` is `3.5`); `//` floors (`-7 // 2` is `-4`) and `%`
//! takes the divisor's sign (`-7 % 2` is `1`). Integer overflow, division or remainder by
//! zero, and any result that is not a finite number give null, as does an operand that is
//! null or not a number.

use regex::Regex;

use super::{compile_cond, compile_operand, Cond};
use crate::expr::ast::{ArithOp, CmpOp, Node, NodeKind};
use crate::expr::functions::{self as f, Func};
use crate::tuple::numeric::{self, Num};
use crate::tuple::Value;

/// A value expression bound to field positions.
#[derive(Debug, Clone)]
pub(in crate::expr) enum Calc {
    Field(usize),
    Literal(Value),
    /// A condition used as a value: a boolean.
    Cond(Box<Cond>),
    Len(Box<Calc>),
    Neg(Box<Calc>),
    Arith(ArithOp, Box<Calc>, Box<Calc>),
    Call(Func, Vec<Calc>),
    Capture(Box<Calc>, Regex, String),
    ParseTime(Box<Calc>, Option<String>),
    FormatTime(Box<Calc>, String),
    TruncTime(Box<Calc>, i64),
}

type Position<'p> = &'p dyn Fn(&str) -> Option<usize>;

/// Bind a checked tree to field positions. `None` if it is not well formed (the checker
/// reports why).
pub(in crate::expr) fn compile_calc(node: &Node, position: Position) -> Option<Calc> {
    let sub = |n: &Node| compile_calc(n, position).map(Box::new);
    Some(match &node.kind {
        NodeKind::Field(name) => Calc::Field(position(name)?),
        NodeKind::Str(s) => Calc::Literal(Value::str(s)),
        NodeKind::Int(n) | NodeKind::Duration(n) => Calc::Literal(Value::Int(*n)),
        NodeKind::Float(x) => Calc::Literal(Value::Float(*x)),
        NodeKind::Bool(b) => Calc::Literal(Value::Bool(*b)),
        NodeKind::Null => Calc::Literal(Value::Null),
        NodeKind::Len(arg) => Calc::Len(sub(arg)?),
        NodeKind::Neg(arg) => Calc::Neg(sub(arg)?),
        NodeKind::Arith(op, _, l, r) => Calc::Arith(*op, sub(l)?, sub(r)?),
        NodeKind::Call(name, _, args) => compile_call(Func::from_name(name)?, args, position)?,
        NodeKind::Compare(..) | NodeKind::Not(_) | NodeKind::And(..) | NodeKind::Or(..) => {
            Calc::Cond(Box::new(compile_cond(node, position)?))
        }
    })
}

fn literal_str(node: Option<&Node>) -> Option<&str> {
    match &node?.kind {
        NodeKind::Str(s) => Some(s),
        _ => None,
    }
}

fn compile_call(func: Func, args: &[Node], position: Position) -> Option<Calc> {
    if !func.signature().arity.contains(&args.len()) {
        return None;
    }
    let first = || compile_calc(args.first()?, position).map(Box::new);
    Some(match func {
        Func::StartsWith | Func::EndsWith | Func::Contains => {
            let op = string_op(func);
            let [a, b] = args else { return None };
            Calc::Cond(Box::new(Cond::Compare(
                op,
                compile_operand(a, position)?,
                compile_operand(b, position)?,
            )))
        }
        Func::Capture => {
            let re = Regex::new(literal_str(args.get(1))?).ok()?;
            Calc::Capture(first()?, re, literal_str(args.get(2))?.to_string())
        }
        Func::ParseTime => {
            let format = match args.get(1) {
                Some(_) => Some(literal_str(args.get(1))?.to_string()),
                None => None,
            };
            Calc::ParseTime(first()?, format)
        }
        Func::FormatTime => Calc::FormatTime(first()?, literal_str(args.get(1))?.to_string()),
        Func::TruncTime => match args.get(1).map(|a| &a.kind) {
            Some(NodeKind::Duration(ms)) if *ms > 0 => Calc::TruncTime(first()?, *ms),
            _ => return None,
        },
        _ => Calc::Call(
            func,
            args.iter()
                .map(|a| compile_calc(a, position))
                .collect::<Option<Vec<_>>>()?,
        ),
    })
}

/// The comparison operator a string function is the function form of.
pub(in crate::expr) fn string_op(func: Func) -> CmpOp {
    match func {
        Func::StartsWith => CmpOp::StartsWith,
        Func::EndsWith => CmpOp::EndsWith,
        _ => CmpOp::Contains,
    }
}

impl Calc {
    pub(in crate::expr) fn eval(&self, values: &[Value]) -> Value {
        match self {
            Calc::Field(k) => values.get(*k).cloned().unwrap_or(Value::Null),
            Calc::Literal(v) => v.clone(),
            Calc::Cond(c) => Value::Bool(c.eval(values)),
            Calc::Len(x) => length(&x.eval(values)),
            Calc::Neg(x) => negate(&x.eval(values)),
            Calc::Arith(op, l, r) => arith(*op, &l.eval(values), &r.eval(values)),
            Calc::Call(func, args) => call(*func, args, values),
            Calc::Capture(x, re, group) => capture(&x.eval(values), re, group),
            Calc::ParseTime(x, format) => f::parse_time(&x.eval(values), format.as_deref()),
            Calc::FormatTime(x, format) => f::format_time(&x.eval(values), format),
            Calc::TruncTime(x, every) => f::trunc_time(&x.eval(values), *every),
        }
    }
}

fn length(v: &Value) -> Value {
    let n = match v {
        Value::Str(s) => s.chars().count(),
        Value::List(l) => l.len(),
        Value::Map(m) => m.len(),
        _ => return Value::Null,
    };
    i64::try_from(n).map_or(Value::Null, Value::Int)
}

fn negate(v: &Value) -> Value {
    match v {
        Value::Int(n) => n.checked_neg().map_or(Value::Null, Value::Int),
        Value::Float(x) => Value::Float(-x),
        _ => Value::Null,
    }
}

/// `l OP r`, as the module comment says.
pub(in crate::expr) fn arith(op: ArithOp, l: &Value, r: &Value) -> Value {
    let (Some(a), Some(b)) = (l.as_num(), r.as_num()) else {
        return Value::Null;
    };
    match (a, b) {
        _ if op == ArithOp::Div => finite(numeric::true_div(a, b)),
        (Num::Int(a), Num::Int(b)) => {
            let result = match op {
                ArithOp::Add => a.checked_add(b),
                ArithOp::Sub => a.checked_sub(b),
                ArithOp::Mul => a.checked_mul(b),
                ArithOp::FloorDiv => numeric::floor_div_int(a, b),
                ArithOp::Div => None, // taken by the first arm
                ArithOp::Rem => numeric::py_mod_int(a, b),
            };
            result.map_or(Value::Null, Value::Int)
        }
        _ => {
            let (a, b) = (a.as_f64(), b.as_f64());
            finite(match op {
                ArithOp::Add => Some(a + b),
                ArithOp::Sub => Some(a - b),
                ArithOp::Mul => Some(a * b),
                ArithOp::FloorDiv => numeric::floor_div_float(a, b),
                ArithOp::Div => None, // taken by the first arm
                ArithOp::Rem => numeric::py_mod_float(a, b),
            })
        }
    }
}

/// A float result, or null when there is none or it is not finite.
fn finite(x: Option<f64>) -> Value {
    x.filter(|x| x.is_finite())
        .map_or(Value::Null, Value::Float)
}

fn capture(v: &Value, re: &Regex, group: &str) -> Value {
    let Some(s) = v.as_str() else {
        return Value::Null;
    };
    re.captures(s)
        .and_then(|c| c.name(group))
        .map_or(Value::Null, |m| Value::str(m.as_str()))
}

/// The functions whose arguments are all values.
fn call(func: Func, args: &[Calc], values: &[Value]) -> Value {
    let arg = |k: usize| args.get(k).map_or(Value::Null, |a| a.eval(values));
    match func {
        Func::Lower | Func::Upper | Func::Trim => f::one_string(func, &arg(0)),
        Func::Substr => {
            let len = args.get(2).map(|a| a.eval(values));
            f::substr(&arg(0), &arg(1), len.as_ref())
        }
        Func::Replace => f::replace(&arg(0), &arg(1), &arg(2)),
        Func::SplitPart => f::split_part(&arg(0), &arg(1), &arg(2)),
        Func::Concat => {
            let mut out = String::new();
            for a in args {
                f::push_text(&a.eval(values), &mut out);
            }
            Value::Str(out.into())
        }
        Func::Int => f::to_int(&arg(0)),
        Func::Float => f::to_float(&arg(0)),
        Func::Str => f::to_str(&arg(0)),
        Func::Bool => f::to_bool(&arg(0)),
        Func::Abs => f::abs(&arg(0)),
        Func::Floor => f::floor_or_ceil(&arg(0), false),
        Func::Ceil => f::floor_or_ceil(&arg(0), true),
        Func::Round => {
            let digits = args.get(1).map(|a| a.eval(values));
            f::round(&arg(0), digits.as_ref())
        }
        Func::IsNull => Value::Bool(matches!(arg(0), Value::Null)),
        Func::Coalesce => args
            .iter()
            .map(|a| a.eval(values))
            .find(|v| !matches!(v, Value::Null))
            .unwrap_or(Value::Null),
        Func::If => {
            if matches!(arg(0), Value::Bool(true)) {
                arg(1)
            } else {
                arg(2)
            }
        }
        // Compiled into their own forms by `compile_call`.
        Func::StartsWith
        | Func::EndsWith
        | Func::Contains
        | Func::Capture
        | Func::ParseTime
        | Func::FormatTime
        | Func::TruncTime => Value::Null,
    }
}
