//! Logging: `tracing` to standard error, level from `STORM_LOG` (default `warn`), so standard
//! output carries only the topology's own output. Colour only when standard error is a terminal
//! and `NO_COLOR` is unset, so logs redirected to files stay plain text. `Throttle` bounds how
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
pub(crate) fn status_line_drawn(drawn: bool) {
    STATUS_LINE.store(drawn, Ordering::Relaxed);
}

/// Erase a progress line left on the terminal, before an early exit (a closed standard output,
/// a second Ctrl-C). Safe to call from a signal handler: an atomic load and one write(2) of a
/// constant, through a `File` that is never dropped (so fd 2 is not closed) and takes no lock.
pub(crate) fn clear_status_line() {
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
/// The filter can be changed while running (`set_named_levels`).
pub fn init(quiet: bool) {
    use tracing_subscriber::prelude::*;
    let default = if quiet { "error" } else { "warn" };
    let base = std::env::var("STORM_LOG")
        .ok()
        .filter(|v| tracing_subscriber::EnvFilter::try_new(v).is_ok())
        .unwrap_or_else(|| default.to_string());
    let (filter, handle) =
        tracing_subscriber::reload::Layer::new(tracing_subscriber::EnvFilter::new(&base));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(use_colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR"),
        ))
        .with_target(false);
    if tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .try_init()
        .is_ok()
    {
        let _ = LEVELS.set(Levels {
            base,
            handle,
            named: Mutex::new(Vec::new()),
        });
    }
}

/// The changeable filter: the starting directives and the levels set by name since.
struct Levels {
    base: String,
    handle: tracing_subscriber::reload::Handle<
        tracing_subscriber::EnvFilter,
        tracing_subscriber::Registry,
    >,
    named: Mutex<Vec<Named>>,
}

/// One level set by name.
#[derive(Debug, Clone)]
struct Named {
    /// A module path such as `storm::runtime`, or `ROOT`.
    logger: String,
    level: String,
    timeout_secs: u64,
    /// When its timeout passes (none: it stays).
    until: Option<Instant>,
    /// Its timeout passed and the line saying so was written.
    reverted: bool,
}

impl Named {
    fn expired(&self, now: Instant) -> bool {
        self.until.is_some_and(|u| u <= now)
    }
}

static LEVELS: std::sync::OnceLock<Levels> = std::sync::OnceLock::new();

/// A Storm (log4j) level as a tracing level directive.
fn directive_level(storm: &str) -> Option<&'static str> {
    Some(match storm.to_ascii_uppercase().as_str() {
        "ALL" | "TRACE" => "trace",
        "DEBUG" => "debug",
        "INFO" => "info",
        "WARN" => "warn",
        "ERROR" | "FATAL" => "error",
        "OFF" => "off",
        _ => return None,
    })
}

/// Replace the levels set by name (Storm's `set_log_level`): each logger is a module path
/// (`storm`, `storm::runtime::executor`) or `ROOT` (everything), with a Storm level and a
/// timeout in seconds (0: none) after which the starting level is back. Refused, changing
/// nothing, when a name or level cannot be a filter directive.
pub(crate) fn set_named_levels(levels: &[(String, String, u64)]) -> anyhow::Result<()> {
    let Some(l) = LEVELS.get() else {
        anyhow::bail!("logging was not set up in this process");
    };
    let now = Instant::now();
    let mut named = l.named.lock().unwrap_or_else(|e| e.into_inner());
    // A setting handed again unchanged keeps its clock (the whole set comes with every
    // change of one logger), so a timed-out one does not come back.
    let next: Vec<Named> = levels
        .iter()
        .map(|(logger, level, secs)| {
            named
                .iter()
                .find(|n| &n.logger == logger && &n.level == level && n.timeout_secs == *secs)
                .cloned()
                .unwrap_or_else(|| Named {
                    logger: logger.clone(),
                    level: level.clone(),
                    timeout_secs: *secs,
                    until: (*secs > 0).then(|| now + Duration::from_secs(*secs)),
                    reverted: false,
                })
        })
        .collect();
    apply(l, &next, now)?;
    let first = next
        .iter()
        .filter(|n| !n.expired(now))
        .filter_map(|n| n.until)
        .min();
    *named = next;
    drop(named);
    if let Some(first) = first {
        expire_at(first);
    }
    Ok(())
}

