//! Checkpointing as a wrapper around a bolt (Storm's `StatefulBoltExecutor` and
//! `CheckpointTupleForwarder`): in a run that takes checkpoints, every bolt task runs inside a
//! [`Checkpointed`]. It forwards a round's marker once every upstream task sent it; for a
//! stateful task it holds the inputs in its gate, applies them as the verdicts allow and saves
//! the state at a checkpoint; it tells a [`CheckpointParticipant`] the round its inputs belong
//! to and each checkpoint it completes. A plain bolt takes part as a [`Forwarded`] one. Restores,
//! at the start of a resumed run, are here too.

use super::bolt_side::BoltSide;
use super::gate::Unanchored;
use super::rounds::Rounds;
use super::{Checkpointing, Marker, Report, FINISHED};
use crate::components::{
    Bolt, BoltCollector, BoltInstance, CheckpointParticipant, FatalError, TaskContext,
};
use crate::runtime::bolt_task::{execute_batch, BoltTask};
use crate::runtime::collector::{folded_round, is_folded, BoltOut};
use crate::runtime::metrics::TaskStats;
use crate::tuple::{Tuple, Value};
use std::sync::Arc;
use std::time::Duration;

/// A bolt task in a run that takes checkpoints.
pub(crate) struct Checkpointed {
    bolt: Box<dyn CheckpointParticipant>,
    side: BoltSide,
    cp: Checkpointing,
}

impl Checkpointed {
    pub(crate) fn new(bolt: BoltInstance, side: BoltSide, cp: Checkpointing) -> Checkpointed {
        let bolt = match bolt {
            BoltInstance::Participant(p) => p,
            BoltInstance::Plain(b) => Box::new(Forwarded(b)),
        };
        Checkpointed { bolt, side, cp }
    }

    /// Inputs for a stateful task: acked now, held in its gate in arrival order, batched by
    /// the upstream task they came from, a folded chunk a batch of its own (see `hold_run`).
    /// Hands them back for a task without a gate.
    fn hold(&mut self, tuples: Vec<Tuple>, out: &mut BoltOut) -> Option<Vec<Tuple>> {
        let side = &mut self.side;
        let Some(gate) = side.gate.as_mut() else {
            return Some(tuples);
        };
        for t in &tuples {
            out.ack(t);
        }
        let first = tuples.first()?.source_task;
        if tuples
            .iter()
            .all(|t| t.source_task == first && !is_folded(t))
        {
            gate.hold(side.rounds.tag(first), tuples);
            return None;
        }
        hold_runs(gate, &side.rounds, tuples);
        None
    }

    /// The round `tuple`, arriving now, belongs to: the one after its upstream task's latest
    /// marker, or, for a folded chunk, the one it says.
    fn round_of(&self, tuple: &Tuple) -> u64 {
        folded_round(tuple).unwrap_or_else(|| self.side.rounds.tag(tuple.source_task))
    }

    /// Complete the rounds that `news` says this task now has from every upstream task.
    fn complete_rounds(
        &mut self,
        out: &mut BoltOut,
        news: impl FnOnce(&mut Rounds) -> Vec<Marker>,
    ) -> anyhow::Result<()> {
        for m in news(&mut self.side.rounds) {
            self.complete_round(m, out)?;
        }
        Ok(())
    }

    /// Round `m` is complete: apply what its verdicts allow, save at a checkpoint, and pass
    /// the round on.
    fn complete_round(&mut self, m: Marker, out: &mut BoltOut) -> anyhow::Result<()> {
        if let Some(gate) = self.side.gate.as_mut() {
            gate.learn(&m);
            self.apply_held(m.round, out)?;
            if let Some(txid) = m.txid {
                self.save(txid, None, out.em.task)?;
            }
        }
        if let Some(txid) = m.txid {
            self.bolt.checkpoint_marker(m.round, txid)?;
        }
        forward(Arc::new(m), out);
        Ok(())
    }

