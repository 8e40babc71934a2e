//! The `http` sink built-in: its arguments, checks, `errors` stream and build.

use crate::components::builtin::{self as b, arg, ArgShape as A, Written};
use crate::model::{Component, ComponentKind};
use std::path::Path;

/// What an `http` sink reads.
const ARGS: &[b::Arg] = &[
    arg("url", A::Text),
    arg("method", A::Text),
    arg("format", A::OneOf(super::args::FORMATS)),
    arg("batch", A::Map),
    arg("concurrency", A::WholeCount),
    arg("headers", A::Map),
    arg("token", A::Text),
    arg("retry", A::Map),
    arg("timeout", A::Duration),
    arg("idempotency_header", A::Text),
];

/// The `http` built-in (as a sink).
pub(crate) struct HttpType;

impl b::Builtin for HttpType {
    fn name(&self) -> &'static str {
        "http"
    }
    fn summary(&self) -> &'static str {
        "bolt: sends records in batches to `url` (POST), acked once a 2xx answers"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        ARGS.to_vec()
    }
    fn keeps_state(&self) -> bool {
        true
    }
    fn writes(&self, kind: ComponentKind) -> bool {
        kind == ComponentKind::Bolt
    }
    fn extra_streams(
        &self,
        _c: &Component,
        _input: Option<&[String]>,
    ) -> Vec<(String, Vec<String>)> {
        vec![errors_stream()]
    }
    fn check(&self, w: &mut Written) {
        check(w)
    }
    fn checkpointed_bolt(
        &self,
        c: &Component,
        _base: &Path,
    ) -> Option<anyhow::Result<Box<dyn crate::components::CheckpointParticipant>>> {
        Some(super::bolt(c))
    }
}

/// The sink's `errors` stream and its fields.
fn errors_stream() -> (String, Vec<String>) {
    let fields = super::ERROR_FIELDS.iter().map(|f| f.to_string()).collect();
    (super::ERRORS_STREAM.into(), fields)
}

/// An `http` sink's checks (the first problem, located at its argument).
fn check(w: &mut Written) {
    let json = w.args_json();
    if let Err(e) = super::args::Config::from_args(&json) {
        crate::components::sink_args::report(w, "http", &e);
    }
}
