//! The `socket` built-in (a spout): its arguments, fields and checks, as the registry reads
//! them. The checks are [`super::check`]'s, each problem located at its argument.

use crate::components::builtin::{self as b, Written};
use crate::components::http::builtin::{network_args, report};
use crate::components::parse::builtin::errors_stream;
use crate::components::Spout;
use crate::model::Component;
use std::path::Path;

/// The `socket` built-in.
pub(crate) struct SocketType;

impl b::Builtin for SocketType {
    fn name(&self) -> &'static str {
        "socket"
    }
    fn summary(&self) -> &'static str {
        "spout: records over TCP or UDP (`listen`): lines, octet-counted, syslog"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Spout
    }
    fn args(&self) -> Vec<b::Arg> {
        network_args(super::ARGS, super::formats())
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
        report(w, "socket", problems);
    }
    fn spout(&self, c: &Component, _task: u32, _base: &Path) -> anyhow::Result<Box<dyn Spout>> {
        let spout =
            super::SocketSpout::new(&c.args).map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?;
        Ok(Box::new(spout))
    }
}
