//! The `aggregate` bolt: per key of its `by` fields, any of `count`, `sum`, `avg`, `min`, `max`,
//! `count_distinct`, `first`, `last`, `percentile` (a DDSketch, 1% relative accuracy), emitted
//! at the end of input (`emit: end`, the default), on every tick (`tick`: running values), or on
//! every change (`update`: the key's new row, once per change, nothing again at the end).
//! Output: the `by` fields, then one field per op (`count`, `sum_latency`, `p99_latency`, or
//! the name given with `as`).
//!
//! Stateful (`stateful: true`), its groups, or its windows' open panes, are the entries of its
//! checkpoints (see `state.rs`).

pub(crate) mod builtin;
mod closed;
mod exact;
pub(crate) mod expand;
mod groups;
mod keyed;
pub(crate) mod lag;
pub(crate) mod ops;
pub(crate) mod partial;
pub(crate) mod ranking;
mod reader_fold;
pub(crate) mod saved;
mod state;
pub(crate) mod window;

use super::{Bolt, BoltCollector, TaskContext};
use crate::model::plan::streams;
use crate::state::spill::SpillMap;
use crate::tuple::{Tuple, Value, Values};
use ops::{OpSpec, State};

/// When rows are emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Emit {
    End,
    Tick,
    Update,
}

const EMITS: &[&str] = &["end", "tick", "update"];

/// A checked `aggregate` configuration.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    by: Vec<String>,
    ops: Vec<OpSpec>,
    emit: Emit,
    window: Option<window::WindowSpec>,
    /// Event time: the field holding each tuple's time (epoch ms or RFC 3339).
    time: Option<String>,
    /// How late (ms) an event-time tuple may arrive before its windows close.
    lag: i64,
    /// Event time: how often (ms) the watermark moves (Storm's `withWatermarkInterval`);
    /// `None`: with every tuple.
    watermark: Option<i64>,
    /// Event time: after this long without a tuple an input no longer holds windows open.
    idle: Option<std::time::Duration>,
}

/// The stream tuples later than their windows go to, when wired.
const LATE_STREAM: &str = "late";

/// A `top` as an aggregate of one op (`count`, or `sum(score)`), and its `n`.
fn top_spec(
    args: &serde_json::Map<String, serde_json::Value>,
) -> Result<(Spec, usize), (&'static str, String)> {
    let n = match args.get("n") {
        None => 10,
        Some(v) => {
            v.as_u64()
                .filter(|n| *n >= 1)
                .ok_or(("n", "`n` must be a whole number ≥ 1".to_string()))? as usize
        }
    };
    let op = match args.get("score") {
        None => "count as score".to_string(),
        Some(serde_json::Value::String(f)) => format!("sum({f}) as score"),
        Some(_) => return Err(("score", "`score` must be a field name".into())),
    };
    let mut as_aggregate = args.clone();
    as_aggregate.remove("n");
    as_aggregate.remove("score");
    as_aggregate.insert("ops".into(), serde_json::json!([op]));
    Ok((Spec::from_args(&as_aggregate)?, n))
}

/// The output fields of a `top`: `window_start`, `window_end` (windowed), `rank`, the `by`
/// fields, `score`.
fn top_fields(spec: &Spec) -> Vec<String> {
    let bounds = ["window_start", "window_end"].map(String::from);
    let windowed = spec
        .window
        .is_some()
        .then_some(bounds)
        .into_iter()
        .flatten();
    windowed
        .chain(["rank".to_string()])
        .chain(spec.by.iter().cloned())
        .chain(["score".to_string()])
        .collect()
}

/// A text or a list of texts argument (`None` when absent).
fn names(
    args: &serde_json::Map<String, serde_json::Value>,
    key: &'static str,
    problem: &str,
) -> Result<Option<Vec<String>>, (&'static str, String)> {
    let bad = || (key, problem.to_string());
    match args.get(key) {
        None => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(vec![s.clone()])),
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(String::from).ok_or_else(bad))
            .collect::<Result<_, _>>()
            .map(Some),
        Some(_) => Err(bad()),
    }
}

