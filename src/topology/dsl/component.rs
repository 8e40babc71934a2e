//! One component as written in the DSL, into the raw form: its arguments (named, or
//! positional for the type's main argument: `count(word)`) and its options (`x4`, `tasks=8`,
//! `fields=[…]`, … named like the YAML keys).

use super::grammar::{Arg, Element, Opt, Setting};
use crate::components::builtin::Positional as Primary;
use crate::model::ComponentType;
use crate::syntax::diag::Diagnostic;
use crate::syntax::raw::{RawComponent, RawValue, Span, Spanned};

/// Component options after the type, named like the YAML keys.
const OPTIONS: &[&str] = &[
    "parallelism",
    "tasks",
    "fields",
    "streams",
    "command",
    "cwd",
    "finish",
    "stateful",
    "chain",
    "tick",
    "config",
    "args",
];

/// Where a type's positional arguments go (its descriptor says): `count(word)` is
/// `count(fields=[word])`.
fn primary(ctype: &str) -> Option<Primary> {
    ComponentType::from_name(ctype)?.positional()
}

/// "did you mean" among `candidates`.
pub(super) fn suggest(word: &str, candidates: &[&str]) -> Option<String> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(word, c), *c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| format!("did you mean `{c}`?"))
}

/// A scalar as text (`5` → "5"); `None` for null, lists and maps.
pub(super) fn scalar_text(v: &RawValue) -> Option<String> {
    match v {
        RawValue::Str { text, .. } => Some(text.clone()),
        RawValue::Int(n) => Some(n.to_string()),
        RawValue::Float(f) => Some(f.to_string()),
        RawValue::Bool(b) => Some(b.to_string()),
        RawValue::Null | RawValue::List(_) | RawValue::Map(_) => None,
    }
}

/// A list of names, or one name standing for a list of one.
pub(super) fn string_list(
    v: &Spanned<RawValue>,
    what: &str,
    diags: &mut Vec<Diagnostic>,
) -> Spanned<Vec<Spanned<String>>> {
    let items: Vec<&Spanned<RawValue>> = match &v.value {
        RawValue::List(items) => items.iter().collect(),
        _ => vec![v],
    };
    let mut out = Vec::new();
    for item in items {
        match scalar_text(&item.value) {
            Some(text) => out.push(Spanned::new(text, item.span)),
            None => diags.push(Diagnostic::error(
                format!("{what} must be names, not a nested list, map or null"),
                item.span,
            )),
        }
    }
    Spanned::new(out, v.span)
}

