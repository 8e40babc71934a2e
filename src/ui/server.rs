//! The UI's HTTP server (tiny_http: small, synchronous, no async runtime in a codebase that has
//! none). Two threads answer requests; each reads the counters when asked and nothing runs
//! between requests.
//!
//! POSTs change a topology, so they are guarded: they must say `Content-Type:
//! application/json` (a page of another site cannot send that without the browser asking
//! first, which this server never allows), and when a token is configured (`ui.token`, else
//! `storm.cluster.secret`) they must carry it as `Authorization: Bearer TOKEN`.

use super::api::{self, CapacityWindow};
use super::{Action, Source, TopologyView};
use serde_json::{json, Value};
use std::io::Read;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tiny_http::{Header, Method, Request, Response};

/// The page and its assets, compiled into the binary (no network needed to show it).
const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const STYLE_CSS: &str = include_str!("assets/style.css");

/// Threads answering requests.
const THREADS: usize = 2;
/// Largest POST body read (rebalance options are small).
const MAX_BODY: u64 = 64 * 1024;

/// A running UI server; it stops when dropped.
pub struct UiServer {
    server: Arc<tiny_http::Server>,
    pub addr: SocketAddr,
}

impl Drop for UiServer {
    fn drop(&mut self) {
        for _ in 0..THREADS {
            self.server.unblock();
        }
    }
}

/// What every request handler shares.
struct Shared {
    source: Arc<dyn Source>,
    token: Option<String>,
    window: Mutex<CapacityWindow>,
    /// Listening on a loopback address: requests must name a local host (a page of another
    /// site whose name was made to resolve to 127.0.0.1 does not).
    loopback: bool,
}

/// Listen on `addr` and serve `source` until the returned server is dropped.
pub fn start(
    addr: &str,
    source: Arc<dyn Source>,
    token: Option<String>,
) -> anyhow::Result<UiServer> {
    let server = tiny_http::Server::http(addr)
        .map_err(|e| anyhow::anyhow!("the UI cannot listen on {addr}: {e}"))?;
    let addr = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| anyhow::anyhow!("the UI listens on {addr}, which is not an IP address"))?;
    anyhow::ensure!(
        addr.ip().is_loopback() || token.is_some(),
        "the UI on {addr} would be reachable from other hosts without a token, and anyone \
         reaching it could deactivate, rebalance or kill: set `ui.token` (or \
         storm.cluster.secret), or listen on 127.0.0.1"
    );
    let server = Arc::new(server);
    let shared = Arc::new(Shared {
        source,
        token,
        window: Mutex::new(CapacityWindow::default()),
        loopback: addr.ip().is_loopback(),
    });
    for i in 0..THREADS {
        let server = server.clone();
        let shared = shared.clone();
        std::thread::Builder::new()
            .name(format!("ui-http-{i}"))
            .spawn(move || {
                while let Ok(request) = server.recv() {
                    answer(&shared, request);
                }
            })?;
    }
    Ok(UiServer { server, addr })
}

/// An answer: status, content type and body; or a stream of lines (a tap).
struct Reply {
    status: u16,
    content_type: &'static str,
    body: String,
    lines: Option<crossbeam_channel::Receiver<String>>,
}

impl Reply {
    fn json(status: u16, v: &Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            body: v.to_string(),
            lines: None,
        }
    }

    /// A JSON answer as JSONP: `callback(...)`, JavaScript.
    fn wrapped_in(mut self, callback: &str) -> Reply {
        if self.content_type == "application/json" {
            self.body = format!("{callback}({});", self.body);
            self.content_type = "application/javascript";
        }
        self
    }

    /// An error in the shape Storm's UI gives (`error`, `errorMessage`).
    fn error(status: u16, message: impl Into<String>) -> Reply {
        let message = message.into();
        let title = match status {
            400 => "Bad Request",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            501 => "Not Implemented",
            _ => "Internal Server Error",
        };
        Reply::json(status, &json!({ "error": title, "errorMessage": message }))
    }

    fn text(content_type: &'static str, body: &str) -> Reply {
        Reply {
            status: 200,
            content_type,
            body: body.to_string(),
            lines: None,
        }
    }
}

