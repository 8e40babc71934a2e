//! The UI's HTTP answers, on the server of `net::http` (one event-loop thread; these answers
//! run on its two blocking threads and read the counters when asked).
//!
//! Guards, in order: a loopback UI answers only to local `Host`/`Origin` names (DNS
//! rebinding); a browser's cross-site request (`Sec-Fetch-Site: cross-site`) is refused, reads
//! included; a UI reachable from other hosts wants its token on every request but the page's
//! own files; a POST changes a topology, so it wants the token when one is set and, from a
//! browser, a same-origin page (`Origin` equal to `Host`, `Sec-Fetch-Site` same-origin);
//! Storm's JSONP (`?callback=`) is answered only with the token in the query.

use super::api::{self, CapacityWindow};
use super::windows::{self, Windows};
use super::{Action, Source, TopologyView};
use crate::net::http::{self, Body, Request, Response};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The page and its assets, compiled into the binary (no network needed to show it).
const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const STYLE_CSS: &str = include_str!("assets/style.css");

/// A running UI server; it stops when dropped.
pub(crate) struct UiServer {
    _server: http::Server,
    /// Dropped with the server: the sampler of the stats windows ends.
    _sampling: crossbeam_channel::Sender<()>,
    pub(crate) addr: SocketAddr,
}

/// How often the counters are sampled for the stats windows.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);

/// Sample every topology's counters for the stats windows until `stop`'s sender is dropped.
fn sample(shared: &Shared, stop: &crossbeam_channel::Receiver<()>) {
    loop {
        let tops = shared.source.topologies();
        lock(&shared.windows).record(&tops, Instant::now());
        match stop.recv_timeout(SAMPLE_EVERY) {
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            _ => return,
        }
    }
}

/// What every request handler shares.
struct Shared {
    source: Arc<dyn Source>,
    token: Option<String>,
    window: Mutex<CapacityWindow>,
    /// Counters sampled for Storm's 10-minute, 3-hour and 1-day windows.
    windows: Mutex<Windows>,
    /// Listening on a loopback address: requests must name a local host (a page of another
    /// site whose name was made to resolve to 127.0.0.1 does not).
    loopback: bool,
}

impl http::Handler for Shared {
    fn handle(&self, request: Request) -> Response {
        answer(self, request)
    }
}

/// Listen on `addr` and serve `source` until the returned server is dropped.
pub(crate) fn start(
    addr: &str,
    source: Arc<dyn Source>,
    token: Option<String>,
) -> anyhow::Result<UiServer> {
    let wanted: Vec<SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(addr)
        .map_err(|e| anyhow::anyhow!("the UI cannot listen on {addr}: {e}"))?
        .collect();
    let open = wanted.iter().any(|a| !a.ip().is_loopback());
    anyhow::ensure!(
        !open || token.is_some(),
        "the UI on {addr} would be reachable from other hosts without a token, and anyone \
         reaching it could read every topology, deactivate, rebalance or kill: set `ui.token` \
         (or storm.cluster.secret), or listen on 127.0.0.1"
    );
    let shared = Arc::new(Shared {
        source,
        token,
        window: Mutex::new(CapacityWindow::default()),
        windows: Mutex::new(Windows::default()),
        loopback: !open,
    });
    let server = http::start("ui-http", addr, http::Limits::default(), shared.clone())
        .map_err(|e| anyhow::anyhow!("the UI cannot listen on {addr}: {e}"))?;
    let (sampling, stop) = crossbeam_channel::bounded(0);
    std::thread::Builder::new()
        .name("ui-windows".into())
        .spawn(move || sample(&shared, &stop))?;
    Ok(UiServer {
        addr: server.addr,
        _server: server,
        _sampling: sampling,
    })
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
        Reply::json(
            status,
            &json!({ "error": http::reason(status), "errorMessage": message }),
        )
    }

    fn text(content_type: &'static str, body: &str) -> Reply {
        Reply {
            status: 200,
            content_type,
            body: body.to_string(),
            lines: None,
        }
    }

    fn into_response(self) -> Response {
        Response {
            status: self.status,
            content_type: self.content_type.to_string(),
            body: match self.lines {
                Some(lines) => Body::Lines(lines),
                None => Body::Full(self.body.into_bytes()),
            },
            headers: Vec::new(),
        }
    }
}

