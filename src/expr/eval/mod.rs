//! Evaluation of conditions: an expression bound to field positions, evaluated per tuple
//! without allocating as long as its operands are fields, literals and `len`. Computed
//! operands (e.g. `lower(word)`) are evaluated by the submodule `calc`, whose values may in
//! turn hold conditions. Values of different kinds never match (a string is not less than a
//! number); integers and floats compare by value, exactly (see `tuple::numeric`).

use std::cmp::Ordering;

use regex::Regex;

mod calc;

use super::ast::{CmpOp, Node, NodeKind};
use super::functions::Func;
use crate::tuple::numeric::Num;
use crate::tuple::Value;
use calc::string_op;
pub(super) use calc::{compile_calc, Calc};

/// A condition, ready to evaluate.
#[derive(Debug, Clone)]
pub(super) enum Cond {
    Compare(CmpOp, Operand, Operand),
    Matches(Operand, Regex),
    Not(Box<Cond>),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    /// A bare operand used as a condition: true only for the boolean `true`.
    Truthy(Operand),
}

/// Something compared.
#[derive(Debug, Clone)]
pub(super) enum Operand {
    Field(usize),
    Literal(Value),
    Len(Box<Operand>),
    Cond(Box<Cond>),
    /// Arithmetic or a function: computed into an owned value (see `with`).
    Computed(Box<Calc>),
}

/// An operand's value for one tuple, borrowed where possible.
#[derive(Debug, Clone, Copy)]
enum Val<'a> {
    Value(&'a Value),
    Int(i64),
    Bool(bool),
    /// A field the tuple does not have, or `len` of something without a length.
    Missing,
}

/// Bind a checked tree to field positions. `position` maps a field name to its index.
pub(super) fn compile_cond(node: &Node, position: &dyn Fn(&str) -> Option<usize>) -> Option<Cond> {
    Some(match &node.kind {
        NodeKind::Not(inner) => Cond::Not(Box::new(compile_cond(inner, position)?)),
        NodeKind::And(l, r) => Cond::And(
            Box::new(compile_cond(l, position)?),
            Box::new(compile_cond(r, position)?),
        ),
        NodeKind::Or(l, r) => Cond::Or(
            Box::new(compile_cond(l, position)?),
            Box::new(compile_cond(r, position)?),
        ),
        NodeKind::Compare(CmpOp::Matches, _, l, r) => {
            let NodeKind::Str(pattern) = &r.kind else {
                return None;
            };
            Cond::Matches(compile_operand(l, position)?, Regex::new(pattern).ok()?)
        }
        NodeKind::Compare(op, _, l, r) => Cond::Compare(
            *op,
            compile_operand(l, position)?,
            compile_operand(r, position)?,
        ),
        // `starts_with(s, p)` and friends are the infix operators.
        NodeKind::Call(name, _, args)
            if matches!(
                Func::from_name(name),
                Some(Func::StartsWith | Func::EndsWith | Func::Contains)
            ) =>
        {
            let [l, r] = args.as_slice() else {
                return None;
            };
            Cond::Compare(
                string_op(Func::from_name(name)?),
                compile_operand(l, position)?,
                compile_operand(r, position)?,
            )
        }
        _ => Cond::Truthy(compile_operand(node, position)?),
    })
}

pub(super) fn compile_operand(
    node: &Node,
    position: &dyn Fn(&str) -> Option<usize>,
) -> Option<Operand> {
    Some(match &node.kind {
        NodeKind::Field(name) => Operand::Field(position(name)?),
        NodeKind::Str(s) => Operand::Literal(Value::str(s)),
        NodeKind::Int(n) => Operand::Literal(Value::Int(*n)),
        NodeKind::Float(x) => Operand::Literal(Value::Float(*x)),
        NodeKind::Bool(b) => Operand::Literal(Value::Bool(*b)),
        NodeKind::Null => Operand::Literal(Value::Null),
        NodeKind::Len(arg) => match compile_operand(arg, position)? {
            Operand::Computed(_) => Operand::Computed(Box::new(compile_calc(node, position)?)),
            inner => Operand::Len(Box::new(inner)),
        },
        NodeKind::Arith(..) | NodeKind::Neg(_) | NodeKind::Duration(_) => {
            Operand::Computed(Box::new(compile_calc(node, position)?))
        }
        NodeKind::Call(name, _, _)
            if !matches!(
                Func::from_name(name),
                Some(Func::StartsWith | Func::EndsWith | Func::Contains)
            ) =>
        {
            Operand::Computed(Box::new(compile_calc(node, position)?))
        }
        _ => Operand::Cond(Box::new(compile_cond(node, position)?)),
    })
}

