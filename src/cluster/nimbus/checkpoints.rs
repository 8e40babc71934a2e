//! Nimbus's part in the checkpoints of a topology whose workers run in several processes (a
//! cluster, `storm run --processes`): it is the topology's one coordinator, keeps what every
//! checkpoint prepared and what is committed in a store of its own (under its data folder, so
//! a moved executor's new worker finds it), and records the last commit and the rollback
//! generation in the coordination tree under `/checkpoints/{id}`.
//!
//! Workers run in generations. A worker joins the current one at its start and waits until
//! every slot of the assignment joined it (so no worker of an older generation still sends
//! tuples to it), then restores its tasks from the last commit. A worker that joins again
//! (its process was restarted after it was lost) or a newcomer once the generation runs (its
//! executors moved off a lost slot) starts a new generation: what the old one prepared is
//! dropped, and every worker of the old one rolls back (it learns the generation from its
//! heartbeats and from every checkpoint answer), its spouts going back to their committed
//! positions.

use super::pages::page;
use super::replicate::Replica;
use super::{now_secs, Known, Nimbus};
use crate::cluster::coordination::layout::{CheckpointRecord, NodePort};
use crate::cluster::protocol::rpc::{
    assignment_version, CheckpointNews, CheckpointReply, JoinReply, StatePage,
};
use crate::runtime::checkpoint::coordinator::Coordinator;
use crate::runtime::checkpoint::{setup::saving_tasks, task_key, Report};
use crate::state::{packed, Commits, Store, TaskKey};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// One topology's checkpoints, as nimbus keeps them.
pub(crate) struct Keeper {
    pub(super) commits: Arc<Commits>,
    pub(super) store: Arc<Store>,
    expected: BTreeSet<u32>,
    /// The store names of the tasks in `expected`.
    pub(super) keys: Vec<TaskKey>,
    coordinator: Coordinator,
    pub(super) record: CheckpointRecord,
    /// Each commit is copied to the other nimbuses first (several nimbuses on ZooKeeper, the
    /// store under nimbus's data folder).
    pub(super) replicated: bool,
    /// The other nimbuses' replicas, by address.
    pub(super) replicas: BTreeMap<String, Replica>,
    /// The slots that joined this generation, with the incarnation of their worker.
    joined: BTreeMap<NodePort, u64>,
    /// Every slot of the assignment joined: the generation runs.
    sealed: bool,
    /// The data version of `/checkpoints/{id}` as this keeper last wrote it.
    version: i32,
    /// The record could not be written (another nimbus changed it): the keeper is dropped
    /// and opened again from the tree.
    stale: bool,
}

/// A topology's commit record and store.
type Stores = (Arc<Commits>, Arc<Store>);

/// The keepers of the topologies nimbus coordinates, by id.
pub(crate) type Keepers = Arc<Mutex<BTreeMap<String, Keeper>>>;

/// Where nimbus keeps topology `id`'s checkpoints.
pub(crate) fn keeper_dir(data: &std::path::Path, id: &str) -> std::path::PathBuf {
    data.join("checkpoints").join(id)
}

/// The commit record and the store of topology `id`'s checkpoints: in its state dir when its
/// provider is `embedded` (a path on nimbus's host; one store, as a run with one worker keeps,
/// so `storm state` reads it and a later run resumes from it), else under nimbus's data folder.
pub(super) fn open_stores(
    data: &std::path::Path,
    id: &str,
    topology: &crate::model::Topology,
) -> anyhow::Result<(Arc<Commits>, Arc<Store>)> {
    use crate::runtime::checkpoint::setup::{check_shape, open_state_dir, state_dir};
    let Some(dir) = state_dir(topology)? else {
        let dir = keeper_dir(data, id);
        let commits = Commits::open(&dir)?;
        let store = Store::open(&dir.join("state.redb"))?;
        return Ok((Arc::new(commits), Arc::new(store)));
    };
    let (commits, made) = open_state_dir(&dir, topology, 1)?;
    check_shape(&commits, topology, Some(&dir))?;
    let store = match made.into_iter().next() {
        Some(store) => store,
        None => Store::open_marked(&crate::state::dir::worker_path(&dir, 0))?,
    };
    if let Some(c) = commits.committed()? {
        crate::stderr_println!(
            "resuming `{}` from checkpoint {} in {} (`storm state clear {}` starts over)",
            topology.name,
            c.txid,
            dir.display(),
            dir.display()
        );
    }
    Ok((Arc::new(commits), Arc::new(store)))
}

