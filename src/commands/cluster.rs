//! The cluster commands: `nimbus`, `supervisor`, `submit`, `list`, `kill`, and the
//! internal `worker` a supervisor starts. Orchestration only; the daemons live in `cluster/`.

use super::{load_topology, Status};
use crate::cli::{ConfigOverrides, TopologySource};
use crate::cli::{
    KillArgs, NimbusAddrArgs, NimbusArgs, OperationArgs, RebalanceArgs, SubmitArgs, SupervisorArgs,
    WorkerArgs,
};
use crate::cluster::coordination::zookeeper::ZkSettings;
use crate::cluster::nimbus::Nimbus;
use crate::cluster::protocol::rpc::{self, Request, Submission, TopologySummary};
use crate::cluster::supervisor::zk_session::ZkSupervisorSettings;
use crate::cluster::{supervisor, worker};
use crate::config::{layers, Config};
use crate::net::auth::Secret;
use crate::topology::LoadOptions;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The daemons' configuration (defaults, `storm.yaml`, `-c`), or the reasons it is wrong.
fn daemon_config(c: &ConfigOverrides) -> Result<Config, Status> {
    let config = layers::cluster_config(&c.overrides).map_err(|errors| {
        for e in errors {
            crate::stderr_println!("error: {e}");
        }
        Status::Failure
    })?;
    warn_misspelt_keys(&config);
    if let Some(note) = crate::config::storm_keys::no_effect_summary(&config) {
        crate::stderr_println!("{note}");
    }
    Ok(config)
}

/// Say so when a ZooKeeper or nimbus key is close to a known one (`storm.zookeeper.server`):
/// Storm's other keys under those names are accepted without a word, as Storm accepts them.
fn warn_misspelt_keys(config: &Config) {
    for prefix in ["storm.zookeeper.", "nimbus."] {
        for (key, suggestion) in crate::config::storm_keys::unknown_keys(config, prefix) {
            if let Some(s) = suggestion {
                crate::stderr_println!("warning: unknown key `{key}`; did you mean `{s}`?");
            }
        }
    }
}

/// The nimbus addresses to try: `--nimbus`, else `nimbus.seeds` (hosts without a port on
/// `nimbus.thrift.port`), else the nimbuses registered in ZooKeeper (`storm.zookeeper.servers`),
/// as one comma-separated list.
pub(crate) fn nimbus_addrs(given: Option<&str>, config: &Config) -> Result<String, Status> {
    if let Some(given) = given {
        return Ok(given.to_string());
    }
    let port = config.get_u64("nimbus.thrift.port").unwrap_or(6627);
    let seeds: Vec<String> = config
        .get("nimbus.seeds")
        .and_then(|v| v.as_array())
        .map(|hosts| {
            hosts
                .iter()
                .filter_map(|h| h.as_str())
                .map(|h| match h.rsplit_once(':') {
                    Some((_, p)) if p.parse::<u16>().is_ok() => h.to_string(),
                    _ => format!("{h}:{port}"),
                })
                .collect()
        })
        .unwrap_or_default();
    if !seeds.is_empty() {
        return Ok(seeds.join(","));
    }
    match crate::cluster::nimbus::ha::registered_nimbuses(config) {
        Some(Ok(found)) if !found.is_empty() => Ok(found.join(",")),
        Some(Ok(_)) => {
            crate::stderr_println!("error: no nimbus is registered in ZooKeeper");
            Err(Status::Failure)
        }
        Some(Err(e)) => {
            crate::stderr_println!("error: finding nimbus in ZooKeeper: {e}");
            Err(Status::Failure)
        }
        None => {
            crate::stderr_println!(
                "error: no nimbus to talk to: give --nimbus ADDR[,ADDR...], or set nimbus.seeds \
                 or storm.zookeeper.servers"
            );
            Err(Status::Usage)
        }
    }
}

/// Nimbus for a client command without `-c` options (`storm.yaml` only): `--nimbus`, else
/// as [`nimbus_addrs`] finds it.
pub(crate) fn client_nimbus(
    given: Option<&str>,
    config: &ConfigOverrides,
) -> Result<rpc::Client, Status> {
    // Read (and check) the configuration even with an address given: a misspelt `-c` key
    // is an error, not silently ignored.
    let conf = daemon_config(config)?;
    let addrs = match given {
        Some(g) => g.to_string(),
        None => nimbus_addrs(None, &conf)?,
    };
    Ok(nimbus_client(&addrs, &config.overrides))
}