    /// Apply the held inputs the verdicts allow, rounds up to `complete` done.
    fn apply_held(&mut self, complete: u64, out: &mut BoltOut) -> anyhow::Result<()> {
        let Some(mut gate) = self.side.gate.take() else {
            return Ok(());
        };
        let bolt = self.bolt.as_bolt();
        let mut applied = 0u64;
        let result = gate.release(complete, |batch| {
            for input in batch {
                match bolt.execute(input, &mut Unanchored(&mut *out)) {
                    Ok(()) => {}
                    Err(e) if e.is::<FatalError>() => return Err(e),
                    Err(e) => out.report_error(&format!("{e:#}")),
                }
            }
            applied += batch.len() as u64;
            Ok(())
        });
        TaskStats::add(&out.em.stats.executed, applied);
        self.side.gate = Some(gate);
        result
    }

    /// Save the state under `txid` (with `position`) and tell the coordinator.
    fn save(&mut self, txid: u64, position: Option<&Value>, task: u32) -> anyhow::Result<()> {
        let side = &mut self.side;
        let bolt = &mut self.bolt;
        let all = !side.saved;
        self.cp
            .store
            .prepare_with(txid, &side.key, position, |sink| match bolt.state() {
                Some(state) => state
                    .changes_into(all, sink)
                    .map_err(|e| e.context(format!("saving {}", side.key))),
                None => Ok(()),
            })?;
        side.saved = true;
        side.last_txid = Some(txid);
        let _ = self.cp.reports.send(Report::Prepared { txid, task });
        Ok(())
    }

    /// About to finish: apply what the gate still holds (every tree is over by now).
    fn drain_gate(&mut self, out: &mut BoltOut) -> anyhow::Result<()> {
        self.apply_held(u64::MAX, out)?;
        if let Some(gate) = self.side.gate.as_ref() {
            let component = &out.em.component;
            tracing::debug!(
                "{component}: at most {} input(s) held at once, {} dropped",
                gate.peak,
                gate.dropped
            );
            if gate.held() > 0 {
                tracing::warn!(
                    "{component}: {} input(s) of trees never reported over were not applied",
                    gate.held()
                );
            }
        }
        Ok(())
    }

    /// The finish step has run (a window bolt emitted its open windows there): save what that
    /// left as the checkpoint after its last one, so a run resumed from this state dir does
    /// not emit those windows again. It commits once every task saved it or ended.
    ///
    /// When nimbus coordinates, the state is saved as finished and the checkpoint's marker
    /// follows the output downstream: a sink that holds its output until a commit then knows
    /// that this output is part of that checkpoint, and a rollback to it does not emit the
    /// output again.
    fn save_final(&mut self, out: &mut BoltOut) -> anyhow::Result<()> {
        if self.side.gate.is_none() {
            return Ok(());
        }
        if !self.cp.remote {
            return match self.side.last_txid {
                Some(txid) => self.save(txid + 1, None, out.em.task),
                None => Ok(()),
            };
        }
        let round = self
            .cp
            .next_checkpoint_round(self.side.rounds.last_marked());
        let Some(txid) = self.cp.txid_of(round) else {
            return Ok(());
        };
        self.save(txid, Some(&Value::str(FINISHED)), out.em.task)?;
        let marker = Marker {
            round,
            txid: Some(txid),
            verdicts: Vec::new(),
        };
        forward(Arc::new(marker), out);
        Ok(())
    }
}

/// Hold `tuples` in `gate` in arrival order, a run of one upstream task at a time, each
/// folded chunk a run of its own: applied in another order, a chunk that moved a watermark
/// would leave the lines before it late.
fn hold_runs(gate: &mut super::gate::Gate, rounds: &Rounds, tuples: Vec<Tuple>) {
    let same_run =
        |a: &Tuple, b: &Tuple| a.source_task == b.source_task && !is_folded(a) && !is_folded(b);
    let mut run: Vec<Tuple> = Vec::new();
    for t in tuples {
        if run.last().is_some_and(|l| !same_run(l, &t)) {
            hold_run(gate, rounds, std::mem::take(&mut run));
        }
        run.push(t);
    }
    hold_run(gate, rounds, run);
}

/// Hold `run` (inputs of one upstream task, or one folded chunk) in `gate` under its round:
/// the one after its task's latest marker, or, for a folded chunk, the one it says (see
/// `folded_round`), taken off (the bolt merges the chunk as it merges one sent without
/// checkpoints).
fn hold_run(gate: &mut super::gate::Gate, rounds: &Rounds, mut run: Vec<Tuple>) {
    let Some(first) = run.first_mut() else {
        return;
    };
    let round = match folded_round(first) {
        Some(round) => {
            first.values.pop();
            round
        }
        None => rounds.tag(first.source_task),
    };
    gate.hold(round, run);
}

