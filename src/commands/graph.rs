//! `storm graph FILE [--format dot|mermaid]`: print the topology as a graph on stdout.

use super::{load_topology, Status};
use crate::cli::{GraphArgs, GraphFormat};
use crate::topology::{graph, LoadOptions};
use std::io::Write;

pub(crate) fn run(args: GraphArgs) -> anyhow::Result<Status> {
    let opts = LoadOptions {
        overrides: args.config.overrides.clone(),
        filter: args.source.filter.clone(),
    };
    let loaded = match load_topology(
        args.source.file.as_deref(),
        args.source.expr.as_deref(),
        &opts,
        true,
    ) {
        Ok(l) => l,
        Err(status) => return Ok(status),
    };
    let text = match args.format {
        GraphFormat::Dot => graph::to_dot(&loaded.topology),
        GraphFormat::Mermaid => graph::to_mermaid(&loaded.topology),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(Status::Success)
}