fn answer(shared: &Shared, mut request: Request) {
    let mut reply = match foreign_host(shared, &request) {
        Some(refusal) => refusal,
        None => route(shared, &mut request),
    };
    if let Some(lines) = reply.lines.take() {
        // A tap lasts as long as its reader: its own thread, not one of the answering ones.
        let spawned = std::thread::Builder::new()
            .name("ui-tap".into())
            .spawn(move || stream_lines(request, lines));
        if let Err(e) = spawned {
            tracing::warn!("ui: cannot start a tap: {e}");
        }
        return;
    }
    let mut response = Response::from_string(reply.body).with_status_code(reply.status);
    for (name, value) in [
        ("Content-Type", reply.content_type),
        ("Cache-Control", "no-store"),
    ] {
        if let Ok(h) = Header::from_bytes(name, value) {
            response.add_header(h);
        }
    }
    if let Err(e) = request.respond(response) {
        tracing::debug!("ui: cannot answer a request: {e}");
    }
}

/// A request header's value, by its name in any case.
fn header(request: &Request, name: &str) -> Option<String> {
    request
        .headers()
        .iter()
        .find(|h| h.field.to_string().eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str().to_string())
}

/// A loopback UI answers only requests whose `Host` (and `Origin`, when a browser sends one)
/// is a local name: a foreign name is another site's page reaching it through its browser.
fn foreign_host(shared: &Shared, request: &Request) -> Option<Reply> {
    if !shared.loopback {
        return None;
    }
    let host = header(request, "Host");
    let origin = header(request, "Origin").map(|o| {
        let o = o.trim();
        o.split_once("://").map_or(o, |(_, rest)| rest).to_string()
    });
    let local = |h: &str| {
        let name = match h.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => h.rsplit_once(':').map_or(h, |(n, _)| n),
        };
        name.eq_ignore_ascii_case("localhost")
            || name
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    };
    let bad = [host, origin].into_iter().flatten().find(|h| !local(h))?;
    Some(Reply::error(
        403,
        format!(
            "this UI listens on a loopback address and answers only to local names, not `{bad}`"
        ),
    ))
}

/// How often a quiet tap writes an empty line, to find out whether its reader is still there.
const TAP_KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(1);

/// Write a tap's lines to its reader as they come (HTTP/1.0, no length: the end of the
/// connection ends the answer), until the run ends or the reader goes away.
fn stream_lines(request: Request, lines: crossbeam_channel::Receiver<String>) {
    use crossbeam_channel::RecvTimeoutError;
    use std::io::Write;
    let mut w = request.into_writer();
    let head = "HTTP/1.0 200 OK\r\nContent-Type: application/x-ndjson\r\n\
                Cache-Control: no-store\r\n\r\n";
    if w.write_all(head.as_bytes())
        .and_then(|()| w.flush())
        .is_err()
    {
        return;
    }
    loop {
        let chunk = match lines.recv_timeout(TAP_KEEPALIVE) {
            Ok(line) => line + "\n",
            Err(RecvTimeoutError::Timeout) => "\n".to_string(),
            Err(RecvTimeoutError::Disconnected) => return,
        };
        if w.write_all(chunk.as_bytes())
            .and_then(|()| w.flush())
            .is_err()
        {
            return;
        }
    }
}

/// The value of `key` in a query string, decoded.
fn query_value(query: &str, key: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| percent_decode(&v.replace('+', " ")))
}

/// A tap's answer: `?stream=S` (all streams when absent) and `?sample=R` (0 < R ≤ 1).
fn tap(shared: &Shared, id: &str, component: &str, query: &str) -> Reply {
    let sample = match query_value(query, "sample").map(|s| s.parse::<f64>()) {
        None => 1.0,
        Some(Ok(r)) if r > 0.0 && r <= 1.0 => r,
        Some(_) => return Reply::error(400, "sample must be a number above 0 and at most 1"),
    };
    let every = (1.0 / sample).round().max(1.0) as u64;
    let stream = query_value(query, "stream");
    match shared.source.tap(id, component, stream.as_deref(), every) {
        Ok(lines) => Reply {
            status: 200,
            content_type: "application/x-ndjson",
            body: String::new(),
            lines: Some(lines),
        },
        Err(e) => Reply::error(404, format!("{e:#}")),
    }
}

/// Split a URL into decoded path segments and its query string.
fn split_url(url: &str) -> (Vec<String>, &str) {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let segments = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    (segments, query)
}

/// `%XX` escapes of a path segment decoded (invalid ones kept as written).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether the query string asks for system components (`sys=1` or `sys=true`).
fn wants_sys(query: &str) -> bool {
    query
        .split('&')
        .any(|kv| matches!(kv, "sys=1" | "sys=true"))
}

