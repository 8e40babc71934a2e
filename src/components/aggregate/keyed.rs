//! The windows of an `aggregate` (or `top`): per pane, each key's partial aggregates in a map
//! that spills to disk past `topology.state.memory.limit` (see `state::spill`), like the groups
//! of an unwindowed one. A window closes as the merge of its panes: in memory while none of
//! them spilled, else read back in key order from every pane at once, one key at a time, so a
//! window of more keys than memory holds is emitted without holding them.

use super::ops::State;
use super::window::{KeyMap, Measure, Panes, WindowSpec};
use crate::state::spill::merge::{sorted, Merged};
use crate::state::spill::{Budget, SpillMap, SpillTo};
use crate::tuple::Values;

/// One pane's keys and their partial aggregates.
type Pane = SpillMap<Values, Vec<State>>;

/// Makes an empty pane map (its layout: how a group is written to disk).
pub(crate) type MakePane = Box<dyn Fn() -> Pane + Send>;

/// Makes a new pane's share of the memory bound.
type MakeBudget = Box<dyn Fn() -> Box<dyn Budget> + Send>;

/// Partial aggregates per pane, how far windows have been closed, and the bound panes share.
pub(crate) struct Windows {
    pub(crate) panes: Panes<Pane>,
    make: MakePane,
    /// The task's share of the memory bound, one for each new pane (`None`: unbounded).
    budget: Option<MakeBudget>,
    /// Where panes spill: one file per pane beside this path.
    spill: Option<SpillTo>,
    /// Stateful: the (pane, key) entries of panes retired since the last checkpoint (`None`:
    /// stateless).
    pub(crate) removed: Option<Vec<(i64, Values)>>,
}

/// A closed window's rows: in memory (in no order), or read back in key order.
pub(crate) enum Rows<'a> {
    Loose(Vec<(Values, Vec<State>)>),
    Ordered(Box<dyn Iterator<Item = anyhow::Result<(Values, Vec<State>)>> + 'a>),
}

impl Windows {
    pub(crate) fn new(spec: WindowSpec, make: MakePane) -> Windows {
        Windows {
            panes: Panes::new(spec),
            make,
            budget: None,
            spill: None,
            removed: None,
        }
    }

    /// Count keys against the budgets `budget` makes (one per pane), spilling beside `spill`
    /// past them.
    pub(crate) fn bound(&mut self, budget: MakeBudget, spill: Option<SpillTo>) {
        self.budget = Some(budget);
        self.spill = spill;
    }

    /// Keep the record of changes checkpoints take.
    pub(crate) fn track_changes(&mut self, on: bool) {
        self.removed = on.then(Vec::new);
    }

    /// Start keeping the record of changes, unless it is kept already.
    pub(crate) fn track_changes_if_untracked(&mut self) {
        if self.removed.is_none() {
            self.removed = Some(Vec::new());
        }
    }

    /// Drop every pane (state restored from a checkpoint comes next).
    pub(crate) fn reset(&mut self) {
        self.panes = Panes::new(self.panes.spec());
        if let Some(r) = self.removed.as_mut() {
            r.clear();
        }
    }

    /// Whether every window a tuple at `t` falls into has closed already.
    pub(crate) fn is_late(&self, t: i64) -> bool {
        self.panes.is_late(t)
    }

    pub(crate) fn measure(&self) -> Measure {
        self.panes.spec().measure
    }

    /// Apply `f` to the states of `key` in the pane of `t` (made with `fresh` the first time).
    /// Fails when a spilled pane cannot be read or written, or past the memory limit with
    /// nowhere to spill.
    pub(crate) fn update<R>(
        &mut self,
        t: i64,
        key: &Values,
        fresh: impl FnOnce() -> Vec<State>,
        f: impl FnOnce(&mut Vec<State>) -> R,
    ) -> anyhow::Result<R> {
        let start = self.panes.pane_start(t);
        self.pane_at(start)?
            .update(key.as_slice(), || key.clone(), fresh, f)
    }

    /// The pane starting at `start`, made (bound, and tracked when stateful) the first time.
    pub(crate) fn pane_at(&mut self, start: i64) -> anyhow::Result<&mut Pane> {
        let Windows {
            panes,
            make,
            budget,
            spill,
            removed,
        } = self;
        panes
            .pane_at_with(start, || {
                let mut pane = make();
                if let Some(b) = budget.as_ref() {
                    let to = spill
                        .clone()
                        .map(|s| s.with_suffix(&format!("pane{start}")));
                    pane.bound(b(), to);
                }
                pane.track_changes(removed.is_some());
                pane
            })
            .map_err(|e| anyhow::anyhow!(e))
    }

    /// Every window that holds data and ends at or before `watermark`, oldest first (all of
    /// them when `watermark` is `i64::MAX`: the end of input), handed to `emit` as its start,
    /// end and rows; then the panes no window needs any more are dropped.
    pub(crate) fn close(
        &mut self,
        watermark: i64,
        mut emit: impl FnMut(i64, i64, Rows<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let starts = self.panes.due(watermark);
        if starts.is_empty() {
            // A pane is done only once its last window closed, and that window holds it.
            return Ok(());
        }
        let size = self.panes.spec().size;
        for start in starts {
            emit(start, start + size, self.rows(start)?)?;
        }
        for (start, mut pane) in self.panes.retire() {
            if let Some(removed) = self.removed.as_mut() {
                pane.each(|k, _| removed.push((start, k.clone())))?;
            }
        }
        Ok(())
    }

    /// The rows of the window starting at `start`: merged in memory while none of its panes
    /// spilled, else merged in key order as every pane is read back.
    fn rows(&mut self, start: i64) -> anyhow::Result<Rows<'_>> {
        if !self.panes.window(start).any(Pane::spilled) {
            return Ok(Rows::Loose(self.merge_hot(start)));
        }
        let mut sources = Vec::new();
        for pane in self.panes.window_mut(start) {
            sources.push(sorted(pane)?);
        }
        // Each op's state of a later pane merged into the earlier one's.
        let merge = |into: &mut Vec<State>, states: Vec<State>| {
            into.iter_mut().zip(&states).for_each(|(a, b)| a.merge(b))
        };
        Ok(Rows::Ordered(Box::new(Merged::new(sources, merge))))
    }

    fn merge_hot(&self, start: i64) -> Vec<(Values, Vec<State>)> {
        let mut merged: KeyMap<Vec<State>> = KeyMap::default();
        for pane in self.panes.window(start) {
            for (key, states) in pane.hot() {
                match merged.get_mut(key) {
                    Some(into) => into.iter_mut().zip(states).for_each(|(a, b)| a.merge(b)),
                    None => {
                        merged.insert(key.clone(), states.clone());
                    }
                }
            }
        }
        merged.into_iter().collect()
    }
}

#[cfg(test)]
mod tests;
