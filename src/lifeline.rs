//! Child processes that end with this one, even when it is SIGKILLed and none of its own
//! clean-up runs: Linux's parent-death signal (`PR_SET_PDEATHSIG`) asks the kernel to SIGKILL
//! the child when the thread that started it ends. The signal follows that thread, not the
//! process, so children that must outlive the thread that asks for them (a multilang child
//! whose task a rebalance moves to another executor) are started from one thread that lives
//! as long as the process. A child's own children are not covered by that request (it is not
//! inherited), so a child that leads a process group of its own has the group registered with a
//! guard: a small shell, in a group of its own, that holds the read end of a pipe only this
//! process writes to. When this process ends, however it ends, the pipe closes and the guard
//! SIGKILLs every group still registered, so nothing a child started in its group outlives the
//! run.

use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

/// Make the child of `command` get SIGKILL when the thread that spawns it ends; a parent
/// that is already gone by then makes it exit at once.
#[cfg(target_os = "linux")]
pub(crate) fn die_with_parent(command: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: between fork and exec the closure calls only `prctl`, `getppid` and `_exit`,
    // which are async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}

/// A command to start, and where its child goes.
type Request = (Command, Sender<io::Result<Child>>);

/// The way to the thread that starts children, started on first use.
static SPAWNER: OnceLock<Mutex<Sender<Request>>> = OnceLock::new();

/// Start `cmd` from a thread that lives as long as this process, its child to be SIGKILLed
/// when the process dies.
pub(crate) fn spawn_for_process_life(cmd: Command) -> io::Result<Child> {
    let (reply, answer) = channel();
    let gone = || io::Error::other("the thread that starts children is gone");
    SPAWNER
        .get_or_init(start_spawner)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((cmd, reply))
        .map_err(|_| gone())?;
    answer.recv().map_err(|_| gone())?
}

/// Start `cmd` as the leader of a process group of its own, from the lasting thread: the child
/// dies with this process (the kernel's parent-death signal) and so does its group (the guard).
/// End it with `end_group`.
pub(crate) fn spawn_group_for_process_life(mut cmd: Command) -> io::Result<Child> {
    cmd.process_group(0);
    let child = spawn_for_process_life(cmd)?;
    guard_line('+', child.id());
    Ok(child)
}

/// SIGKILL the process group `child` leads (started by `spawn_group_for_process_life`), so what
/// it started in its group (a pipeline, a `cmd &`) ends with it, and take it off the guard's
/// list. Called before the child is reaped: until then its pid, the group's id, cannot be
/// reused.
pub(crate) fn end_group(child: &Child) {
    if let Ok(pgid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory is involved.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
    guard_line('-', child.id());
}

/// What the guard runs. It reads `+ PGID` (watch a group) and `- PGID` (the group was ended)
/// until its standard input closes, then SIGKILLs every group it still watches. Interrupts
/// from a terminal do not end it (they are this process's to handle); it is in a group of its
/// own anyway.
const GUARD_SCRIPT: &str = r#"trap '' INT HUP
groups=' '
while read -r op pg; do
  case $op in
    +) groups="$groups$pg " ;;
    -) case $groups in *" $pg "*) groups="${groups%%" $pg "*} ${groups#*" $pg "}" ;; esac ;;
  esac
done
for pg in $groups; do kill -s KILL -- "-$pg" 2>/dev/null; done
"#;

/// The guard's standard input, started on first use (`None` when it could not start).
static GUARD: OnceLock<Mutex<Option<ChildStdin>>> = OnceLock::new();

/// Tell the guard one line; a guard that is gone or never started is warned about once.
fn guard_line(op: char, pgid: u32) {
    let mut guard = GUARD
        .get_or_init(start_guard)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let Some(input) = guard.as_mut() else {
        return;
    };
    if let Err(e) = writeln!(input, "{op} {pgid}") {
        tracing::warn!("the guard of child process groups is gone ({e}): what a multilang child starts may outlive a killed run");
        *guard = None;
    }
}

/// Start the guard: not with the parent-death signal (it must outlive this process), its
/// output nowhere (a pipe this process writes to must not stay open after it), the write end
/// of its input ours alone (std's pipes are close-on-exec, so no other child inherits it).
fn start_guard() -> Mutex<Option<ChildStdin>> {
    let started = Command::new("/bin/sh")
        .args(["-c", GUARD_SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    match started {
        // The guard is not waited for: it ends when this process does.
        Ok(mut child) => Mutex::new(child.stdin.take()),
        Err(e) => {
            tracing::warn!("cannot start the guard of child process groups (/bin/sh: {e}): what a multilang child starts may outlive a killed run");
            Mutex::new(None)
        }
    }
}

/// Start the thread that starts children; should it not start, requests fail with an error.
fn start_spawner() -> Mutex<Sender<Request>> {
    let (requests, incoming) = channel::<Request>();
    let started = std::thread::Builder::new()
        .name("child-spawner".into())
        .spawn(move || {
            for (mut cmd, reply) in incoming {
                die_with_parent(&mut cmd);
                let _ = reply.send(cmd.spawn());
            }
        });
    if let Err(e) = started {
        tracing::warn!("cannot start the thread that starts children: {e}");
    }
    Mutex::new(requests)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child started through the lasting thread runs, ends and is reaped as one started
    /// directly, and a program that cannot start is the same error. (That the child dies with
    /// a SIGKILLed storm is checked on a real run:
    /// `hangs::a_sigkilled_run_takes_its_multilang_children_and_theirs_with_it`.)
    #[test]
    fn a_child_started_for_the_process_life_runs_and_is_reaped() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exit 7"]);
        let mut child = spawn_for_process_life(cmd).expect("starts");
        assert_eq!(child.wait().expect("waits").code(), Some(7));
        let missing = Command::new("/nonexistent/program");
        let err = spawn_for_process_life(missing).expect_err("no such program");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    /// Ending a group ends what its leader started in it, the leader included.
    #[test]
    fn ending_a_group_ends_what_its_leader_started() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 300 & echo $!; wait"])
            .stdout(Stdio::piped());
        let mut child = spawn_group_for_process_life(cmd).expect("starts");
        let mut line = String::new();
        let out = child.stdout.take().expect("piped");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line).expect("reads");
        let sleeper: libc::pid_t = line.trim().parse().expect("a pid");
        end_group(&child);
        assert!(!child.wait().expect("waits").success());
        // The sleeper, its parent gone, is reaped by whoever adopts it: wait for that.
        let gone = (0..500).any(|_| {
            let stat = std::fs::read_to_string(format!("/proc/{sleeper}/stat"));
            let dead = stat.map_or(true, |s| s.contains(") Z "));
            if !dead {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            dead
        });
        assert!(gone, "the sleeper {sleeper} outlived its group's end");
    }
}