type Args = serde_json::Map<String, serde_json::Value>;

/// `ops` (with `approx` turning `count_distinct` into its estimate).
fn ops_arg(args: &Args) -> Result<Vec<OpSpec>, (&'static str, String)> {
    let written = names(
        args,
        "ops",
        "`ops` must be a list such as [count, sum(latency)]",
    )?
    .unwrap_or_else(|| vec!["count".into()]);
    let approx = match args.get("approx") {
        None => false,
        Some(serde_json::Value::Bool(b)) => *b,
        Some(_) => return Err(("approx", "`approx` must be true or false".into())),
    };
    written
        .iter()
        .map(|o| OpSpec::parse(o).map_err(|e| ("ops", e)))
        .map(|o| {
            o.map(|mut o| {
                if approx && o.kind == ops::Kind::CountDistinct {
                    o.kind = ops::Kind::ApproxDistinct;
                }
                o
            })
        })
        .collect::<Result<Vec<_>, _>>()
}

/// `emit`: when an unwindowed aggregate sends its rows.
fn emit_arg(args: &Args) -> Result<Emit, (&'static str, String)> {
    Ok(match args.get("emit").and_then(|v| v.as_str()) {
        None | Some("end") => Emit::End,
        Some("tick") => Emit::Tick,
        Some("update") => Emit::Update,
        Some(other) => {
            return Err((
                "emit",
                format!("`emit` must be one of: end, tick, update (got `{other}`)"),
            ))
        }
    })
}

/// `watermark`, in milliseconds.
fn watermark_arg(args: &Args) -> Result<Option<i64>, (&'static str, String)> {
    Ok(match args.get("watermark") {
        None => None,
        Some(w) => Some(
            crate::config::duration_of(w)
                .ok_or((
                    "watermark",
                    "`watermark` must be a duration (`1s`)".to_string(),
                ))?
                .as_millis() as i64,
        ),
    })
}

impl Spec {
    /// The arguments as the runtime reads them; an error names the argument it is about.
    fn from_args(
        args: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Spec, (&'static str, String)> {
        let by = names(args, "by", "`by` must be field names")?.unwrap_or_default();
        let ops = ops_arg(args)?;
        let emit = emit_arg(args)?;
        let (window, time, lag) = window::window_args(args)?;
        let watermark = watermark_arg(args)?;
        let idle = window::idle_arg(args, time.as_deref())?;
        if watermark.is_some() && time.is_none() {
            return Err((
                "watermark",
                "`watermark` goes with event time: name the `time` field".into(),
            ));
        }
        if let Some(w) = &window {
            if emit != Emit::End {
                return Err((
                    "emit",
                    "a windowed aggregate emits each window when it closes: leave `emit` out"
                        .into(),
                ));
            }
            if time.is_some() && w.measure == window::Measure::Count {
                return Err((
                    "time",
                    "`time` goes with windows by duration, not by count".into(),
                ));
            }
        } else if time.is_some() || args.contains_key("lag") {
            return Err(("time", "`time` and `lag` need a `window`".into()));
        }
        let spec = Spec {
            by,
            ops,
            emit,
            window,
            time,
            lag,
            watermark,
            idle,
        };
        let names = spec.output_fields();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err((
                    "ops",
                    format!("two output fields would be named `{n}`: name one with `as`"),
                ));
            }
        }
        Ok(spec)
    }

    /// The `by` fields, then `window_start` and `window_end` when windowed, then one field
    /// per op: the order of the rows it emits.
    fn output_fields(&self) -> Vec<String> {
        let bounds = ["window_start", "window_end"].map(String::from);
        self.by
            .iter()
            .cloned()
            .chain(
                self.window
                    .is_some()
                    .then_some(bounds)
                    .into_iter()
                    .flatten(),
            )
            .chain(self.ops.iter().map(|o| o.name.clone()))
            .collect()
    }
}

