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
//! - **Conversing**: while a bolt answers a child that waits for the task ids of every emit
//!   (Apache Storm's storm.py does), the executor reads the child's output itself
//!   ([`ShellProcess::begin_direct`]), so an emit reaches it without a hop through the reader
//!   thread, which keeps off meanwhile.
//!
//! Reading and writing never wait on each other, so neither side of the pipes can deadlock the
//! executor.

use super::protocol::{self, ChildMessage, Command, Framed, Framer, ProtocolError};
use crate::components::Waker;
use mio::unix::pipe;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command as Spawn, ExitStatus, Stdio};
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

/// What one gathering pause should collect: less, and the next pause is longer; more, and
/// it is shorter. A quarter to a half of a 64 KiB pipe: a handover holds a few batches of
/// tuples (which then travel downstream back to back: one wake-up of the next executor for
/// several batches), and a fast child never fills the pipe and waits.
const GATHER_BYTES: std::ops::RangeInclusive<usize> = 8 * 1024..=32 * 1024;

/// After an emit that waited for its task ids, the reader stays responsive (reads at once,
/// never gathers) this long: such a child is likely to wait again soon.
const RESPONSIVE_FOR: Duration = Duration::from_millis(50);

/// The longest a message that nobody waits for (an ack, a log) goes unannounced to the
/// executor while the reader is responsive.
const NOTIFY_DELAY: Duration = Duration::from_micros(500);

/// Buffered bytes towards the child that make [`ShellProcess::wants_flush`] say yes.
const FLUSH_BYTES: usize = 16 * 1024;

const READ: Token = Token(0);
const WRITE: Token = Token(1);
const WAKE: Token = Token(2);

/// What the reader thread saw.
#[derive(Debug)]
pub(crate) enum ChildEvent {
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
pub(crate) struct Launch<'a> {
    pub(crate) command: &'a [String],
    pub(crate) cwd: &'a Path,
    /// Variables set in the child's environment (`topology.environment`).
    pub(crate) env: &'a [(String, String)],
    /// `component task N`, for thread names and logs.
    pub(crate) label: &'a str,
    /// Wakes the executor when the child has sent something (`None`: nobody to wake; the
    /// owner waits on [`ShellProcess::recv_timeout`] whenever it expects an answer).
    pub(crate) waker: Option<Waker>,
    /// Let the child's output gather between reads while it is not waiting for us (bolts;
    /// a spout's turns are synchronous, so every message is awaited).
    pub(crate) gather: bool,
    /// Buffered tuples that make [`ShellProcess::wants_flush`] say yes.
    pub(crate) write_batch: usize,
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
    /// Handed over and not yet taken. Batches change hands whole (the vectors are swapped,
    /// not their events moved one by one): an event is a few hundred bytes.
    events: Vec<ChildEvent>,
    /// The reader has ended: nothing more will come.
    closed: bool,
    /// The executor has let go: nobody will look.
    abandoned: bool,
}

impl ReceivedState {
    /// Move every event handed over into `into`: when `into` is empty, by swapping buffers
    /// (the reader gets `into`'s allocation back for its next batch).
    fn hand_over(&mut self, into: &mut VecDeque<ChildEvent>) {
        if into.is_empty() {
            let events = VecDeque::from(std::mem::take(&mut self.events));
            self.events = Vec::from(std::mem::replace(into, events));
        } else {
            into.extend(self.events.drain(..));
        }
    }
}

impl Received {
    fn lock(&self) -> MutexGuard<'_, ReceivedState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hand `batch` over (leaving it empty); `false` once nobody will look.
    fn send(&self, batch: &mut Vec<ChildEvent>) -> bool {
        let mut st = self.lock();
        if st.abandoned {
            return false;
        }
        if st.events.is_empty() {
            std::mem::swap(&mut st.events, batch);
        } else {
            st.events.append(batch);
        }
        drop(st);
        self.ready.notify_one();
        true
    }

    /// Move everything received into `into`.
    fn take(&self, into: &mut VecDeque<ChildEvent>) {
        self.lock().hand_over(into);
    }

