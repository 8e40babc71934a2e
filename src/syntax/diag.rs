//! Located diagnostics: errors and warnings with a span in a named source, rendered like a
//! compiler's (`FILE:LINE:COL: error: MESSAGE`, the line, a caret, `help:`), or as JSON.

/// A byte range in the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub(crate) fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub(crate) fn join(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Severity {
    Warning,
    Error,
}

/// One problem found in a source.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub(crate) severity: Severity,
    pub(crate) message: String,
    /// Where in the source; `None` for problems about the file as a whole.
    pub span: Option<Span>,
    /// A suggestion (`help: did you mean `count`?`).
    pub(crate) help: Option<String>,
}

impl Diagnostic {
    pub(crate) fn error(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span: Some(span),
            help: None,
        }
    }

    pub(crate) fn warning(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            message: message.into(),
            span: Some(span),
            help: None,
        }
    }

    pub(crate) fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
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
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    LineIndex::new(text).line_col(text, offset)
}

/// Where each line of a text starts, for fast offset → line/column lookups.
#[derive(Debug, Clone)]
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// 1-based line and column (in characters) of a byte offset in `text` (the indexed text).
    pub(crate) fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1].min(offset);
        (line, text[start..offset].chars().count() + 1)
    }

    /// The text of a 1-based line, without its line break.
    fn line<'t>(&self, text: &'t str, line: usize) -> &'t str {
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
    pub(crate) fn unlocated(severity: Severity, message: impl Into<String>) -> Diagnostic {
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
        let full_line = index.line(text, line);
        // Underline up to the end of the span or the end of its first line.
        let line_chars = full_line.chars().count();
        let (end_line, end_col) = index.line_col(text, span.end.max(span.start));
        let last = if end_line == line {
            end_col
        } else {
            line_chars + 1
        };
        let excerpt = Excerpt::of(full_line, col);
        let col = col - excerpt.skipped;
        let width = last
            .saturating_sub(col + excerpt.skipped)
            .max(1)
            .min(excerpt.room(col));
        let gutter = line.to_string().len();
        let pad = " ".repeat(gutter);
        let indent: String = excerpt
            .text
            .chars()
            .take(col - 1)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        out.push_str(&format!("{pad} |\n{line} | {}\n", excerpt.text));
        out.push_str(&format!("{pad} | {indent}{}\n", "^".repeat(width)));
        if let Some(help) = &self.help {
            out.push_str(&format!("{pad} = help: {help}\n"));
        }
        out
    }

    /// The JSON form: `{file, line, column, severity, message, help}`, lines found with `index`.
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

/// The most characters of a source line shown under a diagnostic: a longer line is cut to a
/// window around the column (a minified file must not repeat its whole text per error).
const MAX_EXCERPT_CHARS: usize = 120;
/// How far before the column the window of a long line starts.
const EXCERPT_LEAD: usize = 40;
/// The most diagnostics rendered for one source; the rest are counted in one last line.
const MAX_REPORTED: usize = 100;

/// The part of a source line shown under a diagnostic.
struct Excerpt {
    /// The characters shown, with `…` where the line was cut.
    text: String,
    /// Characters of the line before the window, less the one the `…` takes.
    skipped: usize,
}

impl Excerpt {
    /// The whole line when short, else a window of it that holds column `col` (1-based).
    fn of(line: &str, col: usize) -> Excerpt {
        let chars = line.chars().count();
        if chars <= MAX_EXCERPT_CHARS {
            return Excerpt {
                text: line.to_string(),
                skipped: 0,
            };
        }
        let start = col
            .saturating_sub(1 + EXCERPT_LEAD)
            .min(chars - MAX_EXCERPT_CHARS);
        let mut text = String::new();
        if start > 0 {
            text.push('…');
        }
        text.extend(line.chars().skip(start).take(MAX_EXCERPT_CHARS));
        if start + MAX_EXCERPT_CHARS < chars {
            text.push('…');
        }
        Excerpt {
            text,
            skipped: start.saturating_sub(usize::from(start > 0)),
        }
    }

    /// Columns left for an underline that starts at `col` of the excerpt.
    fn room(&self, col: usize) -> usize {
        self.text.chars().count().saturating_sub(col - 1).max(1)
    }
}

