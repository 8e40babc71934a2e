//! The types of each component's default-stream fields, where the validator can know them:
//! each type's rules (`Builtin::field_types`: lines and words are strings, counts integers,
//! parsed fields what `types` names, pass-through bolts keep their input's types). Fields
//! declared with `fields:`, and types with no rules, are `Type::Any`, which expressions never
//! reject.

use crate::components::builtin::TypeCx;
use crate::expr::Type;
use crate::model::{Component, Stream, DEFAULT_STREAM};
use crate::syntax::raw::RawComponent;
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
    let fields = c.outputs.get(DEFAULT_STREAM)?;
    if rc.fields.is_some() {
        return Some(vec![Type::Any; fields.len()]);
    }
    c.ctype.field_types(&TypeCx {
        source,
        c,
        rc,
        fields,
        input,
    })
}
