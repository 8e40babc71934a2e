//! The compact DSL (`.storm` files and `-e TEXT`), parsed with nom into the same raw form as
//! YAML. (Interface placeholder: the DSL work fills it in.)

use crate::diag::Diagnostic;
use crate::topology::raw::{RawTopology, Span};

/// Parse DSL text. Syntax errors are reported in `RawTopology::diagnostics`, located by byte
/// offset in `text`; never panics.
pub fn parse(text: &str) -> RawTopology {
    RawTopology {
        diagnostics: vec![Diagnostic::error(
            "the DSL is not implemented yet",
            Span::new(0, text.len().min(1)),
        )],
        ..RawTopology::default()
    }
}
