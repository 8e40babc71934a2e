//! Storm's stats windows (`600`, `10800`, `86400` seconds and `:all-time`): counters sampled
//! every few seconds per task, and a topology's figures over a window given as its counters
//! now less those of the sample that opens the window. Each window keeps its samples at a
//! spacing of a sixtieth of its length or more, so a day costs a few hundred samples.

use super::{TaskView, TopologyView};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// The windows Storm's UI offers, as `?window=` names them.
pub(crate) const WINDOWS: [&str; 4] = ["600", "10800", "86400", ":all-time"];

/// The all-time window's name.
pub(crate) const ALL_TIME: &str = ":all-time";

/// A window's length (`None`: all time), or why the name is not one.
pub(crate) fn parse(name: &str) -> Result<Option<Duration>, String> {
    match name {
        ":all-time" => Ok(None),
        "600" | "10800" | "86400" => Ok(name.parse().ok().map(Duration::from_secs)),
        _ => Err(format!(
            "window `{name}` is not one of {} (Storm's windows, in seconds)",
            WINDOWS.join(", ")
        )),
    }
}

/// How Storm's UI writes a window.
pub(crate) fn pretty(name: &str) -> &'static str {
    match name {
        "600" => "10m 0s",
        "10800" => "3h 0m 0s",
        "86400" => "1d 0h 0m 0s",
        _ => "All time",
    }
}

/// One task's counters at a moment.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    emitted: u64,
    transferred: u64,
    executed: u64,
    acked: u64,
    failed: u64,
    execute_ns: u64,
    complete_us: u64,
    completes_sampled: u64,
}

impl Counters {
    fn of(t: &TaskView) -> Counters {
        Counters {
            emitted: t.emitted,
            transferred: t.transferred,
            executed: t.executed,
            acked: t.acked,
            failed: t.failed,
            execute_ns: t.execute_ns,
            complete_us: t.complete_us,
            completes_sampled: t.completes_sampled,
        }
    }
}

type Sample = (Instant, HashMap<u32, Counters>);

/// Samples per topology and window length.
#[derive(Default)]
pub(crate) struct Windows {
    by_topology: HashMap<String, [VecDeque<Sample>; 3]>,
}

/// The three timed windows' lengths, in the order of the sample queues.
const LENGTHS: [Duration; 3] = [
    Duration::from_secs(600),
    Duration::from_secs(10_800),
    Duration::from_secs(86_400),
];

impl Windows {
    /// Keep the counters of `tops` as of `now` (topologies no longer listed are forgotten).
    pub(crate) fn record(&mut self, tops: &[TopologyView], now: Instant) {
        self.by_topology
            .retain(|id, _| tops.iter().any(|t| &t.id == id));
        for t in tops {
            let counters: HashMap<u32, Counters> = t
                .components
                .iter()
                .flat_map(|c| c.tasks.iter().map(|x| (x.task, Counters::of(x))))
                .collect();
            let queues = self.by_topology.entry(t.id.clone()).or_default();
            for (q, len) in queues.iter_mut().zip(LENGTHS) {
                let spacing = len / 60;
                if q.back()
                    .is_none_or(|(at, _)| now.duration_since(*at) >= spacing)
                {
                    q.push_back((now, counters.clone()));
                }
                // Keep one sample at or before the window's start, to open it.
                while q.len() > 1
                    && q.get(1)
                        .is_some_and(|(at, _)| now.duration_since(*at) >= len)
                {
                    q.pop_front();
                }
            }
        }
    }

    /// `t` with its counters over the window of `len` ending `now`, and the seconds the window
    /// really covers: all of it when the topology is younger than the window (its figures
    /// since it started), else back to the sample that opens it (a little shorter than the
    /// window, or the whole history kept when the UI started after the topology).
    pub(crate) fn over(
        &self,
        t: &TopologyView,
        len: Duration,
        now: Instant,
    ) -> (TopologyView, u64) {
        if t.uptime <= len {
            return (t.clone(), t.uptime.as_secs());
        }
        let index = LENGTHS.iter().position(|l| *l == len).unwrap_or(2);
        let base = self.by_topology.get(&t.id).and_then(|qs| {
            qs[index]
                .iter()
                .find(|(at, _)| now.duration_since(*at) <= len)
        });
        let Some((at, base)) = base else {
            // Not sampled yet: no figures over the window (none are claimed).
            return (less(t, &HashMap::new(), true), 0);
        };
        (less(t, base, false), now.duration_since(*at).as_secs())
    }
}

/// `t` with each task's counters less its `base` (a counter that went back, as a restarted
/// worker's does, counts from zero). `empty` zeroes every counter.
fn less(t: &TopologyView, base: &HashMap<u32, Counters>, empty: bool) -> TopologyView {
    let mut out = t.clone();
    for c in &mut out.components {
        for x in &mut c.tasks {
            let b = base.get(&x.task).copied().unwrap_or_default();
            let sub = |now: u64, then: u64| match empty {
                true => 0,
                false if now >= then => now - then,
                false => now,
            };
            x.emitted = sub(x.emitted, b.emitted);
            x.transferred = sub(x.transferred, b.transferred);
            x.executed = sub(x.executed, b.executed);
            x.acked = sub(x.acked, b.acked);
            x.failed = sub(x.failed, b.failed);
            x.execute_ns = sub(x.execute_ns, b.execute_ns);
            x.complete_us = sub(x.complete_us, b.complete_us);
            x.completes_sampled = sub(x.completes_sampled, b.completes_sampled);
            // Per-stream figures are kept since the start only: a window shows none.
            x.streams.clear();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::ComponentView;

    fn topo(emitted: u64, uptime: u64) -> TopologyView {
        TopologyView {
            id: "t-1".into(),
            name: "t".into(),
            status: "ACTIVE".into(),
            uptime: Duration::from_secs(uptime),
            workers: 1,
            msg_timeout_secs: 30,
            debug: false,
            configuration: Default::default(),
            components: vec![ComponentView {
                id: "s".into(),
                tasks: vec![TaskView {
                    task: 1,
                    emitted,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn a_window_is_the_change_since_the_sample_that_opens_it() {
        let mut w = Windows::default();
        let t0 = Instant::now();
        w.record(&[topo(100, 1000)], t0);
        w.record(&[topo(150, 1300)], t0 + Duration::from_secs(300));
        let now = t0 + Duration::from_secs(599);
        let (v, covered) = w.over(&topo(400, 1599), LENGTHS[0], now);
        assert_eq!((v.components[0].tasks[0].emitted, covered), (300, 599));
        // Past 600 s the first sample no longer opens the window: the one at 300 s does.
        let now = t0 + Duration::from_secs(700);
        w.record(&[topo(450, 1700)], now);
        let (v, covered) = w.over(&topo(450, 1700), LENGTHS[0], now);
        assert_eq!((v.components[0].tasks[0].emitted, covered), (300, 400));
    }

    #[test]
    fn a_young_topology_shows_all_its_figures_and_an_unsampled_one_none() {
        let w = Windows::default();
        let now = Instant::now();
        let (v, covered) = w.over(&topo(42, 30), LENGTHS[0], now);
        assert_eq!((v.components[0].tasks[0].emitted, covered), (42, 30));
        let (v, covered) = w.over(&topo(42, 3000), LENGTHS[0], now);
        assert_eq!((v.components[0].tasks[0].emitted, covered), (0, 0));
    }

    #[test]
    fn window_names_are_storms() {
        assert_eq!(parse("600"), Ok(Some(Duration::from_secs(600))));
        assert_eq!(parse(":all-time"), Ok(None));
        assert!(parse("60").is_err());
    }
}
