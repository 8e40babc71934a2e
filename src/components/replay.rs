//! What a replaying spout keeps (`stdin`, `file`, `generate`): each tracked tuple until its
//! tree is acked, a queue of failed ones to emit again, and, with `args.max_retries`, the count
//! of those given up on (reported as lost).

use crate::tuple::Value;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Tuples in flight by sequence number (their message id), with retry counts.
#[derive(Debug)]
pub struct Replay<T> {
    inflight: FxHashMap<u64, (T, u32)>,
    queue: VecDeque<u64>,
    max_retries: Option<u32>,
    next_seq: u64,
    lost: u64,
}

impl<T: Clone> Replay<T> {
    pub fn new(max_retries: Option<u32>) -> Replay<T> {
        Replay {
            inflight: FxHashMap::default(),
            queue: VecDeque::new(),
            max_retries,
            next_seq: 0,
            lost: 0,
        }
    }

    /// Keep a new tuple; returns its sequence number (the message id to emit with).
    pub fn track(&mut self, value: T) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.inflight.insert(seq, (value, 0));
        seq
    }

    /// The next failed tuple to emit again, if any.
    pub fn next_replay(&mut self) -> Option<(u64, T)> {
        while let Some(seq) = self.queue.pop_front() {
            if let Some((v, _)) = self.inflight.get(&seq) {
                return Some((seq, v.clone()));
            }
        }
        None
    }

    /// Its tree completed (`msg_id` as the spout emitted it): forget it.
    pub fn ack(&mut self, msg_id: &Value) {
        if let Value::Int(seq) = msg_id {
            self.inflight.remove(&(*seq as u64));
        }
    }

    /// Its tree failed: queue it again, or give up after `max_retries`.
    pub fn fail(&mut self, msg_id: &Value) {
        let Value::Int(seq) = msg_id else {
            return;
        };
        let seq = *seq as u64;
        let give_up = match self.inflight.get_mut(&seq) {
            Some((_, retries)) => {
                *retries += 1;
                self.max_retries.is_some_and(|m| *retries > m)
            }
            None => return,
        };
        if give_up {
            self.inflight.remove(&seq);
            self.lost += 1;
        } else {
            self.queue.push_back(seq);
        }
    }

    pub fn lost(&self) -> u64 {
        self.lost
    }
}

/// `args.max_retries` of a spout (absent: retry for ever, as Storm's spouts do).
pub fn max_retries(args: &serde_json::Map<String, serde_json::Value>) -> Option<u32> {
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
}
