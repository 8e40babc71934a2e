//! Workers (seed 000): each has a transfer thread that encodes messages for other workers and
//! sends them on a link, and a receive thread that decodes what arrives and hands it to its
//! executors' receive queues in batches of at most `topology.receiver.buffer.size`. In local mode
//! the links are in-memory channels; the path is the one the network will take.

use super::message::{Message, Transfer};
use crate::net::frame::{self, Frame};
use crate::net::link::Link;
use crossbeam_channel::{Receiver, Sender};
use std::thread::JoinHandle;

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
                    next = transfers.try_recv().ok();
                    if buffers.iter().any(|b| b.len() > 1 << 20) {
                        break;
                    }
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
            let batch_size = batch_size.max(1);
            let mut per_exec: Vec<Vec<(u32, crate::components::Tuple)>> =
                inboxes.iter().map(|_| Vec::new()).collect();
            while let Ok(buf) = incoming.recv() {
                let mut at = 0;
                while at < buf.len() {
                    match frame::decode(&buf[at..]) {
                        Ok(Some((f, used))) => {
                            at += used;
                            dispatch(f, &inbox_of_task, &inboxes, &mut per_exec, batch_size);
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
                for (i, batch) in per_exec.iter_mut().enumerate() {
                    if !batch.is_empty() {
                        let _ = inboxes[i].send(Message::Tuples(std::mem::take(batch)));
                    }
                }
            }
        })
}

fn dispatch(
    f: Frame,
    inbox_of_task: &[Option<usize>],
    inboxes: &[Sender<Message>],
    per_exec: &mut [Vec<(u32, crate::components::Tuple)>],
    batch_size: usize,
) {
    let lookup = |task: u32| inbox_of_task.get(task as usize).copied().flatten();
    match f {
        Frame::Tuples(items) => {
            for (task, t) in items {
                let Some(i) = lookup(task) else {
                    tracing::warn!(task, "tuple for a task this worker does not run dropped");
                    continue;
                };
                per_exec[i].push((task, t));
                if per_exec[i].len() >= batch_size {
                    let _ = inboxes[i].send(Message::Tuples(std::mem::take(&mut per_exec[i])));
                }
            }
        }
        Frame::Eos { from, to } => {
            if let Some(i) = lookup(to) {
                // Keep order: tuples before the end-of-input marker.
                if !per_exec[i].is_empty() {
                    let _ = inboxes[i].send(Message::Tuples(std::mem::take(&mut per_exec[i])));
                }
                let _ = inboxes[i].send(Message::Eos { from, to });
            }
        }
        Frame::Control { .. } => {}
    }
}
