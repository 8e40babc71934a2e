//! The kafka spout's lag per partition (Storm's `storm-kafka-monitor`): a thread of each spout
//! task that, every `lag_interval`, reads the end of each partition the task reads (its high
//! watermark, from the brokers) and the offset committed for it (the group's commit, from the
//! brokers; with checkpoints, where every message before is done), off the spout's thread so
//! a slow broker never holds the topology up. The spout hands the last report to the runtime.

use super::args::START_TIMEOUT;
use super::consumer::Shared;
use crate::components::PartitionLag;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the lag is read unless `lag_interval` says otherwise.
pub(crate) const DEFAULT_EVERY: Duration = Duration::from_secs(5);

/// Where the committed offsets come from.
pub(crate) enum Committed {
    /// The consumer group's commits, read from the brokers.
    Group,
    /// The spout's own commit point (offsets live in checkpoints).
    CommitPoint,
}

/// A running lag reader; it stops when dropped.
pub(crate) struct LagPoller {
    report: Arc<Mutex<Option<Vec<PartitionLag>>>>,
    _stop: crossbeam_channel::Sender<()>,
}

impl LagPoller {
    /// Read the lag of the partitions `shared` holds every `every`, with a client of
    /// `config` (whose `group.id` is the spout's group).
    pub(crate) fn start(
        config: &rdkafka::ClientConfig,
        committed: Committed,
        shared: Shared,
        every: Duration,
        label: &str,
    ) -> Result<LagPoller, String> {
        let mut config = config.clone();
        config.set("enable.auto.commit", "false");
        let consumer: BaseConsumer = config
            .create()
            .map_err(|e| format!("cannot make the client that reads the lag: {e}"))?;
        let report = Arc::new(Mutex::new(None));
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let into = report.clone();
        let label = label.to_string();
        let reader = move || {
            let warnings = crate::logging::Throttle::new(Duration::from_secs(60));
            // The first read soon after the start, then every `every`.
            let mut wait = every.min(Duration::from_millis(200));
            while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = stopped.recv_timeout(wait)
            {
                wait = every;
                match read(&consumer, &committed, &shared) {
                    Ok(lag) => *into.lock().unwrap_or_else(|e| e.into_inner()) = Some(lag),
                    Err(e) => {
                        if let Some(skipped) = warnings.allow() {
                            tracing::warn!("{label}: cannot read the lag: {e} ({skipped} more)");
                        }
                    }
                }
            }
        };
        std::thread::Builder::new()
            .name("kafka-lag".into())
            .spawn(reader)
            .map_err(|e| format!("cannot start the lag reader: {e}"))?;
        Ok(LagPoller {
            report,
            _stop: stop,
        })
    }

    /// The report read since the last `take`, if any.
    pub(crate) fn take(&self) -> Option<Vec<PartitionLag>> {
        self.report.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The lag of each partition `shared` holds now, sorted.
fn read(
    consumer: &BaseConsumer,
    committed: &Committed,
    shared: &Shared,
) -> Result<Vec<PartitionLag>, String> {
    let points: BTreeMap<(String, i32), Option<i64>> = shared
        .lock()
        .owned
        .iter()
        .map(|((t, p), o)| ((t.to_string(), *p), o.offsets.commit_point()))
        .collect();
    let commits = match committed {
        Committed::CommitPoint => points
            .iter()
            .map(|(tp, at)| (tp.clone(), at.unwrap_or(-1)))
            .collect(),
        Committed::Group => group_commits(consumer, points.keys())?,
    };
    let mut out = Vec::new();
    for ((topic, partition), committed) in commits {
        let (low, head) = consumer
            .fetch_watermarks(&topic, partition, START_TIMEOUT)
            .map_err(|e| format!("cannot read the end of {topic}/{partition}: {e}"))?;
        out.push(lag_of(topic, partition, committed, (low, head)));
    }
    Ok(out)
}

/// The group's committed offsets of `partitions` (-1 for none).
fn group_commits<'a>(
    consumer: &BaseConsumer,
    partitions: impl Iterator<Item = &'a (String, i32)>,
) -> Result<BTreeMap<(String, i32), i64>, String> {
    let mut tpl = TopicPartitionList::new();
    for (t, p) in partitions {
        tpl.add_partition(t, *p);
    }
    if tpl.count() == 0 {
        return Ok(BTreeMap::new());
    }
    let got = consumer
        .committed_offsets(tpl, START_TIMEOUT)
        .map_err(|e| format!("cannot read the group's committed offsets: {e}"))?;
    Ok(got
        .elements()
        .iter()
        .map(|e| {
            let at = match e.offset() {
                Offset::Offset(o) => o,
                _ => -1,
            };
            ((e.topic().to_string(), e.partition()), at)
        })
        .collect())
}

/// One partition's lag: from the commit to the head, or, without a commit, from the start
/// of what the partition holds (its low watermark).
pub(crate) fn lag_of(
    topic: String,
    partition: i32,
    committed: i64,
    (low, head): (i64, i64),
) -> PartitionLag {
    let from = if committed >= 0 { committed } else { low };
    PartitionLag {
        topic,
        partition,
        committed,
        head,
        lag: (head - from).max(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_counts_from_the_commit_or_else_from_the_start() {
        let l = lag_of("t".into(), 2, 40, (10, 100));
        assert_eq!((l.committed, l.head, l.lag), (40, 100, 60));
        let none = lag_of("t".into(), 2, -1, (10, 100));
        assert_eq!((none.committed, none.lag), (-1, 90));
        let ahead = lag_of("t".into(), 2, 120, (10, 100));
        assert_eq!(
            ahead.lag, 0,
            "a commit past a truncated end is no negative lag"
        );
    }
}
