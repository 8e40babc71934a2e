//! Output fields resolution (Storm's `declareOutputFields`): what each component emits on which
//! stream — built-in defaults, `fields:`/`streams:` as written, and for pass-through bolts
//! (`filter`, `chaos`, `count` without `args.fields`) the fields of their input, changed by
//! `map`'s steps for a `map`.

use crate::topology::model::{Component, ComponentType, Stream, DEFAULT_STREAM};
use crate::topology::raw::RawComponent;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

type Outputs = BTreeMap<String, Vec<String>>;

fn strings(v: Option<&serde_json::Value>) -> Option<Vec<String>> {
    let list = v?.as_array()?;
    Some(
        list.iter()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect(),
    )
}

/// The fields a `parse` (or a spout with `format`) emits; none when its arguments are wrong
/// (reported where they are checked).
fn parsed_fields(c: &Component) -> Vec<String> {
    crate::components::parse::spec::Spec::from_args(&c.args)
        .map(|s| s.field_names())
        .unwrap_or_default()
}

/// The default stream's fields given the input's fields (`None`: needs the input first).
fn default_fields(c: &Component, input: Option<&[String]>) -> Option<Option<Vec<String>>> {
    use ComponentType::*;
    let one = |f: &str| Some(Some(vec![f.to_string()]));
    match c.ctype {
        File if crate::components::lines::source_fields::asked(&c.args).is_some() => {
            Some(crate::components::lines::source_fields::asked(&c.args))
        }
        Stdin | File if c.args.contains_key("format") => Some(Some(parsed_fields(c))),
        Stdin | File => one("line"),
        Split | TestWordSpout => one("word"),
        TestWordCounter => Some(Some(vec!["word".into(), "count".into()])),
        Generate => Some(Some(
            strings(c.args.get("fields")).unwrap_or_else(|| vec!["word".into()]),
        )),
        Stdout | Log | Discard => Some(None),
        Shell => Some(None),
        Kafka if c.is_spout() => Some(Some(
            crate::components::kafka::output_fields(&c.args).unwrap_or_default(),
        )),
        Kafka => Some(None),
        Redis => crate::components::redis::output_fields(c, input),
        Count => {
            let mut keys = match strings(c.args.get("fields")) {
                Some(k) => k,
                None => vec![input?.first()?.clone()],
            };
            keys.push("count".into());
            Some(Some(keys))
        }
        Filter | Chaos | Dedupe => Some(Some(input?.to_vec())),
        Join => Some(Some(
            crate::components::join::Spec::from_args(&c.args)
                .map(|s| s.output_fields())
                .unwrap_or_default(),
        )),
        Top => Some(Some(
            crate::components::aggregate::top_spec(&c.args)
                .map(|(s, _)| crate::components::aggregate::top_fields(&s))
                .unwrap_or_default(),
        )),
        Lookup => {
            let mut fields = input?.to_vec();
            fields.extend(strings(c.args.get("select")).unwrap_or_default());
            Some(Some(fields))
        }
        Parse => Some(Some(parsed_fields(c))),
        Aggregate => Some(Some(
            crate::components::aggregate::Spec::from_args(&c.args)
                .map(|s| s.output_fields())
                .unwrap_or_default(),
        )),
        Map => Some(Some(
            crate::components::map::Spec::from_args(&c.args).output_fields(input?),
        )),
    }
}

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
            if let Some(fields) = default_fields(c, input)? {
                out.insert(DEFAULT_STREAM.into(), fields);
            }
        }
    }
    let windowed = matches!(c.ctype, ComponentType::Aggregate | ComponentType::Top);
    if windowed && c.args.contains_key("window") {
        // Tuples later than their windows, as they came in.
        out.insert(
            crate::components::aggregate::LATE_STREAM.into(),
            input.map(<[String]>::to_vec).unwrap_or_default(),
        );
    }
    if c.ctype == ComponentType::Join && c.args.contains_key("window") {
        // Tuples later than their windows, each with the input it came from.
        let fields = crate::components::join::LATE_FIELDS;
        out.insert(
            crate::components::join::LATE_STREAM.into(),
            fields.iter().map(|f| f.to_string()).collect(),
        );
    }
    let parses = c.ctype == ComponentType::Parse
        || (matches!(c.ctype, ComponentType::Stdin | ComponentType::File)
            && c.args.contains_key("format"));
    if parses || (c.ctype == ComponentType::Kafka && c.is_spout()) {
        let errors = crate::components::parse::ERROR_FIELDS;
        out.insert(
            crate::components::parse::ERRORS_STREAM.into(),
            errors.iter().map(|f| f.to_string()).collect(),
        );
    }
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
pub fn resolve(
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
