//! Written components that run as more than one: a `top` with more than one task becomes two
//! components, as storm-starter's RollingTopWords wires IntermediateRankingsBolt into
//! TotalRankingsBolt. `NAME.partial` has the tasks written, reads what `NAME` was fed, grouped
//! by the ranked key fields so every key is scored whole by one task, and sends each window's
//! best `n` of its share; `NAME` is then one task that merges those into the final ranking, so
//! what reads from `NAME` is unchanged. The summary and `storm graph` show both.

use crate::model::{Component, Grouping, Stream, Topology, DEFAULT_STREAM};

use crate::components::aggregate::ranking::{PARTIAL, RANKING_ARG, TOTAL};

/// The id of the partial rankings of a split `top`.
pub(crate) fn partial_id(top: &str) -> String {
    format!("{top}.partial")
}

/// Whether this component is a `top` that runs split (more than one task).
pub(crate) fn splits(c: &Component) -> bool {
    c.ctype.ranks_in_parts() && c.tasks > 1 && !c.args.contains_key(RANKING_ARG)
}

/// Split every `top` with more than one task into its partial and total rankings.
pub(crate) fn split_rankings(t: &mut Topology) {
    let mut i = 0;
    while i < t.components.len() {
        if splits(&t.components[i]) {
            let partial = split_one(t, i);
            t.components.insert(i, partial);
            i += 1;
        }
        i += 1;
    }
}

/// Turn component `i` into the total ranking; return the partial rankings, and rewire streams.
fn split_one(t: &mut Topology, i: usize) -> Component {
    let total = &mut t.components[i];
    let by = crate::components::aggregate::top_spec(&total.args)
        .map(|(s, _)| s.by)
        .unwrap_or_default();
    let mut partial = total.clone();
    partial.id = partial_id(&total.id);
    partial.args.insert(RANKING_ARG.into(), PARTIAL.into());
    partial.outputs.insert(
        DEFAULT_STREAM.into(),
        crate::components::aggregate::ranking::partial_fields(&by),
    );
    total.args.insert(RANKING_ARG.into(), TOTAL.into());
    total.parallelism = 1;
    total.tasks = 1;
    // Late tuples leave the tasks that window the input.
    let late = crate::components::aggregate::LATE_STREAM;
    total.outputs.remove(late);
    partial
        .outputs
        .retain(|s, _| s == DEFAULT_STREAM || s == late);
    let id = total.id.clone();
    for s in &mut t.streams {
        if s.to == id {
            s.to = partial.id.clone();
            s.grouping = Grouping::Fields(by.clone());
        } else if s.from == id && s.stream == late {
            s.from = partial.id.clone();
        }
    }
    t.streams.push(Stream {
        from: partial.id.clone(),
        to: id,
        stream: DEFAULT_STREAM.into(),
        grouping: Grouping::Global,
        name: None,
    });
    partial
}
