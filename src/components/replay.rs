//! What a replaying spout keeps (`stdin`, `file`, `generate`): each tracked tuple until its
//! tree is acked, a queue of failed ones to emit again, and, with `args.max_retries`, the count
//! of those given up on (reported as lost). A tuple that keeps failing (slower than the message
//! timeout, say) is replayed for ever without `max_retries`: that is logged, at most once per
//! [`REPEAT_LOG_EVERY`].

use crate::slots::Slots;
use crate::tuple::Value;
use std::collections::VecDeque;
use std::time::Duration;

/// Failures of one tuple from which on its replays are logged.
const REPEAT_FAILURES: u32 = 2;
/// The least time between two such log lines of one spout task.
const REPEAT_LOG_EVERY: Duration = Duration::from_secs(10);

/// A kept tuple: its values and how often it failed.
#[derive(Debug)]
struct Kept<T> {
    value: T,
    retries: u32,
}

/// Tuples in flight by message id, in [`Slots`]: the id's high half counts the tuples kept,
/// so an answer for a tuple whose slot was reused is ignored.
#[derive(Debug)]
pub(crate) struct Replay<T> {
    inflight: Slots<Kept<T>>,
    kept: u32,
    queue: VecDeque<u64>,
    max_retries: Option<u32>,
    lost: u64,
    /// The spout, for the log (`spout "lines" task 1`).
    label: String,
    /// When a repeated failure was last logged, and how many went unlogged since.
    repeat_log: crate::logging::Throttle,
}

impl<T: Clone> Replay<T> {
    pub(crate) fn new(max_retries: Option<u32>) -> Replay<T> {
        Replay {
            inflight: Slots::default(),
            kept: 0,
            queue: VecDeque::new(),
            max_retries,
            lost: 0,
            label: "spout".into(),
            repeat_log: crate::logging::Throttle::new(REPEAT_LOG_EVERY),
        }
    }

    /// Name the spout task in the log (`component` and task id).
    pub(crate) fn set_label(&mut self, component: &str, task: u32) {
        self.label = format!("spout \"{component}\" task {task}");
    }

    /// Keep a new tuple; returns its id (the message id to emit with).
    pub(crate) fn track(&mut self, value: T) -> u64 {
        self.kept = self.kept.checked_add(1).unwrap_or(1);
        self.inflight.insert(self.kept, Kept { value, retries: 0 })
    }

    /// The next failed tuple to emit again, if any.
    pub(crate) fn next_replay(&mut self) -> Option<(u64, T)> {
        while let Some(id) = self.queue.pop_front() {
            if let Some(kept) = self.inflight.get(id) {
                return Some((id, kept.value.clone()));
            }
        }
        None
    }

    /// The tuple kept under `msg_id` (as the spout emitted it), if it is still kept.
    pub(crate) fn kept_mut(&mut self, msg_id: &Value) -> Option<&mut T> {
        let kept = self.inflight.get_mut(id_of(msg_id)?)?;
        Some(&mut kept.value)
    }

    /// Change every tuple still kept with `f`, in no order; stops at its first error.
    pub(crate) fn try_each_kept_mut<E>(
        &mut self,
        mut f: impl FnMut(&mut T) -> Result<(), E>,
    ) -> Result<(), E> {
        for id in self.inflight.ids_where(|_| true) {
            if let Some(kept) = self.inflight.get_mut(id) {
                f(&mut kept.value)?;
            }
        }
        Ok(())
    }

    /// Every tuple still kept (in flight, or failed and waiting to be emitted again), oldest
    /// first (ids count up in their high half; after 2^32 tuples the order restarts).
    pub(crate) fn kept(&self) -> Vec<&T> {
        let mut ids = self.inflight.ids_where(|_| true);
        ids.sort_by_key(|id| id >> 32);
        ids.iter()
            .filter_map(|&id| self.inflight.get(id).map(|k| &k.value))
            .collect()
    }

    /// Its tree completed (`msg_id` as the spout emitted it): forget it.
    pub(crate) fn ack(&mut self, msg_id: &Value) {
        if let Some(id) = id_of(msg_id) {
            self.inflight.delete(id);
        }
    }

