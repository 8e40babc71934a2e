//! What a built-in component says about itself (Vector's `TransformConfig`/`SourceConfig` are
//! the model): its name, role, Flux classes, argument schema, output fields and streams, field
//! types, whether it keeps state, its own checks and how to build it. Each built-in's module
//! implements [`Builtin`] once; `registry.rs` lists them; validation, the DSL, `storm run --help`
//! and the runtime read only this.

use super::{Bolt, CheckpointParticipant, Spout};
use crate::expr::Type;
pub(crate) use crate::model::ComponentKind;

pub(crate) mod by_role;
use crate::model::{Component, Stream};
use crate::syntax::diag::Diagnostic;
use crate::syntax::raw::{RawComponent, RawValue, Span, Spanned};
use std::collections::HashMap;
use std::path::Path;

/// Where a built-in can be placed: under `spouts:`, under `bolts:`, or either (its place
/// decides: `shell`, `kafka`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Roles {
    Spout,
    Bolt,
    Both,
}

/// Where the DSL puts a type's positional arguments: `count(word)` is `count(fields=[word])`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Positional {
    One(&'static str),
    List(&'static str),
    /// `shell(python3 split.py)`: the component's `command`.
    Command,
}

/// The grouping a DSL edge into this type gets when it names none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultGrouping {
    /// Fields grouping on the fields of this argument (global when it is absent).
    FieldsOf(&'static str),
    Global,
}

/// What a built-in's argument must look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArgShape {
    Fields,
    Text,
    Number,
    /// A whole number ≥ 1.
    WholeCount,
    Fraction,
    Duration,
    List,
    Bool,
    Map,
    OneOf(&'static [&'static str]),
    /// A string, or a list of strings (`brokers`, `topics`).
    TextOrList,
    /// Any value: the built-in's own `check` says what it must be (`jdbc`'s `batch`: a
    /// number or a map; a size written `1MB` or as bytes).
    Any,
}

/// One argument of a built-in: its name and shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arg {
    pub(crate) name: &'static str,
    pub(crate) shape: ArgShape,
}

/// An argument (short to write in argument tables).
pub(crate) const fn arg(name: &'static str, shape: ArgShape) -> Arg {
    Arg { name, shape }
}

/// The default stream's fields: `Ready(None)` for a sink, `Wait` until the input is known.
pub(crate) type Fields = Option<Option<Vec<String>>>;

/// A component as written, for a built-in's own checks: where to report, and what it needs.
pub struct Written<'a> {
    pub(crate) rc: &'a RawComponent,
    pub(crate) kind: ComponentKind,
    pub(crate) parallelism: u32,
    pub(crate) tasks: u32,
    /// The topology file's folder (relative paths are relative to it).
    pub(crate) base_dir: &'a Path,
    /// The source text the spans point into.
    pub(crate) text: &'a str,
    pub(crate) diags: &'a mut Vec<Diagnostic>,
}

impl<'a> Written<'a> {
    /// Report an error; the result takes a `help`.
    pub(crate) fn error(&mut self, message: impl Into<String>, span: Span) -> &mut Diagnostic {
        self.diags.push(Diagnostic::error(message, span));
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }

    /// An argument as written.
    pub(crate) fn arg(&self, key: &str) -> Option<&'a Spanned<RawValue>> {
        let rc: &'a RawComponent = self.rc;
        rc.args.as_ref().and_then(|a| a.value.get(key))
    }

    /// Where the type is written (else the whole component).
    pub(crate) fn at_type(&self) -> Span {
        self.rc.ctype.as_ref().map_or(self.rc.span, |t| t.span)
    }

    /// Where an argument is written, else where the type is.
    pub(crate) fn arg_span(&self, key: &str) -> Span {
        self.arg(key).map_or(self.at_type(), |v| v.span)
    }

    /// The arguments as JSON (empty when absent or not a map).
    pub(crate) fn args_json(&self) -> serde_json::Map<String, serde_json::Value> {
        match self.rc.args.as_ref().map(|a| a.value.to_json()) {
            Some(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        }
    }
}

