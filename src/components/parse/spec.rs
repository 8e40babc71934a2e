//! What a `parse` component (or a `stdin`/`file` spout with `format:`) was asked to read: the
//! format and its options, checked once from the component's arguments. The validator uses it
//! to know the output fields; the runtime builds its parser from it.

use super::types::FieldType;
use serde_json::{Map, Value as Json};

/// The formats `parse` reads.
pub(crate) const FORMATS: &[&str] = &["json", "csv", "tsv", "regex", "logfmt", "kv", "combined"];

/// The fields of Apache/nginx "combined" log lines, in order.
const COMBINED_FIELDS: &[&str] = &[
    "ip", "ident", "user", "time", "method", "path", "protocol", "status", "bytes", "referer",
    "agent",
];

/// A checked parse configuration.
#[derive(Debug, Clone)]
pub struct Spec {
    pub(crate) format: Format,
    /// The input field read (`field`); `None`: the first.
    pub(crate) field: Option<String>,
    /// Output fields in order, each with the type it is converted to (`None`: as read).
    pub(crate) outputs: Vec<(String, Option<FieldType>)>,
}

#[derive(Debug, Clone)]
pub(crate) enum Format {
    /// Top-level or dotted paths, one per output field.
    Json { paths: Vec<Vec<String>> },
    /// `header`: the first line names the columns; `columns`: names given; `keep`: the columns
    /// emitted (all when empty).
    Delimited {
        delimiter: u8,
        header: bool,
        columns: Vec<String>,
        keep: Vec<String>,
    },
    /// Named groups of a regex (`combined` is a fixed one); `keep`: the positions of the
    /// groups emitted (all when `None`).
    Regex {
        pattern: String,
        keep: Option<Vec<usize>>,
    },
    /// `key=value` pairs (logfmt: quoted values with escapes; kv: plain separators).
    Pairs {
        logfmt: bool,
        separator: String,
        pair_separator: Option<String>,
        keys: Vec<String>,
    },
}

/// A problem with the arguments: which argument (for the location) and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecError {
    pub(crate) arg: &'static str,
    pub(crate) message: String,
}

fn err(arg: &'static str, message: impl Into<String>) -> SpecError {
    SpecError {
        arg,
        message: message.into(),
    }
}

/// The Apache/nginx combined log format as a regex with one named group per field.
pub(crate) const COMBINED_PATTERN: &str = r#"^(?P<ip>\S+) (?P<ident>\S+) (?P<user>\S+) \[(?P<time>[^\]]*)\] "(?P<method>\S+) (?P<path>\S+) (?P<protocol>[^"]*)" (?P<status>\d{3}) (?P<bytes>\d+|-)(?: "(?P<referer>(?:[^"\\]|\\.)*)" "(?P<agent>(?:[^"\\]|\\.)*)")?\s*$"#;

impl Spec {
    /// Check `args` (the `format` and its options) and work out the output fields.
    pub fn from_args(args: &Map<String, Json>) -> Result<Spec, SpecError> {
        let format = match args.get("format") {
            None => return Err(err("format", "`parse` needs `format`")),
            Some(f) => f
                .as_str()
                .ok_or_else(|| err("format", "`format` must be a string"))?,
        };
        let fields = strings(args, "fields")?;
        let types = types(args)?;
        let (format, names) = match format {
            "json" => json(&fields)?,
            "csv" | "tsv" => delimited(args, format, &fields)?,
            "regex" => {
                let pattern = args.get("pattern").and_then(Json::as_str).ok_or_else(|| {
                    err(
                        "pattern",
                        "`format: regex` needs `pattern` with named groups",
                    )
                })?;
                pick(regex(pattern)?, &fields)?
            }
            "combined" => pick(
                (
                    Format::Regex {
                        pattern: COMBINED_PATTERN.into(),
                        keep: None,
                    },
                    COMBINED_FIELDS.iter().map(|s| s.to_string()).collect(),
                ),
                &fields,
            )?,
            "logfmt" | "kv" => pairs(args, format == "logfmt", &fields)?,
            other => {
                return Err(err(
                    "format",
                    format!("unknown format `{other}`; formats: {}", FORMATS.join(", ")),
                ))
            }
        };
        for (name, _) in &types {
            if !names.contains(name) {
                return Err(err(
                    "types",
                    format!(
                        "`types` names `{name}`, which is not an output field ({})",
                        names.join(", ")
                    ),
                ));
            }
        }
        let combined =
            matches!(format, Format::Regex { ref pattern, .. } if pattern == COMBINED_PATTERN);
        let outputs = names
            .into_iter()
            .map(|n| {
                let t = types
                    .iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, t)| *t)
                    .or_else(|| {
                        (combined && (n == "status" || n == "bytes")).then_some(FieldType::Int)
                    });
                (n, t)
            })
            .collect();
        let field = match args.get("field") {
            None => None,
            Some(f) => Some(
                f.as_str()
                    .ok_or_else(|| err("field", "`field` must be a field name"))?
                    .to_string(),
            ),
        };
        Ok(Spec {
            format,
            field,
            outputs,
        })
    }

    /// The output field names.
    pub(crate) fn field_names(&self) -> Vec<String> {
        self.outputs.iter().map(|(n, _)| n.clone()).collect()
    }
}