/// Nimbus for a command that changes the cluster (kill, activate, deactivate, rebalance):
/// as [`client_nimbus`], retrying through an election as `storm.nimbus.retry.*` say.
pub(crate) fn acting_nimbus(
    given: Option<&str>,
    config: &ConfigOverrides,
) -> Result<rpc::Client, Status> {
    let client = client_nimbus(given, config)?;
    let conf = layers::cluster_config(&config.overrides).unwrap_or_else(|_| layers::defaults());
    match crate::cluster::protocol::retry::Retry::from_config(&conf) {
        Ok(retry) => Ok(client.with_retry(retry)),
        Err(e) => {
            crate::stderr_println!("error: {e:#}");
            Err(Status::Usage)
        }
    }
}

/// The token for operations through a UI: `--token`, else the `ui.token` or cluster secret
/// that `-c`, `storm.yaml` or `STORM_CLUSTER_SECRET` give.
pub(crate) fn operation_token(target: &crate::cli::TargetArgs) -> Option<String> {
    target.token.clone().or_else(|| {
        layers::cluster_config(&target.config.overrides)
            .ok()
            .and_then(|c| super::ui::ui_token(&c))
    })
}

/// Nimbus at `addr`, called with the cluster secret (`storm.cluster.secret` from `storm.yaml`
/// and `-c`, or `STORM_CLUSTER_SECRET`).
pub(crate) fn nimbus_client(addr: &str, overrides: &[String]) -> rpc::Client {
    let config = layers::cluster_config(overrides).unwrap_or_else(|_| layers::defaults());
    rpc::Client::new(addr, Secret::from_config(&config))
}

/// Nimbus at `addr` for a client command (submit, kill, rebalance, an attached run, …): as
/// [`nimbus_client`], retrying over the addresses through an election as the
/// `storm.nimbus.retry.*` keys say.
pub(crate) fn command_client(addr: &str, overrides: &[String]) -> anyhow::Result<rpc::Client> {
    let config = layers::cluster_config(overrides).unwrap_or_else(|_| layers::defaults());
    let retry = crate::cluster::protocol::retry::Retry::from_config(&config)?;
    Ok(rpc::Client::new(addr, Secret::from_config(&config)).with_retry(retry))
}

/// SIGINT/SIGTERM set the returned flag (the daemons then stop cleanly).
fn stop_flag() -> anyhow::Result<Arc<AtomicBool>> {
    super::signals::on_stop_signals(super::signals::Second::SetsTheFlag)
}

pub(crate) fn nimbus(a: NimbusArgs) -> anyhow::Result<Status> {
    let config = match daemon_config(&a.config) {
        Ok(c) => c,
        Err(s) => return Ok(s),
    };
    let data = a.data.unwrap_or_else(|| {
        let local = config
            .get("storm.local.dir")
            .and_then(|v| v.as_str())
            .unwrap_or("storm-local");
        PathBuf::from(local).join("nimbus")
    });
    let stop = stop_flag()?;
    let listener = TcpListener::bind(&a.listen)
        .map_err(|e| anyhow::anyhow!("nimbus cannot listen on {}: {e}", a.listen))?;
    let nimbus = Nimbus::open_daemon(&data, config.clone())?;
    // With ZooKeeper: register and stand for leader under the address clients use.
    nimbus.elect_as(&listener.local_addr()?.to_string())?;
    let ui = super::ui::serve_nimbus(&nimbus, &config);
    crate::stderr_println!(
        "nimbus: listening on {} (data in {})",
        listener.local_addr()?,
        data.display()
    );
    let threads = nimbus.serve(listener)?;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    nimbus.stop.store(true, Ordering::Relaxed);
    drop(ui);
    for t in threads {
        let _ = t.join();
    }
    crate::stderr_println!("nimbus: stopped; the tree is saved in {}", data.display());
    Ok(Status::Success)
}

/// A secret given with `-c` reaches worker processes through their environment.
pub(crate) fn secret_env(config: &Config) -> Vec<(String, String)> {
    config
        .get("storm.cluster.secret")
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
        .map(|s| vec![("STORM_CLUSTER_SECRET".to_string(), s.to_string())])
        .unwrap_or_default()
}