impl Nimbus {
    pub(super) fn keepers(&self) -> MutexGuard<'_, BTreeMap<String, Keeper>> {
        self.checkpoints.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run `f` on topology `id`'s keeper, opened first if need be.
    fn with_keeper<R>(
        &self,
        id: &str,
        f: impl FnOnce(&Nimbus, &mut Keeper) -> anyhow::Result<R>,
    ) -> anyhow::Result<R> {
        let mut keepers = self.keepers();
        if !keepers.contains_key(id) {
            let keeper = self.open_keeper(id)?;
            keepers.insert(id.to_string(), keeper);
        }
        let keeper = keepers
            .get_mut(id)
            .ok_or_else(|| anyhow::anyhow!("no checkpoints of {id}"))?;
        let result = f(self, keeper);
        if keeper.stale {
            keepers.remove(id);
        }
        result
    }

    /// Write `k.record` to the tree, unless another nimbus changed it since this keeper
    /// last wrote it (then the keeper is stale: opened again from the tree by the next call).
    fn write_record(&self, id: &str, k: &mut Keeper) -> anyhow::Result<()> {
        match self
            .state()
            .swap_checkpoint_record(id, &k.record, Some(k.version))
        {
            Ok(version) => {
                k.version = version;
                Ok(())
            }
            Err(e) => {
                k.stale = true;
                anyhow::bail!("cannot record checkpoint {} of {id}: {e}", k.record.txid)
            }
        }
    }

    /// Open topology `id`'s store and commit record, fold what was committed, drop the rest.
    fn open_keeper(&self, id: &str) -> anyhow::Result<Keeper> {
        anyhow::ensure!(
            self.state().storm_base(id)?.is_some(),
            "no topology {id} (killed or finished)"
        );
        let known = self.known(id)?;
        anyhow::ensure!(
            known.topology.is_stateful(),
            "topology {id} keeps no checkpointed state"
        );
        let recorded = self.state().checkpoint_record_at(id)?;
        let me = self.zk.as_ref().and_then(|zk| zk.me()).map(str::to_string);
        let own_dir = crate::runtime::checkpoint::setup::state_dir(&known.topology)?.is_none();
        let ((commits, store), txid) =
            self.stores_holding(id, &known, recorded.as_ref().map(|r| &r.0), &me, own_dir)?;
        store.fold(txid)?;
        store.discard_after(txid)?;
        // What this store received as a replica is over: it leads from `txid` now.
        if commits.replicated()?.is_some_and(|t| t != 0) {
            commits.set_replicated(0)?;
        }
        let expected = saving_tasks(&known.topology, &known.plan);
        // A generation already in the tree runs (this nimbus restarted): any join now is of a
        // restarted or moved worker.
        let version = recorded.as_ref().map(|(_, v)| *v);
        let (record, sealed) = taken_over(id, recorded.map(|(r, _)| r), txid, me)?;
        let version = self
            .state()
            .swap_checkpoint_record(id, &record, version)
            .map_err(|e| anyhow::anyhow!("cannot take over the checkpoints of {id}: {e}"))?;
        Ok(Keeper {
            coordinator: Coordinator::new(
                commits.clone(),
                vec![store.clone()],
                expected.clone(),
                txid,
            ),
            commits,
            store,
            expected,
            keys: task_keys(&known),
            record,
            replicated: own_dir && self.zk.is_some(),
            replicas: BTreeMap::new(),
            joined: BTreeMap::new(),
            sealed,
            version,
            stale: false,
        })
    }

    /// Topology `id`'s stores, holding what the tree's record says was committed, and the
    /// checkpoint they hold. Committed through another nimbus (it led meanwhile), the state
    /// is this nimbus's replica of it when the record names this one among those holding it,
    /// else fetched from one of them — unless the topology keeps it in a dir of its own
    /// (`own_dir` false: a path on nimbus's host).
    fn stores_holding(
        &self,
        id: &str,
        known: &Known,
        recorded: Option<&CheckpointRecord>,
        me: &Option<String>,
        own_dir: bool,
    ) -> anyhow::Result<(Stores, u64)> {
        let stores = open_stores(&self.data, id, &known.topology)?;
        let txid = stores.0.committed()?.map_or(0, |c| c.txid);
        let elsewhere = recorded.filter(|r| {
            let other = |m: &String| r.holder.as_ref().is_some_and(|h| h != m);
            own_dir && r.txid > 0 && me.as_ref().is_some_and(other)
        });
        let Some(r) = elsewhere else {
            return Ok((stores, txid));
        };
        let replica = me.as_ref().is_some_and(|m| r.replicas.contains(m));
        if replica && holds(&stores.0, &stores.1, Some(r.txid))? == r.txid {
            tracing::warn!(
                "nimbus: {id}: leads on from its replica of checkpoint {} (committed by the nimbus at {})",
                r.txid,
                r.holder.as_deref().unwrap_or("?")
            );
            return Ok((stores, r.txid));
        }
        drop(stores);
        let holders: Vec<&String> = r
            .holder
            .iter()
            .chain(&r.replicas)
            .filter(|h| Some(*h) != me.as_ref())
            .collect();
        self.fetch_from_any(id, &holders, (r.txid, txid), known)?;
        let stores = open_stores(&self.data, id, &known.topology)?;
        let txid = stores.0.committed()?.map_or(0, |c| c.txid);
        Ok((stores, txid))
    }

