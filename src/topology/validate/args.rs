//! Validation of built-in components' arguments: their names (every built-in lists what it
//! reads), their shapes, and the `filter` expression, whose own error positions are mapped back
//! into the topology file.

use super::*;

impl Validator<'_> {
    /// Every argument must be one the component reads, of the right shape: an unknown name
    /// is an error with a did-you-mean, never silently ignored.
    pub(super) fn args_shape(&mut self, rc: &RawComponent, ctype: ComponentType) {
        let Some(args) = &rc.args else { return };
        let RawValue::Map(entries) = &args.value else {
            return; // already reported by the reader
        };
        let known = known_args(ctype);
        for (k, v) in entries {
            let Some((_, expect)) = known.iter().find(|a| a.0 == k.value) else {
                let d = self.error(
                    format!("`{}` takes no argument `{}`", ctype.name(), k.value),
                    k.span,
                );
                d.help = Some(unknown_arg_help(&k.value, ctype, &known));
                continue;
            };
            if let Some(problem) = expect.problem(&v.value) {
                self.error(format!("`args.{}` {problem}", k.value), v.span);
            }
        }
    }

    /// Arguments that name input fields (`count`'s `fields`, `split`'s `field`) must name
    /// fields the input declares, whatever declared them (a built-in, `fields:` on a shell
    /// component, Flux).
    pub(super) fn field_args(
        &mut self,
        rc: &RawComponent,
        ctype: ComponentType,
        input: &Stream,
        fields: &[String],
    ) {
        for (name, span) in named_input_fields(rc, ctype) {
            let name = name.as_str();
            // Already reported at the same place (the DSL's implied fields grouping).
            let reported = self
                .diags
                .iter()
                .any(|d| d.is_error() && d.span == Some(span));
            if reported || fields.iter().any(|x| x == name) {
                continue;
            }
            let d = self.error(
                format!(
                    "`{}` does not declare field `{name}` on stream `{}`",
                    input.from, input.stream
                ),
                span,
            );
            d.help = Some(match suggest(name, fields.iter().map(String::as_str)) {
                Some(x) => format!("did you mean `{x}`? its fields: {}", fields.join(", ")),
                None => format!("its fields: {}", fields.join(", ")),
            });
        }
    }

    /// An `aggregate`'s ops must read as ops, located at the op (or argument) at fault.
    pub(super) fn aggregate_spec(&mut self, rc: &RawComponent) {
        let Some(args) = rc.args.as_ref() else { return };
        let serde_json::Value::Object(json) = args.value.to_json() else {
            return;
        };
        let Err((arg, message)) = crate::components::aggregate::Spec::from_args(&json) else {
            return;
        };
        let span = match (arg, args.value.get(arg)) {
            (
                "ops",
                Some(Spanned {
                    value: RawValue::List(items),
                    span,
                }),
            ) => items
                .iter()
                .find(|i| {
                    i.value.as_str().is_some_and(|t| {
                        crate::components::aggregate::ops::OpSpec::parse(t).is_err()
                    })
                })
                .map_or(*span, |i| i.span),
            (_, Some(v)) => v.span,
            (_, None) => args.span,
        };
        self.error(message, span);
    }

    /// A `join`'s inputs must stream into it, and its keys and selected fields must be fields
    /// those inputs declare.
    pub(super) fn join_inputs(
        &mut self,
        rc: &RawComponent,
        c: &Component,
        streams: &[Stream],
        by_id: &HashMap<&str, &Component>,
    ) {
        let at = rc.args.as_ref().map_or(rc.span, |a| a.span);
        let Ok(spec) = crate::components::join::Spec::from_args(&c.args) else {
            return; // reported where the arguments are checked
        };
        let fields_of = |from: &str| -> Option<Vec<String>> {
            let s = streams.iter().find(|s| s.from == from && s.to == c.id)?;
            Some(by_id.get(from)?.outputs.get(&s.stream)?.clone())
        };
        let mut wanted: Vec<(&str, &str)> = spec
            .inputs
            .iter()
            .map(|i| (i.from.as_str(), i.key.as_str()))
            .collect();
        wanted.extend(spec.select.iter().map(|(c, f)| (c.as_str(), f.as_str())));
        if let Some(time) = &spec.time {
            wanted.extend(spec.inputs.iter().map(|i| (i.from.as_str(), time.as_str())));
        }
        for (from, field) in wanted {
            let Some(fields) = fields_of(from) else {
                self.error(format!("`{from}` sends no stream to `{}`", c.id), at)
                    .help = Some(format!("add a stream from `{from}` to `{}`", c.id));
                continue;
            };
            if !fields.iter().any(|f| f == field) {
                self.error(format!("`{from}` does not declare field `{field}`"), at)
                    .help = Some(format!("its fields: {}", fields.join(", ")));
            }
        }
    }

    /// A `top`'s arguments, as the runtime reads them.
    pub(super) fn top_spec(&mut self, rc: &RawComponent) {
        let at = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
        let args = match rc.args.as_ref().map(|a| a.value.to_json()) {
            Some(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        if let Err((arg, message)) = crate::components::aggregate::top_spec(&args) {
            let span = rc
                .args
                .as_ref()
                .and_then(|a| a.value.get(arg))
                .map_or(at, |v| v.span);
            self.error(message, span);
        }
    }

    /// A `top` with more than one task runs as its partial rankings and their total: it needs
    /// windows by time (a count of tuples is one task's count), and the id of its partial
    /// rankings free.
    pub(super) fn ranking_splits(&mut self, components: &[(Component, &RawComponent)]) {
        for (c, rc) in components {
            if !crate::topology::expand::splits(c) {
                continue;
            }
            let at = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
            let by_count = crate::components::aggregate::top_spec(&c.args).is_ok_and(|(s, _)| {
                s.window.is_some_and(|w| {
                    w.measure == crate::components::aggregate::window::Measure::Count
                })
            });
            if by_count {
                let span = rc.parallelism.as_ref().map_or(at, |p| p.span);
                self.error(
                    "a `top` with windows of tuples runs as one task: each task would count its own tuples",
                    span,
                )
                .help = Some("use a window by time (`{tumbling: 1m}`), or parallelism 1".into());
            }
            let partial = crate::topology::expand::partial_id(&c.id);
            if self.declared.contains_key(&partial) {
                let span = rc.id.as_ref().map_or(at, |i| i.span);
                self.error(
                    format!("`{}` runs as `{partial}` and `{}` with more than one task, and `{partial}` is taken", c.id, c.id),
                    span,
                )
                .help = Some(format!("rename `{partial}`"));
            }
        }
    }

    /// A `lookup` needs its table, its key column and the input field it matches; a table file
    /// that is not there yet is a warning (it is read when the run starts).
    pub(super) fn lookup_table(&mut self, rc: &RawComponent) {
        let at = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
        let arg = |k: &str| rc.args.as_ref().and_then(|a| a.value.get(k));
        for k in ["path", "key", "on"] {
            if arg(k).is_none() {
                self.error(format!("`lookup` needs `{k}`"), at).help = Some(
                    "e.g. `lookup(path=users.csv, key=id, on=user, select=[name, team])`".into(),
                );
            }
        }
        if let Some(p) = arg("path") {
            if let Some(text) = p.value.as_str() {
                let file = self.ctx.base_dir.join(text);
                if !file.is_file() {
                    self.diags.push(Diagnostic::warning(
                        format!(
                            "the table `{}` is not there (yet): it is read when the run starts",
                            file.display()
                        ),
                        p.span,
                    ));
                }
            }
        }
    }

    /// `start_at` says where a followed file starts: without `follow: true` it would be
    /// silently ignored (a whole file is always read from its start).
    pub(super) fn start_at_needs_follow(&mut self, rc: &RawComponent) {
        let arg = |k: &str| rc.args.as_ref().and_then(|a| a.value.get(k));
        let following = arg("follow").is_some_and(|f| matches!(f.value, RawValue::Bool(true)));
        if let (Some(s), false) = (arg("start_at"), following) {
            self.error("`start_at` needs `follow: true`", s.span).help =
                Some("a file that is not followed is read from its start".into());
        }
    }

    /// `stdin` and `file` read one stream each: a second task would read the same input
    /// again (`file`) or take lines from under the first one (`stdin`).
    pub(super) fn single_reader(&mut self, rc: &RawComponent, ctype: ComponentType, tasks: u32) {
        let name = match ctype {
            ComponentType::Stdin => "stdin",
            ComponentType::File => "file",
            _ => return,
        };
        if tasks <= 1 {
            return;
        }
        let at = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
        let span = rc
            .tasks
            .as_ref()
            .map(|t| t.span)
            .or(rc.parallelism.as_ref().map(|p| p.span))
            .unwrap_or(at);
        self.error(
            format!("a `{name}` spout reads its input once, in one task: it cannot have {tasks} tasks"),
            span,
        )
        .help = Some("give the work after it more tasks instead (`| parse(...) x4`, `parallelism: 4` on the bolts)".into());
    }

    /// A `parse` component's format and options must make sense together: checked as the
    /// runtime reads them, each problem located at the argument it is about.
    pub(super) fn parse_spec(&mut self, rc: &RawComponent, parallelism: u32) {
        let at_type = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
        let args = match rc.args.as_ref().map(|a| a.value.to_json()) {
            Some(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        let arg_span = |key: &str| {
            rc.args
                .as_ref()
                .and_then(|a| a.value.get(key))
                .map_or(at_type, |v| v.span)
        };
        let is_file = rc.ctype.as_ref().is_some_and(|t| t.value == "file");
        if is_file {
            if let Err(why) = crate::components::lines::source_fields::Placement::new(&args) {
                self.error(why, arg_span("fields"));
                return;
            }
        }
        let args = crate::components::lines::source_fields::reader_args(&args);
        match crate::components::parse::spec::Spec::from_args(&args) {
            Err(e) => {
                let span = arg_span(e.arg);
                self.error(e.message, span);
            }
            Ok(spec) => {
                let header = matches!(
                    spec.format,
                    crate::components::parse::spec::Format::Delimited { header: true, .. }
                );
                if header {
                    if let Err(why) = file_header(rc, &spec, &self.ctx.base_dir) {
                        self.error(why, arg_span("fields"));
                    }
                }
                if header && parallelism > 1 {
                    self.error(
                        "`header: true` needs `parallelism: 1`: only one task would see the header line",
                        arg_span("header"),
                    )
                    .help = Some(
                        "give the names with `columns` instead, or read the file with `stdin(format=csv, header=true, …)`".into(),
                    );
                }
            }
        }
    }

    /// A `file` spout without `format` whose `fields` names the file fields: the rest must be
    /// `line`.
    pub(super) fn file_fields(&mut self, rc: &RawComponent) {
        let args = match rc.args.as_ref().map(|a| a.value.to_json()) {
            Some(serde_json::Value::Object(m)) => m,
            _ => return,
        };
        if let Err(why) = crate::components::lines::source_fields::Placement::new(&args) {
            let at = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
            let span = rc
                .args
                .as_ref()
                .and_then(|a| a.value.get("fields"))
                .map_or(at, |v| v.span);
            self.error(why, span);
        }
    }

    /// Parse `args.where` and check it against the input fields, mapping the expression's
    /// own spans back to the file.
    pub(super) fn filter_expression(
        &mut self,
        rc: &RawComponent,
        input: Option<&[String]>,
        types: &[crate::expr::Type],
    ) {
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
            Ok(expr) => input
                .map(|f| expr.check_typed(Some(f), types))
                .unwrap_or_default(),
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

/// An argument: its name and shape.
type Arg = (&'static str, ArgShape);

/// What spouts that replay lines themselves take.
const REPLAYS: &[Arg] = &[("max_retries", ArgShape::Number)];

/// What `parse` reads, and `stdin`/`file` with `format:`.
const READS_FORMAT: &[Arg] = &[
    (
        "format",
        ArgShape::OneOf(crate::components::parse::spec::FORMATS),
    ),
    ("fields", ArgShape::Fields),
    ("header", ArgShape::Bool),
    ("columns", ArgShape::Fields),
    ("pattern", ArgShape::Text),
    ("types", ArgShape::Map),
    ("separator", ArgShape::Text),
    ("pair_separator", ArgShape::Text),
];

/// What a `redis` bolt or spout reads besides the record arguments (checked for its role
/// by `components::redis::check`).
const REDIS_ARGS: &[Arg] = &[
    ("url", ArgShape::Text),
    ("command", ArgShape::Text),
    ("key", ArgShape::Text),
    ("field", ArgShape::TextOrList),
    ("value", ArgShape::TextOrList),
    ("ttl", ArgShape::Duration),
    ("as", ArgShape::TextOrList),
    ("filter", ArgShape::Bool),
    ("cache", ArgShape::Number),
    ("stream", ArgShape::Text),
    ("group", ArgShape::Text),
    ("consumer", ArgShape::Text),
    ("claim_after", ArgShape::Duration),
];

/// The arguments each built-in reads, and their shapes. The spouts that replay lines
/// themselves (`stdin`, `file`, `generate`) also take `max_retries`.
fn known_args(ctype: ComponentType) -> Vec<&'static Arg> {
    let parts: &[&[Arg]] = match ctype {
        ComponentType::Stdin => &[REPLAYS, READS_FORMAT],
        ComponentType::File => &[
            &[
                ("path", ArgShape::Text),
                ("follow", ArgShape::Bool),
                ("start_at", ArgShape::OneOf(&["beginning", "end"])),
            ],
            REPLAYS,
            READS_FORMAT,
        ],
        ComponentType::Parse => &[&[("field", ArgShape::Text)], READS_FORMAT],
        ComponentType::Redis => &[REDIS_ARGS, REPLAYS, READS_FORMAT],
        other => &[own_args(other)],
    };
    parts.iter().flat_map(|p| p.iter()).collect()
}

/// The arguments of the built-ins that share none.
fn own_args(ctype: ComponentType) -> &'static [Arg] {
    use ArgShape::*;
    use ComponentType::*;
    // Both have a `Map`: here it is the shape (the component type is written in full).
    use ArgShape::Map;
    match ctype {
        Stdin | File | Parse => &[],
        Generate => &[
            ("count", Number),
            ("rate", Number),
            ("seed", Number),
            ("values", List),
            ("fields", Fields),
            ("max_retries", Number),
        ],
        Split => &[("field", Text), ("separator", Text)],
        Count => &[
            ("fields", Fields),
            ("emit", OneOf(&["end", "tick", "update"])),
        ],
        Dedupe => &[("key", Fields), ("window", Duration), ("cache", WholeCount)],
        Join => &[
            ("inputs", List),
            ("select", List),
            ("window", Map),
            ("time", Text),
            ("lag", Duration),
            ("idle", Duration),
        ],
        Top => &[
            ("n", Number),
            ("by", Fields),
            ("score", Text),
            ("window", Map),
            ("time", Text),
            ("lag", Duration),
            ("watermark", Duration),
            ("idle", Duration),
        ],
        Lookup => &[
            ("path", Text),
            ("key", Text),
            ("on", Text),
            ("select", Fields),
        ],
        Aggregate => &[
            ("by", Fields),
            ("ops", List),
            ("emit", OneOf(crate::components::aggregate::EMITS)),
            ("approx", Bool),
            ("window", Map),
            ("time", Text),
            ("lag", Duration),
            ("watermark", Duration),
            ("idle", Duration),
        ],
        Filter => &[("where", Text)],
        ComponentType::Map => &[
            ("set", Map),
            ("rename", Map),
            ("keep", Fields),
            ("drop", Fields),
        ],
        Chaos => &[
            ("fail", Fraction),
            ("drop", Fraction),
            ("delay", Duration),
            ("seed", Number),
            ("panic_after", Number),
        ],
        Stdout => &[
            ("format", OneOf(crate::components::stdout::FORMATS)),
            ("fields", Fields),
            ("header", Bool),
        ],
        Shell | Log | Discard | TestWordSpout | TestWordCounter | Redis => &[],
        Kafka => KAFKA_SPOUT_ARGS
            .iter()
            .chain(KAFKA_SINK_ARGS)
            .map(|name| (*name, kafka_shape(name)))
            .collect::<Vec<_>>()
            .leak(),
    }
}

/// What only a `kafka` spout reads (besides `brokers` and `options`, which both read).
const KAFKA_SPOUT_ARGS: &[&str] = &[
    "brokers",
    "options",
    "topics",
    "topic_pattern",
    "group",
    "first_poll_offset",
    "max_retries",
    "fields",
    "columns",
    "pattern",
    "types",
    "separator",
    "pair_separator",
];

/// What only a `kafka` sink reads (`format` is both's, with other values).
const KAFKA_SINK_ARGS: &[&str] = &[
    "format",
    "topic",
    "topic_field",
    "key",
    "field",
    "commits_topic",
];

fn kafka_shape(name: &str) -> ArgShape {
    match name {
        "brokers" | "topics" => ArgShape::TextOrList,
        "options" | "types" => ArgShape::Map,
        "first_poll_offset" => {
            ArgShape::OneOf(crate::components::kafka::consumer::FirstPoll::NAMES)
        }
        "max_retries" => ArgShape::Number,
        "fields" | "columns" => ArgShape::Fields,
        _ => ArgShape::Text,
    }
}

impl Validator<'_> {
    /// A `kafka` component's arguments for its role (spout or sink), checked as the run
    /// builds it, each problem located at the argument of the other role, or at the type.
    pub(super) fn kafka_args(&mut self, rc: &RawComponent, kind: ComponentKind) {
        let at = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
        let Some(args) = &rc.args else {
            self.error("`kafka` needs `brokers`", at);
            return;
        };
        let (others, role, other_role) = match kind {
            ComponentKind::Spout => (&KAFKA_SINK_ARGS[1..], "spout", "sink"),
            ComponentKind::Bolt => (&KAFKA_SPOUT_ARGS[2..], "sink", "spout"),
        };
        if let RawValue::Map(entries) = &args.value {
            for (k, _) in entries {
                if others.contains(&k.value.as_str()) {
                    self.error(
                        format!(
                            "`{}` is an argument of a kafka {other_role}; this one is a {role}",
                            k.value
                        ),
                        k.span,
                    );
                }
            }
        }
        let serde_json::Value::Object(json) = args.value.to_json() else {
            return;
        };
        let built = match kind {
            ComponentKind::Spout => crate::components::kafka::spout::KafkaSpout::new(&json).err(),
            ComponentKind::Bolt => {
                crate::components::kafka::sink::KafkaSink::new(&json, false).err()
            }
        };
        if let Some(why) = built {
            self.error(format!("kafka {role}: {why}"), args.span);
        }
    }
}

impl Validator<'_> {
    /// A `redis` component's arguments for its role, checked as the run builds it, each
    /// problem located at the argument at fault.
    pub(super) fn redis_args(&mut self, rc: &RawComponent, kind: ComponentKind) {
        let at = rc.ctype.as_ref().map_or(rc.span, |t| t.span);
        let Some(args) = &rc.args else {
            let what = "`command` and `key` (a bolt) or `stream` (a spout)";
            self.error(format!("`redis` needs arguments: {what}"), at);
            return;
        };
        let serde_json::Value::Object(json) = args.value.to_json() else {
            return;
        };
        let spout = kind == ComponentKind::Spout;
        for (arg, message) in crate::components::redis::check(&json, spout) {
            let span = arg
                .and_then(|a| args.value.get(&a))
                .map_or(args.span, |v| v.span);
            self.error(message, span);
        }
    }
}

/// The input fields a component's arguments name, each with where it is written.
fn named_input_fields(rc: &RawComponent, ctype: ComponentType) -> Vec<(String, Span)> {
    let arg = |key: &str| rc.args.as_ref().and_then(|a| a.value.get(key));
    let items = |v: &Spanned<RawValue>| -> Vec<(String, Span)> {
        let list: Vec<&Spanned<RawValue>> = match &v.value {
            RawValue::List(items) => items.iter().collect(),
            _ => vec![v],
        };
        list.into_iter()
            .filter_map(|i| Some((i.value.as_str()?.to_string(), i.span)))
            .collect()
    };
    let keys: &[&str] = match ctype {
        ComponentType::Count | ComponentType::Stdout => &["fields"],
        ComponentType::Split | ComponentType::Parse => &["field"],
        ComponentType::Aggregate => &["by", "time"],
        ComponentType::Top => &["by", "time", "score"],
        ComponentType::Dedupe => &["key"],
        ComponentType::Lookup => &["on"],
        ComponentType::Kafka => &["topic_field", "key", "field"],
        _ => &[],
    };
    let mut out: Vec<(String, Span)> = keys.iter().filter_map(|k| arg(k)).flat_map(items).collect();
    if let (ComponentType::Redis, Some(serde_json::Value::Object(json))) =
        (ctype, rc.args.as_ref().map(|a| a.value.to_json()))
    {
        let named = crate::components::redis::named_fields(&json);
        out.extend(
            named
                .into_iter()
                .filter_map(|(a, f)| Some((f, arg(a)?.span))),
        );
    }
    if ctype == ComponentType::Aggregate {
        // An op's field, located at the op that names it.
        for (text, span) in arg("ops").map(items).unwrap_or_default() {
            if let Ok(op) = crate::components::aggregate::ops::OpSpec::parse(&text) {
                out.extend(op.field.map(|f| (f, span)));
            }
        }
    }
    out
}

/// The names of the arguments a built-in reads (for documentation checks and help).
pub fn argument_names(ctype: ComponentType) -> Vec<&'static str> {
    known_args(ctype).iter().map(|a| a.0).collect()
}

/// What to say about an argument a component does not read: the closest known name (by
/// spelling, or the one it abbreviates: `sep` → `separator`), and the full list.
fn unknown_arg_help(name: &str, ctype: ComponentType, known: &[&Arg]) -> String {
    let names: Vec<&str> = known.iter().map(|a| a.0).collect();
    if names.is_empty() {
        return format!("`{}` takes no arguments", ctype.name());
    }
    let lower = name.to_ascii_lowercase();
    let close = suggest(name, names.iter().copied()).or_else(|| {
        (lower.len() >= 2)
            .then(|| names.iter().copied().find(|n| n.starts_with(&lower)))
            .flatten()
    });
    let list = names.join(", ");
    match close {
        Some(c) => format!("did you mean `{c}`? `{}` takes: {list}", ctype.name()),
        None => format!("`{}` takes: {list}", ctype.name()),
    }
}

/// What a built-in's argument must look like.
enum ArgShape {
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
            ArgShape::TextOrList => match v {
                RawValue::List(l) => l.iter().all(|f| matches!(f.value, RawValue::Str { .. })),
                other => matches!(other, RawValue::Str { .. }),
            },
        };
        if ok {
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

/// A `file` spout reading a CSV/TSV header: when its file exists, the header must have the
/// columns asked for (the run would end at its first line otherwise).
fn file_header(
    rc: &RawComponent,
    spec: &crate::components::parse::spec::Spec,
    base_dir: &std::path::Path,
) -> Result<(), String> {
    use std::io::BufRead;
    let is_file = rc.ctype.as_ref().is_some_and(|t| t.value == "file");
    let path = rc.args.as_ref().and_then(|a| a.value.get("path"));
    let Some(path) = path.and_then(|p| p.value.as_str()).filter(|_| is_file) else {
        return Ok(());
    };
    let Ok(f) = std::fs::File::open(base_dir.join(path)) else {
        return Ok(());
    };
    let mut first = Vec::new();
    let limit = crate::components::parse::DEFAULT_MAX_RECORD as u64;
    if std::io::Read::take(std::io::BufReader::new(f), limit)
        .read_until(b'\n', &mut first)
        .is_err()
    {
        return Ok(());
    }
    let line = String::from_utf8_lossy(&first);
    let line = line.trim_end_matches(['\n', '\r']);
    crate::components::parse::Parser::check_header(spec, line)
        .map_err(|why| format!("`{path}`: {why}"))
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
