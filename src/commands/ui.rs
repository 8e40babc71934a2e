//! The UI's side of the commands: serving it for a local run (`storm run --ui`) and for nimbus
//! (`ui.port`), and `storm tap`.

use super::Status;
use crate::cli::TapArgs;
use crate::cluster::nimbus::Nimbus;
use crate::config::Config;
use crate::model::Topology;
use crate::runtime::Running;
use crate::ui::server::{self, UiServer};
use std::sync::Arc;

/// The token that guards the UI's POSTs: `ui.token`, else the cluster secret.
pub(crate) fn ui_token(config: &Config) -> Option<String> {
    ["ui.token", "storm.cluster.secret"]
        .iter()
        .filter_map(|k| config.get(k).and_then(|v| v.as_str()))
        .find(|s| !s.is_empty())
        .map(str::to_string)
        .or_else(|| {
            std::env::var("STORM_CLUSTER_SECRET")
                .ok()
                .filter(|s| !s.is_empty())
        })
}

/// Serve the UI of a local run at `addr`; says where on stderr.
pub(crate) fn serve_local(
    addr: &str,
    topology: Arc<Topology>,
    running: &Running,
) -> anyhow::Result<UiServer> {
    let token = ui_token(&topology.config);
    let source = crate::ui::local::LocalRun::new(
        running.stats.clone(),
        running.control.clone(),
        running.rebalancer(),
    );
    let ui = server::start(addr, Arc::new(source), token)?;
    crate::stderr_println!("ui: http://{}/", ui.addr);
    Ok(ui)
}

/// Serve the UI of a cluster at `addr` (the worker processes of `storm run --processes`).
pub(crate) fn serve_cluster(
    nimbus: &Arc<Nimbus>,
    addr: &str,
    config: &Config,
) -> anyhow::Result<UiServer> {
    let source = crate::ui::cluster::ClusterUi(nimbus.clone());
    let ui = server::start(addr, Arc::new(source), ui_token(config))?;
    crate::stderr_println!("ui: http://{}/", ui.addr);
    Ok(ui)
}

/// Serve nimbus's UI at `ui.host:ui.port` (default 127.0.0.1:8080). Nimbus runs on without it
/// when the port is taken (a warning says so).
pub(crate) fn serve_nimbus(nimbus: &Arc<Nimbus>, config: &Config) -> Option<UiServer> {
    let host = config
        .get("ui.host")
        .and_then(|v| v.as_str())
        .unwrap_or("127.0.0.1");
    let port = config
        .get_u64("ui.port")
        .unwrap_or(crate::ui::DEFAULT_PORT as u64);
    let addr = format!("{host}:{port}");
    let source = crate::ui::cluster::ClusterUi(nimbus.clone());
    match server::start(&addr, Arc::new(source), ui_token(config)) {
        Ok(ui) => {
            crate::stderr_println!("nimbus: ui on http://{}/", ui.addr);
            Some(ui)
        }
        Err(e) => {
            tracing::warn!("nimbus: {e:#}; running without the UI (set ui.port)");
            None
        }
    }
}

/// A path segment with the characters a URL path cannot hold escaped.
pub(crate) fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `storm tap NAME COMPONENT`: the component's emits as JSON lines on stdout, until the run
/// ends (or the reader of stdout goes away).
pub(crate) fn tap(a: TapArgs) -> anyhow::Result<Status> {
    anyhow::ensure!(
        a.sample > 0.0 && a.sample <= 1.0,
        "--sample must be above 0 and at most 1 (got {})",
        a.sample
    );
    let mut path = format!(
        "/api/v1/topology/{}/tap/{}?sample={}",
        encode(&a.name),
        encode(&a.component),
        a.sample
    );
    if let Some(s) = &a.stream {
        path += &format!("&stream={}", encode(s));
    }
    let mut out = std::io::stdout().lock();
    let mut closed = false;
    crate::ui::client::stream_lines(&a.ui, &path, |line| {
        use std::io::Write;
        if !closed && writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            closed = true;
        }
    })?;
    Ok(Status::Success)
}
