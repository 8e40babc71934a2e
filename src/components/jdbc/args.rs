//! The arguments of the three roles, read from a component's `args` into what the run uses;
//! the same readers back `storm validate`'s checks (`validate`), so an error there is the
//! error the run would give. Each error names the argument it is about.

use serde_json::Value as Json;
use std::time::Duration;

pub(crate) type Args = serde_json::Map<String, Json>;

/// An argument problem: the argument (`None`: the component) and what is wrong.
pub(crate) type Problem = (Option<&'static str>, String);

/// The names of the arguments of each role (for validation and the docs' check).
pub(crate) const SINK_ARGS: &[&str] = &[
    "url",
    "table",
    "columns",
    "on_conflict",
    "batch",
    "retry",
    "commits_table",
];
const LOOKUP_ARGS: &[&str] = &[
    "url", "query", "params", "select", "cache", "missing", "retry",
];
pub(crate) const SPOUT_ARGS: &[&str] = &[
    "url",
    "table",
    "query",
    "column",
    "columns",
    "poll",
    "start",
    "batch",
    "retry",
    "max_retries",
];

/// The arguments of `jdbc` (both roles) or of `jdbc_lookup`.
pub(crate) fn known(jdbc: bool) -> Vec<&'static str> {
    match jdbc {
        true => {
            let mut all: Vec<&str> = SINK_ARGS.to_vec();
            all.extend(SPOUT_ARGS.iter().filter(|a| !SINK_ARGS.contains(a)));
            all
        }
        false => LOOKUP_ARGS.to_vec(),
    }
}

/// How long a lost connection is retried while tuples wait (`retry`, default 30s).
pub(crate) fn retry(args: &Args) -> Result<Duration, Problem> {
    match args.get("retry") {
        None => Ok(Duration::from_secs(30)),
        Some(v) => crate::config::duration_of(v)
            .ok_or((Some("retry"), "`retry` must be a duration (`30s`)".into())),
    }
}

/// `url`, as written (resolved from the environment at run start).
pub(crate) fn url(args: &Args) -> Result<&str, Problem> {
    let url = args.get("url").and_then(Json::as_str).ok_or((
        Some("url"),
        "needs `url`: a PostgreSQL connection string (`postgresql://USER@HOST:PORT/DB`, or `$VAR` to read it from the environment)".to_string(),
    ))?;
    if super::url::env_name(url).is_none() {
        super::url::parse(url).map_err(|e| (Some("url"), e))?;
    }
    Ok(url)
}

/// Whether `name` is a plain SQL name (`errors`, `public.errors` where `dotted`), used as
/// written in statements (so lower case, as PostgreSQL folds unquoted names).
pub(crate) fn is_sql_name(name: &str, dotted: bool) -> bool {
    let part = |p: &str| {
        let mut chars = p.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    match name.split_once('.') {
        Some((schema, table)) if dotted => part(schema) && part(table),
        _ => part(name),
    }
}

/// A required SQL name argument.
pub(crate) fn sql_name(args: &Args, key: &'static str, dotted: bool) -> Result<String, Problem> {
    let Some(v) = args.get(key) else {
        return Err((Some(key), format!("needs `{key}`")));
    };
    match v.as_str() {
        Some(s) if is_sql_name(s, dotted) => Ok(s.to_string()),
        _ => Err((
            Some(key),
            format!(
                "`{key}` must be a plain SQL name (letters, digits and `_`{})",
                if dotted { ", `schema.table`" } else { "" }
            ),
        )),
    }
}

/// `columns` of the sink: each a field written to the column of its name, or a one-entry map
/// `{column: field}`; as (column, field) pairs.
pub(crate) fn columns(args: &Args) -> Result<Vec<(String, String)>, Problem> {
    let bad = || {
        (
            Some("columns"),
            "`columns` must be a non-empty list of fields, each a name or `{column: field}`"
                .to_string(),
        )
    };
    let items = args
        .get("columns")
        .and_then(Json::as_array)
        .ok_or_else(bad)?;
    let pairs: Vec<(String, String)> = items
        .iter()
        .map(|i| match i {
            Json::String(f) => Some((f.clone(), f.clone())),
            Json::Object(m) if m.len() == 1 => {
                let (c, f) = m.iter().next()?;
                Some((c.clone(), f.as_str()?.to_string()))
            }
            _ => None,
        })
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    if pairs.is_empty() {
        return Err(bad());
    }
    if let Some((c, _)) = pairs.iter().find(|(c, _)| !is_sql_name(c, false)) {
        return Err((
            Some("columns"),
            format!("column `{c}` is not a plain SQL name"),
        ));
    }
    for (i, (c, _)) in pairs.iter().enumerate() {
        if pairs[..i].iter().any(|(d, _)| d == c) {
            return Err((Some("columns"), format!("column `{c}` is written twice")));
        }
    }
    Ok(pairs)
}

/// `on_conflict`: the key columns of an upsert (each one of `columns`).
pub(crate) fn on_conflict(
    args: &Args,
    columns: &[(String, String)],
) -> Result<Vec<String>, Problem> {
    let Some(v) = args.get("on_conflict") else {
        return Ok(Vec::new());
    };
    let keys: Vec<String> = match v {
        Json::String(s) => vec![s.clone()],
        Json::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(String::from))
            .collect::<Option<_>>()
            .ok_or((
                Some("on_conflict"),
                "`on_conflict` must be a list of columns".into(),
            ))?,
        _ => {
            return Err((
                Some("on_conflict"),
                "`on_conflict` must be a list of columns".into(),
            ))
        }
    };
    if keys.is_empty() {
        return Err((Some("on_conflict"), "`on_conflict` names no column".into()));
    }
    for k in &keys {
        if !columns.iter().any(|(c, _)| c == k) {
            let names: Vec<&str> = columns.iter().map(|(c, _)| c.as_str()).collect();
            let close = crate::syntax::suggest::suggest(k, names.iter().copied())
                .map(|c| format!("did you mean `{c}`? "))
                .unwrap_or_default();
            return Err((
                Some("on_conflict"),
                format!("`on_conflict` names `{k}`, which is not one of `columns`; {close}the columns: {}", names.join(", ")),
            ));
        }
    }
    Ok(keys)
}