struct Aggregate {
    spec: Spec,
    /// Positions of the `by` fields, of each op's field and of the event time in the input.
    keys: Vec<usize>,
    fields: Vec<Option<usize>>,
    time: Option<usize>,
    /// Without a window, each key's op states: in memory, or spilled to disk past
    /// `topology.state.memory.limit` when the run has a state dir.
    groups: SpillMap<Values, Vec<State>>,
    /// Keeps checkpointed state (the groups list the keys changed since the last checkpoint).
    stateful: bool,
    windows: Option<keyed::Windows>,
    /// Count windows: tuples seen.
    clock: i64,
    /// The time processing-time windows, `idle` and the `watermark` interval go by.
    machine_clock: crate::clock::Clock,
    /// Event time, per input component: the latest time seen (`i64::MIN` before its first).
    latest: Vec<i64>,
    /// When each input component last sent a tuple (for `idle`).
    heard: Vec<std::time::Instant>,
    /// The input components, when more than one (to tell a tuple's input by its task).
    inputs: Vec<String>,
    plan: Option<std::sync::Arc<crate::model::plan::Plan>>,
    /// With a `watermark` interval: the watermark the tuples so far allow, and when the
    /// windows last closed by it.
    pending_watermark: i64,
    watermark_moved: std::time::Instant,
    late: Option<crate::model::plan::StreamId>,
    late_dropped: u64,
    /// `topology.strict`: a late tuple with no `late` stream wired ends the run.
    strict: bool,
    /// Of `late_dropped`, those a restored checkpoint counted (before this run).
    late_restored: u64,
    unusable: u64,
    component: String,
    /// The `top` bolt: rank the keys by their one op and keep the best `n`.
    top: Option<usize>,
    /// The partial rankings of a `top` that runs as more than one task.
    partial: Option<ranking::Partial>,
    /// `emit: update`: the row last sent per key, so a tuple that leaves a row as it was
    /// sends nothing.
    sent: window::KeyMap<Values>,
    /// The task that answers for an empty input (see `answer_empty_input`): the only one, or
    /// the first, which a global grouping feeds.
    answers_empty: bool,
    /// Event times read so far (the minute of the last, to read the next faster).
    times: window::EventTimes,
    /// Its lines may be folded where they are read (`topology.partial.aggregation` is not
    /// false; see `reader_fold.rs`).
    folds: bool,
}

/// Where an aggregate reads its input and what it is wired to, placed from a task's context:
/// by `prepare`, or, for a fold a spout runs on its reader threads while the task is still
/// to be prepared on a thread of its own, by `reader_fold_for`.
struct Placing {
    keys: Vec<usize>,
    fields: Vec<Option<usize>>,
    time: Option<usize>,
    late: Option<crate::model::plan::StreamId>,
    strict: bool,
    folds: bool,
    /// The input components, each once.
    inputs: Vec<String>,
}

impl Aggregate {
    /// Its input placed from `ctx`.
    fn placing(&self, ctx: &TaskContext) -> anyhow::Result<Placing> {
        let at = |f: &str| super::input_positions(ctx, &[f]).map(|p| p[0]);
        let mut inputs: Vec<String> = Vec::new();
        for stream in ctx.topology.inputs_of(&ctx.component) {
            if !inputs.contains(&stream.from) {
                inputs.push(stream.from.clone());
            }
        }
        Ok(Placing {
            keys: super::input_positions(ctx, &self.spec.by)?,
            fields: self
                .spec
                .ops
                .iter()
                .map(|o| o.field.as_deref().map(at).transpose())
                .collect::<anyhow::Result<_>>()?,
            time: self.spec.time.as_deref().map(at).transpose()?,
            late: super::wired_stream(ctx, LATE_STREAM),
            strict: ctx
                .config
                .get_bool(crate::components::parse::STRICT_KEY)
                .unwrap_or(false),
            folds: ctx.config.get_bool(crate::model::partials::PARTIAL_KEY) != Some(false),
            inputs,
        })
    }

    /// Its input as `prepare` placed it.
    fn placed(&self) -> Placing {
        Placing {
            keys: self.keys.clone(),
            fields: self.fields.clone(),
            time: self.time,
            late: self.late,
            strict: self.strict,
            folds: self.folds,
            inputs: self.inputs.clone(),
        }
    }

