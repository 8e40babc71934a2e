//! One connection: read a request (head, then its body) within the time allowed, have the
//! handler answer it on a blocking thread, write the answer, and go on with the next request
//! the client sent (pipelined ones are already in the buffer) until either side ends it.

use super::head::{self, Head, Parsed, Refusal};
use super::slots::Slot;
use super::{reason, Body, Handler, Limits, Request, Response};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{timeout, timeout_at, Instant};

/// What every connection of a server shares.
pub(crate) struct Shared {
    pub(crate) limits: Limits,
    pub(crate) handler: Arc<dyn Handler>,
}

/// How a wait for bytes ended without them.
enum Stop {
    /// The client closed, went quiet past the idle time, or the slot was shed: no answer.
    Quietly,
    /// The request was refused: answer with this, then close.
    Refused(Refusal),
}

/// Bytes read per call.
const CHUNK: usize = 8 * 1024;

/// Serve one connection until it ends.
pub(crate) async fn serve(
    mut stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    slot: Slot,
) {
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::new();
    loop {
        slot.waiting(true);
        let (head, body) = match read_request(&mut stream, &mut buf, &shared.limits, &slot).await {
            Ok(request) => request,
            Err(Stop::Quietly) => return,
            Err(Stop::Refused(r)) => {
                let answer = plain(r.status, &r.message);
                if write(&mut stream, &shared.limits, &answer, true)
                    .await
                    .is_ok()
                {
                    linger(&mut stream).await;
                }
                return;
            }
        };
        slot.waiting(false);
        let close = head.close;
        let request = Request {
            method: head.method,
            target: head.target,
            headers: head.headers,
            body,
            peer,
        };
        let response = answer(&shared, request).await;
        let (status, content_type) = (response.status, response.content_type.clone());
        let lines = match response.body {
            Body::Lines(lines) => lines,
            body => {
                let response = Response {
                    status,
                    content_type,
                    body,
                    headers: response.headers,
                };
                if write(&mut stream, &shared.limits, &response, close)
                    .await
                    .is_err()
                    || close
                {
                    return;
                }
                continue;
            }
        };
        stream_lines(&mut stream, &shared.limits, (status, &content_type), lines).await;
        return;
    }
}

/// The handler's answer to `request` (run on a blocking thread), awaited when it comes later.
async fn answer(shared: &Arc<Shared>, request: Request) -> Response {
    let handler = shared.handler.clone();
    let response = tokio::task::spawn_blocking(move || handler.handle(request))
        .await
        .unwrap_or_else(|e| {
            tracing::warn!("http: an answer failed: {e}");
            plain(500, "the answer failed; see the server's log")
        });
    let Body::Later(later) = response.body else {
        return response;
    };
    match later.await {
        Ok(r) if matches!(r.body, Body::Full(_)) => r,
        Ok(_) => plain(500, "an answer given later must be whole"),
        Err(_) => {
            let mut r = plain(503, "the server stopped before it could answer; retry");
            r.headers.push(("Retry-After", "1".into()));
            r
        }
    }
}

/// Read the next request: its head, then its body (which the head's rules already bounded).
/// The request must arrive whole within the read timeout of its first byte.
async fn read_request(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    limits: &Limits,
    slot: &Slot,
) -> Result<(Head, Vec<u8>), Stop> {
    let mut deadline = (!buf.is_empty()).then(|| Instant::now() + limits.read_timeout);
    let (head, used) = loop {
        if !buf.is_empty() {
            match head::parse(buf, limits).map_err(Stop::Refused)? {
                Parsed::Done(head, used) => break (head, used),
                Parsed::Partial => {}
            }
        }
        let until = deadline.unwrap_or_else(|| Instant::now() + limits.idle);
        read_more(stream, buf, until, slot).await?;
        deadline.get_or_insert_with(|| Instant::now() + limits.read_timeout);
    };
    buf.drain(..used);
    let until = deadline.unwrap_or_else(|| Instant::now() + limits.read_timeout);
    if head.expect_continue && head.body_len > buf.len() {
        let go_on = b"HTTP/1.1 100 Continue\r\n\r\n";
        if !matches!(timeout_at(until, stream.write_all(go_on)).await, Ok(Ok(()))) {
            return Err(Stop::Quietly);
        }
    }
    while buf.len() < head.body_len {
        read_more(stream, buf, until, slot).await?;
    }
    let rest = buf.split_off(head.body_len);
    let body = std::mem::replace(buf, rest);
    Ok((head, body))
}

