//! The `aggregate` and `top` built-ins: their arguments, fields, types and checks.

use super::lag::lag_bound;
use super::ops::OpSpec;
use super::ranking::{TotalRanking, RANKING_ARG, TOTAL};
use super::{top_fields, top_spec, Aggregate, Spec, EMITS, LATE_STREAM};
use crate::components::builtin::{self as b, arg, ArgShape as A, Written};
use crate::components::CheckpointParticipant;
use crate::expr::Type;
use crate::model::Component;
use crate::syntax::raw::{RawComponent, RawValue, Span, Spanned};
use std::path::Path;

/// The `aggregate` built-in.
pub(crate) struct AggregateType;

/// The `top` built-in.
pub(crate) struct TopType;

impl b::Builtin for AggregateType {
    fn name(&self) -> &'static str {
        "aggregate"
    }
    fn summary(&self) -> &'static str {
        "bolt: count, sum, avg, min, max, distinct, percentile, top… per key of `by`"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        vec![
            arg("by", A::Fields),
            arg("ops", A::List),
            arg("emit", A::OneOf(EMITS)),
            arg("approx", A::Bool),
            arg("window", A::Map),
            arg("time", A::Text),
            arg("lag", A::Duration),
            arg("watermark", A::Duration),
            arg("idle", A::Duration),
        ]
    }
    fn default_grouping(&self) -> Option<b::DefaultGrouping> {
        Some(b::DefaultGrouping::FieldsOf("by"))
    }
    fn field_args(&self) -> &'static [&'static str] {
        &["by", "time"]
    }
    fn named_input_fields(&self, rc: &RawComponent) -> Vec<(String, Span)> {
        let arg = |key: &str| rc.args.as_ref().and_then(|a| a.value.get(key));
        let mut out: Vec<(String, Span)> = self
            .field_args()
            .iter()
            .filter_map(|k| arg(k))
            .flat_map(b::field_items)
            .collect();
        // An op's field, located at the op that names it.
        for (text, span) in arg("ops").map(b::field_items).unwrap_or_default() {
            if let Ok(op) = OpSpec::parse(&text) {
                out.extend(op.field.map(|f| (f, span)));
            }
        }
        out
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
    fn extra_streams(&self, c: &Component, input: Option<&[String]>) -> Vec<(String, Vec<String>)> {
        late_stream(c, input)
    }
    fn field_types(&self, cx: &b::TypeCx) -> Option<Vec<Type>> {
        Some(window_types(cx))
    }
    fn check(&self, w: &mut Written) {
        check_ops(w);
        lag_bound(w);
    }
    fn partial_ops(&self, c: &Component) -> Option<(Vec<String>, Vec<OpSpec>)> {
        super::partial::partial_ops(&c.args, false)
    }
    fn checkpointed_bolt(
        &self,
        c: &Component,
        _base: &Path,
    ) -> Option<anyhow::Result<Box<dyn CheckpointParticipant>>> {
        let built = Aggregate::new(&c.args).map(|a| a.with_state(c.stateful));
        Some(built.map(|a| Box::new(a) as Box<dyn CheckpointParticipant>))
    }
}

impl b::Builtin for TopType {
    fn name(&self) -> &'static str {
        "top"
    }
    fn summary(&self) -> &'static str {
        "bolt: the `n` keys of `by` with the highest `score`, per window or overall"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        vec![
            arg("n", A::Number),
            arg("by", A::Fields),
            arg("score", A::Text),
            arg("window", A::Map),
            arg("time", A::Text),
            arg("lag", A::Duration),
            arg("watermark", A::Duration),
            arg("idle", A::Duration),
        ]
    }
    fn default_grouping(&self) -> Option<b::DefaultGrouping> {
        Some(b::DefaultGrouping::Global)
    }
    fn ranks_in_parts(&self) -> bool {
        true
    }
    fn field_args(&self) -> &'static [&'static str] {
        &["by", "time", "score"]
    }
    fn keeps_state(&self) -> bool {
        true
    }
    fn emits_in_bursts(&self) -> bool {
        true
    }
    fn output_fields(&self, c: &Component, _input: Option<&[String]>) -> b::Fields {
        Some(Some(
            top_spec(&c.args)
                .map(|(s, _)| top_fields(&s))
                .unwrap_or_default(),
        ))
    }
    fn extra_streams(&self, c: &Component, input: Option<&[String]>) -> Vec<(String, Vec<String>)> {
        late_stream(c, input)
    }
    fn field_types(&self, cx: &b::TypeCx) -> Option<Vec<Type>> {
        Some(window_types(cx))
    }
    fn check(&self, w: &mut Written) {
        check_top(w);
        lag_bound(w);
    }
    fn check_placed(&self, w: &mut Written, c: &Component, taken: &dyn Fn(&str) -> bool) {
        check_split(w, c, taken)
    }
    fn partial_ops(&self, c: &Component) -> Option<(Vec<String>, Vec<OpSpec>)> {
        super::partial::partial_ops(&c.args, true)
    }
    fn checkpointed_bolt(
        &self,
        c: &Component,
        _base: &Path,
    ) -> Option<anyhow::Result<Box<dyn CheckpointParticipant>>> {
        Some(top_bolt(c))
    }
}

