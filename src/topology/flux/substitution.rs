//! Flux property substitution: `${ENV-NAME}` from the environment and `${key}` from the
//! `--filter` properties file (Flux's `--env-filter` / `-f`), `${key[i]}` for an element of a
//! list-valued property. Unresolved keys warn and stay.

use crate::syntax::diag::Diagnostic;
use crate::syntax::raw::{RawValue, Span, Spanned};
use crate::topology::yaml;
use std::collections::HashMap;
use std::path::Path;

/// Substitution sources: the environment (`${ENV-NAME}`) and `--filter` properties (`${key}`).
#[derive(Debug, Default, Clone)]
pub(crate) struct Properties {
    values: HashMap<String, String>,
}

impl Properties {
    /// Read a Java-style properties file (`key=value` or `key: value`, `#`/`!` comments).
    pub(crate) fn read(path: &Path) -> Result<Properties, String> {
        let text = crate::topology::read_text_bounded(path)
            .map_err(|e| format!("{}: cannot read the --filter file: {e}", path.display()))?;
        let values = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
            .filter_map(|l| {
                let i = l.find(['=', ':'])?;
                Some((l[..i].trim().to_string(), l[i + 1..].trim().to_string()))
            })
            .collect();
        Ok(Properties { values })
    }

    /// The text that replaces `${key}`: `ENV-NAME` from the environment, `name[i]` the `i`th
    /// element of the list-valued property `name` (as Flux reads `${name[i]}`), otherwise the
    /// property `key`.
    fn lookup(&self, key: &str) -> Lookup {
        if let Some(env) = key.strip_prefix("ENV-") {
            return std::env::var(env).map_or(Lookup::Undefined, Lookup::Found);
        }
        if let Some((name, index)) = indexed(key) {
            let Some(list) = self.values.get(name) else {
                return Lookup::Undefined;
            };
            return element(list, index).map_or_else(
                || {
                    Lookup::BadIndex(format!(
                        "`{name}` is `{list}`, which has no element {index}"
                    ))
                },
                Lookup::Found,
            );
        }
        self.values
            .get(key)
            .cloned()
            .map_or(Lookup::Undefined, Lookup::Found)
    }
}

/// What a `${key}` resolves to.
enum Lookup {
    Found(String),
    Undefined,
    /// `${name[i]}` where `name` is not a list with an element `i`.
    BadIndex(String),
}

/// `name[i]` split into `name` and `i` (Flux's `(?<list>.+)\[(?<listIndex>\d+)]`).
fn indexed(key: &str) -> Option<(&str, usize)> {
    let (name, rest) = key.strip_suffix(']')?.rsplit_once('[')?;
    if name.is_empty() || rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((name, rest.parse().ok()?))
}

/// Element `index` of a list-valued property written as a YAML flow list
/// (`["a", "b"]`), as text: Flux hands it over without its quotes.
fn element(list: &str, index: usize) -> Option<String> {
    let tree = yaml::parse_tree(list).ok()?;
    let RawValue::List(items) = tree.value else {
        return None;
    };
    match &items.get(index)?.value {
        RawValue::Str { text, .. } => Some(text.clone()),
        RawValue::Int(i) => Some(i.to_string()),
        RawValue::Float(f) => Some(f.to_string()),
        RawValue::Bool(b) => Some(b.to_string()),
        RawValue::Null => Some(String::new()),
        RawValue::List(_) | RawValue::Map(_) => None,
    }
}

/// Replace `${...}` in every string of the tree; unresolved ones warn and stay as written.
pub(crate) fn substitute(
    tree: &mut Spanned<RawValue>,
    props: &Properties,
    diags: &mut Vec<Diagnostic>,
) {
    match &mut tree.value {
        RawValue::Str { text, quoted } if text.contains("${") => {
            let out = replace_all(text, tree.span, props, diags);
            tree.value = if *quoted {
                RawValue::Str {
                    text: out,
                    quoted: true,
                }
            } else {
                reread(&out, tree.span)
            };
        }
        RawValue::List(items) => items.iter_mut().for_each(|i| substitute(i, props, diags)),
        RawValue::Map(entries) => entries
            .iter_mut()
            .for_each(|(_, v)| substitute(v, props, diags)),
        _ => {}
    }
}

