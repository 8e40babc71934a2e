//! Nimbus's rebalance (Storm's `rebalance` transition): the topology's status becomes
//! `rebalancing` (its workers pause their spouts at their next heartbeat), and once the wait is
//! over the monitor stores the new counts in the submission (so every worker loads the same
//! plan), writes a fresh assignment, and puts the status back. Supervisors restart the
//! workers whose assignment changed; the state bolts keep in memory in those processes is
//! lost, as in Storm.

use super::{Known, Nimbus};
use crate::cluster::coordination::layout::TopologyStatus;
use crate::cluster::protocol::rpc::Submission;
use crate::model::plan::Plan;
use crate::model::rebalance::{Invalid, Rebalance, Unsupported};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A rebalance waiting for its wait to be over.
#[derive(Debug)]
pub(super) struct Pending {
    due: Instant,
    /// The submission with the new counts.
    submission: Submission,
    /// The status to put back.
    previous: TopologyStatus,
}

/// A pending rebalance as the tree keeps it (`/storms/{id}/rebalance`).
#[derive(Debug, Serialize, Deserialize)]
struct Recorded {
    /// When it is due, in seconds since the Unix epoch.
    due_secs: u64,
    previous: TopologyStatus,
    submission: Submission,
}

impl Nimbus {
    /// Start rebalancing the live topology named `name` (or with that id); returns its id.
    pub(crate) fn rebalance(
        &self,
        name: &str,
        wait_secs: Option<u64>,
        request: &Rebalance,
    ) -> anyhow::Result<String> {
        let state = self.state();
        let mut found = None;
        for id in state.topology_ids()? {
            if let Some(b) = state.storm_base(&id)? {
                if (b.name == name || id == name) && b.status != TopologyStatus::Killed {
                    found = Some((id, b.status));
                }
            }
        }
        let Some((id, previous)) = found else {
            return Err(super::no_running_topology(&state, name));
        };
        if previous == TopologyStatus::Rebalancing {
            return Err(Invalid(format!("a rebalance of {id} is already under way")).into());
        }
        let known = self.known(&id)?;
        let submission = rebalanced_submission(&known, request)?;
        let wait = wait_secs
            .map(Duration::from_secs)
            .unwrap_or_else(|| known.topology.config.message_timeout());
        // Recorded before it is answered: a nimbus that takes over carries it out.
        let recorded = Recorded {
            due_secs: self.now_secs() + wait.as_secs(),
            previous,
            submission: submission.clone(),
        };
        state.set_pending_rebalance(&id, Some(&recorded))?;
        if let Err(e) = state.set_status(&id, TopologyStatus::Rebalancing) {
            let _ = state.set_pending_rebalance::<Recorded>(&id, None);
            return Err(e.into());
        }
        drop(state);
        self.save()?;
        let pending = Pending {
            due: self.clock.now() + wait,
            submission,
            previous,
        };
        self.rebalances
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), pending);
        tracing::info!("nimbus: rebalancing {id} after {}s", wait.as_secs());
        Ok(id)
    }

    /// End the rebalances whose wait is over (a monitor round). A topology left
    /// `rebalancing` with nothing pending (its nimbus was replaced meanwhile) goes back to
    /// active as it was.
    pub(super) fn finish_rebalances(&self) -> anyhow::Result<()> {
        let now = self.clock.now();
        let due: Vec<(String, Pending)> = {
            let mut pending = self.rebalances.lock().unwrap_or_else(|e| e.into_inner());
            let ids: Vec<String> = pending
                .iter()
                .filter(|(_, p)| p.due <= now)
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| pending.remove(&id).map(|p| (id, p)))
                .collect()
        };
        for (id, p) in due {
            let previous = p.previous;
            if let Err(e) = self.switch(&id, p) {
                tracing::warn!("nimbus: rebalance of {id}: {e:#}; dropped");
                // Not tried again at every round: the topology goes back as it was.
                let state = self.state();
                let _ = state.set_pending_rebalance::<Recorded>(&id, None);
                let back = state.storm_base(&id).ok().flatten();
                if back.is_some_and(|b| b.status == TopologyStatus::Rebalancing) {
                    let _ = state.set_status(&id, previous);
                }
            }
        }
        let state = self.state();
        let mut waiting = self.rebalances.lock().unwrap_or_else(|e| e.into_inner());
        for id in state.topology_ids()? {
            let stuck = state
                .storm_base(&id)?
                .is_some_and(|b| b.status == TopologyStatus::Rebalancing);
            if !stuck || waiting.contains_key(&id) {
                continue;
            }
            // Accepted by a nimbus that led before: carried out here, when it is due.
            if let Some(r) = state.pending_rebalance::<Recorded>(&id)? {
                let left = Duration::from_secs(r.due_secs.saturating_sub(self.now_secs()));
                tracing::info!(
                    "nimbus: {id}: carrying out the rebalance the previous leader accepted"
                );
                let pending = Pending {
                    due: now + left,
                    submission: r.submission,
                    previous: r.previous,
                };
                waiting.insert(id, pending);
                continue;
            }
            tracing::warn!("nimbus: {id} was left rebalancing; active again as it was");
            state.set_status(&id, TopologyStatus::Active)?;
        }
        Ok(())
    }

    /// Store the new submission, assign afresh, and put the status back (unless the topology
    /// was killed meanwhile).
    fn switch(&self, id: &str, p: Pending) -> anyhow::Result<()> {
        let rebalancing = self
            .state()
            .storm_base(id)?
            .is_some_and(|b| b.status == TopologyStatus::Rebalancing);
        if !rebalancing {
            self.state().set_pending_rebalance::<Recorded>(id, None)?;
            tracing::info!("nimbus: {id} is no longer rebalancing; the rebalance is dropped");
            return Ok(());
        }
        let topology = crate::cluster::nimbus::submission::load_submission(&p.submission)
            .map_err(|e| anyhow::anyhow!("the rebalanced topology does not validate: {e}"))?;
        let plan = Plan::new(&topology);
        let state = self.state();
        let dir = self.stormdist(id);
        std::fs::create_dir_all(&dir)
            .and_then(|()| {
                std::fs::write(
                    dir.join("submission.json"),
                    serde_json::to_vec(&p.submission)?,
                )
            })
            .map_err(|e| anyhow::anyhow!("cannot store {id} under {}: {e}", dir.display()))?;
        if let Some(zk) = &self.zk {
            zk.keep_submission(&self.config.zookeeper_root(), id, &p.submission)?;
        }
        let workers = topology.config.workers();
        let known = Arc::new(Known {
            submission: p.submission,
            topology,
            plan,
        });
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string(), known.clone());
        let assigned = state.rebalance_assign(id, &known.plan, workers, self.now_secs());
        state.set_status(id, p.previous)?;
        state.set_pending_rebalance::<Recorded>(id, None)?;
        drop(state);
        self.save()?;
        assigned?;
        tracing::info!("nimbus: rebalanced {id} over {workers} worker(s)");
        Ok(())
    }
}