fn whole_number(
    v: &Spanned<RawValue>,
    key: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<Spanned<i64>> {
    match v.value {
        RawValue::Int(n) => Some(Spanned::new(n, v.span)),
        _ => {
            diags.push(Diagnostic::error(
                format!("`{key}` must be a whole number"),
                v.span,
            ));
            None
        }
    }
}

fn map_entries(
    v: &Spanned<RawValue>,
    key: &str,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(Spanned<String>, Spanned<RawValue>)> {
    match &v.value {
        RawValue::Map(entries) => entries.clone(),
        _ => {
            diags.push(
                Diagnostic::error(format!("`{key}` must be a map"), v.span)
                    .with_help(format!("write `{key}={{key: value, ...}}`")),
            );
            Vec::new()
        }
    }
}

/// Store `value` in `slot` unless it is already set.
pub(super) fn set_once<T>(
    slot: &mut Option<T>,
    value: T,
    key: &Spanned<String>,
    diags: &mut Vec<Diagnostic>,
) {
    if slot.is_some() {
        diags.push(Diagnostic::error(
            format!("`{}` is given twice", key.value),
            key.span,
        ));
    } else {
        *slot = Some(value);
    }
}

/// The args map from the parentheses: named arguments, plus positional ones under the type's
/// primary argument.
fn component_args(el: &Element, c: &mut RawComponent, diags: &mut Vec<Diagnostic>) {
    let Some((span, items)) = &el.args else {
        return;
    };
    let ctype = el.ctype.value.as_str();
    let mut entries: Vec<(Spanned<String>, Spanned<RawValue>)> = Vec::new();
    let mut positional = Vec::new();
    let mut named = Vec::new();
    for item in items {
        match item {
            Arg::Named(s) => named.push(s),
            Arg::Positional(v) => positional.push(v.clone()),
        }
    }
    if let (Some(first), Some(last)) = (positional.first(), positional.last()) {
        let all = first.span.join(last.span);
        match primary(ctype) {
            Some(Primary::List(k)) => {
                let key = Spanned::new(k.to_string(), all);
                push_entry(
                    &mut entries,
                    key,
                    Spanned::new(RawValue::List(positional), all),
                    diags,
                );
            }
            Some(Primary::One(k)) => {
                if let Some(extra) = positional.get(1) {
                    diags.push(
                        Diagnostic::error(
                            format!("`{ctype}` takes one positional argument (its `{k}`)"),
                            Span::new(extra.span.start, all.end),
                        )
                        .with_help(format!(
                            "quote text that has spaces: `{ctype}(\"len(word) > 3\")`"
                        )),
                    );
                }
                let key = Spanned::new(k.to_string(), first.span);
                push_entry(&mut entries, key, first.clone(), diags);
            }
            Some(Primary::Command) => {
                let list = Spanned::new(RawValue::List(positional), all);
                c.command = Some(string_list(&list, "a command", diags));
            }
            None if ComponentType::from_name(ctype).is_some() => diags.push(
                Diagnostic::error(format!("`{ctype}` takes no positional arguments"), all)
                    .with_help("write its arguments as `key=value`"),
            ),
            // An unknown type: validation reports the type itself.
            None => {}
        }
    }
    // Named arguments after the positional one, in the order written.
    for s in named {
        push_entry(&mut entries, s.key.clone(), s.value.clone(), diags);
    }
    if !entries.is_empty() || c.command.is_none() {
        c.args = Some(Spanned::new(RawValue::Map(entries), *span));
    }
}

fn push_entry(
    entries: &mut Vec<(Spanned<String>, Spanned<RawValue>)>,
    key: Spanned<String>,
    value: Spanned<RawValue>,
    diags: &mut Vec<Diagnostic>,
) {
    if entries.iter().any(|(k, _)| k.value == key.value) {
        diags.push(Diagnostic::error(
            format!("argument `{}` is given twice", key.value),
            key.span,
        ));
    } else {
        entries.push((key, value));
    }
}

fn component_option(s: &Setting, c: &mut RawComponent, diags: &mut Vec<Diagnostic>) {
    let key = &s.key;
    let v = &s.value;
    match key.value.as_str() {
        "parallelism" => {
            if let Some(n) = whole_number(v, "parallelism", diags) {
                set_once(&mut c.parallelism, n, key, diags);
            }
        }
        "tasks" => {
            if let Some(n) = whole_number(v, "tasks", diags) {
                set_once(&mut c.tasks, n, key, diags);
            }
        }
        "fields" => {
            let list = string_list(v, "fields", diags);
            set_once(&mut c.fields, list, key, diags);
        }
        "streams" => {
            if !c.streams.is_empty() {
                diags.push(Diagnostic::error("`streams` is given twice", key.span));
            }
            for (name, fields) in map_entries(v, "streams", diags) {
                let list = string_list(&fields, "stream fields", diags);
                c.streams.push((name, list.value));
            }
        }
        "command" => {
            let list = string_list(v, "a command", diags);
            set_once(&mut c.command, list, key, diags);
        }
        "cwd" => match scalar_text(&v.value) {
            Some(text) => set_once(&mut c.cwd, Spanned::new(text, v.span), key, diags),
            None => diags.push(Diagnostic::error("`cwd` must be a path", v.span)),
        },
        "tick" => set_once(&mut c.tick, v.clone(), key, diags),
        "finish" => set_once(&mut c.finish, v.clone(), key, diags),
        "stateful" => set_once(&mut c.stateful, v.clone(), key, diags),
        "chain" => set_once(&mut c.chain, v.clone(), key, diags),
        "config" => c.config.extend(map_entries(v, "config", diags)),
        "args" => {
            if c.args.is_some() {
                diags.push(Diagnostic::error(
                    "arguments are given both in parentheses and with `args=`",
                    key.span,
                ));
            } else if matches!(v.value, RawValue::Map(_)) {
                c.args = Some(v.clone());
            } else {
                map_entries(v, "args", diags);
            }
        }
        other => {
            let mut d = Diagnostic::error(format!("unknown option `{other}`"), key.span);
            d = d.with_help(suggest(other, OPTIONS).unwrap_or_else(|| {
                format!("options are `x4` (parallelism) and {}", OPTIONS.join(", "))
            }));
            diags.push(d);
        }
    }
}

pub(super) fn component(
    el: &Element,
    id: Spanned<String>,
    diags: &mut Vec<Diagnostic>,
) -> RawComponent {
    let mut c = RawComponent {
        span: el.span,
        id: Some(id),
        ctype: Some(el.ctype.clone()),
        ..RawComponent::default()
    };
    component_args(el, &mut c, diags);
    for opt in &el.options {
        match opt {
            Opt::Parallelism(p) => {
                let key = Spanned::new("parallelism".to_string(), p.span);
                set_once(&mut c.parallelism, p.clone(), &key, diags);
            }
            Opt::Setting(s) => component_option(s, &mut c, diags),
        }
    }
    c
}