    fn new(args: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Aggregate> {
        let spec = Spec::from_args(args).map_err(|(_, e)| anyhow::anyhow!("aggregate: {e}"))?;
        let machine_clock = crate::clock::Clock::system();
        Ok(Aggregate {
            windows: spec
                .window
                .map(|w| keyed::Windows::new(w, groups::pane_maker(&spec))),
            groups: groups::map(&spec),
            spec,
            keys: Vec::new(),
            fields: Vec::new(),
            time: None,
            stateful: false,
            clock: i64::MIN,
            latest: vec![i64::MIN],
            heard: vec![machine_clock.now()],
            inputs: Vec::new(),
            plan: None,
            pending_watermark: i64::MIN,
            watermark_moved: machine_clock.now(),
            machine_clock,
            late: None,
            late_dropped: 0,
            strict: false,
            late_restored: 0,
            unusable: 0,
            component: String::new(),
            top: None,
            partial: None,
            sent: window::KeyMap::default(),
            answers_empty: true,
            times: window::EventTimes::default(),
            folds: false,
        })
    }

    /// Keep checkpointed state (`stateful: true`): [`CheckpointParticipant::state`](crate::components::CheckpointParticipant::state) is then `Some`.
    fn with_state(mut self, stateful: bool) -> Aggregate {
        self.stateful = stateful;
        self.groups.track_changes(stateful);
        if let Some(w) = self.windows.as_mut() {
            w.track_changes(stateful);
        }
        self
    }

    /// The `top` bolt: per window (or for the whole input), the `n` keys of `by` with the
    /// highest `score` (a field summed, or the count of tuples), ranked from 1.
    fn top(args: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Aggregate> {
        let (spec, n) = top_spec(args).map_err(|(_, e)| anyhow::anyhow!("top: {e}"))?;
        let mut a = Aggregate::new(&serde_json::Map::new())?;
        a.windows = spec
            .window
            .map(|w| keyed::Windows::new(w, groups::pane_maker(&spec)));
        a.groups = groups::map(&spec);
        a.spec = spec;
        a.top = Some(n);
        if args.get(ranking::RANKING_ARG).and_then(|v| v.as_str()) == Some(ranking::PARTIAL) {
            a.partial = Some(ranking::Partial::new(&a.spec.by));
        }
        Ok(a)
    }

    fn row(&self, key: &Values, states: &[State]) -> Values {
        row_of(key, states)
    }

    /// Every key's row, in key order (deterministic output).
    fn emit_all(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.groups.spilled() {
            return self.emit_spilled(out);
        }
        let mut rows: Vec<(&Values, &Vec<State>)> = self.groups.hot().collect();
        sort_by_key_text(&mut rows, |r| r.0);
        if let Some(n) = self.top {
            let ranked = rank(rows.iter().map(|(k, s)| (*k, s[0].value())), n);
            self.send_ranked(ranked, out);
            return Ok(());
        }
        for (k, states) in rows {
            out.send(streams::DEFAULT, &[], self.row(k, states));
        }
        Ok(())
    }

    /// [`Aggregate::emit_all`] once groups spilled: read in key order from memory and disk,
    /// a `top` keeping only its best `n` as it reads.
    fn emit_spilled(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let top = self.top;
        let mut best = groups::Best::default();
        if let Some(sorted) = self.groups.sorted()? {
            for row in sorted {
                let (_, key, states) = row?;
                match top {
                    Some(n) => best.offer(key, states[0].value(), n),
                    None => out.send(streams::DEFAULT, &[], row_of(&key, &states)),
                }
            }
        }
        if top.is_some() {
            self.send_ranked(best.ranked(), out);
        }
        Ok(())
    }

    fn send_ranked(&self, ranked: Vec<Values>, out: &mut dyn BoltCollector) {
        for row in ranked {
            let row = match &self.partial {
                Some(_) => ranking::candidate(i64::MAX, None, row),
                None => row,
            };
            out.send(streams::DEFAULT, &[], row);
        }
        if let Some(p) = &self.partial {
            out.send(streams::DEFAULT, &[], ranking::progress(i64::MAX, p.width));
        }
    }

    /// A global aggregate (no `by`, not windowed, not a `top`) over an empty input still has
    /// its one row, as in SQL: `count` 0 (and `count_distinct` 0), every other op null. Sent
    /// by one task: the only one, or the first when a global grouping feeds it (the DSL's
    /// default without `by`); tasks sharing a shuffled input each answer for a part only.
    fn answer_empty_input(&self, out: &mut dyn BoltCollector) {
        let global = self.spec.by.is_empty() && self.windows.is_none() && self.top.is_none();
        if global && self.answers_empty && self.groups.is_empty() {
            let states: Vec<State> = self.spec.ops.iter().map(|o| State::new(o.kind)).collect();
            out.send(streams::DEFAULT, &[], self.row(&Values::new(), &states));
        }
    }

    /// Emit the windows that end at or before `watermark` (and, as partial rankings, how far
    /// they have closed, once per window step).
    /// Fails when spilled panes cannot be read (the run ends).
    fn close_windows(
        &mut self,
        watermark: i64,
        out: &mut dyn BoltCollector,
    ) -> Result<(), super::FatalError> {
        self.close_windows_to(watermark, out)
            .map_err(|e| super::FatalError(format!("{}: {e:#}", self.component)))?;
        let every = self.spec.window.map_or(1, |w| w.every);
        if let Some(p) = self.partial.as_mut() {
            if p.due(watermark, every) {
                out.send(streams::DEFAULT, &[], ranking::progress(watermark, p.width));
            }
        }
        Ok(())
    }

    fn close_windows_to(
        &mut self,
        watermark: i64,
        out: &mut dyn BoltCollector,
    ) -> anyhow::Result<()> {
        let Some(w) = self.windows.as_mut() else {
            return Ok(());
        };
        let millis = w.measure() == window::Measure::Millis;
        let (top, partial) = (self.top, self.partial.is_some());
        w.close(watermark, |start_ms, end_ms, rows| {
            let bound = |t: i64| match millis {
                true => window::time_value(t),
                false => Value::Int(t),
            };
            let window = closed::Closed {
                span: (start_ms, end_ms),
                bounds: [bound(start_ms), bound(end_ms)],
                watermark,
                partial,
            };
            match top {
                Some(n) => window.send_ranked(rows, n, out),
                None => window.send_rows(rows, out),
            }
        })
    }

    /// The time of a tuple in its window's measure, or `None` when its time field is unusable.
    fn time_of(&mut self, input: &Tuple) -> Option<i64> {
        let w = self.windows.as_ref()?;
        if w.measure() == window::Measure::Count {
            self.clock = self.clock.max(-1) + 1;
            return Some(self.clock);
        }
        match self.time {
            Some(i) => input.values.get(i).and_then(|v| self.times.read(v)),
            None => Some(self.machine_clock.epoch_millis()),
        }
    }

    /// Add `input` to the states of `key` (in the window of time `t`); whether every op
    /// could use its value. Fails when spilled groups cannot be read or written.
    fn add(&mut self, input: &Tuple, key: &Values, t: Option<i64>) -> anyhow::Result<bool> {
        let ops = &self.spec.ops;
        let fresh = || ops.iter().map(|o| State::new(o.kind)).collect();
        let fields = &self.fields;
        let add_all = |states: &mut Vec<State>| {
            let mut all_used = true;
            for (state, field) in states.iter_mut().zip(fields) {
                all_used &= state.add(field.and_then(|i| input.values.get(i)));
            }
            all_used
        };
        match (self.windows.as_mut(), t) {
            (Some(w), Some(t)) => w.update(t, key, fresh, add_all),
            (Some(_), None) => Ok(false),
            (None, _) => self
                .groups
                .update(key.as_slice(), || key.clone(), fresh, add_all),
        }
    }

    fn windowed(
        &mut self,
        input: &Tuple,
        key: &Values,
        out: &mut dyn BoltCollector,
    ) -> Result<(), super::FatalError> {
        let Some(t) = self.time_of(input) else {
            self.unusable += 1;
            return Ok(());
        };
        let late = self.windows.as_ref().is_some_and(|w| w.is_late(t));
        if late {
            match self.late {
                Some(stream) => out.send(stream, &[input], input.values.clone()),
                None if self.strict => {
                    return Err(super::FatalError(format!(
                        "a tuple came later than its windows (time {t} ms) (topology.strict: a late tuple ends the run; wire the `late` stream to keep such tuples)"
                    )));
                }
                None => self.left_out_late(1, out),
            }
            return Ok(());
        }
        if !self
            .add(input, key, Some(t))
            .map_err(|e| super::FatalError(format!("{e:#}")))?
        {
            self.unusable += 1;
        }
        if self.time.is_some() {
            self.pending_watermark = self.see(input, t);
            self.move_watermark(out)?;
        } else if self
            .windows
            .as_ref()
            .is_some_and(|w| w.measure() == window::Measure::Count)
        {
            self.close_windows(self.clock + 1, out)?;
        }
        Ok(())
    }
}

impl Aggregate {
    /// Close the windows the watermark has passed: at once, or with a `watermark` interval
    /// once that much time has gone by since the last move (as Storm's watermark generator
    /// runs periodically; a tuple behind the last watermark is late, not one behind the
    /// newest event time).
    fn move_watermark(&mut self, out: &mut dyn BoltCollector) -> Result<(), super::FatalError> {
        if let Some(every) = self.spec.watermark {
            if self.machine_clock.since(self.watermark_moved).as_millis() < every as u128 {
                return Ok(());
            }
            self.watermark_moved = self.machine_clock.now();
        }
        self.close_windows(self.pending_watermark, out)
    }

    /// Warn of the first value a numeric op could not use (the others are counted and
    /// reported at the end).
    fn warn_unusable_once(&self) {
        if self.unusable == 0 {
            tracing::warn!(
                "{}: a value that is not a number was skipped by a numeric op (more are counted and reported at the end)",
                self.component
            );
        }
    }

    /// Record event time `t` on the tuple's input; the watermark: the lowest of the inputs'
    /// latest times, less the lag (as Storm's watermark is the lowest over the input streams),
    /// so a slower input holds windows open instead of having its tuples come late.
    fn see(&mut self, input: &Tuple, t: i64) -> i64 {
        let at = match (&self.plan, self.inputs.len()) {
            (Some(plan), 2..) => {
                let from = plan.component_of_task(input.source_task);
                self.inputs.iter().position(|c| c == from).unwrap_or(0)
            }
            _ => 0,
        };
        self.latest[at] = self.latest[at].max(t);
        // When inputs were last heard from matters with `idle` only: no clock read otherwise.
        let idle = self.spec.idle.map(|d| {
            let now = self.machine_clock.now();
            if let Some(h) = self.heard.get_mut(at) {
                *h = now;
            }
            (d, now)
        });
        let lowest = window::lowest_active(&self.latest, &self.heard, idle);
        lowest.saturating_sub(self.spec.lag)
    }
}

/// The `n` best keys by score, highest first (ties in key order): `rank, key..., score` rows.
pub(crate) fn rank<'a>(scores: impl Iterator<Item = (&'a Values, Value)>, n: usize) -> Vec<Values> {
    let mut all: Vec<(&Values, Value)> = scores.collect();
    // A stable sort keeps the key order of equal scores.
    // Scores compare exactly (a sum of integers past 2^53 is not rounded); a score that is not
    // a number (a sum of nothing) ranks last.
    all.sort_by(|a, b| match (a.1.as_num(), b.1.as_num()) {
        (Some(x), Some(y)) => y.order(x),
        (x, y) => y.is_some().cmp(&x.is_some()),
    });
    all.into_iter()
        .take(n)
        .enumerate()
        .map(|(i, (k, score))| {
            std::iter::once(Value::Int(i as i64 + 1))
                .chain(k.iter().cloned())
                .chain([score])
                .collect()
        })
        .collect()
}

