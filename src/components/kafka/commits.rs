//! The transactional sink's commit markers and held records: each transaction carries a marker
//! record (key: the sink's `transactional.id`, value: the number of the checkpoint whose
//! records it writes) in the marker topic, so a restarted sink can tell, with a
//! `read_committed` read, which of its checkpoints' records are already in Kafka. The records
//! held for checkpoints not yet written are part of the sink's saved state (`components::held`).

use crate::tuple::Value;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Message, Offset, TopicPartitionList};
use std::time::{Duration, Instant};

/// One record to write.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Record {
    pub(crate) topic: String,
    pub(crate) key: Option<String>,
    pub(crate) payload: String,
    /// Headers written with it (name, value), in order.
    pub(crate) headers: Vec<(String, String)>,
}

impl crate::components::held::Item for Record {
    const UNREADABLE: &'static str = "the saved records of the kafka sink are malformed";
    /// `[topic, key or null, payload]`, and `[[name, value], …]` after them with headers.
    fn to_value(&self) -> Value {
        let mut items = vec![
            Value::str(&self.topic),
            self.key.as_deref().map_or(Value::Null, Value::str),
            Value::str(&self.payload),
        ];
        if !self.headers.is_empty() {
            let pair = |(n, v): &(String, String)| Value::list(vec![Value::str(n), Value::str(v)]);
            items.push(Value::list(self.headers.iter().map(pair).collect()));
        }
        Value::list(items)
    }
    fn from_value(v: &Value) -> Option<Record> {
        let Value::List(r) = v else {
            return None;
        };
        let (topic, key, payload, headers) = match r.as_slice() {
            [t, k, p] => (t, k, p, Vec::new()),
            [t, k, p, Value::List(h)] => (t, k, p, h.iter().map(header).collect::<Option<_>>()?),
            _ => return None,
        };
        let key = match key {
            Value::Null => None,
            k => Some(k.as_str()?.to_string()),
        };
        Some(Record {
            topic: topic.as_str()?.to_string(),
            key,
            payload: payload.as_str()?.to_string(),
            headers,
        })
    }
}

/// A held header: `[name, value]`.
fn header(v: &Value) -> Option<(String, String)> {
    let Value::List(pair) = v else {
        return None;
    };
    match pair.as_slice() {
        [n, v] => Some((n.as_str()?.to_string(), v.as_str()?.to_string())),
        _ => None,
    }
}

/// The highest checkpoint number `txn_id` marked as written in `topic`, read with
/// `read_committed` from the start to the end of each partition (0: none, or no such topic).
pub(crate) fn last_written(
    config: &rdkafka::ClientConfig,
    topic: &str,
    txn_id: &str,
    timeout: Duration,
) -> Result<u64, String> {
    let mut config = config.clone();
    config
        .set("group.id", format!("{txn_id}-commits-reader"))
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .set("fetch.wait.max.ms", "10");
    let consumer: BaseConsumer = config
        .create()
        .map_err(|e| format!("cannot make a consumer for `{topic}`: {e}"))?;
    let metadata = consumer
        .fetch_metadata(Some(topic), timeout)
        .map_err(|e| format!("cannot read the metadata of `{topic}`: {e}"))?;
    let partitions: Vec<i32> = metadata
        .topics()
        .iter()
        .filter(|t| t.name() == topic && t.error().is_none())
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect();
    let mut ends = Vec::new();
    let mut tpl = TopicPartitionList::new();
    for &p in &partitions {
        let (_, high) = consumer
            .fetch_watermarks(topic, p, timeout)
            .map_err(|e| format!("cannot read the end of `{topic}` [{p}]: {e}"))?;
        if high > 0 {
            ends.push((p, high));
            tpl.add_partition_offset(topic, p, Offset::Beginning)
                .map_err(|e| e.to_string())?;
        }
    }
    if ends.is_empty() {
        return Ok(0);
    }
    consumer
        .assign(&tpl)
        .map_err(|e| format!("cannot read `{topic}`: {e}"))?;
    let deadline = Instant::now() + timeout;
    let mut last = 0;
    while !read_to_ends(&consumer, topic, &ends) {
        if Instant::now() > deadline {
            return Err(format!(
                "could not read `{topic}` to its end within {}s",
                timeout.as_secs()
            ));
        }
        let Some(msg) = consumer.poll(Duration::from_millis(100)) else {
            continue;
        };
        let msg = msg.map_err(|e| format!("cannot read `{topic}`: {e}"))?;
        if msg.key() != Some(txn_id.as_bytes()) {
            continue;
        }
        let n = msg
            .payload()
            .and_then(|p| std::str::from_utf8(p).ok())
            .and_then(|p| p.parse::<u64>().ok())
            .ok_or_else(|| format!("a marker in `{topic}` for `{txn_id}` is not a number"))?;
        last = last.max(n);
    }
    Ok(last)
}

/// Whether `consumer` is at or past each partition's end in `ends`.
fn read_to_ends(consumer: &BaseConsumer, topic: &str, ends: &[(i32, i64)]) -> bool {
    let Ok(position) = consumer.position() else {
        return false;
    };
    ends.iter().all(|(p, end)| {
        position
            .find_partition(topic, *p)
            .and_then(|e| e.offset().to_raw())
            .is_some_and(|o| o >= *end)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_records_survive_encoding() {
        let held = vec![
            (3, vec![]),
            (
                4,
                vec![
                    Record {
                        topic: "t".into(),
                        key: Some("k".into()),
                        payload: "a\tb".into(),
                        headers: vec![("trace-id".into(), "t1".into())],
                    },
                    Record {
                        topic: "u".into(),
                        key: None,
                        payload: String::new(),
                        headers: Vec::new(),
                    },
                ],
            ),
        ];
        use crate::components::held::{decode, encode};
        assert_eq!(decode(&encode(&held.iter().collect::<Vec<_>>())), Ok(held));
        assert!(decode::<Record>(&Value::Int(1)).is_err());
        assert!(decode::<Record>(&Value::list(vec![Value::list(vec![Value::Int(-1)])])).is_err());
    }
}
