//! `storm validate`'s checks of the `jdbc` and `jdbc_lookup` arguments, offline (no server is
//! asked): the connection string's syntax, SQL names, `on_conflict` among `columns`, `params`
//! against the query's `$n`, the arguments of the other role; each located at the argument at
//! fault. The fields `columns` and `params` name are checked against the input by the
//! validator, with a did-you-mean, through [`named_input_fields`].

use super::args::{self, Args, Problem};
use crate::syntax::diag::Span;
use crate::syntax::raw::{RawComponent, RawValue, Spanned};

/// Which of the three a component is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Role {
    Sink,
    Lookup,
    Spout,
}

/// What is wrong with the arguments, without their spans.
fn problems(a: &Args, role: Role) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut note = |r: Result<(), Problem>| out.extend(r.err());
    note(args::url(a).map(drop));
    note(args::retry(a).map(drop));
    match role {
        Role::Sink => {
            note(args::sql_name(a, "table", true).map(drop));
            match args::columns(a) {
                Ok(c) => note(args::on_conflict(a, &c).map(drop)),
                Err(p) => note(Err(p)),
            }
            note(args::batch(a, 500).map(drop));
            if a.contains_key("commits_table") {
                note(args::sql_name(a, "commits_table", true).map(drop));
            }
        }
        Role::Lookup => {
            if let Err(e) = super::lookup::JdbcLookup::new(a) {
                let arg = match () {
                    _ if e.contains("`params`") => Some("params"),
                    _ if e.contains("`select`") => Some("select"),
                    _ if e.contains("`query`") => Some("query"),
                    _ if e.contains("`missing`") => Some("missing"),
                    _ => None,
                };
                note(Err((arg, e)));
            }
            note(super::lookup::cache_of(a).map(drop));
        }
        Role::Spout => {
            note(super::spout::queries(a, 1).map(drop));
            note(args::batch(a, 1000).map(drop));
            if a.get("poll")
                .is_some_and(|v| crate::config::duration_of(v).is_none())
            {
                note(Err((
                    Some("poll"),
                    "`poll` must be a duration (`1s`)".into(),
                )));
            }
        }
    }
    out.dedup();
    out
}

/// Each problem with where it is: at the argument, else the arguments, else the type.
pub(crate) fn check(rc: &RawComponent, role: Role) -> Vec<(String, Span)> {
    let at_type = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
    let Some(raw) = &rc.args else {
        let name = if role == Role::Lookup {
            "jdbc_lookup"
        } else {
            "jdbc"
        };
        return vec![(
            format!("`{name}` needs `url` and its other arguments"),
            at_type,
        )];
    };
    let serde_json::Value::Object(json) = raw.value.to_json() else {
        return vec![("`args` must be a map".into(), raw.span)];
    };
    let mut out = wrong_role(raw, role);
    for (arg, message) in problems(&json, role) {
        let span = arg
            .and_then(|a| raw.value.get(a))
            .map_or(raw.span, |v| v.span);
        out.push((message, span));
    }
    if role == Role::Spout && rc.parallelism.as_ref().is_some_and(|p| p.value > 1) {
        let span = rc.parallelism.as_ref().map_or(at_type, |p| p.span);
        out.push((
            "a `jdbc` spout reads with one task: parallelism 1".into(),
            span,
        ));
    }
    out
}

/// Arguments of the sink given to a spout, and the other way round.
fn wrong_role(raw: &Spanned<RawValue>, role: Role) -> Vec<(String, Span)> {
    let (mine, theirs, other) = match role {
        Role::Sink => (args::SINK_ARGS, args::SPOUT_ARGS, "spout"),
        Role::Spout => (args::SPOUT_ARGS, args::SINK_ARGS, "sink"),
        Role::Lookup => return Vec::new(),
    };
    let RawValue::Map(entries) = &raw.value else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|(k, _)| !mine.contains(&k.value.as_str()) && theirs.contains(&k.value.as_str()))
        .map(|(k, _)| {
            (
                format!(
                    "`{}` is an argument of a jdbc {other}; this one is a {}",
                    k.value,
                    if other == "spout" { "sink" } else { "spout" }
                ),
                k.span,
            )
        })
        .collect()
}

/// The input fields the arguments name: a sink's `columns` (a name, or the field of a
/// `{column: field}`), a lookup's `params`.
pub(crate) fn named_input_fields(rc: &RawComponent, role: Role) -> Vec<(String, Span)> {
    let key = match role {
        Role::Sink => "columns",
        Role::Lookup => "params",
        Role::Spout => return Vec::new(),
    };
    let Some(v) = rc.args.as_ref().and_then(|a| a.value.get(key)) else {
        return Vec::new();
    };
    let items: Vec<&Spanned<RawValue>> = match &v.value {
        RawValue::List(items) => items.iter().collect(),
        _ => vec![v],
    };
    items
        .into_iter()
        .filter_map(|i| match &i.value {
            RawValue::Str { text, .. } => Some((text.clone(), i.span)),
            RawValue::Map(m) if m.len() == 1 => {
                let f = &m[0].1;
                f.value.as_str().map(|t| (t.to_string(), f.span))
            }
            _ => None,
        })
        .collect()
}