    /// A worker joins (or asks again whether it may start).
    pub(crate) fn checkpoint_join(
        &self,
        id: &str,
        slot: &NodePort,
        incarnation: u64,
    ) -> anyhow::Result<JoinReply> {
        let assignment = self.state().assignment(id)?.unwrap_or_default();
        let killed = self.state().storm_base(id)?.is_some_and(|b| {
            b.status == crate::cluster::coordination::layout::TopologyStatus::Killed
        });
        let version = assignment_version(&assignment);
        let slots: BTreeSet<NodePort> = assignment.task_to_node_port.into_values().collect();
        self.with_keeper(id, |nimbus, k| {
            let again = match k.joined.get(slot) {
                Some(&known) => known != incarnation,
                None => k.sealed,
            };
            if again {
                nimbus.roll_back(id, k, slot)?;
            }
            k.joined.insert(slot.clone(), incarnation);
            // A killed topology starts no generation: its workers that joined meanwhile have
            // stopped, and the others would wait for their tasks for ever.
            let all = !slots.is_empty() && slots.iter().all(|s| k.joined.contains_key(s));
            if !k.sealed && !killed && all {
                k.sealed = true;
                tracing::info!(
                    "nimbus: {id}: generation {} starts from checkpoint {}",
                    k.record.generation,
                    k.record.txid
                );
            }
            Ok(JoinReply {
                generation: k.record.generation,
                ready: k.sealed,
                txid: k.record.txid,
                assignment: version,
                killed,
            })
        })
    }

    /// Start a new generation from the last commit: the worker on `slot` was lost.
    fn roll_back(&self, id: &str, k: &mut Keeper, slot: &NodePort) -> anyhow::Result<()> {
        k.record.generation += 1;
        k.record.time_secs = now_secs();
        k.store.discard_after(k.record.txid)?;
        k.coordinator = Coordinator::new(
            k.commits.clone(),
            vec![k.store.clone()],
            k.expected.clone(),
            k.record.txid,
        );
        k.joined.clear();
        k.sealed = false;
        self.finished_lock().remove(id);
        self.state().set_finished_slots(id, &BTreeSet::new())?;
        self.write_record(id, k)?;
        tracing::warn!(
            "nimbus: {id}: the worker on {slot} was lost; every worker rolls back to checkpoint {} (generation {})",
            k.record.txid,
            k.record.generation
        );
        Ok(())
    }

    /// A page of `task`'s committed state, for a worker of `generation` restoring it.
    pub(crate) fn checkpoint_state(
        &self,
        id: &str,
        generation: u64,
        task: &TaskKey,
        from: usize,
    ) -> anyhow::Result<StatePage> {
        self.with_keeper(id, |_, k| {
            anyhow::ensure!(
                generation == k.record.generation,
                "generation {generation} of {id} is over (now {})",
                k.record.generation
            );
            let all = k.store.committed_rows(task)?;
            Ok(page(all, from))
        })
    }

