//! A small HTTP/1.1 server that holds against hostile clients, for the UI and nimbus: one
//! event-loop thread (a current-thread tokio runtime) serves every connection as a task, and
//! the answers themselves run on at most two blocking threads so a slow answer never stalls
//! the loop. What it promises:
//!
//! - a request head is at most `max_head` bytes and `max_headers` lines (else 431);
//! - the body's length comes from one Content-Length, checked against `max_body` before any
//!   of it is read or room is taken (else 413); Content-Length with Transfer-Encoding, two
//!   Content-Lengths or a length that is not plain digits is a 400;
//! - a request must arrive whole within `read_timeout` of its first byte, a kept-alive
//!   connection may sit `idle` between requests, and an answer must be taken within
//!   `write_timeout`;
//! - at most `max_connections` are open: past that, and when accept runs out of file
//!   descriptors, the connection waiting longest for a request is closed to make room;
//! - pipelined requests are answered in order, each connection on its own.
//!
//! The `http` spout serves on it too: its answers may come later (`Body::Later`, awaited on the
//! loop without holding a thread: an answer once the records' tuple trees completed), carry
//! headers of their own (`Retry-After`), and several tasks may listen on one port
//! (`Limits::reuse_port`: the kernel spreads the connections over them).

mod accept;
mod conn;
mod head;
mod slots;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The bounds a server keeps.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub(crate) max_head: usize,
    pub(crate) max_headers: usize,
    pub(crate) max_body: usize,
    pub(crate) read_timeout: Duration,
    pub(crate) idle: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) max_connections: usize,
    /// Bind with `SO_REUSEPORT`, so that several servers (tasks of one spout, in one process
    /// or several) share the port.
    pub(crate) reuse_port: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head: 16 * 1024,
            max_headers: 64,
            max_body: 64 * 1024,
            read_timeout: Duration::from_secs(10),
            idle: Duration::from_secs(20),
            write_timeout: Duration::from_secs(10),
            max_connections: 256,
            reuse_port: false,
        }
    }
}

/// A request as the handler sees it.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: String,
    /// The request target as sent (`/path?query`).
    pub(crate) target: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    pub(crate) peer: SocketAddr,
}

impl Request {
    /// The first header of this name (any case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What an answer carries.
pub(crate) enum Body {
    /// The whole body, sent with its length.
    Full(Vec<u8>),
    /// Lines sent as they come, until the sender is dropped or the reader goes away (the end
    /// of the connection ends the answer). Each line gets a newline; a quiet stream writes an
    /// empty line every second to find out whether its reader is still there.
    Lines(crossbeam_channel::Receiver<String>),
    /// The answer comes later, from another thread; awaited on the event loop (the connection
    /// is answering meanwhile, so never shed). A sender dropped without an answer is a 503.
    Later(tokio::sync::oneshot::Receiver<Response>),
}

/// An answer.
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) content_type: String,
    pub(crate) body: Body,
    /// Headers besides the ones the server writes (`Retry-After`, `WWW-Authenticate`).
    pub(crate) headers: Vec<(&'static str, String)>,
}

/// What answers requests. It runs on a blocking thread, never on the event loop.
pub(crate) trait Handler: Send + Sync + 'static {
    fn handle(&self, request: Request) -> Response;
}

/// A running server; it stops (and closes its socket) when dropped.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Listen on `addr` and answer with `handler` until the returned server is dropped. `name`
/// names the event-loop thread.
pub(crate) fn start(
    name: &str,
    addr: &str,
    limits: Limits,
    handler: Arc<dyn Handler>,
) -> std::io::Result<Server> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(2)
        .thread_name(format!("{name}-answer"))
        .build()?;
    let listener = {
        let _entered = runtime.enter();
        bind(addr, limits.reuse_port)?
    };
    let local = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let shared = Arc::new(conn::Shared { limits, handler });
    let thread = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            runtime.block_on(accept::serve(listener, shared, stopped));
            // Answers still running on a blocking thread finish on their own.
            runtime.shutdown_background();
        })?;
    Ok(Server {
        addr: local,
        stop: Some(stop),
        thread: Some(thread),
    })
}

/// A listening socket on `addr` (`host:port`; the first address it resolves to), with
/// `SO_REUSEPORT` when asked (unix). Must run inside the runtime.
pub(crate) fn bind(addr: &str, reuse_port: bool) -> std::io::Result<tokio::net::TcpListener> {
    let at = resolve(addr)?;
    let socket = match at {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    #[cfg(unix)]
    {
        socket.set_reuseaddr(true)?;
        if reuse_port {
            socket.set_reuseport(true)?;
        }
    }
    #[cfg(not(unix))]
    let _ = reuse_port;
    socket.bind(at)?;
    socket.listen(1024)
}

/// The first address `addr` names.
pub(crate) fn resolve(addr: &str) -> std::io::Result<SocketAddr> {
    use std::net::ToSocketAddrs;
    addr.to_socket_addrs()?.next().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            format!("`{addr}` names no address"),
        )
    })
}

/// The reason phrase of a status this server gives.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}