/// Send `marker` down every edge of the task.
fn forward(marker: Arc<Marker>, out: &mut BoltOut) {
    let from = out.em.task;
    for &to in out.em.router.downstream() {
        out.outbox.marker(from, to, marker.clone());
    }
}

impl BoltTask for Checkpointed {
    fn bolt(&mut self) -> &mut dyn Bolt {
        self.bolt.as_bolt()
    }

    /// A task without state may fold its output into counts: the counts go to the task after
    /// it tagged with their round.
    fn counting_fold(&self) -> Option<Box<dyn crate::components::ReaderFold>> {
        match self.side.gate {
            None => self.bolt.counting_fold(),
            Some(_) => None,
        }
    }

    /// A task without state may be a `filter` a spout evaluates as it reads: the tuples it
    /// passes still come to the task, in their rounds.
    fn filter_condition(&self, input: &[String]) -> Option<crate::expr::Compiled> {
        match self.side.gate {
            None => self.bolt.filter_condition(input),
            Some(_) => None,
        }
    }

    /// A task may fold lines where they are read: each chunk comes tagged with its round
    /// (see `folded_round`), and is applied in it as its lines would have been.
    fn reader_fold(&self) -> Option<Box<dyn crate::components::ReaderFold>> {
        self.bolt.reader_fold()
    }

    fn reader_fold_for(&self, ctx: &TaskContext) -> Option<Box<dyn crate::components::ReaderFold>> {
        self.bolt.reader_fold_for(ctx)
    }

    /// On a resumed run: a stateful task gets the state its last committed checkpoint saved.
    fn restore(&mut self) -> anyhow::Result<()> {
        if !self.cp.resuming || self.side.gate.is_none() {
            return Ok(());
        }
        let side = &mut self.side;
        if self.cp.rollback {
            let finished = Value::str(FINISHED);
            side.flushed = self.cp.store.position(&side.key)?.as_ref() == Some(&finished);
        }
        if let Some(state) = self.bolt.state() {
            // Read as the task takes them: keyed state past the memory limit spills as it
            // comes instead of being held whole first.
            let mut entries = self.cp.store.entries_of(&side.key)?;
            state
                .restore_from(&mut entries)
                .map_err(|e| e.context(format!("restoring {}", side.key)))?;
        }
        Ok(())
    }

    /// A stateful task holds the batch; another executes it, each run of one upstream task
    /// told to the bolt as the round it belongs to.
    fn tuples(&mut self, tuples: Vec<Tuple>, out: &mut BoltOut) -> anyhow::Result<()> {
        let Some(tuples) = self.hold(tuples, out) else {
            return Ok(());
        };
        let mut tuples = tuples;
        // A folded chunk is a run of its own: its round is its own, and the bolt gets it
        // without the tag.
        let same_run =
            |a: &Tuple, b: &Tuple| a.source_task == b.source_task && !is_folded(a) && !is_folded(b);
        for run in tuples.chunk_by_mut(same_run) {
            self.bolt.input_round(self.round_of(&run[0]))?;
            if is_folded(&run[0]) {
                run[0].values.pop();
            }
            execute_batch(self.bolt.as_bolt(), run, out)?;
        }
        Ok(())
    }

    /// The rounds a marker from `from` completes are applied and forwarded.
    fn marker(&mut self, from: u32, marker: &Marker, out: &mut BoltOut) -> anyhow::Result<()> {
        self.complete_rounds(out, |rounds| rounds.marker(from, marker))
    }

    /// The rounds the end of upstream task `from` completes.
    fn upstream_ended(&mut self, from: u32, out: &mut BoltOut) -> anyhow::Result<()> {
        self.complete_rounds(out, |rounds| rounds.ended(from))
    }

    fn finish(&mut self, out: &mut BoltOut) -> anyhow::Result<()> {
        self.drain_gate(out)?;
        // Restored by a rollback from after its end-of-input output: emitted already.
        match self.side.flushed {
            true => Ok(()),
            false => self.bolt.finish(out),
        }
    }

    /// Its final state (and, under nimbus, the checkpoint's marker) before end of input.
    fn finished(&mut self, out: &mut BoltOut) -> anyhow::Result<()> {
        self.save_final(out)
    }

