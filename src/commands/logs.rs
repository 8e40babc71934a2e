//! `storm logs NAME [COMPONENT]`: the end of each worker's log of a topology on a cluster
//! (those running COMPONENT's tasks when one is named), read through nimbus from the files
//! the supervisors keep (`cluster::worker_logs`), one `==> FILE <==` header per worker.

use super::cluster::client_nimbus;
use super::Status;
use crate::cli::LogsArgs;
use crate::cluster::coordination::layout::NodePort;
use crate::cluster::protocol::rpc::{Request, TopologySummary, TopologyWork};
use crate::cluster::worker_logs::{LogChunk, WORKER_LOG};
use std::collections::BTreeSet;
use std::io::Write;

pub(crate) fn run(a: LogsArgs) -> anyhow::Result<Status> {
    let nimbus = match client_nimbus(a.target.nimbus.as_deref(), &a.target.config) {
        Ok(n) => n,
        Err(s) => return Ok(s),
    };
    let rows: Vec<TopologySummary> = nimbus.call(&Request::List)?;
    let live: Vec<&TopologySummary> = rows.iter().filter(|r| r.status != "killed").collect();
    let Some(row) = live.iter().find(|r| r.name == a.name || r.id == a.name) else {
        let hint = crate::syntax::suggest::suggest(&a.name, live.iter().map(|r| r.name.as_str()))
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        crate::stderr_println!("error: no running topology named `{}`{hint}", a.name);
        return Ok(Status::Failure);
    };
    let work: TopologyWork = nimbus.call(&Request::Topology { id: row.id.clone() })?;
    let Some(assignment) = work.assignment else {
        crate::stderr_println!("error: {} has no workers yet (not assigned)", row.id);
        return Ok(Status::Failure);
    };
    let topology = crate::cluster::nimbus::submission::load_submission(&work.submission)
        .map_err(|e| anyhow::anyhow!("topology {}: {e}", row.id))?;
    let plan = crate::model::plan::Plan::new(&topology);
    let tasks: Vec<u32> = match &a.component {
        None => assignment.task_to_node_port.keys().copied().collect(),
        Some(c) => match plan.component(c) {
            Some(ct) => ct.tasks.clone().collect(),
            None => {
                let ids = plan.components.iter().map(|c| c.id.as_str());
                let hint = crate::syntax::suggest::suggest(c, ids)
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default();
                crate::stderr_println!("error: topology `{}` has no component `{c}`{hint}", a.name);
                return Ok(Status::Failure);
            }
        },
    };
    let slots: BTreeSet<&NodePort> = tasks
        .iter()
        .filter_map(|t| assignment.task_to_node_port.get(t))
        .collect();
    let mut status = Status::Success;
    let mut out = std::io::stdout().lock();
    for slot in slots {
        let file = format!("{}/{}/{WORKER_LOG}", row.id, slot.port);
        let host = assignment
            .node_host
            .get(&slot.node)
            .map_or("?", String::as_str);
        let request = Request::WorkerLog {
            file: file.clone(),
            start: None,
            length: Some(a.length),
        };
        match nimbus.call::<LogChunk>(&request) {
            Ok(chunk) => {
                writeln!(out, "==> {file} ({host}:{}) <==", slot.port)?;
                out.write_all(chunk.text.as_bytes())?;
                if !chunk.text.is_empty() && !chunk.text.ends_with('\n') {
                    writeln!(out)?;
                }
                out.flush()?;
            }
            Err(e) => {
                crate::stderr_println!("error: {file} ({host}:{}): {e:#}", slot.port);
                status = Status::Failure;
            }
        }
    }
    Ok(status)
}
