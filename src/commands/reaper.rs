//! Nothing a multilang child starts outlives the process that ran it. Children run in a
//! process group of their own, which is SIGKILLed with them; a descendant that left that group
//! (`setsid cmd &`) escapes it. So a worker process, and a `storm run`, becomes a child
//! subreaper (Linux's `PR_SET_CHILD_SUBREAPER`): such a descendant is re-parented to it when
//! its own parent ends, rather than to init, and whatever is left among its children when the
//! command ends is SIGKILLed and reaped. (A process SIGKILLed itself runs none of this; its
//! children's groups are then ended by the guard in `lifeline.rs`.)

/// While held, this process adopts its orphaned descendants; dropped, it ends them.
pub(crate) struct Reaper {
    armed: bool,
}

impl Reaper {
    /// Become a child subreaper (a warning, and nothing to end later, where it cannot).
    pub(crate) fn start() -> Reaper {
        let armed = become_subreaper();
        Reaper { armed }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if self.armed {
            end_children();
        }
    }
}

#[cfg(target_os = "linux")]
fn become_subreaper() -> bool {
    // SAFETY: prctl(2) with PR_SET_CHILD_SUBREAPER takes an integer flag; no memory is involved.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if rc != 0 {
        tracing::warn!(
            "cannot adopt orphaned descendants (prctl: {}); a detached grandchild of a \
             multilang child may outlive the run",
            std::io::Error::last_os_error()
        );
    }
    rc == 0
}

#[cfg(not(target_os = "linux"))]
fn become_subreaper() -> bool {
    false
}

/// SIGKILL and reap this process's children, again while their own orphans come to it (a
/// bounded number of rounds).
#[cfg(target_os = "linux")]
fn end_children() {
    let me = std::process::id();
    for _ in 0..16 {
        let children = children_of(me);
        if children.is_empty() {
            return;
        }
        for &pid in &children {
            // SAFETY: kill(2) on a pid that is our child (not yet reaped, so not reused).
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        for &pid in &children {
            // SAFETY: waitpid(2) on our own child; the status pointer may be null.
            unsafe {
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn end_children() {}

/// The pids whose parent is `parent`, from `/proc/PID/stat` (the field after the command name,
/// which is in parentheses and may hold any character, so read after the last `)`).
#[cfg(target_os = "linux")]
fn children_of(parent: u32) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| {
            let pid: libc::pid_t = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let ppid = parent_in_stat(&stat)?;
            (ppid == parent).then_some(pid)
        })
        .collect()
}

/// The parent pid in the text of a `/proc/PID/stat` file.
fn parent_in_stat(stat: &str) -> Option<u32> {
    let (_, after) = stat.rsplit_once(')')?;
    let mut fields = after.split_whitespace();
    fields.next()?; // the state
    fields.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_after_a_command_name_holding_spaces_and_parentheses() {
        assert_eq!(
            parent_in_stat("4242 (a (b) c) S 17 4242 4242 0 -1 4194560"),
            Some(17)
        );
        assert_eq!(parent_in_stat("garbage"), None);
        assert_eq!(parent_in_stat("1 (x) S notanumber"), None);
    }
}
