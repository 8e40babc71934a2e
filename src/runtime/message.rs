//! What travels on executor receive queues and worker transfer queues.

use crate::model::plan::StreamId;
use crate::tuple::Tuple;

/// Tuples per batch: an executor's outgoing batch to one destination is sent when it reaches
/// this size, or when the executor goes idle (Storm's batching of the disruptor queues).
pub(crate) const BATCH: usize = 256;

/// What travels between executors, and between workers as the payload of one wire frame
/// (`wire` encodes and decodes it). On an executor's receive queue an element is a batch, as in
/// Storm's disruptor queues.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Tuples for task `task`, in the order they were sent.
    Tuples { task: u32, tuples: Vec<Tuple> },
    /// Acker traffic (see [`Acks`]).
    Acks(Acks),
    /// Task `from` has finished and will send no more to task `to`.
    Eos { from: u32, to: u32 },
    /// A checkpoint round's marker from task `from` to task `to`, after the tuples it sent
    /// before it (see `checkpoint`); shared by the destinations it is sent to.
    Marker {
        from: u32,
        to: u32,
        marker: std::sync::Arc<super::checkpoint::Marker>,
    },
    /// Worker `worker` is congested (`on`) or has caught up (see `congestion`). Between
    /// workers only: the receive thread acts on it, no executor is sent one.
    Congestion { worker: u32, on: bool },
    /// Opaque control payload (handshakes, heartbeats): kind ≥ 16. Between workers only.
    Control { kind: u8, body: Vec<u8> },
    /// Something outside asked the executor to look at its component (`Waker`). Within a
    /// worker only: it encodes to nothing.
    Wake,
}

/// Acker traffic for task `task` from task `from`, on one of Storm's `__ack_init`,
/// `__ack_ack` and `__ack_fail` streams: bare (root, value) pairs, 16 bytes each where a
/// tuple of two values would take 48 (see `Acker::handle` for what each stream holds).
/// The same on an executor's queue and in a wire frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Acks {
    pub(crate) task: u32,
    pub(crate) from: u32,
    pub(crate) stream: StreamId,
    pub(crate) pairs: Vec<(u64, u64)>,
}

/// One element of a worker's transfer queue: a message for another worker.
#[derive(Debug)]
pub(crate) struct Transfer {
    pub(crate) worker: usize,
    pub(crate) message: Message,
}
