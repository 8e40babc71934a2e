//! The executors' part in checkpoints (see `checkpoint`): spouts send each round's marker and
//! save their position at a checkpoint; bolts forward a round once every upstream task sent
//! it, and a stateful bolt holds its inputs in its gate, applies them as the verdicts allow and
//! saves its state at a checkpoint. Restores, at the start of a resumed run, are here too.

use super::checkpoint::gate::Unanchored;
use super::checkpoint::rounds::Rounds;
use super::checkpoint::{split_root, task_key, Marker, Report, FINISHED, ROUND};
use super::collector::BoltOut;
use super::executor::{spout_call, BoltExecutor, SpoutExecutor};
use super::metrics::TaskStats;
use crate::components::{BoltCollector, FatalError};
use crate::tuple::{Tuple, Value};
use std::sync::Arc;

impl SpoutExecutor {
    /// On a resumed run: give each spout task the position its last committed checkpoint saved
    /// (a spout that rewinds must find one; one that cannot starts over, at least once).
    pub(crate) fn restore_positions(&mut self) -> anyhow::Result<()> {
        let Some(cp) = self.checkpoints.as_ref().filter(|c| c.resuming) else {
            return Ok(());
        };
        for t in &mut self.tasks {
            let key = task_key(&t.ctx.component, t.ctx.task_index);
            match cp.store.position(&key)? {
                Some(position) => t.component.restore(position)?,
                // A spout that rewinds saves a position at every checkpoint: without one, its
                // state would start over while the bolts' does not.
                None if t.component.position().is_some() => anyhow::bail!(
                    "checkpoint {} holds no position for {key}: the state is damaged \
                     (`storm run --fresh` or `storm state clear DIR` start over)",
                    cp.base
                ),
                None => tracing::warn!("{key}: no position saved; the spout starts over"),
            }
        }
        Ok(())
    }

    /// Send the marker of every task whose round is due.
    pub(crate) fn markers_due(&mut self) -> anyhow::Result<()> {
        if self.checkpoints.is_none() {
            return Ok(());
        }
        for i in 0..self.tasks.len() {
            let due = self.tasks[i]
                .state
                .side
                .as_ref()
                .is_some_and(|s| self.clock >= s.next_at);
            if due && !self.tasks[i].finished {
                self.send_marker(i, false)?;
            }
        }
        Ok(())
    }

    /// Send task `i`'s next marker (with `last`, its final one: the next checkpoint round),
    /// after giving the spout the acks the verdict allows; at a checkpoint, save its position.
    pub(crate) fn send_marker(&mut self, i: usize, last: bool) -> anyhow::Result<()> {
        let (Some(cp), slot) = (&self.checkpoints, &mut self.tasks[i]) else {
            return Ok(());
        };
        let Some(side) = slot.state.side.as_mut() else {
            return Ok(());
        };
        let low = slot.state.trees.low().unwrap_or(0);
        // Rounds are counted, checkpoints are timed: a checkpoint due skips to the next
        // checkpoint round (bolts pass on any higher round, as for a final marker).
        let interval = ROUND * u32::try_from(cp.ratio).unwrap_or(u32::MAX);
        let checkpoint_at = *side.checkpoint_at.get_or_insert(self.clock + interval);
        let round = if last || self.clock >= checkpoint_at {
            cp.next_checkpoint_round(side.round)
        } else {
            side.round + 1
        };
        side.next_at = self.clock + ROUND;
        let acks = side.release(low);
        let txid = cp.txid_of(round);
        if txid.is_some() {
            side.checkpoint_at = Some(self.clock + interval);
        }
        let marker = Arc::new(side.marker(slot.emitter.task, round, txid, low));
        for id in acks {
            let (spout, mut out) =
                spout_call(slot, &mut self.outbox, &mut self.ack_now, self.clock);
            spout.ack(id, &mut out)?;
        }
        if let Some(txid) = txid {
            let key = task_key(&slot.ctx.component, slot.ctx.task_index);
            let position = slot.component.position();
            cp.store.prepare(txid, &key, &[], position.as_ref())?;
            slot.component.position_saved(txid);
            let task = slot.emitter.task;
            let _ = cp.reports.send(Report::Prepared { txid, task });
        }
        let from = slot.emitter.task;
        for &to in slot.emitter.router.downstream() {
            self.outbox.marker(from, to, marker.clone());
        }
        self.settle(i)
    }

    /// Tree `root` of task `i` is over. Under checkpoints a completed tree's ack waits for
    /// the verdict (`None`: taken); a failed one is noted for the next marker, and its message
    /// id handed back to be failed as usual.
    pub(crate) fn tree_over(
        &mut self,
        i: usize,
        root: u64,
        completed: bool,
        id: Value,
    ) -> Option<Value> {
        let Some(side) = self.tasks[i].state.side.as_mut() else {
            return Some(id);
        };
        let seq = split_root(root).1;
        if completed {
            side.completed(seq, id);
            None
        } else {
            side.failed(seq);
            Some(id)
        }
    }

