//! A bolt task's part in checkpoints: its view of the rounds, and, for a stateful task, the
//! gate its inputs wait in.

use super::gate::Gate;
use super::rounds::Rounds;
use super::task_key;
use crate::state::TaskKey;

/// A bolt task's part in checkpoints.
#[derive(Debug)]
pub(crate) struct BoltSide {
    pub(crate) rounds: Rounds,
    /// Stateful tasks only.
    pub(crate) gate: Option<Gate>,
    pub(crate) key: TaskKey,
    /// Whether a checkpoint of this run saved the state yet (the first saves all of it).
    pub(crate) saved: bool,
    /// The last checkpoint it saved in this run.
    pub(crate) last_txid: Option<u64>,
    /// Restored (by a rollback) from a state saved after its end-of-input output: not emitted
    /// again.
    pub(crate) flushed: bool,
}

impl BoltSide {
    pub(crate) fn new(upstream: u32, stateful: bool, component: &str, index: u32) -> BoltSide {
        BoltSide {
            rounds: Rounds::new(upstream),
            gate: stateful.then(Gate::default),
            key: task_key(component, index),
            saved: false,
            last_txid: None,
            flushed: false,
        }
    }
}
