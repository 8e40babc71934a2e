//! The `shell` built-in: a spout or a bolt (its place decides) running a program that speaks
//! Storm's multilang protocol (`command`), as Flux's `FluxShellSpout`/`FluxShellBolt` do.

use super::{ShellBolt, ShellSpout};
use crate::components::builtin::{self as b, Written};
use crate::components::{Bolt, Spout};
use crate::model::{Component, ComponentKind};
use std::path::Path;

/// The Flux class of a shell spout.
const SPOUT_CLASS: &str = "org.apache.storm.flux.wrappers.spouts.FluxShellSpout";
/// The Flux class of a shell bolt.
const BOLT_CLASS: &str = "org.apache.storm.flux.wrappers.bolts.FluxShellBolt";

/// The `shell` built-in.
pub(crate) struct ShellType;

impl b::Builtin for ShellType {
    fn name(&self) -> &'static str {
        "shell"
    }
    fn summary(&self) -> &'static str {
        "spout or bolt: a program speaking Storm's multilang protocol (`command`)"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Both
    }
    fn classes(&self) -> &'static [&'static str] {
        &[SPOUT_CLASS, BOLT_CLASS]
    }
    fn positional(&self) -> Option<b::Positional> {
        Some(b::Positional::Command)
    }
    /// A shell bolt may write wherever it likes.
    fn writes(&self, kind: ComponentKind) -> bool {
        kind == ComponentKind::Bolt
    }
    fn runs_program(&self) -> bool {
        true
    }
    fn check(&self, w: &mut Written) {
        match &w.rc.command {
            None => {
                let at = w.at_type();
                w.error("shell component without `command`", at).help =
                    Some("add `command: [program, args...]`".into());
            }
            Some(c) if c.value.is_empty() => {
                w.error("`command` is empty", c.span);
            }
            _ => {}
        }
    }
    fn spout(&self, c: &Component, _task: u32, base: &Path) -> anyhow::Result<Box<dyn Spout>> {
        Ok(Box::new(ShellSpout::new(c, base)))
    }
    fn bolt(&self, c: &Component, base: &Path) -> anyhow::Result<Box<dyn Bolt>> {
        Ok(Box::new(ShellBolt::new(c, base)))
    }
}