/// Storm's JSONP: `?callback=NAME` wraps a JSON answer in a call of NAME (a plain
/// JavaScript name, so nothing else can be injected into the page that loads it).
fn jsonp_callback(query: &str) -> Option<&str> {
    let name = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("callback="))?;
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.');
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| !c.is_ascii_digit() && c != '.');
    (first_ok && name.len() <= 64 && name.chars().all(plain)).then_some(name)
}

fn route(shared: &Shared, request: &mut Request) -> Reply {
    let (segments, query) = split_url(request.url());
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    match (request.method(), segs.as_slice()) {
        (Method::Get, []) | (Method::Get, ["index.html"]) => {
            Reply::text("text/html; charset=utf-8", INDEX_HTML)
        }
        (Method::Get, ["app.js"]) => Reply::text("text/javascript; charset=utf-8", APP_JS),
        (Method::Get, ["style.css"]) => Reply::text("text/css; charset=utf-8", STYLE_CSS),
        (Method::Get, ["metrics"]) => {
            let tops = shared.source.topologies();
            let mut window = lock(&shared.window);
            let text = super::prometheus::render(&tops, &mut window, Instant::now());
            Reply {
                status: 200,
                content_type: super::prometheus::CONTENT_TYPE,
                body: text,
                lines: None,
            }
        }
        (Method::Get, ["api", "v1", "topology", id, "tap", component]) => {
            let tops = shared.source.topologies();
            match find(&tops, id) {
                Ok(t) => tap(shared, &t.id, component, query),
                Err(r) => r,
            }
        }
        (Method::Get, ["api", "v1", "topology", _, op, ..])
            if matches!(*op, "activate" | "deactivate" | "kill" | "rebalance") =>
        {
            Reply::error(
                405,
                format!("`{op}` is an operation: a POST request, not a GET"),
            )
        }
        (Method::Get, ["api", "v1", rest @ ..]) => {
            let reply = get_api(shared, rest, wants_sys(query));
            match jsonp_callback(query) {
                Some(callback) => reply.wrapped_in(callback),
                None => reply,
            }
        }
        (Method::Post, ["api", "v1", "topology", id, op @ ..]) => {
            let id = id.to_string();
            let op: Vec<String> = op.iter().map(|s| s.to_string()).collect();
            post_api(shared, request, &id, &op)
        }
        (Method::Get | Method::Post, _) => {
            Reply::error(404, format!("nothing at {}", request.url()))
        }
        (m, _) => Reply::error(405, format!("{m} is not served here")),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The topology named by `id` (its id, or its name).
fn find<'a>(tops: &'a [TopologyView], id: &str) -> Result<&'a TopologyView, Reply> {
    tops.iter()
        .find(|t| t.id == id)
        .or_else(|| tops.iter().find(|t| t.name == id))
        .ok_or_else(|| {
            let ids: Vec<&str> = tops.iter().map(|t| t.id.as_str()).collect();
            let names = tops
                .iter()
                .map(|t| t.name.as_str())
                .chain(ids.iter().copied());
            let hint = crate::topology::yaml::suggest(id, names)
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            let known = match ids.is_empty() {
                true => "none is running".to_string(),
                false => format!("known: {}", ids.join(", ")),
            };
            Reply::error(404, format!("no topology `{id}` ({known}){hint}"))
        })
}

fn get_api(shared: &Shared, path: &[&str], sys: bool) -> Reply {
    let now = Instant::now();
    match path {
        ["cluster", "summary"] => {
            let tops = shared.source.topologies();
            Reply::json(
                200,
                &api::cluster_summary(&shared.source.supervisors(), &tops),
            )
        }
        ["supervisor", "summary"] => {
            Reply::json(200, &api::supervisor_summary(&shared.source.supervisors()))
        }
        ["topology", "summary"] => {
            Reply::json(200, &api::topology_summary(&shared.source.topologies()))
        }
        ["topology", id, rest @ ..] => {
            let tops = shared.source.topologies();
            let t = match find(&tops, id) {
                Ok(t) => t,
                Err(r) => return r,
            };
            let mut window = lock(&shared.window);
            match rest {
                [] => Reply::json(200, &api::topology(t, sys, &mut window, now)),
                ["visualization"] => {
                    Reply::json(200, &api::visualization(t, sys, &mut window, now))
                }
                ["component", c] => match t.component(c) {
                    Some(comp) => Reply::json(200, &api::component(t, comp, &mut window, now)),
                    None => {
                        let ids: Vec<&str> = t.components.iter().map(|c| c.id.as_str()).collect();
                        let hint = crate::topology::yaml::suggest(c, ids.iter().copied())
                            .map(|s| format!("; did you mean `{s}`?"))
                            .unwrap_or_default();
                        Reply::error(
                            404,
                            format!("topology `{}` has no component `{c}`{hint}", t.id),
                        )
                    }
                },
                _ => Reply::error(404, format!("no such page of topology `{}`", t.id)),
            }
        }
        _ => Reply::error(404, format!("no API endpoint /api/v1/{}", path.join("/"))),
    }
}

