//! The spout's consumer: its configuration, the checks at start (brokers reachable, topics
//! known, within [`START_TIMEOUT`]), and which partitions it reads. Without checkpoints it
//! joins the consumer group `group` and follows its rebalances: before a partition is taken
//! away, what may be committed of it is committed, and the answers still to come for its
//! messages are ignored (its next owner reads them again from the commit: at least once).
//! With checkpoints it takes a fixed share of the partitions (task `i` of `n` reads those
//! whose index in the sorted list is `i` mod `n`), so each task's position covers the same
//! partitions from run to run.

use super::args::START_TIMEOUT;
use super::offsets::PartitionOffsets;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::RDKafkaRespErr;
use rdkafka::ClientContext;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// A topic and partition.
pub(crate) type Tp = (Arc<str>, i32);

/// Where a partition is read from the first time it is assigned (Storm's
/// `FirstPollOffsetStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FirstPoll {
    /// From the start, whatever the group committed.
    Earliest,
    /// From the end, whatever the group committed.
    Latest,
    /// From the group's commit; from the start without one.
    UncommittedEarliest,
    /// From the group's commit; from the end without one.
    UncommittedLatest,
}

impl FirstPoll {
    pub(crate) const NAMES: &'static [&'static str] = &[
        "earliest",
        "latest",
        "uncommitted_earliest",
        "uncommitted_latest",
    ];

    pub(crate) fn from_name(name: &str) -> Option<FirstPoll> {
        Some(match name {
            "earliest" => FirstPoll::Earliest,
            "latest" => FirstPoll::Latest,
            "uncommitted_earliest" => FirstPoll::UncommittedEarliest,
            "uncommitted_latest" => FirstPoll::UncommittedLatest,
            _ => return None,
        })
    }

    /// librdkafka's `auto.offset.reset`: where a partition without a commit starts.
    fn reset(self) -> &'static str {
        match self {
            FirstPoll::Earliest | FirstPoll::UncommittedEarliest => "earliest",
            FirstPoll::Latest | FirstPoll::UncommittedLatest => "latest",
        }
    }

    /// The offset a first assignment starts at.
    fn start(self) -> Offset {
        match self {
            FirstPoll::Earliest => Offset::Beginning,
            FirstPoll::Latest => Offset::End,
            _ => Offset::Stored,
        }
    }
}

/// A partition this task reads.
#[derive(Debug)]
pub(crate) struct Owned {
    pub(crate) offsets: PartitionOffsets,
    /// Which assignment it belongs to: answers for an earlier one are ignored.
    pub(crate) epoch: u64,
    pub(crate) paused: bool,
}

/// The partitions this task reads, shared with the rebalance callback.
#[derive(Debug)]
pub(crate) struct Partitions {
    pub(crate) owned: BTreeMap<Tp, Owned>,
    epoch: u64,
    /// Partitions assigned before in this process (`earliest`/`latest` apply to the first).
    seen: BTreeSet<(String, i32)>,
    first_poll: FirstPoll,
    label: String,
}

impl Partitions {
    fn take(&mut self, topic: &str, partition: i32, offsets: PartitionOffsets) {
        self.epoch += 1;
        let owned = Owned {
            offsets,
            epoch: self.epoch,
            paused: false,
        };
        self.owned.insert((Arc::from(topic), partition), owned);
        self.seen.insert((topic.to_string(), partition));
    }

    /// The commits due for `which` partitions (all when `None`), marked as made.
    pub(crate) fn commits(
        &mut self,
        which: Option<&BTreeSet<(String, i32)>>,
    ) -> TopicPartitionList {
        let mut tpl = TopicPartitionList::new();
        for ((topic, p), owned) in &mut self.owned {
            if which.is_some_and(|w| !w.contains(&(topic.to_string(), *p))) {
                continue;
            }
            if let Some(at) = owned.offsets.to_commit() {
                if tpl
                    .add_partition_offset(topic, *p, Offset::Offset(at))
                    .is_ok()
                {
                    owned.offsets.committed(at);
                }
            }
        }
        tpl
    }
}

/// A shared, locked [`Partitions`].
#[derive(Clone, Debug)]
pub(crate) struct Shared(Arc<Mutex<Partitions>>);

impl Shared {
    pub(crate) fn new(first_poll: FirstPoll, label: &str) -> Shared {
        Shared(Arc::new(Mutex::new(Partitions {
            owned: BTreeMap::new(),
            epoch: 0,
            seen: BTreeSet::new(),
            first_poll,
            label: label.to_string(),
        })))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Partitions> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The consumer's callbacks: rebalances of the group.
pub(crate) struct SpoutContext {
    shared: Shared,
}

impl ClientContext for SpoutContext {}

impl ConsumerContext for SpoutContext {
    fn rebalance(
        &self,
        consumer: &BaseConsumer<Self>,
        err: RDKafkaRespErr,
        tpl: &mut TopicPartitionList,
    ) {
        match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => self.assigned(consumer, tpl),
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => self.revoked(consumer, tpl),
            other => {
                let label = self.shared.lock().label.clone();
                tracing::warn!("{label}: rebalance failed: {other:?}");
                let _ = consumer.unassign();
            }
        }
    }
}

impl SpoutContext {
    fn assigned(&self, consumer: &BaseConsumer<Self>, tpl: &mut TopicPartitionList) {
        let mut shared = self.shared.lock();
        let start = shared.first_poll.start();
        let mut names = Vec::new();
        for e in tpl.elements() {
            let key = (e.topic().to_string(), e.partition());
            if !shared.seen.contains(&key) {
                names.push(key);
            }
        }
        for (topic, p) in &names {
            let _ = tpl.set_partition_offset(topic, *p, start);
        }
        for e in tpl.elements() {
            shared.take(e.topic(), e.partition(), PartitionOffsets::default());
        }
        let label = shared.label.clone();
        drop(shared);
        tracing::info!("{label}: assigned {} partition(s)", tpl.count());
        if let Err(e) = consumer.assign(tpl) {
            tracing::warn!("{label}: cannot take the assigned partitions: {e}");
        }
    }

