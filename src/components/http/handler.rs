//! The `http` spout's answers, on the server's answer threads: the health path; then a POST to
//! `path` with the right bearer token has its body read into records (with the source
//! fields asked for) and queued for the spout. 200 once queued, or with `ack: true` later,
//! from the spout; 429 when the queue is full and 503 while the spout is not taking records,
//! both with `Retry-After`.

use super::inbox::{Batch, Inbox, Refused};
use super::record::{self, Layout};
use crate::components::parse::spec::Spec;
use crate::components::Stopping;
use crate::net::http::{Body, Handler, Request, Response};
use crate::tuple::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The fields of a request, besides its records: the client's address and the headers.
const REMOTE_FIELD: &str = "http_remote";
const HEADERS_FIELD: &str = "http_headers";
const HEADER_PREFIX: &str = "http_header_";

/// Whether `name` is a field of the request rather than of its records.
pub(crate) fn is_source_field(name: &str) -> bool {
    name == REMOTE_FIELD
        || name == HEADERS_FIELD
        || name
            .strip_prefix(HEADER_PREFIX)
            .is_some_and(|h| !h.is_empty())
}

/// A header name as a field name's tail: lower case, `-` as `_` (`X-Request-Id` →
/// `x_request_id`).
fn header_key(name: &str) -> String {
    name.to_ascii_lowercase().replace('-', "_")
}

/// What answers the spout's requests.
pub(crate) struct Ingest {
    pub(crate) path: String,
    pub(crate) health_path: String,
    pub(crate) token: Option<String>,
    pub(crate) ack: bool,
    /// The header that names each request once (`idempotency_header`): required then.
    pub(crate) idempotency_header: Option<String>,
    pub(crate) spec: Option<Spec>,
    pub(crate) layout: Layout,
    pub(crate) max_record: usize,
    pub(crate) inbox: Arc<Inbox>,
    pub(crate) stopping: Stopping,
}

fn json_answer(status: u16, body: serde_json::Value) -> Response {
    Response {
        status,
        content_type: "application/json".into(),
        body: Body::Full(format!("{body}\n").into_bytes()),
        headers: Vec::new(),
    }
}

/// An error answer: `{"error": …}`.
pub(crate) fn refusal(status: u16, why: &str) -> Response {
    let mut r = json_answer(status, serde_json::json!({ "error": why }));
    if matches!(status, 429 | 503) {
        r.headers.push(("Retry-After", "1".into()));
    }
    r
}

/// The answer once records are in: how many were taken and how many could not be read.
pub(crate) fn accepted(accepted: usize, rejected: usize) -> Response {
    json_answer(
        200,
        serde_json::json!({ "accepted": accepted, "rejected": rejected }),
    )
}

/// Equal without telling by its timing how much of a guess was right.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    a.len() == b.len() && diff == 0
}

impl Ingest {
    fn authorized(&self, request: &Request) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let given = request
            .header("Authorization")
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .unwrap_or("");
        same_secret(given.trim().as_bytes(), token.as_bytes())
    }

    /// The values of the source fields the layout asks for.
    fn source_values(&self, request: &Request) -> Vec<Value> {
        self.layout
            .source_fields()
            .iter()
            .map(|f| match f.as_str() {
                REMOTE_FIELD => Value::str(&request.peer.to_string()),
                HEADERS_FIELD => {
                    let map: BTreeMap<String, Value> = request
                        .headers
                        .iter()
                        .map(|(n, v)| (n.to_ascii_lowercase(), Value::str(v)))
                        .collect();
                    Value::Map(Box::new(map))
                }
                other => {
                    let key = other.strip_prefix(HEADER_PREFIX).unwrap_or(other);
                    request
                        .headers
                        .iter()
                        .find(|(n, _)| header_key(n) == key)
                        .map_or(Value::Null, |(_, v)| Value::str(v))
                }
            })
            .collect()
    }

    /// The request's idempotency key, when the spout asks for one (a 400 without it).
    fn key_of(&self, request: &Request) -> Result<Option<String>, Response> {
        let Some(h) = &self.idempotency_header else {
            return Ok(None);
        };
        match request.header(h).map(str::trim).filter(|k| !k.is_empty()) {
            Some(k) => Ok(Some(k.to_string())),
            None => Err(refusal(
                400,
                &format!("send a `{h}` header: each request is taken once by its key"),
            )),
        }
    }

    /// A request to `path`: read, queue, answer.
    fn ingest(&self, request: Request) -> Response {
        if !matches!(request.method.as_str(), "POST" | "PUT") {
            let mut r = refusal(405, "send records with POST");
            r.headers.push(("Allow", "POST, PUT".into()));
            return r;
        }
        if !self.authorized(&request) {
            let mut r = refusal(401, "a valid bearer token is needed");
            r.headers.push(("WWW-Authenticate", "Bearer".into()));
            return r;
        }
        let encoded = request
            .header("Content-Encoding")
            .is_some_and(|e| !e.eq_ignore_ascii_case("identity"));
        if encoded {
            return refusal(415, "send the body without a Content-Encoding");
        }
        if self.stopping.now() {
            return refusal(503, "the topology is stopping");
        }
        let key = match self.key_of(&request) {
            Ok(key) => key,
            Err(refused) => return refused,
        };
        let text = String::from_utf8_lossy(&request.body);
        let read = match record::read_text(self.spec.as_ref(), &text, self.max_record) {
            Ok(read) => read,
            Err(why) => return refusal(400, &why),
        };
        let source = self.source_values(&request);
        let (n, rejected) = (read.records.len(), read.bad.len());
        let first_bad = read.bad.first().map(|(_, why)| why.clone());
        let records = read
            .records
            .into_iter()
            .map(|r| self.layout.fill(r, &source))
            .collect();
        let (reply, later) = match self.ack && n > 0 {
            true => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                (Some(tx), Some(rx))
            }
            false => (None, None),
        };
        let batch = Batch {
            records,
            bad: read.bad,
            reply,
            key,
        };
        if n + rejected > 0 {
            match self.inbox.push(batch) {
                Ok(()) => {}
                Err((Refused::Full, _)) => {
                    return refusal(429, "the topology is behind: retry later")
                }
                Err((Refused::Inactive, _)) => {
                    return refusal(503, "the spout is not taking records now")
                }
            }
        }
        if let (0, Some(why)) = (n, first_bad) {
            return refusal(400, &format!("no record could be read: {why}"));
        }
        match later {
            Some(rx) => Response {
                status: 200,
                content_type: String::new(),
                body: Body::Later(rx),
                headers: Vec::new(),
            },
            None => accepted(n, rejected),
        }
    }
}

impl Handler for Ingest {
    fn handle(&self, request: Request) -> Response {
        let path = request.target.split('?').next().unwrap_or_default();
        if path == self.health_path {
            return match self.inbox.healthy() && !self.stopping.now() {
                true => json_answer(200, serde_json::json!({"status": "ok"})),
                false => refusal(503, "the spout is behind or not taking records"),
            };
        }
        if path != self.path {
            return refusal(404, &format!("records go to {}", self.path));
        }
        self.ingest(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_are_lower_case_with_underscores() {
        assert_eq!(header_key("X-Request-Id"), "x_request_id");
        assert!(is_source_field("http_header_x_request_id"));
        assert!(is_source_field("http_remote"));
        assert!(!is_source_field("http_header_"));
        assert!(!is_source_field("service"));
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
        assert!(!same_secret(b"", b"a"));
    }
}
