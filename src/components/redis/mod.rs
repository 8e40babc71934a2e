//! The `redis` connector (Storm's storm-redis): as a bolt, lookups (`get`, `hget`, `hmget`,
//! `sismember`, with a bounded cache; `filter` keeps only hits) and writes (`set` … `publish`,
//! pipelined; exactly once with `stateful: true` through `MULTI`/`EXEC` and a checkpoint
//! marker key); as a spout, a Redis stream read through a consumer group. Everything the
//! rest of the program asks of it goes through the functions below.

mod bolt;
pub(crate) mod builtin;
mod cache;
mod command;
pub(crate) mod conn;
mod record;
mod reply;
mod spec;
mod spout;
mod template;
mod txn;

use crate::components::Spout;
use crate::model::Component;

type Args = serde_json::Map<String, serde_json::Value>;

/// What only the bolt reads (`url` and `field` are both's).
const BOLT_ARGS: &[&str] = &["command", "key", "value", "ttl", "as", "filter", "cache"];
/// What only the spout reads (with the record arguments of `stdin` and `max_retries`).
const SPOUT_ARGS: &[&str] = &["stream", "group", "consumer", "claim_after"];
/// The record arguments (the spout's).
const RECORD_ARGS: &[&str] = &[
    "format",
    "fields",
    "header",
    "columns",
    "pattern",
    "types",
    "separator",
    "pair_separator",
    "max_retries",
];

/// The spout for a component.
fn spout(c: &Component) -> anyhow::Result<Box<dyn Spout>> {
    let s = spout::RedisSpout::new(&c.args).map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?;
    Ok(Box::new(s))
}

/// The bolt for a component.
fn bolt(c: &Component) -> anyhow::Result<Box<dyn crate::components::CheckpointParticipant>> {
    let b =
        bolt::RedisBolt::new(&c.args, c.stateful).map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?;
    Ok(Box::new(b))
}

/// The arguments' problems for the role (spout or bolt), each with the argument it is
/// about (`None`: the component as a whole), as `storm validate` reports them.
fn check(args: &Args, is_spout: bool) -> Vec<(Option<String>, String)> {
    let (others, role, other_role) = match is_spout {
        true => (BOLT_ARGS, "spout", "bolt"),
        false => (&[SPOUT_ARGS, RECORD_ARGS].concat()[..], "bolt", "spout"),
    };
    let mut problems: Vec<(Option<String>, String)> = args
        .keys()
        .filter(|k| others.contains(&k.as_str()))
        .map(|k| {
            (
                Some(k.clone()),
                format!("`{k}` is an argument of a redis {other_role}; this one is a {role}"),
            )
        })
        .collect();
    if !problems.is_empty() {
        return problems;
    }
    let built = match is_spout {
        true => spout::RedisSpout::new(args).err().map(|e| (None, e)),
        false => spec::Spec::from_args(args)
            .err()
            .map(|(arg, e)| (arg.map(String::from), e)),
    };
    problems.extend(built.map(|(arg, e)| (arg, format!("redis {role}: {e}"))));
    problems
}

/// The default stream's fields (`None` inside: emits nothing; `None`: needs the input's).
fn output_fields(c: &Component, input: Option<&[String]>) -> Option<Option<Vec<String>>> {
    if c.is_spout() {
        return Some(Some(record::output_fields(&c.args).unwrap_or_default()));
    }
    let Ok(spec) = spec::Spec::from_args(&c.args) else {
        return Some(None);
    };
    if !spec.command.reads() {
        return Some(None);
    }
    Some(spec.output_fields(input?))
}

/// The input fields a bolt's arguments name, each with the argument that names it.
fn named_fields(args: &Args) -> Vec<(&'static str, String)> {
    let Ok(spec) = spec::Spec::from_args(args) else {
        return Vec::new();
    };
    let mut out: Vec<(&'static str, String)> = Vec::new();
    out.extend(
        spec.key
            .fields()
            .into_iter()
            .map(|f| ("key", f.to_string())),
    );
    for t in &spec.fields {
        out.extend(t.fields().into_iter().map(|f| ("field", f.to_string())));
    }
    out.extend(spec.value.iter().map(|f| ("value", f.clone())));
    out
}
