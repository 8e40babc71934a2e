//! The `filter` bolt: keeps the tuples for which `args.where` holds (the expression language of
//! `crate::expr`, checked at validate time and compiled once here).

mod check;
use super::builtin as b;
use super::{Bolt, BoltCollector, TaskContext};
use crate::expr::Compiled;
use crate::model::plan::streams;
use crate::tuple::Tuple;

struct Filter {
    source: String,
    compiled: Option<Compiled>,
}

impl Filter {
    fn new(args: &serde_json::Map<String, serde_json::Value>) -> Filter {
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

    fn pure_filter(&self) -> Option<&Compiled> {
        self.compiled.as_ref()
    }

    fn filter_condition(&self, input: &[String]) -> Option<Compiled> {
        crate::expr::parse(&self.source).ok()?.compile(input).ok()
    }
}

/// The `filter` built-in.
pub(crate) struct FilterType;

impl b::Builtin for FilterType {
    fn name(&self) -> &'static str {
        "filter"
    }
    fn summary(&self) -> &'static str {
        "bolt: keeps the tuples for which the expression `where` holds"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        vec![b::arg("where", b::ArgShape::Text)]
    }
    fn positional(&self) -> Option<b::Positional> {
        Some(b::Positional::One("where"))
    }
    fn output_fields(&self, _c: &crate::model::Component, input: Option<&[String]>) -> b::Fields {
        Some(Some(input?.to_vec()))
    }
    fn field_types(&self, cx: &b::TypeCx) -> Option<Vec<crate::expr::Type>> {
        Some(cx.input?.1.to_vec())
    }
    fn check_input(&self, w: &mut b::Written, _c: &crate::model::Component, input: &b::Input) {
        check::expression(w, input.fields, input.types)
    }
    fn bolt(
        &self,
        c: &crate::model::Component,
        _base: &std::path::Path,
    ) -> anyhow::Result<Box<dyn Bolt>> {
        Ok(Box::new(Filter::new(&c.args)))
    }
}