/// What the checks that need the input see: the fields and types of the first stream into the
/// component, and the whole wiring (a `join` reads several inputs).
pub struct Input<'a> {
    pub(crate) fields: Option<&'a [String]>,
    pub(crate) types: &'a [Type],
    pub(crate) streams: &'a [Stream],
    pub(crate) by_id: &'a HashMap<&'a str, &'a Component>,
}

/// A built-in component type. Everything but `name`, `summary` and `roles` has a default: a
/// bolt that takes no arguments, keeps no state, emits nothing and cannot be built.
pub trait Builtin: Sync + 'static {
    /// The name used in `type:` and the DSL.
    fn name(&self) -> &'static str;
    /// What it does, in one line (`storm run --help`).
    fn summary(&self) -> &'static str;
    fn roles(&self) -> Roles;
    /// Whether it can be placed as `kind`.
    fn can_be(&self, kind: ComponentKind) -> bool {
        match self.roles() {
            Roles::Both => true,
            Roles::Spout => kind == ComponentKind::Spout,
            Roles::Bolt => kind == ComponentKind::Bolt,
        }
    }
    /// The Storm (Flux `className`) classes that stand for it.
    fn classes(&self) -> &'static [&'static str] {
        &[]
    }
    /// Exists for Flux files' Java classes rather than to be written by name.
    fn flux_only(&self) -> bool {
        false
    }
    /// Every argument it reads, with its shape.
    fn args(&self) -> Vec<Arg> {
        Vec::new()
    }
    /// The arguments it reads in one role (a type with both roles reads different ones).
    fn args_as(&self, _kind: ComponentKind) -> Vec<Arg> {
        self.args()
    }
    /// Where the DSL puts its positional arguments.
    fn positional(&self) -> Option<Positional> {
        None
    }
    /// The grouping of a DSL edge into it that names none (shuffle when `None`).
    fn default_grouping(&self) -> Option<DefaultGrouping> {
        None
    }
    /// The arguments that name fields of its input (checked against the input's fields).
    fn field_args(&self) -> &'static [&'static str] {
        &[]
    }
    /// The input fields its arguments name, each with where it is written.
    fn named_input_fields(&self, rc: &RawComponent) -> Vec<(String, Span)> {
        let arg = |key: &str| rc.args.as_ref().and_then(|a| a.value.get(key));
        self.field_args()
            .iter()
            .filter_map(|k| arg(k))
            .flat_map(field_items)
            .collect()
    }
    /// Keeps state a checkpoint can save (`stateful: true`).
    fn keeps_state(&self) -> bool {
        false
    }
    /// Emits what it holds in bursts (every key at the end of input, a window's rows as it
    /// closes) rather than a few tuples per input. A step fused after it would queue a whole
    /// burst in memory, so such a bolt ends a chain (`model::chains`).
    fn emits_in_bursts(&self) -> bool {
        false
    }
    /// Written as `c`, a spout whose lines are read into fields on reader threads of its own
    /// (JSON, CSV, TSV): the heavy part of its work is off its executor thread, so a keyed
    /// bolt right after it, one task on each side, runs fused on that thread (`model::chains`).
    fn reads_fields_apart(&self, _c: &Component) -> bool {
        false
    }
    /// The key fields by which the bolt, written as `c` over an input with fields `input`,
    /// also takes partial counts: tuples `[key…, n]` on stream `__partial`, each standing for
    /// `n` input tuples with that key. Senders then count ahead of it (`model::partials`).
    /// `None` (the default): it takes none.
    fn partial_count_keys(&self, _c: &Component, _input: &[String]) -> Option<Vec<String>> {
        None
    }
    /// The key fields and ops by which the bolt, written as `c`, also takes partial op states:
    /// tuples `[key…, state…, unusable]` on stream `__partial`, each state one op's state over
    /// some input tuples with that key, to be merged (`aggregate::partial`). `None` (the
    /// default): it takes none.
    fn partial_ops(
        &self,
        _c: &Component,
    ) -> Option<(Vec<String>, Vec<crate::components::aggregate::ops::OpSpec>)> {
        None
    }
    /// A spout that can go back to a checkpoint's position (`Spout::position`).
    fn rewinds(&self) -> bool {
        false
    }
    /// Whether a spout written with these arguments rewinds (some do only in one mode).
    fn rewinds_with(&self, _args: &serde_json::Map<String, serde_json::Value>) -> bool {
        self.rewinds()
    }
    /// The arguments with which it rewinds, when only some do (for messages).
    fn rewinds_when(&self) -> Option<&'static str> {
        None
    }
    /// Reads the console or writes it (`stdin`, `stdout`): in a run across processes it stays
    /// in the `storm run` process.
    fn is_console(&self) -> bool {
        false
    }
    /// Writes output somewhere (a sink), placed as `kind`.
    fn writes(&self, _kind: ComponentKind) -> bool {
        false
    }
    /// Runs a program of the topology's folder (`command`, `cwd`, `finish`).
    fn runs_program(&self) -> bool {
        false
    }
    /// Ranks its keys, and with more than one task runs as partial rankings and their total
    /// (`aggregate/expand.rs`).
    fn ranks_in_parts(&self) -> bool {
        false
    }
    /// Its default stream's fields given its input's (see [`Fields`]).
    fn output_fields(&self, _c: &Component, _input: Option<&[String]>) -> Fields {
        Some(None)
    }
    /// Its other output streams and their fields.
    fn extra_streams(
        &self,
        _c: &Component,
        _input: Option<&[String]>,
    ) -> Vec<(String, Vec<String>)> {
        Vec::new()
    }
    /// The types of its default stream's fields given its input (`None`: wait for the input).
    fn field_types(&self, cx: &TypeCx) -> Option<Vec<Type>> {
        Some(cx.any())
    }
    /// Its own checks of what is written (arguments together, files, …).
    fn check(&self, _w: &mut Written) {}
    /// Its checks against its input, once the input's fields are known (or known absent).
    fn check_input(&self, _w: &mut Written, _c: &Component, _input: &Input) {}
    /// Its checks once every component is read: `taken` says whether an id is used (a
    /// component that runs as more than one needs the ids it adds free).
    fn check_placed(&self, _w: &mut Written, _c: &Component, _taken: &dyn Fn(&str) -> bool) {}
    /// A spout instance for one task.
    fn spout(&self, c: &Component, _task: u32, _base: &Path) -> anyhow::Result<Box<dyn Spout>> {
        anyhow::bail!("{}: `{}` cannot run as a spout here", c.id, self.name())
    }
    /// A bolt instance for one task (a type whose bolt takes part in checkpoints gives
    /// [`Builtin::checkpointed_bolt`] instead).
    fn bolt(&self, c: &Component, _base: &Path) -> anyhow::Result<Box<dyn Bolt>> {
        anyhow::bail!("{}: `{}` cannot run as a bolt here", c.id, self.name())
    }
    /// A bolt instance that takes part in checkpoints (keeps state, or holds its output until
    /// a commit): in a run that takes checkpoints the runtime wraps it and calls its
    /// [`CheckpointParticipant`] side; otherwise it runs as a plain bolt. `None` (the
    /// default): the type's bolt is plain, built by [`Builtin::bolt`].
    fn checkpointed_bolt(
        &self,
        _c: &Component,
        _base: &Path,
    ) -> Option<anyhow::Result<Box<dyn CheckpointParticipant>>> {
        None
    }
}

