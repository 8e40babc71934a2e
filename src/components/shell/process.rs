//! One multilang child process (Storm's `ShellProcess`): spawned in its working directory with a
//! fresh pid directory, its stderr drained into our log.
//!
//! The hot path costs as few system calls and thread hops as we can manage:
//!
//! - **To the child**, messages are framed into a buffer owned by the executor and written
//!   with one non-blocking `write` per batch ([`ShellProcess::flush`]), straight from the
//!   executor thread: a task-id answer reaches the child without a hop through another thread.
//!   Whatever the pipe does not take at once goes to a writer thread, which waits until the
//!   pipe can take it; so a child that stops reading never blocks the executor, which keeps
//!   checking its health.
//! - **From the child**, a reader thread reads everything available in one go, parses it into
//!   events and hands them over in batches. It wakes the executor at once when the child waits
//!   for us (an emit that wants its task ids, a protocol error, the end of output); otherwise
//!   the wake-up is coalesced and may wait [`NOTIFY_DELAY`]. When the child has not waited for
//!   an answer lately, a bolt's reader lets its output gather for up to [`GATHER_MAX`] after
//!   a read, so a busy child costs a few hundred wake-ups a second instead of one per message.
//!
//! Reading and writing never wait on each other, so neither side of the pipes can deadlock the
//! executor.

use super::protocol::{self, ChildMessage, Command, Framed, Framer, ProtocolError};
use crate::components::Waker;
use mio::unix::pipe;
use mio::{Events, Interest, Poll, Token};
use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Spawn, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How many of the child's last stderr lines are kept to explain a death.
const STDERR_TAIL: usize = 5;

/// How long a bolt's reader lets the child's output gather after a read, while the child is
/// not waiting for an answer (adapted between these to the flow): the latency this adds to
/// acks is well under Storm's own.
const GATHER_MIN: Duration = Duration::from_micros(250);
const GATHER_MAX: Duration = Duration::from_millis(2);

/// After an emit that waited for its task ids, the reader stays responsive (reads at once,
/// never gathers) this long: such a child is likely to wait again soon.
const RESPONSIVE_FOR: Duration = Duration::from_millis(50);

/// The longest a message that nobody waits for (an ack, a log) goes unannounced to the
/// executor while the reader is responsive.
pub const NOTIFY_DELAY: Duration = Duration::from_micros(500);

/// Buffered bytes towards the child that make [`ShellProcess::wants_flush`] say yes.
const FLUSH_BYTES: usize = 16 * 1024;

const READ: Token = Token(0);
const WRITE: Token = Token(1);
const WAKE: Token = Token(2);

/// What the reader thread saw.
#[derive(Debug)]
pub enum ChildEvent {
    Message(Result<ChildMessage, ProtocolError>),
    /// The child closed its stdout (it exited, or will).
    Eof,
}

impl ChildEvent {
    /// The child is (probably) blocked until we answer: an emit that wants its task ids, the
    /// handshake answer. A broken message and the end of output are also reported at once.
    fn is_urgent(&self) -> bool {
        match self {
            ChildEvent::Message(Ok(ChildMessage::Command(Command::Emit(e)))) => {
                e.need_task_ids && e.task.is_none()
            }
            ChildEvent::Message(Ok(ChildMessage::Pid(_))) => true,
            ChildEvent::Message(Ok(ChildMessage::Command(_))) => false,
            ChildEvent::Message(Err(_)) | ChildEvent::Eof => true,
        }
    }
}

/// Everything needed to start a child.
pub struct Launch<'a> {
    pub command: &'a [String],
    pub cwd: &'a Path,
    /// `component task N`, for thread names and logs.
    pub label: &'a str,
    /// Wakes the executor when the child has sent something (`None`: nobody to wake; the
    /// owner waits on [`ShellProcess::recv_timeout`] whenever it expects an answer).
    pub waker: Option<Waker>,
    /// Let the child's output gather between reads while it is not waiting for us (bolts;
    /// a spout's turns are synchronous, so every message is awaited).
    pub gather: bool,
    /// Buffered tuples that make [`ShellProcess::wants_flush`] say yes.
    pub write_batch: usize,
}