    /// Its tree failed: queue it again, or give up after `max_retries`.
    pub(crate) fn fail(&mut self, msg_id: &Value) {
        let Some(id) = id_of(msg_id) else {
            return;
        };
        let max = self.max_retries;
        let give_up = match self.inflight.get_mut(id) {
            Some(kept) => {
                kept.retries += 1;
                max.is_some_and(|m| kept.retries > m)
            }
            None => return,
        };
        if give_up {
            self.inflight.remove(id);
            self.lost += 1;
        } else {
            if let Some(retries) = self.inflight.get(id).map(|k| k.retries) {
                self.note_repeat(retries);
            }
            self.queue.push_back(id);
        }
    }

    /// A tuple failed its `retries`-th time and is replayed again: say so once in a while, and
    /// how to bound it.
    fn note_repeat(&mut self, retries: u32) {
        if retries < REPEAT_FAILURES {
            return;
        }
        let Some(held) = self.repeat_log.allow() else {
            return;
        };
        let limit = match self.max_retries {
            Some(m) => format!("it is given up after {m} retries (`max_retries`)"),
            None => "it is replayed until it succeeds: set the spout's `max_retries` arg to \
                     give up on a tuple after that many retries"
                .into(),
        };
        tracing::warn!(
            "{}: a tuple failed {retries} times (failed downstream, or slower than \
             topology.message.timeout.secs) and is replayed again; {limit}{others}",
            self.label,
            others = crate::logging::held_back(held)
        );
    }

    pub(crate) fn lost(&self) -> u64 {
        self.lost
    }
}

/// The id a spout emitted a kept tuple with (from `track`), as the acker's answer carries it.
fn id_of(msg_id: &Value) -> Option<u64> {
    match msg_id {
        Value::Int(id) => Some(*id as u64),
        _ => None,
    }
}

/// `args.max_retries` of a spout (absent: retry for ever, as Storm's spouts do).
pub(crate) fn max_retries(args: &serde_json::Map<String, serde_json::Value>) -> Option<u32> {
    args.get("max_retries")
        .and_then(|v| v.as_u64())
        .map(|v| v.min(u64::from(u32::MAX)) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_tuples_come_back_until_given_up() {
        let mut r = Replay::new(Some(1));
        let a = r.track("a");
        let b = r.track("b");
        let id = |seq: u64| Value::Int(seq as i64);
        r.ack(&id(b));
        r.fail(&id(a));
        assert_eq!(r.next_replay(), Some((a, "a")));
        assert_eq!(r.next_replay(), None);
        r.fail(&id(a));
        assert_eq!(r.next_replay(), None);
        assert_eq!(r.lost(), 1);
        r.fail(&id(b));
        assert_eq!(r.lost(), 1, "an acked tuple failing late is ignored");
    }

    #[test]
    fn kept_lists_tuples_in_flight_and_failed_oldest_first() {
        let mut r = Replay::new(None);
        let id = |seq: u64| Value::Int(seq as i64);
        let a = r.track("a");
        let b = r.track("b");
        r.ack(&id(a));
        let c = r.track("c"); // takes a's slot, before b's
        r.fail(&id(b));
        assert_eq!(r.kept(), [&"b", &"c"]);
        r.ack(&id(c));
        assert_eq!(r.kept(), [&"b"]);
    }

    #[test]
    fn a_late_answer_for_a_reused_slot_is_ignored() {
        let mut r = Replay::new(None);
        let id = |seq: u64| Value::Int(seq as i64);
        let a = r.track("a");
        r.ack(&id(a));
        let b = r.track("b");
        assert_eq!(a as u32, b as u32, "the slot is reused");
        r.fail(&id(a));
        assert_eq!(r.next_replay(), None, "a's late fail does not replay b");
        r.ack(&id(a));
        r.fail(&id(b));
        assert_eq!(
            r.next_replay(),
            Some((b, "b")),
            "a's late ack did not forget b"
        );
    }
}
