//! Validation of a `map`: each `set` expression is checked against the fields (and their
//! types) as the entries before it left them, with errors located inside the expression in the
//! file; `rename`, `keep` and `drop` must name fields that are there at their step; the
//! output must name each field once. The same walk gives the output fields' types.

use super::{Spec, Step, Visitor};
use crate::components::builtin::Written;
use crate::expr::Type;
use crate::syntax::diag::Diagnostic;
use crate::syntax::raw::{RawComponent, RawValue, Spanned};
use crate::syntax::suggest::suggest;

/// The `set`, `rename`, `keep` and `drop` entries as written, in `Spec`'s order.
#[derive(Default)]
struct Entries<'r> {
    set: Vec<&'r (Spanned<String>, Spanned<RawValue>)>,
    rename: Vec<&'r (Spanned<String>, Spanned<RawValue>)>,
    keep: Vec<&'r Spanned<RawValue>>,
    drop: Vec<&'r Spanned<RawValue>>,
}

fn entries<'r>(
    args: &'r RawValue,
    key: &str,
    keep: fn(&RawValue) -> bool,
) -> Vec<&'r (Spanned<String>, Spanned<RawValue>)> {
    match args.get(key).map(|v| &v.value) {
        Some(RawValue::Map(e)) => e.iter().filter(|(_, v)| keep(&v.value)).collect(),
        _ => Vec::new(),
    }
}

fn items<'r>(args: &'r RawValue, key: &str) -> Vec<&'r Spanned<RawValue>> {
    match args.get(key).map(|v| &v.value) {
        Some(RawValue::List(l)) => l.iter().filter(|v| v.value.as_str().is_some()).collect(),
        _ => Vec::new(),
    }
}

fn is_scalar(v: &RawValue) -> bool {
    !matches!(v, RawValue::List(_) | RawValue::Map(_))
}

/// Checks each step as `Spec::apply` takes it, collecting located diagnostics.
struct Walk<'a> {
    source: &'a str,
    written: Entries<'a>,
    /// Whether the input fields are known (else names are not checked).
    known: bool,
    diags: Vec<Diagnostic>,
}

impl Visitor<Type> for Walk<'_> {
    fn set(&mut self, k: usize, expr: &str, current: &[(String, Type)]) -> Type {
        let names: Vec<String> = current.iter().map(|(n, _)| n.clone()).collect();
        let types: Vec<Type> = current.iter().map(|(_, t)| *t).collect();
        let (ty, errors) = match crate::expr::parse(expr) {
            Ok(e) => e.check_value(self.known.then_some(names.as_slice()), &types),
            Err(e) => (Type::Any, vec![e]),
        };
        let Some((name, value)) = self.written.set.get(k) else {
            return ty;
        };
        for e in errors {
            let span = crate::expr::source_span(self.source, value.span, e.span);
            let mut d = Diagnostic::error(
                format!("in map expression `{}`: {}", name.value, e.message),
                span,
            );
            d.help = e.help;
            self.diags.push(d);
        }
        // A null literal says nothing about later values.
        if ty == Type::Null {
            Type::Any
        } else {
            ty
        }
    }

    fn missing(&mut self, step: Step, k: usize, name: &str, current: &[(String, Type)]) {
        if !self.known {
            return;
        }
        let (span, verb) = match step {
            Step::Rename => (self.written.rename.get(k).map(|(n, _)| n.span), "rename"),
            Step::Keep => (self.written.keep.get(k).map(|v| v.span), "keep"),
            Step::Drop => (self.written.drop.get(k).map(|v| v.span), "drop"),
        };
        let Some(span) = span else { return };
        let names: Vec<&str> = current.iter().map(|(n, _)| n.as_str()).collect();
        let help = match suggest(name, names.iter().copied()) {
            Some(s) => format!("did you mean `{s}`? the fields here: {}", names.join(", ")),
            None => format!("the fields here: {}", names.join(", ")),
        };
        self.diags
            .push(Diagnostic::error(format!("no field `{name}` to {verb}"), span).with_help(help));
    }
}

/// The output fields of a `map` with their types, and every problem with its arguments.
/// `input` is the input fields and their types, when known.
pub(crate) fn walk(
    source: &str,
    rc: &RawComponent,
    args: &serde_json::Map<String, serde_json::Value>,
    input: Option<(&[String], &[Type])>,
) -> (Vec<(String, Type)>, Vec<Diagnostic>) {
    let Some(raw) = rc.args.as_ref() else {
        return (Vec::new(), Vec::new());
    };
    let written = Entries {
        set: entries(&raw.value, "set", is_scalar),
        rename: entries(&raw.value, "rename", |v| v.as_str().is_some()),
        keep: items(&raw.value, "keep"),
        drop: items(&raw.value, "drop"),
    };
    let mut diags = Vec::new();
    for (name, value) in entries(&raw.value, "set", |v| !is_scalar(v)) {
        diags.push(Diagnostic::error(
            format!("`set.{}` must be an expression", name.value),
            value.span,
        ));
    }
    let mut w = Walk {
        source,
        written,
        known: input.is_some(),
        diags,
    };
    let fields = input.map_or(Vec::new(), |(names, types)| {
        names
            .iter()
            .enumerate()
            .map(|(k, n)| (n.clone(), types.get(k).copied().unwrap_or(Type::Any)))
            .collect()
    });
    let out = Spec::from_args(args).apply(fields, &mut w);
    (out, w.diags)
}

/// Check a `map`'s arguments against its input (fields and types, when known).
pub(super) fn check(w: &mut Written, input: Option<(&[String], &[Type])>) {
    let at = w.at_type();
    let args = w.args_json();
    // Unknown argument names are reported on their own; this is for a map with none.
    if args.is_empty() {
        w.error("map without `set`, `rename`, `keep` or `drop`", at)
            .help = Some("e.g. `args: { set: { total: \"price * quantity\" } }`".into());
        return;
    }
    let (out, diags) = walk(w.text, w.rc, &args, input);
    w.diags.extend(diags);
    if input.is_none() {
        return;
    }
    let span = w.rc.args.as_ref().map_or(at, |a| a.span);
    for (k, (name, _)) in out.iter().enumerate() {
        if out[..k].iter().any(|(n, _)| n == name) {
            w.error(format!("the map's output has field `{name}` twice"), span);
        }
    }
    if out.is_empty() {
        w.error("the map leaves no fields", span);
    }
}
