//! Static checks of an expression against the input fields and their types: unknown fields
//! (with a suggestion), unknown functions and wrong argument counts, regexes and time formats
//! that do not compile (located at the literal), and operand types that can never work
//! (`len(3)`, `"a" < 3`, `word and 1`, a string field compared with a number).

use std::ops::Range;

use super::ast::{ArithOp, CmpOp, Node, NodeKind};
use super::functions::{self, Arg, Func};
use super::types::Type;
use super::ExprError;

pub(super) fn error(span: Range<usize>, message: impl Into<String>) -> ExprError {
    ExprError {
        span,
        message: message.into(),
        help: None,
    }
}

/// The closest name, for "did you mean".
pub(super) fn closest<'a, I: IntoIterator<Item = &'a str>>(
    name: &str,
    names: I,
) -> Option<&'a str> {
    names
        .into_iter()
        .map(|f| (strsim::jaro_winkler(name, f), f))
        .filter(|(score, _)| *score > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, f)| f)
}

pub(super) struct Checker<'f> {
    /// The input fields; `None` when they are not known (unknown fields are then not reported).
    pub(crate) fields: Option<&'f [String]>,
    /// Their types, by position (missing: `Any`).
    pub(crate) types: &'f [Type],
    pub(crate) errors: Vec<ExprError>,
}

