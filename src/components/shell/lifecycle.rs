//! Looking after a multilang child: the settings read from the configuration, starting a child
//! with the handshake, and the restart policy (back-off, and giving up on a crash loop).
//!
//! Storm kills the whole worker when a shell child dies; we restart the child instead, after
//! 100 ms, doubling on each failure in a row (at most 5 s). A child is given up on, ending the
//! run with a fatal error, after [`MAX_FAILURES`] failures in a row with no work completed in
//! between (an ack or fail from a bolt, a finished turn from a spout), or [`MAX_FAILURES`]
//! failures within [`FAILURE_WINDOW`] whatever happened in between.

use super::context::{child_environment, context_json, handshake_conf};
use super::process::{ChildEvent, Launch, ShellProcess};
use super::protocol::{self, ChildMessage};
use crate::components::TaskContext;
use crate::config::Config;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Failures that make a child "keep dying".
const MAX_FAILURES: usize = 5;
/// The window in which [`MAX_FAILURES`] failures are fatal even with work done in between.
const FAILURE_WINDOW: Duration = Duration::from_secs(30);
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Settings from the configuration, absent keys falling back to Storm's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Settings {
    /// No message for this long means the child hangs (`topology.subprocess.timeout.secs`,
    /// else `supervisor.worker.timeout.secs`, else 30 s).
    pub(crate) timeout: Duration,
    /// `topology.shellbolt.max.pending` (100).
    pub(crate) max_pending: usize,
    /// Heartbeat period: 1 s, or a third of a shorter timeout.
    pub(crate) heartbeat: Duration,
}

impl Settings {
    pub(crate) fn from_config(config: &Config) -> Settings {
        let timeout = config
            .get_duration("topology.subprocess.timeout.secs")
            .or_else(|| config.get_duration("supervisor.worker.timeout.secs"))
            .filter(|d| !d.is_zero())
            .unwrap_or(Duration::from_secs(30));
        let max_pending = config
            .get_u64("topology.shellbolt.max.pending")
            .unwrap_or(100)
            .clamp(1, 1 << 20) as usize;
        Settings {
            timeout,
            max_pending,
            heartbeat: (timeout / 3).clamp(Duration::from_millis(10), Duration::from_secs(1)),
        }
    }
}

/// `shell bolt "split" task 3`: how faults name the child.
pub(crate) fn label(kind: &str, ctx: &TaskContext) -> String {
    format!("shell {kind} \"{}\" task {}", ctx.component, ctx.task_id)
}

/// Which of Storm's shell components a child serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Asynchronous: the executor is woken when the child sends something, and output the
    /// executor does not wait for may gather between reads.
    Bolt,
    /// Synchronous turns: the executor waits for every answer itself.
    Spout,
}

/// At most this many tuples are batched into one write to a child.
const WRITE_BATCH: usize = 32;

/// Spawn the child for `ctx`, send the handshake and wait for its pid.
pub(crate) fn start(
    command: &[String],
    cwd: &std::path::Path,
    ctx: &TaskContext,
    label: &str,
    settings: &Settings,
    kind: Kind,
) -> Result<ShellProcess, String> {
    let env = child_environment(&ctx.config)?;
    let mut child = ShellProcess::spawn(&Launch {
        command,
        cwd,
        env: &env,
        label,
        waker: (kind == Kind::Bolt).then(|| ctx.waker.clone()),
        gather: kind == Kind::Bolt,
        write_batch: settings.max_pending.min(WRITE_BATCH),
    })?;
    let pid_dir = child.pid_dir().to_string_lossy().into_owned();
    child.send(&protocol::handshake(
        &pid_dir,
        handshake_conf(ctx),
        context_json(ctx),
    ));
    let outcome = match child.recv_timeout(settings.timeout) {
        Some(ChildEvent::Message(Ok(ChildMessage::Pid(pid)))) => Ok(pid),
        Some(ChildEvent::Message(Ok(ChildMessage::Command(c)))) => Err(format!(
            "expected the handshake answer {{\"pid\": N}}, got {}",
            protocol::excerpt(&format!("{c:?}"))
        )),
        Some(ChildEvent::Message(Err(e))) => Err(format!("handshake: {e}")),
        Some(ChildEvent::Eof) => Err(death_reason(&mut child, "during the handshake")),
        None => Err(format!(
            "no handshake answer within {}",
            humantime::format_duration(settings.timeout)
        )),
    };
    match outcome {
        Ok(pid) => {
            if pid != child.pid() {
                tracing::debug!(
                    "{label}: child reports pid {pid}, spawned as {}",
                    child.pid()
                );
            }
            tracing::debug!("{label}: started child pid {pid}");
            Ok(child)
        }
        Err(e) => {
            child.shutdown();
            Err(e)
        }
    }
}

