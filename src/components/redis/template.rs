//! Key templates: text with `{field}` holes filled from a tuple's fields (`user:{user}`);
//! `{{` and `}}` are literal braces.

use crate::tuple::Value;

/// One piece of a template.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    /// A field, by name until [`Template::bind`] gives its position in the input.
    Field(String, usize),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// Parse `text`; an unclosed `{`, a lone `}` or an empty `{}` is an error.
    pub(crate) fn parse(text: &str) -> Result<Template, String> {
        use crate::components::template::{split, Part, SplitError};
        let parts = split(text).map_err(|e| match e {
            SplitError::Unclosed => format!("`{text}` has an unclosed `{{`"),
            SplitError::Empty => format!("`{text}` has an empty `{{}}`: name a field"),
            SplitError::LoneClose => {
                format!("`{text}` has a `}}` without its `{{` (write `}}}}`)")
            }
        })?;
        let pieces = parts
            .into_iter()
            .map(|p| match p {
                Part::Text(t) => Piece::Text(t),
                Part::Field(name) => Piece::Field(name, 0),
            })
            .collect();
        Ok(Template { pieces })
    }

    /// The fields the template names, in order.
    pub(crate) fn fields(&self) -> Vec<&str> {
        self.pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Field(n, _) => Some(n.as_str()),
                Piece::Text(_) => None,
            })
            .collect()
    }

    #[cfg(test)]
    /// Whether the template names no field (a fixed key).
    fn is_fixed(&self) -> bool {
        self.fields().is_empty()
    }

    /// Give each named field its position among `inputs`; an error names a missing one.
    pub(crate) fn bind(&mut self, inputs: &[String]) -> Result<(), String> {
        for p in &mut self.pieces {
            if let Piece::Field(name, at) = p {
                *at = inputs
                    .iter()
                    .position(|f| f == name)
                    .ok_or_else(|| format!("the input has no field `{name}`"))?;
            }
        }
        Ok(())
    }

    /// The text for a tuple's values (a missing or null field is empty).
    pub(crate) fn render(&self, values: &[Value]) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Field(_, at) => {
                    if let Some(v) = values.get(*at) {
                        v.write_plain(&mut out);
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_filled_in_and_braces_escaped() {
        let mut t = Template::parse("user:{user}:{{x}}:{n}").expect("parses");
        assert_eq!(t.fields(), ["user", "n"]);
        t.bind(&["n".into(), "user".into()]).expect("binds");
        let got = t.render(&[Value::Int(3), Value::str("ann")]);
        assert_eq!(got, "user:ann:{x}:3");
        assert!(Template::parse("fixed").expect("parses").is_fixed());
    }

    #[test]
    fn broken_templates_and_missing_fields_are_errors() {
        assert!(Template::parse("a{b").is_err());
        assert!(Template::parse("a{}").is_err());
        assert!(Template::parse("a}b").is_err());
        let mut t = Template::parse("{nope}").expect("parses");
        let err = t.bind(&["user".into()]).err().unwrap_or_default();
        assert!(err.contains("`nope`"), "{err}");
    }
}