    /// Wait up to `timeout` for events and move them into `into`; `false` when none came, and
    /// none will (the reader has ended) or the time is up.
    fn wait(&self, into: &mut VecDeque<ChildEvent>, timeout: Duration) -> bool {
        let st = self.lock();
        let (mut st, _) = self
            .ready
            .wait_timeout_while(st, timeout, |st| st.events.is_empty() && !st.closed)
            .unwrap_or_else(|e| e.into_inner());
        st.hand_over(into);
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
    /// The child's stdin, nothing pending yet.
    fn new(stdin: pipe::Sender, wake_writer: mio::Waker) -> Input {
        Input {
            state: Mutex::new(InputState {
                pipe: Some(stdin),
                pending: Vec::new(),
                start: 0,
                marks: VecDeque::new(),
                closed: false,
            }),
            unwritten: AtomicUsize::new(0),
            wake_writer,
        }
    }

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
pub(crate) struct ShellProcess {
    child: Child,
    pid: u32,
    events: Arc<Received>,
    /// Events received and not yet taken.
    received: VecDeque<ChildEvent>,
    notify: Arc<Notify>,
    output: Output,
    write_batch: usize,
    input: Arc<Input>,
    stdout: Arc<Stdout>,
    wake_reader: mio::Waker,
    /// Watches the child's output while the executor reads it itself.
    direct_poll: Poll,
    direct_ready: Events,
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

/// Undoes a half-done [`ShellProcess::spawn`] when dropped: kills and reaps the child, if one
/// was started, and removes the pid directory. [`SpawnGuard::defuse`] hands both over once the
/// process can look after them itself.
struct SpawnGuard {
    pid_dir: PathBuf,
    child: Option<Child>,
    defused: bool,
}

impl SpawnGuard {
    fn new(pid_dir: PathBuf) -> SpawnGuard {
        SpawnGuard {
            pid_dir,
            child: None,
            defused: false,
        }
    }

    /// Take charge of the started child too.
    fn adopt(&mut self, child: Child) -> &mut Child {
        self.child.insert(child)
    }

    /// Hand the child and the pid directory over, leaving nothing to clean up.
    fn defuse(mut self) -> Result<(Child, PathBuf), String> {
        let child = self.child.take().ok_or("no child was started")?;
        self.defused = true;
        Ok((child, std::mem::take(&mut self.pid_dir)))
    }
}

impl Drop for SpawnGuard {
    fn drop(&mut self) {
        if self.defused {
            return;
        }
        if let Some(child) = &mut self.child {
            crate::lifeline::end_group(child);
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.pid_dir);
    }
}

/// A fresh pid directory for one child, in the temporary folder.
fn create_pid_dir() -> Result<PathBuf, String> {
    let pid_dir = std::env::temp_dir().join(format!(
        "storm-shell-{}-{}",
        std::process::id(),
        PID_DIRS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&pid_dir)
        .map_err(|e| format!("cannot create pid dir {}: {e}", pid_dir.display()))?;
    Ok(pid_dir)
}

/// The child's PYTHONPATH: the shim's folder (installed into `pid_dir`) before the PYTHONPATH
/// the child would otherwise have, the one `topology.environment` sets, else ours.
fn python_path(launch: &Launch<'_>, pid_dir: &Path) -> Result<std::ffi::OsString, String> {
    let inherited = launch
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PYTHONPATH")
        .map(|(_, v)| std::ffi::OsString::from(v))
        .or_else(|| std::env::var_os("PYTHONPATH"));
    super::python_compat::install(pid_dir, inherited)
        .map_err(|e| format!("cannot prepare pid dir {}: {e}", pid_dir.display()))
}

/// Start the child program with piped stdio.
fn start_child(
    program: &str,
    args: &[String],
    launch: &Launch<'_>,
    python_path: std::ffi::OsString,
) -> Result<Child, String> {
    // The child gets a process group of its own, so Ctrl-C at a terminal (or any signal to
    // storm's group) reaches storm alone: storm drains, and its children finish the tuples
    // in flight instead of dying with it and being restarted mid-drain. A child still ends
    // with storm: storm stops it and its group at the end, and if storm dies the kernel kills
    // the child and the guard its group (`lifeline.rs`).
    let mut cmd = Spawn::new(program);
    cmd.args(args)
        // Our environment, but never the cluster secret: user code has no business with it.
        .env_remove(super::context::SECRET_ENV)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .env("PYTHONPATH", python_path)
        .current_dir(launch.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::lifeline::spawn_group_for_process_life(cmd).map_err(|e| {
        format!(
            "cannot start `{}` in {}: {e}",
            launch.command.join(" "),
            launch.cwd.display()
        )
    })
}

/// A started child's pipes, non-blocking and watched, with the wakers of their threads.
struct Pipes {
    stdin: pipe::Sender,
    stdout: pipe::Receiver,
    stderr: ChildStderr,
    write_poll: Poll,
    read_poll: Poll,
    wake_writer: mio::Waker,
    wake_reader: mio::Waker,
}

impl Pipes {
    /// Take the child's pipes and set them up for the writer and reader threads.
    fn open(child: &mut Child) -> Result<Pipes, String> {
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the child's pipes could not be opened".to_string());
        };
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
        let (wake_writer, wake_reader) = mio::Waker::new(write_poll.registry(), WAKE)
            .and_then(|w| Ok((w, mio::Waker::new(read_poll.registry(), WAKE)?)))
            .map_err(|e| os_error("create a waker", e))?;
        Ok(Pipes {
            stdin,
            stdout,
            stderr,
            write_poll,
            read_poll,
            wake_writer,
            wake_reader,
        })
    }
}

/// A poller on the child's output for the executor, while it reads the output itself.
fn watch_output(stdout: &pipe::Receiver) -> Result<Poll, String> {
    Poll::new()
        .and_then(|p| {
            p.registry()
                .register(&mut SourceFd(&stdout.as_raw_fd()), READ, Interest::READABLE)
                .map(|()| p)
        })
        .map_err(|e| os_error("watch the child's output", e))
}

/// Start a named thread.
fn spawn_thread(name: String, f: Box<dyn FnOnce() + Send>) -> Result<JoinHandle<()>, String> {
    std::thread::Builder::new()
        .name(name)
        .spawn(f)
        .map_err(|e| format!("cannot start a thread: {e}"))
}

impl ShellProcess {
    /// Spawn the child and its three threads (no handshake yet).
    pub(crate) fn spawn(launch: &Launch<'_>) -> Result<ShellProcess, String> {
        let (program, args) = launch
            .command
            .split_first()
            .ok_or_else(|| "the shell command is empty".to_string())?;
        let mut guard = SpawnGuard::new(create_pid_dir()?);
        let python_path = python_path(launch, &guard.pid_dir)?;
        let child = guard.adopt(start_child(program, args, launch, python_path)?);
        let pipes = Pipes::open(child)?;
        let direct_poll = watch_output(&pipes.stdout)?;
        let (child, pid_dir) = guard.defuse()?;
        ShellProcess::assemble(launch, child, pid_dir, pipes, direct_poll)
    }

    /// The process around a started child and its pipes, with its three threads running.
    /// Dropped on an error, it shuts the child down.
    fn assemble(
        launch: &Launch<'_>,
        child: Child,
        pid_dir: PathBuf,
        pipes: Pipes,
        direct_poll: Poll,
    ) -> Result<ShellProcess, String> {
        let Pipes {
            stdin,
            stdout,
            stderr,
            write_poll,
            read_poll,
            wake_writer,
            wake_reader,
        } = pipes;
        let mut process = ShellProcess {
            pid: child.id(),
            child,
            events: Arc::new(Received::default()),
            received: VecDeque::new(),
            notify: Arc::new(Notify {
                waker: launch.waker.clone(),
                pending: AtomicBool::new(false),
            }),
            output: Output::default(),
            write_batch: launch.write_batch.max(1),
            input: Arc::new(Input::new(stdin, wake_writer)),
            stdout: Arc::new(Stdout::new(stdout)),
            wake_reader,
            direct_poll,
            direct_ready: Events::with_capacity(4),
            stderr_tail: Arc::new(Mutex::new(VecDeque::new())),
            stderr_done: Arc::new(AtomicBool::new(false)),
            pid_dir,
            threads: Vec::new(),
            exit: None,
        };
        process.start_threads(launch, read_poll, write_poll, stderr)?;
        Ok(process)
    }

    /// Start the reader, writer and stderr threads.
    fn start_threads(
        &mut self,
        launch: &Launch<'_>,
        read_poll: Poll,
        write_poll: Poll,
        stderr: ChildStderr,
    ) -> Result<(), String> {
        let reader = StdoutReader {
            stdout: self.stdout.clone(),
            poll: read_poll,
            events: self.events.clone(),
            notify: self.notify.clone(),
            gather: launch.gather,
        };
        let input = self.input.clone();
        let tail = self.stderr_tail.clone();
        let done = self.stderr_done.clone();
        let label = launch.label.to_string();
        let started = [
            spawn_thread(
                format!("shell-read {}", launch.label),
                Box::new(move || reader.run()),
            ),
            spawn_thread(
                format!("shell-write {}", launch.label),
                Box::new(move || write_loop(write_poll, &input)),
            ),
            spawn_thread(
                format!("shell-stderr {}", launch.label),
                Box::new(move || {
                    drain_stderr(stderr, tail, label);
                    done.store(true, Ordering::SeqCst);
                }),
            ),
        ];
        for t in started {
            self.threads.push(t?);
        }
        Ok(())
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    pub(crate) fn pid_dir(&self) -> &Path {
        &self.pid_dir
    }

    /// Queue a control message (handshake, heartbeat, spout command); it goes out at the next
    /// [`ShellProcess::flush`], which the next wait for an event does too.
    pub(crate) fn send(&mut self, msg: &serde_json::Value) {
        protocol::frame_into(&mut self.output.buf, msg);
        self.output.urgent = true;
    }

    /// Queue the task-id answer to an emit (the child waits for it).
    pub(crate) fn send_task_ids(&mut self, tasks: &[u32]) {
        protocol::write_task_ids(&mut self.output.buf, tasks);
        self.output.urgent = true;
    }

    /// Queue an input tuple, framed by `write`; it counts as queued until written to the pipe.
    pub(crate) fn send_tuple(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        write(&mut self.output.buf);
        self.output.marks.push(self.output.buf.len());
    }

    /// Whether what is queued should go out now: the child may be waiting for it, or a batch
    /// is full.
    pub(crate) fn wants_flush(&self) -> bool {
        self.output.urgent
            || self.output.marks.len() >= self.write_batch
            || self.output.buf.len() >= FLUSH_BYTES
    }

    /// Hand everything queued to the pipe: written at once as far as the pipe takes it, the
    /// rest by the writer thread (in order). Never blocks on the child.
    pub(crate) fn flush(&mut self) {
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
    pub(crate) fn queued(&self) -> usize {
        self.output.marks.len() + self.input.unwritten.load(Ordering::Acquire)
    }

    /// The executor is about to take every event there is (with [`ShellProcess::try_recv`]
    /// until it says `None`): the reader must wake it again for anything after that. Until
    /// then, the reader wakes it at most once.
    pub(crate) fn rearm(&self) {
        self.notify.pending.store(false, Ordering::Release);
    }

    /// The next event, if one has arrived (nothing is flushed).
    pub(crate) fn try_recv(&mut self) -> Option<ChildEvent> {
        if let Some(ev) = self.received.pop_front() {
            return Some(ev);
        }
        self.events.take(&mut self.received);
        self.received.pop_front()
    }

    /// Flush what is queued, then wait up to `timeout` for the next event; a closed channel
    /// reads as EOF.
    pub(crate) fn recv_timeout(&mut self, timeout: Duration) -> Option<ChildEvent> {
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

    /// The executor is going to converse with the child (answer its emits as they come):
    /// rather than have the reader thread read each message and wake it, it reads the child's
    /// output itself until [`ShellProcess::end_direct`], with [`ShellProcess::recv_direct`].
    /// Everything read before is taken first, in order. `false` when the output has ended.
    pub(crate) fn begin_direct(&mut self) -> bool {
        let mut st = self.stdout.lock();
        if st.stop || st.eof {
            return false;
        }
        st.executor_reads = true;
        // The reader hands batches over under this lock: every message is either handed
        // over already or in `batch`.
        self.events.take(&mut self.received);
        self.received.extend(st.batch.drain(..));
        st.hold_until = None;
        st.gathering = false;
        true
    }

    /// The reader thread reads again. Messages the executor read itself and has not taken
    /// yet were never seen by the reader thread, which therefore will not wake the executor
    /// for them: the executor is woken here instead (else an emit waiting for its task ids
    /// would wait for the executor's next timer, and the child with it).
    pub(crate) fn end_direct(&mut self) {
        self.stdout.lock().executor_reads = false;
        self.stdout.released.notify_all();
        if !self.received.is_empty() {
            self.notify.wake();
        }
    }

    /// Between [`ShellProcess::begin_direct`] and [`ShellProcess::end_direct`]: flush what is
    /// queued, then the next event, read from the child's output directly, waiting up to
    /// `timeout` for it. For the first `spin` of that, it watches without going to sleep: when
    /// the child answers within microseconds, sleeping and being woken (on a virtual machine,
    /// an idle CPU halted and woken by an interrupt) costs more than its answer takes.
    pub(crate) fn recv_direct(&mut self, spin: Duration, timeout: Duration) -> Option<ChildEvent> {
        self.flush();
        let start = Instant::now();
        loop {
            if let Some(ev) = self.received.pop_front() {
                return Some(ev);
            }
            {
                let mut st = self.stdout.lock();
                if st.eof && st.batch.is_empty() {
                    return Some(ChildEvent::Eof);
                }
                st.read_available();
                self.received.extend(st.batch.drain(..));
            }
            if !self.received.is_empty() {
                continue;
            }
            let waited = start.elapsed();
            if waited >= timeout {
                return None;
            }
            if waited < spin {
                std::hint::spin_loop();
                continue;
            }
            match self
                .direct_poll
                .poll(&mut self.direct_ready, Some(timeout - waited))
            {
                Ok(()) if saw_hang_up(&self.direct_ready) => self.stdout.lock().hung_up = true,
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
    }

    /// The exit status, waiting up to `grace` for the child to exit.
    pub(crate) fn wait_exit(&mut self, grace: Duration) -> Option<ExitStatus> {
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
    pub(crate) fn stderr_tail(&self) -> String {
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
    pub(crate) fn shutdown(&mut self) {
        {
            let mut st = self.input.lock();
            st.closed = true;
            st.pipe = None;
            st.clear();
        }
        let _ = self.input.wake_writer.wake();
        self.stdout.lock().stop = true;
        self.stdout.released.notify_all();
        let _ = self.wake_reader.wake();
        if self.exit.is_none() {
            crate::lifeline::end_group(&self.child);
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

impl Drop for StdoutReader {
    fn drop(&mut self) {
        self.events.lock().closed = true;
        self.events.ready.notify_all();
    }
}

/// The child's stdout and what has been read from it. The reader thread reads it, except while
/// the executor converses with the child and reads it itself
/// ([`ShellProcess::begin_direct`]): then the reader thread keeps off, waiting on `released`.
struct Stdout {
    state: Mutex<StdoutState>,
    released: Condvar,
}

struct StdoutState {
    pipe: pipe::Receiver,
    framer: Framer,
    /// Parsed and not handed over yet: held back, or gathering.
    batch: Vec<ChildEvent>,
    /// Messages nobody waits for are held back to travel with the next batch, until then.
    hold_until: Option<Instant>,
    /// When the child last waited for an answer.
    last_urgent: Option<Instant>,
    gather: Duration,
    /// The reader thread is pausing between two reads whose messages go over together.
    gathering: bool,
    /// The executor reads: the reader thread keeps off.
    executor_reads: bool,
    stop: bool,
    /// The end of the output was read (and reported).
    eof: bool,
    /// A poll reported that the child closed its output: read on to the end, even after a
    /// short read.
    hung_up: bool,
}

impl Stdout {
    /// The child's stdout, nothing read yet.
    fn new(pipe: pipe::Receiver) -> Stdout {
        Stdout {
            state: Mutex::new(StdoutState {
                pipe,
                framer: Framer::default(),
                batch: Vec::new(),
                hold_until: None,
                last_urgent: None,
                gather: GATHER_MIN,
                gathering: false,
                executor_reads: false,
                stop: false,
                eof: false,
                hung_up: false,
            }),
            released: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, StdoutState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl StdoutState {
    /// Read and parse everything the pipe holds now into `batch`: whether the output ended,
    /// and how many bytes came.
    ///
    /// A read that does not fill the buffer emptied the pipe: stop there rather than read
    /// again (and again) the little the child writes meanwhile. What it writes next makes the
    /// pipe readable again (on Linux, epoll reports every write to a polled pipe). Not so the
    /// end of the output when it came before that read: the poll that reported the last bytes
    /// reported the hang-up with them, and nothing will be reported again. So once a poll has
    /// seen the hang-up (`hung_up`), reading goes on to the end.
    fn read_available(&mut self) -> (bool, usize) {
        let mut bytes = 0;
        loop {
            let spare = self.framer.spare();
            let room = spare.len();
            let (eof, short) = match self.pipe.read(spare) {
                Ok(0) => (true, true),
                Ok(n) => {
                    self.framer.filled(n);
                    bytes += n;
                    (false, n < room && !self.hung_up)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return (false, bytes),
                Err(_) => (true, true),
            };
            while let Some(framed) = self.framer.next_message(eof) {
                self.batch.push(ChildEvent::Message(match framed {
                    Framed::Message(text) => protocol::parse(text),
                    Framed::Error(e) => Err(e),
                }));
            }
            if eof {
                self.batch.push(ChildEvent::Eof);
                self.eof = true;
            }
            if short {
                return (eof, bytes);
            }
        }
    }
}

/// Whether a poll of the child's output reported that the child closed it.
fn saw_hang_up(ready: &Events) -> bool {
    ready
        .iter()
        .any(|e| e.token() == READ && (e.is_read_closed() || e.is_error()))
}

/// The reader thread: the child's stdout into batches of events.
struct StdoutReader {
    stdout: Arc<Stdout>,
    poll: Poll,
    events: Arc<Received>,
    notify: Arc<Notify>,
    /// Messages may be held back or gathered (bolts; a spout's turns await every message).
    gather: bool,
}

/// What the reader thread does after a step.
enum Next {
    /// Wait for more output (or until the hold is over).
    Poll(Option<Duration>),
    /// Let more output gather.
    Sleep(Duration),
    Stop,
}

impl StdoutReader {
    fn run(mut self) {
        let mut ready = Events::with_capacity(4);
        let mut hung_up = false;
        loop {
            let next = {
                let mut st = self.stdout.lock();
                st.hung_up |= hung_up;
                while st.executor_reads && !st.stop {
                    st = self
                        .stdout
                        .released
                        .wait(st)
                        .unwrap_or_else(|e| e.into_inner());
                }
                if st.stop || st.eof {
                    Next::Stop
                } else {
                    self.step(&mut st)
                }
            };
            match next {
                Next::Stop => return,
                Next::Sleep(pause) => std::thread::sleep(pause),
                Next::Poll(timeout) => match self.poll.poll(&mut ready, timeout) {
                    Ok(()) => hung_up = saw_hang_up(&ready),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        let mut st = self.stdout.lock();
                        st.batch.push(ChildEvent::Eof);
                        st.eof = true;
                        self.events.send(&mut st.batch);
                        self.notify.wake();
                        return;
                    }
                },
            }
        }
    }

    /// Read what is there, and hand it over, hold it back or let more gather. Batches are
    /// handed over under the lock, so that the executor, taking over, finds every message
    /// either handed over or in `batch`.
    fn step(&self, st: &mut StdoutState) -> Next {
        let old = st.batch.len();
        let (eof, bytes) = st.read_available();
        let now = Instant::now();
        if eof || st.batch[old..].iter().any(ChildEvent::is_urgent) {
            st.last_urgent = Some(now);
        }
        let mut send = eof
            || st.last_urgent == Some(now)
            || !self.gather
            || st.hold_until.is_some_and(|t| now >= t);
        if st.gathering {
            // The pause is over: hand over what it gathered. It adapts so that one pause
            // gathers `GATHER_BYTES`: few wake-ups for a trickle, and never so long that a
            // fast child fills the pipe and waits.
            st.gathering = false;
            if bytes > *GATHER_BYTES.end() {
                st.gather = (st.gather / 2).max(GATHER_MIN);
            } else if bytes < *GATHER_BYTES.start() {
                st.gather = (st.gather * 2).min(GATHER_MAX);
            }
            send = true;
        } else if !send && st.batch.len() > old {
            if st
                .last_urgent
                .is_some_and(|t| now.duration_since(t) < RESPONSIVE_FOR)
            {
                // The child asks for answers: what it sends next will likely want one;
                // these go with it (one wake-up), or when the hold is over.
                st.hold_until.get_or_insert(now + NOTIFY_DELAY);
            } else {
                // Nobody waits for these: let more gather, then hand over all at once.
                st.gathering = true;
                return Next::Sleep(st.gather);
            }
        }
        if send {
            st.hold_until = None;
            if !st.batch.is_empty() {
                if !self.events.send(&mut st.batch) {
                    return Next::Stop;
                }
                self.notify.wake();
            }
        }
        if eof {
            return Next::Stop;
        }
        Next::Poll(
            st.hold_until
                .map(|t| t.saturating_duration_since(Instant::now())),
        )
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Messages the executor read directly and did not take before it stopped reading wake
    /// it: nobody else will (the reader thread never saw them).
    #[test]
    fn messages_read_directly_and_not_taken_wake_the_executor_when_it_stops_reading() {
        let dir = tempfile::tempdir().expect("temp dir");
        let wakes = Arc::new(AtomicUsize::new(0));
        let counted = wakes.clone();
        // Two messages in one write, then silence.
        let script = r#"printf '{"command":"ack","id":"1"}\nend\n{"command":"ack","id":"2"}\nend\n'; sleep 30"#;
        let command = ["sh", "-c", script].map(String::from);
        let launch = Launch {
            command: &command,
            cwd: dir.path(),
            env: &[],
            label: "test",
            waker: Some(Waker::new(move || {
                counted.fetch_add(1, Ordering::SeqCst);
            })),
            gather: true,
            write_batch: 1,
        };
        let mut child = ShellProcess::spawn(&launch).expect("the child starts");
        assert!(child.begin_direct());
        let first = child.recv_direct(Duration::ZERO, Duration::from_secs(10));
        assert!(matches!(first, Some(ChildEvent::Message(_))), "{first:?}");
        // The executor has looked (as its pump does before taking events); the second message
        // came with the first read and is still waiting.
        child.rearm();
        let before = wakes.load(Ordering::SeqCst);
        child.end_direct();
        assert_eq!(wakes.load(Ordering::SeqCst), before + 1);
        assert!(matches!(child.try_recv(), Some(ChildEvent::Message(_))));
        // Nothing left: stopping again wakes nobody.
        assert!(child.begin_direct());
        child.rearm();
        child.end_direct();
        assert_eq!(wakes.load(Ordering::SeqCst), before + 1);
    }

    /// A started `sleep` under a guard with a fresh pid directory.
    fn guarded_sleep(dir: &Path) -> (SpawnGuard, u32) {
        let pid_dir = dir.join("pids");
        std::fs::create_dir(&pid_dir).expect("pid dir");
        let mut guard = SpawnGuard::new(pid_dir);
        let child = Spawn::new("sleep").arg("30").spawn().expect("sleep starts");
        let pid = guard.adopt(child).id();
        (guard, pid)
    }

    #[test]
    fn a_dropped_spawn_guard_kills_and_reaps_the_child_and_removes_the_pid_dir() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (guard, pid) = guarded_sleep(dir.path());
        drop(guard);
        assert!(!dir.path().join("pids").exists());
        // Reaped: the kernel has forgotten the process.
        assert!(!Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn a_defused_spawn_guard_hands_the_child_and_the_pid_dir_over_untouched() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (guard, pid) = guarded_sleep(dir.path());
        let (mut child, pid_dir) = guard.defuse().expect("a child was adopted");
        assert_eq!(child.id(), pid);
        assert_eq!(pid_dir, dir.path().join("pids"));
        assert!(pid_dir.exists());
        assert!(matches!(child.try_wait(), Ok(None)), "the child still runs");
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn a_guard_without_a_child_cannot_be_defused_and_still_removes_the_pid_dir() {
        let dir = tempfile::tempdir().expect("temp dir");
        let pid_dir = dir.path().join("pids");
        std::fs::create_dir(&pid_dir).expect("pid dir");
        assert!(SpawnGuard::new(pid_dir.clone()).defuse().is_err());
        assert!(!pid_dir.exists());
    }
}
