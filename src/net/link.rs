//! A link carries encoded frames from one worker's transfer thread to another worker's receive
//! thread; a network makes links and listens for them. The runtime does not care what is
//! behind them: an in-memory channel in local mode, a socket between processes or hosts.

use crossbeam_channel::Sender;

/// The sending end of a link.
pub trait Link: Send {
    /// Send one buffer of encoded frames. Blocks while the receiver is full (backpressure).
    fn send(&self, frames: Vec<u8>) -> anyhow::Result<()>;

    /// Send a buffer that must survive a broken connection (end-of-input markers, which acking
    /// does not replay): a link that reconnects sends every such buffer again, so receivers
    /// must ignore repeats. An in-memory link loses nothing and just sends it.
    fn send_lasting(&self, frames: Vec<u8>) -> anyhow::Result<()> {
        self.send(frames)
    }

    /// Send a buffer that may be lost (a hint repeated while it holds, such as congestion):
    /// never waits, and is dropped when the peer cannot take it at once.
    fn send_droppable(&self, frames: Vec<u8>);
}

/// How workers in other processes are reached. Local mode has none.
pub trait Network {
    /// Deliver frames that other processes send to local worker `worker` into `into`.
    fn listen(&self, worker: usize, into: Sender<Vec<u8>>) -> anyhow::Result<()>;
    /// A link from local worker `from` to worker `to`, which runs in another process.
    fn connect(&self, from: usize, to: usize) -> anyhow::Result<Box<dyn Link>>;
}

/// In-memory link (local mode): a bounded channel of frame buffers.
pub(crate) struct MemoryLink(pub(crate) Sender<Vec<u8>>);

impl Link for MemoryLink {
    fn send(&self, frames: Vec<u8>) -> anyhow::Result<()> {
        self.0
            .send(frames)
            .map_err(|_| anyhow::anyhow!("peer worker has stopped"))
    }

    /// Dropped: the only droppable buffers are congestion hints, and workers in one process
    /// share their run's marks already (told back to them, a hint would re-mark a worker
    /// that has caught up since).
    fn send_droppable(&self, _frames: Vec<u8>) {}
}

/// A bounded in-memory link and its receiving end.
#[cfg(test)]
pub(crate) fn memory(capacity: usize) -> (MemoryLink, crossbeam_channel::Receiver<Vec<u8>>) {
    let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
    (MemoryLink(tx), rx)
}