    /// News of a checkpoint from a worker; what it commits is recorded in the tree.
    pub(crate) fn checkpoint_news(
        &self,
        id: &str,
        generation: u64,
        news: CheckpointNews,
    ) -> anyhow::Result<CheckpointReply> {
        self.with_keeper(id, |nimbus, k| {
            if generation == k.record.generation {
                let report = match news {
                    CheckpointNews::Prepared {
                        txid,
                        task,
                        key,
                        part,
                        last,
                    } => {
                        if txid > k.record.txid {
                            k.store.prepare_rows(txid, &key, &packed::unpack(&part)?)?;
                        }
                        last.then_some(Report::Prepared { txid, task })
                    }
                    CheckpointNews::Finished { task } => Some(Report::Finished { task }),
                };
                if let Some(txid) = report.and_then(|r| k.coordinator.take(r)) {
                    // Copied to the other nimbuses before it is committed and recorded: the
                    // record names those that hold it.
                    let replicas = if k.replicated {
                        nimbus.replicate(
                            id,
                            (&*k.store, k.keys.as_slice()),
                            &mut k.replicas,
                            (k.record.txid, txid),
                        )
                    } else {
                        Vec::new()
                    };
                    k.coordinator.commit(txid)?;
                    k.record.txid = txid;
                    k.record.time_secs = now_secs();
                    k.record.replicas = replicas;
                    nimbus.write_record(id, k)?;
                    tracing::debug!(target: "storm::runtime::checkpoint", txid, "checkpoint committed");
                }
            }
            Ok(nimbus.checkpoint_reply(id, k))
        })
    }

    /// Whether news from a worker of `generation` (`None`: not checkpointed) is of the
    /// current generation of topology `id`.
    pub(crate) fn current_generation(
        &self,
        id: &str,
        generation: Option<u64>,
    ) -> anyhow::Result<bool> {
        let Some(generation) = generation else {
            return Ok(true);
        };
        self.with_keeper(id, |_, k| Ok(k.record.generation == generation))
    }

    /// Where topology `id`'s checkpoints are.
    pub(crate) fn checkpoint_status(&self, id: &str) -> anyhow::Result<CheckpointReply> {
        self.with_keeper(id, |nimbus, k| Ok(nimbus.checkpoint_reply(id, k)))
    }

    fn checkpoint_reply(&self, id: &str, k: &Keeper) -> CheckpointReply {
        CheckpointReply {
            generation: k.record.generation,
            committed: k.record.txid,
            all_finished: k.sealed && self.finished(id).is_ok_and(|(done, _)| done),
        }
    }

    /// Close topology `id`'s keeper (its store files are removed with the topology).
    pub(crate) fn forget_checkpoints(keepers: &Keepers, id: &str) {
        keepers.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
    }
}

/// The store names of topology `known`'s tasks that save checkpoints.
pub(super) fn task_keys(known: &Known) -> Vec<TaskKey> {
    let plan = &known.plan;
    saving_tasks(&known.topology, plan)
        .into_iter()
        .filter_map(|task| {
            let component = plan.component_of_task(task);
            let first = *plan.component(component)?.tasks.start();
            Some(task_key(component, task - first))
        })
        .collect()
}

/// The checkpoint this nimbus's store or replica holds of a topology, with `commits` its
/// commit record: the one committed, or a later one received whole once the tree records it
/// (`recorded`), folded in then.
pub(super) fn holds(
    commits: &Commits,
    store: &Store,
    recorded: Option<u64>,
) -> anyhow::Result<u64> {
    let held = commits.committed()?.map_or(0, |c| c.txid);
    match (recorded, commits.replicated()?) {
        (Some(r), Some(whole)) if r == whole && r > held => {
            store.fold(r)?;
            commits.commit(r)?;
            Ok(r)
        }
        _ => Ok(held),
    }
}

/// The commit record a nimbus takes over topology `id`'s checkpoints with, holding checkpoint
/// `txid`, and whether a generation already runs (`recorded` was there).
fn taken_over(
    id: &str,
    recorded: Option<CheckpointRecord>,
    txid: u64,
    me: Option<String>,
) -> anyhow::Result<(CheckpointRecord, bool)> {
    Ok(match recorded {
        // Recorded by a nimbus whose store this one does not have: restoring nothing
        // would silently start the counts over.
        Some(r) if r.txid > txid => anyhow::bail!(
            "checkpoint {} of {id} was committed by a nimbus whose store is not here (this one holds checkpoint {txid}); the state of a topology whose workers run in several processes is kept by the nimbus that leads",
            r.txid
        ),
        Some(r) => {
            // The nimbuses that held the commit still do when it is the one taken over.
            let replicas: Vec<String> = if r.txid == txid {
                let held = r.holder.iter().chain(&r.replicas).filter(|h| Some(*h) != me.as_ref());
                held.cloned().collect()
            } else {
                Vec::new()
            };
            (
                CheckpointRecord {
                    txid,
                    holder: me,
                    replicas,
                    ..r
                },
                true,
            )
        }
        None => (
            CheckpointRecord {
                txid,
                generation: 1,
                time_secs: now_secs(),
                holder: me,
                replicas: Vec::new(),
            },
            false,
        ),
    })
}

