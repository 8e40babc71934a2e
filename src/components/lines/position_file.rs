//! A followed file's position kept in a file when the run has no checkpoints: at-least-once
//! across restarts. With a state dir (`--state-dir`, `topology.state.dir`) and
//! `topology.stateful` off, a followed `file` spout writes its position (the same map a
//! checkpoint holds) to `<state dir>/positions/<component>.<task index>.json` once a second
//! and when it closes, and a new run goes on from it. Lines emitted after the last write come
//! out again after a crash (never lost, maybe twice).

use crate::tuple::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often the position is written.
const EVERY: Duration = Duration::from_secs(1);

pub struct PositionFile {
    path: PathBuf,
    written: Instant,
    /// A write failed once: said once, not every second.
    warned: bool,
}

impl PositionFile {
    /// The position file of the task, when the run keeps one (a state dir, no checkpoints).
    pub fn for_task(ctx: &crate::components::TaskContext) -> anyhow::Result<Option<PositionFile>> {
        if ctx.config.stateful() {
            return Ok(None);
        }
        let Some(dir) = ctx.topology.state_dir()? else {
            return Ok(None);
        };
        let path = dir
            .join("positions")
            .join(format!("{}.{}.json", ctx.component, ctx.task_index));
        Ok(Some(PositionFile {
            path,
            written: Instant::now(),
            warned: false,
        }))
    }

    /// The position a run before this one wrote, if any.
    pub fn load(&self) -> Result<Option<Value>, String> {
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
    pub fn due(&self) -> bool {
        self.written.elapsed() >= EVERY
    }

    /// Write `position` (to a new file, then renamed over the old one: never half written).
    pub fn save(&mut self, position: &Value) {
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
