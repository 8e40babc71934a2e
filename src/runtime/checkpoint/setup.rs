//! Setting checkpoints up for a run: which components keep state, where it is kept
//! (`topology.state.provider`, `topology.state.dir`), the stores of this process's workers with
//! what the last run committed restored in them, and the coordinator's thread.

use super::coordinator::{Coordinator, FOLD_IDLE};
use super::{ratio_for, Checkpointing, Report};
use crate::model::plan::Plan;
use crate::model::Topology;
use crate::state::{dir, Commits, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

/// The tasks that save checkpoints: every spout task and every stateful bolt task.
pub(crate) fn saving_tasks(topology: &Topology, plan: &Plan) -> BTreeSet<u32> {
    topology
        .components
        .iter()
        .filter(|c| c.is_spout() || c.stateful)
        .filter_map(|c| plan.component(&c.id))
        .flat_map(|c| c.tasks.clone())
        .collect()
}

/// The state dir a topology's config names, when its provider is `embedded`.
pub(crate) fn state_dir(topology: &Topology) -> anyhow::Result<Option<PathBuf>> {
    topology.state_dir()
}

/// Checkpoints set up for the workers of this process.
pub(crate) struct Setup {
    commits: Arc<Commits>,
    stores: BTreeMap<usize, Arc<Store>>,
    /// The last committed txid (0: none).
    base: u64,
    ratio: u64,
    /// Coordinated by nimbus, and whether this start is a rollback within the run.
    remote: Option<bool>,
}

impl Setup {
    /// Open the commit record and the stores of workers `local`; fold what the last run
    /// committed, drop what it did not. `None` when no component keeps state. `whole`: this
    /// process runs every worker (a state dir is kept only then).
    pub(crate) fn open(
        topology: &Topology,
        local: &[usize],
        whole: bool,
    ) -> anyhow::Result<Option<Setup>> {
        if !topology.is_stateful() {
            return Ok(None);
        }
        let dir = state_dir(topology)?;
        anyhow::ensure!(
            whole || dir.is_none(),
            "a state dir (topology.state.dir, --state-dir) of workers in several processes is \
             kept by nimbus, not by the workers"
        );
        let (commits, made) = match &dir {
            Some(d) => open_state_dir(d, topology, local.len())?,
            None => (Commits::memory()?, Vec::new()),
        };
        let mut made: BTreeMap<usize, Store> = made.into_iter().enumerate().collect();
        let mut stores = BTreeMap::new();
        for &w in local {
            let store = match (&dir, made.remove(&w)) {
                (_, Some(store)) => store,
                (Some(d), None) => Store::open_marked(&dir::worker_path(d, w))?,
                (None, None) => Store::memory()?,
            };
            stores.insert(w, Arc::new(store));
        }
        let base = commits.committed()?.map_or(0, |c| c.txid);
        check_shape(&commits, topology, dir.as_ref())?;
        for store in stores.values() {
            store.fold(base)?;
            store.discard_after(base)?;
        }
        if base > 0 {
            if let Some(d) = &dir {
                crate::stderr_println!(
                    "resuming `{}` from checkpoint {base} in {} (`storm state clear {}` starts over)",
                    topology.name,
                    d.display(),
                    d.display()
                );
            }
        }
        Ok(Some(Setup {
            commits: Arc::new(commits),
            stores,
            base,
            ratio: ratio_for(topology.config.checkpoint_interval()),
            remote: None,
        }))
    }

    /// Checkpoints coordinated elsewhere: every `local` worker keeps them in `store`, which
    /// holds what the tasks restore from commit `base`.
    pub(crate) fn remote(
        local: &[usize],
        remote: &super::RemoteCheckpoints,
        topology: &Topology,
    ) -> anyhow::Result<Setup> {
        Ok(Setup {
            commits: Arc::new(Commits::memory()?),
            stores: local.iter().map(|&w| (w, remote.store.clone())).collect(),
            base: remote.base,
            ratio: ratio_for(topology.config.checkpoint_interval()),
            remote: Some(remote.rollback),
        })
    }

    /// What the executors of worker `w` take part in checkpoints with.
    pub(crate) fn for_worker(
        &self,
        w: usize,
        reports: &crossbeam_channel::Sender<Report>,
    ) -> Option<Checkpointing> {
        Some(Checkpointing {
            store: self.stores.get(&w)?.clone(),
            reports: reports.clone(),
            base: self.base,
            ratio: self.ratio,
            resuming: self.base > 0,
            remote: self.remote.is_some(),
            rollback: self.remote == Some(true),
        })
    }

    /// Start the coordinator for `expected` tasks: the channel tasks report on, and its
    /// thread, which ends once every sender is gone and hands the coordinator back.
    pub(crate) fn spawn_coordinator(
        &self,
        expected: BTreeSet<u32>,
    ) -> anyhow::Result<(
        crossbeam_channel::Sender<Report>,
        JoinHandle<anyhow::Result<Coordinator>>,
    )> {
        let (tx, rx) = crossbeam_channel::unbounded::<Report>();
        let stores = self.stores.values().cloned().collect();
        let c = Coordinator::new(self.commits.clone(), stores, expected, self.base);
        let mut c = c.defer_folds();
        let handle = std::thread::Builder::new()
            .name("checkpoints".into())
            .spawn(move || {
                while let Some(report) = next_report(&rx, &mut c)? {
                    c.on(report)?;
                }
                Ok(c)
            })?;
        Ok((tx, handle))
    }
}

/// The coordinator's next report, folding its stores to the last commit first when it waits
/// [`FOLD_IDLE`] for one or the fold is due; `None` once every task is gone (a commit not
/// folded then is folded by whatever opens the state next).
fn next_report(
    rx: &crossbeam_channel::Receiver<Report>,
    c: &mut Coordinator,
) -> anyhow::Result<Option<Report>> {
    use crossbeam_channel::RecvTimeoutError;
    loop {
        let Some(due) = c.fold_due() else {
            return Ok(rx.recv().ok());
        };
        let now = std::time::Instant::now();
        if now >= due {
            c.fold_committed()?;
            continue;
        }
        match rx.recv_timeout((due - now).min(FOLD_IDLE)) {
            Ok(report) => return Ok(Some(report)),
            Err(RecvTimeoutError::Timeout) => c.fold_committed()?,
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
        }
    }
}

/// Open the commit record of the state dir `dir` for a run of `topology` with `workers`
/// worker stores: refused when the dir is damaged (an empty file, a missing part) or was
/// written for another topology or worker count; made whole, or not at all, when new.
///
/// With the commit record, the worker stores it made, still open (none when the dir was there).
pub(crate) fn open_state_dir(
    dir: &std::path::Path,
    topology: &Topology,
    workers: usize,
) -> anyhow::Result<(Commits, Vec<Store>)> {
    dir::check_parts(dir)?;
    let shown = dir.to_path_buf();
    let made = dir::create_atomically(dir, workers, |c| {
        check_shape(c, topology, Some(&shown))?;
        c.set_workers(workers as u64)
    })?;
    let (commits, stores) = match made {
        Some(made) => (made.commits, made.stores),
        None => (Commits::open_marked(dir)?, Vec::new()),
    };
    dir::check_needed_stores(dir, &commits)?;
    check_workers(dir, workers)?;
    Ok((commits, stores))
}

/// A state dir keeps each task's state in the store of the worker that ran it: a resumed run
/// must have as many workers, so each task finds its state where it left it.
fn check_workers(dir: &std::path::Path, workers: usize) -> anyhow::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let files = dir::worker_files(dir)?;
    let before = files.iter().map(|f| f.worker + 1).max().unwrap_or(0);
    anyhow::ensure!(
        before == 0 || before == workers,
        "state dir {} was written by a run with {before} worker(s); this run has {workers}: each task's state is kept by the worker that ran it, so run it with --workers {before} (or `storm state clear {}`)",
        dir.display(),
        dir.display()
    );
    Ok(())
}

