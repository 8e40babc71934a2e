//! Validation: `RawTopology` → `model::Topology` in one pass that collects every error and
//! warning, each located in the source (every check of the topology file, and every configuration rule).
//! Flux checks these one at a time at submit time; we report them all at once.

use crate::components::builtin::{Input, Written};
use crate::config::{layers, rules, Config, Origin};
use crate::model::{
    Component, ComponentKind, ComponentType, Grouping, Stream, Topology, DEFAULT_STREAM,
};
use crate::syntax::diag::{Diagnostic, Severity};
use crate::syntax::raw::{RawComponent, RawStream, RawTopology, RawValue, Span, Spanned};
use crate::syntax::suggest::suggest;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

mod args;
pub(crate) mod bounds;
mod outputs;
mod stateful;
mod types;

pub use args::argument_names;
mod streams;

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

/// Errors with each span once: an argument refused by its shape and again by its component's
/// own reading keeps the later, more particular message (`n` must be ≥ 1, not just ≥ 0).
fn one_error_per_span(errors: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut kept: Vec<Diagnostic> = Vec::with_capacity(errors.len());
    for d in errors {
        match kept
            .iter_mut()
            .find(|k| k.span.is_some() && k.span == d.span)
        {
            Some(earlier) => *earlier = d,
            None => kept.push(d),
        }
    }
    kept
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
        stateful_default: false,
        max_parallelism: None,
    };
    let name = v.name(&raw);
    // (A text that did not parse has no components either: its syntax error says why.)
    let unparsed = raw.diagnostics.iter().any(|d| d.is_error());
    if raw.spouts.is_empty() && raw.bolts.is_empty() && !unparsed {
        // Nothing to run: say so where the topology is named (or at the top of the file).
        let at = raw.name.as_ref().map_or(Span::new(0, 0), |n| n.span);
        v.error("the topology has no spouts or bolts", at).help =
            Some("a topology needs at least one spout (`spouts:`)".into());
    }
    let config = v.config(&raw);
    v.stateful_default = config.get_bool("topology.stateful").unwrap_or(false);
    v.max_parallelism = config
        .get_u64("topology.max.task.parallelism")
        .map(|m| u32::try_from(m).unwrap_or(u32::MAX));
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
    v.config_bounds(&config, &raw);
    v.rewinding_spouts(&components, &config);
    v.totals(&components, &config);
    let streams = v.streams(&raw.streams, &mut components);
    let targets: HashSet<&str> = raw
        .streams
        .iter()
        .filter_map(|s| s.to.as_ref().map(|t| t.value.as_str()))
        .collect();
    v.connectivity(&components, &streams, &targets);
    v.input_checks(&components, &streams);
    v.sinks(&components, &streams);
    v.placed_checks(&components);
    let (errors, warnings): (Vec<_>, Vec<_>) = v.diags.into_iter().partition(|d| d.is_error());
    if !errors.is_empty() {
        let mut all = one_error_per_span(errors);
        all.extend(warnings);
        all.sort_by_key(|d| d.span.map_or(0, |s| s.start));
        return Err(all);
    }
    let mut topology = Topology {
        name: name.unwrap_or_default(),
        config,
        components: components.into_iter().map(|(c, _)| c).collect(),
        streams,
        base_dir: ctx.base_dir.clone(),
    };
    crate::components::aggregate::expand::split_rankings(&mut topology);
    Ok((topology, warnings))
}

struct Validator<'a> {
    diags: Vec<Diagnostic>,
    ctx: &'a Context<'a>,
    /// Every id written, valid component or not, so one mistake does not cascade.
    declared: HashMap<String, ComponentKind>,
    /// `topology.stateful`: the stateful built-ins keep state unless they say otherwise.
    stateful_default: bool,
    /// `topology.max.task.parallelism`: no component gets more executors or tasks.
    max_parallelism: Option<u32>,
}

