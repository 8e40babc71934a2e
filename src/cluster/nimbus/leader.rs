//! Nimbus leader election on ZooKeeper (Storm 1.0's nimbus HA, Curator's leader latch):
//! every nimbus registers itself as an ephemeral `{root}/nimbuses/{host:port}` node and
//! enters the race with an ephemeral-sequential `{root}/leader-lock/latch-NNNNNNNNNN` node
//! holding its address; the nimbus whose latch has the lowest number leads. When the leader's
//! session ends its nodes vanish and the next in line leads.
//!
//! Leadership is never assumed from memory: [`Election::leads`] asks ZooKeeper each time, on a
//! connected session, and re-enters the race (new nodes) when the store had to open a new
//! session after an expiry.

use crate::cluster::coordination::znode_store::{
    child_path, CoordinationStore, CreateMode, StoreError,
};
use crate::cluster::coordination::zookeeper::{ZkStore, OWN_SESSION};
use std::sync::{Arc, Mutex, MutexGuard};

const LATCH_PREFIX: &str = "latch-";

/// One nimbus's place in the election.
pub(crate) struct Election {
    store: Arc<ZkStore>,
    /// `{root}/nimbuses` and `{root}/leader-lock`.
    nimbuses: String,
    lock: String,
    /// This nimbus's address, as clients reach it.
    me: String,
    joined: Mutex<Joined>,
}

/// The latch node of the session it was created in.
#[derive(Default)]
struct Joined {
    epoch: u64,
    latch: Option<String>,
}

/// The latch names in order of their sequence numbers.
fn in_line(mut latches: Vec<String>) -> Vec<String> {
    latches.retain(|n| n.starts_with(LATCH_PREFIX));
    latches.sort_by_key(|n| sequence_of(n));
    latches
}

/// The address in the first latch under `lock`.
fn leader_at(store: &dyn CoordinationStore, lock: &str) -> Option<String> {
    let latches = in_line(store.children(lock, None).ok()?);
    let (data, _) = store
        .get_data(&child_path(lock, latches.first()?), None)
        .ok()?;
    String::from_utf8(data).ok()
}

/// The sequence number ZooKeeper appended to a latch name.
fn sequence_of(name: &str) -> u64 {
    name.rsplit('-')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX)
}

impl Election {
    pub(crate) fn new(store: Arc<ZkStore>, root: &str, me: &str) -> Election {
        let root = root.trim_end_matches('/');
        Election {
            store,
            nimbuses: format!("{root}/nimbuses"),
            lock: format!("{root}/leader-lock"),
            me: me.to_string(),
            joined: Mutex::new(Joined::default()),
        }
    }

    fn lock_joined(&self) -> MutexGuard<'_, Joined> {
        self.joined.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Register and enter the race on the current session, unless already done on it.
    pub(crate) fn join(&self) -> Result<(), StoreError> {
        self.store.renew()?;
        let mut joined = self.lock_joined();
        let epoch = self.store.epoch();
        if joined.latch.is_some() && joined.epoch == epoch {
            return Ok(());
        }
        self.store.create_all(&self.nimbuses)?;
        self.store.create_all(&self.lock)?;
        let me = child_path(&self.nimbuses, &self.me);
        let info = serde_json::json!({ "address": self.me }).to_string();
        // A node left by this address's previous session: replace it with ours.
        match self.store.delete(&me, None) {
            Ok(()) | Err(StoreError::NoNode(_)) => {}
            Err(e) => return Err(e),
        }
        self.store
            .create(&me, info.as_bytes(), CreateMode::Ephemeral(OWN_SESSION))?;
        let latch = self.store.create(
            &child_path(&self.lock, LATCH_PREFIX),
            self.me.as_bytes(),
            CreateMode::EphemeralSequential(OWN_SESSION),
        )?;
        let name = latch.rsplit('/').next().unwrap_or(&latch).to_string();
        tracing::info!("nimbus {}: in the leader election as {name}", self.me);
        // The store's epoch may have moved on while we created them: check again next time.
        joined.epoch = epoch;
        joined.latch = Some(name);
        Ok(())
    }

    /// Whether this nimbus leads now: connected, in the race on the current session, and
    /// first in line.
    pub(crate) fn leads(&self) -> bool {
        if self.join().is_err() || !self.store.connected() {
            return false;
        }
        let ours = self.lock_joined().latch.clone();
        match self.store.children(&self.lock, None) {
            Ok(latches) => in_line(latches)
                .first()
                .is_some_and(|first| Some(first) == ours.as_ref()),
            Err(_) => false,
        }
    }

    /// The leader's address, as its latch says.
    pub(crate) fn leader(&self) -> Option<String> {
        leader_at(&*self.store, &self.lock)
    }

    /// The leader's address in the tree under `root` of `store`.
    pub(crate) fn leader_in(store: &dyn CoordinationStore, root: &str) -> Option<String> {
        leader_at(
            store,
            &format!("{}/leader-lock", root.trim_end_matches('/')),
        )
    }

    /// The addresses of the nimbuses registered now (their sessions live), this one included.
    pub(crate) fn registered(&self) -> Result<Vec<String>, StoreError> {
        self.store.children(&self.nimbuses, None)
    }

    /// This nimbus's address.
    pub(crate) fn me(&self) -> &str {
        &self.me
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_sequence_number_is_first_in_line() {
        let names = vec![
            "latch-0000000012".to_string(),
            "other".to_string(),
            "latch-0000000003".to_string(),
            "latch-0000000100".to_string(),
        ];
        assert_eq!(
            in_line(names),
            ["latch-0000000003", "latch-0000000012", "latch-0000000100"]
        );
    }
}
