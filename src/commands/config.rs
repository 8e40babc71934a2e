//! `storm config [FILE] [-c KEY=VALUE]...`: the effective configuration, one key per line with
//! its value (compact JSON) and where it came from (default, a file and line, or `-c`).

use super::{load_topology, Status};
use crate::cli::ConfigArgs;
use crate::config::{layers, Config};
use crate::topology::LoadOptions;
use std::io::Write;

fn is_secret(key: &str) -> bool {
    key.ends_with(".secret") || key.ends_with(".password")
}

/// One line per key: `KEY = VALUE  (ORIGIN)`, keys sorted, columns aligned.
pub fn render(config: &Config) -> String {
    let rows: Vec<(String, String, String)> = config
        .entries
        .iter()
        .map(|(k, e)| {
            // A secret is never printed, only whether one is set.
            let value = if is_secret(k) && !e.value.is_null() {
                "\"<hidden>\"".to_string()
            } else {
                e.value.to_string()
            };
            (k.clone(), value, layers::describe(&e.origin))
        })
        .collect();
    let kw = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let vw = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
    rows.iter()
        .map(|(k, v, o)| {
            let pad = vw.saturating_sub(v.chars().count());
            format!("{k:kw$} = {v}{}  ({o})\n", " ".repeat(pad))
        })
        .collect()
}

pub fn run(args: ConfigArgs) -> anyhow::Result<Status> {
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
    out.write_all(render(&config).as_bytes())?;
    out.flush()?;
    Ok(Status::Success)
}
