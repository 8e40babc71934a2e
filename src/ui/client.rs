//! A small HTTP/1.0 client for the UI's REST API (`storm top`, and the operation commands
//! against `--ui`): one request per connection, the answer read to its end.

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// How long a request may take before it is given up.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Largest answer read.
const MAX_ANSWER: u64 = 64 * 1024 * 1024;

/// The token for reads (`STORM_UI_TOKEN`): a UI other hosts can reach wants it on every
/// request, and the reading commands (`storm top`, `storm tap`) have no `--token` of their own.
fn read_token() -> Option<String> {
    std::env::var("STORM_UI_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
}

/// The header line that carries `token`, if any.
fn auth_line(token: Option<&str>) -> String {
    token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default()
}

/// GET `path` from the UI at `addr` (`host:port`, or `http://host:port`) and parse the JSON.
pub(crate) fn get_json(addr: &str, path: &str) -> anyhow::Result<Value> {
    request(addr, "GET", path, read_token().as_deref(), "")
}

/// POST to `path` (Storm's operations), with the UI's token when there is one.
pub(crate) fn post_json(addr: &str, path: &str, token: Option<&str>) -> anyhow::Result<Value> {
    request(addr, "POST", path, token, "")
}

/// POST `body` (JSON) to `path`, with the UI's token when there is one.
pub(crate) fn post_body(
    addr: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> anyhow::Result<Value> {
    request(addr, "POST", path, token, body)
}

/// The `host:port` part of an address given with or without `http://` and a trailing `/`.
fn host_port(addr: &str) -> &str {
    addr.trim_start_matches("http://").trim_end_matches('/')
}

fn request(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> anyhow::Result<Value> {
    let hp = host_port(addr);
    let mut stream =
        TcpStream::connect(hp).map_err(|e| anyhow::anyhow!("cannot reach the UI at {hp}: {e}"))?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    let auth = auth_line(token);
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {hp}\r\nAccept: application/json\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n{auth}\r\n{body}",
        body.len()
    )?;
    let mut raw = Vec::new();
    stream
        .take(MAX_ANSWER)
        .read_to_end(&mut raw)
        .map_err(|e| anyhow::anyhow!("reading the answer from {hp}: {e}"))?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("{hp} did not answer in HTTP"))?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("{hp} gave no HTTP status"))?;
    let value: Value = serde_json::from_str(body)
        .map_err(|e| anyhow::anyhow!("{hp}{path} did not answer JSON (status {status}): {e}"))?;
    if status >= 400 {
        let message = value["errorMessage"].as_str().unwrap_or("no message");
        anyhow::bail!("{hp}{path}: {status}: {message}");
    }
    Ok(value)
}

/// GET a stream of lines (a tap) and hand each non-empty one to `each` as it comes; returns
/// when the server ends the answer (the run ended).
pub(crate) fn stream_lines(
    addr: &str,
    path: &str,
    mut each: impl FnMut(&str),
) -> anyhow::Result<()> {
    use std::io::BufRead;
    let hp = host_port(addr);
    let mut stream =
        TcpStream::connect(hp).map_err(|e| anyhow::anyhow!("cannot reach the UI at {hp}: {e}"))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    let auth = auth_line(read_token().as_deref());
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {hp}\r\n{auth}\r\n")?;
    let mut reader = std::io::BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line)?;
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("{hp} did not answer in HTTP"))?;
    // The headers end at the first empty line.
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
            break;
        }
    }
    if status != 200 {
        let mut body = String::new();
        reader.take(MAX_ANSWER).read_to_string(&mut body)?;
        let message = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v["errorMessage"].as_str().map(str::to_string))
            .unwrap_or(body);
        anyhow::bail!("{message}");
    }
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let text = line.trim_end();
        if !text.is_empty() {
            each(text);
        }
    }
}
