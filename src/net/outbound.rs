//! The sending side of a worker's TCP transport: a [`TcpLink`] from one local worker to one
//! peer worker (Storm's Netty `Client`). `send` queues a buffer of encoded frames on a bounded
//! channel; a named writer thread connects lazily, retries with back-off (10 ms doubling to 2 s)
//! while the peer is not up yet — workers start in any order — authenticates, and writes.
//!
//! Backpressure: writes block while the peer does not read, the bounded queue fills, and `send`
//! blocks the transfer thread. One blocking socket per link needs no event loop; the receiving
//! side, which serves many connections, is the mio loop. Dropping the link sends what is queued,
//! giving up after the linger time if the peer is gone, so shutdown never hangs.

use super::auth::{self, Secret};
use super::link::Link;
use super::listener::AUTH_CONTEXT;
use crossbeam_channel::{Receiver, Sender};
use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, TcpStream};
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

/// A link to a worker in another process or on another host.
pub struct TcpLink {
    tx: Option<Sender<Vec<u8>>>,
    closing: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TcpLink {
    /// Start the writer thread `worker-{from}-to-{to}`; nothing connects until the first send.
    pub fn open(
        from: usize,
        to: usize,
        addr: SocketAddr,
        secret: Option<Secret>,
        options: LinkOptions,
    ) -> std::io::Result<TcpLink> {
        let (tx, rx) = crossbeam_channel::bounded(options.queue.max(1));
        let closing = Arc::new(AtomicBool::new(false));
        let writer = Writer {
            from,
            to,
            addr,
            secret,
            options,
            closing: closing.clone(),
            closing_since: None,
        };
        let thread = std::thread::Builder::new()
            .name(format!("worker-{from}-to-{to}"))
            .spawn(move || writer.run(rx))?;
        Ok(TcpLink {
            tx: Some(tx),
            closing,
            thread: Some(thread),
        })
    }
}

impl Link for TcpLink {
    fn send(&self, frames: Vec<u8>) -> anyhow::Result<()> {
        match &self.tx {
            Some(tx) => tx
                .send(frames)
                .map_err(|_| anyhow::anyhow!("the link has given up on its peer")),
            None => anyhow::bail!("the link is closed"),
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
    from: usize,
    to: usize,
    addr: SocketAddr,
    secret: Option<Secret>,
    options: LinkOptions,
    closing: Arc<AtomicBool>,
    closing_since: Option<Instant>,
}

/// Why a write did not complete.
enum WriteError {
    /// Closing and past the linger time.
    GiveUp,
    Io(std::io::Error),
}

impl Writer {
    fn run(mut self, rx: Receiver<Vec<u8>>) {
        let mut conn: Option<TcpStream> = None;
        let mut backoff = self.options.backoff_min;
        let mut failures = 0u32;
        while let Ok(buf) = rx.recv() {
            loop {
                let stream = match conn.as_mut() {
                    Some(s) => s,
                    None => match self.connect() {
                        Ok(s) => {
                            if failures > 0 {
                                tracing::info!(from = self.from, to = self.to, addr = %self.addr, "connected after {failures} attempts");
                            }
                            failures = 0;
                            backoff = self.options.backoff_min;
                            conn.insert(s)
                        }
                        Err(e) => {
                            failures += 1;
                            // Quiet while the peer is probably starting; loud once it takes long.
                            if backoff >= self.options.backoff_max && failures % 8 == 0 {
                                tracing::warn!(from = self.from, to = self.to, addr = %self.addr, "peer worker still unreachable: {e}");
                            } else {
                                tracing::debug!(from = self.from, to = self.to, addr = %self.addr, "connect failed: {e}");
                            }
                            if !self.pause(backoff) {
                                self.give_up(1 + rx.len());
                                return;
                            }
                            backoff = (backoff * 2).min(self.options.backoff_max);
                            continue;
                        }
                    },
                };
                match self.write(stream, &buf) {
                    Ok(()) => break,
                    Err(WriteError::GiveUp) => {
                        self.give_up(1 + rx.len());
                        return;
                    }
                    Err(WriteError::Io(e)) => {
                        // Storm's Netty client drops what a broken connection was carrying too;
                        // resending could duplicate frames the peer already took.
                        tracing::warn!(from = self.from, to = self.to, addr = %self.addr, "connection lost, {} bytes dropped: {e}", buf.len());
                        conn = None;
                        break;
                    }
                }
            }
        }
    }

    fn give_up(&self, buffers: usize) {
        tracing::warn!(
            from = self.from,
            to = self.to,
            addr = %self.addr,
            "gave up on the peer worker while closing; {buffers} frame buffers not delivered"
        );
    }

    /// True while the link should keep trying: always, or while closing, until the linger time.
    fn keep_trying(&mut self) -> bool {
        if !self.closing.load(Ordering::SeqCst) {
            return true;
        }
        let since = *self.closing_since.get_or_insert_with(Instant::now);
        since.elapsed() < self.options.linger
    }

    /// Sleep `d` in slices, so closing is noticed; false when it is time to give up.
    fn pause(&mut self, d: Duration) -> bool {
        let end = Instant::now() + d;
        loop {
            if !self.keep_trying() {
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
        let mut s = TcpStream::connect_timeout(&self.addr, t).map_err(|e| e.to_string())?;
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
                    if !self.keep_trying() {
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
