//! Flux property substitution: `${ENV-NAME}` from the environment and `${key}` from the
//! `--filter` properties file (Flux's `--env-filter` / `-f`). Unresolved keys warn and stay.

use crate::diag::Diagnostic;
use crate::topology::raw::{RawValue, Spanned};
use crate::topology::yaml;
use std::collections::HashMap;
use std::path::Path;

/// Substitution sources: the environment (`${ENV-NAME}`) and `--filter` properties (`${key}`).
#[derive(Debug, Default, Clone)]
pub struct Properties {
    pub values: HashMap<String, String>,
}

impl Properties {
    /// Read a Java-style properties file (`key=value` or `key: value`, `#`/`!` comments).
    pub fn read(path: &Path) -> Result<Properties, String> {
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

    fn lookup(&self, key: &str) -> Option<String> {
        match key.strip_prefix("ENV-") {
            Some(env) => std::env::var(env).ok(),
            None => self.values.get(key).cloned(),
        }
    }
}

/// Replace `${...}` in every string of the tree; unresolved ones warn and stay as written.
pub fn substitute(tree: &mut Spanned<RawValue>, props: &Properties, diags: &mut Vec<Diagnostic>) {
    match &mut tree.value {
        RawValue::Str { text, quoted } if text.contains("${") => {
            let mut out = String::new();
            let mut rest = text.as_str();
            while let Some(start) = rest.find("${") {
                out.push_str(&rest[..start]);
                let Some(len) = rest[start..].find('}') else {
                    out.push_str(&rest[start..]);
                    rest = "";
                    break;
                };
                let key = &rest[start + 2..start + len];
                match props.lookup(key) {
                    Some(v) => out.push_str(&v),
                    None => {
                        diags.push(
                            Diagnostic::warning(
                                format!("`${{{key}}}` is not defined; kept as written"),
                                tree.span,
                            )
                            .with_help(if key.starts_with("ENV-") {
                                "set the environment variable".to_string()
                            } else {
                                "define it in the properties file given with --filter".to_string()
                            }),
                        );
                        out.push_str(&rest[start..start + len + 1]);
                    }
                }
                rest = &rest[start + len + 1..];
            }
            out.push_str(rest);
            // As in Flux, substitution happens in the text: a plain `${n}` may become a number.
            tree.value = if *quoted {
                RawValue::Str {
                    text: out,
                    quoted: true,
                }
            } else {
                yaml::resolve_scalar(&out)
            };
        }
        RawValue::List(items) => items.iter_mut().for_each(|i| substitute(i, props, diags)),
        RawValue::Map(entries) => entries
            .iter_mut()
            .for_each(|(_, v)| substitute(v, props, diags)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Severity;

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
