//! The receiving side of a worker's TCP transport: one named thread per local worker runs a mio
//! loop (as Storm's worker receive thread listens on its slot port), accepts peer
//! connections, authenticates them when a cluster secret is set, reads until `WouldBlock`,
//! reassembles whole frames and hands buffers of them to the worker's receive channel.
//!
//! Backpressure crosses the network: when the receive channel is full, the connection's buffer
//! is held and that connection is not read until it drains, so the kernel buffers fill and the
//! sending worker blocks. A connection that sends an oversized or undecodable frame, fails the
//! handshake, or does not finish it in time is closed and logged; the worker carries on.
//!
//! Hostile or broken peers are bounded: a connection must deliver its handshake within the
//! handshake timeout and its first whole frame within four, and a partial frame must keep
//! receiving bytes; the buffers of all connections together stay under `MAX_BUFFERED` (a
//! buffer grows only as bytes arrive); at `MAX_CONNECTIONS` the least recently active
//! connection makes room for a new one; failed accepts (no file descriptors left) back off;
//! every kind of refusal is logged at a bounded rate.

use super::auth::{self, Secret, ServerHandshake};
use super::frame::{self, Check, HEADER_LEN};
use super::reassembly::Reassembly;
use crate::logging::{held_back, Throttle};
use crossbeam_channel::{Sender, TrySendError};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
const FIRST_CONN: usize = 2;
/// Connections held at once; further ones are refused (a bound on hostile peers).
const MAX_CONNECTIONS: usize = 1024;
/// Bytes read per `read` call.
const READ_CHUNK: usize = 128 << 10;
/// Memory all connections' partial frames may hold together; the connection whose frame would
/// go past it is closed.
const MAX_BUFFERED: usize = 128 << 20;
/// A connection must deliver its first whole frame within this many handshake timeouts.
const FIRST_FRAME_MARGIN: u32 = 4;
/// A partial frame that receives no byte for this long closes its connection.
const STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How often deadlines are looked at while some connection has one.
const DEADLINE_TICK: Duration = Duration::from_millis(200);
/// Back-off after a failed accept, doubling up to the maximum.
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// How often each kind of refusal may be logged.
const LOG_EVERY: Duration = Duration::from_secs(10);
static LOG_CLOSED: Throttle = Throttle::new(LOG_EVERY);
static LOG_EVICTED: Throttle = Throttle::new(LOG_EVERY);
static LOG_ACCEPT: Throttle = Throttle::new(LOG_EVERY);
/// Context string proving a connection is a worker link.
pub(crate) const AUTH_CONTEXT: &str = "worker";

/// A running listener: stop it with `ListenerHandle::shutdown` (also on drop).
pub struct ListenerHandle {
    pub(crate) worker: usize,
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<()>>,
}