impl Validator<'_> {
    /// The checks that need each component's input: its own (`Builtin::check_input`), and
    /// that the arguments naming input fields name fields the input declares.
    fn input_checks(&mut self, components: &[(Component, &RawComponent)], streams: &[Stream]) {
        let by_id: HashMap<&str, &Component> =
            components.iter().map(|(c, _)| (c.id.as_str(), c)).collect();
        let mut first_input: HashMap<&str, &Stream> = HashMap::new();
        for s in streams {
            first_input.entry(s.to.as_str()).or_insert(s);
        }
        let field_types = types::resolve(self.ctx.text, components, streams);
        for (c, rc) in components {
            // The fields arriving on its first input stream, once known, and their types.
            let stream = first_input.get(c.id.as_str());
            let input = stream.and_then(|s| by_id.get(s.from.as_str())?.outputs.get(&s.stream));
            let types: &[crate::expr::Type] = stream
                .filter(|s| s.stream == DEFAULT_STREAM)
                .and_then(|s| field_types.get(&s.from))
                .map_or(&[], Vec::as_slice);
            let seen = Input {
                fields: input.map(Vec::as_slice),
                types,
                streams,
                by_id: &by_id,
            };
            c.ctype.check_input(
                &mut self.written(rc, c.kind, c.parallelism, c.tasks),
                c,
                &seen,
            );
            if let (Some(s), Some(fields)) = (stream, input) {
                self.field_args(rc, c.ctype, s, fields);
            }
        }
    }

    /// What a built-in's own checks see of `rc`, reporting into this validation.
    fn written<'w>(
        &'w mut self,
        rc: &'w RawComponent,
        kind: ComponentKind,
        parallelism: u32,
        tasks: u32,
    ) -> Written<'w> {
        Written {
            rc,
            kind,
            parallelism,
            tasks,
            base_dir: &self.ctx.base_dir,
            text: self.ctx.text,
            diags: &mut self.diags,
        }
    }

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

    /// Layer the configuration (defaults, `storm.yaml`, the topology's `config:`, `-c`) and check
    /// every configuration key and value, locating what the file wrote.
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
        // The last entry of a key wins, as in the layering.
        let written: HashMap<&str, &(Spanned<String>, Spanned<RawValue>)> =
            raw.config.iter().map(|e| (e.0.value.as_str(), e)).collect();
        let span_of = |key: &str| written.get(key).copied();
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
        for (key, suggestion) in crate::config::storm_keys::unknown_topology_keys(&config) {
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
        let id = self.component_id(rc, kind, what);
        let ctype = self.component_type(rc, kind, what);
        let (parallelism, tasks) = self.counts(rc);
        if let Some(t) = ctype {
            self.args_shape(rc, t, kind);
            t.check(&mut self.written(rc, kind, parallelism, tasks));
        }
        if let (Some(c), false) = (&rc.command, ctype.is_none_or(|t| t.runs_program())) {
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
        let tick = self.component_tick(rc);
        let finish = self.finish_flag(rc, ctype, kind);
        let stateful = self.stateful_flag(rc, ctype);
        let chain = self.chain_flag(rc);
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
            finish,
            stateful,
            chain,
            config: rc
                .config
                .iter()
                .map(|(k, v)| (k.value.clone(), v.value.to_json()))
                .collect(),
        })
    }

    /// The component's id: present, not reserved, unique.
    fn component_id(
        &mut self,
        rc: &RawComponent,
        kind: ComponentKind,
        what: &str,
    ) -> Option<String> {
        match &rc.id {
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
        }
    }

    /// Its parallelism and tasks (at least one task per executor).
    fn counts(&mut self, rc: &RawComponent) -> (u32, u32) {
        let parallelism = self
            .count(&rc.parallelism, "parallelism", bounds::MAX_PARALLELISM)
            .unwrap_or(1);
        let tasks = self
            .count(&rc.tasks, "tasks", bounds::MAX_TASKS)
            .unwrap_or(parallelism);
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
        // Storm's cap, applied as Storm applies it when a topology is submitted.
        match self.max_parallelism {
            Some(max) => (parallelism.min(max), tasks.min(max)),
            None => (parallelism, tasks),
        }
    }

    /// Its own tick frequency: `tick:`, else Storm's per-component
    /// `topology.tick.tuple.freq.secs` (Flux `config:`).
    fn component_tick(&mut self, rc: &RawComponent) -> Option<Duration> {
        rc.tick.as_ref().and_then(|t| self.tick(t)).or_else(|| {
            rc.config
                .iter()
                .find(|(k, _)| k.value == "topology.tick.tuple.freq.secs")
                .and_then(|(_, v)| crate::config::duration_of(&v.value.to_json()))
                .filter(|d| *d >= Duration::from_secs(1))
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

    /// `finish: true` is for shell bolts: they are told of the end of their input.
    fn finish_flag(
        &mut self,
        rc: &RawComponent,
        ctype: Option<ComponentType>,
        kind: ComponentKind,
    ) -> bool {
        let Some(f) = &rc.finish else { return false };
        let RawValue::Bool(on) = f.value else {
            self.error("`finish` must be true or false", f.span);
            return false;
        };
        if on && !(ctype.is_some_and(|t| t.runs_program()) && kind == ComponentKind::Bolt) {
            self.error("`finish` is for shell bolts", f.span).help =
                Some("built-in bolts finish by themselves at the end of input".into());
        }
        on
    }

    /// `chain: false` keeps the component out of operator chains (default true).
    fn chain_flag(&mut self, rc: &RawComponent) -> bool {
        let Some(c) = &rc.chain else { return true };
        match c.value {
            RawValue::Bool(on) => on,
            _ => {
                self.error("`chain` must be true or false", c.span);
                true
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
}
