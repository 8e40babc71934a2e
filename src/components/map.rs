//! The `map` bolt: changes the fields of each tuple with `args.set` (name → expression; a new
//! name is appended, an existing one replaced in place), then `args.rename` (old → new), then
//! `args.keep` (these fields, in this order), then `args.drop`. Each `set` expression sees the
//! fields as the entries before it left them. The same steps give the output fields at
//! validate time (`Spec::apply`), so they are resolved once, in one place.

use super::builtin as b;
use super::{Bolt, BoltCollector, TaskContext};
use crate::expr::CompiledValue;
use crate::model::plan::streams;
use crate::tuple::{Tuple, Value, Values};

/// The arguments of a `map`, read from `args` (shapes are checked by the validator; anything
/// malformed is left out here).
#[derive(Debug, Clone, Default, PartialEq)]
struct Spec {
    set: Vec<(String, String)>,
    rename: Vec<(String, String)>,
    keep: Option<Vec<String>>,
    drop: Vec<String>,
}

/// Which step of a `map` named a field that was not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Rename,
    Keep,
    Drop,
}

/// What `Spec::apply` asks of its caller: the value of a `set` entry given the fields so far,
/// and what to do about a name that is not there.
trait Visitor<T> {
    /// The value for `set` entry `k` (expression `expr`) given the current fields.
    fn set(&mut self, k: usize, expr: &str, current: &[(String, T)]) -> T;
    /// Entry `k` of `step` names `name`, which is not among `current`.
    fn missing(&mut self, step: Step, k: usize, name: &str, current: &[(String, T)]);
}

/// A scalar argument as expression text (`set: {n: 1}` is the expression `1`).
fn expression_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        serde_json::Value::Null => Some("null".into()),
        _ => None,
    }
}

fn pairs(
    v: Option<&serde_json::Value>,
    text: fn(&serde_json::Value) -> Option<String>,
) -> Vec<(String, String)> {
    v.and_then(|v| v.as_object())
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), text(v)?)))
                .collect()
        })
        .unwrap_or_default()
}

fn names(v: Option<&serde_json::Value>) -> Option<Vec<String>> {
    let list = v?.as_array()?;
    Some(
        list.iter()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect(),
    )
}

impl Spec {
    fn from_args(args: &serde_json::Map<String, serde_json::Value>) -> Spec {
        Spec {
            set: pairs(args.get("set"), expression_text),
            rename: pairs(args.get("rename"), |v| v.as_str().map(str::to_string)),
            keep: names(args.get("keep")),
            drop: names(args.get("drop")).unwrap_or_default(),
        }
    }

    /// Apply the steps to the input fields, each carrying a `T` (a type, a value slot, …).
    fn apply<T: Clone>(
        &self,
        input: Vec<(String, T)>,
        visitor: &mut dyn Visitor<T>,
    ) -> Vec<(String, T)> {
        let mut current = input;
        for (k, (name, expr)) in self.set.iter().enumerate() {
            let value = visitor.set(k, expr, &current);
            match current.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = value,
                None => current.push((name.clone(), value)),
            }
        }
        let before: Vec<String> = current.iter().map(|(n, _)| n.clone()).collect();
        for (k, (old, new)) in self.rename.iter().enumerate() {
            // Renames apply together: `a → b, b → a` swaps.
            match before.iter().position(|n| n == old) {
                Some(i) => current[i].0 = new.clone(),
                None => visitor.missing(Step::Rename, k, old, &current),
            }
        }
        if let Some(keep) = &self.keep {
            let mut kept = Vec::new();
            for (k, name) in keep.iter().enumerate() {
                match current.iter().find(|(n, _)| n == name) {
                    Some(f) => kept.push(f.clone()),
                    None => visitor.missing(Step::Keep, k, name, &current),
                }
            }
            current = kept;
        }
        for (k, name) in self.drop.iter().enumerate() {
            match current.iter().position(|(n, _)| n == name) {
                Some(i) => {
                    current.remove(i);
                }
                None => visitor.missing(Step::Drop, k, name, &current),
            }
        }
        current
    }

    /// The output fields for these input fields.
    fn output_fields(&self, input: &[String]) -> Vec<String> {
        struct Names;
        impl Visitor<()> for Names {
            fn set(&mut self, _: usize, _: &str, _: &[(String, ())]) {}
            fn missing(&mut self, _: Step, _: usize, _: &str, _: &[(String, ())]) {}
        }
        let input = input.iter().map(|f| (f.clone(), ())).collect();
        self.apply(input, &mut Names)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    }
}

/// The steps compiled against the input fields: each `set` computes a new slot after the
/// input values; the output picks slots.
struct Plan {
    inputs: usize,
    sets: Vec<CompiledValue>,
    pick: Vec<usize>,
}

/// Compiles each `set` expression against the fields and slots at its point.
struct Compiler {
    slots: usize,
    sets: Vec<CompiledValue>,
    error: Option<String>,
}

