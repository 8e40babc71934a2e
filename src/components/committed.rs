//! The last checkpoint committed in this process, for sinks that hold their output until the
//! checkpoint covering it commits (`file` publishes its files, `http` sends its batches).

use std::sync::atomic::{AtomicU64, Ordering};

static COMMITTED: AtomicU64 = AtomicU64::new(0);

/// Checkpoint `txid` committed (the coordinator, or a worker told by nimbus, calls this).
pub fn checkpoint_committed(txid: u64) {
    COMMITTED.fetch_max(txid, Ordering::SeqCst);
}

/// The last checkpoint known committed here (0: none yet).
pub fn last() -> u64 {
    COMMITTED.load(Ordering::SeqCst)
}