#[cfg(test)]
mod generation_tests {
    use super::*;
    use crate::cluster::coordination::layout::SupervisorInfo;
    use crate::cluster::protocol::rpc::Submission;
    use crate::state::RawState;
    use crate::tuple::Value;
    use std::time::Duration;

    /// Nimbus with one supervisor of two slots, running a checkpointed count over both.
    fn nimbus_with_count() -> (tempfile::TempDir, Arc<Nimbus>, String, Vec<NodePort>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let nimbus = Nimbus::open(dir.path(), crate::config::layers::defaults()).expect("nimbus");
        let session = nimbus.open_session(Duration::from_secs(60));
        let info = SupervisorInfo {
            hostname: "127.0.0.1".into(),
            time_secs: now_secs(),
            uptime_secs: 0,
            ports: vec![7001, 7002],
        };
        nimbus.supervisor_beat(session, "s", &info).expect("beat");
        let id = nimbus
            .submit(Submission {
                path: "<-e>".into(),
                text: "name wc\nstdin | split | count(word) stateful=true x2 | stdout".into(),
                overrides: vec!["topology.workers=2".into()],
                home: None,
                resources: String::new(),
                parallelism: Default::default(),
            })
            .expect("submitted");
        let slots: BTreeSet<NodePort> = nimbus
            .state()
            .assignment(&id)
            .expect("read")
            .expect("assigned")
            .task_to_node_port
            .into_values()
            .collect();
        (dir, nimbus, id, slots.into_iter().collect())
    }

    fn prepared(txid: u64, task: u32, key: &TaskKey, word: &str) -> CheckpointNews {
        let raw = RawState {
            rows: vec![(
                crate::state::codec::to_bytes(&Value::str(word)),
                Some(crate::state::codec::to_bytes(&Value::Int(1))),
            )],
            position: None,
        };
        CheckpointNews::Prepared {
            txid,
            task,
            key: key.clone(),
            part: packed::pack(&raw),
            last: true,
        }
    }

    /// Every saving task of the topology prepares `txid` in generation `generation`.
    fn prepare_all(n: &Nimbus, id: &str, generation: u64, txid: u64) -> CheckpointReply {
        let known = n.known(id).expect("known");
        let mut last = None;
        for task in saving_tasks(&known.topology, &known.plan) {
            let component = known.plan.component_of_task(task);
            let first = *known
                .plan
                .component(component)
                .expect("component")
                .tasks
                .start();
            let key = crate::runtime::checkpoint::task_key(component, task - first);
            let news = prepared(txid, task, &key, &format!("w{task}"));
            last = Some(n.checkpoint_news(id, generation, news).expect("news"));
        }
        last.expect("saving tasks")
    }

    #[test]
    fn a_generation_starts_once_every_slot_joined_and_a_rejoin_rolls_everyone_back() {
        let (_dir, n, id, slots) = nimbus_with_count();
        assert_eq!(slots.len(), 2);
        let first = n.checkpoint_join(&id, &slots[0], 1).expect("join");
        assert_eq!((first.generation, first.ready, first.txid), (1, false, 0));
        assert!(n.checkpoint_join(&id, &slots[1], 2).expect("join").ready);
        assert!(
            n.checkpoint_join(&id, &slots[0], 1)
                .expect("asks again")
                .ready
        );

        let reply = prepare_all(&n, &id, 1, 1);
        assert_eq!((reply.generation, reply.committed), (1, 1));
        let record = n
            .state()
            .checkpoint_record(&id)
            .expect("read")
            .expect("record");
        assert_eq!((record.txid, record.generation), (1, 1));
        // Prepared, never committed: dropped by the rollback.
        let known = n.known(&id).expect("known");
        let count_task = *known.plan.component("count").expect("count").tasks.start();
        let key = crate::runtime::checkpoint::task_key("count", 0);
        let late = prepared(2, count_task, &key, "late");
        n.checkpoint_news(&id, 1, late).expect("news");

        // The worker of slot 0 restarted: generation 2, from checkpoint 1, nobody ready yet.
        let again = n.checkpoint_join(&id, &slots[0], 3).expect("rejoin");
        assert_eq!((again.generation, again.ready, again.txid), (2, false, 1));
        let record = n
            .state()
            .checkpoint_record(&id)
            .expect("read")
            .expect("record");
        assert_eq!(record.generation, 2);
        // News of the old generation changes nothing and says it is over.
        let stale = n
            .checkpoint_news(&id, 1, prepared(2, count_task, &key, "x"))
            .expect("news");
        assert_eq!((stale.generation, stale.committed), (2, 1));
        assert!(!n.current_generation(&id, Some(1)).expect("known"));
        assert!(
            n.checkpoint_state(&id, 1, &key, 0).is_err(),
            "stale restore"
        );
        assert!(n.checkpoint_join(&id, &slots[1], 4).expect("join").ready);
        let page = n.checkpoint_state(&id, 2, &key, 0).expect("restore");
        let raw = packed::unpack(&page.state).expect("packed");
        let words: Vec<Value> = raw
            .rows
            .iter()
            .map(|(k, _)| crate::state::codec::from_bytes(k).expect("key"))
            .collect();
        assert_eq!(
            words,
            vec![Value::str(&format!("w{count_task}"))],
            "not `late`"
        );

        // A newcomer once the generation runs (executors moved off a lost slot) rolls back too.
        let newcomer = NodePort {
            node: "s".into(),
            port: 7003,
        };
        assert_eq!(
            n.checkpoint_join(&id, &newcomer, 5)
                .expect("join")
                .generation,
            3
        );
    }

