//! Argument helpers the `file` and `http` sinks share: byte sizes (`10MB`, `64KiB`, a number),
//! durations, and nested maps (`rotate`, `batch`, `sync`) whose keys are checked with a
//! did-you-mean. Errors name the argument (`rotate.size`) so validation can locate them.

use serde_json::Value as Json;
use std::time::Duration;

pub(crate) type Args = serde_json::Map<String, Json>;

/// A problem with one argument: its dotted name and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArgError {
    pub(crate) arg: String,
    pub(crate) message: String,
}

impl ArgError {
    pub(crate) fn new(arg: impl Into<String>, message: impl Into<String>) -> ArgError {
        ArgError {
            arg: arg.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.arg, self.message)
    }
}

/// A byte size: a whole number of bytes, or text with a unit (`10MB`, `64 KiB`, `1g`; decimal
/// units are powers of 1000, `i` units of 1024).
fn byte_size(v: &Json) -> Option<u64> {
    match v {
        Json::Number(n) => n.as_u64(),
        Json::String(s) => {
            let s = s.trim();
            let split = s
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(s.len());
            let (num, unit) = s.split_at(split);
            let num: f64 = num.parse().ok()?;
            let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
                "" | "b" => 1.0,
                "k" | "kb" => 1e3,
                "m" | "mb" => 1e6,
                "g" | "gb" => 1e9,
                "ki" | "kib" => 1024.0,
                "mi" | "mib" => 1024.0 * 1024.0,
                "gi" | "gib" => 1024.0 * 1024.0 * 1024.0,
                _ => return None,
            };
            let bytes = num * mult;
            (0.0..1.8e19).contains(&bytes).then_some(bytes as u64)
        }
        _ => None,
    }
}

/// The map argument `name` (empty when absent), its keys checked against `known`.
pub(crate) fn nested<'a>(
    args: &'a Args,
    name: &str,
    known: &[&str],
) -> Result<Option<&'a Args>, ArgError> {
    let Some(v) = args.get(name) else {
        return Ok(None);
    };
    let Json::Object(map) = v else {
        return Err(ArgError::new(
            name,
            format!("must be a map of {}", known.join(", ")),
        ));
    };
    for k in map.keys() {
        if !known.contains(&k.as_str()) {
            let hint = match crate::syntax::suggest::suggest(k, known.iter().copied()) {
                Some(s) => format!(" (did you mean `{s}`?)"),
                None => format!(" (known: {})", known.join(", ")),
            };
            return Err(ArgError::new(
                format!("{name}.{k}"),
                format!("unknown key{hint}"),
            ));
        }
    }
    Ok(Some(map))
}

/// `map[key]` as a byte size ≥ 1, named `name.key` in errors.
pub(crate) fn size_in(map: Option<&Args>, name: &str, key: &str) -> Result<Option<u64>, ArgError> {
    let Some(v) = map.and_then(|m| m.get(key)) else {
        return Ok(None);
    };
    match byte_size(v) {
        Some(n) if n >= 1 => Ok(Some(n)),
        _ => Err(ArgError::new(
            format!("{name}.{key}"),
            format!("must be a size ≥ 1 byte (`10MB`, `64KiB`, or bytes), not {v}"),
        )),
    }
}

/// `map[key]` as a whole number ≥ 1.
pub(crate) fn count_in(map: Option<&Args>, name: &str, key: &str) -> Result<Option<u64>, ArgError> {
    let Some(v) = map.and_then(|m| m.get(key)) else {
        return Ok(None);
    };
    match v.as_u64() {
        Some(n) if n >= 1 => Ok(Some(n)),
        _ => Err(ArgError::new(
            format!("{name}.{key}"),
            format!("must be a whole number ≥ 1, not {v}"),
        )),
    }
}

/// `map[key]` as a duration > 0.
pub(crate) fn duration_in(
    map: Option<&Args>,
    name: &str,
    key: &str,
) -> Result<Option<Duration>, ArgError> {
    let Some(v) = map.and_then(|m| m.get(key)) else {
        return Ok(None);
    };
    match crate::config::duration_of(v) {
        Some(d) if !d.is_zero() => Ok(Some(d)),
        _ => Err(ArgError::new(
            format!("{name}.{key}"),
            format!("must be a duration > 0 (`500ms`, `1m`, or seconds), not {v}"),
        )),
    }
}

