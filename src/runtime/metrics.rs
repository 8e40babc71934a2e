//! Run figures per task, as Storm's UI defines them: emitted, transferred, executed, acked,
//! failed, execute latency, capacity; and for spouts replays, timeouts and complete latency.
//! Counters are atomics written by the owning executor thread and read for progress. User
//! metrics (a multilang child's `metrics` command) are kept by name beside them.

use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

#[derive(Debug, Default)]
pub(crate) struct TaskStats {
    pub(crate) emitted: AtomicU64,
    pub(crate) transferred: AtomicU64,
    pub(crate) executed: AtomicU64,
    pub(crate) acked: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) replayed: AtomicU64,
    pub(crate) timed_out: AtomicU64,
    pub(crate) lost: AtomicU64,
    /// Spouts: trees still open when a drain's deadline passed, given up unfinished.
    pub(crate) abandoned: AtomicU64,
    pub(crate) errors: AtomicU64,
    /// Inputs a component could not read and dropped (no `errors` stream wired).
    pub(crate) dropped: AtomicU64,
    pub(crate) execute_ns: AtomicU64,
    /// Spouts: complete latency of the sampled trees (one in eight), summed in microseconds,
    /// and how many were sampled: the UI's live `completeLatency`.
    pub(crate) complete_us: AtomicU64,
    pub(crate) completes_sampled: AtomicU64,
    /// Highest receive-queue fill seen, in batches.
    pub(crate) queue_peak: AtomicU64,
    /// Spouts that know their input size (`file`): bytes read and total.
    pub(crate) progress_done: AtomicU64,
    pub(crate) progress_total: AtomicU64,
    pub(crate) is_spout: std::sync::atomic::AtomicBool,
    /// Trees a spout task has open now (a rebalance waits for none).
    pub(crate) pending: AtomicU64,
    /// Spouts: most trees open at once (bounded by `topology.max.spout.pending`).
    pub(crate) pending_peak: AtomicU64,
    /// User metrics by name (rarely updated: a lock is cheap enough).
    pub(crate) user: Mutex<UserMetrics>,
    /// The last few errors reported, with when (Unix seconds), oldest first: the UI shows them.
    pub(crate) recent_errors: Mutex<VecDeque<(String, u64)>>,
    /// Listeners to this task's emits (`storm tap`, `topology.debug`).
    pub(crate) taps: super::tap::Taps,
    /// Emitted and transferred per output stream (Storm's `__emit-count-STREAM`).
    pub(crate) streams: StreamCounts,
    /// Spouts reading partitioned input (`kafka`): the last lag they reported, per partition.
    pub(crate) lag: Mutex<Vec<crate::components::PartitionLag>>,
    /// What spouts counted for this task for the tuples they folded where they read them
    /// (see [`FoldedCounts`]).
    pub(crate) folded: FoldedCounts,
}

/// The counts a spout adds to another task's figures for the tuples it folded in its place
/// (`SpoutCollector::fold_ahead`): kept apart from the counters the task's own thread adds to
/// with a plain load and store (a second writer there would lose counts now and then),
/// added with whole atomic adds, and summed with them when read ([`TaskStats::emitted`]…).
#[derive(Debug, Default)]
pub(crate) struct FoldedCounts {
    pub(crate) emitted: AtomicU64,
    pub(crate) transferred: AtomicU64,
    pub(crate) executed: AtomicU64,
    pub(crate) acked: AtomicU64,
}

impl FoldedCounts {
    /// `n` more of `counter`, from a spout's thread.
    #[inline]
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }
}

/// Emitted and transferred tuples per stream, indexed by stream id: a slice sized once when
/// the task is built (the plan's stream count), so counting an emit allocates nothing and
/// costs two relaxed adds beside the totals.
#[derive(Debug, Default)]
pub(crate) struct StreamCounts {
    counts: std::sync::OnceLock<Box<[(AtomicU64, AtomicU64)]>>,
}

impl StreamCounts {
    /// Count streams `0..streams` from now on (before, and past them, nothing is counted).
    pub(crate) fn size(&self, streams: usize) {
        let _ = self.counts.set(
            (0..streams)
                .map(|_| (AtomicU64::new(0), AtomicU64::new(0)))
                .collect(),
        );
    }

