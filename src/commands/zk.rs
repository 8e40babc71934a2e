//! `storm zk dump`: submit a topology to a simulated cluster, schedule and activate
//! it, and print the coordination tree as text lines or one JSON document.

use super::Status;
use crate::cli::{TreeFormat, ZkDumpArgs};
use crate::cluster::coordination::dump;
use crate::cluster::coordination::zookeeper::{ZkSettings, ZkStore};
use crate::cluster::nimbus::simulation::{
    default_supervisors, parse_slots, simulate, SimSupervisor,
};
use crate::cluster::{ClusterError, CoordinationStore, StoreError};
use crate::model::Topology;
use crate::topology::LoadOptions;
use anyhow::Context;
use std::io::Write;

pub(crate) fn dump(args: ZkDumpArgs) -> anyhow::Result<Status> {
    if let Some(addr) = &args.nimbus {
        // The live tree, printed by nimbus in the simulated dump's format.
        let request = crate::cluster::protocol::rpc::Request::Dump {
            json: args.format == TreeFormat::Json,
        };
        let nimbus = super::cluster::nimbus_client(addr, &args.config.overrides);
        let text: String = nimbus.call(&request)?;
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .context("writing the tree")?;
        return Ok(Status::Success);
    }
    if let Some(ensemble) = &args.zookeeper {
        return dump_ensemble(ensemble, &args.config.overrides, args.format);
    }
    let supervisors = match parse_slots(&args.slots) {
        Ok(s) => s,
        Err(msg) => {
            crate::stderr_println!("error: {msg}");
            return Ok(Status::Usage);
        }
    };
    let opts = LoadOptions {
        overrides: args.config.overrides.clone(),
        filter: None,
    };
    let loaded = match super::load_topology(args.file.as_deref(), args.expr.as_deref(), &opts, true)
    {
        Ok(l) => l,
        Err(status) => return Ok(status),
    };
    let topology = loaded.topology;
    let supervisors = if supervisors.is_empty() {
        default_supervisors(&topology)
    } else {
        supervisors
    };
    let text = match render(&topology, &supervisors, args.fixed_time, args.format) {
        Ok(text) => text,
        Err(e) => {
            crate::stderr_println!("error: cannot schedule {}: {e}", topology.name);
            return Ok(Status::Failure);
        }
    };
    print_tree(&text)
}

/// Print the tree an ensemble holds under `storm.zookeeper.root`, read live.
fn dump_ensemble(
    ensemble: &str,
    overrides: &[String],
    format: TreeFormat,
) -> anyhow::Result<Status> {
    let config = match crate::config::layers::cluster_config(overrides) {
        Ok(c) => c,
        Err(errors) => {
            for e in errors {
                crate::stderr_println!("error: {e}");
            }
            return Ok(Status::Failure);
        }
    };
    let root = config.zookeeper_root();
    let store = match ZkStore::connect(ZkSettings::new(ensemble.to_string(), &config)) {
        Ok(s) => s,
        Err(e) => {
            crate::stderr_println!("error: --zookeeper {ensemble}: {e}");
            return Ok(Status::Failure);
        }
    };
    let text = match tree_text(&store, &root, format) {
        Ok(t) => t,
        Err(StoreError::NoNode(_)) => {
            crate::stderr_println!(
                "error: ZooKeeper at {ensemble} has no {root}: no storm cluster keeps its \
                 state there (see storm.zookeeper.root)"
            );
            return Ok(Status::Failure);
        }
        Err(e) => {
            crate::stderr_println!("error: reading the tree from ZooKeeper at {ensemble}: {e}");
            return Ok(Status::Failure);
        }
    };
    print_tree(&text)
}

/// The tree under `root` in `format`.
fn tree_text(
    store: &dyn CoordinationStore,
    root: &str,
    format: TreeFormat,
) -> Result<String, StoreError> {
    Ok(match format {
        TreeFormat::Text => dump::to_text(store, root)?,
        TreeFormat::Json => {
            let doc = dump::to_json(store, root)?;
            // A JSON value of plain data always serialises.
            let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
            s.push('\n');
            s
        }
    })
}

/// Simulate the cluster at `fixed_time` (or now) and print its tree in `format`.
fn render(
    topology: &Topology,
    supervisors: &[SimSupervisor],
    fixed_time: Option<u64>,
    format: TreeFormat,
) -> Result<String, ClusterError> {
    let now = match fixed_time {
        Some(secs) => secs,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    };
    let sim = simulate(topology, supervisors, now)?;
    let root = sim.state.layout().root().to_string();
    Ok(tree_text(sim.state.store(), &root, format)?)
}

/// Write the tree to stdout.
fn print_tree(text: &str) -> anyhow::Result<Status> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing the tree")?;
    Ok(Status::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::nimbus::simulation::tests::wordcount;

    #[test]
    fn json_output_is_one_document_ending_in_a_newline() {
        let topo = wordcount(&[]);
        let sups = default_supervisors(&topo);
        let out = render(&topo, &sups, Some(7), TreeFormat::Json).unwrap();
        assert!(out.ends_with("}\n"));
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        let storms = &doc["children"]["storms"]["children"];
        assert_eq!(storms["wordcount-1-7"]["data"]["status"], "active");
    }

    #[test]
    fn text_output_changes_only_in_timestamps_without_fixed_time() {
        let topo = wordcount(&[]);
        let sups = default_supervisors(&topo);
        let a = render(&topo, &sups, None, TreeFormat::Text).unwrap();
        let b = render(&topo, &sups, Some(1_000_000_000), TreeFormat::Text).unwrap();
        let digits = regex::Regex::new("[0-9]{9,}").unwrap();
        assert_eq!(digits.replace_all(&a, "T"), digits.replace_all(&b, "T"));
        assert!(b.lines().all(|l| l.starts_with("/storm")));
    }
}