/// A state dir holds one topology's state, for the parallelism it ran with: a resumed run
/// must have the same name and the same tasks per component.
pub(crate) fn check_shape(
    commits: &Commits,
    topology: &Topology,
    dir: Option<&PathBuf>,
) -> anyhow::Result<()> {
    let now: Vec<(String, u32)> = topology
        .components
        .iter()
        .map(|c| (c.id.clone(), c.tasks))
        .collect();
    let Some((name, before)) = commits.shape()? else {
        return commits.set_shape(&topology.name, &now);
    };
    let shown = dir.map_or_else(|| "memory".to_string(), |d| d.display().to_string());
    anyhow::ensure!(
        name == topology.name,
        "state dir {shown} holds topology `{name}`, not `{}` (use another --state-dir, or `storm state clear {shown}`)",
        topology.name
    );
    for (id, tasks) in &now {
        if let Some((_, was)) = before.iter().find(|(b, _)| b == id) {
            anyhow::ensure!(
                was == tasks,
                "state dir {shown} was written with {was} task(s) of `{id}`; this run has {tasks}: state is kept per task, so the task counts must match"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::TaskKey;
    use crate::tuple::Value;

    fn topology(dsl: &str, dir: &std::path::Path) -> Topology {
        let opts = crate::topology::LoadOptions {
            overrides: vec![
                "topology.state.provider=embedded".into(),
                format!("topology.state.dir={:?}", dir.display().to_string()),
            ],
            filter: None,
        };
        crate::topology::load_inline(dsl, &opts)
            .expect("a valid topology")
            .topology
    }

    const COUNT: &str = "name wc\nstdin | split | count(word) stateful=true | stdout";

    /// A crash after a checkpoint was prepared and before it committed (a rollback during
    /// prepare): the next run starts from the last commit, the prepared changes gone.
    #[test]
    fn what_was_only_prepared_is_rolled_back_at_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = topology(COUNT, dir.path());
        let key = TaskKey {
            component: "count".into(),
            index: 0,
        };
        {
            let setup = Setup::open(&t, &[0], true)
                .expect("opens")
                .expect("stateful");
            let store = &setup.stores[&0];
            store
                .prepare(1, &key, &[(Value::str("a"), Some(Value::Int(1)))], None)
                .expect("prepared");
            setup.commits.commit(1).expect("committed");
            store
                .prepare(2, &key, &[(Value::str("a"), Some(Value::Int(5)))], None)
                .expect("prepared, never committed");
        }
        let setup = Setup::open(&t, &[0], true)
            .expect("opens")
            .expect("stateful");
        assert_eq!(setup.base, 1);
        let entries = setup.stores[&0].entries(&key).expect("entries");
        assert_eq!(entries, vec![(Value::str("a"), Value::Int(1))]);
    }

    #[test]
    fn a_state_dir_of_other_task_counts_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(Setup::open(&topology(COUNT, dir.path()), &[0], true).expect("opens"));
        let wider = "name wc\nstdin | split | count(word) stateful=true x2 | stdout";
        let err = Setup::open(&topology(wider, dir.path()), &[0], true)
            .err()
            .expect("refused");
        assert!(
            format!("{err}").contains("1 task(s) of `count`; this run has 2"),
            "{err}"
        );
    }

    #[test]
    fn a_state_dir_of_another_worker_count_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = topology(COUNT, dir.path());
        drop(Setup::open(&t, &[0, 1], true).expect("opens"));
        let err = Setup::open(&t, &[0], true).err().expect("refused");
        assert!(
            format!("{err}").contains("written by a run with 2 worker(s); this run has 1"),
            "{err}"
        );
        assert!(
            Setup::open(&t, &[0, 1], true).is_ok(),
            "the same count resumes"
        );
    }

    #[test]
    fn a_state_dir_is_refused_when_workers_run_in_other_processes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Setup::open(&topology(COUNT, dir.path()), &[0], false)
            .err()
            .expect("refused");
        assert!(
            format!("{err}").contains("is kept by nimbus, not by the workers"),
            "{err}"
        );
    }
}
