//! Partial aggregation (local-global): which bolts take partial counts, and by which key
//! fields. A bolt takes them when its type says it can (`Builtin::partial_count_keys`: a
//! `count` that emits its totals at the end), it has one input, every key field is a field
//! of that input, and nothing in the topology keeps checkpointed state (a sum held on the
//! sending side would straddle a checkpoint). The components feeding it then sum tuples per
//! key and target task and send the sums (`runtime::partials`). Every grouping keeps its
//! meaning: the sums are made after the grouping chose each tuple's task.
//! `topology.partial.aggregation: false` turns it off.

use super::Topology;
use std::collections::BTreeMap;

/// The config key that turns partial aggregation off for a whole topology.
pub const PARTIAL_KEY: &str = "topology.partial.aggregation";

/// The bolts that take partial counts, each with its key fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Partials {
    keys: BTreeMap<String, Vec<String>>,
}

impl Partials {
    /// The bolts of `topology` that take partial counts (none when turned off).
    pub fn of(topology: &Topology) -> Partials {
        let mut keys = BTreeMap::new();
        if topology.config.get_bool(PARTIAL_KEY) == Some(false) || topology.is_stateful() {
            return Partials { keys };
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
            let Some(k) = to.ctype.partial_count_keys(to, fields) else {
                continue;
            };
            if k.iter().all(|f| fields.contains(f)) {
                keys.insert(to.id.clone(), k);
            }
        }
        Partials { keys }
    }

    /// The key fields of `bolt`, if it takes partial counts.
    pub fn keys_of(&self, bolt: &str) -> Option<&[String]> {
        self.keys.get(bolt).map(Vec::as_slice)
    }
}
