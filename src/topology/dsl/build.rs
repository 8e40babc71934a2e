//! From the DSL's statements to the raw topology: component ids (explicit, or derived from the
//! type), references to components defined elsewhere, edges and their default groupings, and
//! which components are spouts.

use std::collections::HashSet;

use super::component::{component, scalar_text, set_once, string_list, suggest};
use super::grammar::{Edge, Element, Statement};
use crate::components::builtin::DefaultGrouping;
use crate::model::{ComponentKind, ComponentType};
use crate::syntax::diag::Diagnostic;
use crate::syntax::raw::{RawComponent, RawStream, RawTopology, Span, Spanned};

/// Settings inside an edge's brackets.
const EDGE_SETTINGS: &[&str] = &["stream", "name"];

fn stream(
    from: &Spanned<String>,
    edge: &Edge,
    to: &Spanned<String>,
    diags: &mut Vec<Diagnostic>,
) -> RawStream {
    let mut s = RawStream {
        span: from.span.join(to.span),
        from: Some(from.clone()),
        to: Some(to.clone()),
        grouping: edge.grouping.clone(),
        ..RawStream::default()
    };
    if let (Some(first), Some(last)) = (edge.fields.first(), edge.fields.last()) {
        s.grouping_args = Some(Spanned::new(
            edge.fields.clone(),
            first.span.join(last.span),
        ));
    }
    for setting in &edge.settings {
        let slot = match setting.key.value.as_str() {
            "stream" => &mut s.stream,
            "name" => &mut s.name,
            other => {
                let help = suggest(other, EDGE_SETTINGS)
                    .unwrap_or_else(|| "an edge takes `stream=ID` and `name=TEXT`".to_string());
                diags.push(
                    Diagnostic::error(format!("unknown edge setting `{other}`"), setting.key.span)
                        .with_help(help),
                );
                continue;
            }
        };
        match scalar_text(&setting.value.value) {
            Some(text) => set_once(
                slot,
                Spanned::new(text, setting.value.span),
                &setting.key,
                diags,
            ),
            None => diags.push(Diagnostic::error(
                format!("`{}` must be a name", setting.key.value),
                setting.value.span,
            )),
        }
    }
    s
}

/// The grouping an edge without one gets: into a type that keys its work
/// (`Builtin::default_grouping`), a fields grouping on its key fields (global when it has
/// none), so every key is counted by one task; otherwise shuffle.
fn default_grouping(s: &mut RawStream, pipe: Span, target: Option<&RawComponent>) {
    // A type that ranks all its keys in one task names no key argument: `global`.
    let key_arg = |t: &str| match ComponentType::from_name(t)?.default_grouping()? {
        DefaultGrouping::FieldsOf(arg) => Some(arg),
        DefaultGrouping::Global => Some("-"),
    };
    let count_fields = target
        .and_then(|c| Some((c, key_arg(&c.ctype.as_ref()?.value)?)))
        .map(|(c, key)| c.args.as_ref().and_then(|a| a.value.get(key)));
    let (name, args) = match count_fields {
        Some(Some(fields)) => (
            "fields",
            Some(string_list(fields, "fields", &mut Vec::new())),
        ),
        Some(None) => ("global", None),
        None => ("shuffle", None),
    };
    s.grouping = Some(Spanned::new(name.to_string(), pipe));
    if s.grouping_args.is_none() {
        s.grouping_args = args;
    }
}

/// Component ids as the pipelines are read: definitions, references, derived ids.
struct Ids<'a> {
    /// Ids written as `id = type`, anywhere in the text.
    explicit: HashSet<&'a str>,
    /// Every id taken so far (explicit ones from the start).
    used: HashSet<String>,
    /// Ids derived from types in earlier statements: a bare name refers to them.
    derived: HashSet<String>,
    /// Ids derived in the current statement (a pipeline never refers back into itself, so
    /// `stdin | split | split` is two splits, not a loop).
    derived_now: Vec<String>,
    components: Vec<RawComponent>,
}

