//! Child processes that end with this one, even when it is SIGKILLed and none of its own
//! clean-up runs: Linux's parent-death signal (`PR_SET_PDEATHSIG`) asks the kernel to SIGKILL
//! the child when the thread that started it ends. The signal follows that thread, not the
//! process, so children that must outlive the thread that asks for them (a multilang child
//! whose task a rebalance moves to another executor) are started from one thread that lives
//! as long as the process. A child's own children are not covered: the request is not
//! inherited (a process that ends normally stops their process group itself).

use std::io;
use std::process::{Child, Command};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

/// Make the child of `command` get SIGKILL when the thread that spawns it ends; a parent
/// that is already gone by then makes it exit at once.
#[cfg(target_os = "linux")]
pub(crate) fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
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
    /// `hangs::a_sigkilled_run_takes_its_multilang_children_with_it`.)
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
}