/// What the type rules see: the component, as written, its input's fields and types.
pub struct TypeCx<'a> {
    pub(crate) source: &'a str,
    pub(crate) c: &'a Component,
    pub(crate) rc: &'a RawComponent,
    /// Its default stream's fields.
    pub(crate) fields: &'a [String],
    pub(crate) input: Option<(&'a [String], &'a [Type])>,
}

impl TypeCx<'_> {
    /// Every field of unknown type.
    fn any(&self) -> Vec<Type> {
        vec![Type::Any; self.fields.len()]
    }

    /// Every field of type `t`.
    pub(crate) fn all(&self, t: Type) -> Vec<Type> {
        vec![t; self.fields.len()]
    }
}

/// The names in an argument that is one name or a list, each with where it is written.
pub(crate) fn field_items(v: &Spanned<RawValue>) -> Vec<(String, Span)> {
    let list: Vec<&Spanned<RawValue>> = match &v.value {
        RawValue::List(items) => items.iter().collect(),
        _ => vec![v],
    };
    list.into_iter()
        .filter_map(|i| Some((i.value.as_str()?.to_string(), i.span)))
        .collect()
}

/// A list of strings out of a JSON argument.
pub(crate) fn strings(v: Option<&serde_json::Value>) -> Option<Vec<String>> {
    let list = v?.as_array()?;
    Some(
        list.iter()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect(),
    )
}