impl<'a> Ids<'a> {
    fn new(statements: &'a [Statement]) -> Ids<'a> {
        let explicit: HashSet<&str> = statements
            .iter()
            .filter_map(|s| match s {
                Statement::Pipeline(first, rest) => {
                    Some(std::iter::once(first).chain(rest.iter().map(|(_, e)| e)))
                }
                _ => None,
            })
            .flatten()
            .filter_map(|e| e.id.as_ref().map(|id| id.value.as_str()))
            .collect();
        Ids {
            used: explicit.iter().map(|s| s.to_string()).collect(),
            explicit,
            derived: HashSet::new(),
            derived_now: Vec::new(),
            components: Vec::new(),
        }
    }

    /// The id an element stands for, defining a component unless it is a reference.
    fn resolve(&mut self, el: &Element, diags: &mut Vec<Diagnostic>) -> Spanned<String> {
        if let Some(id) = &el.id {
            self.components.push(component(el, id.clone(), diags));
            return id.clone();
        }
        let name = &el.ctype;
        let bare = el.args.is_none() && el.options.is_empty();
        let is_explicit = self.explicit.contains(name.value.as_str());
        if is_explicit || (bare && self.derived.contains(&name.value)) {
            if !bare {
                diags.push(
                    Diagnostic::error(
                        format!(
                            "`{}` names a component defined elsewhere; a reference takes no arguments or options",
                            name.value
                        ),
                        el.span,
                    )
                    .with_help("put arguments and options where the component is defined"),
                );
            }
            return name.clone();
        }
        let mut id = name.value.clone();
        let mut n = 2;
        while self.used.contains(&id) {
            id = format!("{}{n}", name.value);
            n += 1;
        }
        self.used.insert(id.clone());
        self.derived_now.push(id.clone());
        let id = Spanned::new(id, name.span);
        self.components.push(component(el, id.clone(), diags));
        id
    }

    fn end_statement(&mut self) {
        self.derived.extend(self.derived_now.drain(..));
    }
}

/// Turn statements into the raw topology, adding problems to `diags`.
pub(super) fn build(statements: &[Statement], diags: &mut Vec<Diagnostic>) -> RawTopology {
    let mut ids = Ids::new(statements);
    let mut raw = RawTopology::default();
    let mut pending: Vec<(usize, Span)> = Vec::new();

    for statement in statements {
        match statement {
            Statement::Name(n) => {
                if raw.name.is_some() {
                    diags.push(Diagnostic::error(
                        "the topology name is given twice",
                        n.span,
                    ));
                } else {
                    raw.name = Some(n.clone());
                }
            }
            Statement::Config(settings) => {
                for s in settings {
                    if raw.config.iter().any(|(k, _)| k.value == s.key.value) {
                        diags.push(Diagnostic::error(
                            format!("`{}` is set twice", s.key.value),
                            s.key.span,
                        ));
                    } else {
                        raw.config.push((s.key.clone(), s.value.clone()));
                    }
                }
            }
            Statement::Pipeline(first, rest) => {
                let mut prev = ids.resolve(first, diags);
                for (edge, el) in rest {
                    let next = ids.resolve(el, diags);
                    let s = stream(&prev, edge, &next, diags);
                    if s.grouping.is_none() {
                        pending.push((raw.streams.len(), edge.pipe));
                    }
                    raw.streams.push(s);
                    prev = next;
                }
                ids.end_statement();
            }
        }
    }
    let components = ids.components;

    for (index, pipe) in pending {
        if let Some(s) = raw.streams.get_mut(index) {
            let target = components
                .iter()
                .find(|c| c.id.as_ref().map(|i| &i.value) == s.to.as_ref().map(|t| &t.value));
            default_grouping(s, pipe, target);
        }
    }

    for c in components {
        if kind_of(&c, &raw.streams) == ComponentKind::Spout {
            raw.spouts.push(c);
        } else {
            raw.bolts.push(c);
        }
    }
    raw
}

/// Spout or bolt: by type where the type decides; otherwise (shell, unknown types) a component
/// that nothing feeds is a spout.
fn kind_of(c: &RawComponent, streams: &[RawStream]) -> ComponentKind {
    let ctype = c
        .ctype
        .as_ref()
        .and_then(|t| ComponentType::from_name(&t.value));
    match ctype {
        Some(t) if !t.can_be(ComponentKind::Bolt) => ComponentKind::Spout,
        Some(t) if !t.can_be(ComponentKind::Spout) => ComponentKind::Bolt,
        _ => {
            let id = c.id.as_ref().map(|i| i.value.as_str());
            let fed = streams
                .iter()
                .any(|s| s.to.as_ref().map(|t| t.value.as_str()) == id);
            if fed {
                ComponentKind::Bolt
            } else {
                ComponentKind::Spout
            }
        }
    }
}
