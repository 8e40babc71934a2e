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

/// 1-based line and column (in characters) of a byte offset; offsets past the end or inside a
/// character are clamped. For many lookups in one text, use a `LineIndex`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    LineIndex::new(text).line_col(text, offset)
}

/// Where each line of a text starts, for fast offset → line/column lookups.
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// 1-based line and column (in characters) of a byte offset in `text` (the indexed text).
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1].min(offset);
        (line, text[start..offset].chars().count() + 1)
    }

    /// The text of a 1-based line, without its line break.
    pub fn line<'t>(&self, text: &'t str, line: usize) -> &'t str {
        let start = self
            .starts
            .get(line.wrapping_sub(1))
            .copied()
            .unwrap_or(text.len());
        let end = self
            .starts
            .get(line)
            .map_or(text.len(), |e| e.saturating_sub(1));
        let l = text
            .get(start.min(text.len())..end.max(start).min(text.len()))
            .unwrap_or("");
        l.strip_suffix('\r').unwrap_or(l)
    }
}

impl Diagnostic {
    /// A problem about the file as a whole (no place in it).
    pub fn unlocated(severity: Severity, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity,
            message: message.into(),
            span: None,
            help: None,
        }
    }

    fn severity_word(&self) -> &'static str {
        match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }

    /// Rendered like a compiler's: `FILE:LINE:COL: error: MESSAGE`, the source line with an
    /// underline under the span, then `= help:` when there is one. Ends with a newline.
    pub fn render(&self, source: &Source) -> String {
        self.render_with(source, &LineIndex::new(&source.text))
    }

    fn render_with(&self, source: &Source, index: &LineIndex) -> String {
        let mut out = String::new();
        let Some(span) = self.span else {
            out.push_str(&format!(
                "{}: {}: {}\n",
                source.name,
                self.severity_word(),
                self.message
            ));
            if let Some(help) = &self.help {
                out.push_str(&format!("  = help: {help}\n"));
            }
            return out;
        };
        let text = source.text.as_str();
        let (line, col) = index.line_col(text, span.start);
        out.push_str(&format!(
            "{}:{line}:{col}: {}: {}\n",
            source.name,
            self.severity_word(),
            self.message
        ));
        let line_text = index.line(text, line);
        // Underline up to the end of the span or the end of its first line.
        let line_chars = line_text.chars().count();
        let (end_line, end_col) = index.line_col(text, span.end.max(span.start));
        let last = if end_line == line {
            end_col
        } else {
            line_chars + 1
        };
        let width = last.saturating_sub(col).max(1);
        let gutter = line.to_string().len();
        let pad = " ".repeat(gutter);
        let indent: String = line_text
            .chars()
            .take(col - 1)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        out.push_str(&format!("{pad} |\n{line} | {line_text}\n"));
        out.push_str(&format!("{pad} | {indent}{}\n", "^".repeat(width)));
        if let Some(help) = &self.help {
            out.push_str(&format!("{pad} = help: {help}\n"));
        }
        out
    }

    /// The JSON form: `{file, line, column, severity, message, help}`.
    pub fn to_json(&self, source: &Source) -> serde_json::Value {
        self.to_json_with(source, &LineIndex::new(&source.text))
    }

    fn to_json_with(&self, source: &Source, index: &LineIndex) -> serde_json::Value {
        let (line, column) = match self.span {
            Some(s) => {
                let (l, c) = index.line_col(&source.text, s.start);
                (serde_json::Value::from(l), serde_json::Value::from(c))
            }
            None => (serde_json::Value::Null, serde_json::Value::Null),
        };
        serde_json::json!({
            "file": source.name,
            "line": line,
            "column": column,
            "severity": self.severity_word(),
            "message": self.message,
            "help": self.help,
        })
    }
}

/// Render diagnostics of one source, errors and warnings in source order.
pub fn render_all(diagnostics: &[Diagnostic], source: &Source) -> String {
    let mut sorted: Vec<&Diagnostic> = diagnostics.iter().collect();
    sorted.sort_by_key(|d| d.span.map_or(0, |s| s.start));
    let index = LineIndex::new(&source.text);
    sorted
        .iter()
        .map(|d| d.render_with(source, &index))
        .collect()
}

/// The JSON form of diagnostics of one source (see `Diagnostic::to_json`).
pub fn json_all(diagnostics: &[Diagnostic], source: &Source) -> Vec<serde_json::Value> {
    let index = LineIndex::new(&source.text);
    diagnostics
        .iter()
        .map(|d| d.to_json_with(source, &index))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_not_bytes() {
        assert_eq!(line_col("é: x\nab", 4), (1, 4));
        assert_eq!(line_col("é: x\nab", 7), (2, 2));
        assert_eq!(line_col("abc", 99), (1, 4));
        assert_eq!(line_col("a\n\nb", 2), (2, 1));
        assert_eq!(line_col("", 0), (1, 1));
        let text = "one\r\ntwo\n";
        let index = LineIndex::new(text);
        assert_eq!(index.line(text, 1), "one");
        assert_eq!(index.line(text, 2), "two");
        assert_eq!(index.line(text, 3), "");
        assert_eq!(index.line(text, 9), "");
    }

    #[test]
    fn render_points_at_the_span() {
        let source = Source {
            name: "t.yaml".into(),
            text: "name: x\ntype: splt\n".into(),
        };
        let d = Diagnostic::error("unknown component type `splt`", Span::new(14, 18))
            .with_help("did you mean `split`?");
        assert_eq!(
            d.render(&source),
            "t.yaml:2:7: error: unknown component type `splt`\n  |\n2 | type: splt\n  |       ^^^^\n  = help: did you mean `split`?\n"
        );
    }
}