/// At `when`, install the levels without those timed out by then (and schedule the next).
fn expire_at(when: Instant) {
    let _ = std::thread::Builder::new()
        .name("log-level-timeout".into())
        .spawn(move || {
            std::thread::sleep(when.saturating_duration_since(Instant::now()));
            let Some(l) = LEVELS.get() else { return };
            let now = Instant::now();
            let mut named = l.named.lock().unwrap_or_else(|e| e.into_inner());
            let _ = apply(l, &named, now);
            for n in named.iter_mut().filter(|n| n.expired(now) && !n.reverted) {
                n.reverted = true;
                // Said whatever the filter lets through: the operator asked for the timeout.
                crate::stderr_println!(
                    "log level {} of `{}` timed out after {}s: back to the starting level",
                    n.level,
                    n.logger,
                    n.timeout_secs
                );
            }
            let next = named
                .iter()
                .filter(|n| !n.expired(now))
                .filter_map(|n| n.until)
                .min();
            drop(named);
            if let Some(next) = next {
                expire_at(next);
            }
        });
}

/// The starting directives plus one per named level not timed out at `now`, installed.
fn apply(l: &Levels, named: &[Named], now: Instant) -> anyhow::Result<()> {
    let live: Vec<&Named> = named.iter().filter(|n| !n.expired(now)).collect();
    for n in named {
        directive_level(&n.level)
            .ok_or_else(|| anyhow::anyhow!("`{}`: unknown level `{}`", n.logger, n.level))?;
        crate::log_config::logger(&n.logger).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    // ROOT replaces the starting level of everything; targeted starting directives stay.
    let root = live
        .iter()
        .find(|n| n.logger.eq_ignore_ascii_case("ROOT"))
        .and_then(|n| directive_level(&n.level));
    let mut directives = match root {
        Some(d) => l
            .base
            .split(',')
            .filter(|x| x.contains('='))
            .fold(d.to_string(), |acc, x| format!("{acc},{x}")),
        None => l.base.clone(),
    };
    for n in live
        .iter()
        .filter(|n| !n.logger.eq_ignore_ascii_case("ROOT"))
    {
        if let Some(d) = directive_level(&n.level) {
            directives.push_str(&format!(",{}={d}", n.logger));
        }
    }
    let filter = tracing_subscriber::EnvFilter::try_new(&directives)
        .map_err(|e| anyhow::anyhow!("log levels `{directives}`: {e}"))?;
    l.handle
        .reload(filter)
        .map_err(|e| anyhow::anyhow!("log levels: {e}"))
}

/// Colour when the stream is a terminal and `NO_COLOR` is unset or empty (no-color.org).
fn use_colour(terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Lets one kind of log message through at most once per period, counting the ones held back.
/// A `static` per kind: `static REFUSED: Throttle = Throttle::new(Duration::from_secs(10));`.
#[derive(Debug)]
pub(crate) struct Throttle {
    period: Duration,
    last: Mutex<Option<Instant>>,
    held: AtomicU64,
}

impl Throttle {
    pub(crate) const fn new(period: Duration) -> Throttle {
        Throttle {
            period,
            last: Mutex::new(None),
            held: AtomicU64::new(0),
        }
    }

    /// `Some(n)` when a message may be logged now, `n` being how many were held back since the
    /// last one; `None` (and one more held back) otherwise.
    pub(crate) fn allow(&self) -> Option<u64> {
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
pub(crate) fn held_back(n: u64) -> String {
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
