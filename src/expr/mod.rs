//! The `filter` expression language (SPEC §4): parsing, checking against input fields, and
//! evaluation over tuple values. (Interface placeholder: the DSL/expression work fills it in.)

use crate::tuple::Value;
use std::ops::Range;

/// A problem inside an expression, located by byte range within the expression text.
#[derive(Debug, Clone, PartialEq)]
pub struct ExprError {
    pub span: Range<usize>,
    pub message: String,
    pub help: Option<String>,
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    _private: (),
}

/// An expression bound to the input fields, ready to evaluate per tuple.
#[derive(Debug, Clone)]
pub struct Compiled {
    _private: (),
}

pub fn parse(text: &str) -> Result<Expr, ExprError> {
    Err(ExprError {
        span: 0..text.len(),
        message: "filter expressions are not implemented yet".into(),
        help: None,
    })
}

impl Expr {
    /// Every problem with this expression given the input fields (unknown fields, bad regex,
    /// operand types).
    pub fn check(&self, _fields: &[String]) -> Vec<ExprError> {
        Vec::new()
    }

    /// Bind field names to positions.
    pub fn compile(&self, _fields: &[String]) -> Result<Compiled, ExprError> {
        Err(ExprError {
            span: 0..0,
            message: "filter expressions are not implemented yet".into(),
            help: None,
        })
    }
}

impl Compiled {
    pub fn eval(&self, _values: &[Value]) -> bool {
        false
    }
}
