//! A plain blocking-socket `runtime::Network` for worker processes: each worker listens on its
//! slot's `host:port`; a link to a peer is one TCP connection carrying the transfer thread's
//! frame buffers, each prefixed with its 4-byte big-endian length (Storm's worker-to-worker
//! Netty connections, reconnecting when the peer restarts). This is the stand-in used until the
//! mio transport of `src/net/` is merged; both implement the same trait.

use crate::net::link::Link;
use crate::runtime::Network;
use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Buffers larger than this drop the connection (the transfer thread sends ~1 MiB at most).
const MAX_BUFFER: usize = 64 << 20;

/// How long a link keeps trying to reach a peer that is down (restarting) before it drops the
/// buffer; a replaying spout re-sends what was lost when acking is on.
const RECONNECT_FOR: Duration = Duration::from_secs(60);

/// Workers by index: their addresses; the local ones listen.
pub struct SocketNetwork {
    pub addresses: Vec<SocketAddr>,
}

impl Network for SocketNetwork {
    fn listen(
        &self,
        worker: usize,
        into: crossbeam_channel::Sender<Vec<u8>>,
    ) -> anyhow::Result<()> {
        let addr = self
            .addresses
            .get(worker)
            .ok_or_else(|| anyhow::anyhow!("no address for worker {worker}"))?;
        let listener = bind_retrying(*addr)?;
        std::thread::Builder::new()
            .name(format!("worker-{worker}-listen"))
            .spawn(move || {
                for stream in listener.incoming() {
                    let Ok(stream) = stream else { continue };
                    let into = into.clone();
                    let _ = std::thread::Builder::new()
                        .name(format!("worker-{worker}-conn"))
                        .spawn(move || read_buffers(stream, &into));
                }
            })?;
        Ok(())
    }

    fn connect(&self, from: usize, to: usize) -> anyhow::Result<Box<dyn Link>> {
        let addr = *self
            .addresses
            .get(to)
            .ok_or_else(|| anyhow::anyhow!("no address for worker {to} (asked by {from})"))?;
        Ok(Box::new(SocketLink {
            addr,
            stream: Mutex::new(None),
        }))
    }
}

/// A freshly killed worker's port may linger for a moment: retry the bind briefly.
fn bind_retrying(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match TcpListener::bind(addr) {
            Ok(l) => return Ok(l),
            Err(e) if Instant::now() < deadline => {
                tracing::debug!("bind {addr}: {e}; retrying");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => anyhow::bail!("cannot listen on {addr}: {e}"),
        }
    }
}

/// Hand every length-prefixed buffer of one connection to the receive thread. A bad length or
/// a closed socket ends the connection, never the worker.
fn read_buffers(stream: TcpStream, into: &crossbeam_channel::Sender<Vec<u8>>) {
    let mut input = BufReader::new(stream);
    loop {
        let mut len = [0u8; 4];
        if input.read_exact(&mut len).is_err() {
            return;
        }
        let len = u32::from_be_bytes(len) as usize;
        if len > MAX_BUFFER {
            tracing::warn!("dropping a connection that sent a {len}-byte buffer");
            return;
        }
        let mut buf = vec![0u8; len];
        if input.read_exact(&mut buf).is_err() || into.send(buf).is_err() {
            return;
        }
    }
}

struct SocketLink {
    addr: SocketAddr,
    stream: Mutex<Option<TcpStream>>,
}

impl Link for SocketLink {
    fn send(&self, frames: Vec<u8>) -> anyhow::Result<()> {
        let len = u32::try_from(frames.len())?.to_be_bytes();
        let mut slot = self.stream.lock().unwrap_or_else(|e| e.into_inner());
        let deadline = Instant::now() + RECONNECT_FOR;
        loop {
            if slot.is_none() {
                match TcpStream::connect_timeout(&self.addr, Duration::from_secs(2)) {
                    Ok(s) => {
                        let _ = s.set_nodelay(true);
                        *slot = Some(s);
                    }
                    Err(e) if Instant::now() < deadline => {
                        tracing::debug!("connect {}: {e}; retrying", self.addr);
                        std::thread::sleep(Duration::from_millis(100));
                        continue;
                    }
                    Err(e) => anyhow::bail!("worker at {} is unreachable: {e}", self.addr),
                }
            }
            if let Some(s) = slot.as_mut() {
                match s.write_all(&len).and_then(|()| s.write_all(&frames)) {
                    Ok(()) => return Ok(()),
                    Err(e) => {
                        tracing::debug!("send to {}: {e}; reconnecting", self.addr);
                        *slot = None;
                        if Instant::now() >= deadline {
                            anyhow::bail!("worker at {} stopped: {e}", self.addr);
                        }
                    }
                }
            }
        }
    }
}
