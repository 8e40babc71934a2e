//! The `path` template of the `file` sink: text with `{field}` (the value of an input field)
//! and strftime patterns (`%Y-%m-%d/%H`, in UTC), rendered for each record into the file it
//! goes to. Field values are made safe as path parts (no `/`, no `..`). The static prefix of
//! the template (its directories before the first pattern) is the sink's root.

use std::path::PathBuf;

/// One piece of a template.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    /// Text, with strftime patterns when `timed`.
    Text { text: String, timed: bool },
    /// The value of an input field (its position filled in at prepare).
    Field { name: String, at: usize },
}

/// A parsed `path`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Template {
    written: String,
    pieces: Vec<Piece>,
    /// The rendered time pieces for the last second rendered.
    cache: Option<(i64, Vec<String>)>,
}

impl Template {
    /// Parse `path`: `{name}` is a field (`{{` and `}}` are braces), `%…` a strftime pattern.
    pub(crate) fn parse(path: &str) -> Result<Template, String> {
        if path.trim().is_empty() {
            return Err("is empty".into());
        }
        if path.ends_with('/') {
            return Err(format!(
                "`{path}` ends with `/`: it names a directory, not a file"
            ));
        }
        use crate::components::template::{split, Part, SplitError};
        let parts = split(path).map_err(|e| match e {
            SplitError::LoneClose => format!("`{path}` has a `}}` without its `{{`"),
            SplitError::Unclosed | SplitError::Empty => {
                format!("`{path}` has an empty or unclosed `{{…}}`")
            }
        })?;
        let mut pieces = Vec::with_capacity(parts.len());
        for part in parts {
            pieces.push(match part {
                Part::Text(text) => Piece::Text {
                    timed: text.contains('%'),
                    text,
                },
                Part::Field(name) if name.contains(['{', '/']) => {
                    return Err(format!("`{path}` has an empty or unclosed `{{…}}`"))
                }
                Part::Field(name) => Piece::Field { name, at: 0 },
            });
        }
        let t = Template {
            written: path.to_string(),
            pieces,
            cache: None,
        };
        t.check_time()?;
        Ok(t)
    }

    /// Render every strftime piece once, so a bad pattern is an error before the run.
    fn check_time(&self) -> Result<(), String> {
        for p in &self.pieces {
            if let Piece::Text { text, timed: true } = p {
                jiff::fmt::strtime::format(text.as_str(), jiff::Timestamp::UNIX_EPOCH)
                    .map_err(|e| format!("`{}`: bad time pattern: {e}", self.written))?;
            }
        }
        Ok(())
    }

    /// The field names the template reads, in order.
    pub(crate) fn fields(&self) -> Vec<&str> {
        self.pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Field { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Set where each field is among the input's fields (`position` of a name).
    pub(crate) fn bind(
        &mut self,
        mut position: impl FnMut(&str) -> Option<usize>,
    ) -> Result<(), String> {
        for p in &mut self.pieces {
            if let Piece::Field { name, at } = p {
                *at = position(name).ok_or_else(|| format!("the input has no field `{name}`"))?;
            }
        }
        Ok(())
    }

    /// Whether the template changes with time.
    fn is_timed(&self) -> bool {
        self.pieces
            .iter()
            .any(|p| matches!(p, Piece::Text { timed: true, .. }))
    }

    /// The directories before the first pattern: where the sink writes (never empty: `.`).
    pub(crate) fn root(&self) -> PathBuf {
        let fixed = match self.pieces.first() {
            Some(Piece::Text { text, timed }) => match timed {
                true => &text[..text.find('%').unwrap_or(0)],
                false => text.as_str(),
            },
            _ => "",
        };
        match fixed.rfind('/') {
            Some(0) => PathBuf::from("/"),
            Some(i) => PathBuf::from(&fixed[..i]),
            None => PathBuf::from("."),
        }
    }

    /// The path of a record with `values`, at `epoch_ms` (UTC).
    pub(crate) fn render(&mut self, values: &[crate::tuple::Value], epoch_ms: i64) -> String {
        let second = epoch_ms.div_euclid(1000);
        if self.is_timed() && self.cache.as_ref().is_none_or(|c| c.0 != second) {
            let ts = jiff::Timestamp::from_second(second).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
            let parts = self
                .pieces
                .iter()
                .filter_map(|p| match p {
                    Piece::Text { text, timed: true } => {
                        Some(jiff::fmt::strtime::format(text.as_str(), ts).unwrap_or_default())
                    }
                    _ => None,
                })
                .collect();
            self.cache = Some((second, parts));
        }
        let mut out = String::with_capacity(self.written.len() + 16);
        let mut timed = self.cache.as_ref().map(|c| c.1.iter());
        let mut cell = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text { text, timed: false } => out.push_str(text),
                Piece::Text { timed: true, .. } => {
                    if let Some(s) = timed.as_mut().and_then(|t| t.next()) {
                        out.push_str(s);
                    }
                }
                Piece::Field { at, .. } => {
                    cell.clear();
                    if let Some(v) = values.get(*at) {
                        v.write_plain(&mut cell);
                    }
                    push_safe(&mut out, &cell);
                }
            }
        }
        out
    }
}

/// A field's value as one path part: `/`, `\` and NUL become `_`; empty, `.` and `..` become `_`.
fn push_safe(out: &mut String, value: &str) {
    if value.is_empty() || value == "." || value == ".." {
        out.push('_');
        return;
    }
    out.extend(value.chars().map(|c| {
        if matches!(c, '/' | '\\' | '\0') {
            '_'
        } else {
            c
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuple::Value;

    #[test]
    fn fields_and_time_render() {
        let mut t = Template::parse("out/{service}/%Y-%m-%d/%H.jsonl").expect("parses");
        assert_eq!(t.fields(), vec!["service"]);
        assert_eq!(t.root(), PathBuf::from("out"));
        t.bind(|n| (n == "service").then_some(1)).expect("binds");
        let values = [Value::Int(1), Value::str("api")];
        // 2026-12-03T10:20:00Z
        let ms = 1_796_293_200_000;
        assert_eq!(t.render(&values, ms), "out/api/2026-12-03/10.jsonl");
        let evil = [Value::Int(1), Value::str("../../etc")];
        assert_eq!(t.render(&evil, ms), "out/.._.._etc/2026-12-03/10.jsonl");
        let dots = [Value::Int(1), Value::str("..")];
        assert_eq!(t.render(&dots, ms), "out/_/2026-12-03/10.jsonl");
    }

    #[test]
    fn roots_and_errors() {
        let root = |p: &str| Template::parse(p).map(|t| t.root());
        assert_eq!(root("a.jsonl"), Ok(PathBuf::from(".")));
        assert_eq!(root("/var/log/x/%H.log"), Ok(PathBuf::from("/var/log/x")));
        assert_eq!(root("/x-%H.log"), Ok(PathBuf::from("/")));
        assert_eq!(root("a/b/c.log"), Ok(PathBuf::from("a/b")));
        assert!(Template::parse("out/{service/x").is_err());
        assert!(Template::parse("out/}x").is_err());
        assert!(Template::parse("out/%K.log").is_err());
        assert!(Template::parse("out/").is_err());
        let t = Template::parse("a{{b}}.log").expect("braces");
        assert!(t.fields().is_empty());
    }
}
