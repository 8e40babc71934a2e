//! The `http` spout's arguments, read and checked once for `storm validate` and the run alike:
//! the address (`listen`), `path`, the bearer `token` (written out or named from the
//! environment; never shown), sizes (`max_body`) and the bounds of the queue in front of the
//! topology. Also the address and size readers the `socket` spout shares.

use serde_json::Value as Json;

type Args = serde_json::Map<String, Json>;

/// A problem with one argument: its name (where validation locates it) and what is wrong.
pub(crate) type ArgError = (&'static str, String);

/// The bearer token: as written, or the name of the environment variable holding it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Token {
    Text(String),
    Env(String),
}

impl std::fmt::Debug for Token {
    /// Never the token itself.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Text(_) => f.write_str("Token(***)"),
            Token::Env(name) => write!(f, "Token(env {name})"),
        }
    }
}

impl Token {
    /// The token's value (read from the environment now, for `Env`).
    pub(crate) fn resolve(&self) -> Result<String, String> {
        match self {
            Token::Text(t) => Ok(t.clone()),
            Token::Env(name) => match std::env::var(name) {
                Ok(v) if !v.is_empty() => Ok(v),
                _ => Err(format!(
                    "`token` names the environment variable `{name}`, which is not set"
                )),
            },
        }
    }
}

/// What the `http` spout was asked for.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// `host:port` as written (`:8080` made `0.0.0.0:8080`).
    pub(crate) listen: String,
    pub(crate) path: String,
    pub(crate) health_path: String,
    pub(crate) token: Option<Token>,
    pub(crate) max_body: usize,
    pub(crate) max_connections: usize,
    /// Answer once the records' tuple trees completed (else once they are queued).
    pub(crate) ack: bool,
    /// Records waiting to be emitted past which a request is answered 429.
    pub(crate) queue: usize,
    /// The request header naming each request once (`idempotency_header`): a request sent
    /// again with a key already taken is answered without its records being emitted again.
    pub(crate) idempotency_header: Option<String>,
    /// How long a taken key is remembered (`idempotency_ttl`).
    pub(crate) idempotency_ttl: std::time::Duration,
}

/// The default `idempotency_ttl`: clients retry within minutes.
const DEFAULT_IDEMPOTENCY_TTL: std::time::Duration = std::time::Duration::from_secs(600);

/// The default `max_body`: 1 MiB.
const DEFAULT_MAX_BODY: usize = 1 << 20;
/// The default `queue`: records accepted and not yet emitted.
const DEFAULT_QUEUE: usize = 10_000;
/// The default bound on open connections.
const DEFAULT_MAX_CONNECTIONS: usize = 256;

impl Settings {
    pub(crate) fn from_args(args: &Args) -> Result<Settings, ArgError> {
        let listen = match args.get("listen") {
            None => {
                return Err((
                    "listen",
                    "needs `listen` (e.g. `listen: 0.0.0.0:8080`)".into(),
                ))
            }
            Some(v) => address(v).map_err(|e| ("listen", e))?,
        };
        let path = url_path(args, "path", "/")?;
        let health_path = url_path(args, "health_path", "/health")?;
        if health_path == path {
            return Err((
                "health_path",
                format!("`health_path` must differ from `path` (both `{path}`)"),
            ));
        }
        Ok(Settings {
            listen,
            path,
            health_path,
            token: token(args)?,
            max_body: size_arg(args, "max_body", DEFAULT_MAX_BODY)?,
            max_connections: count_arg(args, "max_connections", DEFAULT_MAX_CONNECTIONS)?,
            ack: match args.get("ack") {
                None => false,
                Some(Json::Bool(b)) => *b,
                Some(_) => return Err(("ack", "`ack` must be true or false".into())),
            },
            queue: count_arg(args, "queue", DEFAULT_QUEUE)?,
            idempotency_header: idempotency_header(args)?,
            idempotency_ttl: match args.get("idempotency_ttl") {
                None => DEFAULT_IDEMPOTENCY_TTL,
                Some(v) => crate::config::duration_of(v)
                    .filter(|d| !d.is_zero())
                    .ok_or((
                        "idempotency_ttl",
                        "`idempotency_ttl` must be a duration (`10m`, `1h`)".to_string(),
                    ))?,
            },
        })
    }