/// A group's output row: its key values, then each op's value.
fn row_of(key: &Values, states: &[State]) -> Values {
    key.iter()
        .cloned()
        .chain(states.iter().map(State::value))
        .collect()
}

/// Sort rows by the text of their key values (keys of mixed types still get one order).
/// A fixed order of the value types, for ties of equal text.
fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Int(_) => 2,
        Value::Float(_) => 3,
        Value::Str(_) => 4,
        Value::List(_) => 5,
        Value::Map(_) => 6,
    }
}

pub(crate) fn sort_by_key_text<T>(rows: &mut [T], key: impl Fn(&T) -> &Values) {
    // The text, then each value's type: keys of the same text (`1` and `1.0` print alike)
    // still sort the same way every run, whatever order a hash map gave them in.
    let text = |k: &Values| {
        let mut s = String::new();
        let mut types = Vec::with_capacity(k.len());
        for v in k {
            v.write_plain(&mut s);
            s.push('\u{1f}');
            types.push(type_rank(v));
        }
        (s, types)
    };
    rows.sort_by_cached_key(|r| text(key(r)));
}

impl Bolt for Aggregate {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        let placing = self.placing(ctx)?;
        self.keys = placing.keys;
        self.fields = placing.fields;
        self.time = placing.time;
        self.late = placing.late;
        self.strict = placing.strict;
        self.folds = placing.folds;
        let inputs = placing.inputs;
        self.component = ctx.component.clone();
        let budget = crate::components::memory::KeyBudget::for_task(ctx, "aggregate");
        let spill = crate::components::memory::spill_to(ctx);
        if let Some(w) = self.windows.as_mut() {
            let share = budget.fresh();
            let to = spill.clone().map(|s| s.with_suffix("window"));
            w.bound(Box::new(move || Box::new(share.fresh())), to);
        }
        self.groups.bound(Box::new(budget), spill);
        self.latest = vec![i64::MIN; inputs.len().max(1)];
        self.machine_clock = ctx.clock.clone();
        self.heard = vec![self.machine_clock.now(); inputs.len().max(1)];
        self.inputs = inputs;
        self.plan = Some(ctx.plan.clone());
        self.watermark_moved = self.machine_clock.now();
        let one_task = ctx
            .plan
            .component(&ctx.component)
            .is_none_or(|c| c.tasks.start() == c.tasks.end());
        let all_global = ctx
            .topology
            .inputs_of(&ctx.component)
            .all(|s| s.grouping == crate::model::Grouping::Global);
        self.answers_empty = ctx.task_index == 0 && (one_task || all_global);
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            if self.spec.emit == Emit::Tick {
                self.emit_all(out)?;
            }
            return Ok(());
        }
        if input.stream == streams::PARTIAL {
            return self.add_partial(input);
        }
        if input.stream == streams::FOLDED {
            return self.add_folded(input, out);
        }
        let key: Values = self
            .keys
            .iter()
            .map(|&i| input.values.get(i).cloned().unwrap_or(Value::Null))
            .collect();
        if self.windows.is_some() {
            self.windowed(input, &key, out)?;
            return Ok(());
        }
        let used = self.add(input, &key, None)?;
        if !used {
            self.warn_unusable_once();
            self.unusable += 1;
        }
        if self.spec.emit == Emit::Update {
            let Some(states) = self.groups.get_hot(key.as_slice()) else {
                anyhow::bail!("aggregate: the group just updated is not in memory");
            };
            let row = self.row(&key, states);
            if self.sent.get(&key) != Some(&row) {
                self.sent.insert(key, row.clone());
                out.send(streams::DEFAULT, &[input], row);
            }
        }
        Ok(())
    }

    /// Processing-time windows close by the clock, input or not.
    fn poll(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let by_clock = self.time.is_none()
            && self
                .windows
                .as_ref()
                .is_some_and(|w| w.measure() == window::Measure::Millis);
        if by_clock {
            self.close_windows(self.machine_clock.epoch_millis(), out)?;
        } else if self.spec.idle.is_some() && self.time.is_some() {
            // A silent input may have turned idle: the others alone move the watermark.
            let idle = self.spec.idle.map(|d| (d, self.machine_clock.now()));
            let lowest = window::lowest_active(&self.latest, &self.heard, idle);
            let watermark = lowest.saturating_sub(self.spec.lag);
            if watermark > self.pending_watermark {
                self.pending_watermark = watermark;
                self.move_watermark(out)?;
            }
        } else if self.spec.watermark.is_some() && self.pending_watermark > i64::MIN {
            self.move_watermark(out)?;
        }
        Ok(())
    }

    fn reader_fold(&self) -> Option<Box<dyn crate::components::ReaderFold>> {
        let fold = self.chunk_fold(&self.placed())?;
        Some(Box::new(fold))
    }

    fn reader_fold_for(&self, ctx: &TaskContext) -> Option<Box<dyn crate::components::ReaderFold>> {
        let fold = self.chunk_fold(&self.placing(ctx).ok()?)?;
        Some(Box::new(fold))
    }

    fn poll_interval(&self) -> Option<std::time::Duration> {
        let by_clock = self.spec.time.is_none()
            && self
                .spec
                .window
                .is_some_and(|w| w.measure == window::Measure::Millis);
        let every = self.spec.watermark.map(|w| w.clamp(1, 100) as u64);
        let idle = self.spec.idle.filter(|_| self.spec.time.is_some());
        let idle = idle.map(|d| (d.as_millis() as u64 / 4).clamp(10, 100));
        by_clock
            .then_some(std::time::Duration::from_millis(20))
            .or(every.or(idle).map(std::time::Duration::from_millis))
    }

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.windows.is_some() {
            // End of input: every open window is emitted.
            self.close_windows(i64::MAX, out)?;
        } else if self.spec.emit != Emit::Update {
            self.emit_all(out)?;
        }
        self.answer_empty_input(out);
        if self.unusable > 0 {
            tracing::warn!(
                "{}: {} value(s) could not be used (not numbers for a numeric op, or no usable event time) and were skipped",
                self.component,
                self.unusable
            );
        }
        if self.late_dropped > self.late_restored {
            let before = match self.late_restored {
                0 => String::new(),
                n => format!(" ({n} more before this run, counted in the state dir)"),
            };
            tracing::warn!(
                "{}: {} tuple(s) came later than their windows and were left out{before}",
                self.component,
                self.late_dropped - self.late_restored
            );
        }
        Ok(())
    }
}

