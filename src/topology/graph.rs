//! The topology as a graph (`storm graph`): Graphviz dot or Mermaid. Components show their
//! type and parallelism (spouts as rounded nodes, as Storm UI's visualization does); edges
//! show the grouping, its fields, and the stream when it is not `default`; a chained edge (its
//! two ends run fused on one thread) is drawn bold and says `chained`.

use crate::model::chains::Chains;
use crate::model::{Component, Stream, Topology, DEFAULT_STREAM};

fn node_label(c: &Component) -> String {
    let mut label = format!("{} ({}) ×{}", c.id, c.ctype.name(), c.parallelism);
    if c.tasks != c.parallelism {
        label.push_str(&format!(", {} tasks", c.tasks));
    }
    label
}

fn edge_label(s: &Stream, chains: &Chains) -> String {
    let mut label = s.grouping.name().to_string();
    if let Some(fields) = s.grouping.key_fields() {
        label.push_str(&format!("({})", fields.join(", ")));
    }
    if s.stream != DEFAULT_STREAM {
        label.push_str(&format!(" on {}", s.stream));
    }
    if chains.is_chained(&s.from, &s.to) {
        label.push_str(", chained");
    }
    label
}

/// Graphviz dot: `storm graph FILE | dot -Tsvg > topology.svg`.
pub(crate) fn to_dot(t: &Topology) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let mut out = format!(
        "digraph {} {{\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n",
        q(&t.name)
    );
    for c in &t.components {
        let shape = if c.is_spout() { "ellipse" } else { "box" };
        out.push_str(&format!(
            "  {} [label={}, shape={shape}];\n",
            q(&c.id),
            q(&node_label(c))
        ));
    }
    let chains = Chains::of(t);
    for s in &t.streams {
        let style = match chains.is_chained(&s.from, &s.to) {
            true => ", style=bold",
            false => "",
        };
        out.push_str(&format!(
            "  {} -> {} [label={}{style}];\n",
            q(&s.from),
            q(&s.to),
            q(&edge_label(s, &chains))
        ));
    }
    out.push_str("}\n");
    out
}

/// Mermaid flowchart (renders in GitHub markdown).
pub(crate) fn to_mermaid(t: &Topology) -> String {
    let esc = |s: &str| s.replace('"', "#quot;");
    let node = |id: &str| {
        t.components
            .iter()
            .position(|c| c.id == id)
            .map_or_else(|| "missing".to_string(), |i| format!("c{i}"))
    };
    let mut out = format!("---\ntitle: {}\n---\nflowchart LR\n", esc(&t.name));
    for (i, c) in t.components.iter().enumerate() {
        let label = esc(&node_label(c));
        if c.is_spout() {
            out.push_str(&format!("  c{i}([\"{label}\"])\n"));
        } else {
            out.push_str(&format!("  c{i}[\"{label}\"]\n"));
        }
    }
    let chains = Chains::of(t);
    for s in &t.streams {
        let arrow = match chains.is_chained(&s.from, &s.to) {
            true => "==>",
            false => "-->",
        };
        out.push_str(&format!(
            "  {} {arrow}|\"{}\"| {}\n",
            node(&s.from),
            esc(&edge_label(s, &chains)),
            node(&s.to)
        ));
    }
    out
}
