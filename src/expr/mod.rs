//! The expression language of `filter`'s `where` and `map`'s `set`: parsing, checking against
//! the input fields and their types, and evaluation over tuple values.
//!
//! ```text
//! word contains "ka" and not len(word) < 3
//! int(status) >= 500 and lower(method) == "get"
//! ```
//!
//! Precedence, loosest first: `or`, `and`, `not`, then one comparison (`==` `!=` `<` `<=` `>`
//! `>=` `contains` `starts_with` `ends_with` `=~`) between two operands, then `+ -`, then
//! `* / %`, then unary `-`, over fields, string and number literals, duration literals (`5m`),
//! `true` `false` `null`, function calls and parentheses. So, as in Python,
//! `not len(word) < 3` means `not (len(word) < 3)`. See `docs/expressions.md`.

mod ast;
mod check;
mod eval;
mod functions;
mod location;
mod parser;
mod syntax_error;
mod types;

pub(crate) use location::source_span;
pub(crate) use types::Type;

use crate::tuple::Value;
use nom_locate::LocatedSpan;
use std::ops::Range;

/// Parser input: the text with its byte offset (shared by the parser and its syntax errors).
type In<'a> = LocatedSpan<&'a str>;

/// A problem inside an expression, located by byte range within the expression text.
#[derive(Debug, Clone, PartialEq)]
pub struct ExprError {
    pub(crate) span: Range<usize>,
    pub(crate) message: String,
    pub(crate) help: Option<String>,
}

impl std::fmt::Display for ExprError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(help) = &self.help {
            write!(f, " ({help})")?;
        }
        Ok(())
    }
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    root: ast::Node,
}

/// An expression bound to the input fields, ready to evaluate per tuple.
#[derive(Debug, Clone)]
pub struct Compiled {
    cond: eval::Cond,
}

/// Parse an expression; a syntax error is located inside `text`.
pub fn parse(text: &str) -> Result<Expr, ExprError> {
    parser::parse(text).map(|root| Expr { root })
}

impl Expr {
    /// Every problem with this expression given the input fields (unknown fields, bad regex,
    /// operand types).
    pub fn check(&self, fields: &[String]) -> Vec<ExprError> {
        self.check_with(Some(fields))
    }

    /// As `check`; with `None` (input fields not known, e.g. after a shell component that
    /// declares none) field names are not checked.
    fn check_with(&self, fields: Option<&[String]>) -> Vec<ExprError> {
        self.check_typed(fields, &[])
    }

    /// As `check_with`, knowing the type of each input field (by position; `Type::Any` or
    /// missing where unknown): a string field compared with a number is an error.
    pub(crate) fn check_typed(&self, fields: Option<&[String]>, types: &[Type]) -> Vec<ExprError> {
        let mut checker = check::Checker {
            fields,
            types,
            errors: Vec::new(),
        };
        checker.check_root(&self.root);
        checker.errors
    }

    /// Check the expression as a value (`map`'s `set`): its type, and every problem.
    pub(crate) fn check_value(
        &self,
        fields: Option<&[String]>,
        types: &[Type],
    ) -> (Type, Vec<ExprError>) {
        let mut checker = check::Checker {
            fields,
            types,
            errors: Vec::new(),
        };
        let t = checker.ty(&self.root);
        (t, checker.errors)
    }

    /// Bind field names to positions, as a value; fails with the first problem found.
    #[cfg(test)]
    fn compile_value(&self, fields: &[String]) -> Result<CompiledValue, ExprError> {
        let slots: Vec<usize> = (0..fields.len()).collect();
        self.compile_value_at(fields, &slots)
    }

    /// As `compile_value`, field `fields[k]` being read from position `slots[k]` of the
    /// values given to `eval`.
    pub(crate) fn compile_value_at(
        &self,
        fields: &[String],
        slots: &[usize],
    ) -> Result<CompiledValue, ExprError> {
        if let Some(first) = self.check_value(Some(fields), &[]).1.into_iter().next() {
            return Err(first);
        }
        let position = |name: &str| {
            let k = fields.iter().position(|f| f == name)?;
            slots.get(k).copied()
        };
        eval::compile_calc(&self.root, &position)
            .map(|calc| CompiledValue { calc })
            .ok_or_else(|| self.not_evaluable())
    }

    fn not_evaluable(&self) -> ExprError {
        ExprError {
            span: self.root.span.clone(),
            message: "this expression cannot be evaluated".into(),
            help: None,
        }
    }

    /// Bind field names to positions; fails with the first problem `check` finds.
    pub fn compile(&self, fields: &[String]) -> Result<Compiled, ExprError> {
        if let Some(first) = self.check(fields).into_iter().next() {
            return Err(first);
        }
        let position = |name: &str| fields.iter().position(|f| f == name);
        eval::compile_cond(&self.root, &position)
            .map(|cond| Compiled { cond })
            .ok_or_else(|| self.not_evaluable())
    }
}

/// An expression bound to the input fields, computing a value per tuple.
#[derive(Debug, Clone)]
pub(crate) struct CompiledValue {
    calc: eval::Calc,
}

impl CompiledValue {
    /// The value for the tuple with these values (in input field order).
    pub(crate) fn eval(&self, values: &[Value]) -> Value {
        self.calc.eval(values)
    }
}

/// Shows the expression fully parenthesised, as it was understood.
impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.root.fmt(f)
    }
}

impl Compiled {
    /// Whether the tuple with these values (in input field order) passes.
    pub fn eval(&self, values: &[Value]) -> bool {
        self.cond.eval(values)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod value_tests;
