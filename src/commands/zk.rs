//! `storm zk dump`: submit a topology to a simulated cluster (SPEC §6), schedule and activate
//! it, and print the coordination tree as text lines or one JSON document.

use super::Status;
use crate::cli::{TreeFormat, ZkDumpArgs};
use crate::cluster::dump;
use crate::cluster::simulation::{default_supervisors, parse_slots, simulate};
use crate::topology::LoadOptions;
use anyhow::Context;
use std::io::Write;

pub fn dump(args: ZkDumpArgs) -> anyhow::Result<Status> {
    if let Some(addr) = &args.nimbus {
        eprintln!(
            "error: storm zk dump --nimbus {addr}: reading a live cluster's tree is not \
             available yet; give a topology FILE to dump a simulated cluster"
        );
        return Ok(Status::Failure);
    }
    let supervisors = match parse_slots(&args.slots) {
        Ok(s) => s,
        Err(msg) => {
            eprintln!("error: {msg}");
            return Ok(Status::Usage);
        }
    };
    let opts = LoadOptions {
        overrides: args.config.overrides.clone(),
        filter: None,
    };
    let loaded = match super::load_topology(args.file.as_deref(), args.expr.as_deref(), &opts) {
        Ok(l) => l,
        Err(status) => return Ok(status),
    };
    for w in &loaded.warnings {
        eprintln!("{}: warning: {}", loaded.source.name, w.message);
    }
    let topology = loaded.topology;
    let supervisors = if supervisors.is_empty() {
        default_supervisors(&topology)
    } else {
        supervisors
    };
    let now = match args.fixed_time {
        Some(secs) => secs,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    };
    let sim = match simulate(&topology, &supervisors, now) {
        Ok(sim) => sim,
        Err(e) => {
            eprintln!("error: cannot schedule {}: {e}", topology.name);
            return Ok(Status::Failure);
        }
    };
    let root = sim.state.layout().root().to_string();
    let text = match args.format {
        TreeFormat::Text => dump::to_text(sim.state.store(), &root)?,
        TreeFormat::Json => {
            let doc = dump::to_json(sim.state.store(), &root)?;
            let mut s = serde_json::to_string_pretty(&doc)?;
            s.push('\n');
            s
        }
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing the tree")?;
    Ok(Status::Success)
}
