//! Metrics reporters (`topology.metrics.reporters`): each configured reporter reads the task
//! counters of this process every period on its own thread and sends them to Graphite, CSV
//! files or stderr; a last reading is sent when the run ends.

mod sample;
mod sinks;

use crate::config::reporters::{self as conf, ReporterConf, Target};
use crate::config::Config;
use crate::runtime::metrics::TaskStats;
use sample::Origin;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;

/// The task counters a reporter reads.
type Stats = BTreeMap<u32, (String, Arc<TaskStats>)>;

/// The running reporters; dropping them sends a last reading and stops their threads.
pub(crate) struct Reporters {
    stop: Option<crossbeam_channel::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

/// The reporters `config` names, checked (a located error when one is wrong).
pub(crate) fn configured(config: &Config) -> anyhow::Result<Vec<ReporterConf>> {
    let local_dir = config.get("storm.local.dir").and_then(|v| v.as_str());
    conf::parse(config.get(conf::KEY), local_dir)
}

/// Start these reporters for the tasks of `stats`, reported as `topology_id` on worker `port`
/// (0 in a local run). A reporter whose thread cannot start is warned about and left out.
pub(crate) fn start(
    confs: Vec<ReporterConf>,
    topology_id: &str,
    port: u16,
    stats: &Stats,
) -> Reporters {
    let (tx, rx) = crossbeam_channel::bounded::<()>(0);
    let origin = Origin {
        topology_id: topology_id.to_string(),
        host: sample::host_name(),
        port,
    };
    let mut threads = Vec::new();
    for c in confs {
        let (rx, origin, stats) = (rx.clone(), origin.clone(), stats.clone());
        match std::thread::Builder::new()
            .name("metrics-reporter".into())
            .spawn(move || run(c, &origin, &stats, &rx))
        {
            Ok(t) => threads.push(t),
            Err(e) => tracing::warn!("metrics reporter: cannot start its thread: {e}"),
        }
    }
    Reporters {
        stop: Some(tx),
        threads,
    }
}

/// One reporter's loop: a reading every period until told to stop, then a last one.
fn run(c: ReporterConf, origin: &Origin, stats: &Stats, stop: &crossbeam_channel::Receiver<()>) {
    let mut graphite = match &c.target {
        Target::Graphite { host, port, prefix } => {
            Some(sinks::Graphite::new(host, *port, prefix.clone()))
        }
        _ => None,
    };
    // A failure is logged when it starts, not at every period while it lasts.
    let mut failing = false;
    loop {
        let last = !matches!(
            stop.recv_timeout(c.period),
            Err(crossbeam_channel::RecvTimeoutError::Timeout)
        );
        let mut figures = sample::read(origin, stats);
        if let Some(re) = &c.filter {
            figures.retain(|f| re.is_match(&f.name));
        }
        let now = unix_secs();
        let sent = match (&c.target, &mut graphite) {
            (Target::Graphite { .. }, Some(g)) => g.send(&figures, now),
            (Target::Csv { dir }, _) => sinks::csv(dir, &figures, now),
            _ => {
                sinks::console(&figures, now);
                Ok(())
            }
        };
        match sent {
            Err(e) if !failing => {
                tracing::warn!("metrics reporter: {e:#} (retried every period)");
                failing = true;
            }
            Err(_) => {}
            Ok(()) => failing = false,
        }
        if last {
            return;
        }
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Drop for Reporters {
    fn drop(&mut self) {
        // Closing the channel wakes every reporter for its last reading.
        self.stop.take();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
