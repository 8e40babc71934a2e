//! The checkpoint coordinator: counts which tasks saved which checkpoint, and commits a
//! checkpoint once every task saved it (a task that ended counts for every later one: its last
//! checkpoint holds its final state). A commit is one write of the commit record; then each
//! store folds what the checkpoint prepared into its committed entries. A checkpoint some task
//! never saved (it was slow, or the round was skipped) is passed over by a later one.

use super::Report;
use crate::state::{Commits, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the coordinator did over a run.
#[derive(Debug, Default, Clone)]
pub(crate) struct CheckpointReport {
    committed: u64,
    /// The last committed txid (0: none).
    last: u64,
    /// From the first task saving a checkpoint to its commit, per commit.
    latencies: Vec<Duration>,
}

impl CheckpointReport {
    /// The `q` quantile (0..=1) of commit latency, in milliseconds.
    fn latency_ms(&self, q: f64) -> Option<f64> {
        let mut ms: Vec<f64> = self
            .latencies
            .iter()
            .map(|d| d.as_secs_f64() * 1e3)
            .collect();
        ms.sort_by(f64::total_cmp);
        let last = ms.len().checked_sub(1)?;
        ms.get(((last as f64) * q).round() as usize).copied()
    }

    /// One line for the end of a run.
    pub(crate) fn line(&self) -> String {
        let lat = |q| {
            self.latency_ms(q)
                .map_or("-".into(), |v| format!("{v:.1} ms"))
        };
        format!(
            "checkpoints: {} committed (last txid {}); commit latency p50 {}, p99 {}",
            self.committed,
            self.last,
            lat(0.5),
            lat(0.99)
        )
    }

    /// The figures for `--stats`.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "committed": self.committed,
            "last_txid": self.last,
            "commit_latency_ms": {
                "p50": self.latency_ms(0.5),
                "p99": self.latency_ms(0.99),
                "max": self.latency_ms(1.0),
            },
        })
    }
}

/// The longest a commit waits for its stores' fold when the coordinator is never idle.
pub(crate) const FOLD_WITHIN: Duration = Duration::from_secs(1);

/// How long the coordinator waits for a report before it folds a commit.
pub(crate) const FOLD_IDLE: Duration = Duration::from_millis(50);

pub(crate) struct Coordinator {
    commits: Arc<Commits>,
    stores: Vec<Arc<Store>>,
    /// The tasks that save checkpoints: every spout task and every stateful bolt task.
    expected: BTreeSet<u32>,
    prepared: BTreeMap<u64, (Instant, BTreeSet<u32>)>,
    finished: BTreeSet<u32>,
    /// The last txid each task saved.
    last_saved: BTreeMap<u32, u64>,
    /// Whether a commit leaves its stores' fold for later (see [`Coordinator::defer_folds`]).
    defer_folds: bool,
    /// The txid committed but not folded yet, and when it was committed.
    unfolded: Option<(u64, Instant)>,
    pub(crate) report: CheckpointReport,
}

impl Coordinator {
    pub(crate) fn new(
        commits: Arc<Commits>,
        stores: Vec<Arc<Store>>,
        expected: BTreeSet<u32>,
        committed: u64,
    ) -> Coordinator {
        Coordinator {
            commits,
            stores,
            expected,
            prepared: BTreeMap::new(),
            finished: BTreeSet::new(),
            last_saved: BTreeMap::new(),
            defer_folds: false,
            unfolded: None,
            report: CheckpointReport {
                last: committed,
                ..CheckpointReport::default()
            },
        }
    }

    /// A commit writes the commit record and leaves folding its stores' prepared entries into
    /// the committed ones to [`Coordinator::fold_due`]: the commit record alone makes a
    /// checkpoint the one a resume restores, and whatever opens a store folds it to the
    /// committed checkpoint first (as after a crash between the two). So the fold runs while
    /// the coordinator has nothing else to do, and the last one of a run that ends is left to
    /// whatever opens the state next.
    pub(crate) fn defer_folds(mut self) -> Coordinator {
        self.defer_folds = true;
        self
    }