impl Visitor<usize> for Compiler {
    fn set(&mut self, _: usize, expr: &str, current: &[(String, usize)]) -> usize {
        let names: Vec<String> = current.iter().map(|(n, _)| n.clone()).collect();
        let slots: Vec<usize> = current.iter().map(|(_, s)| *s).collect();
        let compiled = crate::expr::parse(expr)
            .and_then(|e| e.compile_value_at(&names, &slots))
            .map_err(|e| format!("expression `{expr}`: {e}"));
        match compiled {
            Ok(c) => self.sets.push(c),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self.slots += 1;
        self.slots - 1
    }

    fn missing(&mut self, step: Step, _: usize, name: &str, _: &[(String, usize)]) {
        self.error
            .get_or_insert(format!("{step:?} names field `{name}`, which is not there"));
    }
}

struct Map {
    spec: Spec,
    plan: Option<Plan>,
    /// The input values, then each `set` result: reused from tuple to tuple.
    work: Vec<Value>,
}

impl Map {
    fn new(args: &serde_json::Map<String, serde_json::Value>) -> Map {
        Map {
            spec: Spec::from_args(args),
            plan: None,
            work: Vec::new(),
        }
    }
}

impl Bolt for Map {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        let fields = super::input_fields(ctx);
        let input = fields.iter().cloned().zip(0..).collect();
        let mut compiler = Compiler {
            slots: fields.len(),
            sets: Vec::new(),
            error: None,
        };
        let out = self.spec.apply(input, &mut compiler);
        if let Some(e) = compiler.error {
            anyhow::bail!("{}: map: {e}", ctx.component);
        }
        self.plan = Some(Plan {
            inputs: fields.len(),
            sets: compiler.sets,
            pick: out.into_iter().map(|(_, slot)| slot).collect(),
        });
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let Some(plan) = &self.plan else {
            return Ok(());
        };
        if input.is_tick() {
            return Ok(());
        }
        let work = &mut self.work;
        work.clear();
        work.extend(input.values.iter().take(plan.inputs).cloned());
        // A tuple shorter than its declared fields (a shell component's) reads as nulls.
        work.resize(plan.inputs, Value::Null);
        for set in &plan.sets {
            let v = set.eval(work);
            work.push(v);
        }
        let values: Values = plan
            .pick
            .iter()
            .map(|&slot| {
                work.get_mut(slot)
                    .map_or(Value::Null, |v| std::mem::replace(v, Value::Null))
            })
            .collect();
        out.send(streams::DEFAULT, &[input], values);
        Ok(())
    }
}

mod check;

/// The `map` built-in.
pub(crate) struct MapType;

impl b::Builtin for MapType {
    fn name(&self) -> &'static str {
        "map"
    }
    fn summary(&self) -> &'static str {
        "bolt: computes (`set`), renames, keeps or drops fields of each tuple"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        use b::ArgShape as A;
        vec![
            b::arg("set", A::Map),
            b::arg("rename", A::Map),
            b::arg("keep", A::Fields),
            b::arg("drop", A::Fields),
        ]
    }
    fn output_fields(&self, c: &crate::model::Component, input: Option<&[String]>) -> b::Fields {
        Some(Some(Spec::from_args(&c.args).output_fields(input?)))
    }
    fn field_types(&self, cx: &b::TypeCx) -> Option<Vec<crate::expr::Type>> {
        let (out, _) = check::walk(cx.source, cx.rc, &cx.c.args, Some(cx.input?));
        Some(out.into_iter().map(|(_, t)| t).collect())
    }
    fn check_input(&self, w: &mut b::Written, _c: &crate::model::Component, input: &b::Input) {
        check::check(w, input.fields.map(|f| (f, input.types)))
    }
    fn bolt(
        &self,
        c: &crate::model::Component,
        _base: &std::path::Path,
    ) -> anyhow::Result<Box<dyn Bolt>> {
        Ok(Box::new(Map::new(&c.args)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(args: serde_json::Value) -> Spec {
        match args {
            serde_json::Value::Object(m) => Spec::from_args(&m),
            _ => Spec::default(),
        }
    }

    fn fields(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn steps_apply_in_order() {
        let s = spec(serde_json::json!({
            "set": {"b": "1", "z": "2"},
            "rename": {"a": "c", "c": "a"},
            "drop": ["z"]
        }));
        // `b` replaced in place, `z` appended; the renames swap; `z` dropped.
        assert_eq!(s.output_fields(&fields(&["a", "b", "c"])), ["c", "b", "a"]);
        let s = spec(serde_json::json!({"keep": ["c", "a"]}));
        assert_eq!(s.output_fields(&fields(&["a", "b", "c"])), ["c", "a"]);
        let s = spec(serde_json::json!({"set": {"n": 1}, "rename": {"n": "m"}}));
        assert_eq!(s.output_fields(&fields(&["a"])), ["a", "m"]);
    }
}
