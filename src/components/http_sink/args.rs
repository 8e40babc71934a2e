//! The `http` sink's arguments, read and checked (by `storm validate` and at build): `url`,
//! `method`, `format`, `batch`, `concurrency`, `headers`, `token`, `retry`, `timeout`,
//! `idempotency_header`. `token` and header values may name environment variables as
//! `${NAME}`, read when the sink starts; neither is ever printed.

use crate::components::sink_args::{self as a, ArgError, Args};
use std::time::Duration;

pub(crate) const FORMATS: &[&str] = &["ndjson", "json", "csv"];
const METHODS: &[&str] = &["POST", "PUT", "PATCH"];
const BATCH_KEYS: &[&str] = &["max_records", "max_bytes", "timeout"];
const RETRY_KEYS: &[&str] = &["attempts", "initial", "max"];

/// A request body's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFormat {
    /// One JSON object a line.
    Ndjson,
    /// One JSON array of objects.
    Json,
    /// CSV with a header row.
    Csv,
}

impl BodyFormat {
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            BodyFormat::Ndjson => "application/x-ndjson",
            BodyFormat::Json => "application/json",
            BodyFormat::Csv => "text/csv",
        }
    }
}

/// When a batch is sent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Batch {
    pub(crate) max_records: usize,
    pub(crate) max_bytes: usize,
    pub(crate) timeout: Duration,
}

/// Retries of a batch the server did not take (5xx, 429, 408, no answer).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Retry {
    /// Attempts in all (the first included).
    pub(crate) attempts: u32,
    pub(crate) initial: Duration,
    pub(crate) max: Duration,
}

/// The sink's arguments, checked (secrets still as written: `${NAME}` not yet read).
#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) url: String,
    pub(crate) method: String,
    pub(crate) format: BodyFormat,
    pub(crate) batch: Batch,
    pub(crate) concurrency: usize,
    headers: Vec<(String, String)>,
    token: Option<String>,
    pub(crate) retry: Retry,
    pub(crate) timeout: Duration,
    pub(crate) idempotency_header: String,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values and the token may be secrets: never shown.
        f.debug_struct("Config")
            .field("url", &redact_url(&self.url))
            .field("method", &self.method)
            .field(
                "headers",
                &self.headers.iter().map(|h| &h.0).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Config {
    pub(crate) fn from_args(args: &Args) -> Result<Config, ArgError> {
        let url = a::text(args, "url")?.ok_or_else(|| {
            ArgError::new(
                "url",
                "the `http` sink needs `url` (`http://host:port/path`)",
            )
        })?;
        check_url(url).map_err(|e| ArgError::new("url", e))?;
        let method = match a::text(args, "method")? {
            None => "POST".to_string(),
            Some(m) if METHODS.contains(&m.to_ascii_uppercase().as_str()) => m.to_ascii_uppercase(),
            Some(m) => {
                return Err(ArgError::new(
                    "method",
                    format!("is one of {}, not `{m}`", METHODS.join(", ")),
                ))
            }
        };
        let format = match a::one_of(args, "format", FORMATS)? {
            Some("json") => BodyFormat::Json,
            Some("csv") => BodyFormat::Csv,
            _ => BodyFormat::Ndjson,
        };
        let concurrency = match args.get("concurrency") {
            None => 4,
            Some(v) => match v.as_u64() {
                Some(n @ 1..=1024) => n as usize,
                _ => {
                    return Err(ArgError::new(
                        "concurrency",
                        format!("must be a whole number from 1 to 1024, not {v}"),
                    ))
                }
            },
        };
        let idempotency_header = a::text(args, "idempotency_header")?
            .unwrap_or("Idempotency-Key")
            .to_string();
        check_header_name(&idempotency_header)
            .map_err(|e| ArgError::new("idempotency_header", e))?;
        let timeout = a::duration_in(Some(args), "", "timeout")
            .map_err(|e| ArgError::new("timeout", e.message))?
            .unwrap_or(Duration::from_secs(30));
        Ok(Config {
            url: url.to_string(),
            method,
            format,
            batch: batch(args)?,
            concurrency,
            headers: headers(args)?,
            token: a::text(args, "token")?.map(str::to_string),
            retry: retry(args)?,
            timeout,
            idempotency_header,
        })
    }

    /// The headers sent with every request, `${NAME}`s read from the environment.
    pub(crate) fn resolved_headers(&self) -> Result<Vec<(String, String)>, String> {
        let mut out = Vec::new();
        for (k, v) in &self.headers {
            let value = expand_env(v).map_err(|e| format!("header `{k}`: {e}"))?;
            if value.contains(['\r', '\n', '\0']) {
                return Err(format!("header `{k}`: its value holds a line break"));
            }
            out.push((k.clone(), value));
        }
        if let Some(t) = &self.token {
            let t = expand_env(t).map_err(|e| format!("`token`: {e}"))?;
            if t.contains(['\r', '\n', '\0']) {
                return Err("`token`: its value holds a line break".into());
            }
            out.push(("Authorization".into(), format!("Bearer {t}")));
        }
        Ok(out)
    }
}

fn batch(args: &Args) -> Result<Batch, ArgError> {
    let m = a::nested(args, "batch", BATCH_KEYS)?;
    Ok(Batch {
        max_records: a::count_in(m, "batch", "max_records")?.unwrap_or(1000) as usize,
        max_bytes: a::size_in(m, "batch", "max_bytes")?.unwrap_or(1 << 20) as usize,
        timeout: a::duration_in(m, "batch", "timeout")?.unwrap_or(Duration::from_secs(1)),
    })
}

fn retry(args: &Args) -> Result<Retry, ArgError> {
    let m = a::nested(args, "retry", RETRY_KEYS)?;
    Ok(Retry {
        attempts: a::count_in(m, "retry", "attempts")?
            .unwrap_or(10)
            .min(u32::MAX as u64) as u32,
        initial: a::duration_in(m, "retry", "initial")?.unwrap_or(Duration::from_millis(100)),
        max: a::duration_in(m, "retry", "max")?.unwrap_or(Duration::from_secs(10)),
    })
}

fn headers(args: &Args) -> Result<Vec<(String, String)>, ArgError> {
    let Some(v) = args.get("headers") else {
        return Ok(Vec::new());
    };
    let serde_json::Value::Object(map) = v else {
        return Err(ArgError::new(
            "headers",
            "must be a map of header names to values",
        ));
    };
    map.iter()
        .map(|(k, v)| {
            check_header_name(k).map_err(|e| ArgError::new(format!("headers.{k}"), e))?;
            let value = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                serde_json::Value::Bool(b) => b.to_string(),
                _ => return Err(ArgError::new(format!("headers.{k}"), "must be a string")),
            };
            if value.contains(['\r', '\n']) {
                return Err(ArgError::new(
                    format!("headers.{k}"),
                    "must not hold a line break",
                ));
            }
            Ok((k.clone(), value))
        })
        .collect()
}