    /// Exactly once with checkpoints: answered once the records are committed, and each
    /// request taken once by its key.
    pub(crate) fn exactly_once(&self) -> bool {
        self.ack && self.idempotency_header.is_some()
    }
}

/// `idempotency_header`: a header name (letters, digits, `-`); it needs `ack: true`.
fn idempotency_header(args: &Args) -> Result<Option<String>, ArgError> {
    let Some(v) = args.get("idempotency_header") else {
        return Ok(None);
    };
    let name = v
        .as_str()
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        .ok_or((
            "idempotency_header",
            "`idempotency_header` must be a header name (e.g. `Idempotency-Key`)".to_string(),
        ))?;
    if args.get("ack") != Some(&Json::Bool(true)) {
        return Err((
            "idempotency_header",
            "`idempotency_header` needs `ack: true` (a request is answered once its records \
             are done, so a client that got no answer sends it again)"
                .into(),
        ));
    }
    Ok(Some(name.to_string()))
}

/// `token`: a string, or `{env: NAME}`.
fn token(args: &Args) -> Result<Option<Token>, ArgError> {
    let bad = || {
        (
            "token",
            "`token` must be a string or `{env: VARIABLE}` (the variable holding it)".to_string(),
        )
    };
    match args.get("token") {
        None => Ok(None),
        Some(Json::String(s)) if !s.is_empty() => Ok(Some(Token::Text(s.clone()))),
        Some(Json::Object(m)) if m.len() == 1 => match m.get("env") {
            Some(Json::String(name)) if !name.is_empty() => Ok(Some(Token::Env(name.clone()))),
            _ => Err(bad()),
        },
        Some(_) => Err(bad()),
    }
}

/// A URL path argument: starts with `/`, no query, no spaces.
fn url_path(args: &Args, key: &'static str, default: &str) -> Result<String, ArgError> {
    let Some(v) = args.get(key) else {
        return Ok(default.to_string());
    };
    match v.as_str() {
        Some(p) if p.starts_with('/') && !p.contains(['?', '#', ' ']) => Ok(p.to_string()),
        _ => Err((
            key,
            format!("`{key}` must be a URL path starting with `/` (e.g. `/ingest`)"),
        )),
    }
}

/// A whole-number argument ≥ 1.
pub(crate) fn count_arg(args: &Args, key: &'static str, default: usize) -> Result<usize, ArgError> {
    match args.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_u64()
            .filter(|n| *n >= 1)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| (key, format!("`{key}` must be a whole number ≥ 1"))),
    }
}

/// A size argument (see [`size`]).
pub(crate) fn size_arg(args: &Args, key: &'static str, default: usize) -> Result<usize, ArgError> {
    match args.get(key) {
        None => Ok(default),
        Some(v) => size(v).filter(|n| *n >= 1).ok_or_else(|| {
            (
                key,
                format!("`{key}` must be a size: bytes, or with a unit (`64KB`, `1MB`, `2GiB`)"),
            )
        }),
    }
}

/// A size: a number of bytes, or a number with a unit `B`, `KB`/`K`/`KiB`, `MB`/`M`/`MiB`,
/// `GB`/`G`/`GiB` (any case; all powers of 1024).
fn size(v: &Json) -> Option<usize> {
    match v {
        Json::Number(n) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
        Json::String(s) => {
            let s = s.trim();
            let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let (n, unit) = s.split_at(digits);
            let n: u64 = n.parse().ok()?;
            let shift = match unit.trim().to_ascii_lowercase().as_str() {
                "" | "b" => 0,
                "k" | "kb" | "kib" => 10,
                "m" | "mb" | "mib" => 20,
                "g" | "gb" | "gib" => 30,
                _ => return None,
            };
            n.checked_mul(1u64 << shift)
                .and_then(|b| usize::try_from(b).ok())
        }
        _ => None,
    }
}

