//! Lines a reader drops: a warning for each of the first few (with its line number), then one
//! per period with how many more; with `topology.strict`, the first one ends the run; and the
//! tally that tells, at the end of input, that none of it could be read.

use super::STRICT_KEY;
use crate::components::{FatalError, TaskContext};
use std::time::Duration;

/// Warnings about dropped lines: the first few, then one line per period with how many more;
/// with `topology.strict`, the first dropped line is an error that ends the run. Also the
/// tally of what was read, for a run of which nothing could be.
pub(crate) struct DropWarnings {
    component: String,
    shown: u32,
    later: crate::logging::Throttle,
    strict: bool,
    /// Records read, lines dropped, and the first reasons (with line numbers).
    read: u64,
    dropped: u64,
    first: Vec<String>,
    /// Whether lines dropped with none read is an error at the end of input.
    pub(crate) judge_input: bool,
}

impl DropWarnings {
    const FIRST: u32 = 3;
    const PERIOD: Duration = Duration::from_secs(10);

    pub(crate) fn new(component: &str) -> DropWarnings {
        DropWarnings {
            component: component.to_string(),
            shown: 0,
            later: crate::logging::Throttle::new(Self::PERIOD),
            strict: false,
            read: 0,
            dropped: 0,
            first: Vec::new(),
            judge_input: true,
        }
    }

    /// For a task: strict when `topology.strict` is on.
    pub(crate) fn for_task(ctx: &TaskContext) -> DropWarnings {
        let mut w = DropWarnings::new(&ctx.component);
        w.strict = ctx.config.get_bool(STRICT_KEY).unwrap_or(false);
        w
    }

    /// A record was read.
    #[inline]
    pub(crate) fn read(&mut self) {
        self.read += 1;
    }

    /// `n` records were read.
    pub(crate) fn read_lines(&mut self, n: u64) {
        self.read += n;
    }

    /// Line `at` was dropped for `reason`: warned about (bounded), or with `strict` the error
    /// that ends the run.
    pub(crate) fn dropped(&mut self, at: u64, line: &str, reason: &str) -> Result<(), FatalError> {
        let preview: String = line.chars().take(120).collect();
        self.dropped += 1;
        if self.first.len() < Self::FIRST as usize {
            self.first.push(format!("line {at}: {reason}"));
        }
        if self.strict {
            return Err(FatalError(format!(
                "line {at}: {reason}: {preview:?} (topology.strict: a line that cannot be read ends the run)"
            )));
        }
        let held = if self.shown < Self::FIRST {
            self.shown += 1;
            0
        } else {
            match self.later.allow() {
                Some(held) => held,
                None => return Ok(()),
            }
        };
        tracing::warn!(
            "{}: dropped line {at}, which it cannot read: {reason}: {preview:?}{}; wire its `errors` stream to keep such lines",
            self.component,
            crate::logging::held_back(held)
        );
        Ok(())
    }

    /// At the end of input: the error when lines came but none could be read.
    pub(crate) fn nothing_read(&self) -> Result<(), FatalError> {
        if self.read > 0 || self.dropped == 0 || !self.judge_input {
            return Ok(());
        }
        Err(FatalError(format!(
            "none of the input could be read ({} unreadable record(s)); first reasons: {}",
            self.dropped,
            self.first.join("; ")
        )))
    }
}
