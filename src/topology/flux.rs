//! Apache Storm Flux files (shared/spec/flux.md): Flux's shell wrappers, LogInfoBolt and the
//! testing spout/counter map onto built-ins; `${ENV-NAME}` and `--filter` `${key}` substitution;
//! `includes` one level deep; anything that needs a JVM class is rejected where it is written.

use super::raw::{RawComponent, RawStream, RawTopology, RawValue, Span, Spanned};
use super::yaml::{self, Reader};
use crate::diag::{Diagnostic, Severity};
use std::collections::HashMap;
use std::path::Path;

const SHELL_SPOUT: &str = "org.apache.storm.flux.wrappers.spouts.FluxShellSpout";
const SHELL_BOLT: &str = "org.apache.storm.flux.wrappers.bolts.FluxShellBolt";
const CLASSES: &[(&str, &str)] = &[
    (SHELL_SPOUT, "shell"),
    (SHELL_BOLT, "shell"),
    ("org.apache.storm.flux.wrappers.bolts.LogInfoBolt", "log"),
    ("org.apache.storm.testing.TestWordSpout", "test_word_spout"),
    (
        "org.apache.storm.testing.TestWordCounter",
        "test_word_counter",
    ),
];
const TOP_KEYS: &[&str] = &[
    "name",
    "config",
    "components",
    "spouts",
    "bolts",
    "streams",
    "includes",
    "topologySource",
];
const COMPONENT_KEYS: &[&str] = &[
    "id",
    "className",
    "constructorArgs",
    "parallelism",
    "numTasks",
    "configMethods",
    "properties",
    "config",
];
const STREAM_KEYS: &[&str] = &["name", "from", "to", "grouping"];
const GROUPING_KEYS: &[&str] = &["type", "args", "streamId", "customClass"];
const NEEDS_JVM: &str = "storm runs no JVM: use a built-in `type:` or a shell component \
(org.apache.storm.flux.wrappers.bolts.FluxShellBolt) instead";

/// Whether a YAML tree is a Flux file: it names JVM classes or uses Flux-only sections.
pub fn is_flux(tree: &Spanned<RawValue>) -> bool {
    let v = &tree.value;
    if ["components", "includes", "topologySource"]
        .iter()
        .any(|k| v.get(k).is_some())
    {
        return true;
    }
    ["spouts", "bolts"].iter().any(|section| {
        matches!(v.get(section).map(|s| &s.value), Some(RawValue::List(items))
            if items.iter().any(|i| i.value.get("className").is_some()))
    })
}

/// Substitution sources: the environment (`${ENV-NAME}`) and `--filter` properties (`${key}`).
#[derive(Debug, Default, Clone)]
pub struct Properties {
    pub values: HashMap<String, String>,
}

impl Properties {
    /// Read a Java-style properties file (`key=value` or `key: value`, `#`/`!` comments).
    pub fn read(path: &Path) -> Result<Properties, String> {
        let text = std::fs::read_to_string(path)
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

/// Read a Flux file's tree (after substitution); `base_dir` resolves `includes`.
pub fn read_topology(tree: &Spanned<RawValue>, base_dir: &Path, props: &Properties) -> RawTopology {
    let mut raw = read_one(tree);
    let Some(includes) = tree.value.get("includes") else {
        return raw;
    };
    let mut r = Reader::default();
    for inc in r.list(includes, "`includes`").to_vec() {
        include(&mut r, &mut raw, &inc, base_dir, props);
    }
    raw.diagnostics.extend(r.diagnostics);
    raw
}

/// One `includes` entry (Flux: one level; without `override` the including file wins; streams
/// are always appended). Everything read from the included file is located at the entry.
fn include(
    r: &mut Reader,
    raw: &mut RawTopology,
    inc: &Spanned<RawValue>,
    base: &Path,
    props: &Properties,
) {
    if matches!(
        inc.value.get("resource").map(|v| &v.value),
        Some(RawValue::Bool(true))
    ) {
        r.diagnostics.push(
            Diagnostic::error("a classpath resource include needs a JVM", inc.span)
                .with_help("use `resource: false` and a `file:` path"),
        );
        return;
    }
    let Some(file) = inc
        .value
        .get("file")
        .and_then(|f| r.string(f, "include `file`"))
    else {
        r.error("an include without `file`", inc.span);
        return;
    };
    let path = base.join(&file.value);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            r.error(
                format!("cannot read included file {}: {e}", path.display()),
                file.span,
            );
            return;
        }
    };
    let mut tree = match yaml::parse_tree(&text) {
        Ok(t) => t,
        Err(d) => {
            let (line, col) = d
                .span
                .map_or((1, 1), |s| crate::diag::line_col(&text, s.start));
            r.error(
                format!("{}:{line}:{col}: {}", path.display(), d.message),
                file.span,
            );
            return;
        }
    };
    respan(&mut tree, file.span);
    substitute(&mut tree, props, &mut r.diagnostics);
    let included = if is_flux(&tree) {
        read_one(&tree)
    } else {
        yaml::read_topology(&tree)
    };
    let over = matches!(
        inc.value.get("override").map(|v| &v.value),
        Some(RawValue::Bool(true))
    );
    merge(raw, included, over);
}