/// A listening address: `host:port`, `[v6]:port` or `:port` (every interface). The host is an
/// IP address or a name (resolved when the spout starts); the port 0–65535 (0: any free one).
pub(crate) fn address(v: &Json) -> Result<String, String> {
    let Some(text) = v.as_str().map(str::trim) else {
        return Err("`listen` must be an address `host:port` (e.g. `0.0.0.0:8080`)".into());
    };
    let bad = |why: &str| format!("`listen` `{text}`: {why} (e.g. `0.0.0.0:8080`, `:514`)");
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(bad("no port"));
    };
    if port.parse::<u16>().is_err() {
        return Err(bad("the port is not a number from 0 to 65535"));
    }
    let host = match host {
        "" => "0.0.0.0",
        h => h,
    };
    let v6 = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .map(|h| h.parse::<std::net::Ipv6Addr>().is_ok());
    let named = host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    match v6 {
        Some(true) => {}
        Some(false) => return Err(bad("not an IPv6 address in brackets")),
        None if named && !host.starts_with(['-', '.']) => {}
        None => return Err(bad("the host is neither an IP address nor a host name")),
    }
    Ok(format!("{host}:{port}"))
}

/// Every problem `read` finds in `args`, not only the first: after each, the argument at
/// fault is set aside (an address made a placeholder) and the rest read again. Returns the
/// problems and the arguments that then read cleanly, with what they read.
pub(crate) fn all_problems<T>(
    args: &Args,
    read: impl Fn(&Args) -> Result<T, ArgError>,
) -> (Vec<ArgError>, Args, Option<T>) {
    let mut args = args.clone();
    let mut problems: Vec<ArgError> = Vec::new();
    for _ in 0..16 {
        match read(&args) {
            Ok(t) => return (problems, args, Some(t)),
            Err((arg, why)) => {
                if problems.iter().any(|p| p.0 == arg) {
                    break;
                }
                problems.push((arg, why));
                match arg {
                    "listen" => args.insert(arg.into(), Json::String("127.0.0.1:1".into())),
                    _ => args.remove(arg),
                };
            }
        }
    }
    (problems, args, None)
}

/// Whether an address asks for any free port (each task would get its own).
pub(crate) fn any_port(listen: &str) -> bool {
    listen.rsplit_once(':').is_some_and(|(_, p)| p == "0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(j: Json) -> Args {
        j.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn addresses_are_host_and_port() {
        assert_eq!(address(&json!("127.0.0.1:80")), Ok("127.0.0.1:80".into()));
        assert_eq!(address(&json!(":514")), Ok("0.0.0.0:514".into()));
        assert_eq!(address(&json!("[::1]:9")), Ok("[::1]:9".into()));
        assert_eq!(address(&json!("localhost:0")), Ok("localhost:0".into()));
        for bad in ["8080", "host:99999", "a b:1", "[zz]:1", "h:", "-x:1"] {
            assert!(address(&json!(bad)).is_err(), "{bad}");
        }
        assert!(address(&json!(8080)).is_err());
    }

    #[test]
    fn sizes_take_units_of_1024() {
        assert_eq!(size(&json!(100)), Some(100));
        assert_eq!(size(&json!("64KB")), Some(64 * 1024));
        assert_eq!(size(&json!("1 MiB")), Some(1 << 20));
        assert_eq!(size(&json!("2g")), Some(2 << 30));
        assert_eq!(size(&json!("1.5MB")), None);
        assert_eq!(size(&json!("lots")), None);
        assert_eq!(size(&json!(-1)), None);
    }

    #[test]
    fn settings_default_and_refuse_with_the_argument_named() {
        let s = Settings::from_args(&args(json!({"listen": ":8080"}))).expect("reads");
        assert_eq!((s.path.as_str(), s.max_body, s.ack), ("/", 1 << 20, false));
        let bad = |j: Json| Settings::from_args(&args(j)).err().map(|e| e.0);
        assert_eq!(bad(json!({})), Some("listen"));
        assert_eq!(bad(json!({"listen": ":1", "path": "x"})), Some("path"));
        assert_eq!(
            bad(json!({"listen": ":1", "max_body": "big"})),
            Some("max_body")
        );
        assert_eq!(bad(json!({"listen": ":1", "token": 3})), Some("token"));
        assert_eq!(
            bad(json!({"listen": ":1", "path": "/health"})),
            Some("health_path")
        );
        let env = Settings::from_args(&args(json!({"listen": ":1", "token": {"env": "T"}})));
        assert_eq!(env.expect("reads").token, Some(Token::Env("T".into())));
    }

    #[test]
    fn a_token_is_never_shown() {
        let t = Token::Text("s3cret".into());
        assert!(!format!("{t:?}").contains("s3cret"));
    }
}
