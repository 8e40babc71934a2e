//! Standard output held until committed. When a checkpointed topology's workers run in several
//! processes, a lost worker rolls every worker back to the last committed checkpoint, and what
//! came after it is replayed: lines the `stdout` sink printed from those tuples would be
//! printed twice. So in that case this process's `stdout` tasks write through this gate: each
//! line is held under the checkpoint round of the input it came from (the round after the last
//! marker its upstream task sent), and written out once a checkpoint whose round covers it
//! commits. A rollback drops what is held (it is produced again); the end of the run writes
//! the rest.
//!
//! Held text past [`IN_MEMORY`] bytes (every task's together) moves to an unnamed temporary
//! file (`spill_file.rs`) and is read back when it goes out, so a slow commit costs disk, not
//! memory.

use super::spill_file::{Part, Spill};
use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Held text kept in memory, every task's together; past it, the text moves to the spill file.
const IN_MEMORY: usize = 32 << 20;

/// One task's held lines.
#[derive(Default)]
struct Held {
    /// Lines by the round of their input, each round's in the order written.
    lines: BTreeMap<u64, Vec<Part>>,
    /// Completed checkpoint rounds, oldest first: (txid, round).
    marks: VecDeque<(u64, u64)>,
}

/// Everything held, and where.
struct Inner {
    tasks: BTreeMap<u32, Held>,
    /// Bytes held in memory.
    in_memory: usize,
    /// Bytes held in the spill file.
    on_disk: u64,
    spill: Spill,
    /// Past this many bytes in memory, the text spills.
    limit: usize,
}

