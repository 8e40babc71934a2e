//! JSON that is not one object per line: pretty-printed objects over several lines, values
//! written one after another (`{…}{…}`), and a top-level array whose elements are the records.
//! A byte scanner cuts the text fed to it into top-level values, holding one value at a time:
//! a large array costs the memory of its largest element, never the whole. A value longer than
//! the record limit is skipped to its end and reported once.

/// Cuts fed text into whole top-level JSON values.
pub(crate) struct JsonStream {
    /// The value being gathered.
    buf: String,
    /// Nesting depth inside the value being gathered.
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// A top-level array is open: its elements are the values.
    in_array: bool,
    /// A value outside brackets (a number, `true`, a string) is being gathered.
    scalar: bool,
    /// The value being gathered passed the record limit: skipped to its end.
    skipping: bool,
    max: usize,
}

/// One piece of the fed text's outcome.
#[derive(Debug, PartialEq)]
pub(crate) enum Piece {
    /// A whole value's text.
    Value(String),
    /// A value longer than the limit was skipped.
    TooLong,
    /// Text that is no JSON value here (a stray `]`, `,` outside an array).
    Stray(char),
}

impl JsonStream {
    pub(crate) fn new(max: usize) -> JsonStream {
        JsonStream {
            buf: String::new(),
            depth: 0,
            in_string: false,
            escaped: false,
            in_array: false,
            scalar: false,
            skipping: false,
            max,
        }
    }

    pub(crate) fn set_max(&mut self, max: usize) {
        self.max = max;
    }

    /// A value is open: the text fed so far does not end between records.
    pub(crate) fn is_open(&self) -> bool {
        self.depth > 0 || self.scalar || !self.buf.is_empty()
    }

    /// Inside a top-level array (between or in its elements).
    pub(crate) fn in_array(&self) -> bool {
        self.in_array
    }

    /// Go on between the elements of a top-level array (a resumed run starts there).
    pub(crate) fn resume_in_array(&mut self) {
        self.in_array = true;
    }

    /// Feed one line (its line end is added back): the values it completes, in order.
    pub(crate) fn feed(&mut self, line: &str, out: &mut Vec<Piece>) {
        for c in line.chars() {
            self.step(c, out);
        }
        self.step('\n', out);
    }

    /// Feed a piece of a line that goes on in the next text fed (no line end after it).
    pub(crate) fn feed_piece(&mut self, piece: &str, out: &mut Vec<Piece>) {
        for c in piece.chars() {
            self.step(c, out);
        }
    }

    /// At the end of input: what is left unfinished, if anything.
    pub(crate) fn unfinished(&mut self) -> Option<String> {
        let open = self.is_open() || self.in_array;
        let text = std::mem::take(&mut self.buf);
        *self = JsonStream::new(self.max);
        open.then(|| if text.is_empty() { "[".into() } else { text })
    }

    fn step(&mut self, c: char, out: &mut Vec<Piece>) {
        if self.depth > 0 {
            self.push(c);
            if self.in_string {
                self.string_char(c);
            } else {
                match c {
                    '"' => self.in_string = true,
                    '{' | '[' => self.depth += 1,
                    '}' | ']' => {
                        self.depth -= 1;
                        if self.depth == 0 {
                            self.finish(out);
                        }
                    }
                    _ => {}
                }
            }
            return;
        }
        if self.scalar {
            if self.in_string {
                self.push(c);
                self.string_char(c);
                if !self.in_string {
                    self.finish(out);
                }
                return;
            }
            if c.is_ascii_whitespace() || matches!(c, ',' | ']' | '{' | '[' | '"') {
                self.finish(out);
            } else {
                self.push(c);
                return;
            }
        }
        match c {
            c if c.is_ascii_whitespace() || c == '\u{feff}' => {}
            '{' | '[' if c == '[' && !self.in_array => self.in_array = true,
            '{' | '[' => {
                self.depth = 1;
                self.push(c);
            }
            ',' if self.in_array => {}
            ']' if self.in_array => self.in_array = false,
            ',' | ']' | '}' => out.push(Piece::Stray(c)),
            '"' => {
                self.scalar = true;
                self.in_string = true;
                self.push(c);
            }
            c => {
                self.scalar = true;
                self.push(c);
            }
        }
    }

    fn string_char(&mut self, c: char) {
        if self.escaped {
            self.escaped = false;
        } else if c == '\\' {
            self.escaped = true;
        } else if c == '"' {
            self.in_string = false;
        }
    }

    fn push(&mut self, c: char) {
        if self.skipping {
            return;
        }
        if self.buf.len() + c.len_utf8() > self.max {
            self.skipping = true;
            self.buf = String::new();
            return;
        }
        self.buf.push(c);
    }

    /// The value gathered is whole.
    fn finish(&mut self, out: &mut Vec<Piece>) {
        self.scalar = false;
        if std::mem::take(&mut self.skipping) {
            out.push(Piece::TooLong);
        } else {
            out.push(Piece::Value(std::mem::take(&mut self.buf)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(lines: &[&str]) -> Vec<Piece> {
        let mut s = JsonStream::new(1 << 20);
        let mut out = Vec::new();
        for l in lines {
            s.feed(l, &mut out);
        }
        assert!(!s.is_open() && !s.in_array(), "all values closed");
        out
    }

    fn v(text: &str) -> Piece {
        Piece::Value(text.to_string())
    }

    #[test]
    fn arrays_pretty_printing_and_concatenation() {
        assert_eq!(
            values(&[r#"[{"a":1},{"a":"x]}"} , {"b":[1,{"c":2}]}]"#]),
            vec![
                v(r#"{"a":1}"#),
                v(r#"{"a":"x]}"}"#),
                v(r#"{"b":[1,{"c":2}]}"#)
            ]
        );
        assert_eq!(
            values(&[
                "[",
                "  {",
                "    \"a\": \"q\\\"}\"",
                "  },",
                "  {\"a\": 2}",
                "]"
            ]),
            vec![v("{\n    \"a\": \"q\\\"}\"\n  }"), v("{\"a\": 2}")]
        );
        assert_eq!(
            values(&[r#"{"a":1}{"a":2} {"a":3}"#]),
            vec![v(r#"{"a":1}"#), v(r#"{"a":2}"#), v(r#"{"a":3}"#)]
        );
        assert_eq!(
            values(&["[1, \"s\", true]"]),
            vec![v("1"), v("\"s\""), v("true")]
        );
    }

    #[test]
    fn a_value_past_the_limit_is_skipped_alone() {
        let mut s = JsonStream::new(16);
        let mut out = Vec::new();
        s.feed(r#"[{"a":"0123456789abcdef"},{"a":1}]"#, &mut out);
        assert_eq!(out, vec![Piece::TooLong, v(r#"{"a":1}"#)]);
    }

    #[test]
    fn an_array_left_open_is_unfinished() {
        let mut s = JsonStream::new(1 << 20);
        let mut out = Vec::new();
        s.feed("[{\"a\":1},", &mut out);
        assert_eq!(out, vec![v("{\"a\":1}")]);
        assert_eq!(s.unfinished().as_deref(), Some("["));
    }
}
