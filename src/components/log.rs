//! The `log` bolt (and Flux's `LogInfoBolt`): writes each tuple with its component and task to
//! standard error.

use super::builtin as b;
use super::{Bolt, BoltCollector, TaskContext};
use crate::tuple::Tuple;
use std::io::Write;

#[derive(Default)]
struct Log {
    prefix: String,
}

impl Bolt for Log {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.prefix = format!("{}:{}", ctx.component, ctx.task_id);
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, _out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let values: Vec<serde_json::Value> = input.values.iter().map(|v| v.to_json()).collect();
        let line = format!(
            "{} [{}]\n",
            self.prefix,
            values
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
        Ok(())
    }
}

/// The `log` built-in.
pub(crate) struct LogType;

impl b::Builtin for LogType {
    fn name(&self) -> &'static str {
        "log"
    }
    fn summary(&self) -> &'static str {
        "bolt: writes each tuple with its component and task to stderr"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn classes(&self) -> &'static [&'static str] {
        &["org.apache.storm.flux.wrappers.bolts.LogInfoBolt"]
    }
    fn writes(&self, _kind: crate::model::ComponentKind) -> bool {
        true
    }
    fn bolt(
        &self,
        _c: &crate::model::Component,
        _base: &std::path::Path,
    ) -> anyhow::Result<Box<dyn Bolt>> {
        Ok(Box::new(Log::default()))
    }
}
