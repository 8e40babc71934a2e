//! The `join` bolt (Storm's JoinBolt): tuples of two or more input components, joined on a key
//! each names, the first input being the left side and each later one joined to it with
//! `kind: inner` (default) or `left`; `select` picks `COMPONENT.FIELD`s for the output, named by
//! their field part. Without a window the whole input is joined at its end; with
//! `window: {tumbling: D}` (processing time) or `{tumbling: N}` (tuples) each window's tuples
//! are joined when it closes. Keys match by their text form, as `lookup` does.

use super::{Bolt, BoltCollector, TaskContext};
use crate::topology::plan::streams;
use crate::tuple::{Tuple, Value, Values};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One input as configured.
#[derive(Debug, Clone)]
pub struct Input {
    pub from: String,
    pub key: String,
    pub left: bool,
}

/// A checked `join` configuration.
#[derive(Debug, Clone)]
pub struct Spec {
    pub inputs: Vec<Input>,
    /// (component, field) pairs.
    pub select: Vec<(String, String)>,
    pub window: Option<super::aggregate::window::WindowSpec>,
}

impl Spec {
    pub fn from_args(
        args: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Spec, (&'static str, String)> {
        let bad = |m: &str| ("inputs", m.to_string());
        let list = args
            .get("inputs")
            .and_then(|v| v.as_array())
            .ok_or_else(|| bad("`join` needs `inputs`: [{from: A, key: k}, {from: B, key: k}]"))?;
        let inputs = list
            .iter()
            .map(|i| {
                let text = |k: &str| i.get(k).and_then(|v| v.as_str()).map(String::from);
                let left = match text("kind").as_deref() {
                    None | Some("inner") => false,
                    Some("left") => true,
                    Some(other) => {
                        return Err(bad(&format!("`kind` is inner or left, not `{other}`")))
                    }
                };
                Ok(Input {
                    from: text("from").ok_or_else(|| bad("each input needs `from`"))?,
                    key: text("key").ok_or_else(|| bad("each input needs `key`"))?,
                    left,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if inputs.len() < 2 {
            return Err(bad("`join` needs at least two inputs"));
        }
        let select = args
            .get("select")
            .and_then(|v| v.as_array())
            .ok_or((
                "select",
                "`join` needs `select`: [A.field, B.field]".to_string(),
            ))?
            .iter()
            .map(|s| {
                let s = s.as_str().unwrap_or_default();
                s.split_once('.')
                    .filter(|(c, f)| !c.is_empty() && !f.is_empty())
                    .map(|(c, f)| (c.to_string(), f.to_string()))
                    .ok_or(("select", format!("`{s}` is not COMPONENT.FIELD")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let window = args
            .get("window")
            .map(super::aggregate::window::WindowSpec::from_json)
            .transpose()
            .map_err(|e| ("window", e))?;
        if window.is_some_and(|w| w.size != w.every) {
            return Err(("window", "`join` takes tumbling windows".into()));
        }
        Ok(Spec {
            inputs,
            select,
            window,
        })
    }

    pub fn output_fields(&self) -> Vec<String> {
        self.select.iter().map(|(_, f)| f.clone()).collect()
    }
}

pub struct Join {
    spec: Spec,
    /// Per input: key position, and the positions of its selected fields' (output index, field).
    keys: Vec<usize>,
    picks: Vec<Vec<(usize, usize)>>,
    /// Input index of each source component.
    input_of: HashMap<String, usize>,
    /// The window's tuples per input, by key text.
    buffered: Vec<HashMap<String, Vec<Values>>>,
    window_started: Instant,
    seen: i64,
    /// The plan, to know a tuple's component from its source task.
    plan: Option<std::sync::Arc<crate::topology::plan::Plan>>,
}

impl Join {
    pub fn new(args: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Join> {
        let spec = Spec::from_args(args).map_err(|(_, e)| anyhow::anyhow!("join: {e}"))?;
        let n = spec.inputs.len();
        Ok(Join {
            spec,
            keys: Vec::new(),
            picks: vec![Vec::new(); n],
            input_of: HashMap::new(),
            buffered: vec![HashMap::new(); n],
            window_started: Instant::now(),
            seen: 0,
            plan: None,
        })
    }

    /// Join what is buffered and emit it, then start afresh.
    fn flush(&mut self, out: &mut dyn BoltCollector) {
        let width = self.spec.select.len();
        let mut rows: Vec<Values> = Vec::new();
        let mut left_keys: Vec<&String> = self.buffered[0].keys().collect();
        left_keys.sort();
        for key in left_keys {
            // Partial rows, widened input by input.
            let mut partial: Vec<Values> = self.buffered[0][key]
                .iter()
                .map(|t| self.fill(&smallvec::smallvec![Value::Null; width], 0, Some(t)))
                .collect();
            for i in 1..self.spec.inputs.len() {
                let matches = self.buffered[i].get(key);
                partial = match (matches, self.spec.inputs[i].left) {
                    (Some(m), _) => partial
                        .iter()
                        .flat_map(|p| m.iter().map(|t| self.fill(p, i, Some(t))))
                        .collect(),
                    (None, true) => partial.iter().map(|p| self.fill(p, i, None)).collect(),
                    (None, false) => Vec::new(),
                };
            }
            rows.extend(partial);
        }
        for row in rows {
            out.send(streams::DEFAULT, &[], row);
        }
        self.buffered.iter_mut().for_each(HashMap::clear);
    }

    /// `row` with input `i`'s selected fields taken from `tuple` (null without one).
    fn fill(&self, row: &Values, i: usize, tuple: Option<&Values>) -> Values {
        let mut row = row.clone();
        for &(out_at, field_at) in &self.picks[i] {
            row[out_at] = tuple
                .and_then(|t| t.get(field_at).cloned())
                .unwrap_or(Value::Null);
        }
        row
    }

    fn window_over(&self) -> bool {
        use super::aggregate::window::Measure;
        match self.spec.window {
            None => false,
            Some(w) if w.measure == Measure::Count => self.seen >= w.size,
            Some(w) => self.window_started.elapsed() >= Duration::from_millis(w.size as u64),
        }
    }
}

impl Bolt for Join {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        let fields_of = |c: &str| -> anyhow::Result<Vec<String>> {
            let stream = ctx
                .topology
                .inputs_of(&ctx.component)
                .find(|s| s.from == c)
                .ok_or_else(|| anyhow::anyhow!("{}: no stream from `{c}`", ctx.component))?;
            Ok(ctx
                .topology
                .component(c)
                .and_then(|x| x.output_fields(&stream.stream))
                .map(<[String]>::to_vec)
                .unwrap_or_default())
        };
        for (i, input) in self.spec.inputs.iter().enumerate() {
            let fields = fields_of(&input.from)?;
            let at = |f: &str| {
                fields.iter().position(|x| x == f).ok_or_else(|| {
                    anyhow::anyhow!("{}: `{}` has no field `{f}`", ctx.component, input.from)
                })
            };
            self.keys.push(at(&input.key)?);
            for (out_at, (c, f)) in self.spec.select.iter().enumerate() {
                if *c == input.from {
                    self.picks[i].push((out_at, at(f)?));
                }
            }
            self.input_of.insert(input.from.clone(), i);
        }
        self.plan = Some(ctx.plan.clone());
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            return Ok(());
        }
        if self.window_over() {
            self.flush(out);
            self.window_started = Instant::now();
            self.seen = 0;
        }
        self.seen += 1;
        // The input a tuple belongs to is known by the component of its source task.
        let Some(i) = self.component_of(input) else {
            return Ok(());
        };
        let key = input
            .values
            .get(self.keys[i])
            .map(Value::plain_text)
            .unwrap_or_default();
        self.buffered[i]
            .entry(key)
            .or_default()
            .push(input.values.clone());
        Ok(())
    }

    fn poll(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.window_over() {
            self.flush(out);
            self.window_started = Instant::now();
            self.seen = 0;
        }
        Ok(())
    }

    fn poll_interval(&self) -> Option<Duration> {
        self.spec.window.map(|_| Duration::from_millis(20))
    }

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.flush(out);
        Ok(())
    }
}

impl Join {
    fn component_of(&self, input: &Tuple) -> Option<usize> {
        let name = self.plan.as_ref()?.component_of_task(input.source_task);
        self.input_of.get(name).copied()
    }
}
