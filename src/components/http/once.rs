//! Exactly once for the `http` spout (`ack: true` with `idempotency_header`): each request is
//! taken once by its key, and under checkpoints answered only once the checkpoint holding its
//! records committed. A client that got no answer sends the request again, the same, with the
//! same key: records of it already done are not emitted again (a checkpoint may hold part of
//! a request whose other records failed or were in flight when a run was lost), the others
//! are. The keys taken, and which records of unfinished requests are done, are in the spout's
//! position, so a resumed run knows them too.

use super::handler;
use crate::net::http::Response;
use crate::tuple::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where a request's answer goes (every client that sent its key and waits).
type Reply = tokio::sync::oneshot::Sender<Response>;

/// A request's answer, due once its records are done (and, under checkpoints, committed).
pub(crate) struct Answer {
    pub(crate) key: Option<String>,
    pub(crate) accepted: usize,
    pub(crate) rejected: usize,
    pub(crate) replies: Vec<Reply>,
}

impl Answer {
    /// 200 to every client waiting (one may have gone: nothing to tell it).
    fn ok(self) {
        for r in self.replies {
            let _ = r.send(handler::accepted(self.accepted, self.rejected));
        }
    }

    /// 500 to every client waiting: the request must be sent again.
    pub(crate) fn failed(self) {
        for r in self.replies {
            let _ = r.send(handler::refusal(
                500,
                "a record failed in the topology (or timed out): send the request again",
            ));
        }
    }
}

/// What is known of a key.
enum Seen {
    /// Its request (number) is being emitted or processed; the records of it done so far.
    InFlight { request: u64, done: Vec<u32> },
    /// Its last request failed with these records of it done: a resend emits the others.
    Partial { done: Vec<u32> },
    /// All its records are done: in a committed checkpoint (or, without checkpoints, acked).
    Done { at_ms: u64, committed: bool },
}

/// What to do with a request that arrived with a key.
pub(crate) enum Arrival {
    /// Emit its records but those numbered in the list (done before); the answer is the
    /// caller's to hold.
    Take(Answer, Vec<u32>),
    /// Its key is in flight (that request's number): its clients wait for that answer.
    Join(u64, Answer),
    /// Its records are done: no emit; the answer was sent or joined one still held.
    Settled,
}

/// The keys taken and the answers held until their checkpoint commits.
pub(crate) struct Once {
    checkpoints: bool,
    ttl: Duration,
    keys: HashMap<String, Seen>,
    /// The key of each request in flight that has one.
    requests: HashMap<u64, String>,
    /// Done, not yet in a position.
    unsaved: Vec<Answer>,
    /// In the position taken last, not yet told its checkpoint.
    saving: Vec<Answer>,
    /// Waiting for their checkpoint (txid) to commit, oldest first.
    saved: VecDeque<(u64, Vec<Answer>)>,
}

fn now_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

impl Once {
    pub(crate) fn new(ttl: Duration) -> Once {
        Once {
            checkpoints: false,
            ttl,
            keys: HashMap::new(),
            requests: HashMap::new(),
            unsaved: Vec::new(),
            saving: Vec::new(),
            saved: VecDeque::new(),
        }
    }

    /// The run checkpoints: answers wait for their checkpoint's commit.
    pub(crate) fn set_checkpoints(&mut self, yes: bool) {
        self.checkpoints = yes;
    }

    /// Request `request` arrived (with a key in `answer.key`, or none).
    pub(crate) fn arrive(&mut self, request: u64, answer: Answer) -> Arrival {
        let Some(key) = answer.key.clone() else {
            return Arrival::Take(answer, Vec::new());
        };
        match self.keys.get(&key) {
            Some(Seen::InFlight { request: r, .. }) => return Arrival::Join(*r, answer),
            Some(Seen::Done { .. }) => {
                self.settled(&key, answer);
                return Arrival::Settled;
            }
            _ => {}
        }
        let done = match self.keys.remove(&key) {
            Some(Seen::Partial { done }) => done,
            _ => Vec::new(),
        };
        self.keys.insert(
            key.clone(),
            Seen::InFlight {
                request,
                done: done.clone(),
            },
        );
        self.requests.insert(request, key);
        Arrival::Take(answer, done)
    }

    /// A resend of a done key: answered now when committed, else with the held answer.
    fn settled(&mut self, key: &str, answer: Answer) {
        if let Some(Seen::Done {
            committed: true, ..
        }) = self.keys.get(key)
        {
            return answer.ok();
        }
        let held = self.unsaved.iter_mut().chain(self.saving.iter_mut());
        let mut held = held.chain(self.saved.iter_mut().flat_map(|(_, a)| a.iter_mut()));
        match held.find(|a| a.key.as_deref() == Some(key)) {
            Some(a) => a.replies.extend(answer.replies),
            None => answer.ok(),
        }
    }

