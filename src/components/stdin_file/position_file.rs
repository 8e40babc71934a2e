//! A followed file's position kept in a file when the run has no checkpoints: at-least-once
//! across restarts. With `topology.stateful` off, a followed `file` spout writes its position
//! (the same map a checkpoint holds) once a second and when it closes, and a new run goes on
//! from it: to `<state dir>/positions/<component>.<task index>.json` with a state dir
//! (`--state-dir`, `topology.state.dir`), else, as Vector keeps its checkpoints in its
//! `data_dir`, under the user's state folder (XDG's): `$XDG_STATE_HOME/storm/positions/
//! <topology>/<component>.<task index>-<hash of the followed path>.json` (`$XDG_STATE_HOME`
//! defaulting to `~/.local/state`), so two topologies of one name following other files do
//! not share one. Lines emitted after the last write come out again after a crash (never lost,
//! maybe twice).

use crate::tuple::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often the position is written.
const EVERY: Duration = Duration::from_secs(1);

pub(crate) struct PositionFile {
    path: PathBuf,
    written: Instant,
    /// A write failed once: said once, not every second.
    warned: bool,
}

impl PositionFile {
    /// The position file of the task following `followed`, when the run keeps one (no
    /// checkpoints; a state dir, or a user state folder).
    pub(crate) fn for_task(
        ctx: &crate::components::TaskContext,
        followed: &std::path::Path,
    ) -> anyhow::Result<Option<PositionFile>> {
        if ctx.config.stateful() {
            return Ok(None);
        }
        let path = match ctx.topology.state_dir()? {
            Some(dir) => dir
                .join("positions")
                .join(format!("{}.{}.json", ctx.component, ctx.task_index)),
            None => {
                let Some(dir) = user_state_dir() else {
                    tracing::info!(
                        "{}: no state dir and no $XDG_STATE_HOME or $HOME: its position is not \
                         kept (a new run starts at `start_at`)",
                        ctx.component
                    );
                    return Ok(None);
                };
                let name = format!(
                    "{}.{}-{:016x}.json",
                    ctx.component,
                    ctx.task_index,
                    path_hash(followed)
                );
                dir.join("storm/positions")
                    .join(&ctx.topology.name)
                    .join(name)
            }
        };
        tracing::info!(
            "{}: its position is kept in {}",
            ctx.component,
            path.display()
        );
        Ok(Some(PositionFile {
            path,
            written: Instant::now(),
            warned: false,
        }))
    }

    /// The position a run before this one wrote, if any.
    pub(crate) fn load(&self) -> Result<Option<Value>, String> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
        };
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{}: not a position ({e}); delete it to start at `start_at`",
                self.path.display()
            )
        })?;
        Ok(Some(Value::from_json(&json)))
    }

    /// Whether a write is due.
    pub(crate) fn due(&self) -> bool {
        self.written.elapsed() >= EVERY
    }

    /// Write `position` (to a new file, then renamed over the old one: never half written).
    pub(crate) fn save(&mut self, position: &Value) {
        self.written = Instant::now();
        if let Err(e) = self.write(position) {
            if !self.warned {
                tracing::warn!("{e}; a restart may read lines again from an older position");
                self.warned = true;
            }
        }
    }

    fn write(&self, position: &Value) -> Result<(), String> {
        let shown = self.path.display();
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let tmp = self.path.with_extension("json.tmp");
        let text =
            serde_json::to_string(&position.to_json()).map_err(|e| format!("{shown}: {e}"))?;
        std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| format!("cannot write {shown}: {e}"))
    }
}

/// The user's state folder: `$XDG_STATE_HOME`, else `$HOME/.local/state` (XDG's default).
fn user_state_dir() -> Option<PathBuf> {
    let set = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    set("XDG_STATE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| set("HOME").map(|h| h.join(".local/state")))
}

/// A stable hash (64-bit FNV-1a) of `path` made absolute: which file a position file is for.
fn path_hash(path: &std::path::Path) -> u64 {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    super::fingerprint::checksum(absolute.as_os_str().as_encoded_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_of_a_path_is_stable_and_tells_paths_apart() {
        let a = path_hash(std::path::Path::new("/var/log/app.log"));
        assert_eq!(a, path_hash(std::path::Path::new("/var/log/app.log")));
        assert_ne!(a, path_hash(std::path::Path::new("/var/log/app2.log")));
        // FNV-1a of the empty input is its offset basis: the hash is FNV's.
        assert_eq!(
            super::super::fingerprint::checksum(b""),
            0xcbf2_9ce4_8422_2325
        );
    }
}
