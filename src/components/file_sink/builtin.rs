//! The sink's side of the `file` built-in (the spout's is `stdin_file::builtin`, which hands a
//! `file` placed as a bolt to this module): its arguments, checks, input fields and build.

use crate::components::builtin::{self as b, arg, ArgShape as A, Written};
use crate::model::Component;
use crate::syntax::raw::{RawComponent, Span};
use std::path::Path;

/// What a `file` sink reads.
pub(crate) const ARGS: &[b::Arg] = &[
    arg("path", A::Text),
    arg("format", A::OneOf(super::args::FORMATS)),
    arg("field", A::Text),
    arg("header", A::Bool),
    arg("time", A::Text),
    arg("rotate", A::Map),
    arg("compression", A::OneOf(super::args::COMPRESSIONS)),
    arg("sync", A::Map),
];

/// The formats either role reads (the shape check of the shared `format`; each role's own
/// check then refuses the other's).
const EITHER_FORMAT: &[&str] = &[
    "json", "csv", "tsv", "regex", "logfmt", "kv", "combined", "ndjson", "raw",
];

/// `spout` (the file spout's arguments, with `format` widened) and the sink's, once each.
pub(crate) fn both_roles(spout: Vec<b::Arg>) -> Vec<b::Arg> {
    crate::components::sink_args::both_roles(spout, ARGS, EITHER_FORMAT)
}

/// A `file` sink's checks: spout arguments refused, then the sink's own.
pub(crate) fn check(w: &mut Written, spout_args: &[b::Arg]) {
    let mine: Vec<&str> = ARGS.iter().map(|a| a.name).collect();
    let theirs: Vec<&str> = spout_args
        .iter()
        .map(|a| a.name)
        .filter(|n| !mine.contains(n))
        .collect();
    crate::components::sink_args::other_role_args(w, "file", &theirs, "sink", "spout");
    let json = w.args_json();
    if let Err(e) = super::args::Config::from_args(&json) {
        crate::components::sink_args::report(w, "file", &e);
    }
}

/// The input fields a sink's `field`, `time` and `path` name, each where it is written.
pub(crate) fn named_input_fields(rc: &RawComponent) -> Vec<(String, Span)> {
    let arg = |key: &str| rc.args.as_ref().and_then(|a| a.value.get(key));
    let mut out: Vec<(String, Span)> = ["field", "time"]
        .iter()
        .filter_map(|k| arg(k))
        .flat_map(b::field_items)
        .collect();
    if let Some(p) = arg("path") {
        let t = p
            .value
            .as_str()
            .and_then(|s| super::path::Template::parse(s).ok());
        out.extend(
            t.iter()
                .flat_map(|t| t.fields())
                .map(|f| (f.to_string(), p.span)),
        );
    }
    out
}

/// The sink for component `c`.
pub(crate) fn bolt(
    c: &Component,
    base_dir: &Path,
) -> anyhow::Result<Box<dyn crate::components::CheckpointParticipant>> {
    super::bolt(c, base_dir)
}
