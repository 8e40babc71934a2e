//! Workers (seed 000): each has a transfer thread that encodes messages for other workers and
//! sends them on a link, and a receive thread that decodes what arrives and hands it to its
//! executors' receive queues in batches of at most `topology.receiver.buffer.size`. In local mode
//! the links are in-memory channels; the path is the one the network will take.

use super::message::{Message, Transfer};
use crate::net::frame::{self, Frame};
use crate::net::link::Link;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use std::collections::VecDeque;
use std::thread::JoinHandle;
use std::time::Duration;

/// Spawn a worker's transfer thread: `Transfer`s in, frames out on `links[worker]`.
pub fn spawn_transfer(
    worker: usize,
    transfers: Receiver<Transfer>,
    links: Vec<Option<Box<dyn Link>>>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("worker-{worker}-transfer"))
        .spawn(move || {
            let mut buffers: Vec<Vec<u8>> = links.iter().map(|_| Vec::new()).collect();
            while let Ok(first) = transfers.recv() {
                // Batch whatever is queued into one buffer per destination worker.
                let mut next = Some(first);
                while let Some(t) = next {
                    if let Some(buf) = buffers.get_mut(t.worker) {
                        encode_message(t.message, buf);
                    }
                    // Check the size before taking the next message: one taken and then left
                    // behind by the `break` would be lost.
                    if buffers.iter().any(|b| b.len() > 1 << 20) {
                        break;
                    }
                    next = transfers.try_recv().ok();
                }
                for (w, buf) in buffers.iter_mut().enumerate() {
                    if buf.is_empty() {
                        continue;
                    }
                    let out = std::mem::take(buf);
                    if let Some(Some(link)) = links.get(w) {
                        if let Err(e) = link.send(out) {
                            tracing::warn!(worker, peer = w, "transfer failed: {e:#}");
                        }
                    }
                }
            }
        })
}

fn encode_message(msg: Message, buf: &mut Vec<u8>) {
    match msg {
        Message::Tuples(items) => frame::encode(&Frame::Tuples(items), buf),
        Message::Eos { from, to } => frame::encode(&Frame::Eos { from, to }, buf),
        Message::Wake => {}
    }
}

/// Batches a receive thread holds for one executor whose queue is full before it waits for it.
/// The receive thread serves every executor of its worker: waiting at once on one full queue
/// would stall tuples (and acks) for all the others, and two workers feeding each other could
/// then wait on each other forever. Holding a bounded backlog keeps the others flowing.
const BACKLOG: usize = 4096;

/// Spawn a worker's receive thread: frames in from `incoming`, batches out to local executors.
/// `inbox_of_task[task]` is the index into `inboxes` of the executor running `task`.
pub fn spawn_receive(
    worker: usize,
    incoming: Receiver<Vec<u8>>,
    inbox_of_task: Vec<Option<usize>>,
    inboxes: Vec<Sender<Message>>,
    batch_size: usize,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("worker-{worker}-receive"))
        .spawn(move || {
            let mut r = Receiving {
                per_exec: inboxes.iter().map(|_| Vec::new()).collect(),
                backlog: inboxes.iter().map(|_| VecDeque::new()).collect(),
                inboxes,
                inbox_of_task,
                batch_size: batch_size.max(1),
            };
            loop {
                let next = if r.backlog.iter().any(|b| !b.is_empty()) {
                    match incoming.recv_timeout(Duration::from_micros(200)) {
                        Ok(b) => Some(b),
                        Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
                        Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
                    }
                } else {
                    match incoming.recv() {
                        Ok(b) => Some(b),
                        Err(_) => break,
                    }
                };
                if let Some(buf) = next {
                    r.frames(worker, &buf);
                    r.flush();
                }
                r.retry_backlog();
            }
            // Links closed: hand over whatever is held, waiting as needed.
            r.flush();
            for (i, b) in r.backlog.iter_mut().enumerate() {
                for m in b.drain(..) {
                    let _ = r.inboxes[i].send(m);
                }
            }
        })
}

struct Receiving {
    inboxes: Vec<Sender<Message>>,
    inbox_of_task: Vec<Option<usize>>,
    per_exec: Vec<Vec<(u32, crate::components::Tuple)>>,
    backlog: Vec<VecDeque<Message>>,
    batch_size: usize,
}

impl Receiving {
    fn frames(&mut self, worker: usize, buf: &[u8]) {
        let mut at = 0;
        while at < buf.len() {
            match frame::decode(&buf[at..]) {
                Ok(Some((f, used))) => {
                    at += used;
                    self.dispatch(f);
                }
                Ok(None) => {
                    tracing::warn!(worker, "truncated frame buffer dropped");
                    break;
                }
                Err(e) => {
                    tracing::warn!(worker, "undecodable frame dropped: {e}");
                    break;
                }
            }
        }
    }

    fn dispatch(&mut self, f: Frame) {
        match f {
            Frame::Tuples(items) => {
                for (task, t) in items {
                    let Some(i) = self.inbox_of_task.get(task as usize).copied().flatten() else {
                        tracing::warn!(task, "tuple for a task this worker does not run dropped");
                        continue;
                    };
                    self.per_exec[i].push((task, t));
                    if self.per_exec[i].len() >= self.batch_size {
                        let batch = std::mem::take(&mut self.per_exec[i]);
                        self.deliver(i, Message::Tuples(batch));
                    }
                }
            }
            Frame::Eos { from, to } => {
                if let Some(i) = self.inbox_of_task.get(to as usize).copied().flatten() {
                    // Keep order: tuples before the end-of-input marker.
                    if !self.per_exec[i].is_empty() {
                        let batch = std::mem::take(&mut self.per_exec[i]);
                        self.deliver(i, Message::Tuples(batch));
                    }
                    self.deliver(i, Message::Eos { from, to });
                }
            }
            Frame::Control { .. } => {}
        }
    }

    fn flush(&mut self) {
        for i in 0..self.per_exec.len() {
            if !self.per_exec[i].is_empty() {
                let batch = std::mem::take(&mut self.per_exec[i]);
                self.deliver(i, Message::Tuples(batch));
            }
        }
    }

    /// In order per executor: behind its backlog, else straight in if there is room.
    fn deliver(&mut self, i: usize, msg: Message) {
        let backlog = &mut self.backlog[i];
        if backlog.is_empty() {
            match self.inboxes[i].try_send(msg) {
                Ok(()) => return,
                Err(TrySendError::Full(m)) => backlog.push_back(m),
                Err(TrySendError::Disconnected(_)) => return,
            }
        } else {
            backlog.push_back(msg);
        }
        // Backpressure once the backlog is long: wait for this executor.
        while backlog.len() > BACKLOG {
            match backlog.pop_front() {
                Some(m) => {
                    if self.inboxes[i].send(m).is_err() {
                        backlog.clear();
                    }
                }
                None => break,
            }
        }
    }

    fn retry_backlog(&mut self) {
        for (i, backlog) in self.backlog.iter_mut().enumerate() {
            while let Some(m) = backlog.pop_front() {
                match self.inboxes[i].try_send(m) {
                    Ok(()) => {}
                    Err(TrySendError::Full(m)) => {
                        backlog.push_front(m);
                        break;
                    }
                    Err(TrySendError::Disconnected(_)) => {
                        backlog.clear();
                        break;
                    }
                }
            }
        }
    }
}
