//! The `socket` spout's arguments: `listen`, `protocol`, `framing`, `format` (the record
//! formats of `stdin`, or `syslog`), and the per-connection bounds.

use super::framing::Framing;
use crate::components::http::settings::{address, count_arg, size_arg, ArgError};
use serde_json::Value as Json;
use std::time::Duration;

type Args = serde_json::Map<String, Json>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    Tcp,
    Udp,
}

/// What the `socket` spout was asked for.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) listen: String,
    pub(crate) protocol: Protocol,
    pub(crate) framing: Framing,
    /// `format: syslog`.
    pub(crate) syslog: bool,
    pub(crate) max_connections: usize,
    /// The longest frame (line or message), in bytes; `None`: `topology.record.max.bytes`.
    pub(crate) max_frame: Option<usize>,
    /// A TCP connection quiet for this long is closed.
    pub(crate) idle: Option<Duration>,
}

/// The default bound on open TCP connections.
const DEFAULT_MAX_CONNECTIONS: usize = 1024;

fn one_of<T>(
    args: &Args,
    key: &'static str,
    names: &[&str],
    read: impl Fn(&str) -> Option<T>,
    default: T,
) -> Result<T, ArgError> {
    match args.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_str()
            .and_then(read)
            .ok_or_else(|| (key, format!("`{key}` must be one of: {}", names.join(", ")))),
    }
}

impl Settings {
    pub(crate) fn from_args(args: &Args) -> Result<Settings, ArgError> {
        let listen = match args.get("listen") {
            None => {
                return Err((
                    "listen",
                    "needs `listen` (e.g. `listen: 0.0.0.0:5514`)".into(),
                ))
            }
            Some(v) => address(v).map_err(|e| ("listen", e))?,
        };
        let protocol = one_of(
            args,
            "protocol",
            &["tcp", "udp"],
            |s| match s {
                "tcp" => Some(Protocol::Tcp),
                "udp" => Some(Protocol::Udp),
                _ => None,
            },
            Protocol::Tcp,
        )?;
        let framing = one_of(
            args,
            "framing",
            Framing::NAMES,
            Framing::from_name,
            Framing::Newline,
        )?;
        let idle = match args.get("idle") {
            None => None,
            Some(v) => Some(
                crate::config::duration_of(v)
                    .filter(|d| !d.is_zero())
                    .ok_or((
                        "idle",
                        "`idle` must be a duration (`30s`, `5m`)".to_string(),
                    ))?,
            ),
        };
        Ok(Settings {
            listen,
            protocol,
            framing,
            syslog: args.get("format").and_then(Json::as_str) == Some("syslog"),
            max_connections: count_arg(args, "max_connections", DEFAULT_MAX_CONNECTIONS)?,
            max_frame: match args.get("max_frame") {
                None => None,
                Some(_) => Some(size_arg(args, "max_frame", 1)?),
            },
            idle,
        })
    }
}