impl crate::components::CheckpointParticipant for Aggregate {
    fn state(&mut self) -> Option<&mut dyn super::BoltState> {
        match self.stateful {
            true => Some(self),
            false => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::state_check::{tuple, Rows};
    use std::time::Duration;

    /// A processing-time window closes when the task's clock passes its end, input or not,
    /// and not before (a clock moved by hand: no sleeping).
    #[test]
    fn a_processing_time_window_closes_when_the_clock_passes_its_end() {
        let args = serde_json::json!({"window": {"tumbling": "10s"}, "ops": ["count"]});
        let mut agg = Aggregate::new(args.as_object().expect("an object")).expect("valid");
        agg.fields = vec![None];
        agg.machine_clock = crate::clock::Clock::manual_at(60_000);
        let mut out = Rows::default();
        for _ in 0..3 {
            agg.execute(&tuple(smallvec::smallvec![Value::Int(1)]), &mut out)
                .expect("execute");
        }
        agg.machine_clock.advance(Duration::from_millis(9_999));
        agg.poll(&mut out).expect("poll");
        assert!(out.0.is_empty(), "closed early: {:?}", out.0);
        agg.machine_clock.advance(Duration::from_millis(1));
        agg.poll(&mut out).expect("poll");
        let [(_, row)] = &out.0[..] else {
            panic!("one window, one row: {:?}", out.0)
        };
        for want in [
            Value::Int(3),
            window::time_value(60_000),
            window::time_value(70_000),
        ] {
            assert!(row.contains(&want), "{want:?} not in {row:?}");
        }
    }
}