/// `and 3 more errors`, `and 1 more error and 2 more warnings`: what was left out.
fn more_line(left_out: &[&Diagnostic]) -> String {
    let errors = left_out.iter().filter(|d| d.is_error()).count();
    let warnings = left_out.len() - errors;
    let count = |n: usize, what: &str| format!("{n} more {what}{}", if n == 1 { "" } else { "s" });
    match (errors, warnings) {
        (e, 0) => format!("and {}", count(e, "error")),
        (0, w) => format!("and {}", count(w, "warning")),
        (e, w) => format!("and {} and {}", count(e, "error"), count(w, "warning")),
    }
}

/// Render diagnostics of one source, errors and warnings in source order.
pub fn render_all(diagnostics: &[Diagnostic], source: &Source) -> String {
    let mut sorted: Vec<&Diagnostic> = diagnostics.iter().collect();
    sorted.sort_by_key(|d| d.span.map_or(0, |s| s.start));
    let index = LineIndex::new(&source.text);
    let shown = sorted.len().min(MAX_REPORTED);
    let mut out: String = sorted[..shown]
        .iter()
        .map(|d| d.render_with(source, &index))
        .collect();
    if shown < sorted.len() {
        out.push_str(&format!(
            "{}: {}\n",
            source.name,
            more_line(&sorted[shown..])
        ));
    }
    out
}

/// The JSON form of diagnostics of one source: `{file, line, column, severity, message, help}`
/// each.
pub fn json_all(diagnostics: &[Diagnostic], source: &Source) -> Vec<serde_json::Value> {
    let index = LineIndex::new(&source.text);
    let shown = diagnostics.len().min(MAX_REPORTED);
    let mut out: Vec<serde_json::Value> = diagnostics[..shown]
        .iter()
        .map(|d| d.to_json_with(source, &index))
        .collect();
    let left_out: Vec<&Diagnostic> = diagnostics[shown..].iter().collect();
    if let Some(worst) = left_out.iter().map(|d| d.severity).max() {
        let more = Diagnostic::unlocated(worst, more_line(&left_out));
        out.push(more.to_json_with(source, &index));
    }
    out
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
    fn a_long_line_is_shown_as_a_window_around_the_column() {
        let line = format!("{}bad{}", "a".repeat(300), "z".repeat(300));
        let source = Source {
            name: "t.yaml".into(),
            text: format!("{line}\n"),
        };
        let d = Diagnostic::error("here", Span::new(300, 303));
        let out = d.render(&source);
        let shown: Vec<&str> = out.lines().collect();
        assert_eq!(shown[0], "t.yaml:1:301: error: here");
        let excerpt = shown[2].strip_prefix("1 | ").unwrap();
        let caret = shown[3].strip_prefix("  | ").unwrap();
        assert_eq!(excerpt.chars().count(), MAX_EXCERPT_CHARS + 2);
        assert!(excerpt.starts_with('…') && excerpt.ends_with('…'));
        // The underline sits under `bad` in the excerpt.
        let at = caret.find('^').unwrap();
        let under: String = excerpt.chars().skip(at).take(3).collect();
        assert_eq!(under, "bad");
        assert_eq!(caret.trim(), "^^^");
        // A span running to the end of a long line is underlined to the window's end only.
        let wide = Diagnostic::error("all", Span::new(0, 600)).render(&source);
        assert!(wide
            .lines()
            .all(|l| l.chars().count() <= MAX_EXCERPT_CHARS + 10));
    }

    #[test]
    fn only_the_first_hundred_diagnostics_are_rendered_then_a_count() {
        let source = Source {
            name: "t.yaml".into(),
            text: "x".repeat(1000),
        };
        let mut all: Vec<Diagnostic> = (0..250)
            .map(|i| Diagnostic::error(format!("e{i}"), Span::new(i, i + 1)))
            .collect();
        all.push(Diagnostic::warning("w", Span::new(999, 1000)));
        let text = render_all(&all, &source);
        assert_eq!(text.matches(": error: ").count(), MAX_REPORTED);
        assert!(text.contains("t.yaml:1:100: error: e99\n"));
        assert!(!text.contains("e100"));
        assert!(text.ends_with("t.yaml: and 150 more errors and 1 more warning\n"));
        let json = json_all(&all, &source);
        assert_eq!(json.len(), MAX_REPORTED + 1);
        assert_eq!(
            json[100]["message"],
            "and 150 more errors and 1 more warning"
        );
        assert_eq!(json[100]["severity"], "error");
        // Under the cap, nothing is added.
        assert_eq!(json_all(&all[..3], &source).len(), 3);
        assert!(!render_all(&all[..3], &source).contains("more"));
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