/// A `top`'s bolt: the total ranking of a `top` that runs as more than one task, or its
/// (partial) ranking.
fn top_bolt(c: &Component) -> anyhow::Result<Box<dyn CheckpointParticipant>> {
    if c.args.get(RANKING_ARG).and_then(|v| v.as_str()) == Some(TOTAL) {
        return Ok(Box::new(TotalRanking::new(&c.args)?.with_state(c.stateful)));
    }
    Ok(Box::new(Aggregate::top(&c.args)?.with_state(c.stateful)))
}

/// Tuples later than their windows, as they came in (when windowed).
fn late_stream(c: &Component, input: Option<&[String]>) -> Vec<(String, Vec<String>)> {
    match c.args.contains_key("window") {
        true => vec![(
            LATE_STREAM.into(),
            input.map(<[String]>::to_vec).unwrap_or_default(),
        )],
        false => Vec::new(),
    }
}

/// A window's bounds are RFC 3339 text (`parse_time` makes them numbers again).
fn window_types(cx: &b::TypeCx) -> Vec<Type> {
    cx.fields
        .iter()
        .map(|f| match f.as_str() {
            "window_start" | "window_end" => Type::Str,
            _ => Type::Any,
        })
        .collect()
}

/// An `aggregate`'s ops must read as ops, located at the op (or argument) at fault.
fn check_ops(w: &mut Written) {
    let Some(args) = w.rc.args.as_ref() else {
        return;
    };
    let serde_json::Value::Object(json) = args.value.to_json() else {
        return;
    };
    let Err((arg, message)) = Spec::from_args(&json) else {
        return;
    };
    let span = match (arg, args.value.get(arg)) {
        (
            "ops",
            Some(Spanned {
                value: RawValue::List(items),
                span,
            }),
        ) => items
            .iter()
            .find(|i| i.value.as_str().is_some_and(|t| OpSpec::parse(t).is_err()))
            .map_or(*span, |i| i.span),
        (_, Some(v)) => v.span,
        (_, None) => args.span,
    };
    w.error(message, span);
}

/// A `top`'s arguments, as the runtime reads them.
fn check_top(w: &mut Written) {
    if let Err((arg, message)) = top_spec(&w.args_json()) {
        let span = w.arg_span(arg);
        w.error(message, span);
    }
}

/// A `top` with more than one task runs as its partial rankings and their total: it needs
/// windows by time (a count of tuples is one task's count), and the id of its partial
/// rankings free.
fn check_split(w: &mut Written, c: &Component, taken: &dyn Fn(&str) -> bool) {
    if !crate::components::aggregate::expand::splits(c) {
        return;
    }
    let (rc, at) = (w.rc, w.at_type());
    let by_count = top_spec(&c.args).is_ok_and(|(s, _)| {
        s.window
            .is_some_and(|win| win.measure == super::window::Measure::Count)
    });
    if by_count {
        let span = rc.parallelism.as_ref().map_or(at, |p| p.span);
        w.error(
            "a `top` with windows of tuples runs as one task: each task would count its own tuples",
            span,
        )
        .help = Some("use a window by time (`{tumbling: 1m}`), or parallelism 1".into());
    }
    let partial = crate::components::aggregate::expand::partial_id(&c.id);
    if taken(&partial) {
        let span = rc.id.as_ref().map_or(at, |i| i.span);
        w.error(
            format!("`{}` runs as `{partial}` and `{}` with more than one task, and `{partial}` is taken", c.id, c.id),
            span,
        )
        .help = Some(format!("rename `{partial}`"));
    }
}
