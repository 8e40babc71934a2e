//! Operator chaining: which components run fused into the executor thread of the component
//! before them. A bolt is chained onto its upstream when the edge between them is a
//! `shuffle`, `local_or_shuffle` or `none` edge between equal numbers of executors and tasks
//! (then paired task by task, as a forward edge), it has no other input, and neither side is
//! a child process or says `chain: false`, and the upstream is not a bolt that emits in
//! bursts (`count`, `aggregate`, `top`, `join`: every key at the end, a window's rows as it
//! closes): a fused step runs only after its upstream's call returns, so its queue cannot push
//! back and would hold the whole burst (20 M keys' totals took a gigabyte). A keyed edge (`fields`, `partial_key`, `global`,
//! `all`) ends a chain, as a key-by does: the steps on either side keep a thread each, so a
//! pipeline still spreads over the cores. Except right after a spout whose lines are read into
//! fields on reader threads of its own (`stdin`/`file` with `format: json|csv|tsv`), one task
//! on each side: there the readers already keep a core busy, and the one task takes every
//! tuple anyway. In a topology that keeps state a spout keeps a
//! thread of its own: its loop paces the checkpoint rounds (a marker per pass), and a slow
//! bolt on its thread would stretch them; the `filter` or folding `aggregate` after it may
//! still be done where it reads (see [`may_work_ahead`]). `topology.chaining: false` turns
//! chaining off, and that work ahead with it.

use super::{Component, Grouping, Topology};
use std::collections::BTreeMap;

/// The config key that turns chaining off for a whole topology.
const CHAINING_KEY: &str = "topology.chaining";

/// Chained edges of a topology: each chained bolt with the component it is fused onto.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Chains {
    /// Chained bolt → its upstream component.
    onto: BTreeMap<String, String>,
}

impl Chains {
    /// The chained edges of `topology` (none when `topology.chaining` is false).
    pub(crate) fn of(topology: &Topology) -> Chains {
        let mut onto = BTreeMap::new();
        if topology.config.get_bool(CHAINING_KEY) == Some(false) {
            return Chains { onto };
        }
        for to in topology.bolts() {
            let mut inputs = topology.inputs_of(&to.id);
            let (Some(edge), None) = (inputs.next(), inputs.next()) else {
                continue;
            };
            let Some(from) = topology.component(&edge.from) else {
                continue;
            };
            let paces_checkpoints = from.is_spout() && topology.is_stateful();
            if from.id != to.id && !paces_checkpoints && fusable(from, to, &edge.grouping) {
                onto.insert(to.id.clone(), from.id.clone());
            }
        }
        Chains { onto }
    }

    /// The component `bolt` is fused onto, if it is chained.
    pub(crate) fn upstream_of(&self, bolt: &str) -> Option<&str> {
        self.onto.get(bolt).map(String::as_str)
    }

    /// Whether the edge `from` → `to` is chained.
    pub(crate) fn is_chained(&self, from: &str, to: &str) -> bool {
        self.upstream_of(to) == Some(from)
    }

    /// The components upstream of `component` along its chain, nearest first (a chain is
    /// acyclic, each link having one input; the bound keeps a bad map finite anyway).
    fn upstreams<'a>(&'a self, component: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        std::iter::successors(self.upstream_of(component), |up| self.upstream_of(up))
            .take(self.onto.len())
    }

    /// How far down its chain `component` is (0: a head or an unchained component).
    pub(crate) fn depth_of(&self, component: &str) -> usize {
        self.upstreams(component).count()
    }

    /// The first component of the chain `component` is in (itself when it is not chained).
    #[cfg(test)]
    fn head_of<'a>(&'a self, component: &'a str) -> &'a str {
        self.upstreams(component).last().unwrap_or(component)
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.onto.is_empty()
    }
}

/// Whether work of bolt `to` may be done on the threads of spout `from` before it: chaining
/// is not turned off, for the topology or either of them. In a topology that keeps state,
/// where nothing is chained onto a spout, a spout may still evaluate the `filter` after it,
/// or fold for the `aggregate` after it, where it reads its lines (see `builder.rs`).
pub(crate) fn may_work_ahead(topology: &Topology, from: &Component, to: &Component) -> bool {
    topology.config.get_bool(CHAINING_KEY) != Some(false)
        && chain_allowed(from)
        && chain_allowed(to)
}

/// Whether `to` may run fused onto `from` over an edge grouped by `grouping`.
fn fusable(from: &Component, to: &Component, grouping: &Grouping) -> bool {
    chain_allowed(from)
        && !from.ctype.emits_in_bursts()
        && chain_allowed(to)
        && (from.parallelism, from.tasks) == (to.parallelism, to.tasks)
        && (forward(grouping) || keyed_onto_a_reader(from, to, grouping))
}

/// Each task sends to the task at its own index, or to any: nothing to keep apart.
fn forward(grouping: &Grouping) -> bool {
    matches!(
        grouping,
        Grouping::Shuffle | Grouping::LocalOrShuffle | Grouping::None
    )
}

/// A keyed edge from a spout whose lines are read into fields on reader threads of its own
/// (`stdin` or `file` with `format: json|csv|tsv`) to a bolt, with one task on each side: the
/// one task takes every tuple, as over a forward edge, and the reader threads already keep a
/// core busy, so the bolt's own thread would only add a queue hop and a tree per tuple (a
/// per-minute window over 10 M JSON lines went from 4.6 s to 3.6 s).
fn keyed_onto_a_reader(from: &Component, to: &Component, grouping: &Grouping) -> bool {
    let keyed = matches!(
        grouping,
        Grouping::Fields(_) | Grouping::PartialKey(_) | Grouping::Global
    );
    keyed && (from.tasks, to.tasks) == (1, 1) && from.ctype.reads_fields_apart(from)
}

/// A component may take part in a chain: it says nothing against it and is not a child
/// process (a shell component's thread mostly waits on its child, which runs apart anyway).
fn chain_allowed(c: &Component) -> bool {
    c.chain && c.command.is_none()
}

#[cfg(test)]
mod tests;