/// Read some bytes onto `buf` before `until`. A request begun and not finished in time is
/// answered 408; a connection idle past its time, closed, or shed ends quietly.
async fn read_more(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    until: Instant,
    slot: &Slot,
) -> Result<(), Stop> {
    let mut chunk = [0u8; CHUNK];
    let read = tokio::select! {
        _ = slot.shed.notified() => return Err(Stop::Quietly),
        r = timeout_at(until, stream.read(&mut chunk)) => r,
    };
    match read {
        Ok(Ok(0)) | Ok(Err(_)) => Err(Stop::Quietly),
        Ok(Ok(n)) => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(())
        }
        Err(_) if buf.is_empty() => Err(Stop::Quietly),
        Err(_) => Err(Stop::Refused(Refusal {
            status: 408,
            message: "the request did not arrive whole in time".into(),
        })),
    }
}

/// After a refusal, end the sending side and read (into a fixed buffer, never kept) what the
/// client still sends, for a bounded time and amount: closing with unread bytes would reset
/// the connection, and the client could lose the refusal before reading it.
async fn linger(stream: &mut TcpStream) {
    const MOST: usize = 1024 * 1024;
    let _ = stream.shutdown().await;
    let until = Instant::now() + Duration::from_secs(1);
    let mut chunk = [0u8; CHUNK];
    let mut seen = 0;
    while seen < MOST {
        match timeout_at(until, stream.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => seen += n,
            _ => return,
        }
    }
}

/// A short plain-text answer (the protocol's own refusals).
fn plain(status: u16, message: &str) -> Response {
    Response {
        status,
        content_type: "text/plain; charset=utf-8".into(),
        body: Body::Full(format!("{message}\n").into_bytes()),
        headers: Vec::new(),
    }
}

fn status_line(status: u16) -> String {
    format!("HTTP/1.1 {status} {}\r\n", reason(status))
}

/// Write a whole answer within the write timeout.
async fn write(
    stream: &mut TcpStream,
    limits: &Limits,
    response: &Response,
    close: bool,
) -> std::io::Result<()> {
    let Body::Full(body) = &response.body else {
        return Ok(());
    };
    let mut bytes = status_line(response.status);
    bytes += &format!(
        "Content-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n\
         X-Content-Type-Options: nosniff\r\n",
        response.content_type,
        body.len()
    );
    for (name, value) in &response.headers {
        bytes += &format!("{name}: {value}\r\n");
    }
    if close {
        bytes += "Connection: close\r\n";
    }
    bytes += "\r\n";
    let mut all = bytes.into_bytes();
    all.extend_from_slice(body);
    match timeout(limits.write_timeout, stream.write_all(&all)).await {
        Ok(r) => r,
        Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
    }
}

/// How often a stream looks for new lines.
const LINES_POLL: Duration = Duration::from_millis(20);
/// How long a quiet stream waits before it writes an empty line.
const KEEPALIVE: Duration = Duration::from_secs(1);

/// Write lines as they come until the sender goes or the reader does (or stops reading for
/// longer than the write timeout).
async fn stream_lines(
    stream: &mut TcpStream,
    limits: &Limits,
    (status, content_type): (u16, &str),
    lines: crossbeam_channel::Receiver<String>,
) {
    use crossbeam_channel::TryRecvError;
    let head = format!(
        "{}Content-Type: {content_type}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        status_line(status),
    );
    let mut pending = head.into_bytes();
    let mut quiet_since = Instant::now();
    loop {
        loop {
            match lines.try_recv() {
                Ok(line) => {
                    pending.extend_from_slice(line.as_bytes());
                    pending.push(b'\n');
                    if pending.len() >= 64 * 1024 {
                        break;
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    let _ = timeout(limits.write_timeout, stream.write_all(&pending)).await;
                    return;
                }
            }
        }
        if pending.is_empty() && quiet_since.elapsed() >= KEEPALIVE {
            pending.push(b'\n');
        }
        if !pending.is_empty() {
            match timeout(limits.write_timeout, stream.write_all(&pending)).await {
                Ok(Ok(())) => {}
                _ => return,
            }
            pending.clear();
            quiet_since = Instant::now();
        }
        tokio::time::sleep(LINES_POLL).await;
    }
}

/// Answer 503 to a connection there is no room for, without waiting on it, and close it.
pub(crate) fn turn_away(stream: TcpStream) {
    let answer = format!(
        "{}Content-Length: 0\r\nConnection: close\r\nRetry-After: 1\r\n\r\n",
        status_line(503)
    );
    let _ = stream.try_write(answer.as_bytes());
}