/// A text argument, or an error when it is there but not text.
pub(crate) fn text<'a>(args: &'a Args, key: &str) -> Result<Option<&'a str>, ArgError> {
    match args.get(key) {
        None => Ok(None),
        Some(Json::String(s)) => Ok(Some(s)),
        Some(other) => Err(ArgError::new(key, format!("must be a string, not {other}"))),
    }
}

/// A one-of argument.
pub(crate) fn one_of<'a>(
    args: &'a Args,
    key: &str,
    names: &[&str],
) -> Result<Option<&'a str>, ArgError> {
    match text(args, key)? {
        None => Ok(None),
        Some(s) if names.contains(&s) => Ok(Some(s)),
        Some(s) => {
            let hint = crate::syntax::suggest::suggest(s, names.iter().copied())
                .map(|h| format!(" (did you mean `{h}`?)"))
                .unwrap_or_default();
            Err(ArgError::new(
                key,
                format!("is one of {}, not `{s}`{hint}", names.join(", ")),
            ))
        }
    }
}

/// Report `e` of a `kind` sink at its argument (a nested one, `rotate.size`, at its key inside
/// the map when the key is unknown, else at its value).
pub(crate) fn report(w: &mut crate::components::builtin::Written, kind: &str, e: &ArgError) {
    use crate::syntax::raw::{RawValue, Spanned};
    let mut parts = e.arg.splitn(2, '.');
    let top = w.arg(parts.next().unwrap_or(""));
    let span = match (top, parts.next()) {
        (
            Some(Spanned {
                value: RawValue::Map(entries),
                span,
            }),
            Some(inner),
        ) => entries
            .iter()
            .find(|(k, _)| k.value == inner)
            .map_or(*span, |(k, v)| match e.message.starts_with("unknown key") {
                true => k.span,
                false => v.span,
            }),
        (Some(v), _) => v.span,
        (None, _) => w.at_type(),
    };
    w.error(format!("`{kind}` sink: `{}` {}", e.arg, e.message), span);
}

/// A spout's arguments and a sink's of one type, once each, `format` accepting `formats`
/// (each role's own check refuses the other's formats).
pub(crate) fn both_roles(
    spout: Vec<crate::components::builtin::Arg>,
    sink: &[crate::components::builtin::Arg],
    formats: &'static [&'static str],
) -> Vec<crate::components::builtin::Arg> {
    use crate::components::builtin::{arg, ArgShape};
    let mut all: Vec<_> = spout
        .into_iter()
        .map(|a| match a.name {
            "format" => arg("format", ArgShape::OneOf(formats)),
            _ => a,
        })
        .collect();
    for a in sink {
        if !all.iter().any(|x| x.name == a.name) {
            all.push(*a);
        }
    }
    all
}

/// Arguments of `type_name`'s other role given to this one (`role`): an error at each name.
pub(crate) fn other_role_args(
    w: &mut crate::components::builtin::Written,
    type_name: &str,
    theirs: &[&str],
    role: &str,
    other: &str,
) {
    use crate::syntax::raw::RawValue;
    let Some(RawValue::Map(entries)) = w.rc.args.as_ref().map(|a| &a.value) else {
        return;
    };
    let wrong: Vec<(String, crate::syntax::raw::Span)> = entries
        .iter()
        .filter(|(k, _)| theirs.contains(&k.value.as_str()))
        .map(|(k, _)| (k.value.clone(), k.span))
        .collect();
    for (name, span) in wrong {
        w.error(
            format!("`{name}` is an argument of a {type_name} {other}; this one is a {role}"),
            span,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_with_units() {
        assert_eq!(byte_size(&json!(1000)), Some(1000));
        assert_eq!(byte_size(&json!("10MB")), Some(10_000_000));
        assert_eq!(byte_size(&json!("64 KiB")), Some(65536));
        assert_eq!(byte_size(&json!("1.5k")), Some(1500));
        assert_eq!(byte_size(&json!("10 parsecs")), None);
        assert_eq!(byte_size(&json!(-1)), None);
    }

    #[test]
    fn nested_keys_are_checked() {
        let args = json!({"rotate": {"sise": 10}});
        let args = args.as_object().cloned().unwrap_or_default();
        let e = nested(&args, "rotate", &["size", "records"]).err();
        assert_eq!(
            e,
            Some(ArgError::new(
                "rotate.sise",
                "unknown key (did you mean `size`?)"
            ))
        );
    }
}
