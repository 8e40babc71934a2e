//! The `http` built-in (a spout): its arguments, fields and checks, as the registry reads them.
//! The checks are [`super::check`]'s, each problem located at its argument.

use crate::components::builtin::{self as b, arg, ArgShape as A, Written};
use crate::components::parse::builtin::{errors_stream, READS_FORMAT};
use crate::components::Spout;
use crate::model::Component;
use std::path::Path;

/// The `http` built-in.
pub(crate) struct HttpType;

/// A network spout's arguments: its own (shapes its check reads) and the record arguments of
/// `stdin`, with `format` one of `formats`.
pub(crate) fn network_args(own: &[&'static str], formats: &'static [&'static str]) -> Vec<b::Arg> {
    let mut args: Vec<b::Arg> = own
        .iter()
        .map(|n| match *n {
            "ack" => arg(n, A::Bool),
            "path" | "health_path" | "listen" => arg(n, A::Text),
            "max_connections" | "queue" => arg(n, A::WholeCount),
            "max_retries" => arg(n, A::Number),
            "idle" | "idempotency_ttl" => arg(n, A::Duration),
            "idempotency_header" => arg(n, A::Text),
            "protocol" => arg(n, A::OneOf(&["tcp", "udp"])),
            "framing" => arg(
                n,
                A::OneOf(crate::components::socket::framing::Framing::NAMES),
            ),
            _ => arg(n, A::Any),
        })
        .collect();
    args.extend(READS_FORMAT.iter().map(|a| match a.name {
        "format" => arg("format", A::OneOf(formats)),
        _ => *a,
    }));
    args
}

/// Report a spout's problems, each at its argument (or the type); one already reported at
/// the same place (a shape) is not said twice.
pub(crate) fn report(w: &mut Written, name: &str, problems: Vec<(&'static str, String)>) {
    for (key, message) in problems {
        let span = w.arg_span(key);
        if w.diags.iter().any(|d| d.is_error() && d.span == Some(span)) {
            continue;
        }
        w.error(format!("{name} spout: {message}"), span);
    }
}

impl b::Builtin for HttpType {
    fn name(&self) -> &'static str {
        "http"
    }
    fn summary(&self) -> &'static str {
        "spout: records POSTed to an HTTP endpoint (`listen`, `path`), read by `format`"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Spout
    }
    fn args(&self) -> Vec<b::Arg> {
        network_args(super::ARGS, crate::components::parse::spec::FORMATS)
    }
    fn rewinds_with(&self, args: &serde_json::Map<String, serde_json::Value>) -> bool {
        super::settings::Settings::from_args(args).is_ok_and(|s| s.exactly_once())
    }
    fn rewinds_when(&self) -> Option<&'static str> {
        Some("with `ack: true` and `idempotency_header` (its clients send each request again until answered 200)")
    }
    fn output_fields(&self, c: &Component, _input: Option<&[String]>) -> b::Fields {
        Some(Some(super::output_fields(&c.args).unwrap_or_default()))
    }
    fn extra_streams(
        &self,
        _c: &Component,
        _input: Option<&[String]>,
    ) -> Vec<(String, Vec<String>)> {
        vec![errors_stream()]
    }
    fn check(&self, w: &mut Written) {
        let problems = super::check(&w.args_json(), w.tasks);
        report(w, "http", problems);
    }
    fn spout(&self, c: &Component, _task: u32, _base: &Path) -> anyhow::Result<Box<dyn Spout>> {
        let spout = super::HttpSpout::new(&c.args).map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?;
        Ok(Box::new(spout))
    }
}