/// The submission of `known` with the counts of `request` (checked against it): the worker
/// count and the acker's (pinned: tasks never change) as overrides, executors by component.
fn rebalanced_submission(known: &Known, request: &Rebalance) -> anyhow::Result<Submission> {
    if let Some(home) = &known.submission.home {
        // `storm run --processes` names its home "home"; an attached run, "run-PID".
        let run = match home.as_str() {
            "home" => "a `storm run --processes` run",
            _ => "a run attached with `storm run --nimbus`",
        };
        return Err(Unsupported(format!(
            "{run} cannot be rebalanced yet (its console executors run in the `storm run` \
             process)"
        ))
        .into());
    }
    let topology = request
        .apply(&known.topology, &known.plan)
        .map_err(Invalid)?;
    let mut sub = known.submission.clone();
    // The earlier rebalances' counts give way to these (the list stays as long as it was).
    sub.overrides.retain(|o| {
        !o.starts_with("topology.workers=") && !o.starts_with("topology.acker.executors=")
    });
    sub.overrides
        .push(format!("topology.workers={}", topology.config.workers()));
    sub.overrides
        .push(format!("topology.acker.executors={}", known.plan.ackers));
    for (c, n) in &request.executors {
        sub.parallelism.insert(c.clone(), *n);
    }
    Ok(sub)
}
