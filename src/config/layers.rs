//! Configuration layering, lowest first: the built-in `conf/defaults.yaml`, the user's
//! `storm.yaml`, the topology's `config:`, then `-c KEY=VALUE`. Each value keeps its `Origin`.
//!
//! Where `storm.yaml` is looked up (as Storm's `storm.conf.file` search does, simplified):
//! `$STORM_CONF_DIR/storm.yaml` when `STORM_CONF_DIR` is set (and nothing else), otherwise
//! `./conf/storm.yaml` relative to the current directory when that file exists.

use super::{rules, Config, Origin};
use crate::syntax::diag::{line_col, LineIndex};
use crate::syntax::raw::{RawValue, Spanned};
use crate::syntax::tree::parse_tree;
use std::path::{Path, PathBuf};

/// Storm's defaults, compiled into the binary.
const DEFAULTS_YAML: &str = include_str!("../../conf/defaults.yaml");

/// The built-in defaults layer.
pub fn defaults() -> Config {
    let mut config = Config::default();
    // The file is ours and tested (`defaults_parse_and_pass_every_rule`); a broken build of
    // it would leave the typed accessors' fallbacks in charge rather than panic.
    if let Ok(tree) = parse_tree(DEFAULTS_YAML) {
        if let RawValue::Map(entries) = tree.value {
            for (k, v) in entries {
                config.set(k.value, v.value.to_json(), Origin::Default);
            }
        }
    }
    config
}

/// Every key the defaults know (for did-you-mean on unknown `topology.*` keys).
pub(crate) fn known_keys() -> Vec<String> {
    defaults().entries.into_keys().collect()
}

/// Whether the built-in defaults have `key` (the keys this implementation reads).
pub(crate) fn is_known_key(key: &str) -> bool {
    static KNOWN: std::sync::OnceLock<std::collections::BTreeSet<String>> =
        std::sync::OnceLock::new();
    KNOWN
        .get_or_init(|| known_keys().into_iter().collect())
        .contains(key)
}

/// The user configuration file in effect, if any (see the module doc).
fn user_config_path() -> Option<PathBuf> {
    match std::env::var_os("STORM_CONF_DIR") {
        Some(dir) => {
            let p = Path::new(&dir).join("storm.yaml");
            p.is_file().then_some(p)
        }
        None => {
            let p = PathBuf::from("conf").join("storm.yaml");
            p.is_file().then_some(p)
        }
    }
}

/// Apply a YAML map's entries as one layer; `origin` builds each value's origin from its line.
pub(crate) fn apply_entries(
    config: &mut Config,
    entries: &[(Spanned<String>, Spanned<RawValue>)],
    text: &str,
    origin: impl Fn(usize) -> Origin,
) {
    let index = LineIndex::new(text);
    for (k, v) in entries {
        let (line, _) = index.line_col(text, k.span.start);
        config.set(k.value.clone(), v.value.to_json(), origin(line));
    }
}