/// Whether a POST may change things: JSON content type, and the token when one is set.
fn authorized(shared: &Shared, request: &Request) -> Result<(), Reply> {
    let json_type = header(request, "Content-Type").is_some_and(|v| {
        v.trim()
            .to_ascii_lowercase()
            .starts_with("application/json")
    });
    if !json_type {
        return Err(Reply::error(
            403,
            "POST requests must say `Content-Type: application/json`",
        ));
    }
    if let Some(token) = &shared.token {
        let given = header(request, "Authorization")
            .and_then(|v| v.strip_prefix("Bearer ").map(|t| t.trim().to_string()));
        if !given.is_some_and(|g| same_secret(&g, token)) {
            return Err(Reply::error(
                403,
                "this UI needs its token: `Authorization: Bearer TOKEN` (ui.token or storm.cluster.secret)",
            ));
        }
    }
    Ok(())
}

/// Compare two secrets through their digests, so the time taken does not tell how much of
/// a guess was right.
fn same_secret(a: &str, b: &str) -> bool {
    use sha2::{Digest, Sha256};
    Sha256::digest(a.as_bytes()) == Sha256::digest(b.as_bytes())
}

fn post_api(shared: &Shared, request: &mut Request, id: &str, op: &[String]) -> Reply {
    if let Err(r) = authorized(shared, request) {
        return r;
    }
    let mut body = String::new();
    if let Err(e) = request.as_reader().take(MAX_BODY).read_to_string(&mut body) {
        return Reply::error(400, format!("cannot read the request body: {e}"));
    }
    let wait = |s: &str| {
        let secs = s.parse::<u64>().map_err(|_| {
            Reply::error(400, format!("wait-time `{s}` is not a number of seconds"))
        })?;
        crate::topology::rebalance::check_wait(secs).map_err(|e| Reply::error(400, e))?;
        Ok(secs)
    };
    let ops: Vec<&str> = op.iter().map(String::as_str).collect();
    let action = match ops.as_slice() {
        ["activate"] => Action::Activate,
        ["deactivate"] => Action::Deactivate,
        ["kill", w] => match wait(w) {
            Ok(wait_secs) => Action::Kill { wait_secs },
            Err(r) => return r,
        },
        ["rebalance", w] => match (wait(w), api::rebalance_options(&body)) {
            (Ok(wait_secs), Ok(options)) => Action::Rebalance { wait_secs, options },
            (Err(r), _) => return r,
            (_, Err(e)) => return Reply::error(400, format!("rebalanceOptions: {e}")),
        },
        _ => {
            let known = ["activate", "deactivate", "kill", "rebalance"];
            let first = ops.first().copied().unwrap_or("");
            let hint = crate::topology::yaml::suggest(first, known.iter().copied())
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            return Reply::error(
                404,
                format!(
                    "no operation `{}` (activate, deactivate, kill/WAIT, rebalance/WAIT){hint}",
                    ops.join("/")
                ),
            );
        }
    };
    let tops = shared.source.topologies();
    let t = match find(&tops, id) {
        Ok(t) => t.id.clone(),
        Err(r) => return r,
    };
    match shared.source.act(&t, &action) {
        Ok(()) => Reply::json(200, &api::operation(&t, &action)),
        Err(e) if e.is::<crate::topology::rebalance::Invalid>() => {
            Reply::error(400, format!("{e:#}"))
        }
        Err(e) if e.is::<crate::topology::rebalance::Unsupported>() => {
            Reply::error(501, format!("{e:#}"))
        }
        Err(e) => Reply::error(500, format!("{e:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_split_and_decoded() {
        let (segs, q) = split_url("/api/v1/topology/wc%2D1/component/a%20b?sys=1");
        assert_eq!(segs, ["api", "v1", "topology", "wc-1", "component", "a b"]);
        assert!(wants_sys(q));
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