    #[test]
    fn a_nimbus_without_the_committed_store_refuses_rather_than_start_over() {
        let (dir, n, id, slots) = nimbus_with_count();
        n.checkpoint_join(&id, &slots[0], 1).expect("join");
        n.checkpoint_join(&id, &slots[1], 2).expect("join");
        assert_eq!(prepare_all(&n, &id, 1, 1).committed, 1);
        n.save().expect("tree saved");
        drop(n);
        std::fs::remove_dir_all(keeper_dir(dir.path(), &id)).expect("store removed");
        let other = Nimbus::open(dir.path(), crate::config::layers::defaults()).expect("nimbus");
        let err = other
            .checkpoint_join(&id, &slots[0], 3)
            .expect_err("refused");
        assert!(
            format!("{err}").contains("committed by a nimbus whose store is not here"),
            "{err}"
        );
    }

    #[test]
    fn a_nimbus_exports_exactly_the_commit_its_store_holds() {
        let (_dir, n, id, slots) = nimbus_with_count();
        assert_eq!(n.checkpoint_held(&id, None).expect("held"), 0);
        n.checkpoint_join(&id, &slots[0], 1).expect("join");
        n.checkpoint_join(&id, &slots[1], 2).expect("join");
        assert_eq!(prepare_all(&n, &id, 1, 1).committed, 1);
        assert_eq!(n.checkpoint_held(&id, None).expect("held"), 1);
        let known = n.known(&id).expect("known");
        let task = *known.plan.component("count").expect("count").tasks.start();
        let key = crate::runtime::checkpoint::task_key("count", 0);
        let err = n
            .checkpoint_export(&id, 2, &key, 0)
            .expect_err("not the commit it holds");
        assert!(format!("{err}").contains("holds checkpoint 1 of"), "{err}");
        let page = n.checkpoint_export(&id, 1, &key, 0).expect("exported");
        let raw = packed::unpack(&page.state).expect("packed");
        let words: Vec<Value> = raw
            .rows
            .iter()
            .map(|(k, _)| crate::state::codec::from_bytes(k).expect("key"))
            .collect();
        assert_eq!(words, vec![Value::str(&format!("w{task}"))]);
        assert_eq!(page.next, None);
        // Closed keepers (a standby's) are read from the files.
        n.keepers().clear();
        assert_eq!(n.checkpoint_held(&id, None).expect("held"), 1);
        assert!(n.checkpoint_export(&id, 1, &key, 0).is_ok());
    }

    #[test]
    fn a_topology_that_keeps_no_state_or_is_gone_has_no_checkpoints() {
        let (_dir, n, _id, slots) = nimbus_with_count();
        let plain = n
            .submit(Submission {
                path: "<-e>".into(),
                text: "name plain\nstdin | stdout".into(),
                overrides: Vec::new(),
                home: None,
                resources: String::new(),
                parallelism: Default::default(),
            })
            .expect("submitted");
        let err = n
            .checkpoint_join(&plain, &slots[0], 1)
            .expect_err("refused");
        assert!(
            format!("{err}").contains("keeps no checkpointed state"),
            "{err}"
        );
        let err = n.checkpoint_status("gone-1-1").expect_err("refused");
        assert!(format!("{err}").contains("no topology gone-1-1"), "{err}");
    }
}
