//! Helpers shared by the integration tests that drive real processes.

use std::time::{Duration, Instant};

/// Poll `f` every `every` until it gives a value; fail naming `what` once `wait` is over.
pub(crate) fn poll_until<T>(
    what: &str,
    wait: Duration,
    every: Duration,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + wait;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(every);
    }
}
