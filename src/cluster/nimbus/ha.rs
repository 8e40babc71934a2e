//! Nimbus on a ZooKeeper ensemble: the store it keeps the cluster state in, its place in the
//! leader election (several nimbuses, one leading, the others standing by and answering
//! clients with where the leader is), and submissions kept in the ensemble under
//! `{root}/blobstore/{id}` so that whichever nimbus leads can serve a topology another one
//! took.

use crate::cluster::coordination::znode_store::{CoordinationStore, StoreError};
use crate::cluster::coordination::zookeeper::{ZkSettings, ZkStore};
use crate::cluster::nimbus::leader::Election;
use crate::cluster::protocol::rpc::{Submission, NOT_LEADER};
use crate::config::Config;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// After taking over, a new leader leaves the assignments alone this long (a supervisor's
/// session timeout): supervisors' nodes, held in sessions of the nimbus that died, vanish
/// meanwhile and come back as each supervisor registers with the new leader.
/// The most bytes a submission kept in ZooKeeper may take (the server's default node limit,
/// `jute.maxbuffer`, is 1 MB; some room is left for the request around it).
const ZK_NODE_LIMIT: usize = 1000 * 1000;

/// Refuse a submission too large for one ZooKeeper node, before anything is stored.
pub(crate) fn fits_in_a_node(id: &str, sub: &Submission) -> anyhow::Result<()> {
    let len = serde_json::to_vec(sub)?.len();
    anyhow::ensure!(
        len <= ZK_NODE_LIMIT,
        "topology {id} with its multilang resources is {len} bytes; a ZooKeeper node holds at \
         most {ZK_NODE_LIMIT} (ship fewer or smaller files)"
    );
    Ok(())
}

const SETTLE: Duration = Duration::from_secs(10);

/// Where a submission is kept in the ensemble.
pub(crate) fn submission_path(root: &str, id: &str) -> String {
    format!("{}/blobstore/{id}", root.trim_end_matches('/'))
}

/// The addresses of the nimbuses registered in the ensemble of `storm.zookeeper.servers`
/// (leader first); `None` without an ensemble.
pub(crate) fn registered_nimbuses(config: &Config) -> Option<Result<Vec<String>, StoreError>> {
    let settings = ZkSettings::from_config(config)?;
    let root = config.zookeeper_root();
    Some(ZkStore::connect(settings).and_then(|store| {
        let leader = Election::leader_in(&store, &root);
        let mut all = store.children(&format!("{}/nimbuses", root.trim_end_matches('/')), None)?;
        if let Some(l) = leader {
            all.retain(|a| *a != l);
            all.insert(0, l);
        }
        Ok(all)
    }))
}

/// This nimbus's standing, as of one look at ZooKeeper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leadership {
    Standby,
    Leads,
    /// Leads, and did not at the previous look.
    TookOver,
}

/// A nimbus's connection to the ensemble.
pub(crate) struct Coordination {
    store: Arc<ZkStore>,
    election: OnceLock<Election>,
    leading: AtomicBool,
    took_over: Mutex<Option<Instant>>,
}

impl Coordination {
    /// Connect when `storm.zookeeper.servers` is set; `None` keeps the embedded tree.
    pub(crate) fn from_config(config: &Config) -> anyhow::Result<Option<Coordination>> {
        let Some(settings) = ZkSettings::from_config(config) else {
            return Ok(None);
        };
        let store = ZkStore::connect(settings)
            .map_err(|e| anyhow::anyhow!("storm.zookeeper.servers: {e}"))?;
        tracing::info!(
            "nimbus: the coordination tree is in ZooKeeper at {}",
            store.address()
        );
        Ok(Some(Coordination {
            store: Arc::new(store),
            election: OnceLock::new(),
            leading: AtomicBool::new(false),
            took_over: Mutex::new(None),
        }))
    }

    pub(crate) fn store(&self) -> Arc<dyn CoordinationStore> {
        self.store.clone()
    }