impl Checker<'_> {
    /// The whole expression must be a condition.
    pub(crate) fn check_root(&mut self, root: &Node) {
        self.condition(root);
    }

    fn condition(&mut self, node: &Node) {
        let ty = self.ty(node);
        if matches!(ty, Type::Str | Type::Int | Type::Float | Type::Null) {
            let mut e = error(
                node.span.clone(),
                format!("expected a condition, found {}", ty.describe()),
            );
            e.help = Some("compare it with something, e.g. `x == 1`".into());
            self.errors.push(e);
        }
    }

    /// The type of `node`, reporting every problem inside it.
    pub(crate) fn ty(&mut self, node: &Node) -> Type {
        match &node.kind {
            NodeKind::Field(name) => self.field(name, &node.span),
            NodeKind::Str(_) => Type::Str,
            NodeKind::Int(_) | NodeKind::Duration(_) => Type::Int,
            NodeKind::Float(_) => Type::Float,
            NodeKind::Bool(_) => Type::Bool,
            NodeKind::Null => Type::Null,
            NodeKind::Len(arg) => {
                let t = self.ty(arg);
                if matches!(t, Type::Int | Type::Float | Type::Bool | Type::Null) {
                    self.errors.push(error(
                        arg.span.clone(),
                        format!("`len` takes a string or a list, not {}", t.describe()),
                    ));
                }
                Type::Int
            }
            NodeKind::Not(inner) => {
                self.condition(inner);
                Type::Bool
            }
            NodeKind::And(l, r) | NodeKind::Or(l, r) => {
                self.condition(l);
                self.condition(r);
                Type::Bool
            }
            NodeKind::Compare(op, op_span, l, r) => {
                self.compare(*op, op_span, l, r);
                Type::Bool
            }
            NodeKind::Arith(op, _, l, r) => {
                let (lt, rt) = (self.number(l, op.symbol()), self.number(r, op.symbol()));
                match (lt, rt) {
                    // `/` yields a float (or null) whatever it divides.
                    _ if *op == ArithOp::Div => Type::Float,
                    (Type::Int, Type::Int) => Type::Int,
                    (a, b) if a.is_num() && b.is_num() => Type::Float,
                    (Type::Float, _) | (_, Type::Float) => Type::Float,
                    _ => Type::Any,
                }
            }
            NodeKind::Neg(inner) => match self.number(inner, "-") {
                t @ (Type::Int | Type::Float) => t,
                _ => Type::Any,
            },
            NodeKind::Call(name, name_span, args) => self.call(name, name_span, args, &node.span),
        }
    }

    fn field(&mut self, name: &str, span: &Range<usize>) -> Type {
        let fields = self.fields.unwrap_or_default();
        let Some(k) = fields.iter().position(|f| f == name) else {
            if self.fields.is_some() {
                let mut e = error(span.clone(), format!("unknown field `{name}`"));
                e.help = Some(match closest(name, fields.iter().map(String::as_str)) {
                    Some(f) => format!("did you mean `{f}`?"),
                    None if fields.is_empty() => "the input has no fields".into(),
                    None => format!("the input fields are: {}", fields.join(", ")),
                });
                self.errors.push(e);
            }
            return Type::Any;
        };
        self.types.get(k).copied().unwrap_or(Type::Any)
    }

    /// An operand of arithmetic must be a number (or unknown, or null).
    fn number(&mut self, node: &Node, symbol: &str) -> Type {
        let t = self.ty(node);
        if matches!(t, Type::Str | Type::Bool) {
            let mut e = error(
                node.span.clone(),
                format!("`{symbol}` works on numbers, not {}", t.describe()),
            );
            e.help = Some(match (t, &node.kind) {
                // A window's bounds are times written out.
                (Type::Str, NodeKind::Field(f)) if f.starts_with("window_") => {
                    format!(
                        "it is a time as text: `parse_time({node})` gives its epoch milliseconds"
                    )
                }
                // `float` reads decimals too (`int("5.1")` is null).
                (Type::Str, NodeKind::Field(_)) => format!("convert it first: `float({node})`"),
                (Type::Str, _) if symbol == "+" => "to join strings, use `concat(a, b)`".into(),
                _ => "convert it first with `int(…)` or `float(…)`".into(),
            });
            self.errors.push(e);
        }
        t
    }

    fn call(
        &mut self,
        name: &str,
        name_span: &Range<usize>,
        args: &[Node],
        span: &Range<usize>,
    ) -> Type {
        let Some(func) = Func::from_name(name) else {
            for a in args {
                self.ty(a);
            }
            let mut e = error(name_span.clone(), format!("unknown function `{name}`"));
            e.help = Some(match closest(name, functions::NAMES.iter().copied()) {
                Some(f) => format!("did you mean `{f}`?"),
                None => format!("the functions are: {}", functions::NAMES.join(", ")),
            });
            self.errors.push(e);
            return Type::Any;
        };
        let sig = func.signature();
        let types: Vec<Type> = args.iter().map(|a| self.ty(a)).collect();
        if !sig.arity.contains(&args.len()) {
            self.errors.push(error(
                span.clone(),
                format!(
                    "`{name}` takes {}, got {}",
                    sig.describe_arity(),
                    args.len()
                ),
            ));
            return sig.result(&types);
        }
        for (k, (arg, t)) in args.iter().zip(&types).enumerate() {
            self.argument(func, sig.arg(k), arg, *t);
        }
        sig.result(&types)
    }

    /// One argument against what the function expects there.
    fn argument(&mut self, func: Func, want: Arg, arg: &Node, t: Type) {
        let name = func.name();
        let problem = match want {
            Arg::Any => None,
            Arg::Str => matches!(t, Type::Int | Type::Float | Type::Bool).then_some("a string"),
            Arg::Int => matches!(t, Type::Str | Type::Float | Type::Bool).then_some("an integer"),
            Arg::Num => matches!(t, Type::Str | Type::Bool).then_some("a number"),
            Arg::Cond => matches!(t, Type::Str | Type::Int | Type::Float).then_some("a condition"),
            Arg::Regex | Arg::Format | Arg::Literal | Arg::Duration => {
                return self.literal_argument(func, want, arg)
            }
        };
        if let Some(expected) = problem {
            let found = if t == Type::Float {
                "a float"
            } else {
                t.describe()
            };
            let mut e = error(
                arg.span.clone(),
                format!("`{name}` takes {expected} here, not {found}"),
            );
            if matches!(arg.kind, NodeKind::Field(_)) {
                e.help = Some(match expected {
                    "a string" => format!("convert it first: `str({arg})`"),
                    "an integer" => format!("convert it first: `int({arg})`"),
                    "a number" => format!("convert it first: `float({arg})`"),
                    _ => "compare it with something, e.g. `x == 1`".into(),
                });
            }
            self.errors.push(e);
        }
    }

    /// Arguments that must be written as literals, checked now: a regex compiles, a time
    /// format is valid, a duration is positive.
    fn literal_argument(&mut self, func: Func, want: Arg, arg: &Node) {
        let name = func.name();
        match (&arg.kind, want) {
            (NodeKind::Str(pattern), Arg::Regex) => {
                if let Err(e) = regex::Regex::new(pattern) {
                    let mut err = error(arg.span.clone(), "invalid regex");
                    err.help = Some(regex_reason(&e));
                    self.errors.push(err);
                }
            }
            (NodeKind::Str(format), Arg::Format) => {
                if let Err(reason) = functions::check_time_format(format) {
                    let mut err = error(arg.span.clone(), "invalid time format");
                    err.help = Some(reason);
                    self.errors.push(err);
                }
            }
            (NodeKind::Str(_), Arg::Literal) => {}
            (NodeKind::Duration(ms), Arg::Duration) if *ms > 0 => {}
            (NodeKind::Duration(_), Arg::Duration) => self.errors.push(error(
                arg.span.clone(),
                format!("`{name}` needs a duration longer than zero"),
            )),
            (_, Arg::Duration) => {
                let mut e = error(
                    arg.span.clone(),
                    format!("`{name}` takes a duration literal here"),
                );
                e.help = Some("e.g. `1s`, `5m`, `1h`, `1d`".into());
                self.errors.push(e);
            }
            _ => {
                let what = match want {
                    Arg::Regex => "a regex",
                    Arg::Format => "a time format",
                    _ => "a name",
                };
                self.errors.push(error(
                    arg.span.clone(),
                    format!("`{name}` takes {what} as a string literal here"),
                ));
            }
        }
    }

    fn compare(&mut self, op: CmpOp, op_span: &Range<usize>, l: &Node, r: &Node) {
        let lt = self.ty(l);
        if op == CmpOp::Matches {
            self.regex(op_span, r);
            if matches!(lt, Type::Int | Type::Float | Type::Bool | Type::Null) {
                self.errors.push(error(
                    l.span.clone(),
                    format!("`=~` matches strings, not {}", lt.describe()),
                ));
            }
            return;
        }
        let rt = self.ty(r);
        let known = lt != Type::Any && rt != Type::Any;
        let differ = known && lt.class() != rt.class();
        let symbol = op.symbol();
        let span = l.span.start..r.span.end;
        match op {
            CmpOp::Eq | CmpOp::Ne => {
                if differ && lt != Type::Null && rt != Type::Null {
                    let mut e = error(
                        span,
                        format!(
                            "`{symbol}` between {} and {} is always {}",
                            lt.describe(),
                            rt.describe(),
                            op == CmpOp::Ne
                        ),
                    );
                    e.help = conversion_hint(symbol, l, lt, r, rt);
                    self.errors.push(e);
                }
            }
            _ if op.is_ordering() => {
                for (t, side) in [(lt, l), (rt, r)] {
                    if matches!(t, Type::Bool | Type::Null) {
                        self.errors.push(error(
                            side.span.clone(),
                            format!("`{symbol}` orders numbers or strings, not {}", t.describe()),
                        ));
                    }
                }
                let orderable = |t: Type| matches!(t, Type::Str | Type::Int | Type::Float);
                if differ && orderable(lt) && orderable(rt) {
                    let mut e = error(
                        span,
                        format!(
                            "`{symbol}` between {} and {} is always false",
                            lt.describe(),
                            rt.describe()
                        ),
                    );
                    e.help = conversion_hint(symbol, l, lt, r, rt);
                    self.errors.push(e);
                }
            }
            _ => self.string_operator(op, l, lt, r, rt),
        }
    }

    /// `contains`, `starts_with`, `ends_with`.
    fn string_operator(&mut self, op: CmpOp, l: &Node, lt: Type, r: &Node, rt: Type) {
        let symbol = op.symbol();
        let left_ok = matches!(lt, Type::Str | Type::Any);
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
            CmpOp::Contains => lt != Type::Str || matches!(rt, Type::Str | Type::Any),
            _ => matches!(rt, Type::Str | Type::Any),
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

/// How to make a comparison between a string field and a number mean something: convert
/// the field (`float(status) >= 500`, or `str(code) == "7"`). `None` unless a field is involved.
fn conversion_hint(symbol: &str, l: &Node, lt: Type, r: &Node, rt: Type) -> Option<String> {
    let wrap = |node: &Node, t: Type, other: Type| -> Option<String> {
        if !matches!(node.kind, NodeKind::Field(_)) {
            return None;
        }
        match (t, other) {
            // `float` reads decimals too (`int("5.1")` is null), and compares exactly
            // with an integer.
            (Type::Str, Type::Int | Type::Float) => Some(format!("float({node})")),
            (Type::Int | Type::Float | Type::Bool, Type::Str) => Some(format!("str({node})")),
            _ => None,
        }
    };
    if let Some(left) = wrap(l, lt, rt) {
        return Some(format!("convert it first: `{left} {symbol} {r}`"));
    }
    wrap(r, rt, lt).map(|right| format!("convert it first: `{l} {symbol} {right}`"))
}

/// The regex crate's explanation, on one line.
pub(super) fn regex_reason(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(&text);
    last.trim().trim_start_matches("error:").trim().to_string()
}
