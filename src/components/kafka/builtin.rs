//! The `kafka` built-in: a spout or a sink (its place decides), each with its own arguments,
//! checked as the run builds it.

use super::consumer::FirstPoll;
use super::sink::KafkaSink;
use super::spout::KafkaSpout;
use crate::components::builtin::{self as b, arg, ArgShape as A, Written};
use crate::components::Spout;
use crate::model::{Component, ComponentKind};
use crate::syntax::raw::RawValue;
use std::path::Path;

/// What only a `kafka` spout reads (besides `brokers` and `options`, which both read).
const SPOUT_ARGS: &[&str] = &[
    "brokers",
    "options",
    "topics",
    "topic_pattern",
    "group",
    "first_poll_offset",
    "max_retries",
    "lag_interval",
    "fields",
    "columns",
    "pattern",
    "types",
    "separator",
    "pair_separator",
];

/// What only a `kafka` sink reads (`format` is both's, with other values).
const SINK_ARGS: &[&str] = &[
    "format",
    "topic",
    "topic_field",
    "key",
    "field",
    "headers_field",
    "commits_topic",
];

fn shape(name: &str) -> A {
    match name {
        "brokers" | "topics" => A::TextOrList,
        "options" | "types" => A::Map,
        "first_poll_offset" => A::OneOf(FirstPoll::NAMES),
        "max_retries" => A::Number,
        "lag_interval" => A::Duration,
        "fields" | "columns" => A::Fields,
        _ => A::Text,
    }
}

/// The `kafka` built-in.
pub(crate) struct KafkaType;

impl b::Builtin for KafkaType {
    fn name(&self) -> &'static str {
        "kafka"
    }
    fn summary(&self) -> &'static str {
        "spout or bolt: reads `topics` of Kafka `brokers`, or writes records to a `topic`"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Both
    }
    fn args(&self) -> Vec<b::Arg> {
        SPOUT_ARGS
            .iter()
            .chain(SINK_ARGS)
            .map(|name| arg(name, shape(name)))
            .collect()
    }
    fn field_args(&self) -> &'static [&'static str] {
        &["topic_field", "key", "field", "headers_field"]
    }
    fn keeps_state(&self) -> bool {
        true
    }
    fn rewinds(&self) -> bool {
        true
    }
    fn writes(&self, kind: ComponentKind) -> bool {
        kind == ComponentKind::Bolt
    }
    fn output_fields(&self, c: &Component, _input: Option<&[String]>) -> b::Fields {
        match c.is_spout() {
            true => Some(Some(super::output_fields(&c.args).unwrap_or_default())),
            false => Some(None),
        }
    }
    fn extra_streams(
        &self,
        c: &Component,
        _input: Option<&[String]>,
    ) -> Vec<(String, Vec<String>)> {
        match c.is_spout() {
            true => vec![crate::components::parse::builtin::errors_stream()],
            false => Vec::new(),
        }
    }
    fn check(&self, w: &mut Written) {
        check_args(w)
    }
    fn spout(&self, c: &Component, _task: u32, _base: &Path) -> anyhow::Result<Box<dyn Spout>> {
        let spout = KafkaSpout::new(&c.args).map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?;
        Ok(Box::new(spout))
    }
    fn checkpointed_bolt(
        &self,
        c: &Component,
        _base: &Path,
    ) -> Option<anyhow::Result<Box<dyn crate::components::CheckpointParticipant>>> {
        let sink =
            KafkaSink::new(&c.args, c.stateful).map_err(|e| anyhow::anyhow!("{}: {e}", c.id));
        Some(sink.map(|s| Box::new(s) as Box<dyn crate::components::CheckpointParticipant>))
    }
}

/// A `kafka` component's arguments for its role (spout or sink), checked as the run builds
/// it, each problem located at the argument of the other role, or at the type.
fn check_args(w: &mut Written) {
    let Some(args) = w.rc.args.as_ref() else {
        let at = w.at_type();
        w.error("`kafka` needs `brokers`", at);
        return;
    };
    let (others, role, other_role) = match w.kind {
        ComponentKind::Spout => (&SINK_ARGS[1..], "spout", "sink"),
        ComponentKind::Bolt => (&SPOUT_ARGS[2..], "sink", "spout"),
    };
    if let RawValue::Map(entries) = &args.value {
        for (k, _) in entries {
            if others.contains(&k.value.as_str()) {
                w.error(
                    format!(
                        "`{}` is an argument of a kafka {other_role}; this one is a {role}",
                        k.value
                    ),
                    k.span,
                );
            }
        }
    }
    let serde_json::Value::Object(json) = args.value.to_json() else {
        return;
    };
    let built = match w.kind {
        ComponentKind::Spout => KafkaSpout::new(&json).err(),
        ComponentKind::Bolt => KafkaSink::new(&json, false).err(),
    };
    if let Some(why) = built {
        w.error(format!("kafka {role}: {why}"), args.span);
    }
}
