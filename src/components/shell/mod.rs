//! Shell components: spouts and bolts run as child processes speaking Storm's multilang
//! protocol (JSON messages ended by `end` lines over stdin/stdout), so components written for
//! Apache Storm in Python, Ruby, Node.js … run unmodified. See `docs/multilang.md`.
//!
//! `protocol` is the pure wire format, `process` one child and its threads, `context` the
//! handshake's topology context, `lifecycle` a child's settings, start-up and restart policy, and `bolt` /
//! `spout` Storm's `ShellBolt` / `ShellSpout`, `python_compat` the shim that lets Apache Storm's
//! Python 2-era `storm.py` emit under Python 3.

mod bolt;
pub(crate) mod builtin;
pub mod context;
mod lifecycle;
mod process;
pub mod protocol;
mod python_compat;
mod spout;

pub use bolt::ShellBolt;
pub use spout::ShellSpout;

use crate::components::TaskContext;
use crate::model::plan::{StreamId, SYSTEM_TASK};
use protocol::{Emit, LogLevel};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The child's working directory: `cwd` as validation resolved it (already joined to the
/// topology file's folder), else `base_dir`.
fn resolve_cwd(cwd: Option<&Path>, base_dir: &Path) -> PathBuf {
    match cwd {
        Some(c) => c.to_path_buf(),
        None => base_dir.to_path_buf(),
    }
}

/// A child's `log` command, into our log at its level (Storm's `ShellLogHandler`).
fn log_child_message(label: &str, level: LogLevel, msg: &str) {
    match level {
        LogLevel::Trace => tracing::trace!("{label}: {msg}"),
        LogLevel::Debug => tracing::debug!("{label}: {msg}"),
        LogLevel::Info => tracing::info!("{label}: {msg}"),
        LogLevel::Warn => tracing::warn!("{label}: {msg}"),
        LogLevel::Error => tracing::error!("{label}: {msg}"),
    }
}

/// Check an emit against the component's declared streams and the plan's tasks: the stream is
/// declared, the tuple has as many values as the stream has fields (Storm checks this too),
/// and a direct emit names an existing task. Returns the stream's id.
fn check_emit(
    outputs: &BTreeMap<String, Vec<String>>,
    ctx: &TaskContext,
    stream: &str,
    emit: &Emit,
) -> Result<StreamId, String> {
    let undeclared = || {
        let declared: Vec<&str> = outputs.keys().map(|s| s.as_str()).collect();
        format!(
            "protocol error: emit on undeclared stream \"{}\" (declared: {})",
            protocol::excerpt(stream),
            if declared.is_empty() {
                "none".to_string()
            } else {
                declared.join(", ")
            }
        )
    };
    let fields = outputs.get(stream).ok_or_else(undeclared)?;
    if fields.len() != emit.tuple.len() {
        return Err(format!(
            "protocol error: emit of {} value(s) on stream \"{stream}\", declared with {} field(s) [{}]",
            emit.tuple.len(),
            fields.len(),
            fields.join(", ")
        ));
    }
    let sid = ctx.plan.stream_id(stream).ok_or_else(undeclared)?;
    if let Some(task) = emit.task {
        if task == SYSTEM_TASK || ctx.plan.component_of_task(task) == "?" {
            return Err(format!(
                "protocol error: direct emit to unknown task {task}"
            ));
        }
    }
    Ok(sid)
}

/// How often an unknown command that keeps coming is logged again.
const UNKNOWN_LOG_EVERY: Duration = Duration::from_secs(60);
/// Distinct unknown command names tracked one by one; the rest share one entry.
const UNKNOWN_NAMES: usize = 32;

/// Commands a child sent that we do not know. Storm's `ShellBolt` ignores them, and so do we
/// (a newer adapter may send what this runner does not know): each name is logged the first
/// time, then at most once per [`UNKNOWN_LOG_EVERY`] with how many came meanwhile.
#[derive(Debug, Default)]
struct UnknownCommands {
    seen: HashMap<String, crate::logging::Throttle>,
}

impl UnknownCommands {
    /// The child sent the unknown command `name`.
    fn note(&mut self, label: &str, name: &str) {
        let key = if self.seen.contains_key(name) || self.seen.len() < UNKNOWN_NAMES {
            name
        } else {
            "…"
        };
        let throttle = self
            .seen
            .entry(key.to_string())
            .or_insert_with(|| crate::logging::Throttle::new(UNKNOWN_LOG_EVERY));
        if let Some(held) = throttle.allow() {
            tracing::warn!(
                "{label}: ignoring the unknown multilang command `{key}` (logged once a minute at most){}",
                crate::logging::held_back(held)
            );
        }
    }
}