pub(crate) fn supervisor(a: SupervisorArgs) -> anyhow::Result<Status> {
    let config = match daemon_config(&a.config) {
        Ok(c) => c,
        Err(s) => return Ok(s),
    };
    let ports = if a.slots.is_empty() {
        config.slots_ports()
    } else {
        a.slots
    };
    if ports.is_empty() {
        crate::stderr_println!("error: the supervisor has no worker slots (--slots PORT,...)");
        return Ok(Status::Usage);
    }
    let nimbus = match nimbus_addrs(a.nimbus.as_deref(), &config) {
        Ok(n) => rpc::Client::new(n, Secret::from_config(&config)),
        Err(s) => return Ok(s),
    };
    let stop = stop_flag()?;
    let mut opts = supervisor::options(nimbus, &a.host, ports)?;
    opts.env = secret_env(&config);
    opts.logs = Some(crate::cluster::worker_logs::LogSettings::from_config(
        &config,
    )?);
    opts.zookeeper = ZkSettings::from_config(&config).map(|settings| ZkSupervisorSettings {
        settings,
        root: config.zookeeper_root(),
    });
    if let Some(logs) = &opts.logs {
        crate::stderr_println!(
            "supervisor {}: started; worker logs in {}",
            opts.id,
            logs.dir.display()
        );
    } else {
        crate::stderr_println!("supervisor {}: started", opts.id);
    }
    supervisor::run(&opts, &stop, None)?;
    Ok(Status::Success)
}

/// What `storm submit` and `storm run --processes` send: the file's text as written, its
/// absolute path (for relative commands and files), and the `-c` overrides.
pub(crate) fn submission(
    source: &TopologySource,
    overrides: &[String],
    home: Option<String>,
) -> anyhow::Result<Submission> {
    let (path, text) = match (&source.expr, &source.file) {
        (Some(text), _) => ("<-e>".to_string(), text.clone()),
        (None, Some(file)) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", file.display()))?;
            let abs = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
            (abs.display().to_string(), text)
        }
        (None, None) => anyhow::bail!("no topology given (a FILE or -e TEXT)"),
    };
    if source.filter.is_some() {
        anyhow::bail!("--filter is not supported when submitting to a cluster yet");
    }
    Ok(Submission {
        path,
        text,
        overrides: overrides.to_vec(),
        home,
        resources: String::new(),
        parallelism: Default::default(),
    })
}

/// Pack the multilang resources of a topology read from a file into its submission, so any
/// worker can run its shell components (`cluster::protocol::multilang_files`); `-e` topologies ship nothing.
pub(crate) fn ship_resources(
    sub: &mut Submission,
    source: &TopologySource,
    topology: &crate::model::Topology,
) -> anyhow::Result<()> {
    if source.file.is_some() {
        let resources = crate::cluster::protocol::multilang_files::collect(topology)?;
        sub.resources = crate::cluster::protocol::multilang_files::pack(&resources);
    }
    Ok(())
}

pub(crate) fn submit(a: SubmitArgs) -> anyhow::Result<Status> {
    let opts = LoadOptions {
        overrides: a.config.overrides.clone(),
        filter: a.source.filter.clone(),
    };
    // Check here first, so mistakes are shown against the local file.
    let loaded = match load_topology(
        a.source.file.as_deref(),
        a.source.expr.as_deref(),
        &opts,
        true,
    ) {
        Ok(l) => l,
        Err(status) => return Ok(status),
    };
    let nimbus = match nimbus_addrs(a.nimbus.as_deref(), &loaded.topology.config) {
        Ok(n) => command_client(&n, &a.config.overrides)?,
        Err(s) => return Ok(s),
    };
    let mut sub = submission(&a.source, &a.config.overrides, None)?;
    ship_resources(&mut sub, &a.source, &loaded.topology)?;
    let id: String = nimbus.call(&Request::Submit(sub))?;
    crate::stderr_println!("submitted {} as {id}", loaded.topology.name);
    println!("{id}");
    Ok(Status::Success)
}

