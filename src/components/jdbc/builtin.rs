//! The `jdbc` and `jdbc_lookup` built-ins: `jdbc` is a spout or a sink (its place decides),
//! `jdbc_lookup` a bolt; their arguments are checked by `validate` as the run reads them.

use super::lookup::JdbcLookup;
use super::sink::JdbcSink;
use super::spout::JdbcSpout;
use super::validate::{self, Role};
use crate::components::builtin::{self as b, arg, ArgShape as A, Written};
use crate::components::{Bolt, Spout};
use crate::model::{Component, ComponentKind};
use crate::syntax::raw::{RawComponent, Span};
use std::path::Path;

/// An argument's shape for the generic check (the component's own check says the rest).
fn shape(name: &str) -> A {
    match name {
        "url" | "table" | "column" | "query" | "commits_table" => A::Text,
        "retry" | "poll" => A::Duration,
        "missing" => A::OneOf(&["drop", "null"]),
        "max_retries" => A::Number,
        _ => A::Any,
    }
}

/// Report what `validate` finds, each at its place.
fn report(w: &mut Written, role: Role) {
    for (message, span) in validate::check(w.rc, role) {
        w.error(message, span);
    }
}

/// The `jdbc` built-in.
pub(crate) struct JdbcType;

impl b::Builtin for JdbcType {
    fn name(&self) -> &'static str {
        "jdbc"
    }
    fn summary(&self) -> &'static str {
        "spout or bolt: reads a PostgreSQL `table` by a rising `column`, or writes rows to it"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Both
    }
    fn args(&self) -> Vec<b::Arg> {
        super::args::known(true)
            .into_iter()
            .map(|n| arg(n, shape(n)))
            .collect()
    }
    fn named_input_fields(&self, rc: &RawComponent) -> Vec<(String, Span)> {
        validate::named_input_fields(rc, Role::Sink)
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
            true => Some(Some(
                super::args::names(&c.args, "columns").unwrap_or_default(),
            )),
            false => Some(None),
        }
    }
    fn check(&self, w: &mut Written) {
        let role = match w.kind {
            ComponentKind::Spout => Role::Spout,
            ComponentKind::Bolt => Role::Sink,
        };
        report(w, role)
    }
    fn spout(&self, c: &Component, _task: u32, _base: &Path) -> anyhow::Result<Box<dyn Spout>> {
        let spout = JdbcSpout::new(&c.args).map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?;
        Ok(Box::new(spout))
    }
    fn checkpointed_bolt(
        &self,
        c: &Component,
        _base: &Path,
    ) -> Option<anyhow::Result<Box<dyn crate::components::CheckpointParticipant>>> {
        let sink = JdbcSink::new(&c.args, c.stateful).map_err(|e| anyhow::anyhow!("{}: {e}", c.id));
        Some(sink.map(|s| Box::new(s) as Box<dyn crate::components::CheckpointParticipant>))
    }
}

/// The `jdbc_lookup` built-in.
pub(crate) struct JdbcLookupType;

impl b::Builtin for JdbcLookupType {
    fn name(&self) -> &'static str {
        "jdbc_lookup"
    }
    fn summary(&self) -> &'static str {
        "bolt: adds the `select`ed columns of the rows a PostgreSQL `query` gives"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        super::args::known(false)
            .into_iter()
            .map(|n| arg(n, shape(n)))
            .collect()
    }
    fn named_input_fields(&self, rc: &RawComponent) -> Vec<(String, Span)> {
        validate::named_input_fields(rc, Role::Lookup)
    }
    fn output_fields(&self, c: &Component, input: Option<&[String]>) -> b::Fields {
        let mut fields = input?.to_vec();
        fields.extend(super::args::names(&c.args, "select").unwrap_or_default());
        Some(Some(fields))
    }
    fn check(&self, w: &mut Written) {
        report(w, Role::Lookup)
    }
    fn bolt(&self, c: &Component, _base: &Path) -> anyhow::Result<Box<dyn Bolt>> {
        let lookup = JdbcLookup::new(&c.args).map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?;
        Ok(Box::new(lookup))
    }
}
