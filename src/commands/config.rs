//! `storm config [FILE] [-c KEY=VALUE]...`: the effective configuration, one key per line with
//! its value (compact JSON) and where it came from (default, a file and line, or `-c`); a key
//! Storm knows but that has no effect here is marked `[no effect]`, one neither knows
//! `[unknown]` (unmarked keys are obeyed). `--unused` lists only the `[no effect]` keys.

use super::{load_topology, Status};
use crate::cli::ConfigArgs;
use crate::config::storm_keys::{class_of, KeyClass};
use crate::config::{layers, Config};
use crate::topology::LoadOptions;
use std::io::Write;

fn is_secret(key: &str) -> bool {
    key.ends_with(".secret") || key.ends_with(".password")
}

/// `value` with the password of any URL in it hidden (`redis://:<hidden>@host:6379`).
/// `password=…` pairs hidden in the value's strings (a URL's password is left to
/// [`hide_url_passwords`], which shows it as `<hidden>` as secret keys are shown).
fn redact_in_text(value: &serde_json::Value) -> serde_json::Value {
    let text = crate::components::jdbc::url::redact(&value.to_string());
    serde_json::from_str(&text).unwrap_or(serde_json::Value::String("<hidden>".into()))
}

fn hide_url_passwords(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        J::String(s) => J::String(crate::components::redis::conn::redact(s)),
        J::Array(items) => J::Array(items.iter().map(hide_url_passwords).collect()),
        J::Object(m) => J::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), hide_url_passwords(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// One line per key: `KEY = VALUE  (ORIGIN)`, keys sorted, columns aligned; a key not obeyed
/// here ends with its class.
fn render(config: &Config) -> String {
    render_only(config, |_| true)
}

/// [`render`] of the keys `keep` keeps.
fn render_only(config: &Config, keep: impl Fn(&str) -> bool) -> String {
    let rows: Vec<(String, String, String)> = config
        .entries
        .iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, e)| {
            // A secret is never printed, only whether one is set.
            let value = if is_secret(k) && !e.value.is_null() {
                "\"<hidden>\"".to_string()
            } else {
                // A password inside a connection string (`postgresql://u:pw@h/db`,
                // `redis://:pw@h`) or as `password=…` is hidden.
                hide_url_passwords(&redact_in_text(&e.value)).to_string()
            };
            let mark = match class_of(k) {
                KeyClass::Obeyed => "",
                KeyClass::NoEffect => "  [no effect]",
                KeyClass::Unknown => "  [unknown]",
            };
            let origin = format!("({}){mark}", layers::describe(&e.origin));
            (k.clone(), value, origin)
        })
        .collect();
    let kw = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let vw = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
    rows.iter()
        .map(|(k, v, o)| {
            let pad = vw.saturating_sub(v.chars().count());
            format!("{k:kw$} = {v}{}  {o}\n", " ".repeat(pad))
        })
        .collect()
}

pub(crate) fn run(args: ConfigArgs) -> anyhow::Result<Status> {
    let config = match &args.file {
        Some(file) => {
            let opts = LoadOptions {
                overrides: args.config.overrides.clone(),
                filter: args.filter.clone(),
            };
            match load_topology(Some(file), None, &opts, true) {
                Ok(loaded) => loaded.topology.config,
                Err(status) => return Ok(status),
            }
        }
        None => match layers::cluster_config(&args.config.overrides) {
            Ok(c) => c,
            Err(errors) => {
                for e in errors {
                    crate::stderr_println!("error: {e}");
                }
                return Ok(Status::Failure);
            }
        },
    };
    let mut out = std::io::stdout().lock();
    let text = if args.unused {
        let unused = crate::config::storm_keys::no_effect_keys(&config);
        render_only(&config, |k| unused.iter().any(|u| u == k))
    } else {
        render(&config)
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(Status::Success)
}