    /// Task `i` ends: its final marker (the next checkpoint, holding where it stopped).
    pub(crate) fn last_marker(&mut self, i: usize) -> anyhow::Result<()> {
        if self.tasks[i].state.side.is_some() {
            self.send_marker(i, true)?;
        }
        Ok(())
    }

    /// Task `i` ended: the coordinator counts it for later checkpoints.
    pub(crate) fn report_ended(&self, i: usize) {
        if let Some(side) = &self.tasks[i].state.side {
            tracing::debug!(
                "{}: at most {} ack(s) held at once",
                self.tasks[i].ctx.component,
                side.peak
            );
        }
        if let Some(cp) = &self.checkpoints {
            let task = self.tasks[i].emitter.task;
            let _ = cp.reports.send(Report::Finished { task });
        }
    }
}

impl BoltExecutor {
    /// On a resumed run: give each stateful task the state its last committed checkpoint saved.
    pub(crate) fn restore_states(&mut self) -> anyhow::Result<()> {
        let Some(cp) = self.checkpoints.as_ref().filter(|c| c.resuming) else {
            return Ok(());
        };
        for t in &mut self.tasks {
            let Some(side) = t.state.as_deref_mut().filter(|s| s.gate.is_some()) else {
                continue;
            };
            if cp.rollback {
                let finished = Value::str(FINISHED);
                side.flushed = cp.store.position(&side.key)?.as_ref() == Some(&finished);
            }
            let entries = cp.store.entries(&side.key)?;
            if let Some(state) = t.component.state() {
                state
                    .restore(entries)
                    .map_err(|e| e.context(format!("restoring {}", side.key)))?;
            }
        }
        Ok(())
    }

    /// The round inputs from `source` to task `i` now belong to, told to its component (a
    /// sink holding its output until a commit).
    pub(crate) fn input_round(&mut self, i: usize, source: u32) -> anyhow::Result<()> {
        let slot = &mut self.tasks[i];
        match slot.state.as_deref() {
            Some(side) => slot.component.input_round(side.rounds.tag(source)),
            None => Ok(()),
        }
    }

    /// Tuples for stateful task `i`: acked now, held in its gate, batched by the upstream
    /// task they came from. Hands them back for a task without a gate.
    pub(crate) fn hold(&mut self, i: usize, tuples: Vec<Tuple>) -> Option<Vec<Tuple>> {
        let slot = &mut self.tasks[i];
        let Some(side) = slot.state.as_deref_mut() else {
            return Some(tuples);
        };
        let Some(gate) = side.gate.as_mut() else {
            return Some(tuples);
        };
        let mut out = BoltOut {
            em: &mut slot.emitter,
            outbox: &mut self.outbox,
        };
        for t in &tuples {
            out.ack(t);
        }
        let first = tuples.first()?.source_task;
        if tuples.iter().all(|t| t.source_task == first) {
            gate.hold(side.rounds.tag(first), tuples);
            return None;
        }
        // A batch from an executor of several tasks: held per run of one source.
        let mut run: Vec<Tuple> = Vec::new();
        for t in tuples {
            if run.last().is_some_and(|l| l.source_task != t.source_task) {
                let source = run[0].source_task;
                gate.hold(side.rounds.tag(source), std::mem::take(&mut run));
            }
            run.push(t);
        }
        if let Some(source) = run.first().map(|t| t.source_task) {
            gate.hold(side.rounds.tag(source), run);
        }
        None
    }

    /// A marker from `from` for task `i`: the rounds it completes are applied and forwarded.
    pub(crate) fn on_marker(&mut self, i: usize, from: u32, marker: &Marker) -> anyhow::Result<()> {
        self.complete_rounds(i, |rounds| rounds.marker(from, marker))
    }

    /// Upstream task `from` of task `i` ended: the rounds that completes.
    pub(crate) fn on_ended(&mut self, i: usize, from: u32) -> anyhow::Result<()> {
        self.complete_rounds(i, |rounds| rounds.ended(from))
    }

    /// Complete the rounds that `news` says task `i` now has from every upstream task.
    fn complete_rounds(
        &mut self,
        i: usize,
        news: impl FnOnce(&mut Rounds) -> Vec<Marker>,
    ) -> anyhow::Result<()> {
        let Some(side) = self.tasks[i].state.as_deref_mut() else {
            return Ok(());
        };
        for m in news(&mut side.rounds) {
            self.complete_round(i, m)?;
        }
        Ok(())
    }

    /// Round `m` is complete for task `i`: apply what its verdicts allow, save at a
    /// checkpoint, and pass the round on.
    fn complete_round(&mut self, i: usize, m: Marker) -> anyhow::Result<()> {
        let gate = self.tasks[i].state.as_mut().and_then(|s| s.gate.as_mut());
        if let Some(gate) = gate {
            gate.learn(&m);
            self.apply_held(i, m.round)?;
            if let Some(txid) = m.txid {
                self.save(i, txid, None)?;
            }
        }
        if let Some(txid) = m.txid {
            self.tasks[i].component.checkpoint_marker(m.round, txid)?;
        }
        let slot = &self.tasks[i];
        let from = slot.emitter.task;
        let marker = Arc::new(m);
        for &to in slot.emitter.router.downstream() {
            self.outbox.marker(from, to, marker.clone());
        }
        Ok(())
    }

