//! The sending side of a worker's TCP transport: a `TcpLink` from one local worker to one
//! peer worker (Storm's Netty `Client`). `send` queues a buffer of encoded frames on a bounded
//! channel; a named writer thread connects lazily, retries with back-off (10 ms doubling to 2 s)
//! while the peer is not up yet — workers start in any order — authenticates, and writes. The
//! peer's address comes from the `Peers` book on each attempt: until the peer has reported
//! the port it bound, the writer looks again every 10 ms.
//!
//! Backpressure: writes block while the peer does not read, the bounded queue fills, and `send`
//! blocks the transfer thread. One blocking socket per link needs no event loop; the receiving
//! side, which serves many connections, is the mio loop. Dropping the link sends what is queued,
//! giving up after the linger time if the peer is gone, so shutdown never hangs.
//!
//! Lasting buffers (end-of-input markers) survive broken connections: the writer keeps them and
//! sends them all again on every new connection. While idle it checks that the connection is
//! still up, so a peer that restarted gets them even when nothing else is left to send.

use super::auth::{self, Secret};
use super::link::Link;
use super::listener::AUTH_CONTEXT;
use super::peers::Peers;
use crossbeam_channel::{Receiver, Sender};
use std::io::{ErrorKind, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Tunables of outgoing links.
#[derive(Debug, Clone)]
pub struct LinkOptions {
    /// Frame buffers queued per link before `send` blocks.
    pub queue: usize,
    /// First reconnect delay; doubled after each failure up to `backoff_max`.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// How long a closing link keeps trying to deliver what is queued.
    pub linger: Duration,
    /// Limit on the connect call and on each handshake read.
    pub handshake_timeout: Duration,
}

impl Default for LinkOptions {
    fn default() -> Self {
        LinkOptions {
            queue: 16,
            backoff_min: Duration::from_millis(10),
            backoff_max: Duration::from_secs(2),
            linger: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(5),
        }
    }
}

/// How often an idle writer holding lasting buffers checks its connection.
const IDLE_CHECK: Duration = Duration::from_millis(200);

/// Set (to anything) in a worker's environment, each link of that worker loses its first
/// lasting buffer together with its connection, as a connection that breaks just then would:
/// the fault tests of end-of-input use it on a real run.
const LOSE_FIRST_LASTING_ENV: &str = "STORM_TEST_LOSE_FIRST_EOS";

/// One buffer for the writer, and whether it is lasting, or droppable (written only on a
/// connection that is up at that moment, never waited or lingered for).
struct Outgoing {
    frames: Vec<u8>,
    lasting: bool,
    droppable: bool,
}

/// A link to a worker in another process or on another host.
pub(crate) struct TcpLink {
    tx: Option<Sender<Outgoing>>,
    closing: Arc<AtomicBool>,
    /// Set when the run using the link is halted (a rollback): nothing more is sent.
    severed: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TcpLink {
    /// Start the writer thread `worker-{from}-to-{to}`; nothing connects until the first send.
    /// The peer's address is looked up in `peers` on every connect attempt.
    pub(crate) fn open(
        from: usize,
        to: usize,
        peers: Peers,
        secret: Option<Secret>,
        options: LinkOptions,
        severed: Arc<AtomicBool>,
    ) -> std::io::Result<TcpLink> {
        let (tx, rx) = crossbeam_channel::bounded(options.queue.max(1));
        let closing = Arc::new(AtomicBool::new(false));
        let writer = Writer {
            severed: severed.clone(),
            from,
            to,
            peers,
            secret,
            options,
            closing: closing.clone(),
            closing_since: None,
            conn: None,
            lasting: Vec::new(),
            lose_first_lasting: std::env::var_os(LOSE_FIRST_LASTING_ENV).is_some(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("worker-{from}-to-{to}"))
            .spawn(move || writer.run(rx))?;
        Ok(TcpLink {
            tx: Some(tx),
            closing,
            severed,
            thread: Some(thread),
        })
    }
}

impl TcpLink {
    fn queue(&self, out: Outgoing) -> anyhow::Result<()> {
        if self.severed.load(Ordering::Relaxed) {
            return Ok(());
        }
        match &self.tx {
            Some(tx) => match tx.send(out) {
                Ok(()) => Ok(()),
                // A halted run's link drops what it was given.
                Err(_) if self.severed.load(Ordering::Relaxed) => Ok(()),
                Err(_) => Err(anyhow::anyhow!("the link has given up on its peer")),
            },
            None => anyhow::bail!("the link is closed"),
        }
    }
}

impl Link for TcpLink {
    fn send(&self, frames: Vec<u8>) -> anyhow::Result<()> {
        self.queue(Outgoing {
            frames,
            lasting: false,
            droppable: false,
        })
    }

    fn send_lasting(&self, frames: Vec<u8>) -> anyhow::Result<()> {
        self.queue(Outgoing {
            frames,
            lasting: true,
            droppable: false,
        })
    }

    fn send_droppable(&self, frames: Vec<u8>) {
        if let (Some(tx), false) = (&self.tx, self.severed.load(Ordering::Relaxed)) {
            let _ = tx.try_send(Outgoing {
                frames,
                lasting: false,
                droppable: true,
            });
        }
    }
}

impl Drop for TcpLink {
    fn drop(&mut self) {
        self.tx = None;
        self.closing.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Writer {
    severed: Arc<AtomicBool>,
    from: usize,
    to: usize,
    peers: Peers,
    secret: Option<Secret>,
    options: LinkOptions,
    closing: Arc<AtomicBool>,
    closing_since: Option<Instant>,
    conn: Option<TcpStream>,
    /// Lasting buffers sent so far: sent again on every new connection.
    lasting: Vec<Vec<u8>>,
    /// The fault-test hook of `LOSE_FIRST_LASTING_ENV`, until it has fired.
    lose_first_lasting: bool,
}

/// The link gave up on its peer: closing, and past the linger time.
struct GiveUp;

/// Why the writer wants a connection: buffers are queued for the peer (worth the linger time
/// when closing), or only lasting buffers are to be re-sent (not worth waiting for when closing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Urgency {
    Queued,
    Resend,
}

/// Whether a connection is still up: no end of stream or error is waiting on it (the peer
/// never writes after the handshake). A peer that died has closed it, and a write would seem
/// to succeed and be lost.
fn alive(s: &TcpStream) -> bool {
    if s.set_nonblocking(true).is_err() {
        return false;
    }
    let mut byte = [0u8; 1];
    let peeked = s.peek(&mut byte);
    let blocking = s.set_nonblocking(false).is_ok();
    blocking
        && match peeked {
            Ok(n) => n > 0,
            Err(e) => e.kind() == ErrorKind::WouldBlock,
        }
}

/// Why a write did not complete.
enum WriteError {
    /// Closing and past the linger time.
    GiveUp,
    Io(std::io::Error),
}

impl Writer {
    fn run(mut self, rx: Receiver<Outgoing>) {
        loop {
            if self.severed.load(Ordering::Relaxed) {
                return;
            }
            match rx.recv_timeout(IDLE_CHECK) {
                Ok(out) => {
                    if self.deliver(out).is_err() {
                        self.give_up(1 + rx.len());
                        return;
                    }
                }
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    // Closing while the peer is away (a peer that finished needs no re-sent
                    // end-of-input): done, unless buffers were queued meanwhile.
                    if self.recheck().is_err() && rx.is_empty() {
                        return;
                    }
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// Write one buffer, connecting first if needed (a droppable one only on a live
    /// connection).
    fn deliver(&mut self, out: Outgoing) -> Result<(), GiveUp> {
        if out.droppable {
            if let Some(mut stream) = self.conn.take().filter(alive) {
                match self.write(&mut stream, &out.frames) {
                    Ok(()) => self.conn = Some(stream),
                    Err(WriteError::GiveUp) => return Err(GiveUp),
                    Err(WriteError::Io(_)) => {}
                }
            }
            return Ok(());
        }
        if out.lasting && std::mem::take(&mut self.lose_first_lasting) {
            tracing::warn!(
                from = self.from,
                to = self.to,
                "test hook: a lasting buffer is lost with its connection"
            );
            self.conn = None;
            self.lasting.push(out.frames);
            return Ok(());
        }
        self.connected(Urgency::Queued)?;
        let written = match self.conn.take() {
            Some(mut stream) => {
                let r = self.write(&mut stream, &out.frames);
                self.conn = Some(stream);
                r
            }
            None => Ok(()),
        };
        match written {
            Ok(()) => {}
            Err(WriteError::GiveUp) => return Err(GiveUp),
            Err(WriteError::Io(e)) => {
                // Storm's Netty client drops what a broken connection was carrying too;
                // resending could duplicate frames the peer already took. Acking replays the
                // tuples; lasting buffers are sent again on the next connection.
                tracing::warn!(from = self.from, to = self.to, addr = ?self.peers.get(self.to), "connection lost, {} bytes dropped: {e}", out.frames.len());
                self.conn = None;
            }
        }
        if out.lasting {
            self.lasting.push(out.frames);
        }
        Ok(())
    }

    /// Idle: with lasting buffers sent, make sure a live connection has them (the peer may
    /// have restarted, or the connection broken after they were written).
    fn recheck(&mut self) -> Result<(), GiveUp> {
        if self.lasting.is_empty() || self.closing.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.connected(Urgency::Resend)
    }

    /// Until a live connection exists: connect with back-off, then send every lasting buffer
    /// again. Errs when closing and past the linger time, or at once when closing with only
    /// re-sends to do.
    fn connected(&mut self, urgency: Urgency) -> Result<(), GiveUp> {
        let mut backoff = self.options.backoff_min;
        let mut failures = 0u32;
        loop {
            if self.severed.load(Ordering::Relaxed) {
                return Err(GiveUp);
            }
            if self.conn.as_ref().is_some_and(alive) {
                return Ok(());
            }
            self.conn = None;
            let tried = self.peers.get(self.to);
            match self.connect() {
                Ok(mut s) => {
                    if failures > 0 {
                        tracing::info!(from = self.from, to = self.to, addr = ?self.peers.get(self.to), "connected after {failures} attempts");
                    }
                    match self.resend_lasting(&mut s) {
                        Ok(()) => {
                            self.conn = Some(s);
                            return Ok(());
                        }
                        Err(WriteError::GiveUp) => return Err(GiveUp),
                        Err(WriteError::Io(e)) => {
                            tracing::debug!(
                                from = self.from,
                                to = self.to,
                                "connection lost while resending: {e}"
                            );
                        }
                    }
                }
                Err(e) => {
                    failures += 1;
                    // Quiet while the peer is probably starting; loud once it takes long and
                    // something is queued for it (a peer that finished is away for good).
                    if urgency == Urgency::Queued
                        && backoff >= self.options.backoff_max
                        && failures % 8 == 0
                    {
                        tracing::warn!(from = self.from, to = self.to, addr = ?self.peers.get(self.to), "peer worker still unreachable: {e}");
                    } else {
                        tracing::debug!(from = self.from, to = self.to, addr = ?self.peers.get(self.to), "connect failed: {e}");
                    }
                    if !self.pause(backoff, urgency) {
                        return Err(GiveUp);
                    }
                    // An address not known yet, or just learned, is looked at again soon.
                    backoff = match self.peers.get(self.to) {
                        Some(now) if Some(now) == tried => {
                            (backoff * 2).min(self.options.backoff_max)
                        }
                        _ => self.options.backoff_min,
                    };
                }
            }
        }
    }

    /// Send every lasting buffer on a new connection.
    fn resend_lasting(&mut self, s: &mut TcpStream) -> Result<(), WriteError> {
        let lasting = std::mem::take(&mut self.lasting);
        let mut result = Ok(());
        for buf in &lasting {
            result = self.write(s, buf);
            if result.is_err() {
                break;
            }
        }
        self.lasting = lasting;
        result
    }

    fn give_up(&self, buffers: usize) {
        if self.severed.load(Ordering::Relaxed) {
            tracing::debug!(
                from = self.from,
                to = self.to,
                "severed; {buffers} frame buffers dropped"
            );
            return;
        }
        tracing::warn!(
            from = self.from,
            to = self.to,
            addr = ?self.peers.get(self.to),
            "gave up on the peer worker while closing; {buffers} frame buffers not delivered"
        );
    }

    /// True while the link should keep trying: always, or while closing, until the linger time.
    fn keep_trying(&mut self, urgency: Urgency) -> bool {
        if !self.closing.load(Ordering::SeqCst) {
            return true;
        }
        if urgency == Urgency::Resend {
            return false;
        }
        let since = *self.closing_since.get_or_insert_with(Instant::now);
        since.elapsed() < self.options.linger
    }

    /// Sleep `d` in slices, so closing is noticed; false when it is time to give up.
    fn pause(&mut self, d: Duration, urgency: Urgency) -> bool {
        let end = Instant::now() + d;
        loop {
            if !self.keep_trying(urgency) {
                return false;
            }
            let now = Instant::now();
            if now >= end {
                return true;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(20)));
        }
    }

    fn connect(&self) -> Result<TcpStream, String> {
        let t = self.options.handshake_timeout;
        let addr = self
            .peers
            .get(self.to)
            .filter(|a| a.port() != 0)
            .ok_or("its address is not known yet")?;
        let mut s = TcpStream::connect_timeout(&addr, t).map_err(|e| e.to_string())?;
        let _ = s.set_nodelay(true);
        if let Some(secret) = &self.secret {
            s.set_read_timeout(Some(t)).map_err(|e| e.to_string())?;
            s.set_write_timeout(Some(t)).map_err(|e| e.to_string())?;
            auth::client(&mut s, secret, AUTH_CONTEXT).map_err(|e| e.to_string())?;
        }
        // Short write timeouts let a blocked write notice that the link is closing.
        s.set_write_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| e.to_string())?;
        Ok(s)
    }

    fn write(&mut self, s: &mut TcpStream, mut buf: &[u8]) -> Result<(), WriteError> {
        while !buf.is_empty() {
            match s.write(buf) {
                Ok(0) => {
                    return Err(WriteError::Io(std::io::Error::new(
                        ErrorKind::WriteZero,
                        "peer closed",
                    )))
                }
                Ok(n) => buf = &buf[n..],
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if !self.keep_trying(Urgency::Queued) {
                        return Err(WriteError::GiveUp);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(WriteError::Io(e)),
            }
        }
        Ok(())
    }
}
