//! Limits on what a topology may ask for, so that what validates can run: task ids are 32-bit,
//! every executor is a thread and every worker a thread or a process. A count past its limit
//! is a located error that states the limit (docs/limits.md lists them).

use super::*;

/// Executors (threads) of one component: `parallelism`, and the acker's executors.
pub(crate) const MAX_PARALLELISM: u32 = 1024;
/// Tasks of one component.
pub(crate) const MAX_TASKS: u32 = 4096;
/// Tasks of the whole topology, the ackers' included.
const MAX_TOTAL_TASKS: u32 = 16384;
/// Executors of the whole topology, the ackers' included.
const MAX_TOTAL_EXECUTORS: u32 = 4096;
pub(crate) use crate::model::MAX_WORKERS;

const LIMITS_HELP: &str = "the limits are listed in docs/limits.md";

impl Validator<'_> {
    /// A component's `parallelism` or `tasks`: at least 1 and at most `max`.
    pub(super) fn count(&mut self, v: &Option<Spanned<i64>>, what: &str, max: u32) -> Option<u32> {
        let v = v.as_ref()?;
        match u32::try_from(v.value) {
            Ok(n) if (1..=max).contains(&n) => Some(n),
            Ok(n) if n > max => self.too_many(v, what, max),
            Err(_) if v.value > 0 => self.too_many(v, what, max),
            _ => {
                self.error(
                    format!("`{what}` must be at least 1 (got {})", v.value),
                    v.span,
                );
                None
            }
        }
    }

    fn too_many(&mut self, v: &Spanned<i64>, what: &str, max: u32) -> Option<u32> {
        let unit = if what == "tasks" {
            "tasks"
        } else {
            "executors"
        };
        self.error(
            format!(
                "`{what}` is {}; at most {max} {unit} per component can run",
                v.value
            ),
            v.span,
        )
        .help = Some(LIMITS_HELP.into());
        None
    }

    /// `topology.workers` and `topology.acker.executors` within their limits, located where
    /// the file wrote them (or naming the layer that set them).
    pub(super) fn config_bounds(&mut self, config: &Config, raw: &RawTopology) {
        for (key, max) in [
            ("topology.workers", MAX_WORKERS),
            ("topology.acker.executors", MAX_PARALLELISM),
        ] {
            let Some(entry) = config.entries.get(key) else {
                continue;
            };
            let Some(n) = entry.value.as_u64().filter(|n| *n > u64::from(max)) else {
                continue;
            };
            let message = format!("`{key}` is {n}; at most {max} can run");
            let written = raw.config.iter().rev().find(|(k, _)| k.value == key);
            match (&entry.origin, written) {
                (Origin::Topology { .. }, Some((_, value))) => {
                    self.diags.push(Diagnostic::error(message, value.span));
                }
                (origin, _) => self.diags.push(Diagnostic::unlocated(
                    Severity::Error,
                    format!("{message} (set in {})", layers::describe(origin)),
                )),
            }
        }
    }

    /// The tasks and executors of the whole topology, the ackers' included, within their
    /// limits; the error points at the component that goes past one.
    pub(super) fn totals(&mut self, components: &[(Component, &RawComponent)], config: &Config) {
        let workers = config.get_u64("topology.workers").unwrap_or(1).max(1);
        let ackers = config
            .get_u64("topology.acker.executors")
            .unwrap_or(workers)
            .min(u64::from(MAX_PARALLELISM));
        let (mut tasks, mut executors) = (ackers, ackers);
        for (c, rc) in components {
            tasks += u64::from(c.tasks);
            executors += u64::from(c.parallelism);
            let at = rc.tasks.as_ref().map_or(rc.span, |t| t.span);
            if tasks > u64::from(MAX_TOTAL_TASKS) {
                self.error(
                    format!(
                        "with this component the topology has {tasks} tasks (ackers included); at most {MAX_TOTAL_TASKS} can run"
                    ),
                    at,
                )
                .help = Some(LIMITS_HELP.into());
                return;
            }
            let at = rc.parallelism.as_ref().map_or(rc.span, |p| p.span);
            if executors > u64::from(MAX_TOTAL_EXECUTORS) {
                self.error(
                    format!(
                        "with this component the topology has {executors} executors (ackers included); at most {MAX_TOTAL_EXECUTORS} can run"
                    ),
                    at,
                )
                .help = Some(LIMITS_HELP.into());
                return;
            }
        }
    }
}