/// One field named `f`, ready.
pub(crate) fn one_field(f: &str) -> Fields {
    Some(Some(vec![f.to_string()]))
}

impl ArgShape {
    /// What is wrong with `v` for this shape, if anything.
    pub(crate) fn problem(&self, v: &RawValue) -> Option<String> {
        if self.accepts(v) {
            return None;
        }
        Some(match self {
            ArgShape::Fields => "must be a non-empty list of field names".into(),
            ArgShape::Text => "must be a string".into(),
            ArgShape::Number => "must be a number ≥ 0".into(),
            ArgShape::WholeCount => "must be a whole number ≥ 1".into(),
            ArgShape::Fraction => "must be a fraction between 0 and 1".into(),
            ArgShape::Duration => "must be a duration (`100ms`, `1s`, or seconds)".into(),
            ArgShape::List => "must be a list".into(),
            ArgShape::Bool => "must be true or false".into(),
            ArgShape::Map => "must be a map".into(),
            ArgShape::OneOf(names) => format!("must be one of: {}", names.join(", ")),
            ArgShape::TextOrList => "must be a string or a list of strings".into(),
            ArgShape::Any => String::new(),
        })
    }

    fn accepts(&self, v: &RawValue) -> bool {
        let is_str = |x: &Spanned<RawValue>| matches!(x.value, RawValue::Str { .. });
        match self {
            ArgShape::Fields => {
                matches!(v, RawValue::List(l) if !l.is_empty() && l.iter().all(is_str))
            }
            ArgShape::Text => matches!(v, RawValue::Str { .. }),
            ArgShape::Number => {
                matches!(v, RawValue::Int(n) if *n >= 0)
                    || matches!(v, RawValue::Float(f) if *f >= 0.0)
            }
            ArgShape::WholeCount => matches!(v, RawValue::Int(n) if *n >= 1),
            ArgShape::Fraction => match v {
                RawValue::Int(n) => (0..=1).contains(n),
                RawValue::Float(f) => (0.0..=1.0).contains(f),
                _ => false,
            },
            ArgShape::Duration => crate::config::duration_of(&v.to_json()).is_some(),
            ArgShape::List => matches!(v, RawValue::List(_)),
            ArgShape::Bool => matches!(v, RawValue::Bool(_)),
            ArgShape::Map => matches!(v, RawValue::Map(_)),
            ArgShape::OneOf(names) => v.as_str().is_some_and(|s| names.contains(&s)),
            ArgShape::Any => true,
            ArgShape::TextOrList => match v {
                RawValue::List(l) => l.iter().all(is_str),
                other => matches!(other, RawValue::Str { .. }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_shapes() {
        assert!(ArgShape::Fraction.problem(&RawValue::Float(0.5)).is_none());
        assert!(ArgShape::Fraction.problem(&RawValue::Int(2)).is_some());
        assert!(ArgShape::Fields.problem(&RawValue::List(vec![])).is_some());
        let emit = ArgShape::OneOf(&["end", "tick"]);
        assert_eq!(
            emit.problem(&RawValue::Str {
                text: "never".into(),
                quoted: false
            }),
            Some("must be one of: end, tick".into())
        );
    }
}
