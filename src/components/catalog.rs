//! Builds the component instance for a task from its validated description (each type's
//! descriptor builds it: see `builtin.rs`), and what tasks read of their inputs.

use super::{BoltInstance, Spout, TaskContext};
use crate::model::Component;
use std::path::Path;

/// A spout instance for one task, as its type builds it.
pub(crate) fn spout(
    c: &Component,
    task_index: u32,
    base_dir: &Path,
) -> anyhow::Result<Box<dyn Spout>> {
    c.ctype.spout(c, task_index, base_dir)
}

/// A bolt instance for one task, as its type builds it: plain, or taking part in checkpoints.
pub(crate) fn bolt(c: &Component, base_dir: &Path) -> anyhow::Result<BoltInstance> {
    match c.ctype.checkpointed_bolt(c, base_dir) {
        Some(participant) => participant.map(BoltInstance::Participant),
        None => c.ctype.bolt(c, base_dir).map(BoltInstance::Plain),
    }
}

/// Where each of `names` is among the fields of the first stream into the task's component;
/// an error names the component and the missing field.
pub(crate) fn input_positions<S: AsRef<str>>(
    ctx: &TaskContext,
    names: &[S],
) -> anyhow::Result<Vec<usize>> {
    let inputs = input_fields(ctx);
    names
        .iter()
        .map(|n| {
            let n = n.as_ref();
            inputs
                .iter()
                .position(|f| f == n)
                .ok_or_else(|| anyhow::anyhow!("{}: input has no field `{n}`", ctx.component))
        })
        .collect()
}

/// The id of the task's component's output stream `name`, when a stream from the component
/// reads it (`errors` of `parse`, `late` of a windowed `aggregate`): unwired, nothing is sent.
pub(crate) fn wired_stream(ctx: &TaskContext, name: &str) -> Option<crate::model::plan::StreamId> {
    ctx.topology
        .outputs_of(&ctx.component)
        .any(|s| s.stream == name)
        .then(|| ctx.plan.stream_id(name))
        .flatten()
}

/// The fields of the first stream into the task's component (what pass-through bolts emit and
/// what `args.field`-style arguments name).
pub(crate) fn input_fields(ctx: &TaskContext) -> Vec<String> {
    ctx.topology
        .inputs_of(&ctx.component)
        .find_map(|s| {
            ctx.topology
                .component(&s.from)
                .and_then(|c| c.output_fields(&s.stream))
                .map(|f| f.to_vec())
        })
        .unwrap_or_default()
}
