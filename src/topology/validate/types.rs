//! The types of each component's default-stream fields, where the validator can know them:
//! lines and words are strings, counts are integers, `parse` (and `stdin`/`file` with
//! `format:`) gives the types its `types` names (and `combined`'s `status` and `bytes`),
//! pass-through bolts (and `lookup`, for the fields it passes on) keep their input's types and
//! `map` computes its own. Everything else (shell components, `generate`, fields
//! declared with `fields:`) is `Type::Any`, which expressions never reject.

use super::map::walk;
use crate::expr::Type;
use crate::topology::model::{Component, ComponentType, Stream, DEFAULT_STREAM};
use crate::topology::raw::RawComponent;
use std::collections::HashMap;

/// Field types by component id, aligned with its default stream's fields.
pub(super) type Types = HashMap<String, Vec<Type>>;

/// Resolve the types of every component whose default-stream fields are known.
pub(super) fn resolve(
    source: &str,
    components: &[(Component, &RawComponent)],
    streams: &[Stream],
) -> Types {
    let mut first_input: HashMap<&str, &Stream> = HashMap::new();
    for s in streams {
        first_input.entry(s.to.as_str()).or_insert(s);
    }
    let index: HashMap<&str, usize> = components
        .iter()
        .enumerate()
        .map(|(i, (c, _))| (c.id.as_str(), i))
        .collect();
    let mut types = Types::new();
    // Each pass resolves at least one more component or stops: a chain of n components
    // takes at most n passes.
    for _ in 0..=components.len() {
        let before = types.len();
        for (c, rc) in components {
            if types.contains_key(&c.id) {
                continue;
            }
            let input = first_input.get(c.id.as_str()).and_then(|s| {
                let (from, _) = &components[*index.get(s.from.as_str())?];
                let fields = from.outputs.get(&s.stream)?;
                let t = match types.get(&from.id) {
                    Some(t) if s.stream == DEFAULT_STREAM => t.clone(),
                    // Not resolved yet (or never: then the fields stay untyped).
                    None if s.stream == DEFAULT_STREAM => return None,
                    _ => vec![Type::Any; fields.len()],
                };
                Some((fields.clone(), t))
            });
            let input = input.as_ref().map(|(f, t)| (f.as_slice(), t.as_slice()));
            if let Some(t) = of(source, c, rc, input) {
                types.insert(c.id.clone(), t);
            }
        }
        if types.len() == before {
            break;
        }
    }
    types
}

/// The types of `c`'s default-stream fields given its input; `None` to wait for the input.
fn of(
    source: &str,
    c: &Component,
    rc: &RawComponent,
    input: Option<(&[String], &[Type])>,
) -> Option<Vec<Type>> {
    use ComponentType::*;
    let fields = c.outputs.get(DEFAULT_STREAM)?;
    let any = || vec![Type::Any; fields.len()];
    if rc.fields.is_some() {
        return Some(any());
    }
    Some(match c.ctype {
        Stdin | File | Parse if c.ctype == Parse || c.args.contains_key("format") => {
            parsed(c, fields.len())
        }
        Stdin | File | Split | TestWordSpout => vec![Type::Str; fields.len()],
        TestWordCounter => vec![Type::Str, Type::Int],
        Count => {
            let (names, types) = input?;
            let type_of = |f: &String| {
                let k = names.iter().position(|n| n == f)?;
                types.get(k).copied()
            };
            // The key fields, then `count`.
            let last = fields.len().saturating_sub(1);
            (0..fields.len())
                .map(|k| match k == last {
                    true => Type::Int,
                    false => type_of(&fields[k]).unwrap_or(Type::Any),
                })
                .collect()
        }
        Filter | Chaos | Dedupe => input?.1.to_vec(),
        // The input fields, then the looked-up columns (text of unknown kind, or null).
        Lookup => {
            let mut t = input?.1.to_vec();
            t.resize(fields.len(), Type::Any);
            t
        }
        Map => {
            let (out, _) = walk(source, rc, &c.args, Some(input?));
            out.into_iter().map(|(_, t)| t).collect()
        }
        // A window's bounds are RFC 3339 text (`parse_time` makes them numbers again).
        Aggregate | Top | Join => fields
            .iter()
            .map(|f| match f.as_str() {
                "window_start" | "window_end" if c.ctype != Join => Type::Str,
                _ => Type::Any,
            })
            .collect(),
        _ => any(),
    })
}

/// The types of a parsing component's fields: those it converts to; the others as read,
/// which is not known here (a JSON value may be anything).
fn parsed(c: &Component, count: usize) -> Vec<Type> {
    use crate::components::parse::types::FieldType;
    let Ok(spec) = crate::components::parse::spec::Spec::from_args(&c.args) else {
        return vec![Type::Any; count];
    };
    spec.outputs
        .iter()
        .map(|(_, t)| match t {
            Some(FieldType::Int) => Type::Int,
            Some(FieldType::Float) => Type::Float,
            Some(FieldType::Str) => Type::Str,
            Some(FieldType::Bool) => Type::Bool,
            None => Type::Any,
        })
        .collect()
}
