//! How the `file` and `http` sinks write a tuple as a record: a JSON object (one a line), a
//! CSV or TSV row, or one field's text as it is (`raw`).

use crate::tuple::Value;

/// A record's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordFormat {
    /// One JSON object per record, the field names as keys.
    Json,
    /// RFC 4180 CSV, cells quoted where needed.
    Csv,
    /// Values joined by TAB, `\t \n \r \\` escaped.
    Tsv,
    /// One field's text (`field`), as it is.
    Raw,
}

impl RecordFormat {
    /// The format `name` stands for (`ndjson` and `jsonl` are `json`).
    pub(crate) fn from_name(name: &str) -> Option<RecordFormat> {
        Some(match name {
            "json" | "ndjson" | "jsonl" => RecordFormat::Json,
            "csv" => RecordFormat::Csv,
            "tsv" => RecordFormat::Tsv,
            "raw" => RecordFormat::Raw,
            _ => return None,
        })
    }
}

/// Append the record of `values` (fields `names`) to `out`, without a line end. `raw` writes
/// the value at `raw_at`.
pub(crate) fn push_record(
    out: &mut String,
    format: RecordFormat,
    names: &[String],
    values: &[Value],
    raw_at: usize,
) {
    match format {
        RecordFormat::Json => {
            let mut obj = serde_json::Map::new();
            for (name, v) in names.iter().zip(values.iter()) {
                obj.insert(name.clone(), v.to_json());
            }
            out.push_str(&serde_json::Value::Object(obj).to_string());
        }
        RecordFormat::Csv | RecordFormat::Tsv => {
            let mut cell = String::new();
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    out.push(if format == RecordFormat::Csv {
                        ','
                    } else {
                        '\t'
                    });
                }
                cell.clear();
                v.write_plain(&mut cell);
                match format {
                    RecordFormat::Csv => super::stdout::push_csv_cell(out, &cell),
                    _ => super::stdout::push_tsv_cell(out, &cell),
                }
            }
        }
        RecordFormat::Raw => {
            if let Some(v) = values.get(raw_at) {
                v.write_plain(out);
            }
        }
    }
}

/// A CSV or TSV header row of `names` (no line end).
pub(crate) fn push_header(out: &mut String, format: RecordFormat, names: &[String]) {
    for (i, n) in names.iter().enumerate() {
        if i > 0 {
            out.push(if format == RecordFormat::Csv {
                ','
            } else {
                '\t'
            });
        }
        match format {
            RecordFormat::Csv => super::stdout::push_csv_cell(out, n),
            _ => super::stdout::push_tsv_cell(out, n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_in_each_format() {
        let names = vec!["a".to_string(), "b".to_string()];
        let values = vec![Value::str("x,y"), Value::Int(3)];
        let row = |f| {
            let mut s = String::new();
            push_record(&mut s, f, &names, &values, 1);
            s
        };
        assert_eq!(row(RecordFormat::Json), r#"{"a":"x,y","b":3}"#);
        assert_eq!(row(RecordFormat::Csv), "\"x,y\",3");
        assert_eq!(row(RecordFormat::Tsv), "x,y\t3");
        assert_eq!(row(RecordFormat::Raw), "3");
        assert_eq!(RecordFormat::from_name("ndjson"), Some(RecordFormat::Json));
        assert_eq!(RecordFormat::from_name("xml"), None);
    }
}
