//! The `join` built-in: its arguments, fields, the `late` stream and its checks, which need
//! every input's fields.

use super::{Join, Spec, INPUT_KEYS, LATE_FIELDS, LATE_STREAM};
use crate::components::aggregate::lag::lag_bound;
use crate::components::builtin::{self as b, arg, ArgShape as A, Written};
use crate::model::Component;
use crate::syntax::raw::{RawValue, Span, Spanned};
use std::path::Path;

/// The `join` built-in.
pub(crate) struct JoinType;

impl b::Builtin for JoinType {
    fn name(&self) -> &'static str {
        "join"
    }
    fn summary(&self) -> &'static str {
        "bolt: joins two or more inputs on a key (inner or left), whole or per window"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        vec![
            arg("inputs", A::List),
            arg("select", A::List),
            arg("window", A::Map),
            arg("time", A::Text),
            arg("lag", A::Duration),
            arg("idle", A::Duration),
        ]
    }
    fn keeps_state(&self) -> bool {
        true
    }
    fn emits_in_bursts(&self) -> bool {
        true
    }
    fn output_fields(&self, c: &Component, _input: Option<&[String]>) -> b::Fields {
        Some(Some(
            Spec::from_args(&c.args)
                .map(|s| s.output_fields())
                .unwrap_or_default(),
        ))
    }
    /// Tuples later than their windows, each with the input it came from.
    fn extra_streams(
        &self,
        c: &Component,
        _input: Option<&[String]>,
    ) -> Vec<(String, Vec<String>)> {
        match c.args.contains_key("window") {
            true => vec![(
                LATE_STREAM.into(),
                LATE_FIELDS.iter().map(|f| f.to_string()).collect(),
            )],
            false => Vec::new(),
        }
    }
    fn check(&self, w: &mut Written) {
        check_spec(w);
        lag_bound(w);
    }
    fn check_input(&self, w: &mut Written, c: &Component, input: &b::Input) {
        check_inputs(w, c, input)
    }
    fn checkpointed_bolt(
        &self,
        c: &Component,
        _base: &Path,
    ) -> Option<anyhow::Result<Box<dyn crate::components::CheckpointParticipant>>> {
        let built = Join::new(&c.args).map(|j| j.with_state(c.stateful));
        Some(built.map(|j| Box::new(j) as Box<dyn crate::components::CheckpointParticipant>))
    }
}

/// A `join`'s arguments, as the runtime reads them, located at the argument (or the key of an
/// input) at fault.
fn check_spec(w: &mut Written) {
    let Some(args) = w.rc.args.as_ref() else {
        let at = w.rc.span;
        w.error("`join` needs `inputs` and `select`", at);
        return;
    };
    let Some(json) = args.value.to_json().as_object().cloned() else {
        return;
    };
    if let Err((arg, message)) = Spec::from_args(&json) {
        let value = args.value.get(arg);
        let at = value
            .and_then(unknown_input_key)
            .or(value.map(|v| v.span))
            .unwrap_or(w.rc.span);
        w.error(message, at);
    }
}

/// Where a join's `inputs` has a key an input does not take (its name), if it has one.
fn unknown_input_key(inputs: &Spanned<RawValue>) -> Option<Span> {
    let RawValue::List(entries) = &inputs.value else {
        return None;
    };
    entries.iter().find_map(|e| match &e.value {
        RawValue::Map(pairs) => pairs
            .iter()
            .find(|(k, _)| !INPUT_KEYS.contains(&k.value.as_str()))
            .map(|(k, _)| k.span),
        _ => None,
    })
}

/// A `join`'s inputs must stream into it, and its keys and selected fields must be fields
/// those inputs declare.
fn check_inputs(w: &mut Written, c: &Component, input: &b::Input) {
    let at = w.rc.args.as_ref().map_or(w.rc.span, |a| a.span);
    let Ok(spec) = Spec::from_args(&c.args) else {
        return; // reported where the arguments are checked
    };
    let fields_of = |from: &str| -> Option<Vec<String>> {
        let s = input
            .streams
            .iter()
            .find(|s| s.from == from && s.to == c.id)?;
        Some(input.by_id.get(from)?.outputs.get(&s.stream)?.clone())
    };
    let mut wanted: Vec<(&str, &str)> = spec
        .inputs
        .iter()
        .map(|i| (i.from.as_str(), i.key.as_str()))
        .collect();
    wanted.extend(spec.select.iter().map(|(c, f)| (c.as_str(), f.as_str())));
    if let Some(time) = &spec.time {
        wanted.extend(spec.inputs.iter().map(|i| (i.from.as_str(), time.as_str())));
    }
    for (from, field) in wanted {
        let Some(fields) = fields_of(from) else {
            w.error(format!("`{from}` sends no stream to `{}`", c.id), at)
                .help = Some(format!("add a stream from `{from}` to `{}`", c.id));
            continue;
        };
        if !fields.iter().any(|f| f == field) {
            w.error(format!("`{from}` does not declare field `{field}`"), at)
                .help = Some(format!("its fields: {}", fields.join(", ")));
        }
    }
}
