//! What travels on executor receive queues and worker transfer queues.

use crate::model::plan::StreamId;
use crate::tuple::Tuple;

/// Tuples per batch: an executor's outgoing batch to one destination is sent when it reaches
/// this size, or when the executor goes idle (Storm's batching of the disruptor queues).
pub const BATCH: usize = 256;

/// One element of an executor's receive queue (elements are batches, as in Storm's disruptor queues).
#[derive(Debug)]
pub enum Message {
    /// Tuples for task `task` of this executor, in the order they were sent.
    Tuples { task: u32, tuples: Vec<Tuple> },
    /// Acker traffic (see [`Acks`]).
    Acks(Acks),
    /// Task `from` has finished and will send no more to task `to`.
    Eos { from: u32, to: u32 },
    /// A checkpoint round's marker from task `from` to task `to`, after the tuples it sent
    /// before it (see `checkpoint`).
    Marker {
        from: u32,
        to: u32,
        marker: std::sync::Arc<super::checkpoint::Marker>,
    },
    /// Something outside asked the executor to look at its component (`Waker`).
    Wake,
}

/// Acker traffic for task `task` from task `from`, on one of Storm's `__ack_init`,
/// `__ack_ack` and `__ack_fail` streams: bare (root, value) pairs, 16 bytes each where a
/// tuple of two values would take 48 (see `Acker::handle` for what each stream holds).
/// The same on an executor's queue and in a wire frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Acks {
    pub task: u32,
    pub from: u32,
    pub stream: StreamId,
    pub pairs: Vec<(u64, u64)>,
}

/// One element of a worker's transfer queue: a message for another worker.
#[derive(Debug)]
pub struct Transfer {
    pub worker: usize,
    pub message: Message,
}
