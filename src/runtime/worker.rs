//! Workers: each has a transfer thread that encodes messages for other workers and
//! sends them on a link, and a receive thread that decodes what arrives and hands it to its
//! executors' receive queues in batches of at most `topology.receiver.buffer.size`. In local mode
//! the links are in-memory channels; the path is the one the network will take.

use super::congestion;
use super::executor::RunControl;
use super::message::{Message, Transfer};
use super::wire;
use crate::net::frame;
use crate::net::link::Link;
use crate::tuple::Tuple;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes of encoded frames the transfer thread gathers for one destination before it sends
/// them (a buffer passes it by at most one message).
const TRANSFER_BATCH_BYTES: usize = 64 << 10;

/// Bytes of frame buffers a worker's incoming channel holds before senders wait: with buffers
/// of about `TRANSFER_BATCH_BYTES`, its capacity in buffers is `LINK_BUFFERS`. Gathering 1 MiB
/// per destination into a channel of 64 buffers let 64 MiB wait between two workers.
const LINK_BYTES: usize = 4 << 20;
pub(crate) const LINK_BUFFERS: usize = LINK_BYTES / TRANSFER_BATCH_BYTES;
const _: () = assert!(LINK_BUFFERS >= 2 && LINK_BUFFERS * TRANSFER_BATCH_BYTES <= LINK_BYTES);

/// Spawn a worker's transfer thread: `Transfer`s in, frames out on `links[worker]`.
/// End-of-input markers go out as lasting buffers of their own, after the tuples gathered with
/// them, so a link that reconnects can send them again. It also tells every other worker when
/// its own is congested, or has caught up (see `congestion`).
pub(crate) fn spawn_transfer(
    worker: usize,
    transfers: Receiver<Transfer>,
    links: Vec<Option<Box<dyn Link>>>,
    control: Arc<RunControl>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("worker-{worker}-transfer"))
        .spawn(move || {
            let mut buffers: Vec<Vec<u8>> = links.iter().map(|_| Vec::new()).collect();
            let mut lasting: Vec<Vec<u8>> = links.iter().map(|_| Vec::new()).collect();
            let mut told = Told::default();
            loop {
                let first = match transfers.recv_timeout(congestion::REFRESH / 2) {
                    Ok(t) => Some(t),
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
                };
                gather(first, &transfers, &mut buffers, &mut lasting);
                if let Some(on) = told.due(control.congestion.marked(worker)) {
                    let frame = Message::Congestion {
                        worker: worker as u32,
                        on,
                    };
                    let mut buf = Vec::new();
                    wire::encode(&frame, &mut buf);
                    // Repeated while it holds, and expiring: not worth waiting for.
                    for link in links.iter().flatten() {
                        link.send_droppable(buf.clone());
                    }
                }
                for w in 0..links.len() {
                    let Some(Some(link)) = links.get(w) else {
                        continue;
                    };
                    send_taken(worker, w, &mut buffers[w], |b| link.send(b));
                    send_taken(worker, w, &mut lasting[w], |b| link.send_lasting(b));
                }
            }
        })
}

/// Batch `first` and whatever else is queued into one buffer per destination worker
/// (end-of-input markers into `lasting`), until some buffer is full.
fn gather(
    first: Option<Transfer>,
    transfers: &Receiver<Transfer>,
    buffers: &mut [Vec<u8>],
    lasting: &mut [Vec<u8>],
) {
    let mut next = first;
    while let Some(t) = next {
        let Transfer {
            worker: to,
            message,
        } = t;
        let into = if matches!(message, Message::Eos { .. }) {
            lasting.get_mut(to)
        } else {
            buffers.get_mut(to)
        };
        if let Some(buf) = into {
            if let Err(e) = encode_message(message, buf) {
                // Sent, it would break the link and be replayed for ever.
                crate::stderr_println!("error: {e}");
                std::process::exit(1);
            }
        }
        // Check the size before taking the next message: one taken and then left behind by
        // the `break` would be lost.
        if buffers.iter().any(|b| b.len() >= TRANSFER_BATCH_BYTES) {
            break;
        }
        next = transfers.try_recv().ok();
    }
}

/// What a transfer thread last told the other workers of its own worker's congestion.
#[derive(Default)]
struct Told {
    on: bool,
    at: Option<Instant>,
}

