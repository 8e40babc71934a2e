//! The leader's side of replicated checkpoints. With several nimbuses on ZooKeeper, a
//! checkpoint of a topology whose workers run in several processes is copied to every other
//! registered nimbus before the leader commits and records it; the record names the nimbuses
//! that received it whole (`replicas`), and any of them can lead on from its own copy when the
//! leader is lost, even for good and with its disk (`replica` is the other side).
//!
//! A replica in step gets what the checkpoint prepared; one that is new to this leader, or fell
//! behind (it missed a step), first gets a whole copy of the last commit. A replica that does
//! not answer within [`REPLICA_TIMEOUT`] is left out of that commit and tried again after a
//! back-off, so a frozen or dead nimbus delays commits by one timeout at most now and then; a
//! commit never waits for it. A topology with its own state dir (a path on nimbus's host) is
//! not replicated.

use super::pages::for_each_page;
use super::Nimbus;
use crate::cluster::protocol::rpc::{Client, ReplicaStep, Request};
use crate::state::{Store, TaskKey};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long the leader waits for a replica to connect and answer each step.
const REPLICA_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a replica that failed is left alone, doubling up to the maximum.
const RETRY_MIN: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(30);

/// What the leader knows of one other nimbus's replica of a topology's checkpoints.
#[derive(Debug)]
pub(super) struct Replica {
    /// It holds the last commit (it received every step since its last whole copy).
    in_step: bool,
    /// After a failure: not tried again before then.
    retry_at: Option<Instant>,
    backoff: Duration,
}

impl Default for Replica {
    fn default() -> Replica {
        Replica {
            in_step: false,
            retry_at: None,
            backoff: RETRY_MIN,
        }
    }
}

impl Nimbus {
    /// Copy checkpoint `txid` of topology `id` (ready to commit, prepared in `store`, whose
    /// tasks are `keys`, over `base`, the last recorded commit) to every other registered
    /// nimbus, `replicas` saying how each stands; the ones that hold it.
    pub(super) fn replicate(
        &self,
        id: &str,
        (store, keys): (&Store, &[TaskKey]),
        replicas: &mut BTreeMap<String, Replica>,
        (base, txid): (u64, u64),
    ) -> Vec<String> {
        let Some(zk) = self.zk.as_ref() else {
            return Vec::new();
        };
        let peers = zk.peers();
        replicas.retain(|addr, _| peers.contains(addr));
        let mut holding = Vec::new();
        for addr in peers {
            let replica = replicas.entry(addr.clone()).or_default();
            if replica.retry_at.is_some_and(|at| Instant::now() < at) {
                continue;
            }
            let peer =
                Client::new(addr.as_str(), self.secret.clone()).with_timeout(REPLICA_TIMEOUT);
            let copy = Copier {
                peer: &peer,
                id,
                store,
                keys,
            };
            match copy.checkpoint(base, txid, replica.in_step) {
                Ok(()) => {
                    *replica = Replica {
                        in_step: true,
                        ..Replica::default()
                    };
                    holding.push(addr);
                }
                Err(e) => {
                    tracing::warn!(
                        "nimbus: {id}: checkpoint {txid} is not copied to the nimbus at {addr} \
                         (tried again in {:?}): {e:#}",
                        replica.backoff
                    );
                    replica.in_step = false;
                    replica.retry_at = Some(Instant::now() + replica.backoff);
                    replica.backoff = (replica.backoff * 2).min(RETRY_MAX);
                }
            }
        }
        holding
    }
}

/// Tell every other registered nimbus that topology `id` was removed, so each removes its
/// replica (one that does not answer keeps its copy: removing it is left to an operator).
pub(super) fn forget_replicas(
    zk: &crate::cluster::nimbus::ha::Coordination,
    secret: Option<crate::net::auth::Secret>,
    id: &str,
) {
    for addr in zk.peers() {
        let peer = Client::new(addr.as_str(), secret.clone()).with_timeout(REPLICA_TIMEOUT);
        let request = Request::CheckpointReplica {
            id: id.to_string(),
            step: ReplicaStep::Forget,
        };
        if let Err(e) = peer.call::<serde_json::Value>(&request) {
            tracing::warn!("nimbus: {id}: the nimbus at {addr} keeps its replica: {e:#}");
        }
    }
}

/// Copying one topology's checkpoints to one other nimbus.
struct Copier<'a> {
    peer: &'a Client,
    id: &'a str,
    store: &'a Store,
    keys: &'a [TaskKey],
}

impl Copier<'_> {
    fn step(&self, step: ReplicaStep) -> anyhow::Result<()> {
        let request = Request::CheckpointReplica {
            id: self.id.to_string(),
            step,
        };
        self.peer.call::<serde_json::Value>(&request).map(|_| ())
    }

    /// Send checkpoint `txid` over `base` (a whole copy of `base` first unless `in_step`).
    fn checkpoint(&self, base: u64, txid: u64, in_step: bool) -> anyhow::Result<()> {
        if !in_step {
            self.whole(base)?;
        }
        let txids = self.store.prepared_txids()?;
        for t in txids.into_iter().filter(|&t| t > base && t <= txid) {
            for key in self.keys {
                let raw = self.store.prepared_rows(t, key)?;
                if raw.rows.is_empty() && raw.position.is_none() {
                    continue;
                }
                for_each_page(raw, |state| {
                    self.step(ReplicaStep::Prepared {
                        base,
                        txid: t,
                        task: key.clone(),
                        state,
                    })
                })?;
            }
        }
        self.step(ReplicaStep::Ready { base, txid })
    }

    /// Send a whole copy of the committed state, checkpoint `base`.
    fn whole(&self, base: u64) -> anyhow::Result<()> {
        self.step(ReplicaStep::Reset)?;
        for key in self.keys {
            let raw = self.store.committed_rows(key)?;
            if raw.rows.is_empty() && raw.position.is_none() {
                continue;
            }
            for_each_page(raw, |state| {
                self.step(ReplicaStep::Rows {
                    task: key.clone(),
                    state,
                })
            })?;
        }
        self.step(ReplicaStep::Install { txid: base })
    }
}