impl ListenerHandle {
    /// Stop accepting and reading, and join the thread (it never blocks for long).
    pub(crate) fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.waker.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ListenerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Bind `addr` and serve it on a thread named `worker-{worker}-listen`, handing on frames that
/// pass `check` into `into`.
pub fn spawn(
    worker: usize,
    addr: SocketAddr,
    secret: Option<Secret>,
    handshake_timeout: Duration,
    check: Check,
    into: Sender<Vec<u8>>,
) -> anyhow::Result<ListenerHandle> {
    spawn_with_cap(
        worker,
        addr,
        secret,
        handshake_timeout,
        check,
        into,
        MAX_CONNECTIONS,
    )
}

/// [`spawn`] holding at most `max_connections` connections.
fn spawn_with_cap(
    worker: usize,
    addr: SocketAddr,
    secret: Option<Secret>,
    handshake_timeout: Duration,
    check: Check,
    into: Sender<Vec<u8>>,
    max_connections: usize,
) -> anyhow::Result<ListenerHandle> {
    let listener = TcpListener::bind(addr)
        .map_err(|e| anyhow::anyhow!("worker {worker}: cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr()?;
    auth::warn_if_exposed(&format!("worker {worker}"), bound, secret.as_ref());
    let poll = Poll::new()?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    let stop = Arc::new(AtomicBool::new(false));
    let mut lp = Loop {
        worker,
        poll,
        listener,
        secret,
        handshake_timeout,
        check,
        into,
        conns: HashMap::new(),
        next_token: FIRST_CONN,
        stop: stop.clone(),
        chunk: Vec::new(),
        buffered: 0,
        accept_backoff: ACCEPT_BACKOFF_MIN,
        accept_retry: None,
        max_connections,
    };
    lp.poll
        .registry()
        .register(&mut lp.listener, LISTENER, Interest::READABLE)?;
    let thread = std::thread::Builder::new()
        .name(format!("worker-{worker}-listen"))
        .spawn(move || lp.run())?;
    Ok(ListenerHandle {
        worker,
        addr: bound,
        stop,
        waker,
        thread: Some(thread),
    })
}

struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    frames: Reassembly,
    /// Set while the peer has not yet proven the secret.
    handshake: Option<(ServerHandshake, Instant)>,
    /// Bytes to write (handshake frames only).
    out: Vec<u8>,
    /// Whole frames the receive channel had no room for: reading waits until they are taken.
    held: Option<Vec<u8>>,
    /// When the connection was accepted.
    since: Instant,
    /// When bytes last arrived (or the connection was accepted).
    last_read: Instant,
    /// The peer has delivered a whole frame (authenticated peers count as such).
    proven: bool,
    /// The buffer capacity counted in `Loop::buffered` for this connection.
    counted: usize,
}

impl Conn {
    /// Why the connection should close now, if a deadline of it has passed.
    fn overdue(&self, handshake_within: Duration) -> Option<String> {
        let age = self.since.elapsed();
        if self.handshake.is_some() && age > handshake_within {
            return Some("no authentication in time".into());
        }
        // A peer writes as soon as it connects; the margin is for a machine under heavy load,
        // since closing a legitimate link loses what it had in flight.
        if !self.proven && age > handshake_within * FIRST_FRAME_MARGIN {
            return Some("no whole frame in time".into());
        }
        let stalled = self.frames.pending() > 0 && self.held.is_none();
        if stalled && self.last_read.elapsed() > STALL_TIMEOUT {
            return Some(format!(
                "a partial frame ({} bytes) received nothing for {STALL_TIMEOUT:?}",
                self.frames.pending()
            ));
        }
        None
    }

    /// Whether a deadline of [`Conn::overdue`] is running.
    fn has_deadline(&self) -> bool {
        !self.proven || (self.frames.pending() > 0 && self.held.is_none())
    }
}

struct Loop {
    worker: usize,
    poll: Poll,
    listener: TcpListener,
    secret: Option<Secret>,
    handshake_timeout: Duration,
    /// The payload check of data frames.
    check: Check,
    into: Sender<Vec<u8>>,
    conns: HashMap<Token, Conn>,
    next_token: usize,
    stop: Arc<AtomicBool>,
    /// Read buffer, reused across reads.
    chunk: Vec<u8>,
    /// Buffer capacity of all connections together (bounded by [`MAX_BUFFERED`]).
    buffered: usize,
    /// The next delay after a failed accept.
    accept_backoff: Duration,
    /// When to try accepting again after a failure.
    accept_retry: Option<Instant>,
    /// Connections held at once ([`MAX_CONNECTIONS`] but in tests).
    max_connections: usize,
}

/// What became of a connection after some work on it.
enum Outcome {
    Open,
    Close(String),
    /// The worker's receive channel is gone: the worker has ended.
    WorkerGone,
}

impl Loop {
    fn run(mut self) {
        let mut events = Events::with_capacity(256);
        loop {
            let timeout = self.poll_timeout();
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                tracing::warn!(worker = self.worker, "network poll failed: {e}");
                return;
            }
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept(),
                    WAKER => {}
                    token => {
                        if event.is_writable() {
                            self.step(token, Self::flush);
                        }
                        if event.is_readable() || event.is_read_closed() || event.is_error() {
                            self.step(token, Self::read);
                        }
                    }
                }
            }
            if self.accept_retry.is_some_and(|t| Instant::now() >= t) {
                self.accept_retry = None;
                self.accept();
            }
            // Held buffers and deadlines.
            let tokens: Vec<Token> = self.conns.keys().copied().collect();
            for token in tokens {
                self.step(token, Self::retry);
            }
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
        }
    }

    /// How long the next poll may wait: briefly while a buffer is held or a handshake runs,
    /// a tick while a deadline runs or an accept is to be retried, else until an event.
    fn poll_timeout(&self) -> Option<Duration> {
        let mut timeout = self.accept_retry.map(|_| DEADLINE_TICK);
        for c in self.conns.values() {
            if c.held.is_some() || c.handshake.is_some() {
                return Some(Duration::from_millis(1));
            }
            if c.has_deadline() {
                timeout = Some(DEADLINE_TICK);
            }
        }
        timeout
    }

    /// Close the least recently active connection, to make room for a new one.
    fn evict_one(&mut self) {
        let Some(token) = self
            .conns
            .iter()
            .min_by_key(|(_, c)| c.last_read)
            .map(|(t, _)| *t)
        else {
            return;
        };
        if let Some(mut conn) = self.conns.remove(&token) {
            if let Some(held) = LOG_EVICTED.allow() {
                tracing::warn!(
                    worker = self.worker,
                    peer = %conn.peer,
                    "{} connections open: closed the least recently active{}",
                    self.max_connections,
                    held_back(held)
                );
            }
            self.forget(&mut conn);
        }
    }

    /// Stop watching a closed connection and give back its buffer's share.
    fn forget(&mut self, conn: &mut Conn) {
        self.buffered = self.buffered.saturating_sub(conn.counted);
        conn.counted = 0;
        let _ = self.poll.registry().deregister(&mut conn.stream);
    }

    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((mut stream, peer)) => {
                    self.accept_backoff = ACCEPT_BACKOFF_MIN;
                    if self.conns.len() >= self.max_connections {
                        self.evict_one();
                    }
                    let token = Token(self.next_token);
                    self.next_token += 1;
                    let _ = stream.set_nodelay(true);
                    if let Err(e) = self.poll.registry().register(
                        &mut stream,
                        token,
                        Interest::READABLE | Interest::WRITABLE,
                    ) {
                        tracing::warn!(worker = self.worker, %peer, "cannot watch connection: {e}");
                        continue;
                    }
                    let (handshake, limit, out) = match &self.secret {
                        Some(s) => {
                            let hs = ServerHandshake::new(s.clone(), AUTH_CONTEXT);
                            let out = hs.challenge();
                            (Some((hs, Instant::now())), auth::MAX_HANDSHAKE_FRAME, out)
                        }
                        None => (None, HEADER_LEN + frame::MAX_FRAME, Vec::new()),
                    };
                    tracing::debug!(worker = self.worker, %peer, "peer connected");
                    let now = Instant::now();
                    self.conns.insert(
                        token,
                        Conn {
                            stream,
                            peer,
                            frames: Reassembly::new(limit, self.check),
                            handshake,
                            out,
                            held: None,
                            since: now,
                            last_read: now,
                            proven: false,
                            counted: 0,
                        },
                    );
                    self.step(token, Self::flush);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of file descriptors, say: the connection waits in the backlog, so
                    // try again later rather than at once (or never: events are edge-triggered).
                    let delay = self.accept_backoff;
                    if let Some(held) = LOG_ACCEPT.allow() {
                        tracing::warn!(
                            worker = self.worker,
                            "accept failed: {e}; retrying in {delay:?}{}",
                            held_back(held)
                        );
                    }
                    self.accept_retry = Some(Instant::now() + delay);
                    self.accept_backoff = (delay * 2).min(ACCEPT_BACKOFF_MAX);
                    return;
                }
            }
        }
    }

    /// Run `f` on a connection and close it if asked.
    fn step(&mut self, token: Token, f: fn(&mut Loop, &mut Conn) -> Outcome) {
        let Some(mut conn) = self.conns.remove(&token) else {
            return;
        };
        match f(self, &mut conn) {
            Outcome::Open => {
                self.conns.insert(token, conn);
            }
            Outcome::Close(why) => {
                if why.is_empty() {
                    tracing::debug!(worker = self.worker, peer = %conn.peer, "peer disconnected");
                } else if let Some(held) = LOG_CLOSED.allow() {
                    tracing::warn!(worker = self.worker, peer = %conn.peer, "connection closed: {why}{}", held_back(held));
                }
                self.forget(&mut conn);
            }
            Outcome::WorkerGone => {
                self.stop.store(true, Ordering::SeqCst);
                self.forget(&mut conn);
            }
        }
    }

    fn flush(&mut self, conn: &mut Conn) -> Outcome {
        while !conn.out.is_empty() {
            match conn.stream.write(&conn.out) {
                Ok(0) => return Outcome::Close("peer stopped reading".into()),
                Ok(n) => {
                    conn.out.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Outcome::Close(format!("write failed: {e}")),
            }
        }
        Outcome::Open
    }

    /// Read until `WouldBlock` (mio is edge-triggered), or until the receive channel is full.
    fn read(&mut self, conn: &mut Conn) -> Outcome {
        let mut chunk = std::mem::take(&mut self.chunk);
        chunk.resize(READ_CHUNK, 0);
        let outcome = self.read_into(conn, &mut chunk);
        self.chunk = chunk;
        outcome
    }

    fn read_into(&mut self, conn: &mut Conn, chunk: &mut [u8]) -> Outcome {
        while conn.held.is_none() {
            match conn.stream.read(chunk) {
                Ok(0) => {
                    return if conn.frames.pending() > 0 {
                        Outcome::Close("peer closed in the middle of a frame".into())
                    } else {
                        Outcome::Close(String::new())
                    };
                }
                Ok(n) => match self.take_within_budget(conn, &chunk[..n]) {
                    Outcome::Open => {}
                    other => return other,
                },
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Outcome::Close(format!("read failed: {e}")),
            }
        }
        Outcome::Open
    }

    /// [`Loop::take`], then account the connection's buffer: past [`MAX_BUFFERED`] for all
    /// connections, the connection holding a partial frame is closed.
    fn take_within_budget(&mut self, conn: &mut Conn, bytes: &[u8]) -> Outcome {
        conn.last_read = Instant::now();
        let outcome = self.take(conn, bytes);
        let now = conn.frames.capacity();
        self.buffered = (self.buffered + now).saturating_sub(conn.counted);
        conn.counted = now;
        if matches!(outcome, Outcome::Open)
            && self.buffered > MAX_BUFFERED
            && conn.frames.pending() > 0
        {
            return Outcome::Close(format!(
                "the worker's receive buffers are full ({} MiB for all connections); \
                 refused a partial frame of {} bytes",
                MAX_BUFFERED >> 20,
                conn.frames.pending()
            ));
        }
        outcome
    }

    /// Bytes read: drive the handshake, or reassemble frames and hand them on.
    fn take(&mut self, conn: &mut Conn, bytes: &[u8]) -> Outcome {
        let mut bytes = bytes;
        if let Some((hs, _)) = &conn.handshake {
            conn.frames.extend(bytes);
            bytes = &[];
            let reply = match conn.frames.next_frame() {
                Ok(None) => return Outcome::Open,
                Ok(Some(f)) => f,
                Err(e) => return Outcome::Close(format!("handshake refused: {e}")),
            };
            match hs.answer(&reply) {
                Ok(accepted) => {
                    conn.out.extend_from_slice(&accepted);
                    conn.handshake = None;
                    conn.proven = true;
                    conn.frames.set_limit(HEADER_LEN + frame::MAX_FRAME);
                    tracing::debug!(worker = self.worker, peer = %conn.peer, "peer authenticated");
                    if let Outcome::Close(why) = self.flush(conn) {
                        return Outcome::Close(why);
                    }
                }
                Err(e) => return Outcome::Close(format!("authentication failed: {e}")),
            }
        }
        match conn.frames.push(bytes) {
            Ok(whole) if whole.is_empty() => Outcome::Open,
            Ok(whole) => {
                conn.proven = true;
                self.hand_on(conn, whole)
            }
            Err(e) => Outcome::Close(format!("bad frame: {e}")),
        }
    }

    fn hand_on(&mut self, conn: &mut Conn, whole: Vec<u8>) -> Outcome {
        match self.into.try_send(whole) {
            Ok(()) => Outcome::Open,
            Err(TrySendError::Full(b)) => {
                conn.held = Some(b);
                Outcome::Open
            }
            Err(TrySendError::Disconnected(_)) => Outcome::WorkerGone,
        }
    }

    /// Retry a held buffer (then carry on reading) and enforce the deadlines.
    fn retry(&mut self, conn: &mut Conn) -> Outcome {
        if let Some(why) = conn.overdue(self.handshake_timeout) {
            return Outcome::Close(why);
        }
        if let Some(b) = conn.held.take() {
            match self.hand_on(conn, b) {
                Outcome::Open if conn.held.is_none() => return self.read(conn),
                other => return other,
            }
        }
        Outcome::Open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Whether the listener closed this connection (EOF or reset) within a few seconds.
    fn closed(s: &mut std::net::TcpStream) -> bool {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        match s.read(&mut [0u8; 8]) {
            Ok(n) => n == 0,
            Err(e) => e.kind() == ErrorKind::ConnectionReset,
        }
    }

    #[test]
    fn at_the_cap_the_least_recently_active_connection_makes_room() {
        let (tx, rx) = crossbeam_channel::bounded(16);
        let addr = "127.0.0.1:0".parse().unwrap();
        let any = |_: u8, _: &[u8]| Ok(());
        let handle = spawn_with_cap(0, addr, None, Duration::from_secs(5), any, tx, 3).unwrap();
        // A data frame as the runtime's end-of-input marker from task 1 to task 2.
        let mut eos = Vec::new();
        let marker = frame::RawFrame {
            kind: 2,
            dest: 2,
            body: vec![0, 0, 0, 1],
        };
        frame::encode_raw(&marker, &mut eos);
        // Three peers, each heard from in turn: the first is then the least recently active.
        let mut peers: Vec<std::net::TcpStream> = (0..3)
            .map(|_| {
                let mut s = std::net::TcpStream::connect(handle.addr).unwrap();
                s.write_all(&eos).unwrap();
                rx.recv_timeout(Duration::from_secs(5)).unwrap();
                s
            })
            .collect();
        let mut newcomer = std::net::TcpStream::connect(handle.addr).unwrap();
        assert!(closed(&mut peers[0]));
        // The newcomer is served.
        newcomer.write_all(&eos).unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), eos);
        // The others were left alone.
        peers[1].write_all(&eos).unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), eos);
    }
}