impl Told {
    /// What to tell now, if anything: a change, or a congestion still on (marks expire).
    fn due(&mut self, on: bool) -> Option<bool> {
        let stale = || self.at.is_none_or(|at| at.elapsed() >= congestion::REFRESH);
        if on == self.on && !(on && stale()) {
            return None;
        }
        self.on = on;
        self.at = Some(Instant::now());
        Some(on)
    }
}

/// Send what `buf` holds, if anything, leaving it empty.
fn send_taken(
    worker: usize,
    peer: usize,
    buf: &mut Vec<u8>,
    send: impl FnOnce(Vec<u8>) -> anyhow::Result<()>,
) {
    if buf.is_empty() {
        return;
    }
    if let Err(e) = send(std::mem::take(buf)) {
        tracing::warn!(worker, peer, "transfer failed: {e:#}");
    }
}

/// The most bytes a frame between workers takes, header included.
const FRAME_LIMIT: usize = frame::HEADER_LEN + frame::MAX_FRAME;

/// Append `msg`'s frames to `buf`; an error when it holds a tuple too large for any frame.
fn encode_message(msg: Message, buf: &mut Vec<u8>) -> Result<(), String> {
    match msg {
        Message::Tuples { task, tuples } => encode_tuples(task, tuples, buf)?,
        other => wire::encode(&other, buf),
    }
    Ok(())
}

/// Tuples for `task` as frames within [`FRAME_LIMIT`]: a batch too large for one frame is
/// split in halves; a single tuple too large is an error naming its size and the limit.
fn encode_tuples(task: u32, tuples: Vec<Tuple>, buf: &mut Vec<u8>) -> Result<(), String> {
    let start = buf.len();
    let frame = Message::Tuples { task, tuples };
    wire::encode(&frame, buf);
    let size = buf.len() - start;
    if size <= FRAME_LIMIT {
        return Ok(());
    }
    buf.truncate(start);
    let Message::Tuples { mut tuples, .. } = frame else {
        return Ok(());
    };
    if tuples.len() < 2 {
        return Err(format!(
            "a tuple for task {task} takes {size} bytes, over the limit of {} MiB for what one \
             worker sends another; it cannot be delivered (send smaller tuples, or run its \
             producer and consumer in one worker: topology.workers=1)",
            frame::MAX_FRAME >> 20
        ));
    }
    let second = tuples.split_off(tuples.len() / 2);
    encode_tuples(task, tuples, buf)?;
    encode_tuples(task, second, buf)
}

/// Spawn a worker's receive thread: frames in from `incoming`, batches out to local executors.
/// `inbox_of_task[task]` is the index into `inboxes` of the executor running `task`.
///
/// The thread serves every executor of its worker, and never waits for one whose queue is
/// full: it holds a backlog for it instead. Waiting would stall what arrives for all the
/// others, and two workers feeding each other (each one's executors sending to the other's
/// through its transfer thread and link) could then wait on each other for ever. A backlog
/// past `congestion::HIGH_WATER` marks the worker congested instead, which holds back the
/// spouts of every worker until the backlogs are empty (see `congestion`).
pub(crate) fn spawn_receive(
    worker: usize,
    incoming: Receiver<Vec<u8>>,
    inbox_of_task: Vec<Option<usize>>,
    inboxes: Vec<Sender<Message>>,
    batch_size: usize,
    control: Arc<RunControl>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("worker-{worker}-receive"))
        .spawn(move || {
            let mut r = Receiving {
                per_exec: inboxes.iter().map(|_| (0, Vec::new())).collect(),
                backlog: inboxes.iter().map(|_| VecDeque::new()).collect(),
                inboxes,
                inbox_of_task,
                batch_size: batch_size.max(1),
                worker,
                control,
                congested: false,
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
                r.watch_congestion();
            }
            // Links closed: hand over whatever is held, waiting as needed.
            r.flush();
            for (i, b) in r.backlog.iter_mut().enumerate() {
                for m in b.drain(..) {
                    let _ = r.inboxes[i].send(m);
                }
            }
            if r.congested {
                r.control.congestion.clear(worker);
            }
        })
}

struct Receiving {
    inboxes: Vec<Sender<Message>>,
    inbox_of_task: Vec<Option<usize>>,
    /// The batch under way for each executor: its task and tuples.
    per_exec: Vec<(u32, Vec<crate::tuple::Tuple>)>,
    /// What each executor's full queue could not take yet, in order.
    backlog: Vec<VecDeque<Message>>,
    batch_size: usize,
    worker: usize,
    control: Arc<RunControl>,
    /// This worker is marked congested.
    congested: bool,
}