    /// Record `index` of request `request` is done (its tree completed).
    pub(crate) fn record_done(&mut self, request: u64, index: u32) {
        let Some(key) = self.requests.get(&request) else {
            return;
        };
        if let Some(Seen::InFlight { done, .. }) = self.keys.get_mut(key) {
            done.push(index);
        }
    }

    /// Every record of a request is done: answer now, or once they are committed.
    pub(crate) fn done(&mut self, request: u64, answer: Answer) {
        self.requests.remove(&request);
        let Some(key) = answer.key.clone() else {
            return answer.ok();
        };
        let committed = !self.checkpoints;
        let at_ms = now_ms();
        self.keys.insert(key, Seen::Done { at_ms, committed });
        match committed {
            true => answer.ok(),
            false => self.unsaved.push(answer),
        }
    }

    /// Every record of a request is done or failed, and one failed: its clients send it
    /// again, and the resend emits the records not done.
    pub(crate) fn failed(&mut self, request: u64, answer: Answer) {
        if let Some(key) = self.requests.remove(&request) {
            match self.keys.remove(&key) {
                Some(Seen::InFlight { done, .. }) if !done.is_empty() => {
                    self.keys.insert(key, Seen::Partial { done });
                }
                _ => {}
            }
        }
        answer.failed();
    }

    /// A request over whose answer was already sent (a failure without a key).
    pub(crate) fn forget(&mut self, request: u64) {
        self.requests.remove(&request);
    }

    /// The keys whose records are done, or some of them, for a checkpoint (those committed
    /// longer than the ttl ago are forgotten first); what is done so far goes with it.
    pub(crate) fn position(&mut self) -> Value {
        let oldest = now_ms().saturating_sub(u64::try_from(self.ttl.as_millis()).unwrap_or(0));
        self.keys.retain(|_, s| match s {
            Seen::Done { at_ms, committed } => !*committed || *at_ms >= oldest,
            _ => true,
        });
        self.saving.append(&mut self.unsaved);
        let indices = |done: &[u32]| {
            let list = done.iter().map(|i| Value::Int(i64::from(*i))).collect();
            Value::List(Box::new(list))
        };
        let keys: BTreeMap<String, Value> = self
            .keys
            .iter()
            .filter_map(|(k, s)| match s {
                Seen::Done { at_ms, .. } => Some((k.clone(), Value::Int(*at_ms as i64))),
                Seen::InFlight { done, .. } | Seen::Partial { done } if !done.is_empty() => {
                    Some((k.clone(), indices(done)))
                }
                _ => None,
            })
            .collect();
        Value::Map(Box::new(keys))
    }

    /// The position taken last is saved under checkpoint `txid`.
    pub(crate) fn saved(&mut self, txid: u64) {
        if !self.saving.is_empty() {
            self.saved
                .push_back((txid, std::mem::take(&mut self.saving)));
        }
    }

    /// Answer the requests whose checkpoint committed (`committed`: the last one).
    pub(crate) fn commits(&mut self, committed: u64) {
        while self.saved.front().is_some_and(|(t, _)| *t <= committed) {
            let Some((_, answers)) = self.saved.pop_front() else {
                break;
            };
            for a in answers {
                if let Some(Seen::Done { committed, .. }) =
                    a.key.as_ref().and_then(|k| self.keys.get_mut(k))
                {
                    *committed = true;
                }
                a.ok();
            }
        }
    }

    /// Whether answers wait for a commit.
    pub(crate) fn holding(&self) -> bool {
        !self.saved.is_empty()
    }

    /// Go on from a position: its keys were committed, whole or in part.
    pub(crate) fn restore(&mut self, position: &Value) -> anyhow::Result<()> {
        let Value::Map(keys) = position else {
            anyhow::bail!("an http spout's position must be a map of keys, not {position:?}");
        };
        for (k, v) in keys.iter() {
            let seen = match v {
                Value::Int(at) => Seen::Done {
                    at_ms: u64::try_from(*at).unwrap_or(0),
                    committed: true,
                },
                Value::List(done) => Seen::Partial {
                    done: done
                        .iter()
                        .map(|i| match i {
                            Value::Int(i) => u32::try_from(*i).ok(),
                            _ => None,
                        })
                        .collect::<Option<Vec<u32>>>()
                        .ok_or_else(|| anyhow::anyhow!("an http spout's position: key `{k}`"))?,
                },
                _ => anyhow::bail!("an http spout's position has key `{k}` without a time"),
            };
            self.keys.insert(k.clone(), seen);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
