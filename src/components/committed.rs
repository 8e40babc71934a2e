//! The last checkpoint committed in this process, for sinks that hold their output until the
//! checkpoint covering it commits (`kafka` and `jdbc` write their transactions, `redis` its
//! MULTI/EXEC, `file` publishes its files, `http` sends its batches). The checkpoint
//! coordinator, or a worker told by nimbus, is the one caller of [`checkpoint_committed`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

static COMMITTED: AtomicU64 = AtomicU64::new(0);

/// Checkpoint `txid` committed.
pub(crate) fn checkpoint_committed(txid: u64) {
    COMMITTED.fetch_max(txid, Ordering::SeqCst);
}

/// The last checkpoint known committed here (0: none yet).
pub(crate) fn last() -> u64 {
    COMMITTED.load(Ordering::SeqCst)
}

/// Wait until checkpoint `txid` (or a later one) committed; `false` when it did not within
/// `timeout`.
pub(crate) fn wait_for(txid: u64, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while last() < txid {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}
