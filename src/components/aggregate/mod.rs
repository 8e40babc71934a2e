//! The `aggregate` bolt: per key of its `by` fields, any of `count`, `sum`, `avg`, `min`, `max`,
//! `count_distinct`, `first`, `last`, `percentile` (a DDSketch, 1% relative accuracy), emitted
//! at the end of input (`emit: end`, the default), on every tick (`tick`: running values), or on
//! every change (`update`: the key's new row, once per change, nothing again at the end).
//! Output: the `by` fields, then one field per op (`count`, `sum_latency`, `p99_latency`, or
//! the name given with `as`).

pub mod ops;

use super::{Bolt, BoltCollector, TaskContext, Tuple};
use crate::topology::plan::streams;
use crate::tuple::{Value, Values};
use ops::{OpSpec, State};
use std::collections::HashMap;

/// When rows are emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emit {
    End,
    Tick,
    Update,
}

pub const EMITS: &[&str] = &["end", "tick", "update"];

/// A checked `aggregate` configuration.
#[derive(Debug, Clone)]
pub struct Spec {
    pub by: Vec<String>,
    pub ops: Vec<OpSpec>,
    pub emit: Emit,
}

impl Spec {
    /// The arguments as the runtime reads them; an error names the argument it is about.
    pub fn from_args(
        args: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Spec, (&'static str, String)> {
        let by = match args.get("by") {
            None => Vec::new(),
            Some(serde_json::Value::String(s)) => vec![s.clone()],
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(String::from)
                        .ok_or(("by", "`by` must be field names".to_string()))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(("by", "`by` must be field names".into())),
        };
        let written: Vec<String> = match args.get("ops") {
            None => vec!["count".into()],
            Some(serde_json::Value::String(s)) => vec![s.clone()],
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(String::from)
                        .ok_or(("ops", "each op is text: `sum(latency)`".to_string()))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err((
                    "ops",
                    "`ops` must be a list such as [count, sum(latency)]".into(),
                ))
            }
        };
        let ops = written
            .iter()
            .map(|o| OpSpec::parse(o).map_err(|e| ("ops", e)))
            .collect::<Result<Vec<_>, _>>()?;
        let emit = match args.get("emit").and_then(|v| v.as_str()) {
            None | Some("end") => Emit::End,
            Some("tick") => Emit::Tick,
            Some("update") => Emit::Update,
            Some(other) => {
                return Err((
                    "emit",
                    format!("`emit` must be one of: end, tick, update (got `{other}`)"),
                ))
            }
        };
        let spec = Spec { by, ops, emit };
        let names = spec.output_fields();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err((
                    "ops",
                    format!("two output fields would be named `{n}`: name one with `as`"),
                ));
            }
        }
        Ok(spec)
    }

    pub fn output_fields(&self) -> Vec<String> {
        self.by
            .iter()
            .cloned()
            .chain(self.ops.iter().map(|o| o.name.clone()))
            .collect()
    }

    /// Every input field it reads (for validation).
    pub fn input_fields(&self) -> impl Iterator<Item = &str> {
        self.by
            .iter()
            .map(String::as_str)
            .chain(self.ops.iter().filter_map(|o| o.field.as_deref()))
    }
}

pub struct Aggregate {
    spec: Spec,
    /// Positions of the `by` fields and of each op's field in the input.
    keys: Vec<usize>,
    fields: Vec<Option<usize>>,
    groups: HashMap<Values, Vec<State>>,
    unusable: u64,
    component: String,
}

impl Aggregate {
    pub fn new(args: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Aggregate> {
        let spec = Spec::from_args(args).map_err(|(_, e)| anyhow::anyhow!("aggregate: {e}"))?;
        Ok(Aggregate {
            spec,
            keys: Vec::new(),
            fields: Vec::new(),
            groups: HashMap::new(),
            unusable: 0,
            component: String::new(),
        })
    }

    fn row(&self, key: &Values, states: &[State]) -> Values {
        key.iter()
            .cloned()
            .chain(states.iter().map(State::value))
            .collect()
    }

    /// Every key's row, in key order (deterministic output).
    fn emit_all(&self, out: &mut dyn BoltCollector) {
        let mut keys: Vec<(String, &Values)> = self
            .groups
            .keys()
            .map(|k| {
                let mut text = String::new();
                for v in k {
                    v.write_plain(&mut text);
                    text.push('\u{1f}');
                }
                (text, k)
            })
            .collect();
        keys.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, k) in keys {
            let row = self.row(k, &self.groups[k]);
            out.send(streams::DEFAULT, &[], row);
        }
    }
}

impl Bolt for Aggregate {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        let inputs = super::input_fields(ctx);
        let at = |f: &str| {
            inputs
                .iter()
                .position(|x| x == f)
                .ok_or_else(|| anyhow::anyhow!("{}: input has no field `{f}`", ctx.component))
        };
        self.keys = self
            .spec
            .by
            .iter()
            .map(|f| at(f))
            .collect::<anyhow::Result<_>>()?;
        self.fields = self
            .spec
            .ops
            .iter()
            .map(|o| o.field.as_deref().map(at).transpose())
            .collect::<anyhow::Result<_>>()?;
        self.component = ctx.component.clone();
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            if self.spec.emit == Emit::Tick {
                self.emit_all(out);
            }
            return Ok(());
        }
        let key: Values = self
            .keys
            .iter()
            .map(|&i| input.values.get(i).cloned().unwrap_or(Value::Null))
            .collect();
        let ops = &self.spec.ops;
        let states = self
            .groups
            .entry(key.clone())
            .or_insert_with(|| ops.iter().map(|o| State::new(o.kind)).collect());
        for (state, field) in states.iter_mut().zip(&self.fields) {
            if !state.add(field.and_then(|i| input.values.get(i))) {
                if self.unusable == 0 {
                    tracing::warn!(
                        "{}: a value that is not a number was skipped by a numeric op (more are counted and reported at the end)",
                        self.component
                    );
                }
                self.unusable += 1;
            }
        }
        if self.spec.emit == Emit::Update {
            let row = self.row(&key, &self.groups[&key]);
            out.send(streams::DEFAULT, &[input], row);
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.spec.emit != Emit::Update {
            self.emit_all(out);
        }
        if self.unusable > 0 {
            tracing::warn!(
                "{}: {} value(s) were not numbers and were skipped by numeric ops",
                self.component,
                self.unusable
            );
        }
        Ok(())
    }
}
