//! Validation: `RawTopology` → `model::Topology` in one pass that collects every error and
//! warning, each located in the source (SPEC §3's checks, and every §2 configuration rule).
//! Flux checks these one at a time at submit time; we report them all at once.

use super::raw::{RawComponent, RawStream, RawTopology, RawValue, Span, Spanned};
use super::yaml::suggest;
use crate::config::{layers, rules, Config, Origin};
use crate::diag::{Diagnostic, Severity};
use crate::topology::model::{
    Component, ComponentKind, ComponentType, Grouping, Stream, Topology, DEFAULT_STREAM,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

mod outputs;

/// What validation needs besides the raw topology.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    /// The source text the spans point into.
    pub text: &'a str,
    /// The file name as origins show it (`<-e>` for inline text).
    pub path: PathBuf,
    /// Folder of the topology file (shell components' default working directory).
    pub base_dir: PathBuf,
    /// `-c KEY=VALUE` overrides.
    pub overrides: &'a [String],
    /// The name when the source gives none (DSL text may omit it; YAML must not).
    pub default_name: Option<String>,
}

/// A validated topology and its warnings, or every diagnostic (at least one error).
pub fn validate(
    raw: RawTopology,
    ctx: &Context,
) -> Result<(Topology, Vec<Diagnostic>), Vec<Diagnostic>> {
    let mut v = Validator {
        diags: raw.diagnostics.clone(),
        ctx,
        declared: HashMap::new(),
    };
    let name = v.name(&raw);
    let config = v.config(&raw);
    let mut components = Vec::new();
    for (kind, list) in [
        (ComponentKind::Spout, &raw.spouts),
        (ComponentKind::Bolt, &raw.bolts),
    ] {
        for rc in list {
            if let Some(c) = v.component(rc, kind) {
                components.push((c, rc));
            }
        }
    }
    let streams = v.streams(&raw.streams, &mut components);
    let targets: HashSet<&str> = raw
        .streams
        .iter()
        .filter_map(|s| s.to.as_ref().map(|t| t.value.as_str()))
        .collect();
    v.connectivity(&components, &streams, &targets);
    for (c, rc) in &components {
        if c.ctype == ComponentType::Filter {
            let input = first_input_fields(&components, &streams, &c.id);
            v.filter_expression(rc, input.as_deref());
        }
    }
    let (errors, warnings): (Vec<_>, Vec<_>) = v.diags.into_iter().partition(|d| d.is_error());
    if !errors.is_empty() {
        let mut all = errors;
        all.extend(warnings);
        all.sort_by_key(|d| d.span.map_or(0, |s| s.start));
        return Err(all);
    }
    let topology = Topology {
        name: name.unwrap_or_default(),
        config,
        components: components.into_iter().map(|(c, _)| c).collect(),
        streams,
        base_dir: ctx.base_dir.clone(),
    };
    Ok((topology, warnings))
}

/// The fields arriving at a component on its first input stream, once known.
fn first_input_fields(
    components: &[(Component, &RawComponent)],
    streams: &[Stream],
    id: &str,
) -> Option<Vec<String>> {
    let s = streams.iter().find(|s| s.to == id)?;
    let from = components.iter().find(|(c, _)| c.id == s.from)?;
    from.0.outputs.get(&s.stream).cloned()
}

struct Validator<'a> {
    diags: Vec<Diagnostic>,
    ctx: &'a Context<'a>,
    /// Every id written, valid component or not, so one mistake does not cascade.
    declared: HashMap<String, ComponentKind>,
}

