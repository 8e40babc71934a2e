//! Partial aggregation (local-global): which bolts take partial counts or partial op states,
//! and by which key fields. A bolt takes them when its type says it can
//! (`Builtin::partial_count_keys`: a `count` that emits its totals at the end;
//! `Builtin::partial_ops`: an `aggregate` or `top` without a window or event time, emitting
//! at the end, every op of which merges exactly), it has one input, every key and op field is
//! a field of that input, and nothing in the topology keeps checkpointed state (a sum held on
//! the sending side would straddle a checkpoint). The components feeding it then sum tuples
//! per key and target task and send the sums (`runtime::partials`). Every grouping keeps its
//! meaning: the sums are made after the grouping chose each tuple's task.
//! `topology.partial.aggregation: false` turns it off.
//!
//! In a stateful topology a `count` that would take partial counts still takes the counts of a
//! chunk of lines folded where they were read (`Partials::folded_counts_of`): that chunk is
//! sent at once, tagged with the checkpoint round it belongs to, never held across a marker.

use super::Topology;
use std::collections::BTreeMap;

/// The config key that turns partial aggregation off for a whole topology.
pub(crate) const PARTIAL_KEY: &str = "topology.partial.aggregation";

/// What one bolt takes: sums by `keys`, of its ops' states (an `aggregate` or `top`) or counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Partial {
    pub(crate) keys: Vec<String>,
    /// Op states (`[key…, state…, unusable]`, the ops as `Builtin::partial_ops` gives them);
    /// `false`: counts (`[key…, n]`).
    pub(crate) states: bool,
}

/// The bolts that take partial counts or states, each with its key fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Partials {
    keys: BTreeMap<String, Partial>,
    /// In a stateful topology (where `keys` is empty): the counts that would take partial
    /// counts, which take folded chunks alone.
    folded_only: BTreeMap<String, Partial>,
}

impl Partials {
    /// The bolts of `topology` that take partial counts (none when turned off).
    pub(crate) fn of(topology: &Topology) -> Partials {
        let mut keys = BTreeMap::new();
        if topology.config.get_bool(PARTIAL_KEY) == Some(false) {
            return Partials::default();
        }
        for to in topology.bolts() {
            let mut inputs = topology.inputs_of(&to.id);
            let (Some(edge), None) = (inputs.next(), inputs.next()) else {
                continue;
            };
            let Some(fields) = topology
                .component(&edge.from)
                .and_then(|c| c.output_fields(&edge.stream))
            else {
                continue;
            };
            let (partial, op_fields) = match to.ctype.partial_ops(to) {
                Some((keys, ops)) => {
                    let read = ops.into_iter().filter_map(|o| o.field).collect();
                    (Partial { keys, states: true }, read)
                }
                None => match to.ctype.partial_count_keys(to, fields) {
                    Some(keys) => (
                        Partial {
                            keys,
                            states: false,
                        },
                        Vec::new(),
                    ),
                    None => continue,
                },
            };
            if partial
                .keys
                .iter()
                .chain(&op_fields)
                .all(|f| fields.contains(f))
            {
                keys.insert(to.id.clone(), partial);
            }
        }
        if !topology.is_stateful() {
            return Partials {
                keys,
                folded_only: BTreeMap::new(),
            };
        }
        // A sum held on the sending side would straddle a checkpoint: nothing is summed ahead.
        keys.retain(|_, p| !p.states);
        Partials {
            keys: BTreeMap::new(),
            folded_only: keys,
        }
    }

    /// The key fields of `bolt`, if it takes partial counts or states.
    #[cfg(test)]
    pub(crate) fn keys_of(&self, bolt: &str) -> Option<&[String]> {
        self.keys.get(bolt).map(|p| p.keys.as_slice())
    }

    /// What `bolt` takes, if it takes partials.
    pub(crate) fn of_bolt(&self, bolt: &str) -> Option<&Partial> {
        self.keys.get(bolt)
    }

    /// The key fields of `bolt`, if it is a `count` that takes the counts of chunks folded
    /// where they are read (every count that takes partial counts, stateful topologies too).
    pub(crate) fn folded_counts_of(&self, bolt: &str) -> Option<&[String]> {
        let partial = self.keys.get(bolt).or_else(|| self.folded_only.get(bolt))?;
        (!partial.states).then_some(partial.keys.as_slice())
    }
}
