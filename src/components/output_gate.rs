//! Standard output held until committed. When a checkpointed topology's workers run in several
//! processes, a lost worker rolls every worker back to the last committed checkpoint, and what
//! came after it is replayed: lines the `stdout` sink printed from those tuples would be
//! printed twice. So in that case this process's `stdout` tasks write through this gate: each
//! line is held under the checkpoint round of the input it came from (the round after the last
//! marker its upstream task sent), and written out once a checkpoint whose round covers it
//! commits. A rollback drops what is held (it is produced again); the end of the run writes
//! the rest.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// One task's held lines.
#[derive(Default)]
struct Held {
    /// Lines by the round of their input, each round's in the order written.
    lines: BTreeMap<u64, String>,
    /// Completed checkpoint rounds, oldest first: (txid, round).
    marks: VecDeque<(u64, u64)>,
}

/// The held lines of this process's `stdout` tasks.
#[derive(Default)]
pub(crate) struct Gate {
    tasks: Mutex<BTreeMap<u32, Held>>,
}

static GATE: OnceLock<Gate> = OnceLock::new();

/// Hold this process's standard output from now on.
pub(crate) fn enable() {
    GATE.get_or_init(Gate::default);
}

/// The gate, when output is held.
pub(crate) fn get() -> Option<&'static Gate> {
    GATE.get()
}

impl Gate {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u32, Held>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Task `task` wrote `text` from inputs of round `round`.
    pub(crate) fn write(&self, task: u32, round: u64, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut tasks = self.lock();
        let held = tasks.entry(task).or_default();
        held.lines.entry(round).or_default().push_str(text);
    }

    /// Round `round` (checkpoint `txid`) is complete for task `task`: its lines of that round
    /// and before go out once `txid` commits.
    pub(crate) fn mark(&self, task: u32, round: u64, txid: u64) {
        self.lock()
            .entry(task)
            .or_default()
            .marks
            .push_back((txid, round));
    }

    /// Checkpoint `committed` committed: write what it covers to `out`.
    pub(crate) fn release(&self, committed: u64, out: &mut impl Write) -> std::io::Result<()> {
        let mut tasks = self.lock();
        for held in tasks.values_mut() {
            let mut upto = None;
            while let Some(&(txid, round)) = held.marks.front() {
                if txid > committed {
                    break;
                }
                upto = Some(round);
                held.marks.pop_front();
            }
            let Some(round) = upto else {
                continue;
            };
            let later = held.lines.split_off(&round.saturating_add(1));
            for (_, lines) in std::mem::replace(&mut held.lines, later) {
                out.write_all(lines.as_bytes())?;
            }
        }
        out.flush()
    }

    /// A rollback: what is held will be produced again.
    pub(crate) fn discard(&self) {
        self.lock().clear();
    }

    /// The run is over (no rollback can come): write everything held to `out`.
    pub(crate) fn release_all(&self, out: &mut impl Write) -> std::io::Result<()> {
        let mut tasks = self.lock();
        for held in tasks.values_mut() {
            for (_, lines) in std::mem::take(&mut held.lines) {
                out.write_all(lines.as_bytes())?;
            }
            held.marks.clear();
        }
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(out: Vec<u8>) -> String {
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn lines_go_out_once_a_checkpoint_of_their_round_commits() {
        let gate = Gate::default();
        gate.write(1, 1, "a\n");
        // From an upstream task ahead of the others: a later round, held longer.
        gate.write(1, 3, "c\n");
        gate.mark(1, 2, 5);
        gate.write(2, 1, "x\n");
        let mut out = Vec::new();
        gate.release(4, &mut out).expect("written");
        assert_eq!(text(std::mem::take(&mut out)), "", "5 is not committed");
        gate.release(5, &mut out).expect("written");
        assert_eq!(text(std::mem::take(&mut out)), "a\n", "round 3 waits");
        gate.mark(1, 4, 6);
        gate.mark(2, 4, 6);
        gate.release(6, &mut out).expect("written");
        let released = text(out);
        assert!(
            released.contains("c\n") && released.contains("x\n"),
            "{released}"
        );
    }

    #[test]
    fn a_rollback_drops_what_is_held_and_the_end_writes_the_rest() {
        let gate = Gate::default();
        gate.write(1, 1, "replayed\n");
        gate.mark(1, 1, 3);
        gate.discard();
        gate.write(1, 2, "final\n");
        let mut out = Vec::new();
        gate.release(3, &mut out).expect("written");
        assert!(out.is_empty());
        gate.release_all(&mut out).expect("written");
        assert_eq!(text(out), "final\n");
    }
}
