//! What a bolt executor drives for each of its tasks: a plain bolt ([`Plain`]), which runs with
//! no checkpoint code on its path, or, in a run that takes checkpoints, a bolt wrapped by
//! `checkpoint/wrapper.rs` (Storm's `StatefulBoltExecutor` / `CheckpointTupleForwarder`).

use super::checkpoint::Marker;
use super::collector::BoltOut;
use super::metrics::TaskStats;
use crate::components::{Bolt, BoltCollector, FatalError};
use crate::tuple::Tuple;
use std::time::Instant;

/// One bolt task as its executor drives it. The executor owns the loop, the timers and end
/// of input; the task decides what a batch of inputs, a round's marker and the end mean.
pub(crate) trait BoltTask: Send {
    /// The bolt itself: prepared, ticked, polled and cleaned up by the executor.
    fn bolt(&mut self) -> &mut dyn Bolt;
    /// After `prepare`, at the start of a run: what a resumed run gives back.
    fn restore(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
    /// A batch of inputs from the receive queue.
    fn tuples(&mut self, tuples: Vec<Tuple>, out: &mut BoltOut) -> anyhow::Result<()>;
    /// A round's marker from upstream task `from` (sent only in a run that takes checkpoints).
    fn marker(&mut self, _from: u32, _marker: &Marker, _out: &mut BoltOut) -> anyhow::Result<()> {
        Ok(())
    }
    /// Upstream task `from` said end of input.
    fn upstream_ended(&mut self, _from: u32, _out: &mut BoltOut) -> anyhow::Result<()> {
        Ok(())
    }
    /// Every upstream task has ended: emit what is left.
    fn finish(&mut self, out: &mut BoltOut) -> anyhow::Result<()> {
        self.bolt().finish(out)
    }
    /// After `finish` (its acks sent), before end of input goes downstream.
    fn finished(&mut self, _out: &mut BoltOut) -> anyhow::Result<()> {
        Ok(())
    }
    /// End of input has gone downstream.
    fn ended(&mut self, _out: &mut BoltOut) {}
    /// The run is over for this task (not a park): clean the bolt up and let go of what the
    /// task shares with the rest of the run.
    fn close(&mut self) {
        self.bolt().cleanup()
    }
    /// The bolt's condition when it is a prepared `filter` running without checkpoints (see
    /// `Bolt::pure_filter`).
    fn pure_filter(&self) -> Option<&crate::expr::Compiled> {
        None
    }
    /// The bolt's condition compiled against `input` when it is a `filter` without state (see
    /// `Bolt::filter_condition`).
    fn filter_condition(&self, _input: &[String]) -> Option<crate::expr::Compiled> {
        None
    }
    /// The bolt's fold of lines where they are read, running without checkpoints (see
    /// `Bolt::reader_fold`).
    fn reader_fold(&self) -> Option<Box<dyn crate::components::ReaderFold>> {
        None
    }
    /// The bolt's fold of lines where they are read before it is prepared, placed by `ctx`
    /// (see `Bolt::reader_fold_for`).
    fn reader_fold_for(
        &self,
        _ctx: &crate::components::TaskContext,
    ) -> Option<Box<dyn crate::components::ReaderFold>> {
        None
    }
    /// The bolt's fold of its output into counts, running without checkpoints (see
    /// `Bolt::counting_fold`).
    fn counting_fold(&self) -> Option<Box<dyn crate::components::ReaderFold>> {
        None
    }
}

/// A bolt in a run that takes no checkpoints: each batch goes straight to `execute`.
pub(crate) struct Plain(pub(crate) Box<dyn Bolt>);

impl BoltTask for Plain {
    fn bolt(&mut self) -> &mut dyn Bolt {
        &mut *self.0
    }

    #[inline]
    fn tuples(&mut self, tuples: Vec<Tuple>, out: &mut BoltOut) -> anyhow::Result<()> {
        execute_batch(&mut *self.0, &tuples, out)
    }

    fn pure_filter(&self) -> Option<&crate::expr::Compiled> {
        self.0.pure_filter()
    }

    fn filter_condition(&self, input: &[String]) -> Option<crate::expr::Compiled> {
        self.0.filter_condition(input)
    }

    fn reader_fold(&self) -> Option<Box<dyn crate::components::ReaderFold>> {
        self.0.reader_fold()
    }

    fn reader_fold_for(
        &self,
        ctx: &crate::components::TaskContext,
    ) -> Option<Box<dyn crate::components::ReaderFold>> {
        self.0.reader_fold_for(ctx)
    }

    fn counting_fold(&self) -> Option<Box<dyn crate::components::ReaderFold>> {
        self.0.counting_fold()
    }
}

/// Execute a batch of inputs, timed as one (a clock read per tuple costs more than a split).
#[inline]
pub(crate) fn execute_batch(
    bolt: &mut dyn Bolt,
    tuples: &[Tuple],
    out: &mut BoltOut,
) -> anyhow::Result<()> {
    prefetch_all(tuples);
    let start = Instant::now();
    // Tuples are executed where they lie in the batch: moving each out first costs a copy of
    // a cache line that the CPU cannot forward from the copy before it.
    for tuple in tuples {
        execute(bolt, tuple, out)?;
    }
    TaskStats::add(&out.em.stats.execute_ns, start.elapsed().as_nanos() as u64);
    Ok(())
}

/// Execute one input: acked after an `Ok` and failed after an `Err` for a basic bolt; an error
/// that is not fatal is reported and the run goes on.
#[inline]
pub(crate) fn execute(bolt: &mut dyn Bolt, tuple: &Tuple, out: &mut BoltOut) -> anyhow::Result<()> {
    let result = bolt.execute(tuple, out);
    let auto = bolt.auto_ack();
    match result {
        Ok(()) => {
            if auto {
                out.ack(tuple);
            }
        }
        Err(e) if e.is::<FatalError>() => return Err(e),
        Err(e) => {
            out.report_error(&format!("{e:#}"));
            if auto {
                out.fail(tuple);
            }
        }
    }
    TaskStats::add(&out.em.stats.executed, 1);
    Ok(())
}

/// Ask the CPU for every tuple of a batch at once. A batch was written on another core; read
/// one tuple at a time, each cache line is a separate wait for that core's cache.
#[inline]
fn prefetch_all(tuples: &[Tuple]) {
    #[cfg(target_arch = "x86_64")]
    for t in tuples {
        // SAFETY: a prefetch is a hint: it never faults, and the pointer is to a live tuple.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (t as *const Tuple).cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = tuples;
}