    /// Commit what may be of the partitions going, and forget them.
    fn revoked(&self, consumer: &BaseConsumer<Self>, tpl: &TopicPartitionList) {
        let going: BTreeSet<(String, i32)> = tpl
            .elements()
            .iter()
            .map(|e| (e.topic().to_string(), e.partition()))
            .collect();
        let mut shared = self.shared.lock();
        let commits = shared.commits(Some(&going));
        shared
            .owned
            .retain(|(t, p), _| !going.contains(&(t.to_string(), *p)));
        let label = shared.label.clone();
        drop(shared);
        if commits.count() > 0 {
            if let Err(e) = consumer.commit(&commits, rdkafka::consumer::CommitMode::Sync) {
                tracing::warn!("{label}: cannot commit the offsets of revoked partitions: {e}");
            }
        }
        let _ = consumer.unassign();
    }
}

/// The consumer for `config`, its brokers checked to answer within [`START_TIMEOUT`].
pub(crate) fn connect(
    mut config: rdkafka::ClientConfig,
    group: &str,
    first_poll: FirstPoll,
    shared: Shared,
) -> Result<BaseConsumer<SpoutContext>, String> {
    let brokers = config
        .get("bootstrap.servers")
        .unwrap_or_default()
        .to_string();
    config
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", first_poll.reset())
        .set("isolation.level", "read_committed")
        .set("enable.partition.eof", "false")
        // The prefetched messages held in the client: a slow topology holds up at this much.
        .set("queued.max.messages.kbytes", "8192");
    let consumer: BaseConsumer<SpoutContext> = config
        .create_with_context(SpoutContext { shared })
        .map_err(|e| format!("cannot make a Kafka consumer: {e}"))?;
    consumer.fetch_metadata(None, START_TIMEOUT).map_err(|e| {
        format!(
            "no Kafka broker answered at {brokers} within {}s: {e}",
            START_TIMEOUT.as_secs()
        )
    })?;
    Ok(consumer)
}

/// The partitions of `topics` (each must exist), sorted.
pub(crate) fn partitions_of(
    consumer: &BaseConsumer<SpoutContext>,
    topics: &[String],
) -> Result<Vec<(String, i32)>, String> {
    let mut out = Vec::new();
    for topic in topics {
        let metadata = consumer
            .fetch_metadata(Some(topic), START_TIMEOUT)
            .map_err(|e| format!("cannot read the metadata of topic `{topic}`: {e}"))?;
        let t = metadata.topics().iter().find(|t| t.name() == topic);
        match t {
            Some(t) if t.error().is_none() && !t.partitions().is_empty() => {
                out.extend(t.partitions().iter().map(|p| (topic.clone(), p.id())));
            }
            _ => return Err(format!("topic `{topic}` does not exist on the brokers")),
        }
    }
    out.sort();
    Ok(out)
}

/// The topics on the brokers whose name matches `pattern` (sorted).
pub(crate) fn matching_topics(
    consumer: &BaseConsumer<SpoutContext>,
    pattern: &regex::Regex,
) -> Result<Vec<String>, String> {
    let metadata = consumer
        .fetch_metadata(None, START_TIMEOUT)
        .map_err(|e| format!("cannot list the topics: {e}"))?;
    let mut names: Vec<String> = metadata
        .topics()
        .iter()
        .map(|t| t.name().to_string())
        .filter(|n| pattern.is_match(n) && !n.starts_with("__"))
        .collect();
    names.sort();
    Ok(names)
}

/// Task `index` of `tasks`' share of `partitions`: those at `index` mod `tasks`.
pub(crate) fn share(partitions: &[(String, i32)], index: u32, tasks: u32) -> Vec<(String, i32)> {
    let tasks = tasks.max(1) as usize;
    partitions
        .iter()
        .enumerate()
        .filter(|(i, _)| i % tasks == index as usize)
        .map(|(_, tp)| tp.clone())
        .collect()
}

/// Read `share` with checkpoints: from `restored` offsets where a position gives one, else as
/// `first_poll` says.
pub(crate) fn assign_share(
    consumer: &BaseConsumer<SpoutContext>,
    shared: &Shared,
    share: &[(String, i32)],
    restored: &BTreeMap<(String, i32), i64>,
) -> Result<(), String> {
    let mut tpl = TopicPartitionList::new();
    let mut s = shared.lock();
    for (topic, p) in share {
        let (offset, offsets) = match restored.get(&(topic.clone(), *p)) {
            Some(&at) => (Offset::Offset(at), PartitionOffsets::starting_at(at)),
            None => (s.first_poll.start(), PartitionOffsets::default()),
        };
        tpl.add_partition_offset(topic, *p, offset)
            .map_err(|e| format!("cannot assign {topic}/{p}: {e}"))?;
        s.take(topic, *p, offsets);
    }
    drop(s);
    consumer
        .assign(&tpl)
        .map_err(|e| format!("cannot assign partitions: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_share_the_partitions_without_overlap() {
        let parts: Vec<(String, i32)> = (0..7).map(|p| ("t".to_string(), p)).collect();
        let shares: Vec<Vec<(String, i32)>> = (0..3).map(|i| share(&parts, i, 3)).collect();
        let mut all: Vec<(String, i32)> = shares.concat();
        all.sort();
        assert_eq!(all, parts);
        assert_eq!(shares[0].len(), 3);
        assert_eq!(shares[2].len(), 2);
    }
}
