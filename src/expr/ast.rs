//! The syntax tree of an expression, each node with its byte range in the expression text.

use std::fmt;
use std::ops::Range;

/// One node and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) kind: NodeKind,
    pub(crate) span: Range<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NodeKind {
    /// An input field, by name.
    Field(String),
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Null,
    /// `len(x)`: characters of a string, items of a list or map.
    Len(Box<Node>),
    /// `left OP right`; the range is the operator's.
    Compare(CmpOp, Range<usize>, Box<Node>, Box<Node>),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    /// `left OP right` arithmetic; the range is the operator's.
    Arith(ArithOp, Range<usize>, Box<Node>, Box<Node>),
    /// `-x`.
    Neg(Box<Node>),
    /// `name(arguments…)`; the range is the name's.
    Call(String, Range<usize>, Vec<Node>),
    /// A duration literal (`5m`), in milliseconds.
    Duration(i64),
}

/// Arithmetic operators: `*` `/` `//` `%` bind tighter than `+` `-`, all left-associative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArithOp {
    Add,
    Sub,
    Mul,
    /// `/`: always a float.
    Div,
    /// `//`: floor division.
    FloorDiv,
    Rem,
}

impl ArithOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::FloorDiv => "//",
            ArithOp::Rem => "%",
        }
    }
}

/// Comparison operators, all of the same precedence and not chained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Contains,
    StartsWith,
    EndsWith,
    /// `=~`: the left side matches the regex on the right.
    Matches,
}

impl CmpOp {
    /// Operators as written, longest first where one is a prefix of another.
    pub(crate) const ALL: &'static [(&'static str, CmpOp)] = &[
        ("==", CmpOp::Eq),
        ("!=", CmpOp::Ne),
        ("<=", CmpOp::Le),
        (">=", CmpOp::Ge),
        ("=~", CmpOp::Matches),
        ("<", CmpOp::Lt),
        (">", CmpOp::Gt),
        ("contains", CmpOp::Contains),
        ("starts_with", CmpOp::StartsWith),
        ("ends_with", CmpOp::EndsWith),
    ];

    pub(crate) fn symbol(self) -> &'static str {
        CmpOp::ALL
            .iter()
            .find(|(_, op)| *op == self)
            .map(|(s, _)| *s)
            .unwrap_or("?")
    }

    /// `<`, `<=`, `>`, `>=`.
    pub(crate) fn is_ordering(self) -> bool {
        matches!(self, CmpOp::Lt | CmpOp::Le | CmpOp::Gt | CmpOp::Ge)
    }
}

/// Words that cannot be field names (write `` `and` `` to name such a field).
pub(crate) const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "not",
    "contains",
    "starts_with",
    "ends_with",
    "true",
    "false",
    "null",
];

/// Prints the expression back, fully parenthesised: shows how it was read.
impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            NodeKind::Field(name) if is_plain_name(name) => write!(f, "{name}"),
            NodeKind::Field(name) => write!(f, "`{name}`"),
            NodeKind::Str(s) => write!(f, "{s:?}"),
            NodeKind::Int(n) => write!(f, "{n}"),
            NodeKind::Float(x) => write!(f, "{x:?}"),
            NodeKind::Bool(b) => write!(f, "{b}"),
            NodeKind::Null => write!(f, "null"),
            NodeKind::Len(x) => write!(f, "len({x})"),
            NodeKind::Compare(op, _, l, r) => write!(f, "({l} {} {r})", op.symbol()),
            NodeKind::Not(x) => write!(f, "(not {x})"),
            NodeKind::And(l, r) => write!(f, "({l} and {r})"),
            NodeKind::Or(l, r) => write!(f, "({l} or {r})"),
            NodeKind::Arith(op, _, l, r) => write!(f, "({l} {} {r})", op.symbol()),
            NodeKind::Neg(x) => write!(f, "(-{x})"),
            NodeKind::Call(name, _, args) => {
                write!(f, "{name}(")?;
                for (k, a) in args.iter().enumerate() {
                    if k > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{a}")?;
                }
                write!(f, ")")
            }
            NodeKind::Duration(ms) => write!(f, "{ms}ms"),
        }
    }
}

fn is_plain_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&name)
}
