//! The `redis` built-in: a stream spout or a lookup/write bolt (its place decides), each with
//! its own arguments, checked as the run builds it; `key`, `field` and `value` name input
//! fields (templates' `{field}`s too), checked against the input.

use crate::components::builtin::{self as b, arg, ArgShape as A, Written};
use crate::components::Spout;
use crate::model::{Component, ComponentKind};
use crate::syntax::diag::Span;
use crate::syntax::raw::RawComponent;
use std::path::Path;

/// What the bolt and the spout read besides the record arguments.
const OWN_ARGS: &[b::Arg] = &[
    arg("url", A::Text),
    arg("command", A::Text),
    arg("key", A::Text),
    arg("field", A::TextOrList),
    arg("value", A::TextOrList),
    arg("ttl", A::Duration),
    arg("as", A::TextOrList),
    arg("filter", A::Bool),
    arg("cache", A::Number),
    arg("stream", A::Text),
    arg("group", A::Text),
    arg("consumer", A::Text),
    arg("claim_after", A::Duration),
    arg("max_retries", A::Number),
];

/// The `redis` built-in.
pub(crate) struct RedisType;

impl b::Builtin for RedisType {
    fn name(&self) -> &'static str {
        "redis"
    }
    fn summary(&self) -> &'static str {
        "spout or bolt: reads a Redis `stream`, or looks up / writes keys (`command`)"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Both
    }
    fn args(&self) -> Vec<b::Arg> {
        let mut args = OWN_ARGS.to_vec();
        args.extend_from_slice(crate::components::parse::builtin::READS_FORMAT);
        args
    }
    fn named_input_fields(&self, rc: &RawComponent) -> Vec<(String, Span)> {
        let Some(args) = rc.args.as_ref() else {
            return Vec::new();
        };
        let serde_json::Value::Object(json) = args.value.to_json() else {
            return Vec::new();
        };
        super::named_fields(&json)
            .into_iter()
            .filter_map(|(a, f)| Some((f, args.value.get(a)?.span)))
            .collect()
    }
    fn keeps_state(&self) -> bool {
        true
    }
    fn writes(&self, kind: ComponentKind) -> bool {
        kind == ComponentKind::Bolt
    }
    fn output_fields(&self, c: &Component, input: Option<&[String]>) -> b::Fields {
        super::output_fields(c, input)
    }
    fn check(&self, w: &mut Written) {
        let Some(args) = w.rc.args.as_ref() else {
            let at = w.at_type();
            let what = "`command` and `key` (a bolt) or `stream` (a spout)";
            w.error(format!("`redis` needs arguments: {what}"), at);
            return;
        };
        let span = args.span;
        let json = w.args_json();
        for (arg, message) in super::check(&json, w.kind == ComponentKind::Spout) {
            let at = arg.and_then(|a| w.arg(&a)).map_or(span, |v| v.span);
            w.error(message, at);
        }
    }
    fn spout(&self, c: &Component, _task: u32, _base: &Path) -> anyhow::Result<Box<dyn Spout>> {
        super::spout(c)
    }
    fn checkpointed_bolt(
        &self,
        c: &Component,
        _base: &Path,
    ) -> Option<anyhow::Result<Box<dyn crate::components::CheckpointParticipant>>> {
        Some(super::bolt(c))
    }
}
