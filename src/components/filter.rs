//! The `filter` bolt: keeps the tuples for which `args.where` holds (the expression language of
//! `crate::expr`, checked at validate time and compiled once here).

use super::{Bolt, BoltCollector, TaskContext};
use crate::expr::Compiled;
use crate::topology::plan::streams;
use crate::tuple::Tuple;

pub struct Filter {
    source: String,
    compiled: Option<Compiled>,
}

impl Filter {
    pub fn new(args: &serde_json::Map<String, serde_json::Value>) -> Filter {
        Filter {
            source: args
                .get("where")
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string(),
            compiled: None,
        }
    }
}

impl Bolt for Filter {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        let fields = super::input_fields(ctx);
        let expr = crate::expr::parse(&self.source)
            .map_err(|e| anyhow::anyhow!("{}: filter expression: {}", ctx.component, e.message))?;
        let compiled = expr
            .compile(&fields)
            .map_err(|e| anyhow::anyhow!("{}: filter expression: {}", ctx.component, e.message))?;
        self.compiled = Some(compiled);
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            return Ok(());
        }
        if self
            .compiled
            .as_ref()
            .is_some_and(|c| c.eval(&input.values))
        {
            out.send(streams::DEFAULT, &[input], input.values.clone());
        }
        Ok(())
    }
}