    /// Its report, and its commit record and stores, which the run lets go of as it ends
    /// (see `Running::close_state`).
    pub(crate) fn into_parts(self) -> (CheckpointReport, Arc<Commits>, Vec<Arc<Store>>) {
        (self.report, self.commits, self.stores)
    }

    /// When the stores should be folded to the last commit at the latest, if one is not
    /// folded yet: [`FOLD_WITHIN`] after it.
    pub(crate) fn fold_due(&self) -> Option<Instant> {
        self.unfolded.map(|(_, at)| at + FOLD_WITHIN)
    }

    /// Fold every store to the last commit, if it is not folded yet.
    pub(crate) fn fold_committed(&mut self) -> anyhow::Result<()> {
        if let Some((txid, _)) = self.unfolded.take() {
            for s in &self.stores {
                s.fold(txid)?;
            }
        }
        Ok(())
    }

    /// Take one report; commits what it completes. Returns the txid committed, if any.
    pub(crate) fn on(&mut self, report: Report) -> anyhow::Result<Option<u64>> {
        match self.take(report) {
            Some(txid) => self.commit(txid).map(|()| Some(txid)),
            None => Ok(None),
        }
    }

    /// Take one report; the txid it makes ready to commit, if any, left for
    /// [`Coordinator::commit`] (nimbus copies the checkpoint to the other nimbuses first).
    pub(crate) fn take(&mut self, report: Report) -> Option<u64> {
        match report {
            Report::Prepared { txid, task } => {
                let last = self.last_saved.entry(task).or_default();
                *last = (*last).max(txid);
                if txid <= self.report.last {
                    return None;
                }
                self.prepared
                    .entry(txid)
                    .or_insert_with(|| (Instant::now(), BTreeSet::new()))
                    .1
                    .insert(task);
            }
            Report::Finished { task } => {
                self.finished.insert(task);
            }
        }
        self.prepared
            .iter()
            .rev()
            .find(|(&txid, (_, saved))| self.ready(txid, saved))
            .map(|(&txid, _)| txid)
    }

    /// Whether every task saved `txid`, or ended with its last save at or before it (its
    /// final state, saved after its end-of-input output, must be in the commit that covers
    /// that output).
    fn ready(&self, txid: u64, saved: &BTreeSet<u32>) -> bool {
        self.expected.iter().all(|t| {
            saved.contains(t)
                || (self.finished.contains(t)
                    && self.last_saved.get(t).is_none_or(|&last| last <= txid))
        })
    }