impl Validator<'_> {
    fn error(&mut self, message: impl Into<String>, span: Span) -> &mut Diagnostic {
        self.diags.push(Diagnostic::error(message, span));
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }

    fn name(&mut self, raw: &RawTopology) -> Option<String> {
        let Some(name) = &raw.name else {
            if let Some(default) = &self.ctx.default_name {
                return Some(default.clone());
            }
            self.error("the topology has no `name`", Span::new(0, 0))
                .help = Some("add `name: my-topology` (letters, digits, '-', '_')".into());
            return None;
        };
        let ok = !name.value.is_empty()
            && name
                .value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            self.error(format!("bad topology name `{}`", name.value), name.span)
                .help = Some("a name has letters, digits, '-' and '_' only".into());
        }
        Some(name.value.clone())
    }

    /// Layer the configuration and check every §2 rule, locating what the file wrote.
    fn config(&mut self, raw: &RawTopology) -> Config {
        let mut config = layers::defaults();
        if let Err(e) = layers::apply_user_file(&mut config) {
            self.diags.push(Diagnostic::unlocated(Severity::Error, e));
        }
        let path = self.ctx.path.clone();
        layers::apply_entries(&mut config, &raw.config, self.ctx.text, |line| {
            Origin::Topology {
                path: path.clone(),
                line,
            }
        });
        if let Err(errors) = layers::apply_overrides(&mut config, self.ctx.overrides) {
            for e in errors {
                self.diags.push(Diagnostic::unlocated(Severity::Error, e));
            }
        }
        let span_of = |key: &str| raw.config.iter().find(|(k, _)| k.value == key);
        for violation in rules::check(&config) {
            let message = format!("`{}` {}", violation.key, violation.message);
            match (&violation.origin, span_of(&violation.key)) {
                (Origin::Topology { .. }, Some((_, value))) => {
                    self.diags.push(Diagnostic::error(message, value.span));
                }
                (origin, _) => self.diags.push(Diagnostic::unlocated(
                    Severity::Error,
                    format!("{message} (set in {})", layers::describe(origin)),
                )),
            }
        }
        for (key, suggestion) in layers::unknown_topology_keys(&config) {
            let message = format!("unknown configuration key `{key}`");
            let mut d = match span_of(&key) {
                Some((k, _)) => Diagnostic::warning(message, k.span),
                None => Diagnostic::unlocated(Severity::Warning, message),
            };
            if let Some(s) = suggestion {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            self.diags.push(d);
        }
        rules::normalize(&mut config);
        config
    }

    fn component(&mut self, rc: &RawComponent, kind: ComponentKind) -> Option<Component> {
        let what = if kind == ComponentKind::Spout {
            "spout"
        } else {
            "bolt"
        };
        let id = match &rc.id {
            None => {
                self.error(format!("a {what} without `id`"), rc.span);
                None
            }
            Some(id) if id.value.starts_with("__") => {
                self.error(format!("id `{}` starts with `__`", id.value), id.span)
                    .help =
                    Some("ids starting with `__` are reserved for system components".into());
                None
            }
            Some(id) if id.value.is_empty() => {
                self.error("empty id", id.span);
                None
            }
            Some(id) => {
                if self.declared.contains_key(&id.value) {
                    self.error(format!("duplicate id `{}`", id.value), id.span)
                        .help = Some("ids are unique across spouts and bolts".into());
                    None
                } else {
                    self.declared.insert(id.value.clone(), kind);
                    Some(id.value.clone())
                }
            }
        };
        let ctype = self.component_type(rc, kind, what);
        let parallelism = self.count(&rc.parallelism, "parallelism").unwrap_or(1);
        let tasks = self.count(&rc.tasks, "tasks").unwrap_or(parallelism);
        if let Some(t) = &rc.tasks {
            if t.value >= 1 && (t.value as u64) < u64::from(parallelism) {
                self.error(
                    format!(
                        "`tasks` ({}) is less than `parallelism` ({parallelism})",
                        t.value
                    ),
                    t.span,
                )
                .help = Some("each executor runs at least one task".into());
            }
        }
        if ctype == Some(ComponentType::Shell) {
            match &rc.command {
                None => {
                    let at = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
                    self.error("shell component without `command`", at).help =
                        Some("add `command: [program, args...]`".into());
                }
                Some(c) if c.value.is_empty() => {
                    self.error("`command` is empty", c.span);
                }
                _ => {}
            }
        }
        if ctype == Some(ComponentType::File)
            && rc.args.as_ref().and_then(|a| a.value.get("path")).is_none()
        {
            let at = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
            self.error("file spout without `args.path`", at);
        }
        if let Some(t) = ctype {
            self.args_shape(rc, t);
        }
        if let (Some(c), false) = (&rc.command, ctype.is_none_or(|t| t == ComponentType::Shell)) {
            self.diags.push(Diagnostic::warning(
                "`command` is only used by shell components; ignored",
                c.span,
            ));
        }
        for (k, v) in &rc.config {
            if let Err(e) = rules::check_value(&k.value, &v.value.to_json()) {
                self.error(format!("`{}` {e}", k.value), v.span);
            }
        }
        let tick = rc.tick.as_ref().and_then(|t| self.tick(t));
        let (id, ctype) = (id?, ctype?);
        let args = match rc.args.as_ref().map(|a| a.value.to_json()) {
            Some(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        Some(Component {
            id,
            kind,
            ctype,
            args,
            parallelism,
            tasks,
            outputs: BTreeMap::new(),
            command: rc
                .command
                .as_ref()
                .map(|c| c.value.iter().map(|s| s.value.clone()).collect()),
            cwd: rc.cwd.as_ref().map(|c| self.ctx.base_dir.join(&c.value)),
            tick,
            config: rc
                .config
                .iter()
                .map(|(k, v)| (k.value.clone(), v.value.to_json()))
                .collect(),
        })
    }

    fn component_type(
        &mut self,
        rc: &RawComponent,
        kind: ComponentKind,
        what: &str,
    ) -> Option<ComponentType> {
        let Some(t) = &rc.ctype else {
            // A Flux class already rejected inside this entry says enough.
            let inside = |s: Span| s.start >= rc.span.start && s.end <= rc.span.end;
            if !self
                .diags
                .iter()
                .any(|d| d.is_error() && d.span.is_some_and(inside))
            {
                let at = rc.id.as_ref().map_or(rc.span, |i| i.span);
                self.error(format!("{what} without `type`"), at);
            }
            return None;
        };
        let Some(ctype) = ComponentType::from_name(&t.value) else {
            let names: Vec<&str> = ComponentType::ALL
                .iter()
                .filter(|c| c.can_be(kind))
                .map(|c| c.name())
                .collect();
            let help = match suggest(&t.value, names.iter().copied()) {
                Some(s) => format!(
                    "did you mean `{s}`? known {what} types: {}",
                    names.join(", ")
                ),
                None => format!("known {what} types: {}", names.join(", ")),
            };
            self.error(format!("unknown component type `{}`", t.value), t.span)
                .help = Some(help);
            return None;
        };
        if !ctype.can_be(kind) {
            let (is, isnt) = if kind == ComponentKind::Spout {
                ("bolt", "spout")
            } else {
                ("spout", "bolt")
            };
            self.error(
                format!("`{}` is a {is} type, used as a {isnt}", t.value),
                t.span,
            )
            .help = Some(format!("move it under `{is}s:`"));
            return None;
        }
        Some(ctype)
    }

    /// The arguments the built-ins read must have the right shape (SPEC §4).
    fn args_shape(&mut self, rc: &RawComponent, ctype: ComponentType) {
        use ComponentType::*;
        let Some(args) = &rc.args else { return };
        let RawValue::Map(entries) = &args.value else {
            return; // already reported by the reader
        };
        for (k, v) in entries {
            let expect = match (ctype, k.value.as_str()) {
                (Count | Generate, "fields") => ArgShape::Fields,
                (Split, "field" | "separator") | (File, "path") | (Filter, "where") => {
                    ArgShape::Text
                }
                (Count, "emit") => ArgShape::OneOf(&["end", "tick", "update"]),
                (Generate, "count" | "rate") | (Chaos, "seed") => ArgShape::Number,
                (Chaos, "fail" | "drop") => ArgShape::Fraction,
                (Chaos, "delay") => ArgShape::Duration,
                (Generate, "values") => ArgShape::List,
                _ => continue,
            };
            if let Some(problem) = expect.problem(&v.value) {
                self.error(format!("`args.{}` {problem}", k.value), v.span);
            }
        }
    }

    fn count(&mut self, v: &Option<Spanned<i64>>, what: &str) -> Option<u32> {
        let v = v.as_ref()?;
        match u32::try_from(v.value) {
            Ok(n) if n >= 1 => Some(n),
            _ => {
                self.error(
                    format!("`{what}` must be at least 1 (got {})", v.value),
                    v.span,
                );
                None
            }
        }
    }

    fn tick(&mut self, t: &Spanned<RawValue>) -> Option<Duration> {
        match crate::config::duration_of(&t.value.to_json()) {
            Some(d) if d >= Duration::from_secs(1) => Some(d),
            _ => {
                self.error(
                    "`tick` must be a duration of at least 1s (`10s`, `1m`, or seconds)",
                    t.span,
                );
                None
            }
        }
    }

    fn streams(
        &mut self,
        raw: &[RawStream],
        components: &mut [(Component, &RawComponent)],
    ) -> Vec<Stream> {
        let mut ids: Vec<String> = self.declared.keys().cloned().collect();
        ids.sort();
        let mut streams = Vec::new();
        let mut checks = Vec::new();
        for rs in raw {
            let from = self.endpoint(&rs.from, "from", rs.span, &ids);
            let to = self.endpoint(&rs.to, "to", rs.span, &ids);
            if let (Some(to_id), Some(to)) = (&to, &rs.to) {
                if self.declared.get(to_id) == Some(&ComponentKind::Spout) {
                    self.error(
                        format!("spout `{to_id}` cannot be a stream's `to`"),
                        to.span,
                    )
                    .help = Some("spouts have no inputs; only bolts receive streams".into());
                }
            }
            let grouping = self.grouping(rs);
            let stream = rs
                .stream
                .as_ref()
                .map_or(DEFAULT_STREAM.to_string(), |s| s.value.clone());
            if let (Some(from), Some(to), Some(grouping)) = (from, to, grouping) {
                checks.push((streams.len(), rs));
                streams.push(Stream {
                    from,
                    to,
                    stream,
                    grouping,
                    name: rs.name.as_ref().map(|n| n.value.clone()),
                });
            }
        }
        let unresolved = outputs::resolve(components, &streams);
        for (i, rs) in checks {
            if !unresolved.contains(&streams[i].from) {
                self.stream_fields(&streams[i], rs, components);
            }
        }
        streams
    }

    fn endpoint(
        &mut self,
        v: &Option<Spanned<String>>,
        key: &str,
        stream_span: Span,
        ids: &[String],
    ) -> Option<String> {
        let Some(v) = v else {
            self.error(format!("stream without `{key}`"), stream_span);
            return None;
        };
        if ids.contains(&v.value) {
            return Some(v.value.clone());
        }
        let d = self.error(
            format!("unknown component `{}` in stream `{key}`", v.value),
            v.span,
        );
        d.help = suggest(&v.value, ids.iter().map(String::as_str))
            .map(|s| format!("did you mean `{s}`?"));
        None
    }

    fn grouping(&mut self, rs: &RawStream) -> Option<Grouping> {
        let Some(g) = &rs.grouping else {
            return Some(Grouping::Shuffle);
        };
        let norm = g.value.to_ascii_lowercase().replace('_', "");
        let args = || {
            rs.grouping_args
                .as_ref()
                .map(|a| a.value.iter().map(|f| f.value.clone()).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let grouping = match norm.as_str() {
            "shuffle" => Grouping::Shuffle,
            "all" => Grouping::All,
            "global" => Grouping::Global,
            "none" => Grouping::None,
            "direct" => Grouping::Direct,
            "localorshuffle" => Grouping::LocalOrShuffle,
            "fields" | "partialkey" => {
                if args().is_empty() {
                    let at = rs.grouping_args.as_ref().map_or(g.span, |a| a.span);
                    self.error(
                        format!("`{}` grouping needs field names in `args`", g.value),
                        at,
                    );
                    return None;
                }
                if norm == "fields" {
                    Grouping::Fields(args())
                } else {
                    Grouping::PartialKey(args())
                }
            }
            _ => {
                let d = self.error(format!("unknown grouping `{}`", g.value), g.span);
                d.help = Some(match suggest(&g.value, Grouping::NAMES.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("known groupings: {}", Grouping::NAMES.join(", ")),
                });
                return None;
            }
        };
        Some(grouping)
    }

    /// The stream must exist on its source, and a fields grouping's fields must be declared.
    fn stream_fields(
        &mut self,
        s: &Stream,
        rs: &RawStream,
        components: &[(Component, &RawComponent)],
    ) {
        let Some((from, _)) = components.iter().find(|(c, _)| c.id == s.from) else {
            return;
        };
        let Some(fields) = from.outputs.get(&s.stream) else {
            let at = rs
                .stream
                .as_ref()
                .or(rs.from.as_ref())
                .map_or(rs.span, |x| x.span);
            let d = self.error(
                format!(
                    "`{}` ({}) has no output stream `{}`",
                    from.id,
                    from.ctype.name(),
                    s.stream
                ),
                at,
            );
            d.help = Some(if from.outputs.is_empty() {
                format!("`{}` is a sink: it declares no output", from.ctype.name())
            } else {
                let names: Vec<&str> = from.outputs.keys().map(String::as_str).collect();
                format!("its streams: {}", names.join(", "))
            });
            return;
        };
        let Some(args) = &rs.grouping_args else {
            return;
        };
        if s.grouping.key_fields().is_none() {
            return;
        }
        for f in &args.value {
            if !fields.contains(&f.value) {
                let d = self.error(
                    format!(
                        "`{}` does not declare field `{}` on stream `{}`",
                        from.id, f.value, s.stream
                    ),
                    f.span,
                );
                d.help = Some(match suggest(&f.value, fields.iter().map(String::as_str)) {
                    Some(x) => format!("did you mean `{x}`? its fields: {}", fields.join(", ")),
                    None => format!("its fields: {}", fields.join(", ")),
                });
            }
        }
    }

    /// Bolts with no input are errors (Flux silently drops them); bolts no spout reaches warn.
    /// `targets`: every `to` written, so a stream already reported as broken does not also
    /// make its target look unconnected.
    fn connectivity(
        &mut self,
        components: &[(Component, &RawComponent)],
        streams: &[Stream],
        targets: &HashSet<&str>,
    ) {
        let declared = self.declared.clone();
        let mut reached: HashSet<&str> = declared
            .iter()
            .filter(|(_, k)| **k == ComponentKind::Spout)
            .map(|(id, _)| id.as_str())
            .collect();
        loop {
            let before = reached.len();
            for s in streams {
                if reached.contains(s.from.as_str()) {
                    reached.insert(s.to.as_str());
                }
            }
            if reached.len() == before {
                break;
            }
        }
        for (c, rc) in components {
            let at = rc.id.as_ref().map_or(rc.span, |i| i.span);
            if c.is_spout() || reached.contains(c.id.as_str()) {
                continue;
            }
            if !targets.contains(c.id.as_str()) {
                self.error(format!("bolt `{}` has no input stream", c.id), at)
                    .help = Some(format!("add a stream with `to: {}`", c.id));
            } else if streams.iter().any(|s| s.to == c.id) {
                self.diags.push(Diagnostic::warning(
                    format!("bolt `{}` cannot be reached from any spout", c.id),
                    at,
                ));
            }
        }
    }

    /// Parse `args.where` and check it against the input fields, mapping the expression's
    /// own spans back to the file.
    fn filter_expression(&mut self, rc: &RawComponent, input: Option<&[String]>) {
        let at = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
        let Some(w) = rc.args.as_ref().and_then(|a| a.value.get("where")) else {
            self.error("filter without `args.where`", at).help =
                Some("e.g. `args: { where: 'word contains \"ka\"' }`".into());
            return;
        };
        let Some(text) = w.value.as_str() else {
            self.error("`where` must be an expression string", w.span);
            return;
        };
        let base = expression_offset(self.ctx.text, w, text);
        let to_span = |r: std::ops::Range<usize>| match base {
            Some(b) => Span::new(b + r.start, b + r.end.max(r.start)),
            None => w.span,
        };
        let errors = match crate::expr::parse(text) {
            Err(e) => vec![e],
            Ok(expr) => input.map(|f| expr.check(f)).unwrap_or_default(),
        };
        for e in errors {
            let mut d = Diagnostic::error(
                format!("in filter expression: {}", e.message),
                to_span(e.span),
            );
            d.help = e.help;
            self.diags.push(d);
        }
    }
}

/// What a built-in's argument must look like.
enum ArgShape {
    Fields,
    Text,
    Number,
    Fraction,
    Duration,
    List,
    OneOf(&'static [&'static str]),
}

impl ArgShape {
    fn problem(&self, v: &RawValue) -> Option<String> {
        let ok = match self {
            ArgShape::Fields => match v {
                RawValue::List(l) => {
                    !l.is_empty() && l.iter().all(|f| matches!(f.value, RawValue::Str { .. }))
                }
                _ => false,
            },
            ArgShape::Text => matches!(v, RawValue::Str { .. }),
            ArgShape::Number => {
                matches!(v, RawValue::Int(n) if *n >= 0)
                    || matches!(v, RawValue::Float(f) if *f >= 0.0)
            }
            ArgShape::Fraction => match v {
                RawValue::Int(n) => (0..=1).contains(n),
                RawValue::Float(f) => (0.0..=1.0).contains(f),
                _ => false,
            },
            ArgShape::Duration => crate::config::duration_of(&v.to_json()).is_some(),
            ArgShape::List => matches!(v, RawValue::List(_)),
            ArgShape::OneOf(names) => v.as_str().is_some_and(|s| names.contains(&s)),
        };
        if ok {
            return None;
        }
        Some(match self {
            ArgShape::Fields => "must be a non-empty list of field names".into(),
            ArgShape::Text => "must be a string".into(),
            ArgShape::Number => "must be a number ≥ 0".into(),
            ArgShape::Fraction => "must be a fraction between 0 and 1".into(),
            ArgShape::Duration => "must be a duration (`100ms`, `1s`, or seconds)".into(),
            ArgShape::List => "must be a list".into(),
            ArgShape::OneOf(names) => format!("must be one of: {}", names.join(", ")),
        })
    }
}

/// Where an expression's text starts in the file: found verbatim inside its scalar's span,
/// else just after the opening quote (escapes then shift positions slightly).
fn expression_offset(source: &str, w: &Spanned<RawValue>, text: &str) -> Option<usize> {
    let written = source.get(w.span.start..w.span.end)?;
    if let Some(i) = written.find(text) {
        return Some(w.span.start + i);
    }
    match &w.value {
        RawValue::Str { quoted: true, .. } => Some(w.span.start + 1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(text: &str, span: Span, quoted: bool) -> Spanned<RawValue> {
        Spanned::new(
            RawValue::Str {
                text: text.into(),
                quoted,
            },
            span,
        )
    }

    #[test]
    fn expression_positions_map_back_into_the_file() {
        let src = "where: 'len(word) > 3'";
        let w = scalar("len(word) > 3", Span::new(7, 22), true);
        assert_eq!(expression_offset(src, &w, "len(word) > 3"), Some(8));
        let src = "where: len(word) > 3";
        let w = scalar("len(word) > 3", Span::new(7, 20), false);
        assert_eq!(expression_offset(src, &w, "len(word) > 3"), Some(7));
        // An escape changes the text: fall back to just after the quote.
        let src = r#"where: "a == \"x\"""#;
        let w = scalar("a == \"x\"", Span::new(7, src.len()), true);
        assert_eq!(expression_offset(src, &w, "a == \"x\""), Some(8));
    }

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
