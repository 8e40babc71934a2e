//! What the HTTP server hands the spout: a queue of requests' records, bounded by a number of
//! records. A request whose records do not fit is refused (429) rather than buffered: the
//! queue fills when the topology is behind (`topology.max.spout.pending` stops the spout
//! taking from it), so clients are slowed down instead of the process growing.

use crate::components::Waker;
use crate::net::http::Response;
use crate::tuple::Values;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// One request's records, what could not be read of it, and (with `ack: true`) where its
/// answer goes once its tuple trees completed.
pub(crate) struct Batch {
    pub(crate) records: Vec<Values>,
    pub(crate) bad: Vec<(String, String)>,
    pub(crate) reply: Option<tokio::sync::oneshot::Sender<Response>>,
    /// The request's idempotency key (with `idempotency_header`).
    pub(crate) key: Option<String>,
}

#[derive(Default)]
struct Queue {
    batches: VecDeque<Batch>,
    records: usize,
}

/// The queue between the server's threads and the spout.
pub(crate) struct Inbox {
    queue: Mutex<Queue>,
    capacity: usize,
    waker: Waker,
    /// The spout is active (not deactivated, not closed).
    active: AtomicBool,
}

/// Why a batch was not taken.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The queue is full: try later.
    Full,
    /// The spout does not take records now (deactivated or stopping).
    Inactive,
}

impl Inbox {
    pub(crate) fn new(capacity: usize, waker: Waker) -> Inbox {
        Inbox {
            queue: Mutex::new(Queue::default()),
            capacity,
            waker,
            active: AtomicBool::new(true),
        }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue a batch; an empty queue takes any batch (a body may hold more records than the
    /// queue, but `max_body` bounds it).
    pub(crate) fn push(&self, batch: Batch) -> Result<(), (Refused, Batch)> {
        if !self.active.load(Ordering::Acquire) {
            return Err((Refused::Inactive, batch));
        }
        {
            let mut q = self.queue();
            let n = batch.records.len() + batch.bad.len();
            if q.records > 0 && q.records + n > self.capacity {
                return Err((Refused::Full, batch));
            }
            q.records += n;
            q.batches.push_back(batch);
        }
        self.waker.wake();
        Ok(())
    }

    /// The next batch, oldest first.
    pub(crate) fn pop(&self) -> Option<Batch> {
        let mut q = self.queue();
        let b = q.batches.pop_front()?;
        q.records -= b.records.len() + b.bad.len();
        Some(b)
    }

    /// Whether a request would be taken now (the health check).
    pub(crate) fn healthy(&self) -> bool {
        self.active.load(Ordering::Acquire) && self.queue().records < self.capacity
    }

    pub(crate) fn set_active(&self, yes: bool) {
        self.active.store(yes, Ordering::Release);
    }

    /// Close: refuse from now on, and drop what waits (their clients, still waiting with
    /// `ack: true`, get a 503).
    pub(crate) fn close(&self) -> usize {
        self.set_active(false);
        let mut q = self.queue();
        let left = q.records;
        q.batches.clear();
        q.records = 0;
        left
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(n: usize) -> Batch {
        Batch {
            records: vec![Values::new(); n],
            bad: Vec::new(),
            reply: None,
            key: None,
        }
    }

    #[test]
    fn a_full_queue_refuses_and_an_empty_one_takes_any_batch() {
        let inbox = Inbox::new(10, Waker::noop());
        assert!(
            inbox.push(batch(25)).is_ok(),
            "an empty queue takes a big batch"
        );
        assert!(matches!(inbox.push(batch(1)), Err((Refused::Full, _))));
        assert!(!inbox.healthy());
        assert_eq!(inbox.pop().map(|b| b.records.len()), Some(25));
        assert!(inbox.push(batch(6)).is_ok());
        assert!(inbox.push(batch(4)).is_ok());
        assert!(matches!(inbox.push(batch(1)), Err((Refused::Full, _))));
        inbox.set_active(false);
        assert!(matches!(inbox.push(batch(0)), Err((Refused::Inactive, _))));
        assert_eq!(inbox.close(), 10);
        assert!(inbox.pop().is_none());
    }
}