    /// Apply the held inputs of task `i` the verdicts allow, rounds up to `complete` done.
    pub(crate) fn apply_held(&mut self, i: usize, complete: u64) -> anyhow::Result<()> {
        let slot = &mut self.tasks[i];
        let Some(mut gate) = slot.state.as_mut().and_then(|s| s.gate.take()) else {
            return Ok(());
        };
        let mut out = BoltOut {
            em: &mut slot.emitter,
            outbox: &mut self.outbox,
        };
        let component = &mut slot.component;
        let mut applied = 0u64;
        let result = gate.release(complete, |batch| {
            for input in batch {
                match component.execute(input, &mut Unanchored(&mut out)) {
                    Ok(()) => {}
                    Err(e) if e.is::<FatalError>() => return Err(e),
                    Err(e) => out.report_error(&format!("{e:#}")),
                }
            }
            applied += batch.len() as u64;
            Ok(())
        });
        TaskStats::add(&slot.emitter.stats.executed, applied);
        if let Some(side) = slot.state.as_mut() {
            side.gate = Some(gate);
        }
        result
    }

    /// Save task `i`'s state under `txid` (with `position`) and tell the coordinator.
    fn save(&mut self, i: usize, txid: u64, position: Option<&Value>) -> anyhow::Result<()> {
        let (Some(cp), slot) = (&self.checkpoints, &mut self.tasks[i]) else {
            return Ok(());
        };
        let Some(side) = slot.state.as_deref_mut() else {
            return Ok(());
        };
        let mut changes = Vec::new();
        if let Some(state) = slot.component.state() {
            state
                .changes(!side.saved, &mut changes)
                .map_err(|e| e.context(format!("saving {}", side.key)))?;
        }
        side.saved = true;
        side.last_txid = Some(txid);
        cp.store.prepare(txid, &side.key, &changes, position)?;
        let task = slot.emitter.task;
        let _ = cp.reports.send(Report::Prepared { txid, task });
        Ok(())
    }

    /// Task `i` is about to finish: apply what its gate still holds (every tree is over by
    /// now).
    pub(crate) fn drain_gate(&mut self, i: usize) -> anyhow::Result<()> {
        self.apply_held(i, u64::MAX)?;
        let slot = &self.tasks[i];
        if let Some(gate) = slot.state.as_ref().and_then(|s| s.gate.as_ref()) {
            tracing::debug!(
                "{}: at most {} input(s) held at once, {} dropped",
                slot.ctx.component,
                gate.peak,
                gate.dropped
            );
            if gate.held() > 0 {
                tracing::warn!(
                    "{}: {} input(s) of trees never reported over were not applied",
                    slot.ctx.component,
                    gate.held()
                );
            }
        }
        Ok(())
    }

    /// Task `i` has run its finish step (a window bolt emitted its open windows there): save
    /// what that left as the checkpoint after its last one, so a run resumed from this state
    /// dir does not emit those windows again. It commits once every task saved it or ended.
    ///
    /// When nimbus coordinates, the state is saved as finished and the checkpoint's marker
    /// follows the output downstream: a sink that holds its output until a commit then knows
    /// that this output is part of that checkpoint, and a rollback to it does not emit the
    /// output again.
    pub(crate) fn save_final(&mut self, i: usize) -> anyhow::Result<()> {
        let (Some(cp), slot) = (&self.checkpoints, &self.tasks[i]) else {
            return Ok(());
        };
        let Some(side) = slot.state.as_ref().filter(|s| s.gate.is_some()) else {
            return Ok(());
        };
        if !cp.remote {
            return match side.last_txid {
                Some(txid) => self.save(i, txid + 1, None),
                None => Ok(()),
            };
        }
        let round = cp.next_checkpoint_round(side.rounds.last_marked());
        let Some(txid) = cp.txid_of(round) else {
            return Ok(());
        };
        self.save(i, txid, Some(&Value::str(FINISHED)))?;
        let slot = &self.tasks[i];
        let marker = Arc::new(Marker {
            round,
            txid: Some(txid),
            verdicts: Vec::new(),
        });
        for &to in slot.emitter.router.downstream() {
            self.outbox.marker(slot.emitter.task, to, marker.clone());
        }
        Ok(())
    }

    /// Task `i` ended.
    pub(crate) fn report_ended(&self, i: usize) {
        let slot = &self.tasks[i];
        let stateful = slot.state.as_ref().is_some_and(|s| s.gate.is_some());
        if let (Some(cp), true) = (&self.checkpoints, stateful) {
            let task = slot.emitter.task;
            let _ = cp.reports.send(Report::Finished { task });
        }
    }
}
