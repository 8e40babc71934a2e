//! The cells of a CSV line whose quoted cells are quoted whole (`"…"`, a quote inside written
//! `""`), read as csv-core reads them, for the plain-line fast path; any other use of a quote
//! (inside an unquoted cell, text after a closing quote, a quote left open) is csv-core's to
//! read.

/// Append the (start, end) byte bounds of each cell's text in `b` from the cell that starts at
/// byte `from` (inside the quotes of a quoted cell) to `bounds`. `None` when a quote is used
/// otherwise than around a whole cell.
pub(crate) fn cells_from(
    b: &[u8],
    from: usize,
    delimiter: u8,
    bounds: &mut Vec<usize>,
) -> Option<()> {
    let mut i = from;
    loop {
        let end = if b.get(i) == Some(&b'"') {
            let close = closing_quote(b, i + 1)?;
            bounds.extend([i + 1, close]);
            close + 1
        } else {
            let end = memchr::memchr(delimiter, &b[i..]).map_or(b.len(), |k| i + k);
            if memchr::memchr(b'"', &b[i..end]).is_some() {
                return None;
            }
            bounds.extend([i, end]);
            end
        };
        match b.get(end) {
            None => return Some(()),
            Some(&d) if d == delimiter => i = end + 1,
            // Text after a closing quote.
            Some(_) => return None,
        }
    }
}

/// Where the quoted cell whose text starts at `from` closes (its closing quote); `""` inside
/// is a quote.
fn closing_quote(b: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        let q = at + memchr::memchr(b'"', &b[at..])?;
        if b.get(q + 1) == Some(&b'"') {
            at = q + 2;
        } else {
            return Some(q);
        }
    }
}

/// A quoted cell's text with each `""` read as `"` (an unquoted cell has none).
pub(crate) fn unescape(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains("\"\"") {
        text.replace("\"\"", "\"").into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The cells as `cells_from` and `unescape` read them, or `None`.
    fn read(line: &str) -> Option<Vec<String>> {
        let mut bounds = Vec::new();
        cells_from(line.as_bytes(), 0, b',', &mut bounds)?;
        Some(
            bounds
                .chunks(2)
                .map(|c| unescape(&line[c[0]..c[1]]).into_owned())
                .collect(),
        )
    }

    #[test]
    fn quoted_cells_with_delimiters_and_doubled_quotes() {
        assert_eq!(
            read(r#"a,"b, c","say ""hi""",,"""#).as_deref(),
            Some(&["a", "b, c", "say \"hi\"", "", ""].map(String::from)[..])
        );
        assert_eq!(read(r#""x""#).as_deref(), Some(&["x".to_string()][..]));
        assert_eq!(
            read("a,").as_deref(),
            Some(&["a", ""].map(String::from)[..])
        );
    }

    #[test]
    fn other_uses_of_quotes_are_left_to_csv_core() {
        assert_eq!(read(r#"a"b,c"#), None, "a quote inside an unquoted cell");
        assert_eq!(read(r#""ab"c,d"#), None, "text after the closing quote");
        assert_eq!(read(r#""open,d"#), None, "a quote left open");
        assert_eq!(read(r#" "a",b"#), None, "a space before the quote");
    }

    proptest! {
        /// Any line the `csv` crate writes from cells, and any line at all that `cells` answers
        /// for, reads as the `csv` crate reads it.
        #[test]
        fn reads_what_the_csv_crate_reads(
            written in proptest::collection::vec("[a, \"\u{e9}]{0,5}", 1..5),
            any_line in "[a, \"\u{e9}]{0,12}",
        ) {
            let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
            w.write_record(&written).expect("write");
            let text = String::from_utf8(w.into_inner().expect("flush")).expect("utf8");
            let line = text.strip_suffix('\n').unwrap_or(&text).to_string();
            for line in [line, any_line] {
                let Some(got) = read(&line) else { continue };
                let expected: Vec<String> = csv::ReaderBuilder::new()
                    .has_headers(false)
                    .flexible(true)
                    .from_reader(line.as_bytes())
                    .records()
                    .next()
                    .map(|r| r.expect("csv reads").iter().map(str::to_string).collect())
                    .unwrap_or_else(|| vec![String::new()]);
                prop_assert_eq!(got, expected, "{:?}", line);
            }
        }
    }
}
