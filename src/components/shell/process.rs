//! One multilang child process (Storm's `ShellProcess`): spawned in its working directory with a
//! fresh pid directory, fed by a writer thread, read by a reader thread that parses messages into
//! a channel and wakes the executor, its stderr drained into our log. Reading and writing never
//! wait on each other, so neither side of the pipe can deadlock the executor.

use super::protocol::{self, ChildMessage, Deframer, ProtocolError};
use crate::components::Waker;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How many of the child's last stderr lines are kept to explain a death.
const STDERR_TAIL: usize = 5;

/// What the reader thread saw.
#[derive(Debug)]
pub enum ChildEvent {
    Message(Result<ChildMessage, ProtocolError>),
    /// The child closed its stdout (it exited, or will).
    Eof,
}

/// Everything needed to start a child.
pub struct Launch<'a> {
    pub command: &'a [String],
    pub cwd: &'a Path,
    /// `component task N`, for thread names and logs.
    pub label: &'a str,
    pub waker: Waker,
}

struct Outgoing {
    text: String,
    /// A tuple (counts towards `topology.shellbolt.max.pending` until written).
    counted: bool,
}

/// A running child.
pub struct ShellProcess {
    child: Child,
    pid: u32,
    events: Receiver<ChildEvent>,
    writer: Option<Sender<Outgoing>>,
    queued: Arc<AtomicUsize>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    stderr_done: Arc<AtomicBool>,
    pid_dir: PathBuf,
    threads: Vec<JoinHandle<()>>,
    exit: Option<ExitStatus>,
}

static PID_DIRS: AtomicU64 = AtomicU64::new(0);

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
        let spawned = Command::new(program)
            .args(args)
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
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err("the child's pipes could not be opened".into());
                }
            };
        let queued = Arc::new(AtomicUsize::new(0));
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_done = Arc::new(AtomicBool::new(false));
        let (ev_tx, events) = crossbeam_channel::unbounded();
        let (out_tx, out_rx) = crossbeam_channel::unbounded();
        let mut threads = Vec::new();
        let spawn_thread = |name: String, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name)
                .spawn(f)
                .map_err(|e| format!("cannot start a thread: {e}"))
        };
        let waker = launch.waker.clone();
        let started = [
            spawn_thread(
                format!("shell-read {}", launch.label),
                Box::new(move || read_loop(stdout, ev_tx, waker)),
            ),
            spawn_thread(
                format!("shell-write {}", launch.label),
                Box::new({
                    let queued = queued.clone();
                    move || write_loop(stdin, out_rx, queued)
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
            writer: Some(out_tx),
            queued,
            stderr_tail,
            stderr_done,
            pid_dir,
            threads: Vec::new(),
            exit: None,
        };
        for t in started {
            match t {
                Ok(handle) => threads.push(handle),
                Err(e) => {
                    process.threads = threads;
                    process.shutdown();
                    return Err(e);
                }
            }
        }
        process.threads = threads;
        Ok(process)
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn pid_dir(&self) -> &Path {
        &self.pid_dir
    }

    /// Queue a control message (handshake, heartbeat, task ids, spout command).
    pub fn send(&self, msg: &serde_json::Value) {
        self.push(protocol::frame(msg), false);
    }

    /// Queue an input tuple; it counts as queued until the writer has written it.
    pub fn send_tuple(&self, msg: &serde_json::Value) {
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.push(protocol::frame(msg), true);
    }

    fn push(&self, text: String, counted: bool) {
        if let Some(w) = &self.writer {
            // A closed writer means the child is gone; the reader reports the EOF.
            let _ = w.send(Outgoing { text, counted });
        }
    }

    /// Tuples queued towards the child and not yet written to its stdin.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }

    pub fn try_recv(&self) -> Option<ChildEvent> {
        self.events.try_recv().ok()
    }

    /// Wait up to `timeout` for the next event; a closed channel reads as EOF.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<ChildEvent> {
        match self.events.recv_timeout(timeout) {
            Ok(ev) => Some(ev),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => Some(ChildEvent::Eof),
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

    /// Kill the child, reap it, join its threads (briefly: a grandchild holding the pipes must
    /// not hang us) and remove the pid directory.
    pub fn shutdown(&mut self) {
        self.writer = None;
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
    }
}

fn read_loop(stdout: impl Read, events: Sender<ChildEvent>, waker: Waker) {
    let mut reader = BufReader::new(stdout);
    let mut deframer = Deframer::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let event = match std::str::from_utf8(&line) {
            Ok(text) => match deframer.push_line(text) {
                Some(msg) => ChildEvent::Message(protocol::parse(&msg)),
                None if deframer.pending_len() > protocol::MAX_MESSAGE_BYTES => {
                    let text = String::from_utf8_lossy(&line).into_owned();
                    deframer = Deframer::default();
                    ChildEvent::Message(Err(ProtocolError::new(
                        "message longer than 16 MiB without an `end` line",
                        &text,
                    )))
                }
                None => continue,
            },
            Err(_) => ChildEvent::Message(Err(ProtocolError::new(
                "invalid UTF-8",
                &String::from_utf8_lossy(&line),
            ))),
        };
        if events.send(event).is_err() {
            return;
        }
        waker.wake();
    }
    let _ = events.send(ChildEvent::Eof);
    waker.wake();
}

fn write_loop(mut stdin: ChildStdin, outgoing: Receiver<Outgoing>, queued: Arc<AtomicUsize>) {
    while let Ok(first) = outgoing.recv() {
        let mut batch = vec![first];
        batch.extend(outgoing.try_iter());
        for msg in batch {
            if stdin.write_all(msg.text.as_bytes()).is_err() {
                return;
            }
            if msg.counted {
                queued.fetch_sub(1, Ordering::SeqCst);
            }
        }
        if stdin.flush().is_err() {
            return;
        }
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