/// The held lines of this process's `stdout` tasks.
pub(crate) struct Gate {
    inner: Mutex<Inner>,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate::with_limit(IN_MEMORY)
    }
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
    /// A gate that keeps at most `limit` bytes of text in memory.
    fn with_limit(limit: usize) -> Gate {
        let inner = Inner {
            tasks: BTreeMap::new(),
            in_memory: 0,
            on_disk: 0,
            spill: Spill::new("storm-held-output"),
            limit,
        };
        Gate {
            inner: Mutex::new(inner),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Task `task` wrote `text` from inputs of round `round`.
    pub(crate) fn write(&self, task: u32, round: u64, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut inner = self.lock();
        let held = inner.tasks.entry(task).or_default();
        let pieces = held.lines.entry(round).or_default();
        match pieces.last_mut() {
            Some(Part::Bytes(b)) => b.extend_from_slice(text.as_bytes()),
            _ => pieces.push(Part::Bytes(text.as_bytes().to_vec())),
        }
        inner.in_memory += text.len();
        if inner.in_memory > inner.limit {
            inner.spill();
        }
    }

    /// Round `round` (checkpoint `txid`) is complete for task `task`: its lines of that round
    /// and before go out once `txid` commits.
    pub(crate) fn mark(&self, task: u32, round: u64, txid: u64) {
        self.lock()
            .tasks
            .entry(task)
            .or_default()
            .marks
            .push_back((txid, round));
    }

    /// Checkpoint `committed` committed: write what it covers to `out`.
    pub(crate) fn release(&self, committed: u64, out: &mut impl Write) -> std::io::Result<()> {
        let mut inner = self.lock();
        let mut going = Vec::new();
        for held in inner.tasks.values_mut() {
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
            going.extend(std::mem::replace(&mut held.lines, later).into_values());
        }
        inner.write_out(going, out)
    }

    /// A rollback: what is held will be produced again.
    pub(crate) fn discard(&self) {
        let mut inner = self.lock();
        inner.tasks.clear();
        inner.in_memory = 0;
        inner.on_disk = 0;
        inner.spill.clear();
    }

    /// The run is over (no rollback can come): write everything held to `out`.
    pub(crate) fn release_all(&self, out: &mut impl Write) -> std::io::Result<()> {
        let mut inner = self.lock();
        let mut going = Vec::new();
        for held in inner.tasks.values_mut() {
            going.extend(std::mem::take(&mut held.lines).into_values());
            held.marks.clear();
        }
        inner.write_out(going, out)
    }
}

impl Inner {
    /// Move every piece of text held in memory to the spill file. Should the file fail
    /// (no temp folder, a full disk), the text stays in memory, and the next try waits until
    /// twice as much is held.
    fn spill(&mut self) {
        if let Err(e) = self.try_spill() {
            tracing::warn!(
                "stdout: cannot move {} bytes of output held for a checkpoint to a temporary \
                 file ({e}); keeping it in memory",
                self.in_memory
            );
            self.limit = self.in_memory.saturating_mul(2);
        }
    }

    fn try_spill(&mut self) -> std::io::Result<()> {
        let parts = self
            .tasks
            .values_mut()
            .flat_map(|held| held.lines.values_mut())
            .flatten();
        for part in parts {
            let moved = self.spill.move_out(part)?;
            self.in_memory -= moved;
            self.on_disk += moved as u64;
        }
        Ok(())
    }

    /// Write `rounds` of held text to `out`, in order, and let go of it.
    fn write_out(&mut self, rounds: Vec<Vec<Part>>, out: &mut impl Write) -> std::io::Result<()> {
        for part in rounds.into_iter().flatten() {
            match part {
                Part::Bytes(b) => {
                    self.in_memory -= b.len();
                    out.write_all(&b)?;
                }
                spilled => {
                    let mut b = vec![0; spilled.len()];
                    self.spill.read(&spilled, 0, &mut b)?;
                    self.on_disk -= b.len() as u64;
                    out.write_all(&b)?;
                }
            }
        }
        if self.on_disk == 0 {
            self.spill.clear();
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

    /// One thing done to a gate.
    #[derive(Debug, Clone)]
    enum Op {
        Write(u32, u64, String),
        Mark(u32, u64, u64),
        Release(u64),
        Discard,
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            6 => (1u32..4, 0u64..6, "[a-z]{0,12}\n").prop_map(|(t, r, s)| Op::Write(t, r, s)),
            2 => (1u32..4, 0u64..6, 0u64..6).prop_map(|(t, r, x)| Op::Mark(t, r, x)),
            2 => (0u64..6).prop_map(Op::Release),
            1 => Just(Op::Discard),
        ]
    }

    /// What `gate` writes out at each release of `ops` (each followed by `|`), then at the end.
    fn written(gate: &Gate, ops: &[Op]) -> Vec<u8> {
        let mut out = Vec::new();
        for op in ops {
            match op {
                Op::Write(t, r, s) => gate.write(*t, *r, s),
                Op::Mark(t, r, x) => gate.mark(*t, *r, *x),
                Op::Release(x) => {
                    gate.release(*x, &mut out).expect("written");
                    // What each release wrote, told apart.
                    out.push(b'|');
                }
                Op::Discard => gate.discard(),
            }
        }
        gate.release_all(&mut out).expect("written");
        out
    }

    proptest::proptest! {
        /// A gate that spills (at most `limit` bytes in memory, down to none) writes out
        /// exactly what one that keeps everything in memory writes, at every release, and
        /// holds nothing once everything went out.
        #[test]
        fn spilling_never_changes_what_goes_out(
            ops in proptest::collection::vec(op(), 0..80),
            limit in 0usize..64,
        ) {
            let spilling = Gate::with_limit(limit);
            let in_memory = Gate::with_limit(usize::MAX);
            proptest::prop_assert_eq!(written(&spilling, &ops), written(&in_memory, &ops));
            let inner = spilling.lock();
            proptest::prop_assert_eq!((inner.in_memory, inner.on_disk), (0, 0));
        }
    }

    #[test]
    fn held_text_past_the_limit_moves_to_disk_and_comes_back_in_order() {
        let gate = Gate::with_limit(10);
        gate.write(1, 1, "first line\n");
        gate.write(1, 1, "second\n");
        gate.write(2, 2, "other task\n");
        {
            let inner = gate.lock();
            assert!(inner.on_disk > 0, "spilled");
            assert!(inner.in_memory <= 10, "{} in memory", inner.in_memory);
        }
        gate.mark(1, 1, 7);
        let mut out = Vec::new();
        gate.release(7, &mut out).expect("written");
        assert_eq!(text(std::mem::take(&mut out)), "first line\nsecond\n");
        gate.release_all(&mut out).expect("written");
        assert_eq!(text(out), "other task\n");
        assert_eq!(gate.lock().on_disk, 0);
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