/// Why a child closed its stdout: its exit status and last stderr lines.
pub(crate) fn death_reason(child: &mut ShellProcess, when: &str) -> String {
    let status = match child.wait_exit(Duration::from_secs(1)) {
        Some(s) => format!("exited {when} ({s})"),
        None => format!("closed its output {when}"),
    };
    let tail = child.stderr_tail();
    if tail.is_empty() {
        status
    } else {
        format!("{status}; stderr: {}", protocol::excerpt(&tail))
    }
}

/// Back-off and crash-loop detection.
#[derive(Debug, Default)]
pub(crate) struct RestartPolicy {
    in_a_row: u32,
    recent: VecDeque<Instant>,
    restart_at: Option<Instant>,
}

impl RestartPolicy {
    /// Record a failure: `Ok(delay)` to restart after, or `Err(why)` to give up.
    pub(crate) fn failed(&mut self, now: Instant) -> Result<Duration, String> {
        self.in_a_row += 1;
        self.recent.push_back(now);
        while self
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) > FAILURE_WINDOW)
        {
            self.recent.pop_front();
        }
        if self.in_a_row as usize >= MAX_FAILURES {
            return Err(format!(
                "gave up after {MAX_FAILURES} failures in a row with no work done in between"
            ));
        }
        if self.recent.len() >= MAX_FAILURES {
            return Err(format!(
                "gave up after {MAX_FAILURES} failures within {}",
                humantime::format_duration(FAILURE_WINDOW)
            ));
        }
        let delay = FIRST_BACKOFF
            .saturating_mul(1 << (self.in_a_row - 1).min(10))
            .min(MAX_BACKOFF);
        self.restart_at = Some(now + delay);
        Ok(delay)
    }

    /// The child completed some work: the next failure starts a new run of failures.
    pub(crate) fn progressed(&mut self) {
        self.in_a_row = 0;
    }

    /// Whether a restart may happen now: waits out the back-off when `block`, else says no
    /// while it runs. Marks the pending restart as taken when it answers yes.
    pub(crate) fn take_restart(&mut self, block: bool) -> bool {
        let now = Instant::now();
        let due = self.restart_at.unwrap_or(now);
        if due > now {
            if !block {
                return false;
            }
            std::thread::sleep(due - now);
        }
        self.restart_at = None;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Origin;

    #[test]
    fn backoff_doubles_and_five_in_a_row_is_fatal() {
        let mut p = RestartPolicy::default();
        let t = Instant::now();
        let delays: Vec<_> = (0..4)
            .map(|i| p.failed(t + Duration::from_secs(i * 10)))
            .collect();
        assert_eq!(
            delays,
            vec![
                Ok(Duration::from_millis(100)),
                Ok(Duration::from_millis(200)),
                Ok(Duration::from_millis(400)),
                Ok(Duration::from_millis(800))
            ]
        );
        assert!(p.failed(t + Duration::from_secs(100)).is_err());
    }

    #[test]
    fn progress_resets_backoff_but_not_the_window() {
        let mut p = RestartPolicy::default();
        let t = Instant::now();
        for i in 0..4 {
            assert_eq!(
                p.failed(t + Duration::from_secs(i)),
                Ok(Duration::from_millis(100))
            );
            p.progressed();
        }
        let err = p
            .failed(t + Duration::from_secs(5))
            .err()
            .unwrap_or_default();
        assert_eq!(err, "gave up after 5 failures within 30s");
        // Spread out, with progress in between, failures never add up.
        let mut p = RestartPolicy::default();
        for i in 0..20 {
            assert!(p.failed(t + Duration::from_secs(i * 10)).is_ok());
            p.progressed();
        }
    }

    #[test]
    fn settings_fall_back_to_storm_defaults() {
        let mut c = Config::default();
        assert_eq!(
            Settings::from_config(&c),
            Settings {
                timeout: Duration::from_secs(30),
                max_pending: 100,
                heartbeat: Duration::from_secs(1)
            }
        );
        c.set("supervisor.worker.timeout.secs", 12.into(), Origin::Default);
        assert_eq!(Settings::from_config(&c).timeout, Duration::from_secs(12));
        c.set(
            "topology.subprocess.timeout.secs",
            3.into(),
            Origin::CommandLine,
        );
        c.set(
            "topology.shellbolt.max.pending",
            7.into(),
            Origin::CommandLine,
        );
        let s = Settings::from_config(&c);
        assert_eq!(s.timeout, Duration::from_secs(3));
        assert_eq!(s.max_pending, 7);
        assert_eq!(s.heartbeat, Duration::from_secs(1));
    }
}
