//! The `discard` bolt: acks and drops every tuple (Storm's DevNullBolt), for benchmarks.

use super::{Bolt, BoltCollector};
use crate::tuple::Tuple;

#[derive(Default)]
pub struct Discard;

impl Bolt for Discard {
    fn execute(&mut self, _input: &Tuple, _out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        Ok(())
    }
}