impl Cond {
    pub(super) fn eval(&self, values: &[Value]) -> bool {
        match self {
            Cond::Compare(op, l, r) => with(l, values, |a| with(r, values, |b| compare(*op, a, b))),
            Cond::Matches(l, re) => with(l, values, |v| match v {
                Val::Value(Value::Str(s)) => re.is_match(s),
                _ => false,
            }),
            Cond::Not(c) => !c.eval(values),
            Cond::And(l, r) => l.eval(values) && r.eval(values),
            Cond::Or(l, r) => l.eval(values) || r.eval(values),
            Cond::Truthy(o) => with(o, values, |v| {
                matches!(v, Val::Bool(true) | Val::Value(Value::Bool(true)))
            }),
        }
    }
}

/// Give `f` the operand's value: borrowed from the tuple or the literal where possible, or
/// computed into a local for `Operand::Computed`.
fn with<R>(o: &Operand, values: &[Value], f: impl FnOnce(Val) -> R) -> R {
    match o {
        Operand::Computed(c) => {
            let v = c.eval(values);
            f(Val::Value(&v))
        }
        _ => f(o.eval(values)),
    }
}

impl Operand {
    fn eval<'a>(&'a self, values: &'a [Value]) -> Val<'a> {
        match self {
            Operand::Field(k) => values.get(*k).map_or(Val::Missing, Val::Value),
            Operand::Literal(v) => Val::Value(v),
            Operand::Len(inner) => match inner.eval(values) {
                Val::Value(Value::Str(s)) => Val::Int(count(s.chars().count())),
                Val::Value(Value::List(l)) => Val::Int(count(l.len())),
                Val::Value(Value::Map(m)) => Val::Int(count(m.len())),
                _ => Val::Missing,
            },
            Operand::Cond(c) => Val::Bool(c.eval(values)),
            // Evaluated by `with`; `len` of a computed value is computed whole.
            Operand::Computed(_) => Val::Missing,
        }
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn as_num(v: Val) -> Option<Num> {
    match v {
        Val::Int(n) => Some(Num::Int(n)),
        Val::Value(v) => v.as_num(),
        _ => None,
    }
}

fn as_bool(v: Val) -> Option<bool> {
    match v {
        Val::Bool(b) => Some(b),
        Val::Value(Value::Bool(b)) => Some(*b),
        _ => None,
    }
}

fn as_str(v: Val<'_>) -> Option<&str> {
    match v {
        Val::Value(Value::Str(s)) => Some(s.as_str()),
        _ => None,
    }
}

fn is_null(v: Val) -> bool {
    matches!(v, Val::Missing | Val::Value(Value::Null))
}

/// Order two values of the same kind (numbers or strings); `None` otherwise.
fn order(a: Val, b: Val) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (as_num(a), as_num(b)) {
        return Some(x.order(y));
    }
    if let (Some(x), Some(y)) = (as_str(a), as_str(b)) {
        return Some(x.cmp(y));
    }
    None
}

fn equal(a: Val, b: Val) -> bool {
    // Texts first: equal ones have equal lengths, so most unequal ones differ without a look at
    // their bytes (`order` compares them byte by byte).
    if let (Some(x), Some(y)) = (as_str(a), as_str(b)) {
        return x == y;
    }
    if let Some(o) = order(a, b) {
        return o == Ordering::Equal;
    }
    if let (Some(x), Some(y)) = (as_bool(a), as_bool(b)) {
        return x == y;
    }
    if is_null(a) || is_null(b) {
        return is_null(a) && is_null(b);
    }
    match (a, b) {
        (Val::Value(x @ (Value::List(_) | Value::Map(_))), Val::Value(y)) => x == y,
        _ => false,
    }
}

fn compare(op: CmpOp, a: Val, b: Val) -> bool {
    match op {
        CmpOp::Eq => equal(a, b),
        CmpOp::Ne => !equal(a, b),
        CmpOp::Lt => order(a, b) == Some(Ordering::Less),
        CmpOp::Le => matches!(order(a, b), Some(Ordering::Less | Ordering::Equal)),
        CmpOp::Gt => order(a, b) == Some(Ordering::Greater),
        CmpOp::Ge => matches!(order(a, b), Some(Ordering::Greater | Ordering::Equal)),
        CmpOp::Contains => match a {
            Val::Value(Value::Str(s)) => as_str(b).is_some_and(|needle| s.contains(needle)),
            Val::Value(Value::List(items)) => items.iter().any(|item| equal(Val::Value(item), b)),
            _ => false,
        },
        CmpOp::StartsWith => match (as_str(a), as_str(b)) {
            (Some(s), Some(p)) => s.starts_with(p),
            _ => false,
        },
        CmpOp::EndsWith => match (as_str(a), as_str(b)) {
            (Some(s), Some(p)) => s.ends_with(p),
            _ => false,
        },
        // Compiled into `Cond::Matches`; a regex is never compared here.
        CmpOp::Matches => false,
    }
}