/// A list of strings argument (absent: empty).
fn strings(args: &Map<String, Json>, key: &'static str) -> Result<Vec<String>, SpecError> {
    match args.get(key) {
        None => Ok(Vec::new()),
        Some(Json::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| err(key, format!("`{key}` must be a list of names")))
            })
            .collect(),
        Some(Json::String(s)) => Ok(vec![s.clone()]),
        Some(_) => Err(err(key, format!("`{key}` must be a list of names"))),
    }
}

fn types(args: &Map<String, Json>) -> Result<Vec<(String, FieldType)>, SpecError> {
    let Some(t) = args.get("types") else {
        return Ok(Vec::new());
    };
    let Json::Object(m) = t else {
        return Err(err(
            "types",
            "`types` must be a map of field → int, float, str or bool",
        ));
    };
    m.iter()
        .map(|(k, v)| {
            let name = v.as_str().unwrap_or("");
            FieldType::from_name(name)
                .map(|t| (k.clone(), t))
                .ok_or_else(|| {
                    err(
                        "types",
                        format!(
                            "`types.{k}`: `{name}` is not a type; types: int, float, str, bool"
                        ),
                    )
                })
        })
        .collect()
}

fn json(fields: &[String]) -> Result<(Format, Vec<String>), SpecError> {
    if fields.is_empty() {
        return Err(err(
            "fields",
            "`format: json` needs `fields`: the names or dotted paths to take",
        ));
    }
    let paths: Vec<Vec<String>> = fields
        .iter()
        .map(|f| {
            field_path(f).ok_or_else(|| {
                err(
                    "fields",
                    format!(
                        "`{f}` is not a field path (`a`, `a.b`; a key with a dot in it: \
                         `\"c.d\"`, `a.\"c.d\"` or `a[\"c.d\"]`)"
                    ),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let names = unique_names(
        paths
            .iter()
            .map(|p| p.last().cloned().unwrap_or_default())
            .collect(),
    )?;
    Ok((Format::Json { paths }, names))
}

/// The keys of a JSON field path: `a.b`; a key holding a dot or a bracket is quoted, `"c.d"`,
/// after a dot or in brackets (`a."c.d"`, `a["c.d"]`). `None` when it is not a path.
fn field_path(text: &str) -> Option<Vec<String>> {
    let mut keys = Vec::new();
    let mut rest = text;
    loop {
        let (key, after) = if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"')?;
            (quoted[..end].to_string(), &quoted[end + 1..])
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            (rest[..end].to_string(), &rest[end..])
        };
        if key.is_empty() {
            return None;
        }
        keys.push(key);
        rest = after;
        // A bracketed key: `["c.d"]`, any number of them.
        while let Some(inner) = rest.strip_prefix("[\"") {
            let end = inner.find("\"]")?;
            if end == 0 {
                return None;
            }
            keys.push(inner[..end].to_string());
            rest = &inner[end + 2..];
        }
        match rest.strip_prefix('.') {
            Some(after) => rest = after,
            None if rest.is_empty() => return Some(keys),
            None => return None,
        }
    }
}

fn delimited(
    args: &Map<String, Json>,
    format: &str,
    keep: &[String],
) -> Result<(Format, Vec<String>), SpecError> {
    let header = match args.get("header") {
        None => false,
        Some(Json::Bool(b)) => *b,
        Some(_) => return Err(err("header", "`header` must be true or false")),
    };
    let columns = strings(args, "columns")?;
    let delimiter = match args.get("separator").and_then(Json::as_str) {
        Some(s) if s.len() == 1 => s.as_bytes()[0],
        Some(s) => {
            return Err(err(
                "separator",
                format!("a {format} separator is one byte, not `{s}`"),
            ))
        }
        None if format == "tsv" => b'\t',
        None => b',',
    };
    let names = match (keep.is_empty(), columns.is_empty()) {
        (false, true) => keep.to_vec(),
        (false, false) => {
            if let Some(k) = keep.iter().find(|k| !columns.contains(k)) {
                return Err(err("fields", format!("`{k}` is not one of `columns` ({})", columns.join(", "))));
            }
            keep.to_vec()
        }
        (true, false) => columns.clone(),
        (true, true) if header => {
            return Err(err(
                "fields",
                format!("`format: {format}` with `header: true` needs `fields` (the columns to keep) or `columns`, so later components know the fields"),
            ))
        }
        (true, true) => {
            return Err(err("columns", format!("`format: {format}` needs `columns` (the names of the cells), or `header: true` with `fields`")))
        }
    };
    let names = unique_names(names)?;
    Ok((
        Format::Delimited {
            delimiter,
            header,
            columns,
            keep: keep.to_vec(),
        },
        names,
    ))
}

fn regex(pattern: &str) -> Result<(Format, Vec<String>), SpecError> {
    let re =
        regex::Regex::new(pattern).map_err(|e| err("pattern", format!("invalid regex: {e}")))?;
    let names: Vec<String> = re.capture_names().flatten().map(str::to_string).collect();
    if names.is_empty() {
        return Err(err(
            "pattern",
            "the pattern has no named group: write `(?P<name>...)` for each field",
        ));
    }
    Ok((
        Format::Regex {
            pattern: pattern.to_string(),
            keep: None,
        },
        names,
    ))
}

/// regex/combined with `fields`: keep only those of the groups, in that order.
fn pick(
    found: (Format, Vec<String>),
    fields: &[String],
) -> Result<(Format, Vec<String>), SpecError> {
    let (format, names) = found;
    if fields.is_empty() {
        return Ok((format, names));
    }
    let keep = fields
        .iter()
        .map(|f| {
            names.iter().position(|n| n == f).ok_or_else(|| {
                err(
                    "fields",
                    format!("`{f}` is not one of the fields read ({})", names.join(", ")),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let Format::Regex { pattern, .. } = format else {
        return Ok((format, names));
    };
    Ok((
        Format::Regex {
            pattern,
            keep: Some(keep),
        },
        unique_names(fields.to_vec())?,
    ))
}

fn pairs(
    args: &Map<String, Json>,
    logfmt: bool,
    keys: &[String],
) -> Result<(Format, Vec<String>), SpecError> {
    let format = if logfmt { "logfmt" } else { "kv" };
    if keys.is_empty() {
        return Err(err(
            "fields",
            format!("`format: {format}` needs `fields`: the keys to take"),
        ));
    }
    let text = |key: &'static str| -> Result<Option<String>, SpecError> {
        match args.get(key) {
            None => Ok(None),
            Some(Json::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(err(key, format!("`{key}` must be a non-empty string"))),
        }
    };
    let separator = text("separator")?.unwrap_or_else(|| "=".into());
    let pair_separator = text("pair_separator")?;
    Ok((
        Format::Pairs {
            logfmt,
            separator,
            pair_separator,
            keys: keys.to_vec(),
        },
        unique_names(keys.to_vec())?,
    ))
}

fn unique_names(names: Vec<String>) -> Result<Vec<String>, SpecError> {
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(err(
                "fields",
                format!("two output fields would be named `{n}`"),
            ));
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::field_path;

    #[test]
    fn field_paths_with_quoted_keys() {
        let p = |t: &str| field_path(t).map(|k| k.join("|"));
        assert_eq!(p("a.b").as_deref(), Some("a|b"));
        assert_eq!(p("\"c.d\"").as_deref(), Some("c.d"));
        assert_eq!(p("a.\"c.d\".e").as_deref(), Some("a|c.d|e"));
        assert_eq!(p("a[\"c.d\"]").as_deref(), Some("a|c.d"));
        assert_eq!(p("a[\"c.d\"].e").as_deref(), Some("a|c.d|e"));
        for bad in [
            "", "a.", ".a", "a..b", "\"open", "a[\"x\"", "a[\"\"]", "\"\"",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
    }
}
