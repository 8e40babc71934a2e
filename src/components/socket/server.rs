//! The `socket` spout's listener: one event-loop thread (a current-thread tokio runtime)
//! accepting TCP connections within a bound, or receiving UDP datagrams. Each connection is
//! framed and read on its own; what it gives goes to the spout through a bounded channel.
//! A TCP connection waits while the channel is full (the kernel then slows its sender: no
//! loss); a datagram that finds it full is dropped and counted, as UDP must.

use super::decode::{Decode, Item};
use super::framing::{Frame, Framer, Framing};
use super::settings::{Protocol, Settings};
use crate::components::Waker;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

/// Batches of items the channel holds (each from one read: at most a read buffer's worth).
const CHANNEL: usize = 256;
/// Bytes read per call.
const CHUNK: usize = 64 * 1024;

/// What the listener's tasks share.
struct Shared {
    framing: Framing,
    max_frame: usize,
    max_connections: usize,
    idle: Option<Duration>,
    decode: Decode,
    tx: mpsc::Sender<Vec<Item>>,
    waker: Waker,
    /// Items dropped because the channel was full (UDP), and connections refused.
    dropped: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
    open: AtomicUsize,
}

/// A running listener; it stops when dropped.
pub(crate) struct Listener {
    pub(crate) addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What the spout reads from the listener.
pub(crate) struct Inlet {
    pub(crate) rx: mpsc::Receiver<Vec<Item>>,
    pub(crate) dropped: Arc<AtomicU64>,
    pub(crate) refused: Arc<AtomicU64>,
}

/// Bind and start listening. `reuse_port`: several tasks share the TCP port.
pub(crate) fn start(
    name: &str,
    settings: &Settings,
    decode: Decode,
    max_frame: usize,
    waker: Waker,
    reuse_port: bool,
) -> std::io::Result<(Listener, Inlet)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    let (tx, rx) = mpsc::channel(CHANNEL);
    let inlet = Inlet {
        rx,
        dropped: Arc::default(),
        refused: Arc::default(),
    };
    let shared = Arc::new(Shared {
        framing: settings.framing,
        max_frame,
        max_connections: settings.max_connections,
        idle: settings.idle,
        decode,
        tx,
        waker,
        dropped: inlet.dropped.clone(),
        refused: inlet.refused.clone(),
        open: AtomicUsize::new(0),
    });
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let (addr, serving) = {
        let _entered = runtime.enter();
        match settings.protocol {
            Protocol::Tcp => {
                let listener = crate::net::http::bind(&settings.listen, reuse_port)?;
                let addr = listener.local_addr()?;
                (addr, Serving::Tcp(listener))
            }
            Protocol::Udp => {
                let at = crate::net::http::resolve(&settings.listen)?;
                let socket = std::net::UdpSocket::bind(at)?;
                socket.set_nonblocking(true)?;
                let socket = tokio::net::UdpSocket::from_std(socket)?;
                (socket.local_addr()?, Serving::Udp(socket))
            }
        }
    };
    let thread = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            runtime.block_on(async move {
                match serving {
                    Serving::Tcp(l) => accept(l, shared, stopped).await,
                    Serving::Udp(s) => receive(s, shared, stopped).await,
                }
            });
            runtime.shutdown_background();
        })?;
    let listener = Listener {
        addr,
        stop: Some(stop),
        thread: Some(thread),
    };
    Ok((listener, inlet))
}

enum Serving {
    Tcp(tokio::net::TcpListener),
    Udp(tokio::net::UdpSocket),
}

/// Accept connections until stopped; past `max_connections` a new one is closed at once.
async fn accept(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => return,
            r = listener.accept() => r,
        };
        match accepted {
            Ok((stream, peer)) => {
                if shared.open.load(Ordering::Relaxed) >= shared.max_connections {
                    shared.refused.fetch_add(1, Ordering::Relaxed);
                    drop(stream);
                    continue;
                }
                shared.open.fetch_add(1, Ordering::Relaxed);
                let s = shared.clone();
                tokio::spawn(async move {
                    connection(stream, peer, &s).await;
                    s.open.fetch_sub(1, Ordering::Relaxed);
                });
            }
            Err(e) => {
                tracing::warn!("socket: cannot accept a connection ({e}); retrying");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Read one connection to its end (or its idle time), frame by frame.
async fn connection(mut stream: tokio::net::TcpStream, peer: SocketAddr, shared: &Shared) {
    let mut framer = Framer::new(shared.framing, shared.max_frame);
    let mut conn = shared.decode.conn(peer);
    let mut buf = vec![0u8; CHUNK];
    let mut frames = Vec::new();
    loop {
        let read = match shared.idle {
            Some(idle) => match tokio::time::timeout(idle, stream.read(&mut buf)).await {
                Ok(r) => r,
                Err(_) => break,
            },
            None => stream.read(&mut buf).await,
        };
        let n = match read {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        framer.feed(&buf[..n], &mut frames);
        if !deliver(shared, &mut conn, &mut frames, None).await {
            return;
        }
    }
    framer.finish(&mut frames);
    deliver(
        shared,
        &mut conn,
        &mut frames,
        Some("when the connection closed"),
    )
    .await;
}

/// Read `frames` and send what they give (waiting for room); false once the spout is gone.
async fn deliver(
    shared: &Shared,
    conn: &mut super::decode::Conn,
    frames: &mut Vec<Frame>,
    end: Option<&str>,
) -> bool {
    let items = read_frames(shared, conn, frames, end);
    if items.is_empty() {
        return true;
    }
    if shared.tx.send(items).await.is_err() {
        return false;
    }
    shared.waker.wake();
    true
}

fn read_frames(
    shared: &Shared,
    conn: &mut super::decode::Conn,
    frames: &mut Vec<Frame>,
    end: Option<&str>,
) -> Vec<Item> {
    let mut items = Vec::new();
    for f in frames.drain(..) {
        match f {
            Frame::Text(bytes) => shared.decode.frame(conn, &bytes, &mut items),
            Frame::Bad { start, reason } => {
                let text = String::from_utf8_lossy(&start).into_owned();
                items.push(Item::Bad(text, reason));
            }
        }
    }
    if let Some(what) = end {
        shared.decode.end(conn, what, &mut items);
    }
    items
}

/// Receive datagrams until stopped: each is framed on its own (one message, or lines).
async fn receive(
    socket: tokio::net::UdpSocket,
    shared: Arc<Shared>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let mut buf = vec![0u8; CHUNK];
    let mut frames = Vec::new();
    loop {
        let got = tokio::select! {
            _ = &mut stop => return,
            r = socket.recv_from(&mut buf) => r,
        };
        let Ok((n, peer)) = got else {
            continue;
        };
        let mut framer = Framer::new(shared.framing, shared.max_frame);
        framer.feed(&buf[..n], &mut frames);
        framer.finish(&mut frames);
        let mut conn = shared.decode.conn(peer);
        let items = read_frames(
            &shared,
            &mut conn,
            &mut frames,
            Some("at the end of the datagram"),
        );
        if items.is_empty() {
            continue;
        }
        let n = items.len() as u64;
        match shared.tx.try_send(items) {
            Ok(()) => shared.waker.wake(),
            Err(mpsc::error::TrySendError::Full(_)) => {
                shared.dropped.fetch_add(n, Ordering::Relaxed);
                shared.waker.wake();
            }
            Err(mpsc::error::TrySendError::Closed(_)) => return,
        }
    }
}