    /// One tuple emitted on `stream`, sent to `transferred` tasks.
    #[inline]
    pub(crate) fn add(&self, stream: crate::model::plan::StreamId, transferred: u64) {
        self.add_n(stream, 1, transferred);
    }

    /// `emitted` tuples emitted on `stream`, sent to `transferred` tasks in all.
    #[inline]
    pub(crate) fn add_n(
        &self,
        stream: crate::model::plan::StreamId,
        emitted: u64,
        transferred: u64,
    ) {
        if let Some((e, t)) = self.counts.get().and_then(|c| c.get(usize::from(stream))) {
            TaskStats::add(e, emitted);
            TaskStats::add(t, transferred);
        }
    }

    /// `(stream id, emitted, transferred)` of the streams emitted on.
    pub(crate) fn read(&self) -> Vec<(crate::model::plan::StreamId, u64, u64)> {
        let Some(c) = self.counts.get() else {
            return Vec::new();
        };
        c.iter()
            .enumerate()
            .filter_map(|(i, (e, t))| {
                let e = e.load(Relaxed);
                let id = crate::model::plan::StreamId::try_from(i).ok()?;
                (e > 0).then(|| (id, e, t.load(Relaxed)))
            })
            .collect()
    }
}

/// Errors kept per task for the UI.
pub(crate) const RECENT_ERRORS: usize = 10;

impl TaskStats {
    #[inline]
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.store(counter.load(Relaxed) + n, Relaxed);
    }

    /// Tuples emitted, its own and those spouts folded in its place.
    pub(crate) fn emitted(&self) -> u64 {
        self.emitted.load(Relaxed) + self.folded.emitted.load(Relaxed)
    }

    /// Tuples transferred, its own and those spouts folded in its place.
    pub(crate) fn transferred(&self) -> u64 {
        self.transferred.load(Relaxed) + self.folded.transferred.load(Relaxed)
    }

    /// Tuples executed, its own and those spouts folded in its place.
    pub(crate) fn executed(&self) -> u64 {
        self.executed.load(Relaxed) + self.folded.executed.load(Relaxed)
    }

    /// Tuples acked, its own and those spouts folded in its place.
    pub(crate) fn acked(&self) -> u64 {
        self.acked.load(Relaxed) + self.folded.acked.load(Relaxed)
    }

    /// `(stream id, emitted, transferred)` of the streams emitted on, with what spouts folded
    /// in its place (on its default stream, one task each).
    pub(crate) fn stream_counts(&self) -> Vec<(crate::model::plan::StreamId, u64, u64)> {
        let mut counts = self.streams.read();
        let folded = self.folded.emitted.load(Relaxed);
        if folded > 0 {
            let default = crate::model::plan::streams::DEFAULT;
            match counts.iter_mut().find(|(id, _, _)| *id == default) {
                Some((_, e, t)) => {
                    *e += folded;
                    *t += folded;
                }
                None => {
                    counts.push((default, folded, folded));
                    counts.sort_unstable_by_key(|(id, _, _)| *id);
                }
            }
        }
        counts
    }

    /// An error was reported: counted, and kept among the recent ones.
    pub(crate) fn record_error(&self, msg: &str) {
        Self::add(&self.errors, 1);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut recent = self.recent_errors.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() >= RECENT_ERRORS {
            recent.pop_front();
        }
        recent.push_back((msg.to_string(), now));
    }

    /// The spout's lag now (a copy of its last report).
    pub(crate) fn lag(&self) -> Vec<crate::components::PartitionLag> {
        self.lag.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A user metric was updated to `value`.
    pub(crate) fn user_metric(&self, name: &str, value: &serde_json::Value) {
        let mut user = self.user.lock().unwrap_or_else(|e| e.into_inner());
        user.update(name, value);
    }
}

/// Most distinct user metric names kept per task: a child inventing names cannot make the
/// table grow without bound (later names are counted as dropped).
pub(crate) const MAX_USER_METRICS: usize = 256;

/// A task's user metrics, and a sequence that orders their updates across tasks.
#[derive(Debug, Default)]
pub(crate) struct UserMetrics {
    pub(crate) by_name: BTreeMap<String, UserMetric>,
    /// Updates of names beyond [`MAX_USER_METRICS`].
    pub(crate) dropped: u64,
}

/// One user metric: how often it was updated, the last value, and the sum of the numeric ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct UserMetric {
    pub(crate) updates: u64,
    pub(crate) last: serde_json::Value,
    sum: f64,
    /// When the last update came (for "last" across tasks), as a global sequence.
    #[serde(skip)]
    seq: u64,
}

