//! One reading of a worker's task counters as named figures, named as Storm's metrics v2 names
//! them: `storm.topology.{topology id}.{host}.{component}.{task}.{worker port}-{metric}`.

use crate::runtime::metrics::TaskStats;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Whether a figure counts up (a Dropwizard counter) or is read as it is (a gauge).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
}

/// One named figure.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figure {
    pub(crate) name: String,
    pub(crate) value: f64,
    pub(crate) kind: Kind,
}

/// Who is reporting: the parts of every name before the component.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    pub(crate) topology_id: String,
    pub(crate) host: String,
    pub(crate) port: u16,
}

/// A counter: its metric name and how to read it.
type Count = (&'static str, fn(&TaskStats) -> u64);

const COUNTS: &[Count] = &[
    ("__emit-count", |s| s.emitted()),
    ("__transfer-count", |s| s.transferred()),
    ("__execute-count", |s| s.executed()),
    ("__ack-count", |s| s.acked()),
    ("__fail-count", |s| s.failed.load(Relaxed)),
    ("__errors", |s| s.errors.load(Relaxed)),
    ("__dropped", |s| s.dropped.load(Relaxed)),
];

/// A name part with the characters that would split or break a dotted path made `_`.
fn part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '.' || c == '/' || c.is_whitespace() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// Every figure of these tasks, now (system components such as `__acker` included).
pub(crate) fn read(
    origin: &Origin,
    stats: &BTreeMap<u32, (String, Arc<TaskStats>)>,
) -> Vec<Figure> {
    let mut out = Vec::new();
    for (task, (component, s)) in stats {
        let base = format!(
            "storm.topology.{}.{}.{}.{task}.{}",
            part(&origin.topology_id),
            part(&origin.host),
            part(component),
            origin.port
        );
        for (metric, get) in COUNTS {
            out.push(Figure {
                name: format!("{base}-{metric}"),
                value: get(s) as f64,
                kind: Kind::Counter,
            });
        }
        let executed = s.executed();
        if executed > 0 {
            let ms = s.execute_ns.load(Relaxed) as f64 / executed as f64 / 1e6;
            out.push(Figure {
                name: format!("{base}-__execute-latency"),
                value: ms,
                kind: Kind::Gauge,
            });
        }
        let sampled = s.completes_sampled.load(Relaxed);
        if sampled > 0 {
            let ms = s.complete_us.load(Relaxed) as f64 / sampled as f64 / 1e3;
            out.push(Figure {
                name: format!("{base}-__complete-latency"),
                value: ms,
                kind: Kind::Gauge,
            });
        }
    }
    out
}

/// This machine's host name (Linux's), or `localhost` when it cannot be read.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_storms_layout() {
        let s = Arc::new(TaskStats::default());
        TaskStats::add(&s.acked, 3);
        let stats = BTreeMap::from([(7, ("split.words".to_string(), s))]);
        let o = Origin {
            topology_id: "wc-1-2".into(),
            host: "h.example".into(),
            port: 6700,
        };
        let f = read(&o, &stats);
        let ack = f.iter().find(|f| f.name.ends_with("-__ack-count")).unwrap();
        assert_eq!(
            ack.name,
            "storm.topology.wc-1-2.h_example.split_words.7.6700-__ack-count"
        );
        assert_eq!(ack.value, 3.0);
        assert!(
            !f.iter().any(|f| f.name.contains("latency")),
            "no latency before any execute"
        );
    }
}