/// The text with every `${key}` that resolves replaced.
fn replace_all(text: &str, span: Span, props: &Properties, diags: &mut Vec<Diagnostic>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let key = &rest[start + 2..start + len];
        match props.lookup(key) {
            Lookup::Found(v) => out.push_str(&v),
            Lookup::Undefined => {
                diags.push(
                    Diagnostic::warning(
                        format!("`${{{key}}}` is not defined; kept as written"),
                        span,
                    )
                    .with_help(if key.starts_with("ENV-") {
                        "set the environment variable".to_string()
                    } else {
                        "define it in the properties file given with --filter".to_string()
                    }),
                );
                out.push_str(&rest[start..start + len + 1]);
            }
            Lookup::BadIndex(why) => {
                diags.push(Diagnostic::error(format!("`${{{key}}}`: {why}"), span).with_help(
                    "an indexed property is a list in the --filter file, like `key: [\"a\", \"b\"]`",
                ));
                out.push_str(&rest[start..start + len + 1]);
            }
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

/// An unquoted value after substitution, read again as YAML, as Flux substitutes in the text
/// before parsing: a plain `${n}` may become a number, and a list-valued property written as
/// a flow list (`[a, b]`) becomes a list. Everything read is located at the original value.
fn reread(text: &str, span: Span) -> RawValue {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') || trimmed.starts_with('{') {
        if let Ok(mut tree) = yaml::parse_tree(text) {
            relocate(&mut tree, span);
            return tree.value;
        }
    }
    yaml::resolve_scalar(text)
}

/// Give every node of a tree the same span.
fn relocate(tree: &mut Spanned<RawValue>, span: Span) {
    tree.span = span;
    match &mut tree.value {
        RawValue::List(items) => items.iter_mut().for_each(|i| relocate(i, span)),
        RawValue::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
            k.span = span;
            relocate(v, span);
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::diag::Severity;

    fn tree(text: &str) -> Spanned<RawValue> {
        yaml::parse_tree(text).expect("valid yaml")
    }

    #[test]
    fn substitution_from_environment_and_properties() {
        let path = std::env::var("PATH").unwrap_or_default();
        let mut props = Properties::default();
        props.values.insert("n".into(), "4".into());
        let mut t = tree("a: ${n}\nb: 'x${n}'\nc: ${ENV-PATH}\nd: ${missing}\n");
        let mut diags = Vec::new();
        substitute(&mut t, &props, &mut diags);
        let get = |k: &str| t.value.get(k).map(|v| v.value.clone());
        assert_eq!(get("a"), Some(RawValue::Int(4)));
        assert_eq!(
            get("b").and_then(|v| v.as_str().map(str::to_string)),
            Some("x4".into())
        );
        assert_eq!(
            get("c").and_then(|v| v.as_str().map(str::to_string)),
            Some(path)
        );
        assert_eq!(
            get("d").and_then(|v| v.as_str().map(str::to_string)),
            Some("${missing}".into())
        );
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].severity, Severity::Warning);
    }

    /// Flux's own substitution test (TCKTest.testVariableSubstitution): a property holding a
    /// flow list gives a list where it is written bare, `${key[0]}` its first element as text.
    #[test]
    fn list_valued_and_indexed_properties_as_flux() {
        let mut props = Properties::default();
        props
            .values
            .insert("a.list".into(), "[\"A string list\", 7]".into());
        let mut t = tree(
            "whole: ${a.list}\nfirst: ${a.list[0]}\nsecond: ${a.list[1]}\nquoted: '${a.list[0]}!'\nfar: ${a.list[2]}\nnone: ${b[0]}\n",
        );
        let mut diags = Vec::new();
        substitute(&mut t, &props, &mut diags);
        let get = |k: &str| t.value.get(k).map(|v| v.value.to_json());
        assert_eq!(get("whole"), Some(serde_json::json!(["A string list", 7])));
        assert_eq!(get("first"), Some(serde_json::json!("A string list")));
        assert_eq!(get("second"), Some(serde_json::json!(7)));
        assert_eq!(get("quoted"), Some(serde_json::json!("A string list!")));
        assert_eq!(get("far"), Some(serde_json::json!("${a.list[2]}")));
        let severities: Vec<Severity> = diags.iter().map(|d| d.severity).collect();
        assert_eq!(severities, [Severity::Error, Severity::Warning]);
        assert!(
            diags[0].message.contains("no element 2"),
            "{}",
            diags[0].message
        );
    }

    #[test]
    fn properties_files_are_read_like_java_properties() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f.properties");
        std::fs::write(&p, "# c\n! c\na = 1\nb: two\n\n").expect("write");
        let props = Properties::read(&p).expect("readable");
        assert_eq!(props.values.get("a").map(String::as_str), Some("1"));
        assert_eq!(props.values.get("b").map(String::as_str), Some("two"));
        assert!(Properties::read(&dir.path().join("none")).is_err());
    }
}