impl Receiving {
    fn frames(&mut self, worker: usize, buf: &[u8]) {
        let mut at = 0;
        while at < buf.len() {
            match wire::decode(&buf[at..]) {
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

    fn dispatch(&mut self, f: Message) {
        match f {
            Message::Tuples { task, tuples } => {
                let Some(i) = self.inbox_of_task.get(task as usize).copied().flatten() else {
                    tracing::warn!(
                        task,
                        n = tuples.len(),
                        "tuples for a task this worker does not run dropped"
                    );
                    return;
                };
                // A batch gathers a task's tuples across frames until it is full or the
                // frames on hand run out (`flush`). A batch under way for another task of the
                // same executor goes first, keeping each sender's order.
                if !self.per_exec[i].1.is_empty() && self.per_exec[i].0 != task {
                    self.hand_over(i);
                }
                self.per_exec[i].0 = task;
                for t in tuples {
                    self.per_exec[i].1.push(t);
                    if self.per_exec[i].1.len() >= self.batch_size {
                        self.hand_over(i);
                    }
                }
            }
            Message::Acks(a) => {
                if let Some(i) = self.inbox_of_task.get(a.task as usize).copied().flatten() {
                    self.hand_over(i);
                    self.deliver(i, Message::Acks(a));
                }
            }
            Message::Eos { from, to } => {
                if let Some(i) = self.inbox_of_task.get(to as usize).copied().flatten() {
                    // Keep order: tuples before the end-of-input marker.
                    self.hand_over(i);
                    self.deliver(i, Message::Eos { from, to });
                }
            }
            Message::Marker { from, to, marker } => {
                if let Some(i) = self.inbox_of_task.get(to as usize).copied().flatten() {
                    // Keep order: tuples before the marker.
                    self.hand_over(i);
                    self.deliver(i, Message::Marker { from, to, marker });
                }
            }
            Message::Congestion { worker, on } => {
                let congestion = &self.control.congestion;
                match on {
                    true => congestion.mark(worker as usize),
                    false => congestion.clear(worker as usize),
                }
            }
            // Handshakes and heartbeats are the link's; a wake is never sent.
            Message::Control { .. } | Message::Wake => {}
        }
    }

    /// Deliver the batch under way for executor `i`, if any.
    fn hand_over(&mut self, i: usize) {
        let (task, under_way) = &mut self.per_exec[i];
        if !under_way.is_empty() {
            let (task, tuples) = (*task, std::mem::take(under_way));
            self.deliver(i, Message::Tuples { task, tuples });
        }
    }

    fn flush(&mut self) {
        for i in 0..self.per_exec.len() {
            self.hand_over(i);
        }
    }

    /// In order per executor: behind its backlog, else straight in if there is room. Never
    /// waits (see `spawn_receive`).
    fn deliver(&mut self, i: usize, msg: Message) {
        let backlog = &mut self.backlog[i];
        if backlog.is_empty() {
            match self.inboxes[i].try_send(msg) {
                Ok(()) => {}
                Err(TrySendError::Full(m)) => backlog.push_back(m),
                Err(TrySendError::Disconnected(_)) => {}
            }
        } else {
            backlog.push_back(msg);
        }
    }

    /// Mark the worker congested once a backlog is past the high-water mark (refreshed while
    /// it lasts), and clear the mark once every backlog is empty.
    fn watch_congestion(&mut self) {
        let over = self
            .backlog
            .iter()
            .any(|b| b.len() > congestion::HIGH_WATER);
        if over || self.congested {
            if self.backlog.iter().all(|b| b.is_empty()) {
                tracing::debug!(worker = self.worker, "caught up");
                self.congested = false;
                self.control.congestion.clear(self.worker);
            } else {
                if !self.congested {
                    tracing::debug!(worker = self.worker, "congested");
                }
                self.congested = true;
                self.control.congestion.mark(self.worker);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuple::Tuple;
    use crate::tuple::Value;

    fn tuples(n: i64) -> Vec<Tuple> {
        (0..n)
            .map(|i| Tuple::new(smallvec::smallvec![Value::Int(i)], 1, 0))
            .collect()
    }

    /// What waits between two workers is bounded in bytes: the transfer thread sends buffers
    /// of about `TRANSFER_BATCH_BYTES` (over by at most one message), and end-of-input goes
    /// in a lasting buffer of its own, after the tuples.
    #[test]
    fn transfer_buffers_stay_near_the_batch_size_in_bytes() {
        let (transfers_tx, transfers_rx) = crossbeam_channel::unbounded();
        let (link, frames) = crate::net::link::memory(100_000);
        // 20 000 batches of 64 tuples: about 20 MB encoded, queued before the thread starts.
        let mut one = Vec::new();
        wire::encode(
            &Message::Tuples {
                task: 2,
                tuples: tuples(64),
            },
            &mut one,
        );
        for _ in 0..20_000 {
            let message = Message::Tuples {
                task: 2,
                tuples: tuples(64),
            };
            transfers_tx
                .send(Transfer { worker: 1, message })
                .expect("transfer queue");
        }
        transfers_tx
            .send(Transfer {
                worker: 1,
                message: Message::Eos { from: 1, to: 2 },
            })
            .expect("transfer queue");
        drop(transfers_tx);
        let links: Vec<Option<Box<dyn Link>>> = vec![None, Some(Box::new(link))];
        spawn_transfer(0, transfers_rx, links, Arc::default())
            .expect("spawn")
            .join()
            .expect("transfer thread ends");
        let buffers: Vec<Vec<u8>> = frames.try_iter().collect();
        let total: usize = buffers.iter().map(Vec::len).sum();
        assert!(total >= 20_000 * one.len(), "{total} bytes sent");
        for b in &buffers {
            assert!(
                b.len() < TRANSFER_BATCH_BYTES + one.len(),
                "{} bytes",
                b.len()
            );
        }
        let mut eos = Vec::new();
        wire::encode(&Message::Eos { from: 1, to: 2 }, &mut eos);
        assert_eq!(buffers.last(), Some(&eos));
    }

    /// A frame longer than the receive batch is cut into batches that all keep its task, in
    /// order, and a batch under way for another task of the executor goes first.
    #[test]
    fn receive_batches_keep_their_task_and_order() {
        let (frames_tx, frames_rx) = crossbeam_channel::unbounded();
        let (inbox_tx, inbox_rx) = crossbeam_channel::unbounded();
        // Tasks 3 and 4 run on executor 0.
        let inbox_of_task = vec![None, None, None, Some(0), Some(0)];
        let handle = spawn_receive(
            0,
            frames_rx,
            inbox_of_task,
            vec![inbox_tx],
            2,
            Arc::default(),
        );
        let mut buf = Vec::new();
        wire::encode(
            &Message::Tuples {
                task: 3,
                tuples: tuples(5),
            },
            &mut buf,
        );
        wire::encode(
            &Message::Tuples {
                task: 4,
                tuples: tuples(3),
            },
            &mut buf,
        );
        wire::encode(&Message::Eos { from: 1, to: 4 }, &mut buf);
        frames_tx.send(buf).expect("receive thread");
        drop(frames_tx);
        handle.expect("spawn").join().expect("receive thread ends");
        let mut got: Vec<(u32, Vec<i64>)> = Vec::new();
        let mut eos = 0;
        for m in inbox_rx.try_iter() {
            match m {
                Message::Tuples { task, tuples } => {
                    assert!(tuples.len() <= 2, "batches of at most 2");
                    got.push((
                        task,
                        tuples
                            .iter()
                            .map(|t| match t.values.first() {
                                Some(Value::Int(i)) => *i,
                                _ => -1,
                            })
                            .collect(),
                    ));
                }
                Message::Eos { from: 1, to: 4 } => {
                    assert_eq!(got.last().map(|g| g.0), Some(4), "after task 4's tuples");
                    eos += 1;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(eos, 1);
        let flat = |task: u32| -> Vec<i64> {
            got.iter()
                .filter(|g| g.0 == task)
                .flat_map(|g| g.1.clone())
                .collect()
        };
        assert_eq!(flat(3), vec![0, 1, 2, 3, 4]);
        assert_eq!(flat(4), vec![0, 1, 2]);
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [3, 3, 3, 4, 4]);
    }

    /// Poll `done` until it holds; fail naming `what` after 10 s.
    fn wait_for(what: &str, done: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// An executor that takes nothing does not hold up the others of its worker (two workers
    /// feeding each other would wait on each other for ever): what arrives for them still goes
    /// through, the backlog marks the worker congested, and the mark is cleared once the
    /// executor caught up.
    #[test]
    fn a_full_executor_holds_up_no_other_and_marks_its_worker_congested() {
        let (frames_tx, frames_rx) = crossbeam_channel::bounded(1);
        let (stuck_tx, stuck_rx) = crossbeam_channel::bounded(1);
        let (free_tx, free_rx) = crossbeam_channel::unbounded();
        // Task 1 runs on executor 0, which takes nothing for now; task 2 on executor 1.
        let inbox_of_task = vec![None, Some(0), Some(1)];
        let control = Arc::new(RunControl::default());
        let handle = spawn_receive(
            3,
            frames_rx,
            inbox_of_task,
            vec![stuck_tx, free_tx],
            1,
            control.clone(),
        )
        .expect("spawn");
        let send = |buf: Vec<u8>| {
            let taken = frames_tx.send_timeout(buf, Duration::from_secs(10));
            assert!(taken.is_ok(), "the receive thread takes what arrives");
        };
        // Far more than any backlog the thread could once hold before it waited.
        for _ in 0..10_000 {
            let mut buf = Vec::new();
            let frame = Message::Tuples {
                task: 1,
                tuples: tuples(1),
            };
            wire::encode(&frame, &mut buf);
            send(buf);
        }
        let mut buf = Vec::new();
        wire::encode(&Message::Eos { from: 9, to: 2 }, &mut buf);
        send(buf);
        let got = free_rx.recv_timeout(Duration::from_secs(10));
        assert!(
            matches!(got, Ok(Message::Eos { from: 9, to: 2 })),
            "{got:?}"
        );
        assert!(control.congestion.marked(3), "the backlog marks the worker");
        assert!(control.congestion.active(), "spouts hold back");
        let mut taken = 0;
        while taken < 10_000 {
            if stuck_rx.recv_timeout(Duration::from_secs(10)).is_err() {
                break;
            }
            taken += 1;
        }
        assert_eq!(
            taken, 10_000,
            "every message reaches the executor, in the end"
        );
        wait_for("the mark to clear", || !control.congestion.active());
        drop(frames_tx);
        handle.join().expect("receive thread ends");
    }

    /// A congested worker's transfer thread tells every other worker, again while it lasts,
    /// and once more when it is over; the frames mark and clear it at the other end.
    #[test]
    fn congestion_is_told_to_every_other_worker() {
        let (transfers_tx, transfers_rx) = crossbeam_channel::unbounded::<Transfer>();
        /// A link to a worker in another process, as far as droppable buffers go.
        struct Remote(Sender<Vec<u8>>);
        impl Link for Remote {
            fn send(&self, frames: Vec<u8>) -> anyhow::Result<()> {
                Ok(self.0.send(frames)?)
            }
            fn send_droppable(&self, frames: Vec<u8>) {
                let _ = self.0.try_send(frames);
            }
        }
        let (tx, frames) = crossbeam_channel::bounded(1000);
        let links: Vec<Option<Box<dyn Link>>> = vec![None, Some(Box::new(Remote(tx)))];
        let control = Arc::new(RunControl::default());
        control.congestion.mark(0);
        let handle = spawn_transfer(0, transfers_rx, links, control.clone()).expect("spawn");
        let told = || {
            let buf = frames
                .recv_timeout(Duration::from_secs(10))
                .expect("a frame");
            match wire::decode(&buf).expect("decodes").map(|(f, _)| f) {
                Some(Message::Congestion { worker: 0, on }) => on,
                other => panic!("unexpected {other:?}"),
            }
        };
        assert!(told());
        assert!(told(), "told again while it lasts");
        control.congestion.clear(0);
        // Told "on" until the thread noticed, then "off".
        while told() {}
        // At the other end (worker 1 of another process).
        let (frames_tx, frames_rx) = crossbeam_channel::unbounded();
        let peer = Arc::new(RunControl::default());
        let receive = spawn_receive(1, frames_rx, vec![], vec![], 1, peer.clone()).expect("spawn");
        for on in [true, false] {
            let mut buf = Vec::new();
            wire::encode(&Message::Congestion { worker: 0, on }, &mut buf);
            frames_tx.send(buf).expect("receive thread");
            wait_for("the peer's mark", || peer.congestion.active() == on);
        }
        drop(frames_tx);
        receive.join().expect("receive thread ends");
        drop(transfers_tx);
        handle.join().expect("transfer thread ends");
    }
}