/// `storm list` as a table: name, id, status, workers, uptime.
fn render_list(rows: &[TopologySummary]) -> String {
    let mut table = vec![[
        "NAME".to_string(),
        "ID".to_string(),
        "STATUS".to_string(),
        "WORKERS".to_string(),
        "UPTIME".to_string(),
    ]];
    for r in rows {
        table.push([
            r.name.clone(),
            r.id.clone(),
            r.status.clone(),
            r.workers.to_string(),
            humantime::format_duration(Duration::from_secs(r.uptime_secs)).to_string(),
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| table.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &table {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

pub(crate) fn list(a: NimbusAddrArgs) -> anyhow::Result<Status> {
    let nimbus = match client_nimbus(a.nimbus.as_deref(), &a.config) {
        Ok(n) => n,
        Err(s) => return Ok(s),
    };
    let rows: Vec<TopologySummary> = nimbus.call(&Request::List)?;
    if rows.is_empty() {
        crate::stderr_println!("no topologies");
        return Ok(Status::Success);
    }
    print!("{}", render_list(&rows));
    Ok(Status::Success)
}

/// `storm remoteconfvalue KEY`: `KEY: VALUE` from nimbus's own configuration; a key nimbus
/// does not have is an error.
pub(crate) fn remote_conf_value(a: crate::cli::RemoteConfValueArgs) -> anyhow::Result<Status> {
    let nimbus = match client_nimbus(a.target.nimbus.as_deref(), &a.target.config) {
        Ok(n) => n,
        Err(s) => return Ok(s),
    };
    let value: serde_json::Value = nimbus.call(&Request::ConfValue { key: a.key.clone() })?;
    if value.is_null() {
        crate::stderr_println!("error: `{}` is not set in nimbus's configuration", a.key);
        return Ok(Status::Failure);
    }
    println!("{}: {value}", a.key);
    Ok(Status::Success)
}

/// `storm get-errors NAME`: Storm's answer, `{"Topology Name": NAME, "Comp-Errors": {COMPONENT:
/// LAST ERROR}}`, from the errors nimbus keeps under `/taskerrors` (the latest of each
/// component's tasks).
pub(crate) fn get_errors(a: crate::cli::GetErrorsArgs) -> anyhow::Result<Status> {
    let nimbus = match client_nimbus(a.target.nimbus.as_deref(), &a.target.config) {
        Ok(n) => n,
        Err(s) => return Ok(s),
    };
    let rows: Vec<TopologySummary> = nimbus.call(&Request::List)?;
    let Some(row) = rows
        .iter()
        .find(|r| (r.name == a.name || r.id == a.name) && r.status != "killed")
    else {
        crate::stderr_println!("error: no running topology named `{}`", a.name);
        return Ok(Status::Failure);
    };
    let work: crate::cluster::protocol::rpc::TopologyWork =
        nimbus.call(&Request::Topology { id: row.id.clone() })?;
    let topology = crate::cluster::nimbus::submission::load_submission(&work.submission)
        .map_err(|e| anyhow::anyhow!("topology {}: {e}", row.id))?;
    let plan = crate::model::plan::Plan::new(&topology);
    let dump: String = nimbus.call(&Request::Dump { json: true })?;
    let tree: serde_json::Value = serde_json::from_str(&dump)?;
    let errors = last_errors(&tree, &row.id, |task| {
        plan.component_of_task(task).to_string()
    });
    let answer = serde_json::json!({ "Topology Name": row.name, "Comp-Errors": errors });
    println!("{}", serde_json::to_string_pretty(&answer)?);
    Ok(Status::Success)
}

/// The latest error of each component under `/taskerrors/ID` of a dumped tree (by time, then
/// by the errors' sequence), keyed by component.
fn last_errors(
    tree: &serde_json::Value,
    id: &str,
    component_of: impl Fn(u32) -> String,
) -> serde_json::Map<String, serde_json::Value> {
    let tasks = &tree["children"]["taskerrors"]["children"][id]["children"];
    let mut latest: std::collections::BTreeMap<String, (u64, String, String)> = Default::default();
    for (task, node) in tasks.as_object().into_iter().flatten() {
        let Ok(task) = task.parse::<u32>() else {
            continue;
        };
        for (seq, e) in node["children"].as_object().into_iter().flatten() {
            let data = &e["data"];
            let (Some(error), Some(time)) = (data["error"].as_str(), data["time_secs"].as_u64())
            else {
                continue;
            };
            let entry = (time, seq.clone(), error.to_string());
            let slot = latest.entry(component_of(task)).or_insert(entry.clone());
            if (entry.0, &entry.1) > (slot.0, &slot.1) {
                *slot = entry;
            }
        }
    }
    latest
        .into_iter()
        .map(|(c, (_, _, e))| (c, serde_json::Value::from(e)))
        .collect()
}

pub(crate) fn kill(a: KillArgs) -> anyhow::Result<Status> {
    let request = Request::Kill {
        name: a.name.clone(),
        wait_secs: a.wait,
    };
    let nimbus = match acting_nimbus(a.nimbus.as_deref(), &a.config) {
        Ok(n) => n,
        Err(s) => return Ok(s),
    };
    let id: String = nimbus.call(&request)?;
    crate::stderr_println!(
        "killed {} ({id}): deactivated; removed after the wait",
        a.name
    );
    Ok(Status::Success)
}

/// `storm activate NAME` / `storm deactivate NAME`, through nimbus or a UI.
pub(crate) fn set_active(a: OperationArgs, active: bool) -> anyhow::Result<Status> {
    let verb = if active { "activate" } else { "deactivate" };
    let id = if let Some(ui) = &a.target.ui {
        let path = format!("/api/v1/topology/{}/{verb}", super::ui::encode(&a.name));
        let answer =
            crate::ui::client::post_json(ui, &path, operation_token(&a.target).as_deref())?;
        answer["topologyId"].as_str().unwrap_or(&a.name).to_string()
    } else {
        let nimbus = match acting_nimbus(a.target.nimbus.as_deref(), &a.target.config) {
            Ok(n) => n,
            Err(s) => return Ok(s),
        };
        let request = Request::SetActive {
            name: a.name.clone(),
            active,
        };
        nimbus.call::<String>(&request)?
    };
    crate::stderr_println!("{verb}d {} ({id})", a.name);
    Ok(Status::Success)
}

/// `storm rebalance NAME [-w SECS] [-n N] [-e COMPONENT=PARALLELISM]...`, through nimbus or
/// a UI (a local run's, `storm run --ui`, or nimbus's). Without `-w` the wait is the
/// topology's message timeout.
pub(crate) fn rebalance(a: RebalanceArgs) -> anyhow::Result<Status> {
    let Some(ui) = &a.target.ui else {
        let request = Request::Rebalance {
            name: a.name.clone(),
            wait_secs: a.wait,
            workers: a.num_workers,
            executors: a.executors.iter().cloned().collect(),
        };
        let nimbus = match acting_nimbus(a.target.nimbus.as_deref(), &a.target.config) {
            Ok(n) => n,
            Err(s) => return Ok(s),
        };
        let id: String = nimbus.call(&request)?;
        crate::stderr_println!(
            "rebalancing {} ({id}): deactivated for the wait, then assigned afresh",
            a.name
        );
        return Ok(Status::Success);
    };
    let name = super::ui::encode(&a.name);
    let wait = match a.wait {
        Some(w) => w,
        None => {
            let page = crate::ui::client::get_json(ui, &format!("/api/v1/topology/{name}"))?;
            page["msgTimeout"].as_u64().unwrap_or(30)
        }
    };
    let mut options = serde_json::Map::new();
    if let Some(n) = a.num_workers {
        options.insert("numWorkers".into(), n.into());
    }
    if !a.executors.is_empty() {
        let executors: serde_json::Map<String, serde_json::Value> = a
            .executors
            .iter()
            .map(|(c, n)| (c.clone(), (*n).into()))
            .collect();
        options.insert("executors".into(), executors.into());
    }
    let body = serde_json::json!({ "rebalanceOptions": options }).to_string();
    let path = format!("/api/v1/topology/{name}/rebalance/{wait}");
    let token = operation_token(&a.target);
    let answer = crate::ui::client::post_body(ui, &path, token.as_deref(), &body)?;
    let id = answer["topologyId"].as_str().unwrap_or(&a.name);
    crate::stderr_println!(
        "rebalancing {} ({id}): deactivated for at most {wait}s, then re-placed",
        a.name
    );
    Ok(Status::Success)
}

pub(crate) fn worker(a: WorkerArgs) -> anyhow::Result<Status> {
    // Whatever a multilang child detached ends with the worker.
    let _reaper = super::reaper::Reaper::start();
    let nimbus = nimbus_client(&a.nimbus, &[]);
    let zk = a.zookeeper.map(|connect| ZkSupervisorSettings {
        settings: ZkSettings {
            connect,
            session_timeout: Duration::from_millis(a.zookeeper_session_ms),
            connection_timeout: Duration::from_millis(a.zookeeper_connection_ms),
        },
        root: a.zookeeper_root,
    });
    let stop = stop_flag()?;
    match worker::run(&nimbus, zk.as_ref(), &a.topology, &a.slot, stop)? {
        worker::WorkerEnd::Finished(_) | worker::WorkerEnd::Unassigned => Ok(Status::Success),
        worker::WorkerEnd::RolledBack => Ok(Status::RolledBack),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_is_an_aligned_table() {
        let rows = vec![TopologySummary {
            name: "wordcount".into(),
            id: "wordcount-1-100".into(),
            status: "active".into(),
            workers: 2,
            uptime_secs: 61,
        }];
        insta::assert_snapshot!(render_list(&rows), @r"
        NAME       ID               STATUS  WORKERS  UPTIME
        wordcount  wordcount-1-100  active  2        1m 1s
        ");
    }
}