/// Orders updates across tasks, so a component's `last` is the last of any of its tasks.
static UPDATE_SEQ: AtomicU64 = AtomicU64::new(0);

impl UserMetrics {
    fn update(&mut self, name: &str, value: &serde_json::Value) {
        if !self.by_name.contains_key(name) && self.by_name.len() >= MAX_USER_METRICS {
            self.dropped += 1;
            return;
        }
        let m = self.by_name.entry(name.to_string()).or_default();
        m.updates += 1;
        m.last = value.clone();
        m.sum += value.as_f64().unwrap_or(0.0);
        m.seq = UPDATE_SEQ.fetch_add(1, Relaxed);
    }

    /// Fold another task's metrics into these (a component's total).
    pub(crate) fn merge(&mut self, other: &UserMetrics) {
        self.dropped += other.dropped;
        for (name, m) in &other.by_name {
            let into = self.by_name.entry(name.clone()).or_default();
            if m.seq >= into.seq || into.updates == 0 {
                into.last = m.last.clone();
                into.seq = m.seq;
            }
            into.updates += m.updates;
            into.sum += m.sum;
        }
    }
}

/// Latency samples in log-spaced buckets (microseconds), for p50 / p99 without storing each.
#[derive(Debug, Clone, Default)]
pub(crate) struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    sum_us: u64,
}

impl Histogram {
    fn bucket_of(us: u64) -> usize {
        // 8 buckets per power of two.
        if us < 8 {
            return us as usize;
        }
        let log = 63 - us.leading_zeros() as usize;
        let frac = ((us >> (log - 3)) & 7) as usize;
        (log - 2) * 8 + frac
    }

    fn value_of(bucket: usize) -> u64 {
        if bucket < 8 {
            return bucket as u64;
        }
        let log = bucket / 8 + 2;
        let frac = (bucket % 8) as u64;
        (8 + frac) << (log - 3)
    }

    pub(crate) fn record(&mut self, us: u64) {
        let b = Self::bucket_of(us);
        if self.buckets.len() <= b {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += 1;
        self.count += 1;
        self.sum_us += us;
    }

    pub(crate) fn merge(&mut self, other: &Histogram) {
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.count += other.count;
        self.sum_us += other.sum_us;
    }

    fn count(&self) -> u64 {
        self.count
    }

    fn mean_ms(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_us as f64 / self.count as f64 / 1000.0
        }
    }

    fn quantile_ms(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((self.count as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Self::value_of(i) as f64 / 1000.0;
            }
        }
        0.0
    }
}