fn merge(raw: &mut RawTopology, inc: RawTopology, over: bool) {
    if raw.name.is_none() || (over && inc.name.is_some()) {
        raw.name = inc.name.or(raw.name.take());
    }
    for (k, v) in inc.config {
        match raw.config.iter().position(|(x, _)| x.value == k.value) {
            Some(i) if over => raw.config[i] = (k, v),
            Some(_) => {}
            None => raw.config.push((k, v)),
        }
    }
    for (mine, theirs) in [(&mut raw.spouts, inc.spouts), (&mut raw.bolts, inc.bolts)] {
        for c in theirs {
            let id = c.id.as_ref().map(|i| i.value.clone());
            match mine
                .iter()
                .position(|m| m.id.as_ref().map(|i| &i.value) == id.as_ref())
            {
                Some(i) if over => mine[i] = c,
                Some(_) => {}
                None => mine.push(c),
            }
        }
    }
    raw.streams.extend(inc.streams);
    raw.diagnostics.extend(inc.diagnostics);
}

fn respan(tree: &mut Spanned<RawValue>, span: Span) {
    tree.span = span;
    match &mut tree.value {
        RawValue::List(items) => items.iter_mut().for_each(|i| respan(i, span)),
        RawValue::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
            k.span = span;
            respan(v, span)
        }),
        _ => {}
    }
}

fn read_one(tree: &Spanned<RawValue>) -> RawTopology {
    let mut r = Reader::default();
    let mut raw = RawTopology::default();
    for (key, value) in r.map(tree, "the topology").to_vec() {
        match key.value.as_str() {
            "name" => raw.name = r.string(&value, "`name`"),
            "config" => raw.config = r.map(&value, "`config`").to_vec(),
            "includes" => {}
            "components" => {
                for c in r.list(&value, "`components`").to_vec() {
                    let at = c.value.get("className").map_or(c.span, |v| v.span);
                    let class = c
                        .value
                        .get("className")
                        .and_then(|v| v.value.as_str())
                        .unwrap_or("?");
                    r.diagnostics.push(
                        Diagnostic::error(format!("component class `{class}` needs a JVM"), at)
                            .with_help(NEEDS_JVM),
                    );
                }
            }
            "topologySource" => {
                let at = value.value.get("className").map_or(value.span, |v| v.span);
                r.diagnostics.push(
                    Diagnostic::error("`topologySource` builds the topology in JVM code", at)
                        .with_help("describe spouts, bolts and streams in the file instead"),
                );
            }
            "spouts" | "bolts" => {
                let list: Vec<RawComponent> = r
                    .list(&value, &format!("`{}`", key.value))
                    .iter()
                    .map(|c| read_component(&mut r, c))
                    .collect();
                if key.value == "spouts" {
                    raw.spouts = list;
                } else {
                    raw.bolts = list;
                }
            }
            "streams" => {
                raw.streams = r
                    .list(&value, "`streams`")
                    .iter()
                    .map(|s| read_stream(&mut r, s))
                    .collect()
            }
            _ => r.unknown_key(&key, TOP_KEYS, "a Flux topology"),
        }
    }
    raw.diagnostics = r.diagnostics;
    raw
}

fn read_component(r: &mut Reader, v: &Spanned<RawValue>) -> RawComponent {
    let mut c = RawComponent {
        span: v.span,
        ..RawComponent::default()
    };
    for (key, value) in r.map(v, "a component").to_vec() {
        match key.value.as_str() {
            "id" => c.id = r.string(&value, "`id`"),
            "type" => c.ctype = r.string(&value, "`type`"),
            "className" => {
                let Some(class) = r.string(&value, "`className`") else {
                    continue;
                };
                match CLASSES.iter().find(|(k, _)| *k == class.value) {
                    Some((_, t)) => c.ctype = Some(Spanned::new(t.to_string(), class.span)),
                    None => r.diagnostics.push(
                        Diagnostic::error(
                            format!("class `{}` needs a JVM", class.value),
                            class.span,
                        )
                        .with_help(NEEDS_JVM),
                    ),
                }
            }
            "constructorArgs" => {
                let class = v.value.get("className").and_then(|x| x.value.as_str());
                if matches!(class, Some(SHELL_SPOUT | SHELL_BOLT)) {
                    let args = r.list(&value, "`constructorArgs`").to_vec();
                    c.command = args.first().and_then(|a| r.strings(a, "the shell command"));
                    c.fields = args.get(1).and_then(|a| r.strings(a, "the output fields"));
                } else if !matches!(&value.value, RawValue::List(l) if l.is_empty()) {
                    r.diagnostics.push(Diagnostic::warning(
                        "constructorArgs are ignored for this class",
                        value.span,
                    ));
                }
            }
            "parallelism" => c.parallelism = r.int(&value, "`parallelism`"),
            "numTasks" => c.tasks = r.int(&value, "`numTasks`"),
            "configMethods" => config_methods(r, &mut c, &value),
            "properties" => r.diagnostics.push(Diagnostic::warning(
                "`properties` set JVM bean fields; ignored",
                key.span,
            )),
            "config" => c.config = r.map(&value, "`config`").to_vec(),
            _ => r.unknown_key(&key, COMPONENT_KEYS, "a Flux component"),
        }
    }
    c
}

