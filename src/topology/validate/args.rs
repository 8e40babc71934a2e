//! Validation of built-in components' arguments (SPEC §4), including the `filter` expression,
//! whose own error positions are mapped back into the topology file.

use super::*;

impl Validator<'_> {
    /// The arguments the built-ins read must have the right shape (SPEC §4).
    pub(super) fn args_shape(&mut self, rc: &RawComponent, ctype: ComponentType) {
        use ComponentType::*;
        let Some(args) = &rc.args else { return };
        let RawValue::Map(entries) = &args.value else {
            return; // already reported by the reader
        };
        for (k, v) in entries {
            let expect = match (ctype, k.value.as_str()) {
                (Count | Generate, "fields") => ArgShape::Fields,
                (Split, "field" | "separator") | (File, "path") | (Filter, "where") => {
                    ArgShape::Text
                }
                (Count, "emit") => ArgShape::OneOf(&["end", "tick", "update"]),
                (Generate, "count" | "rate") | (Chaos, "seed") => ArgShape::Number,
                (Chaos, "fail" | "drop") => ArgShape::Fraction,
                (Chaos, "delay") => ArgShape::Duration,
                (Generate, "values") => ArgShape::List,
                _ => continue,
            };
            if let Some(problem) = expect.problem(&v.value) {
                self.error(format!("`args.{}` {problem}", k.value), v.span);
            }
        }
    }

    /// Parse `args.where` and check it against the input fields, mapping the expression's
    /// own spans back to the file.
    pub(super) fn filter_expression(&mut self, rc: &RawComponent, input: Option<&[String]>) {
        let at = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
        let Some(w) = rc.args.as_ref().and_then(|a| a.value.get("where")) else {
            self.error("filter without `args.where`", at).help =
                Some("e.g. `args: { where: 'word contains \"ka\"' }`".into());
            return;
        };
        let Some(text) = w.value.as_str() else {
            self.error("`where` must be an expression string", w.span);
            return;
        };
        let base = expression_offset(self.ctx.text, w, text);
        let to_span = |r: std::ops::Range<usize>| match base {
            Some(b) => Span::new(b + r.start, b + r.end.max(r.start)),
            None => w.span,
        };
        let errors = match crate::expr::parse(text) {
            Err(e) => vec![e],
            Ok(expr) => input.map(|f| expr.check(f)).unwrap_or_default(),
        };
        for e in errors {
            let mut d = Diagnostic::error(
                format!("in filter expression: {}", e.message),
                to_span(e.span),
            );
            d.help = e.help;
            self.diags.push(d);
        }
    }
}

/// What a built-in's argument must look like.
enum ArgShape {
    Fields,
    Text,
    Number,
    Fraction,
    Duration,
    List,
    OneOf(&'static [&'static str]),
}

impl ArgShape {
    fn problem(&self, v: &RawValue) -> Option<String> {
        let ok = match self {
            ArgShape::Fields => match v {
                RawValue::List(l) => {
                    !l.is_empty() && l.iter().all(|f| matches!(f.value, RawValue::Str { .. }))
                }
                _ => false,
            },
            ArgShape::Text => matches!(v, RawValue::Str { .. }),
            ArgShape::Number => {
                matches!(v, RawValue::Int(n) if *n >= 0)
                    || matches!(v, RawValue::Float(f) if *f >= 0.0)
            }
            ArgShape::Fraction => match v {
                RawValue::Int(n) => (0..=1).contains(n),
                RawValue::Float(f) => (0.0..=1.0).contains(f),
                _ => false,
            },
            ArgShape::Duration => crate::config::duration_of(&v.to_json()).is_some(),
            ArgShape::List => matches!(v, RawValue::List(_)),
            ArgShape::OneOf(names) => v.as_str().is_some_and(|s| names.contains(&s)),
        };
        if ok {
            return None;
        }
        Some(match self {
            ArgShape::Fields => "must be a non-empty list of field names".into(),
            ArgShape::Text => "must be a string".into(),
            ArgShape::Number => "must be a number ≥ 0".into(),
            ArgShape::Fraction => "must be a fraction between 0 and 1".into(),
            ArgShape::Duration => "must be a duration (`100ms`, `1s`, or seconds)".into(),
            ArgShape::List => "must be a list".into(),
            ArgShape::OneOf(names) => format!("must be one of: {}", names.join(", ")),
        })
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

    #[test]
    fn argument_shapes() {
        assert!(ArgShape::Fraction.problem(&RawValue::Float(0.5)).is_none());
        assert!(ArgShape::Fraction.problem(&RawValue::Int(2)).is_some());
        assert!(ArgShape::Fields.problem(&RawValue::List(vec![])).is_some());
        let emit = ArgShape::OneOf(&["end", "tick"]);
        assert_eq!(
            emit.problem(&RawValue::Str {
                text: "never".into(),
                quoted: false
            }),
            Some("must be one of: end, tick".into())
        );
    }
}