    /// A stateful task ended: the coordinator counts it for later checkpoints.
    fn ended(&mut self, out: &mut BoltOut) {
        if self.side.gate.is_some() {
            let task = out.em.task;
            let _ = self.cp.reports.send(Report::Finished { task });
        }
    }

    /// The coordinator's thread ends once every sender of reports is gone, and the task itself
    /// outlives its executor (handed back in its report): its sender goes now.
    fn close(&mut self) {
        self.bolt.cleanup();
        self.cp.reports = crossbeam_channel::bounded(0).0;
    }
}

/// A plain bolt in a run that takes checkpoints: it has no part in them beyond the rounds its
/// wrapper forwards (Storm's `CheckpointTupleForwarder`).
struct Forwarded(Box<dyn Bolt>);

impl Bolt for Forwarded {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.0.prepare(ctx)
    }
    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.0.execute(input, out)
    }
    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.0.finish(out)
    }
    fn poll(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.0.poll(out)
    }
    fn poll_interval(&self) -> Option<Duration> {
        self.0.poll_interval()
    }
    fn auto_ack(&self) -> bool {
        self.0.auto_ack()
    }
    fn cleanup(&mut self) {
        self.0.cleanup()
    }
    fn counting_fold(&self) -> Option<Box<dyn crate::components::ReaderFold>> {
        self.0.counting_fold()
    }
    fn filter_condition(&self, input: &[String]) -> Option<crate::expr::Compiled> {
        self.0.filter_condition(input)
    }
    fn reader_fold(&self) -> Option<Box<dyn crate::components::ReaderFold>> {
        self.0.reader_fold()
    }
    fn reader_fold_for(&self, ctx: &TaskContext) -> Option<Box<dyn crate::components::ReaderFold>> {
        self.0.reader_fold_for(ctx)
    }
}

impl CheckpointParticipant for Forwarded {}

#[cfg(test)]
mod tests {
    use super::super::gate::Gate;
    use super::super::rounds::Rounds;
    use super::hold_runs;
    use crate::model::plan::streams;
    use crate::tuple::{Tuple, Value};

    /// A chunk counted where it was read by spout task 1, saying its round (see
    /// `folded_round`).
    fn folded(round: i64) -> Tuple {
        let words = Value::list(vec![Value::str("w")]);
        let counts = Value::list(vec![Value::Int(2)]);
        let values = smallvec::smallvec![words, counts, Value::Int(round)];
        Tuple::new(values, 1, streams::FOLDED)
    }

    /// A line of task `source`, its one value `n`.
    fn line(source: u32, n: i64) -> Tuple {
        Tuple::new(smallvec::smallvec![Value::Int(n)], source, streams::DEFAULT)
    }

    /// What the gate applies once rounds up to `complete` are, in order: a line as its value,
    /// a chunk as -1 (checked to come without its round).
    fn applied(gate: &mut Gate, complete: u64) -> Vec<i64> {
        let mut seen = Vec::new();
        gate.release(complete, |batch| {
            for t in batch {
                match (t.stream == streams::FOLDED, t.values.as_slice()) {
                    (true, [_, _]) => seen.push(-1),
                    (false, [Value::Int(n)]) => seen.push(*n),
                    _ => panic!("a chunk applied with its round, or a stray input: {t:?}"),
                }
            }
            Ok(())
        })
        .expect("applies");
        seen
    }

    #[test]
    fn a_folded_chunk_waits_for_the_round_it_says_and_all_keeps_its_arrival_order() {
        let mut gate = Gate::default();
        // No marker yet: lines belong to round 1.
        let rounds = Rounds::default();
        let batch = vec![line(1, 10), line(1, 11), folded(1), line(1, 12), folded(3)];
        hold_runs(&mut gate, &rounds, batch);
        hold_runs(
            &mut gate,
            &rounds,
            vec![line(2, 20), folded(1), line(2, 21)],
        );
        assert_eq!(gate.held(), 8);
        assert_eq!(
            applied(&mut gate, 2),
            [10, 11, -1, 12, 20, -1, 21],
            "in arrival order, round 3's chunk left"
        );
        assert_eq!(applied(&mut gate, 3), [-1]);
        assert_eq!(gate.held(), 0);
    }
}
