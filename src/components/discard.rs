//! The `discard` bolt: acks and drops every tuple (Storm's DevNullBolt), for benchmarks.

use super::builtin as b;
use super::{Bolt, BoltCollector};
use crate::tuple::Tuple;

#[derive(Default)]
struct Discard;

impl Bolt for Discard {
    fn execute(&mut self, _input: &Tuple, _out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The `discard` built-in.
pub(crate) struct DiscardType;

impl b::Builtin for DiscardType {
    fn name(&self) -> &'static str {
        "discard"
    }
    fn summary(&self) -> &'static str {
        "bolt: acks and drops every tuple"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn writes(&self, _kind: crate::model::ComponentKind) -> bool {
        true
    }
    fn bolt(
        &self,
        _c: &crate::model::Component,
        _base: &std::path::Path,
    ) -> anyhow::Result<Box<dyn Bolt>> {
        Ok(Box::new(Discard))
    }
}
