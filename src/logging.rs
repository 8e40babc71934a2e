//! Logging: `tracing` to standard error, level from `STORM_LOG` (default `warn`), so standard
//! output carries only the topology's own output. Also the one piece of terminal state a run
//! leaves behind: a progress line drawn on stderr, cleared on every way out.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a progress line is drawn on a terminal right now.
static STATUS_LINE: AtomicBool = AtomicBool::new(false);

/// A progress line was drawn (`true`) or removed (`false`).
pub fn status_line_drawn(drawn: bool) {
    STATUS_LINE.store(drawn, Ordering::Relaxed);
}

/// Erase a progress line left on the terminal, before an early exit (a closed standard output,
/// a second Ctrl-C). Safe to call from a signal handler: an atomic load and one write(2) of a
/// constant, through a `File` that is never dropped (so fd 2 is not closed) and takes no lock.
pub fn clear_status_line() {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    if !STATUS_LINE.swap(false, Ordering::Relaxed) {
        return;
    }
    // SAFETY: fd 2 stays open for the life of the process; ManuallyDrop never closes it.
    let mut err = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(2) });
    let _ = err.write(b"\r\x1b[2K");
}

pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STORM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