/// Layer the user's `storm.yaml` (if any) over `config`. Errors are one line each, located.
pub(crate) fn apply_user_file(config: &mut Config) -> Result<(), String> {
    let Some(path) = user_config_path() else {
        return Ok(());
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let tree = parse_tree(&text).map_err(|d| {
        let (line, col) = d.span.map_or((1, 1), |s| line_col(&text, s.start));
        format!("{}:{line}:{col}: {}", path.display(), d.message)
    })?;
    match &tree.value {
        RawValue::Map(entries) => {
            apply_entries(config, entries, &text, |line| Origin::StormYaml {
                path: path.clone(),
                line,
            });
            Ok(())
        }
        RawValue::Null => Ok(()),
        _ => Err(format!("{}: must be a YAML map of keys", path.display())),
    }
}

/// Apply `-c KEY=VALUE` overrides (VALUE read as YAML). Every bad one is reported.
pub(crate) fn apply_overrides(
    config: &mut Config,
    overrides: &[String],
) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    for o in overrides {
        match parse_override(o) {
            Ok((k, v)) => config.set(k, v, Origin::CommandLine),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// One `-c KEY=VALUE`, VALUE read as YAML (`-c topology.workers=2` gives the number 2).
fn parse_override(text: &str) -> Result<(String, serde_json::Value), String> {
    let Some((key, value)) = text.split_once('=') else {
        return Err(format!("-c {text}: expected KEY=VALUE"));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("-c {text}: the key is empty"));
    }
    let tree = parse_tree(value)
        .map_err(|d| format!("-c {text}: the value is not YAML: {}", d.message))?;
    Ok((key.to_string(), tree.value.to_json()))
}

/// Where a value came from, as `storm config` and error messages say it.
pub(crate) fn describe(origin: &Origin) -> String {
    match origin {
        Origin::Default => "default".into(),
        Origin::StormYaml { path, line } | Origin::Topology { path, line } => {
            format!("{}:{line}", path.display())
        }
        Origin::CommandLine => "-c".into(),
    }
}

/// The configuration of a command without a topology (cluster daemons, `storm config`):
/// defaults, `storm.yaml`, `-c`; every rule checked. Errors are whole lines.
pub(crate) fn cluster_config(overrides: &[String]) -> Result<Config, Vec<String>> {
    let mut config = defaults();
    let mut errors = Vec::new();
    if let Err(e) = apply_user_file(&mut config) {
        errors.push(e);
    }
    if let Err(e) = apply_overrides(&mut config, overrides) {
        errors.extend(e);
    }
    errors.extend(
        rules::check(&config)
            .into_iter()
            .map(|v| format!("`{}` ({}): {}", v.key, describe(&v.origin), v.message)),
    );
    if errors.is_empty() {
        rules::normalize(&mut config);
        Ok(config)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key of the built-in defaults that has a type has a rule, and its default obeys it.
    #[test]
    fn every_default_key_has_a_rule_it_obeys() {
        for (key, entry) in &defaults().entries {
            assert!(rules::rule_of(key).is_some(), "`{key}` has no rule");
            assert_eq!(rules::check_value(key, &entry.value), Ok(()), "{key}");
        }
    }

    #[test]
    fn defaults_parse_and_pass_every_rule() {
        let d = defaults();
        assert!(d.entries.len() >= 14, "{} keys", d.entries.len());
        for (key, _) in rules::RULES {
            assert!(d.entries.contains_key(*key), "{key} has no default");
        }
        assert_eq!(rules::check(&d), vec![]);
        assert_eq!(d.slots_ports(), vec![6700, 6701, 6702, 6703]);
        assert_eq!(d.get_u64("topology.shellbolt.max.pending"), Some(100));
    }

    #[test]
    fn state_defaults_read_as_documented() {
        let mut d = defaults();
        assert!(!d.stateful());
        assert_eq!(d.state_provider(), "memory");
        assert_eq!(d.state_dir("wc"), std::path::Path::new("storm-state/wc"));
        assert_eq!(d.checkpoint_interval(), std::time::Duration::from_secs(1));
        d.set(
            "topology.state.dir",
            serde_json::json!("/s"),
            Origin::CommandLine,
        );
        d.set(
            "topology.state.checkpoint.interval.ms",
            serde_json::json!(50),
            Origin::CommandLine,
        );
        assert_eq!(d.state_dir("wc"), std::path::Path::new("/s"));
        assert_eq!(
            d.checkpoint_interval(),
            std::time::Duration::from_millis(50)
        );
    }

    #[test]
    fn overrides_read_yaml_values() {
        assert_eq!(
            parse_override("topology.workers=2"),
            Ok(("topology.workers".into(), serde_json::json!(2)))
        );
        assert_eq!(
            parse_override("supervisor.slots.ports=[1, 2]"),
            Ok(("supervisor.slots.ports".into(), serde_json::json!([1, 2])))
        );
        assert!(parse_override("novalue").is_err());
        assert!(parse_override("a=[1").is_err());
    }
}
