//! Logging: `tracing` to standard error, level from `STORM_LOG` (default `warn`), so standard
//! output carries only the topology's own output. Colour only when standard error is a terminal
//! and `NO_COLOR` is unset, so logs redirected to files stay plain text. [`Throttle`] bounds how
//! often one kind of message is logged (a flood of refused connections must not flood the log).
//! Also the one piece of terminal state a run leaves behind: a progress line drawn on stderr,
//! cleared on every way out.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

/// Log to stderr at `STORM_LOG`'s level; without it, warnings and errors (`quiet`: errors).
pub fn init(quiet: bool) {
    let default = if quiet { "error" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("STORM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(use_colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR"),
        ))
        .with_target(false)
        .try_init();
}

/// Colour when the stream is a terminal and `NO_COLOR` is unset or empty (no-color.org).
fn use_colour(terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Lets one kind of log message through at most once per period, counting the ones held back.
/// A `static` per kind: `static REFUSED: Throttle = Throttle::new(Duration::from_secs(10));`.
#[derive(Debug)]
pub struct Throttle {
    period: Duration,
    last: Mutex<Option<Instant>>,
    held: AtomicU64,
}

impl Throttle {
    pub const fn new(period: Duration) -> Throttle {
        Throttle {
            period,
            last: Mutex::new(None),
            held: AtomicU64::new(0),
        }
    }

    /// `Some(n)` when a message may be logged now, `n` being how many were held back since the
    /// last one; `None` (and one more held back) otherwise.
    pub fn allow(&self) -> Option<u64> {
        self.allow_at(Instant::now())
    }

    fn allow_at(&self, now: Instant) -> Option<u64> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        match *last {
            Some(t) if now.saturating_duration_since(t) < self.period => {
                self.held.fetch_add(1, Ordering::Relaxed);
                None
            }
            _ => {
                *last = Some(now);
                Some(self.held.swap(0, Ordering::Relaxed))
            }
        }
    }
}

/// The suffix telling how many messages of the same kind a [`Throttle`] held back.
pub fn held_back(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" ({n} more like this not logged)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(use_colour(true, None));
        assert!(use_colour(true, Some("".into())));
        assert!(!use_colour(true, Some("1".into())));
        assert!(!use_colour(false, None));
    }

    #[test]
    fn a_throttle_lets_one_message_through_per_period_and_counts_the_rest() {
        let t = Throttle::new(Duration::from_secs(10));
        let start = Instant::now();
        assert_eq!(t.allow_at(start), Some(0));
        for i in 1..=5 {
            assert_eq!(t.allow_at(start + Duration::from_secs(i)), None);
        }
        assert_eq!(t.allow_at(start + Duration::from_secs(10)), Some(5));
        assert_eq!(t.allow_at(start + Duration::from_secs(11)), None);
        assert_eq!(t.allow_at(start + Duration::from_secs(25)), Some(1));
        assert_eq!(held_back(0), "");
        assert_eq!(held_back(3), " (3 more like this not logged)");
    }
}