    /// Commit `txid`, which [`Coordinator::take`] found ready: one write of the commit
    /// record, then each store folds what it prepared.
    pub(crate) fn commit(&mut self, txid: u64) -> anyhow::Result<()> {
        let since = self
            .prepared
            .get(&txid)
            .map_or_else(Instant::now, |(since, _)| *since);
        self.commits.commit(txid)?;
        let first_unfolded = self.unfolded.map_or_else(Instant::now, |(_, at)| at);
        self.unfolded = Some((txid, first_unfolded));
        if !self.defer_folds {
            self.fold_committed()?;
        }
        self.prepared = self.prepared.split_off(&(txid + 1));
        self.report.committed += 1;
        self.report.last = txid;
        self.report.latencies.push(since.elapsed());
        tracing::debug!(txid, "checkpoint committed");
        crate::components::committed::checkpoint_committed(txid);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuple::Value;

    fn coordinator(tasks: &[u32]) -> Coordinator {
        let commits = Arc::new(Commits::memory().expect("memory commits"));
        let store = Arc::new(Store::memory().expect("memory store"));
        Coordinator::new(commits, vec![store], tasks.iter().copied().collect(), 0)
    }

    fn prepared(txid: u64, task: u32) -> Report {
        Report::Prepared { txid, task }
    }

    #[test]
    fn a_checkpoint_commits_once_every_task_saved_it() {
        let mut c = coordinator(&[1, 2, 3]);
        assert_eq!(c.on(prepared(1, 1)).ok().flatten(), None);
        assert_eq!(c.on(prepared(1, 2)).ok().flatten(), None);
        assert_eq!(c.on(prepared(1, 3)).ok().flatten(), Some(1));
        assert_eq!(
            c.commits.committed().ok().flatten().map(|c| c.txid),
            Some(1)
        );
    }

    /// Deferred, a commit records the checkpoint at once and leaves the store's prepared
    /// entries until `fold_committed`, due within `FOLD_WITHIN`; folded, they are gone.
    #[test]
    fn a_deferred_fold_waits_for_fold_committed() {
        let mut c = coordinator(&[1]).defer_folds();
        let store = c.stores[0].clone();
        let t = crate::runtime::checkpoint::task_key("count", 0);
        let row = (Value::str("x"), Some(Value::Int(1)));
        store.prepare(1, &t, &[row], None).expect("prepares");
        assert_eq!(c.fold_due(), None);
        assert_eq!(c.on(prepared(1, 1)).ok().flatten(), Some(1));
        assert_eq!(
            c.commits.committed().ok().flatten().map(|c| c.txid),
            Some(1)
        );
        assert_eq!(store.prepared_txids().ok(), Some(vec![1]), "not folded yet");
        let due = c.fold_due().expect("a fold is due");
        assert!(due <= Instant::now() + FOLD_WITHIN);
        c.fold_committed().expect("folds");
        assert_eq!(store.prepared_txids().ok(), Some(vec![]));
        assert_eq!(
            store.entries(&t).ok(),
            Some(vec![(Value::str("x"), Value::Int(1))])
        );
        assert_eq!(c.fold_due(), None);
    }

    #[test]
    fn a_duplicate_or_late_report_commits_nothing_again() {
        let mut c = coordinator(&[1, 2]);
        c.on(prepared(1, 1)).ok();
        assert_eq!(c.on(prepared(1, 1)).ok().flatten(), None, "a duplicate");
        assert_eq!(c.on(prepared(1, 2)).ok().flatten(), Some(1));
        assert_eq!(c.on(prepared(1, 2)).ok().flatten(), None, "late, committed");
        assert_eq!(c.report.committed, 1);
    }

    #[test]
    fn a_checkpoint_one_task_missed_is_passed_over_by_a_later_one() {
        let mut c = coordinator(&[1, 2]);
        c.on(prepared(1, 1)).ok();
        c.on(prepared(2, 1)).ok();
        assert_eq!(c.on(prepared(2, 2)).ok().flatten(), Some(2));
        assert_eq!(
            c.on(prepared(1, 2)).ok().flatten(),
            None,
            "older than committed"
        );
        assert_eq!(c.report.last, 2);
    }

    #[test]
    fn an_ended_task_counts_only_from_its_last_save_on() {
        let mut c = coordinator(&[1, 2]);
        // Task 1 saved its final state under 5 and ended; 3 cannot commit without it.
        c.on(prepared(5, 1)).ok();
        c.on(Report::Finished { task: 1 }).ok();
        assert_eq!(c.on(prepared(3, 2)).ok().flatten(), None);
        assert_eq!(c.on(prepared(5, 2)).ok().flatten(), Some(5));
    }

    #[test]
    fn an_ended_task_counts_for_every_later_checkpoint() {
        let mut c = coordinator(&[1, 2]);
        c.on(prepared(1, 1)).ok();
        assert_eq!(c.on(Report::Finished { task: 1 }).ok().flatten(), None);
        assert_eq!(c.on(prepared(3, 2)).ok().flatten(), Some(3));
    }
}
