//! The commit record of a topology's checkpoints: which txid was last committed (every task
//! prepared it), with the topology's name and each component's parallelism so a resumed run
//! can check it matches. One small crash-safe database beside the workers' stores; a commit is
//! one transaction.

use std::path::Path;

/// What the commit record holds about the last committed checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed {
    pub txid: u64,
    /// Milliseconds since the Unix epoch when it was committed.
    pub at_ms: u64,
}

pub struct Commits {
    // filled in by the implementation
}

impl Commits {
    /// Open (creating it if missing) the commit record in `dir`.
    pub fn open(dir: &Path) -> anyhow::Result<Commits> {
        let _ = dir;
        todo!()
    }

    /// A commit record in memory.
    pub fn memory() -> anyhow::Result<Commits> {
        todo!()
    }

    /// The last committed checkpoint, if any.
    pub fn committed(&self) -> anyhow::Result<Option<Committed>> {
        todo!()
    }

    /// Record `txid` as committed (durably). A txid at or below the one recorded is ignored.
    pub fn commit(&self, txid: u64) -> anyhow::Result<()> {
        let _ = txid;
        todo!()
    }

    /// The topology's name and each component's parallelism, as the first run recorded them.
    pub fn shape(&self) -> anyhow::Result<Option<(String, Vec<(String, u32)>)>> {
        todo!()
    }

    /// Record the topology's name and parallelism (the first run of a state dir).
    pub fn set_shape(&self, name: &str, components: &[(String, u32)]) -> anyhow::Result<()> {
        let _ = (name, components);
        todo!()
    }
}