fn check_header_name(name: &str) -> Result<(), String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!("`{name}` is not a header name"));
    }
    Ok(())
}

/// `http://host[:port]/path` (https needs TLS, which this build leaves out).
fn check_url(url: &str) -> Result<(), String> {
    let shown = redact_url(url);
    let rest = if let Some(r) = url.strip_prefix("http://") {
        r
    } else if url.starts_with("https://") {
        return Err(format!("`{shown}`: https is not built into this storm (no TLS library); send to a local TLS proxy over http"));
    } else {
        return Err(format!(
            "`{shown}` is not an http URL (`http://host:port/path`)"
        ));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let (host, port) = match host_port.rsplit_once(':').filter(|(_, p)| !p.contains(']')) {
        Some((h, p)) => (h, Some(p)),
        None => (host_port, None),
    };
    if host.is_empty() || host.contains([' ', '\t']) {
        return Err(format!("`{shown}` has no host"));
    }
    if let Some(p) = port {
        if p.parse::<u16>().map_or(true, |p| p == 0) {
            return Err(format!("`{shown}`: `{p}` is not a port (1-65535)"));
        }
    }
    if url.contains(char::is_whitespace) {
        return Err(format!("`{shown}` holds spaces"));
    }
    ureq::http::Uri::try_from(url).map_err(|e| format!("`{shown}`: {e}"))?;
    Ok(())
}

/// `url` with any password in it replaced by `***`.
pub(crate) fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => {
            let user = rest[..at].split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{}", &rest[at + 1..])
        }
        None => url.to_string(),
    }
}

/// `text` with each `${NAME}` replaced by the environment variable's value.
fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after.find('}').ok_or("a `${` without its `}`")?;
        let name = &after[..end];
        let value = std::env::var(name)
            .map_err(|_| format!("the environment variable `{name}` is not set"))?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(j: serde_json::Value) -> Result<Config, ArgError> {
        Config::from_args(j.as_object().expect("an object"))
    }

    #[test]
    fn urls_are_checked_and_redacted() {
        assert!(check_url("http://127.0.0.1:8080/in").is_ok());
        assert!(check_url("http://example.com").is_ok());
        assert!(check_url("ftp://x/y").is_err());
        assert!(check_url("http://:80/").is_err());
        assert!(check_url("http://h:99999/").is_err());
        assert!(check_url("https://h/").is_err());
        assert_eq!(redact_url("http://u:secret@h:1/p"), "http://u:***@h:1/p");
        let e = check_url("ftp://u:secret@h/").err().unwrap_or_default();
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn defaults_errors_and_secrets() {
        let c = config(json!({"url": "http://h/x", "token": "${STORM_TEST_NO_SUCH_VAR}"}))
            .expect("config");
        assert_eq!(c.method, "POST");
        assert_eq!(c.format, BodyFormat::Ndjson);
        assert_eq!(c.batch.max_records, 1000);
        let e = c.resolved_headers().err().unwrap_or_default();
        assert!(e.contains("STORM_TEST_NO_SUCH_VAR"), "{e}");
        assert!(!format!("{c:?}").contains("STORM_TEST"));
        let arg = |j| config(j).err().map(|e| e.arg);
        assert_eq!(
            arg(json!({"url": "http://h/", "batch": {"max_record": 3}})),
            Some("batch.max_record".into())
        );
        assert_eq!(
            arg(json!({"url": "http://h/", "concurrency": 0})),
            Some("concurrency".into())
        );
        assert_eq!(
            arg(json!({"url": "http://h/", "method": "GET"})),
            Some("method".into())
        );
        assert_eq!(
            arg(json!({"url": "http://h/", "headers": {"a b": "x"}})),
            Some("headers.a b".into())
        );
        assert_eq!(
            arg(json!({"url": "http://h/", "format": "xml"})),
            Some("format".into())
        );
    }

    #[test]
    fn environment_variables_expand() {
        std::env::set_var("STORM_HTTP_SINK_TEST_TOKEN", "s3cret");
        assert_eq!(
            expand_env("Bearer ${STORM_HTTP_SINK_TEST_TOKEN}!"),
            Ok("Bearer s3cret!".into())
        );
        assert!(expand_env("${OPEN").is_err());
    }
}