/// Figures of one component at the end of a run (`--stats` JSON and the summary table).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ComponentReport {
    pub id: String,
    pub(crate) kind: &'static str,
    pub(crate) tasks: u32,
    pub(crate) executors: u32,
    pub emitted: u64,
    pub(crate) transferred: u64,
    pub executed: u64,
    pub acked: u64,
    pub(crate) failed: u64,
    pub(crate) replayed: u64,
    pub(crate) timed_out: u64,
    pub(crate) lost: u64,
    pub(crate) errors: u64,
    /// Inputs the component could not read and dropped (`parse` without an `errors` stream).
    pub(crate) dropped: u64,
    /// Mean execute latency, ms.
    pub(crate) execute_latency_ms: f64,
    /// Fraction of the run its executors spent executing (Storm UI's capacity).
    pub(crate) capacity: f64,
    pub(crate) queue_peak: u64,
    /// Spouts: most trees open at once in any one task.
    pub(crate) pending_peak: u64,
    pub(crate) complete_latency_ms: Option<LatencyReport>,
    /// User metrics (a multilang child's `metrics` command) by name, over all tasks.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) metrics: BTreeMap<String, UserMetric>,
    pub(crate) per_task: Vec<TaskReport>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct TaskReport {
    pub(crate) task: u32,
    pub(crate) emitted: u64,
    pub(crate) transferred: u64,
    pub(crate) executed: u64,
    pub(crate) acked: u64,
    pub(crate) failed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct LatencyReport {
    mean: f64,
    p50: f64,
    p99: f64,
}

impl LatencyReport {
    pub(crate) fn of(h: &Histogram) -> Option<LatencyReport> {
        (h.count() > 0).then(|| LatencyReport {
            mean: h.mean_ms(),
            p50: h.quantile_ms(0.5),
            p99: h.quantile_ms(0.99),
        })
    }
}

/// The compact end-of-run table for stderr.
pub(crate) fn render_table(reports: &[ComponentReport], elapsed_secs: f64) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<16} {:>5} {:>11} {:>11} {:>11} {:>10} {:>8} {:>9} {:>8}",
        "component",
        "tasks",
        "emitted",
        "executed",
        "acked",
        "failed",
        "lat ms",
        "capacity",
        "replays"
    );
    for r in reports {
        let _ = writeln!(
            out,
            "{:<16} {:>5} {:>11} {:>11} {:>11} {:>10} {:>8.3} {:>9.3} {:>8}",
            truncate(&r.id, 16),
            r.tasks,
            r.emitted,
            r.executed,
            r.acked,
            r.failed,
            r.execute_latency_ms,
            r.capacity,
            r.replayed
        );
        if r.dropped > 0 {
            let _ = writeln!(
                out,
                "{:<16} dropped {} input(s) it could not read (wire its `errors` stream to keep them)",
                "", r.dropped
            );
        }
        if let Some(c) = &r.complete_latency_ms {
            let _ = writeln!(
                out,
                "{:<16} complete latency ms: mean {:.3} p50 {:.3} p99 {:.3}{}",
                "",
                c.mean,
                c.p50,
                c.p99,
                if r.timed_out > 0 {
                    format!(", {} timed out", r.timed_out)
                } else {
                    String::new()
                }
            );
        }
        for (name, m) in &r.metrics {
            let _ = writeln!(
                out,
                "{:<16} metric {name}: last {}, sum {}, {} update(s)",
                "", m.last, m.sum, m.updates
            );
        }
    }
    let _ = write!(out, "ran {elapsed_secs:.3}s");
    out
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(['…']).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_metrics_keep_last_and_sum_over_tasks() {
        let (mut a, mut b) = (UserMetrics::default(), UserMetrics::default());
        a.update("rows", &serde_json::json!(2));
        b.update("rows", &serde_json::json!(5));
        a.update("rows", &serde_json::json!(1.5));
        a.update("label", &serde_json::json!("x"));
        let mut total = UserMetrics::default();
        total.merge(&a);
        total.merge(&b);
        let rows = &total.by_name["rows"];
        assert_eq!((rows.updates, rows.sum), (3, 8.5));
        assert_eq!(rows.last, serde_json::json!(1.5), "a's update came last");
        assert_eq!(total.by_name["label"].sum, 0.0, "text is not summed");
        let mut full = UserMetrics::default();
        for i in 0..=MAX_USER_METRICS {
            full.update(&format!("m{i}"), &serde_json::json!(1));
        }
        assert_eq!((full.by_name.len(), full.dropped), (MAX_USER_METRICS, 1));
    }

    #[test]
    fn histogram_quantiles_are_close() {
        let mut h = Histogram::default();
        for us in 1..=1000 {
            h.record(us * 10);
        }
        let p50 = h.quantile_ms(0.5);
        assert!((4.0..=6.0).contains(&p50), "{p50}");
        let p99 = h.quantile_ms(0.99);
        assert!((8.5..=11.0).contains(&p99), "{p99}");
    }

    /// What spouts folded in a task's place is summed with its own counts when read, the
    /// default stream's too, whether the task emitted on it itself or not.
    #[test]
    fn folded_counts_are_read_with_the_task_s_own() {
        use crate::model::plan::streams;
        let s = TaskStats::default();
        s.streams.size(4);
        TaskStats::add(&s.executed, 3);
        s.streams.add_n(2, 5, 5);
        FoldedCounts::add(&s.folded.executed, 10);
        FoldedCounts::add(&s.folded.acked, 10);
        FoldedCounts::add(&s.folded.emitted, 7);
        FoldedCounts::add(&s.folded.transferred, 7);
        assert_eq!(
            (s.executed(), s.acked(), s.emitted(), s.transferred()),
            (13, 10, 7, 7)
        );
        assert_eq!(s.stream_counts(), vec![(streams::DEFAULT, 7, 7), (2, 5, 5)]);
        s.streams.add_n(streams::DEFAULT, 1, 2);
        assert_eq!(s.stream_counts()[0], (streams::DEFAULT, 8, 9));
    }
}
