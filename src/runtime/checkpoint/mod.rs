//! Checkpoints: exactly-once state on top of acking.
//!
//! Every spout task sends a *marker* down every edge after its tuples at a fixed pace (a
//! round, [`ROUND`]); a bolt task forwards round `r` once every upstream task sent it, so on
//! each path a round's marker comes after every tuple sent before it. Every
//! `topology.state.checkpoint.interval.ms` a round is a checkpoint: spouts save their position,
//! stateful bolts their state, each under the checkpoint's txid, and the checkpoint commits
//! once every task saved it (`coordinator.rs`).
//!
//! What makes the state exact is the *verdict* a spout task puts in each marker: the trees it
//! started are numbered in order, and the marker says below which number every tree is over
//! (`low`), and which of those failed. A stateful bolt acks each input when it arrives (so trees
//! complete) but applies it to its state only once the verdicts say its trees completed; one of
//! a failed tree is dropped (the spout replays it). So a state holds each spout message exactly
//! once, whatever fails between, and a checkpoint holds what the spouts' positions of the same
//! round have behind them (`gate.rs`). Spouts tell their component a message is acked only once
//! its tree is below `low` (`spout_side.rs`): what a spout keeps for replay is what the state
//! does not hold yet.

pub(crate) mod bolt_side;
pub(crate) mod coordinator;
mod gate;
mod rounds;
pub(crate) mod setup;
pub(crate) mod spout_side;
pub(crate) mod wrapper;

use crate::state::{Store, TaskKey};
use crossbeam_channel::Sender;
use std::sync::Arc;
use std::time::Duration;

/// How often spouts send a marker: the most a stateful bolt holds an input before applying it,
/// once its tree is complete.
pub(crate) const ROUND: Duration = Duration::from_millis(2);

/// Bits of a tree number in a root id under checkpoints: the spout task's id above them.
const SEQ_BITS: u32 = 40;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;

/// The spout task and tree number of a root id made under checkpoints.
#[inline]
pub(crate) fn split_root(root: u64) -> (u32, u64) {
    ((root >> SEQ_BITS) as u32, root & SEQ_MASK)
}

/// The root id of tree `seq` of spout task `task`.
#[inline]
pub(crate) fn make_root(task: u32, seq: u64) -> u64 {
    (u64::from(task) << SEQ_BITS) | (seq & SEQ_MASK)
}

/// What one spout task says in a marker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Verdict {
    pub(crate) spout: u32,
    /// Every tree numbered below this is over (completed, or failed and listed).
    pub(crate) low: u64,
    /// Trees that failed since the spout's previous marker (all below `low`).
    pub(crate) failed: Vec<u64>,
}

/// A round's marker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Marker {
    pub(crate) round: u64,
    /// The checkpoint this round is, if it is one.
    pub(crate) txid: Option<u64>,
    pub(crate) verdicts: Vec<Verdict>,
}

/// What tasks tell the coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Report {
    /// The task saved its state (or position) under `txid`.
    Prepared { txid: u64, task: u32 },
    /// The task ended; its last checkpoint holds its final state.
    Finished { task: u32 },
}

/// What an executor needs to take part in checkpoints.
#[derive(Clone)]
pub(crate) struct Checkpointing {
    /// Its worker's store.
    pub(crate) store: Arc<Store>,
    pub(crate) reports: Sender<Report>,
    /// The last committed txid when the run started (0: none); txids go on from it.
    pub(crate) base: u64,
    /// Rounds per checkpoint.
    ratio: u64,
    /// Whether the run resumes from a committed checkpoint.
    pub(crate) resuming: bool,
    /// Coordinated by another process (nimbus): a rollback may restore a task's state saved
    /// after its end-of-input output, so that state is marked as such.
    remote: bool,
    /// This start is a rollback within the run: a task restored from a state saved after its
    /// end-of-input output does not emit it again.
    rollback: bool,
}

impl Checkpointing {
    /// The txid of round `round`, if it is a checkpoint.
    pub(crate) fn txid_of(&self, round: u64) -> Option<u64> {
        (round % self.ratio == 0).then(|| self.base + round / self.ratio)
    }

    /// The first checkpoint round after `round`.
    pub(crate) fn next_checkpoint_round(&self, round: u64) -> u64 {
        (round / self.ratio + 1) * self.ratio
    }
}

/// Checkpoints coordinated by another process (nimbus, when a topology's workers run in
/// several): this worker's store, already holding what its tasks restore, the last committed
/// txid, and where its tasks' reports go (to be shipped on).
pub(crate) struct RemoteCheckpoints {
    pub(crate) store: Arc<Store>,
    pub(crate) base: u64,
    pub(crate) reports: Sender<Report>,
    /// The workers start again after a rollback within the run.
    pub(crate) rollback: bool,
}

/// The position a bolt task's state is saved with once its end-of-input output was emitted.
const FINISHED: &str = "finished";

/// Rounds per checkpoint for a checkpoint interval.
fn ratio_for(interval: Duration) -> u64 {
    (interval.as_millis() / ROUND.as_millis()).max(1) as u64
}

/// A task's name in the store.
pub(crate) fn task_key(component: &str, index: u32) -> TaskKey {
    TaskKey {
        component: component.to_string(),
        index,
    }
}
