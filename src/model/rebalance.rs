//! What a rebalance asks (Storm's `RebalanceOptions`: a worker count and new executor counts
//! per component), checked against a topology, and the topology it yields. Tasks are fixed for
//! the topology's life, as in Storm: a rebalance only regroups them into executors and spreads
//! the executors over workers, so task ids (and where grouped keys land) stay the same. The
//! acker keeps its task count too, though it was chosen from the worker count at the start.

use super::plan::{Plan, ACKER_ID};
use super::Topology;
use crate::config::Origin;
use std::collections::BTreeMap;

/// A rebalance that cannot be carried out as asked (a bad request, not a failure).
#[derive(Debug)]
pub(crate) struct Invalid(pub(crate) String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

/// A rebalance this kind of run cannot carry out (yet).
#[derive(Debug)]
pub(crate) struct Unsupported(pub(crate) String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unsupported {}

/// A rebalance request: nothing given keeps the current value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rebalance {
    /// The new `topology.workers`.
    pub(crate) workers: Option<u32>,
    /// New executor counts, by component id.
    pub(crate) executors: BTreeMap<String, u32>,
}

/// The longest wait a kill or a rebalance takes (a week): a longer one is surely a mistake, and
/// an unbounded one would overflow the clock.
pub(crate) const MAX_WAIT_SECS: u64 = 7 * 24 * 3600;

/// A kill's or a rebalance's wait, in seconds, within [`MAX_WAIT_SECS`].
pub(crate) fn check_wait(secs: u64) -> Result<(), String> {
    match secs <= MAX_WAIT_SECS {
        true => Ok(()),
        false => Err(format!(
            "a wait of {secs} s is longer than a week ({MAX_WAIT_SECS} s), the most a kill or rebalance waits"
        )),
    }
}

impl Rebalance {
    /// Check the request against `topology` (whose plan is `plan`): a worker count of at least
    /// one; known user components (with a suggestion for a misspelt one), each given between 1
    /// and its task count executors.
    pub(crate) fn check(&self, topology: &Topology, plan: &Plan) -> Result<(), String> {
        if self.workers == Some(0) {
            return Err("the number of workers must be at least 1".into());
        }
        let most = super::MAX_WORKERS;
        if let Some(n) = self.workers.filter(|n| *n > most) {
            return Err(format!("at most {most} workers can run (got {n})"));
        }
        for (id, &n) in &self.executors {
            let Some(c) = topology.component(id) else {
                let ids = topology.components.iter().map(|c| c.id.as_str());
                let hint = crate::syntax::suggest::suggest(id, ids)
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default();
                let system = if id == ACKER_ID {
                    " (the acker's executors are fixed)"
                } else {
                    ""
                };
                return Err(format!(
                    "topology `{}` has no component `{id}`{system}{hint}",
                    topology.name
                ));
            };
            let tasks = plan
                .component(id)
                .map_or(c.tasks, |p| p.tasks.end() - p.tasks.start() + 1);
            if n == 0 || n > tasks {
                return Err(format!(
                    "component `{id}` has {tasks} task(s): its parallelism must be 1 to {tasks} \
                     (got {n}; tasks are fixed by a rebalance)"
                ));
            }
        }
        Ok(())
    }

    /// The topology after the rebalance: the new worker and executor counts, the acker's
    /// count pinned to what `plan` has (tasks never change). Checked first.
    pub(crate) fn apply(&self, topology: &Topology, plan: &Plan) -> Result<Topology, String> {
        self.check(topology, plan)?;
        let mut t = topology.clone();
        if let Some(w) = self.workers {
            t.config
                .set("topology.workers", w.into(), Origin::CommandLine);
        }
        t.config.set(
            "topology.acker.executors",
            plan.ackers.into(),
            Origin::CommandLine,
        );
        for c in &mut t.components {
            if let Some(&n) = self.executors.get(&c.id) {
                c.parallelism = n;
            }
        }
        Ok(t)
    }
}

/// Parse `-e COMPONENT=PARALLELISM` (Storm's `storm rebalance -e`).
pub(crate) fn parse_executor(text: &str) -> Result<(String, u32), String> {
    let bad = || format!("expected COMPONENT=PARALLELISM (e.g. `count=3`), got `{text}`");
    let (id, n) = text.split_once('=').ok_or_else(bad)?;
    let id = id.trim();
    if id.is_empty() {
        return Err(bad());
    }
    let n = n
        .trim()
        .parse::<u32>()
        .map_err(|_| format!("`{text}`: the parallelism `{n}` is not a whole number"))?;
    Ok((id.to_string(), n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executor_options_parse() {
        assert_eq!(parse_executor("count=3"), Ok(("count".into(), 3)));
        assert!(parse_executor("count").is_err());
        assert!(parse_executor("=3").is_err());
        assert!(parse_executor("count=x").is_err());
    }
}
