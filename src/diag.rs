//! Located diagnostics: errors and warnings with a span in a named source, rendered like a
//! compiler's (`FILE:LINE:COL: error: MESSAGE`, the line, a caret, `help:`), or as JSON.

use crate::topology::raw::Span;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

/// One problem found in a source.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    /// Where in the source; `None` for problems about the file as a whole.
    pub span: Option<Span>,
    /// A suggestion (`help: did you mean `count`?`).
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span: Some(span),
            help: None,
        }
    }

    pub fn warning(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            message: message.into(),
            span: Some(span),
            help: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// A named source text, for rendering diagnostics against.
#[derive(Debug, Clone)]
pub struct Source {
    /// As shown in messages (`topologies/wordcount.yaml`, or `<-e>` for inline DSL).
    pub name: String,
    pub text: String,
}
