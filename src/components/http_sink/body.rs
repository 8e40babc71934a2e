//! A batch's request body: NDJSON lines, one JSON array, or CSV with a header row.

use super::args::BodyFormat;

/// The body of `records` (each a JSON object, or a CSV row for `Csv`).
pub(crate) fn body(format: BodyFormat, names: &[String], records: &[String]) -> Vec<u8> {
    let size: usize = records.iter().map(|r| r.len() + 1).sum();
    let mut out = String::with_capacity(size + 2);
    match format {
        BodyFormat::Ndjson => {
            for r in records {
                out.push_str(r);
                out.push('\n');
            }
        }
        BodyFormat::Json => {
            out.push('[');
            for (i, r) in records.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(r);
            }
            out.push(']');
        }
        BodyFormat::Csv => {
            let csv = crate::components::sink_format::RecordFormat::Csv;
            crate::components::sink_format::push_header(&mut out, csv, names);
            out.push('\n');
            for r in records {
                out.push_str(r);
                out.push('\n');
            }
        }
    }
    out.into_bytes()
}

/// The batches `records` make: at most `max_records` records and (unless one record is
/// larger) `max_bytes` bytes each.
pub(crate) fn cut(records: Vec<String>, max_records: usize, max_bytes: usize) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut bytes = 0;
    for r in records {
        let fits = out
            .last()
            .is_some_and(|b| b.len() < max_records && bytes + r.len() < max_bytes);
        if !fits {
            out.push(Vec::new());
            bytes = 0;
        }
        bytes += r.len() + 1;
        if let Some(b) = out.last_mut() {
            b.push(r);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_and_cuts() {
        let names = vec!["a".to_string()];
        let recs = vec![r#"{"a":1}"#.to_string(), r#"{"a":2}"#.to_string()];
        assert_eq!(
            body(BodyFormat::Ndjson, &names, &recs),
            b"{\"a\":1}\n{\"a\":2}\n"
        );
        assert_eq!(
            body(BodyFormat::Json, &names, &recs),
            b"[{\"a\":1},{\"a\":2}]"
        );
        let rows = vec!["1".to_string(), "2".to_string()];
        assert_eq!(body(BodyFormat::Csv, &names, &rows), b"a\n1\n2\n");
        let many: Vec<String> = (0..5).map(|i| format!("r{i}")).collect();
        let sizes: Vec<usize> = cut(many.clone(), 2, 1000).iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![2, 2, 1]);
        let sizes: Vec<usize> = cut(many, 100, 7).iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![2, 2, 1]);
    }
}
