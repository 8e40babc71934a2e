//! Apache Storm Flux files (`docs/flux.md`): Flux's shell wrappers, LogInfoBolt and the
//! testing spout/counter map onto built-ins; `${ENV-NAME}` and `--filter` `${key}` substitution;
//! `includes` one level deep; anything that needs a JVM class is rejected where it is written.

use super::yaml::TreeReader;
use crate::model::ComponentType;
use crate::syntax::diag::{Diagnostic, Severity};
use crate::syntax::raw::{RawComponent, RawStream, RawTopology, RawValue, Spanned};
use std::path::Path;

mod include;
mod substitution;

pub(crate) use substitution::{substitute, Properties};

const TOP_KEYS: &[&str] = &[
    "name",
    "config",
    "components",
    "spouts",
    "bolts",
    "streams",
    "includes",
    "topologySource",
    "workerHooks",
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
    "onHeapMemoryLoad",
    "offHeapMemoryLoad",
    "cpuLoad",
    "factory",
    "factoryArgs",
];
const STREAM_KEYS: &[&str] = &["name", "from", "to", "grouping"];
const GROUPING_KEYS: &[&str] = &["type", "args", "streamId", "customClass"];
const NEEDS_JVM: &str = "storm runs no JVM: use a built-in `type:` or a shell component \
(org.apache.storm.flux.wrappers.bolts.FluxShellBolt) instead";

/// Whether a YAML tree is a Flux file: it names JVM classes or uses Flux-only sections.
pub(crate) fn is_flux(tree: &Spanned<RawValue>) -> bool {
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

#[cfg(test)]
/// Read a Flux file's tree (after substitution); `base_dir` resolves `includes`.
fn read_topology(tree: &Spanned<RawValue>, base_dir: &Path, props: &Properties) -> RawTopology {
    read_topology_of(tree, None, base_dir, props)
}

/// `read_topology` knowing the file's own text, so an include that leads back to the file
/// is reported as a cycle.
pub(crate) fn read_topology_of(
    tree: &Spanned<RawValue>,
    text: Option<&str>,
    base_dir: &Path,
    props: &Properties,
) -> RawTopology {
    let mut raw = read_one(tree);
    let Some(includes) = tree.value.get("includes") else {
        return raw;
    };
    let mut r = TreeReader::default();
    for inc in r.list(includes, "`includes`").to_vec() {
        include::include(&mut r, &mut raw, &inc, (text, base_dir), props);
    }
    raw.diagnostics.extend(r.diagnostics);
    raw
}
/// Storm's own no-op worker hook: naming it changes nothing, so it is only warned about.
const NO_OP_WORKER_HOOK: &str = "org.apache.storm.hooks.BaseWorkerHook";

/// `workerHooks`: JVM classes, refused, but for Storm's no-op base class, which is ignored
/// with a warning.
fn worker_hooks(r: &mut TreeReader, key: &Spanned<String>, value: &Spanned<RawValue>) {
    let hooks = r.list(value, "`workerHooks`").to_vec();
    let no_op = |h: &Spanned<RawValue>| {
        h.value.get("className").and_then(|v| v.value.as_str()) == Some(NO_OP_WORKER_HOOK)
    };
    if !hooks.is_empty() && hooks.iter().all(no_op) {
        r.diagnostics.push(
            Diagnostic::warning(
                format!("`workerHooks`: `{NO_OP_WORKER_HOOK}` does nothing; ignored"),
                key.span,
            )
            .with_help("remove `workerHooks` to silence this"),
        );
        return;
    }
    r.diagnostics.push(
        Diagnostic::error(
            "`workerHooks` are JVM classes: worker hooks need a JVM",
            key.span,
        )
        .with_help("remove `workerHooks`; storm runs no JVM code in its workers"),
    );
}

pub(super) fn read_one(tree: &Spanned<RawValue>) -> RawTopology {
    let mut r = TreeReader::default();
    let mut raw = RawTopology::default();
    for (key, value) in r.map(tree, "the topology").to_vec() {
        if super::yaml::read_shared_key(&mut r, &key, &value, &mut raw, read_component, read_stream)
        {
            continue;
        }
        match key.value.as_str() {
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
            "workerHooks" => worker_hooks(&mut r, &key, &value),
            "topologySource" => {
                let at = value.value.get("className").map_or(value.span, |v| v.span);
                r.diagnostics.push(
                    Diagnostic::error("`topologySource` builds the topology in JVM code", at)
                        .with_help("describe spouts, bolts and streams in the file instead"),
                );
            }
            _ => r.unknown_key(&key, TOP_KEYS, "a Flux topology"),
        }
    }
    raw.diagnostics = r.diagnostics;
    raw
}

/// Whether the entry's `className` is a built-in that runs a program (Flux's shell wrappers:
/// their `constructorArgs` are the command and fields, their `configMethods` set streams).
fn runs_program(v: &Spanned<RawValue>) -> bool {
    let class = v.value.get("className").and_then(|x| x.value.as_str());
    class
        .and_then(ComponentType::from_class)
        .is_some_and(|t| t.runs_program())
}

fn read_component(r: &mut TreeReader, v: &Spanned<RawValue>) -> RawComponent {
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
                match ComponentType::from_class(&class.value) {
                    Some(t) => c.ctype = Some(Spanned::new(t.name().to_string(), class.span)),
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
                if runs_program(v) {
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
            "configMethods" => config_methods(r, &mut c, &value, runs_program(v)),
            "properties" => r.diagnostics.push(Diagnostic::warning(
                "`properties` set JVM bean fields; ignored",
                key.span,
            )),
            "config" => c.config.extend(r.map(&value, "`config`").iter().cloned()),
            // Flux's resource hints feed Storm's resource-aware scheduler.
            "onHeapMemoryLoad" | "offHeapMemoryLoad" | "cpuLoad" => resource_hint(r, &key, &value),
            "factory" => r.diagnostics.push(
                Diagnostic::error("`factory` builds the component with a JVM method", key.span)
                    .with_help(NEEDS_JVM),
            ),
            // Arguments of the factory, which is reported already.
            "factoryArgs" => {}
            _ => r.unknown_key(&key, COMPONENT_KEYS, "a Flux component"),
        }
    }
    c
}

/// A Flux resource hint: a number, accepted with a warning, since storm has no resource-aware
/// scheduler to give it to.
fn resource_hint(r: &mut TreeReader, key: &Spanned<String>, value: &Spanned<RawValue>) {
    if !matches!(value.value, RawValue::Int(_) | RawValue::Float(_)) {
        r.error(format!("`{}` must be a number", key.value), value.span);
        return;
    }
    r.diagnostics.push(
        Diagnostic::warning(
            format!(
                "`{}` is a hint for Storm's resource-aware scheduler; storm has none, so it is ignored",
                key.value
            ),
            key.span,
        )
        .with_help("executors are placed by the even scheduler"),
    );
}

/// Flux's `configMethods` for shell components: `setDefaultStream: [[fields]]` and
/// `setNamedStream: [name, [fields]]` declare output streams; `addComponentConfig: [key, value]`
/// (a method of Flux's shell wrappers only) adds to the component's configuration (Storm's
/// `getComponentConfiguration`), under its `config:` entries.
fn config_methods(
    r: &mut TreeReader,
    c: &mut RawComponent,
    value: &Spanned<RawValue>,
    shell: bool,
) {
    let mut config_added = Vec::new();
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
            ("addComponentConfig", [key, value]) if shell => {
                if let Some(k) = r.string(key, "the config key") {
                    config_added.push((k, value.clone()));
                }
            }
            ("setDefaultStream" | "setNamedStream", _) => {
                r.error(format!("wrong arguments for `{}`", name.value), m.span)
            }
            ("addComponentConfig", _) if shell => r.diagnostics.push(
                Diagnostic::error(
                    format!(
                        "`addComponentConfig` takes a key and a value (got {} argument{})",
                        args.len(),
                        if args.len() == 1 { "" } else { "s" }
                    ),
                    m.span,
                )
                .with_help("args: [KEY, VALUE]; a list value is one argument: [KEY, [A, B]]"),
            ),
            _ => r.diagnostics.push(Diagnostic::warning(
                format!("configMethod `{}` calls JVM code; ignored", name.value),
                name.span,
            )),
        }
    }
    // Storm applies a component's `config:` over what the component itself declares.
    c.config.splice(0..0, config_added);
}

