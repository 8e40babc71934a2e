//! State kept across failures and restarts: the store a worker writes checkpoints into
//! (`checkpoint_store.rs`, an embedded ACID database or memory), the record of which checkpoint is
//! committed (`commits.rs`, and the mark beside it that a damaged record cannot fall behind,
//! `commit_mark.rs`), a task's entries read back one at a time (`entries.rs`), the compact encoding of typed values in both (`codec.rs`), and what
//! a state dir holds (`dir.rs`, for `storm state ls|dump|clear`).

pub(crate) mod checkpoint_store;
pub(crate) mod codec;
mod commit_mark;
mod commits;
pub mod dir;
mod entries;
mod guard;
pub(crate) mod packed;
pub(crate) mod paths;
pub(crate) mod spill;

#[cfg(test)]
mod crash_test;

pub(crate) use checkpoint_store::RawState;
pub use checkpoint_store::Store;
pub use commits::Commits;

/// Names a task's state across runs: its component and its index within the component (task
/// ids may differ between runs; a component's tasks keep their order).
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct TaskKey {
    pub component: String,
    pub index: u32,
}

impl std::fmt::Display for TaskKey {
    fn fmt(&self, f2: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f2, "{}[{}]", self.component, self.index)
    }
}