    /// Register as `address` and enter the leader election.
    pub(crate) fn elect_as(&self, root: &str, address: &str) -> anyhow::Result<()> {
        let election = self
            .election
            .get_or_init(|| Election::new(self.store.clone(), root, address));
        election
            .join()
            .map_err(|e| anyhow::anyhow!("cannot enter the leader election: {e}"))
    }

    /// Look at ZooKeeper: does this nimbus lead? A nimbus outside any election (one started
    /// in-process) leads alone.
    pub(crate) fn check(&self) -> Leadership {
        let leads = self.leads_now();
        let before = self.leading.swap(leads, Ordering::AcqRel);
        match (leads, before) {
            (false, true) => {
                tracing::warn!("nimbus: no longer the leader; standing by");
                Leadership::Standby
            }
            (false, false) => Leadership::Standby,
            (true, false) => {
                tracing::info!("nimbus: leading");
                if self.election.get().is_some() {
                    *self.took_over.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some(Instant::now());
                }
                Leadership::TookOver
            }
            (true, true) => Leadership::Leads,
        }
    }

    /// Whether this nimbus took over from another one so recently that supervisors may not
    /// have registered with it yet: it must not take their absence for death.
    pub(crate) fn settling(&self) -> bool {
        self.took_over
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|at| at.elapsed() < SETTLE)
    }

    /// Whether this nimbus leads, asked of ZooKeeper now (without noting a take-over).
    pub(crate) fn leads_now(&self) -> bool {
        self.election.get().is_none_or(Election::leads)
    }

    /// Forget leading, so the next look takes over again from scratch.
    pub(crate) fn step_down(&self) {
        self.leading.store(false, Ordering::Release);
    }

    /// This nimbus's address in the election, once it entered it.
    pub(crate) fn me(&self) -> Option<&str> {
        self.election.get().map(Election::me)
    }

    /// The other nimbuses registered now (their sessions live); none when ZooKeeper cannot
    /// say.
    pub(crate) fn peers(&self) -> Vec<String> {
        let Some(election) = self.election.get() else {
            return Vec::new();
        };
        let mut all = election.registered().unwrap_or_default();
        all.retain(|a| a != election.me());
        all
    }

    /// A standby's answer to a request: who leads, if anyone does.
    pub(crate) fn standby_answer(&self) -> String {
        let me = self.election.get().map_or("?", Election::me);
        if !self.store.connected() {
            // Asking the ensemble would only wait out the connection timeout.
            return format!(
                "nimbus at {me} {NOT_LEADER}: it has lost ZooKeeper at {}",
                self.store.address()
            );
        }
        match self.election.get().and_then(Election::leader) {
            Some(leader) if leader != me => {
                format!("nimbus at {me} {NOT_LEADER}; the leader is at {leader}")
            }
            _ => format!("nimbus at {me} {NOT_LEADER}; no leader is elected yet"),
        }
    }

    /// Keep a submission in the ensemble.
    pub(crate) fn keep_submission(
        &self,
        root: &str,
        id: &str,
        sub: &Submission,
    ) -> anyhow::Result<()> {
        fits_in_a_node(id, sub)?;
        let data = serde_json::to_vec(sub)?;
        self.store
            .put(&submission_path(root, id), &data)
            .map_err(|e| anyhow::anyhow!("cannot keep {id} in ZooKeeper: {e}"))
    }

    /// Copy a submission kept in the ensemble to `file`, unless the file is there already.
    pub(crate) fn fetch_submission(&self, root: &str, id: &str, file: &Path) -> anyhow::Result<()> {
        if file.is_file() {
            return Ok(());
        }
        let (data, _) = self
            .store
            .get_data(&submission_path(root, id), None)
            .map_err(|e| anyhow::anyhow!("no topology {id} in ZooKeeper: {e}"))?;
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        }
        std::fs::write(file, data)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))
    }
}
