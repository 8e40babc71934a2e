//! The connection to Redis: the URL (the `url` argument, else the `redis.url` config key, else
//! `$REDIS_URL`, else `redis://127.0.0.1:6379`), shown only with its password hidden; a first
//! connection that must answer at start (a clear error naming the server), and, when a
//! connection is lost, reconnection with back-off for a bounded time while tuples wait.

use std::time::{Duration, Instant};

/// The config key a topology or `storm.yaml` may give the URL under.
const URL_KEY: &str = "redis.url";
/// The environment variable read when neither the argument nor the key is set.
const URL_ENV: &str = "REDIS_URL";
const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// How long the start waits for the server to answer.
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a lost connection is retried before the waiting tuples fail (or, with exactly-once
/// writes, the run ends).
const RETRY_FOR: Duration = Duration::from_secs(15);
/// How long one command may take to answer before the connection counts as lost.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

type Args = serde_json::Map<String, serde_json::Value>;

/// The URL to use: the argument, the config key, the environment, or the default.
pub(crate) fn resolve_url(args: &Args, config: Option<&crate::config::Config>) -> String {
    let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).map(String::from);
    text(args.get("url"))
        .or_else(|| config.and_then(|c| text(c.get(URL_KEY))))
        .or_else(|| std::env::var(URL_ENV).ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| DEFAULT_URL.to_string())
}

/// `url` with its password (and a user's password) replaced by `<hidden>`, for messages.
pub(crate) fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let rest = &url[scheme_end..];
    let host_start = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..host_start].rfind('@') else {
        return url.to_string();
    };
    let user = &rest[..at];
    let Some((name, _)) = user.split_once(':') else {
        return url.to_string(); // a user name alone: nothing secret
    };
    let hidden = format!("{name}:<hidden>");
    format!("{}{hidden}{}", &url[..scheme_end], &rest[at..])
}

/// The password in `url`, if any (to take it out of the client's error texts).
fn password(url: &str) -> Option<String> {
    let rest = &url[url.find("://")? + 3..];
    let host_start = rest.find('/').unwrap_or(rest.len());
    let at = rest[..host_start].rfind('@')?;
    let user = &rest[..at];
    let pw = user.split_once(':')?.1;
    (!pw.is_empty()).then(|| pw.to_string())
}

/// A connection to one server, remade when it is lost.
pub(crate) struct Conn {
    url: String,
    client: redis::Client,
    con: Option<redis::Connection>,
}

impl Conn {
    /// Parse `url` (no connection yet).
    pub(crate) fn new(url: &str) -> Result<Conn, String> {
        let client = redis::Client::open(url)
            .map_err(|e| format!("`{}` is no Redis URL: {}", redact(url), clean(url, &e)))?;
        Ok(Conn {
            url: url.to_string(),
            client,
            con: None,
        })
    }

    /// The URL with its password hidden.
    fn shown(&self) -> String {
        redact(&self.url)
    }

    /// Connect now and check the server answers (`PING`): an error says which server did not.
    pub(crate) fn open(&mut self, wait: Duration) -> Result<(), String> {
        self.con = None;
        let mut con = self
            .client
            .get_connection_with_timeout(wait)
            .map_err(|e| self.unreachable(&e))?;
        let _ = con.set_read_timeout(Some(IO_TIMEOUT));
        let _ = con.set_write_timeout(Some(IO_TIMEOUT));
        redis::cmd("PING")
            .query::<()>(&mut con)
            .map_err(|e| self.unreachable(&e))?;
        self.con = Some(con);
        Ok(())
    }

    fn unreachable(&self, e: &redis::RedisError) -> String {
        format!(
            "Redis at {} does not answer: {}",
            self.shown(),
            clean(&self.url, e)
        )
    }

    /// Run `f` on the connection; a lost connection is made again with back-off (from 50 ms
    /// to 2 s) for up to `RETRY_FOR`, then `f` runs again. A server's error answer is
    /// returned at once. `what` names the work in the log.
    pub(crate) fn with_retry<T>(
        &mut self,
        what: &str,
        mut f: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, ConnError> {
        let deadline = Instant::now() + RETRY_FOR;
        let mut backoff = Duration::from_millis(50);
        let mut last = String::new();
        loop {
            if self.con.is_none() {
                if let Err(e) = self.open(START_TIMEOUT.min(RETRY_FOR)) {
                    last = e;
                }
            }
            if let Some(con) = self.con.as_mut() {
                match f(con) {
                    Ok(v) => return Ok(v),
                    Err(e) if is_lost(&e) => {
                        last = self.unreachable(&e);
                        self.con = None;
                    }
                    Err(e) => return Err(ConnError::Server(clean(&self.url, &e))),
                }
            }
            if Instant::now() + backoff > deadline {
                return Err(ConnError::Lost(format!(
                    "{what}: gave up after {}s: {last}",
                    RETRY_FOR.as_secs()
                )));
            }
            tracing::warn!("{what}: {last}; retrying in {backoff:?}");
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }
}

/// What went wrong talking to Redis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ConnError {
    /// The server could not be reached within the retry time.
    Lost(String),
    /// The server answered with an error (a wrong type, a bad argument).
    Server(String),
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Lost(m) | ConnError::Server(m) => f.write_str(m),
        }
    }
}

/// Whether the error means the connection is gone (rather than an answer from the server).
fn is_lost(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_timeout()
}

/// The client's error text with the password taken out.
fn clean(url: &str, e: &redis::RedisError) -> String {
    let text = e.to_string();
    match password(url) {
        Some(pw) => text.replace(&pw, "<hidden>"),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(
            redact("redis://:s3cret@localhost:6379/0"),
            "redis://:<hidden>@localhost:6379/0"
        );
        assert_eq!(redact("redis://ann:s3cret@h:1"), "redis://ann:<hidden>@h:1");
        assert_eq!(redact("redis://h:1/2"), "redis://h:1/2");
        assert_eq!(password("redis://ann:pw@h:1").as_deref(), Some("pw"));
        assert_eq!(password("redis://h:1"), None);
    }

    #[test]
    fn the_argument_comes_before_the_config_key() {
        let args: Args = serde_json::from_str(r#"{"url": "redis://a:1"}"#).expect("json");
        assert_eq!(resolve_url(&args, None), "redis://a:1");
    }
}
