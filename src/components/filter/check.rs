//! Validation of a `filter`: `args.where` parsed and checked against the input fields and
//! their types, the expression's own error positions mapped back into the topology file.

use crate::components::builtin::Written;
use crate::syntax::diag::Diagnostic;
use crate::syntax::raw::{RawValue, Span, Spanned};

/// Parse `args.where` and check it against the input fields, mapping the expression's
/// own spans back to the file.
pub(super) fn expression(w: &mut Written, input: Option<&[String]>, types: &[crate::expr::Type]) {
    let at = w.at_type();
    let Some(wh) = w.arg("where").cloned() else {
        w.error("filter without `args.where`", at).help =
            Some("e.g. `args: { where: 'word contains \"ka\"' }`".into());
        return;
    };
    let Some(text) = wh.value.as_str() else {
        w.error("`where` must be an expression string", wh.span);
        return;
    };
    let base = expression_offset(w.text, &wh, text);
    let to_span = |r: std::ops::Range<usize>| match base {
        Some(b) => Span::new(b + r.start, b + r.end.max(r.start)),
        None => wh.span,
    };
    let errors = match crate::expr::parse(text) {
        Err(e) => vec![e],
        Ok(expr) => input
            .map(|f| expr.check_typed(Some(f), types))
            .unwrap_or_default(),
    };
    for e in errors {
        let mut d = Diagnostic::error(
            format!("in filter expression: {}", e.message),
            to_span(e.span),
        );
        d.help = e.help;
        w.diags.push(d);
    }
}

/// Where an expression's text starts in the file: found verbatim inside its scalar's span,
/// else just after the opening quote (escapes then shift positions slightly).
fn expression_offset(source: &str, w: &Spanned<RawValue>, text: &str) -> Option<usize> {
    let written = source.get(w.span.start..w.span.end)?;
    if let Some(i) = written.find(text) {
        return Some(w.span.start + i);
    }
    match &w.value {
        RawValue::Str { quoted: true, .. } => Some(w.span.start + 1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(text: &str, span: Span, quoted: bool) -> Spanned<RawValue> {
        Spanned::new(
            RawValue::Str {
                text: text.into(),
                quoted,
            },
            span,
        )
    }

    #[test]
    fn expression_positions_map_back_into_the_file() {
        let src = "where: 'len(word) > 3'";
        let w = scalar("len(word) > 3", Span::new(7, 22), true);
        assert_eq!(expression_offset(src, &w, "len(word) > 3"), Some(8));
        let src = "where: len(word) > 3";
        let w = scalar("len(word) > 3", Span::new(7, 20), false);
        assert_eq!(expression_offset(src, &w, "len(word) > 3"), Some(7));
        // An escape changes the text: fall back to just after the quote.
        let src = r#"where: "a == \"x\"""#;
        let w = scalar("a == \"x\"", Span::new(7, src.len()), true);
        assert_eq!(expression_offset(src, &w, "a == \"x\""), Some(8));
    }
}