fn read_stream(r: &mut TreeReader, v: &Spanned<RawValue>) -> RawStream {
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
pub(crate) fn filter_error(message: String) -> Diagnostic {
    Diagnostic::unlocated(Severity::Error, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> Spanned<RawValue> {
        crate::topology::yaml::parse_tree(text).expect("valid yaml")
    }

    #[test]
    fn flux_is_detected_by_content() {
        assert!(is_flux(&tree("spouts:\n  - id: a\n    className: x.Y\n")));
        assert!(is_flux(&tree("includes: []\n")));
        assert!(!is_flux(&tree("spouts:\n  - id: a\n    type: stdin\n")));
    }

    #[test]
    fn resource_hints_warn_and_factories_need_a_jvm() {
        let t = tree(
            "name: f\nbolts:\n  - id: b\n    className: org.apache.storm.testing.TestWordCounter\n    cpuLoad: 50\n    onHeapMemoryLoad: lots\n    factory: make\n    factoryArgs: [1]\n",
        );
        let raw = read_topology(&t, Path::new("."), &Properties::default());
        let found: Vec<(Severity, &str)> = raw
            .diagnostics
            .iter()
            .map(|d| (d.severity, d.message.as_str()))
            .collect();
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0].0, Severity::Warning);
        assert!(found[0].1.contains("resource-aware scheduler"));
        assert_eq!(
            found[1],
            (Severity::Error, "`onHeapMemoryLoad` must be a number")
        );
        assert_eq!(found[2].0, Severity::Error);
        assert!(found[2].1.contains("JVM"));
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
}
