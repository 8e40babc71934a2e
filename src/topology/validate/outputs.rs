//! Output fields resolution (Storm's `declareOutputFields`): what each component emits on which
//! stream — what its type declares (`Builtin::output_fields`, `extra_streams`: for pass-through
//! bolts the fields of their input), then `fields:`/`streams:` as written.

use crate::model::{Component, Stream, DEFAULT_STREAM};
use crate::syntax::raw::RawComponent;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

type Outputs = BTreeMap<String, Vec<String>>;

fn outputs_of(c: &Component, rc: &RawComponent, input: Option<&[String]>) -> Option<Outputs> {
    let mut out = Outputs::new();
    match &rc.fields {
        Some(f) => {
            out.insert(
                DEFAULT_STREAM.into(),
                f.value.iter().map(|s| s.value.clone()).collect(),
            );
        }
        None => {
            if let Some(fields) = c.ctype.output_fields(c, input)? {
                out.insert(DEFAULT_STREAM.into(), fields);
            }
        }
    }
    out.extend(c.ctype.extra_streams(c, input));
    for (name, fields) in &rc.streams {
        out.insert(
            name.value.clone(),
            fields.iter().map(|s| s.value.clone()).collect(),
        );
    }
    Some(out)
}

/// Fill `Component::outputs` for every component; returns the ids whose outputs could not be
/// resolved (their input is missing or part of a cycle of pass-through bolts). Linear: a
/// component is retried only when the source of its first input gets resolved.
pub(crate) fn resolve(
    components: &mut [(Component, &RawComponent)],
    streams: &[Stream],
) -> HashSet<String> {
    let index: HashMap<&str, usize> = components
        .iter()
        .enumerate()
        .map(|(i, (c, _))| (c.id.as_str(), i))
        .collect();
    // The first input of each component: (source index, stream id).
    let mut first_input: Vec<Option<(usize, &str)>> = vec![None; components.len()];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); components.len()];
    for s in streams {
        if let (Some(&from), Some(&to)) = (index.get(s.from.as_str()), index.get(s.to.as_str())) {
            if first_input[to].is_none() {
                first_input[to] = Some((from, s.stream.as_str()));
                dependents[from].push(to);
            }
        }
    }
    drop(index);
    let mut resolved = vec![false; components.len()];
    let mut queue: VecDeque<usize> = (0..components.len()).collect();
    while let Some(i) = queue.pop_front() {
        if resolved[i] {
            continue;
        }
        let input: Option<Vec<String>> = first_input[i]
            .filter(|(from, _)| resolved[*from])
            .and_then(|(from, stream)| components[from].0.outputs.get(stream).cloned());
        let (c, rc) = &components[i];
        if let Some(out) = outputs_of(c, rc, input.as_deref()) {
            components[i].0.outputs = out;
            resolved[i] = true;
            queue.extend(dependents[i].iter().copied());
        }
    }
    components
        .iter()
        .zip(resolved)
        .filter(|(_, r)| !r)
        .map(|((c, _), _)| c.id.clone())
        .collect()
}