/// Flux's `configMethods` for shell components: `setDefaultStream: [[fields]]` and
/// `setNamedStream: [name, [fields]]` declare output streams.
fn config_methods(r: &mut Reader, c: &mut RawComponent, value: &Spanned<RawValue>) {
    for m in r.list(value, "`configMethods`").to_vec() {
        let Some(name) = m
            .value
            .get("name")
            .and_then(|n| r.string(n, "method `name`"))
        else {
            r.error("a configMethod without `name`", m.span);
            continue;
        };
        let args: Vec<Spanned<RawValue>> = m
            .value
            .get("args")
            .map(|a| r.list(a, "method `args`").to_vec())
            .unwrap_or_default();
        match (name.value.as_str(), args.as_slice()) {
            ("setDefaultStream", [fields]) => c.fields = r.strings(fields, "stream fields"),
            ("setNamedStream", [stream, fields]) => {
                if let (Some(s), Some(f)) = (
                    r.string(stream, "stream name"),
                    r.strings(fields, "stream fields"),
                ) {
                    c.streams.push((s, f.value));
                }
            }
            ("setDefaultStream" | "setNamedStream", _) => {
                r.error(format!("wrong arguments for `{}`", name.value), m.span)
            }
            _ => r.diagnostics.push(Diagnostic::warning(
                format!("configMethod `{}` calls JVM code; ignored", name.value),
                name.span,
            )),
        }
    }
}

fn read_stream(r: &mut Reader, v: &Spanned<RawValue>) -> RawStream {
    let mut s = RawStream {
        span: v.span,
        ..RawStream::default()
    };
    for (key, value) in r.map(v, "a stream").to_vec() {
        match key.value.as_str() {
            "name" => s.name = r.string(&value, "`name`"),
            "from" => s.from = r.string(&value, "`from`"),
            "to" => s.to = r.string(&value, "`to`"),
            "grouping" => {
                for (gk, gv) in r.map(&value, "`grouping`").to_vec() {
                    match gk.value.as_str() {
                        "type" => s.grouping = r.string(&gv, "grouping `type`"),
                        "args" => s.grouping_args = r.strings(&gv, "grouping `args`"),
                        "streamId" => s.stream = r.string(&gv, "`streamId`"),
                        "customClass" => r.diagnostics.push(
                            Diagnostic::error("a custom grouping class needs a JVM", gv.span)
                                .with_help("use one of Storm's groupings: shuffle, fields, all, global, none, direct, local_or_shuffle"),
                        ),
                        _ => r.unknown_key(&gk, GROUPING_KEYS, "a Flux grouping"),
                    }
                }
                if s.grouping
                    .as_ref()
                    .is_some_and(|g| g.value.eq_ignore_ascii_case("custom"))
                {
                    s.grouping = None;
                }
            }
            _ => r.unknown_key(&key, STREAM_KEYS, "a Flux stream"),
        }
    }
    s
}

/// A problem with the `--filter` file, reported with the topology's diagnostics.
pub fn filter_error(message: String) -> Diagnostic {
    Diagnostic::unlocated(Severity::Error, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> Spanned<RawValue> {
        yaml::parse_tree(text).expect("valid yaml")
    }

    #[test]
    fn flux_is_detected_by_content() {
        assert!(is_flux(&tree("spouts:\n  - id: a\n    className: x.Y\n")));
        assert!(is_flux(&tree("includes: []\n")));
        assert!(!is_flux(&tree("spouts:\n  - id: a\n    type: stdin\n")));
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
    fn shell_wrappers_map_to_shell_with_command_fields_and_streams() {
        let t = tree(
            "name: f\nbolts:\n  - id: s\n    className: org.apache.storm.flux.wrappers.bolts.FluxShellBolt\n    constructorArgs: [[python3, s.py], [word]]\n    numTasks: 2\n    configMethods:\n      - name: setNamedStream\n        args: [errors, [msg, code]]\n",
        );
        let raw = read_topology(&t, Path::new("."), &Properties::default());
        assert_eq!(raw.diagnostics, vec![]);
        let c = &raw.bolts[0];
        assert_eq!(c.ctype.as_ref().map(|t| t.value.as_str()), Some("shell"));
        let cmd: Vec<&str> = c
            .command
            .iter()
            .flat_map(|c| c.value.iter().map(|s| s.value.as_str()))
            .collect();
        assert_eq!(cmd, ["python3", "s.py"]);
        assert_eq!(c.tasks.as_ref().map(|t| t.value), Some(2));
        assert_eq!(c.streams.len(), 1);
        assert_eq!(c.streams[0].0.value, "errors");
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
