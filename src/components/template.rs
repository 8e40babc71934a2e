//! Text with `{field}` holes (`{{` and `}}` are literal braces), split into its pieces: the
//! shape the `redis` key templates and the `file` sink's paths share. Each reads the pieces
//! its own way (a path also holds strftime patterns) and words its own errors.

/// One piece of a template as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    Text(String),
    /// `{name}`: the name, trimmed.
    Field(String),
}

/// Why a template cannot be read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum SplitError {
    /// A `{` with no `}` after it.
    Unclosed,
    /// `{}` (or only spaces between the braces).
    Empty,
    /// A `}` with no `{` before it.
    LoneClose,
}

/// The pieces of `text`, in order; adjacent text is one piece, and no text piece is empty.
pub(crate) fn split(text: &str) -> Result<Vec<Part>, SplitError> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' | '}' if chars.peek() == Some(&c) => {
                chars.next();
                literal.push(c);
            }
            '{' => {
                let mut name = String::new();
                let closed = chars.by_ref().any(|c| {
                    let end = c == '}';
                    if !end {
                        name.push(c);
                    }
                    end
                });
                if !closed {
                    return Err(SplitError::Unclosed);
                }
                if name.trim().is_empty() {
                    return Err(SplitError::Empty);
                }
                if !literal.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut literal)));
                }
                parts.push(Part::Field(name.trim().to_string()));
            }
            '}' => return Err(SplitError::LoneClose),
            c => literal.push(c),
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Text(literal));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_text_and_escaped_braces() {
        let t = |s: &str| Part::Text(s.into());
        let f = |s: &str| Part::Field(s.into());
        assert_eq!(
            split("user:{ user }:{{x}}/{day}"),
            Ok(vec![t("user:"), f("user"), t(":{x}/"), f("day")])
        );
        assert_eq!(split("plain"), Ok(vec![t("plain")]));
        assert_eq!(split(""), Ok(vec![]));
    }

    #[test]
    fn unclosed_empty_and_lone_braces_are_errors() {
        assert_eq!(split("a{b"), Err(SplitError::Unclosed));
        assert_eq!(split("a{ }"), Err(SplitError::Empty));
        assert_eq!(split("a}b"), Err(SplitError::LoneClose));
    }
}