/// `batch`: rows per transaction and how long the first of them may wait.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Batch {
    pub(crate) rows: usize,
    pub(crate) timeout: Duration,
}

/// `batch: N`, or `batch: {rows: N, timeout: 100ms}` (defaults 500 rows, 100ms).
pub(crate) fn batch(args: &Args, default_rows: usize) -> Result<Batch, Problem> {
    let mut b = Batch {
        rows: default_rows,
        timeout: Duration::from_millis(100),
    };
    let bad = |m: &str| (Some("batch"), m.to_string());
    match args.get("batch") {
        None => {}
        Some(Json::Number(n)) => {
            b.rows = n
                .as_u64()
                .filter(|n| *n >= 1)
                .ok_or_else(|| bad("`batch` must be a whole number ≥ 1"))?
                as usize
        }
        Some(Json::Object(m)) => {
            for (k, v) in m {
                match k.as_str() {
                    "rows" => {
                        b.rows = v
                            .as_u64()
                            .filter(|n| *n >= 1)
                            .ok_or_else(|| bad("`batch.rows` must be a whole number ≥ 1"))?
                            as usize
                    }
                    "timeout" => {
                        b.timeout = crate::config::duration_of(v)
                            .ok_or_else(|| bad("`batch.timeout` must be a duration"))?
                    }
                    other => {
                        return Err(bad(&format!(
                            "`batch` takes `rows` and `timeout`, not `{other}`"
                        )))
                    }
                }
            }
        }
        Some(_) => return Err(bad("`batch` must be a number of rows or `{rows, timeout}`")),
    }
    Ok(b)
}

/// The highest `$n` in `query` (outside quotes): how many parameters it takes.
pub(crate) fn parameter_count(query: &str) -> usize {
    let mut max = 0;
    let mut quote: Option<char> = None;
    for (i, c) in query.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '$') => {
                let digits: String = query[i + 1..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                if let Ok(n) = digits.parse::<usize>() {
                    max = max.max(n);
                }
            }
            _ => {}
        }
    }
    max
}

/// A list-of-field-names argument (`params`, `select`, the spout's `columns`).
pub(crate) fn names(args: &Args, key: &'static str) -> Result<Vec<String>, Problem> {
    let bad = || (Some(key), format!("`{key}` must be a list of names"));
    match args.get(key) {
        None => Ok(Vec::new()),
        Some(Json::String(s)) => Ok(vec![s.clone()]),
        Some(Json::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(String::from))
            .collect::<Option<_>>()
            .ok_or_else(bad),
        Some(_) => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(j: Json) -> Args {
        j.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn parameters_are_counted_outside_quotes() {
        assert_eq!(
            parameter_count("select a from t where b = $1 and c = $2"),
            2
        );
        assert_eq!(parameter_count("select '$3' from t where b = $1"), 1);
        assert_eq!(parameter_count("select 1"), 0);
        assert_eq!(parameter_count("select $10"), 10);
    }

    #[test]
    fn columns_are_fields_or_column_field_maps() {
        let a = args(serde_json::json!({"columns": ["a", {"b": "f"}]}));
        assert_eq!(
            columns(&a),
            Ok(vec![("a".into(), "a".into()), ("b".into(), "f".into())])
        );
        assert!(columns(&args(serde_json::json!({"columns": ["a", "a"]}))).is_err());
        assert!(columns(&args(serde_json::json!({"columns": ["a b"]}))).is_err());
        let cols = columns(&a).unwrap_or_default();
        let on = args(serde_json::json!({"on_conflict": ["c"]}));
        let e = on_conflict(&on, &cols)
            .err()
            .map(|e| e.1)
            .unwrap_or_default();
        assert!(e.contains("not one of `columns`"), "{e}");
    }

    #[test]
    fn batch_is_rows_or_rows_and_timeout() {
        let b = batch(&args(serde_json::json!({"batch": 10})), 500);
        assert_eq!(b.map(|b| b.rows), Ok(10));
        let b = batch(
            &args(serde_json::json!({"batch": {"rows": 5, "timeout": "1s"}})),
            500,
        );
        assert_eq!(
            b,
            Ok(Batch {
                rows: 5,
                timeout: Duration::from_secs(1)
            })
        );
        assert!(batch(&args(serde_json::json!({"batch": 0})), 500).is_err());
        assert!(batch(&args(serde_json::json!({"batch": {"size": 1}})), 500).is_err());
    }
}