fn answer(shared: &Shared, request: Request) -> Response {
    let reply = foreign_host(shared, &request)
        .or_else(|| cross_site(&request))
        .or_else(|| guarded(shared, &request).err())
        .unwrap_or_else(|| route(shared, &request));
    reply.into_response()
}

/// A request header's value, by its name in any case.
fn header(request: &Request, name: &str) -> Option<String> {
    request.header(name).map(str::to_string)
}

/// Whether a `host[:port]` names this machine.
fn local_name(h: &str) -> bool {
    let name = match h.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => h.rsplit_once(':').map_or(h, |(n, _)| n),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// An `Origin`'s `host[:port]` (its scheme dropped).
fn origin_host(origin: &str) -> &str {
    let o = origin.trim();
    o.split_once("://").map_or(o, |(_, rest)| rest)
}

/// A loopback UI answers only requests whose `Host` (and `Origin`, when a browser sends one)
/// is a local name: a foreign name is another site's page reaching it through its browser.
fn foreign_host(shared: &Shared, request: &Request) -> Option<Reply> {
    if !shared.loopback {
        return None;
    }
    let host = header(request, "Host");
    let origin = header(request, "Origin").map(|o| origin_host(&o).to_string());
    let bad = [host, origin]
        .into_iter()
        .flatten()
        .find(|h| !local_name(h))?;
    Some(Reply::error(
        403,
        format!(
            "this UI listens on a loopback address and answers only to local names, not `{bad}`"
        ),
    ))
}

/// A browser says a request comes from a page of another site: refused, reads included (the
/// UI's own page is same-origin).
fn cross_site(request: &Request) -> Option<Reply> {
    let site = request.header("Sec-Fetch-Site")?;
    site.trim().eq_ignore_ascii_case("cross-site").then(|| {
        Reply::error(
            403,
            "a page of another site cannot read or operate this UI (Sec-Fetch-Site: cross-site)",
        )
    })
}

/// The token a request carries: `Authorization: Bearer TOKEN`, or `token=` in the query
/// (for JSONP and links, which cannot send a header).
fn given_token(request: &Request) -> Option<String> {
    request
        .header("Authorization")
        .and_then(|v| {
            v.trim()
                .strip_prefix("Bearer ")
                .map(|t| t.trim().to_string())
        })
        .or_else(|| query_value(split_url(&request.target).1, "token"))
}

/// Whether the request carries this UI's token (false when it has none).
fn has_token(shared: &Shared, request: &Request) -> bool {
    match (&shared.token, given_token(request)) {
        (Some(token), Some(given)) => same_secret(&given, token),
        _ => false,
    }
}

/// The page's own files: the same for everyone, no figure of any topology in them.
fn is_page_file(request: &Request) -> bool {
    let (segments, _) = split_url(&request.target);
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    request.method == "GET"
        && matches!(
            segs.as_slice(),
            [] | ["index.html"] | ["app.js"] | ["style.css"]
        )
}

/// The token check of a UI reachable from other hosts: every request but the page's files.
fn guarded(shared: &Shared, request: &Request) -> Result<(), Reply> {
    if shared.loopback || is_page_file(request) || has_token(shared, request) {
        return Ok(());
    }
    Err(Reply::error(
        403,
        "this UI is reachable from other hosts and needs its token: `Authorization: Bearer \
         TOKEN` (ui.token or storm.cluster.secret)",
    ))
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

fn route(shared: &Shared, request: &Request) -> Reply {
    let (segments, query) = split_url(&request.target);
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    match (request.method.as_str(), segs.as_slice()) {
        ("GET", []) | ("GET", ["index.html"]) => {
            Reply::text("text/html; charset=utf-8", INDEX_HTML)
        }
        ("GET", ["app.js"]) => Reply::text("text/javascript; charset=utf-8", APP_JS),
        ("GET", ["style.css"]) => Reply::text("text/css; charset=utf-8", STYLE_CSS),
        ("GET", ["metrics"]) => {
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
        ("GET", ["api", "v1", "topology", id, "tap", component]) => {
            let tops = shared.source.topologies();
            match find(&tops, id) {
                Ok(t) => tap(shared, &t.id, component, query),
                Err(r) => r,
            }
        }
        ("GET", ["api", "v1", "topology", _, op, ..])
            if matches!(*op, "activate" | "deactivate" | "kill" | "rebalance") =>
        {
            Reply::error(
                405,
                format!("`{op}` is an operation: a POST request, not a GET"),
            )
        }
        ("GET", ["api", "v1", rest @ ..]) => {
            let reply = get_api(shared, rest, query);
            match jsonp_callback(query) {
                Some(_) if !has_token(shared, request) => Reply::error(
                    403,
                    "JSONP (`callback=`) lets any page read this UI, so it is answered only \
                     with the UI's token in the query (`token=`); without a token set, it is off",
                ),
                Some(callback) => reply.wrapped_in(callback),
                None => reply,
            }
        }
        ("POST", ["api", "v1", "topology", id, "logconfig"]) => {
            post_log_config(shared, request, id)
        }
        ("POST", ["api", "v1", "topology", id, op @ ..]) => {
            let id = id.to_string();
            let op: Vec<String> = op.iter().map(|s| s.to_string()).collect();
            post_api(shared, request, &id, &op)
        }
        ("GET" | "POST", _) => Reply::error(404, format!("nothing at {}", request.target)),
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
            let hint = crate::syntax::suggest::suggest(id, names)
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            let known = match ids.is_empty() {
                true => "none is running".to_string(),
                false => format!("known: {}", ids.join(", ")),
            };
            Reply::error(404, format!("no topology `{id}` ({known}){hint}"))
        })
}

/// `t` over the window of `len` (all time when `None`), the samples kept up to date first;
/// and the seconds the window covers.
fn windowed(shared: &Shared, t: &TopologyView, len: Option<Duration>) -> (TopologyView, u64) {
    let now = Instant::now();
    let mut windows = lock(&shared.windows);
    windows.record(std::slice::from_ref(t), now);
    match len {
        None => (t.clone(), t.uptime.as_secs()),
        Some(len) => windows.over(t, len, now),
    }
}

fn get_api(shared: &Shared, path: &[&str], query: &str) -> Reply {
    let sys = wants_sys(query);
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
        ["supervisor"] => {
            let id = query_value(query, "id");
            let host = query_value(query, "host");
            if id.is_none() && host.is_none() {
                return Reply::error(400, "name the supervisor: `?id=ID` or `?host=HOST`");
            }
            let sups: Vec<_> = shared
                .source
                .supervisors()
                .into_iter()
                .filter(|s| id.as_ref().is_none_or(|i| &s.id == i))
                .filter(|s| host.as_ref().is_none_or(|h| &s.host == h))
                .collect();
            let tops = shared.source.topologies();
            Reply::json(200, &api::supervisor(&sups, &tops))
        }
        ["nimbus", "summary"] => Reply::json(200, &api::nimbus_summary(&shared.source.nimbuses())),
        ["history", "summary"] => {
            Reply::json(200, &api::history_summary(&shared.source.topologies()))
        }
        ["topology", "summary"] => {
            Reply::json(200, &api::topology_summary(&shared.source.topologies()))
        }
        ["log"] => worker_log(shared, query),
        ["topology", id, rest @ ..] => {
            let tops = shared.source.topologies();
            let t = match find(&tops, id) {
                Ok(t) => t,
                Err(r) => return r,
            };
            topology_api(shared, t, rest, query, sys)
        }
        _ => Reply::error(404, format!("no API endpoint /api/v1/{}", path.join("/"))),
    }
}

/// The pages of one topology, over the window `?window=` names (all time by default).
fn topology_api(shared: &Shared, t: &TopologyView, rest: &[&str], query: &str, sys: bool) -> Reply {
    let now = Instant::now();
    let name = query_value(query, "window").unwrap_or_else(|| ":all-time".into());
    let len = match windows::parse(&name) {
        Ok(len) => len,
        Err(e) => return Reply::error(400, e),
    };
    let (view, _) = windowed(shared, t, len);
    match rest {
        [] => {
            let stats = windows::WINDOWS
                .iter()
                .map(|w| {
                    let (v, covered) = windowed(shared, t, windows::parse(w).ok().flatten());
                    api::topology_stats(&v, w, covered, sys)
                })
                .collect();
            let mut capacity = lock(&shared.window);
            Reply::json(
                200,
                &api::topology((&view, t), (&name, stats), sys, &mut capacity, now),
            )
        }
        ["visualization"] => {
            let mut capacity = lock(&shared.window);
            Reply::json(200, &api::visualization(t, sys, &mut capacity, now))
        }
        ["metrics"] => {
            let component = query_value(query, "component_id");
            Reply::json(200, &api::metrics(&view, &name, component.as_deref(), sys))
        }
        ["logconfig"] => log_config(shared, &t.id),
        ["lag"] => Reply::json(200, &api::lag(t)),
        ["component", c] => match view.component(c) {
            Some(comp) => {
                let mut capacity = lock(&shared.window);
                let both = (&view, t);
                Reply::json(200, &api::component(both, comp, &name, &mut capacity, now))
            }
            None => {
                let ids: Vec<&str> = t.components.iter().map(|c| c.id.as_str()).collect();
                let hint = crate::syntax::suggest::suggest(c, ids.iter().copied())
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

/// `/topology/:id/logconfig`: the log levels set for the topology and in effect (Storm's
/// `namedLoggerLevels`); `applied`: they change what the topology's processes log.
fn log_config(shared: &Shared, id: &str) -> Reply {
    match shared.source.log_config(id) {
        Ok(c) => Reply::json(200, &log_config_json(id, &c)),
        Err(e) => Reply::error(500, format!("{e:#}")),
    }
}

fn log_config_json(id: &str, c: &crate::log_config::LogConfig) -> Value {
    let mut v = serde_json::to_value(c).unwrap_or_else(|_| json!({}));
    if let Some(o) = v.as_object_mut() {
        o.insert("topologyId".into(), id.into());
        o.insert("applied".into(), true.into());
    }
    v
}

/// Storm's logviewer page `/api/v1/log?file=TOPOLOGY-ID/PORT/worker.log&start=&length=`:
/// `length` bytes (default 51200) from byte `start` (default: the end less `length`), as
/// plain text. Any other file is refused (400).
fn worker_log(shared: &Shared, query: &str) -> Reply {
    use crate::cluster::worker_logs::LogError;
    let Some(file) = query_value(query, "file") else {
        return Reply::error(400, "name the log: `?file=TOPOLOGY-ID/PORT/worker.log`");
    };
    let number = |key: &str| match query_value(query, key) {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => v
            .parse::<u64>()
            .map(Some)
            .map_err(|_| Reply::error(400, format!("{key} `{v}` is not a number of bytes"))),
    };
    let (start, length) = match (number("start"), number("length")) {
        (Ok(s), Ok(l)) => (s, l),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    match shared.source.worker_log(&file, start, length) {
        Ok(chunk) => Reply {
            status: 200,
            content_type: "text/plain; charset=utf-8",
            body: chunk.text,
            lines: None,
        },
        Err(e) => match e.downcast_ref::<LogError>() {
            Some(LogError::Refused(m)) => Reply::error(400, m.clone()),
            Some(LogError::NotFound(m)) => Reply::error(404, m.clone()),
            None => Reply::error(500, format!("{e:#}")),
        },
    }
}

/// Whether a POST may change things: the token when one is set; from a browser, a page of
/// this UI itself (its `Origin` is this `Host`; `Sec-Fetch-Site` same-origin). A page of
/// another site cannot forge either, so no Content-Type is required: operators' `curl -X
/// POST` and Storm's form posts work as with Storm.
fn authorized(shared: &Shared, request: &Request) -> Result<(), Reply> {
    if let Some(origin) = request.header("Origin") {
        let host = request.header("Host").unwrap_or_default();
        if !origin_host(origin).eq_ignore_ascii_case(host.trim()) {
            return Err(Reply::error(
                403,
                format!("a POST from a page of `{origin}` cannot operate this UI at `{host}`"),
            ));
        }
    }
    let fetch_site = request.header("Sec-Fetch-Site").map(str::trim);
    if fetch_site
        .is_some_and(|s| !s.eq_ignore_ascii_case("same-origin") && !s.eq_ignore_ascii_case("none"))
    {
        return Err(Reply::error(
            403,
            "a POST from a page of another origin cannot operate this UI",
        ));
    }
    if shared.token.is_some() && !has_token(shared, request) {
        return Err(Reply::error(
            403,
            "this UI needs its token: `Authorization: Bearer TOKEN` (ui.token or storm.cluster.secret)",
        ));
    }
    Ok(())
}

/// `POST /topology/:id/logconfig` with Storm's body: `{"namedLoggerLevels": {LOGGER:
/// {"target_level": LEVEL, "timeout": SECS}}}`; a logger without a level is reset. Handed to
/// [`Source::change_log_config`]; the answer is the levels now in effect.
fn post_log_config(shared: &Shared, request: &Request, id: &str) -> Reply {
    if let Err(r) = authorized(shared, request) {
        return r;
    }
    let tops = shared.source.topologies();
    let id = match find(&tops, id) {
        Ok(t) => t.id.clone(),
        Err(r) => return r,
    };
    let body: Value = match serde_json::from_slice(&request.body) {
        Ok(v) => v,
        Err(e) => return Reply::error(400, format!("the body is not JSON: {e}")),
    };
    let changes = match crate::log_config::changes_of_body(&body) {
        Ok(c) => c,
        Err(e) => return Reply::error(400, e),
    };
    match shared.source.change_log_config(&id, &changes) {
        Ok(c) => Reply::json(200, &log_config_json(&id, &c)),
        Err(e) => Reply::error(500, format!("{e:#}")),
    }
}

/// A rebalance's options from its body: JSON (Storm's documented body), or a form post.
fn rebalance_body(
    request: &Request,
    body: &str,
) -> Result<crate::model::rebalance::Rebalance, String> {
    let form = request.header("Content-Type").is_some_and(|t| {
        t.trim()
            .to_ascii_lowercase()
            .starts_with("application/x-www-form-urlencoded")
    });
    if !form {
        return api::rebalance_options(body);
    }
    let pairs: Vec<(String, String)> = body
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let decode = |s: &str| percent_decode(&s.replace('+', " "));
            (decode(k), decode(v))
        })
        .collect();
    api::rebalance_form(&pairs)
}

/// Compare two secrets through their digests, so the time taken does not tell how much of
/// a guess was right.
fn same_secret(a: &str, b: &str) -> bool {
    use sha2::{Digest, Sha256};
    Sha256::digest(a.as_bytes()) == Sha256::digest(b.as_bytes())
}

fn post_api(shared: &Shared, request: &Request, id: &str, op: &[String]) -> Reply {
    if let Err(r) = authorized(shared, request) {
        return r;
    }
    let Ok(body) = std::str::from_utf8(&request.body) else {
        return Reply::error(400, "the request body is not UTF-8");
    };
    let wait = |s: &str| {
        let secs = s.parse::<u64>().map_err(|_| {
            Reply::error(400, format!("wait-time `{s}` is not a number of seconds"))
        })?;
        crate::model::rebalance::check_wait(secs).map_err(|e| Reply::error(400, e))?;
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
        ["rebalance", w] => match (wait(w), rebalance_body(request, body)) {
            (Ok(wait_secs), Ok(options)) => Action::Rebalance { wait_secs, options },
            (Err(r), _) => return r,
            (_, Err(e)) => return Reply::error(400, format!("rebalanceOptions: {e}")),
        },
        _ => {
            let known = ["activate", "deactivate", "kill", "rebalance"];
            let first = ops.first().copied().unwrap_or("");
            let hint = crate::syntax::suggest::suggest(first, known.iter().copied())
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
        Err(e) if e.is::<crate::model::rebalance::Invalid>() => Reply::error(400, format!("{e:#}")),
        Err(e) if e.is::<crate::model::rebalance::Unsupported>() => {
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