/// The executor's wake-up, coalesced: at most one is outstanding until the executor looks.
struct Notify {
    waker: Option<Waker>,
    pending: AtomicBool,
}

impl Notify {
    fn wake(&self) {
        if let Some(w) = &self.waker {
            if !self.pending.swap(true, Ordering::AcqRel) {
                w.wake();
            }
        }
    }
}

/// Events from the reader thread to the executor. The executor waits on it without spinning:
/// the child, the reader and the executor often share two cores, and a spinning wait (as a
/// channel's) takes the time the other two need to answer.
#[derive(Default)]
struct Received {
    state: Mutex<ReceivedState>,
    ready: Condvar,
}

#[derive(Default)]
struct ReceivedState {
    events: VecDeque<ChildEvent>,
    /// The reader has ended: nothing more will come.
    closed: bool,
    /// The executor has let go: nobody will look.
    abandoned: bool,
}

impl Received {
    fn lock(&self) -> MutexGuard<'_, ReceivedState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hand a batch over; `false` once nobody will look.
    fn send(&self, batch: impl IntoIterator<Item = ChildEvent>) -> bool {
        let mut st = self.lock();
        if st.abandoned {
            return false;
        }
        st.events.extend(batch);
        drop(st);
        self.ready.notify_one();
        true
    }

    /// Move everything received into `into`.
    fn take(&self, into: &mut VecDeque<ChildEvent>) {
        let mut st = self.lock();
        if into.is_empty() {
            std::mem::swap(&mut st.events, into);
        } else {
            into.extend(st.events.drain(..));
        }
    }

    /// Wait up to `timeout` for events and move them into `into`; `false` when none came, and
    /// none will (the reader has ended) or the time is up.
    fn wait(&self, into: &mut VecDeque<ChildEvent>, timeout: Duration) -> bool {
        let st = self.lock();
        let (mut st, _) = self
            .ready
            .wait_timeout_while(st, timeout, |st| st.events.is_empty() && !st.closed)
            .unwrap_or_else(|e| e.into_inner());
        into.extend(st.events.drain(..));
        !into.is_empty()
    }

    fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

/// The child's stdin as the writer thread and the executor share it.
struct Input {
    state: Mutex<InputState>,
    /// Counted tuples in `state.pending` (read without the lock).
    unwritten: AtomicUsize,
    wake_writer: mio::Waker,
}

struct InputState {
    /// `None` once closed (shut down, or the child stopped reading: broken pipe).
    pipe: Option<pipe::Sender>,
    /// `pending[start..]`: bytes accepted and not yet taken by the pipe, in order.
    pending: Vec<u8>,
    start: usize,
    /// End offsets in `pending` of the tuples in it (they count as queued until written).
    marks: VecDeque<usize>,
    closed: bool,
}

impl InputState {
    /// Write as much of `pending` as the pipe takes now. A broken pipe drops everything: the
    /// child is gone, and the reader reports it.
    fn write_pending(&mut self) {
        let Some(pipe) = &self.pipe else {
            self.clear();
            return;
        };
        let mut pipe = pipe;
        while self.start < self.pending.len() {
            match pipe.write(&self.pending[self.start..]) {
                Ok(n) => {
                    self.start += n;
                    while self.marks.front().is_some_and(|&m| m <= self.start) {
                        self.marks.pop_front();
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.pipe = None;
                    self.clear();
                    return;
                }
            }
        }
        self.clear();
    }

    fn clear(&mut self) {
        self.pending.clear();
        self.start = 0;
        self.marks.clear();
    }

    fn is_empty(&self) -> bool {
        self.start == self.pending.len()
    }
}

impl Input {
    fn lock(&self) -> MutexGuard<'_, InputState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Messages framed by the executor and not yet handed to the pipe.
#[derive(Default)]
struct Output {
    buf: Vec<u8>,
    /// End offsets in `buf` of the tuples in it.
    marks: Vec<usize>,
    /// Holds something the child may be waiting for (a task-id answer, a command).
    urgent: bool,
}

/// A running child.
pub struct ShellProcess {
    child: Child,
    pid: u32,
    events: Arc<Received>,
    /// Events received and not yet taken.
    received: VecDeque<ChildEvent>,
    notify: Arc<Notify>,
    output: Output,
    write_batch: usize,
    input: Arc<Input>,
    stop_reader: Arc<(AtomicBool, mio::Waker)>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    stderr_done: Arc<AtomicBool>,
    pid_dir: PathBuf,
    threads: Vec<JoinHandle<()>>,
    exit: Option<ExitStatus>,
}

static PID_DIRS: AtomicU64 = AtomicU64::new(0);

fn os_error(what: &str, e: io::Error) -> String {
    format!("cannot {what}: {e}")
}

impl ShellProcess {
    /// Spawn the child and its three threads (no handshake yet).
    pub fn spawn(launch: &Launch<'_>) -> Result<ShellProcess, String> {
        let (program, args) = launch
            .command
            .split_first()
            .ok_or_else(|| "the shell command is empty".to_string())?;
        let pid_dir = std::env::temp_dir().join(format!(
            "storm-shell-{}-{}",
            std::process::id(),
            PID_DIRS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&pid_dir)
            .map_err(|e| format!("cannot create pid dir {}: {e}", pid_dir.display()))?;
        let python_path = super::python_compat::install(&pid_dir)
            .map_err(|e| format!("cannot prepare pid dir {}: {e}", pid_dir.display()))?;
        let spawned = Spawn::new(program)
            .args(args)
            .env("PYTHONPATH", python_path)
            .current_dir(launch.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&pid_dir);
                return Err(format!(
                    "cannot start `{}` in {}: {e}",
                    launch.command.join(" "),
                    launch.cwd.display()
                ));
            }
        };
        let pid = child.id();
        let io = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(i), Some(o), Some(e)) => Ok((i, o, e)),
            _ => Err("the child's pipes could not be opened".to_string()),
        }
        .and_then(|(stdin, stdout, stderr)| {
            let mut stdin = pipe::Sender::from(stdin);
            let mut stdout = pipe::Receiver::from(stdout);
            stdin
                .set_nonblocking(true)
                .and_then(|()| stdout.set_nonblocking(true))
                .map_err(|e| os_error("make the child's pipes non-blocking", e))?;
            let write_poll = Poll::new().map_err(|e| os_error("create a poller", e))?;
            let read_poll = Poll::new().map_err(|e| os_error("create a poller", e))?;
            write_poll
                .registry()
                .register(&mut stdin, WRITE, Interest::WRITABLE)
                .and_then(|()| {
                    read_poll
                        .registry()
                        .register(&mut stdout, READ, Interest::READABLE)
                })
                .map_err(|e| os_error("watch the child's pipes", e))?;
            let wake_writer = mio::Waker::new(write_poll.registry(), WAKE)
                .and_then(|w| Ok((w, mio::Waker::new(read_poll.registry(), WAKE)?)))
                .map_err(|e| os_error("create a waker", e))?;
            Ok((stdin, stdout, stderr, write_poll, read_poll, wake_writer))
        });
        let (stdin, stdout, stderr, write_poll, read_poll, (wake_writer, wake_reader)) = match io {
            Ok(io) => io,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = std::fs::remove_dir_all(&pid_dir);
                return Err(e);
            }
        };
        let input = Arc::new(Input {
            state: Mutex::new(InputState {
                pipe: Some(stdin),
                pending: Vec::new(),
                start: 0,
                marks: VecDeque::new(),
                closed: false,
            }),
            unwritten: AtomicUsize::new(0),
            wake_writer,
        });
        let notify = Arc::new(Notify {
            waker: launch.waker.clone(),
            pending: AtomicBool::new(false),
        });
        let stop_reader = Arc::new((AtomicBool::new(false), wake_reader));
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_done = Arc::new(AtomicBool::new(false));
        let events = Arc::new(Received::default());
        let spawn_thread = |name: String, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name)
                .spawn(f)
                .map_err(|e| format!("cannot start a thread: {e}"))
        };
        let reader = Reader {
            pipe: stdout,
            poll: read_poll,
            events: events.clone(),
            notify: notify.clone(),
            stop: stop_reader.clone(),
            gather: launch.gather,
        };
        let started = [
            spawn_thread(
                format!("shell-read {}", launch.label),
                Box::new(move || reader.run()),
            ),
            spawn_thread(
                format!("shell-write {}", launch.label),
                Box::new({
                    let input = input.clone();
                    move || write_loop(write_poll, &input)
                }),
            ),
            spawn_thread(
                format!("shell-stderr {}", launch.label),
                Box::new({
                    let tail = stderr_tail.clone();
                    let done = stderr_done.clone();
                    let label = launch.label.to_string();
                    move || {
                        drain_stderr(stderr, tail, label);
                        done.store(true, Ordering::SeqCst);
                    }
                }),
            ),
        ];
        let mut process = ShellProcess {
            child,
            pid,
            events,
            received: VecDeque::new(),
            notify,
            output: Output::default(),
            write_batch: launch.write_batch.max(1),
            input,
            stop_reader,
            stderr_tail,
            stderr_done,
            pid_dir,
            threads: Vec::new(),
            exit: None,
        };
        for t in started {
            match t {
                Ok(handle) => process.threads.push(handle),
                Err(e) => {
                    process.shutdown();
                    return Err(e);
                }
            }
        }
        Ok(process)
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn pid_dir(&self) -> &Path {
        &self.pid_dir
    }

    /// Queue a control message (handshake, heartbeat, spout command); it goes out at the next
    /// [`ShellProcess::flush`], which the next wait for an event does too.
    pub fn send(&mut self, msg: &serde_json::Value) {
        protocol::frame_into(&mut self.output.buf, msg);
        self.output.urgent = true;
    }

    /// Queue the task-id answer to an emit (the child waits for it).
    pub fn send_task_ids(&mut self, tasks: &[u32]) {
        protocol::write_task_ids(&mut self.output.buf, tasks);
        self.output.urgent = true;
    }

    /// Queue an input tuple, framed by `write`; it counts as queued until written to the pipe.
    pub fn send_tuple(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        write(&mut self.output.buf);
        self.output.marks.push(self.output.buf.len());
    }

    /// Whether what is queued should go out now: the child may be waiting for it, or a batch
    /// is full.
    pub fn wants_flush(&self) -> bool {
        self.output.urgent
            || self.output.marks.len() >= self.write_batch
            || self.output.buf.len() >= FLUSH_BYTES
    }

    /// Hand everything queued to the pipe: written at once as far as the pipe takes it, the
    /// rest by the writer thread (in order). Never blocks on the child.
    pub fn flush(&mut self) {
        let out = &mut self.output;
        out.urgent = false;
        if out.buf.is_empty() {
            return;
        }
        let mut st = self.input.lock();
        if st.is_empty() && st.pipe.is_some() {
            // Nothing ahead of us: write straight from our buffer.
            let mut written = 0;
            let mut broken = false;
            if let Some(mut pipe) = st.pipe.as_ref() {
                while written < out.buf.len() {
                    match pipe.write(&out.buf[written..]) {
                        Ok(n) => written += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => {
                            // The child is gone (the reader reports it): drop the rest.
                            broken = true;
                            written = out.buf.len();
                        }
                    }
                }
            }
            if broken {
                st.pipe = None;
            }
            if written < out.buf.len() {
                st.clear();
                st.pending.extend_from_slice(&out.buf[written..]);
                st.marks.extend(
                    out.marks
                        .iter()
                        .filter(|&&m| m > written)
                        .map(|m| m - written),
                );
                // The writer finishes the job when the pipe has room.
                let _ = self.input.wake_writer.wake();
            }
        } else if st.pipe.is_some() {
            // The writer is behind: queue after what it holds (it is waiting for room).
            if st.start > 0 && st.start >= st.pending.len() / 2 {
                let start = st.start;
                st.pending.drain(..start);
                for m in st.marks.iter_mut() {
                    *m -= start;
                }
                st.start = 0;
            }
            let base = st.pending.len();
            st.pending.extend_from_slice(&out.buf);
            st.marks.extend(out.marks.iter().map(|m| m + base));
        }
        self.input
            .unwritten
            .store(st.marks.len(), Ordering::Release);
        drop(st);
        out.buf.clear();
        out.marks.clear();
    }

    /// Tuples queued towards the child and not yet written to its stdin.
    pub fn queued(&self) -> usize {
        self.output.marks.len() + self.input.unwritten.load(Ordering::Acquire)
    }

    /// The executor is about to take every event there is (with [`ShellProcess::try_recv`]
    /// until it says `None`): the reader must wake it again for anything after that. Until
    /// then, the reader wakes it at most once.
    pub fn rearm(&self) {
        self.notify.pending.store(false, Ordering::Release);
    }

    /// The next event, if one has arrived (nothing is flushed).
    pub fn try_recv(&mut self) -> Option<ChildEvent> {
        if let Some(ev) = self.received.pop_front() {
            return Some(ev);
        }
        self.events.take(&mut self.received);
        self.received.pop_front()
    }

    /// Flush what is queued, then wait up to `timeout` for the next event; a closed channel
    /// reads as EOF.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Option<ChildEvent> {
        self.flush();
        if let Some(ev) = self.try_recv() {
            return Some(ev);
        }
        if self.events.wait(&mut self.received, timeout) {
            self.received.pop_front()
        } else if self.events.is_closed() {
            Some(ChildEvent::Eof)
        } else {
            None
        }
    }

    /// The exit status, waiting up to `grace` for the child to exit.
    pub fn wait_exit(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.exit.is_some() {
            return self.exit;
        }
        let deadline = Instant::now() + grace;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.exit = Some(status);
                    return self.exit;
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                _ => return None,
            }
        }
    }

    /// The child's last stderr lines, joined, for fault reports.
    pub fn stderr_tail(&self) -> String {
        // Once the child has exited, give the drain thread a moment to read its last words.
        if self.exit.is_some() {
            let deadline = Instant::now() + Duration::from_millis(500);
            while !self.stderr_done.load(Ordering::SeqCst) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let tail = self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.iter().cloned().collect::<Vec<_>>().join(" | ")
    }

    /// Close the child's stdin, kill and reap it, stop and join its threads (briefly: a
    /// grandchild holding stderr must not hang us) and remove the pid directory.
    pub fn shutdown(&mut self) {
        {
            let mut st = self.input.lock();
            st.closed = true;
            st.pipe = None;
            st.clear();
        }
        let _ = self.input.wake_writer.wake();
        self.stop_reader.0.store(true, Ordering::Release);
        let _ = self.stop_reader.1.wake();
        if self.exit.is_none() {
            let _ = self.child.kill();
            self.exit = self.child.wait().ok();
        }
        let deadline = Instant::now() + Duration::from_millis(500);
        while self.threads.iter().any(|t| !t.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        for t in self.threads.drain(..) {
            if t.is_finished() {
                let _ = t.join();
            }
        }
        let _ = std::fs::remove_dir_all(&self.pid_dir);
    }
}

impl Drop for ShellProcess {
    fn drop(&mut self) {
        self.shutdown();
        self.events.lock().abandoned = true;
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.events.lock().closed = true;
        self.events.ready.notify_all();
    }
}

/// The reader thread: the child's stdout into batches of events.
struct Reader {
    pipe: pipe::Receiver,
    poll: Poll,
    events: Arc<Received>,
    notify: Arc<Notify>,
    stop: Arc<(AtomicBool, mio::Waker)>,
    gather: bool,
}

impl Reader {
    fn run(mut self) {
        let mut framer = Framer::default();
        let mut ready = Events::with_capacity(4);
        // When the child last waited for an answer.
        let mut last_urgent: Option<Instant> = None;
        // Parsed and not handed over yet: messages nobody waits for are held back to travel
        // with the next batch, until `hold_until`.
        let mut batch: Vec<ChildEvent> = Vec::new();
        let mut hold_until: Option<Instant> = None;
        let mut gather = GATHER_MIN;
        loop {
            let old = batch.len();
            let (mut eof, _) = self.read_available(&mut framer, &mut batch);
            let mut now = Instant::now();
            let fresh = batch.len() > old;
            let urgent = eof || batch[old..].iter().any(ChildEvent::is_urgent);
            if urgent {
                last_urgent = Some(now);
            }
            let mut send = urgent || !self.gather || hold_until.is_some_and(|t| now >= t);
            if !send && fresh {
                if last_urgent.is_some_and(|t| now.duration_since(t) < RESPONSIVE_FOR) {
                    // The child asks for answers: what it sends next will likely want one;
                    // these go with it (one wake-up), or when the hold is over.
                    hold_until.get_or_insert(now + NOTIFY_DELAY);
                } else {
                    // Nobody waits for these: let more gather, then hand over all at once.
                    // The pause adapts so that one gathers 4-16 KiB: few wake-ups for a
                    // trickle, and never so long that the child fills the pipe and waits.
                    let mid = batch.len();
                    std::thread::sleep(gather);
                    let (end, bytes) = self.read_available(&mut framer, &mut batch);
                    eof = end;
                    if bytes > 16 * 1024 {
                        gather = (gather / 2).max(GATHER_MIN);
                    } else if bytes < 4 * 1024 {
                        gather = (gather * 2).min(GATHER_MAX);
                    }
                    now = Instant::now();
                    if eof || batch[mid..].iter().any(ChildEvent::is_urgent) {
                        last_urgent = Some(now);
                    }
                    send = true;
                }
            }
            if eof {
                batch.push(ChildEvent::Eof);
                send = true;
            }
            if send {
                hold_until = None;
                if !batch.is_empty() {
                    if !self.events.send(batch.drain(..)) {
                        return;
                    }
                    self.notify.wake();
                }
            }
            if eof || self.stop.0.load(Ordering::Acquire) {
                return;
            }
            // Wait for more output, or until the hold is over.
            let timeout = hold_until.map(|t| t.saturating_duration_since(Instant::now()));
            match self.poll.poll(&mut ready, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    batch.push(ChildEvent::Eof);
                    self.events.send(batch.drain(..));
                    self.notify.wake();
                    return;
                }
            }
        }
    }

    /// Read and parse everything the pipe holds now; `true` at the end of the output.
    ///
    /// A read that does not fill the buffer emptied the pipe: stop there rather than read
    /// again (and again) the little the child writes meanwhile. What it writes next makes the
    /// pipe readable again (on Linux, epoll reports every write to a polled pipe).
    fn read_available(
        &mut self,
        framer: &mut Framer,
        batch: &mut Vec<ChildEvent>,
    ) -> (bool, usize) {
        let mut bytes = 0;
        loop {
            let spare = framer.spare();
            let room = spare.len();
            let (eof, short) = match self.pipe.read(spare) {
                Ok(0) => (true, true),
                Ok(n) => {
                    framer.filled(n);
                    bytes += n;
                    (false, n < room)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return (false, bytes),
                Err(_) => (true, true),
            };
            while let Some(framed) = framer.next_message(eof) {
                batch.push(ChildEvent::Message(match framed {
                    Framed::Message(text) => protocol::parse(text),
                    Framed::Error(e) => Err(e),
                }));
            }
            if short {
                return (eof, bytes);
            }
        }
    }
}

/// The writer thread: writes what the executor could not, as the pipe makes room.
fn write_loop(mut poll: Poll, input: &Input) {
    let mut ready = Events::with_capacity(4);
    loop {
        match poll.poll(&mut ready, None) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
        let mut st = input.lock();
        if st.closed {
            return;
        }
        st.write_pending();
        input.unwritten.store(st.marks.len(), Ordering::Release);
    }
}

fn drain_stderr(stderr: impl Read, tail: Arc<Mutex<VecDeque<String>>>, label: String) {
    let reader = BufReader::new(stderr);
    for line in reader.split(b'\n') {
        let Ok(line) = line else { break };
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches('\r');
        tracing::info!("{label} stderr: {text}");
        let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
        if t.len() == STDERR_TAIL {
            t.pop_front();
        }
        t.push_back(protocol::excerpt(text));
    }
}
