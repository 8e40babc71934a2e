//! The spout executor's part in checkpoints (see `checkpoint`): spouts send each round's marker
//! and save their position at a checkpoint, give their component the acks the verdicts allow,
//! and get their position back at the start of a resumed run. (Bolts take part through the
//! wrapper around them, `checkpoint/wrapper.rs`.)

use super::checkpoint::{split_root, task_key, Report, ROUND};
use super::spout_executor::{spout_call, SpoutExecutor};
use crate::tuple::Value;
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
                    "checkpoint {} in {} holds no position for {key}: the state is damaged \
                     (`storm run --fresh` or `storm state clear` start over)",
                    cp.base,
                    cp.store.name()
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
                .is_some_and(|s| self.round_start >= s.next_at);
            if due && !self.tasks[i].finished {
                self.send_marker(i, false)?;
            }
        }
        Ok(())
    }

    /// Send task `i`'s next marker (with `last`, its final one: the next checkpoint round),
    /// after giving the spout the acks the verdict allows; at a checkpoint, save its position.
    fn send_marker(&mut self, i: usize, last: bool) -> anyhow::Result<()> {
        let (Some(cp), slot) = (&self.checkpoints, &mut self.tasks[i]) else {
            return Ok(());
        };
        let Some(side) = slot.state.side.as_mut() else {
            return Ok(());
        };
        let low = slot.state.trees.low().unwrap_or(0);
        let round = if last {
            cp.next_checkpoint_round(side.round)
        } else {
            side.round + 1
        };
        side.next_at = self.round_start + ROUND;
        let acks = side.release(low);
        let txid = cp.txid_of(round);
        let marker = Arc::new(side.marker(slot.emitter.task, round, txid, low));
        for id in acks {
            let (spout, mut out) =
                spout_call(slot, &mut self.outbox, &mut self.ack_now, self.round_start);
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

    /// Tree `root` of task `i` is over; whether its message id `id` was taken. Under
    /// checkpoints a completed tree's ack waits for the verdict (taken); a failed one is noted
    /// for the next marker, and its id left to be failed as usual. The id is only borrowed
    /// otherwise: moved through here and back, its copies stalled on the byte stores of its
    /// tag (a third of `on_outcome`'s time).
    pub(crate) fn tree_over(
        &mut self,
        i: usize,
        root: u64,
        completed: bool,
        id: &mut Value,
    ) -> bool {
        let Some(side) = self.tasks[i].state.side.as_mut() else {
            return false;
        };
        let seq = split_root(root).1;
        if completed {
            side.completed(seq, std::mem::replace(id, Value::Null));
            true
        } else {
            side.failed(seq);
            false
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
