//! Static checks of an expression against the input fields: unknown fields (with a
//! suggestion), regexes that do not compile (located at the literal), and operand types that
//! can never work (`len(3)`, `"a" < 3`, `word and 1`).

use std::ops::Range;

use super::ast::{CmpOp, Node, NodeKind};
use super::ExprError;

/// What an operand is known to be before any tuple arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Str,
    Num,
    Bool,
    Null,
    /// A field or anything else known only at run time.
    Any,
}

impl Ty {
    fn describe(self) -> &'static str {
        match self {
            Ty::Str => "a string",
            Ty::Num => "a number",
            Ty::Bool => "a condition",
            Ty::Null => "null",
            Ty::Any => "a value",
        }
    }
}

fn error(span: Range<usize>, message: impl Into<String>) -> ExprError {
    ExprError {
        span,
        message: message.into(),
        help: None,
    }
}

/// The closest field name, for "did you mean".
pub(super) fn closest<'a>(name: &str, fields: &'a [String]) -> Option<&'a str> {
    fields
        .iter()
        .map(|f| (strsim::jaro_winkler(name, f), f.as_str()))
        .filter(|(score, _)| *score > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, f)| f)
}

pub(super) struct Checker<'f> {
    /// The input fields; `None` when they are not known (unknown fields are then not reported).
    pub fields: Option<&'f [String]>,
    pub errors: Vec<ExprError>,
}

impl Checker<'_> {
    /// The whole expression must be a condition.
    pub fn check_root(&mut self, root: &Node) {
        self.condition(root);
    }

    fn condition(&mut self, node: &Node) {
        let ty = self.ty(node);
        if matches!(ty, Ty::Str | Ty::Num | Ty::Null) {
            let mut e = error(
                node.span.clone(),
                format!("expected a condition, found {}", ty.describe()),
            );
            e.help = Some("compare it with something, e.g. `x == 1`".into());
            self.errors.push(e);
        }
    }

    fn ty(&mut self, node: &Node) -> Ty {
        match &node.kind {
            NodeKind::Field(name) => {
                let fields = self.fields.unwrap_or_default();
                if self.fields.is_some() && !fields.iter().any(|f| f == name) {
                    let mut e = error(node.span.clone(), format!("unknown field `{name}`"));
                    e.help = Some(match closest(name, fields) {
                        Some(f) => format!("did you mean `{f}`?"),
                        None if fields.is_empty() => "the input has no fields".into(),
                        None => format!("the input fields are: {}", fields.join(", ")),
                    });
                    self.errors.push(e);
                }
                Ty::Any
            }
            NodeKind::Str(_) => Ty::Str,
            NodeKind::Int(_) | NodeKind::Float(_) => Ty::Num,
            NodeKind::Bool(_) => Ty::Bool,
            NodeKind::Null => Ty::Null,
            NodeKind::Len(arg) => {
                let t = self.ty(arg);
                if matches!(t, Ty::Num | Ty::Bool | Ty::Null) {
                    self.errors.push(error(
                        arg.span.clone(),
                        format!("`len` takes a string or a list, not {}", t.describe()),
                    ));
                }
                Ty::Num
            }
            NodeKind::Not(inner) => {
                self.condition(inner);
                Ty::Bool
            }
            NodeKind::And(l, r) | NodeKind::Or(l, r) => {
                self.condition(l);
                self.condition(r);
                Ty::Bool
            }
            NodeKind::Compare(op, op_span, l, r) => {
                self.compare(*op, op_span, l, r);
                Ty::Bool
            }
        }
    }

    fn compare(&mut self, op: CmpOp, op_span: &Range<usize>, l: &Node, r: &Node) {
        let lt = self.ty(l);
        if op == CmpOp::Matches {
            self.regex(op_span, r);
            if matches!(lt, Ty::Num | Ty::Bool | Ty::Null) {
                self.errors.push(error(
                    l.span.clone(),
                    format!("`=~` matches strings, not {}", lt.describe()),
                ));
            }
            return;
        }
        let rt = self.ty(r);
        let known = lt != Ty::Any && rt != Ty::Any;
        let symbol = op.symbol();
        let span = l.span.start..r.span.end;
        match op {
            CmpOp::Eq | CmpOp::Ne => {
                if known && lt != rt && lt != Ty::Null && rt != Ty::Null {
                    self.errors.push(error(
                        span,
                        format!(
                            "`{symbol}` between {} and {} is always {}",
                            lt.describe(),
                            rt.describe(),
                            op == CmpOp::Ne
                        ),
                    ));
                }
            }
            _ if op.is_ordering() => {
                for (t, side) in [(lt, l), (rt, r)] {
                    if matches!(t, Ty::Bool | Ty::Null) {
                        self.errors.push(error(
                            side.span.clone(),
                            format!("`{symbol}` orders numbers or strings, not {}", t.describe()),
                        ));
                    }
                }
                if known
                    && lt != rt
                    && matches!(lt, Ty::Str | Ty::Num)
                    && matches!(rt, Ty::Str | Ty::Num)
                {
                    self.errors.push(error(
                        span,
                        format!(
                            "`{symbol}` between {} and {} is always false",
                            lt.describe(),
                            rt.describe()
                        ),
                    ));
                }
            }
            _ => {
                // contains, starts_with, ends_with
                let left_ok = matches!(lt, Ty::Str | Ty::Any);
                if !left_ok {
                    self.errors.push(error(
                        l.span.clone(),
                        format!(
                            "`{symbol}` needs a string on its left, not {}",
                            lt.describe()
                        ),
                    ));
                }
                let right_ok = match op {
                    CmpOp::Contains => lt != Ty::Str || matches!(rt, Ty::Str | Ty::Any),
                    _ => matches!(rt, Ty::Str | Ty::Any),
                };
                if !right_ok {
                    self.errors.push(error(
                        r.span.clone(),
                        format!(
                            "`{symbol}` needs a string on its right, not {}",
                            rt.describe()
                        ),
                    ));
                }
            }
        }
    }

    /// The right side of `=~` must be a string literal that compiles as a regex.
    fn regex(&mut self, op_span: &Range<usize>, r: &Node) {
        match &r.kind {
            NodeKind::Str(pattern) => {
                if let Err(e) = regex::Regex::new(pattern) {
                    let mut err = error(r.span.clone(), "invalid regex");
                    err.help = Some(regex_reason(&e));
                    self.errors.push(err);
                }
            }
            _ => self.errors.push(error(
                op_span.start..r.span.end,
                "`=~` needs a regex as a string literal on its right, e.g. `word =~ \"^a.*z$\"`",
            )),
        }
    }
}

/// The regex crate's explanation, on one line.
fn regex_reason(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(&text);
    last.trim().trim_start_matches("error:").trim().to_string()
}
