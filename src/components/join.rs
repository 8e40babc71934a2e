//! The `join` bolt (Storm's JoinBolt): tuples of two or more input components, joined on a key
//! each names, the first input being the left side and each later one joined to it with
//! `kind: inner` (default) or `left`; `select` picks `COMPONENT.FIELD`s for the output, named by
//! their field part. Without a window the whole input is joined at its end; with a window
//! (tumbling or sliding, by duration or by count, as `aggregate`'s: processing time, or event
//! time from the field `time` every input has, with `lag`) each window's tuples are joined
//! when it closes. The tuples are kept per pane of the window's step, so a sliding window
//! joins the panes it spans. Keys match by their text form, as `lookup` does.
//!
//! Stateful (`stateful: true`), every tuple it keeps is an entry of its checkpoints (see
//! `join/state.rs`). The tuples are kept per key in spill maps (see `join/held.rs`): past
//! `topology.state.memory.limit` they go to disk when the run has a state dir.

pub(crate) mod builtin;
mod held;
mod state;

use super::aggregate::window::{self, Measure, Panes, WindowSpec};
use super::{Bolt, BoltCollector, TaskContext};
use crate::state::spill::SpillTo;
use crate::tuple::{Tuple, Value, Values};
use held::Pane;
use std::collections::HashMap;
use std::time::Duration;

/// The stream tuples later than their windows go to, when wired: `from` (the input component)
/// and `late_tuple` (the tuple as a map of its fields), since the inputs' fields differ.
const LATE_STREAM: &str = "late";
/// The fields of the `late` stream.
const LATE_FIELDS: [&str; 2] = ["from", "late_tuple"];

/// One input as configured.
#[derive(Debug, Clone)]
struct Input {
    from: String,
    key: String,
    left: bool,
}

/// A checked `join` configuration.
#[derive(Debug, Clone)]
struct Spec {
    inputs: Vec<Input>,
    /// (component, field) pairs.
    select: Vec<(String, String)>,
    window: Option<WindowSpec>,
    /// Event time: the field of every input holding its time (epoch ms or RFC 3339).
    time: Option<String>,
    /// How late (ms) an event-time tuple may come before its windows close.
    lag: i64,
    /// Event time: after this long without a tuple an input no longer holds windows open.
    idle: Option<Duration>,
}

/// The keys an entry of `inputs` may have.
const INPUT_KEYS: [&str; 3] = ["from", "key", "kind"];

/// An entry of `inputs` is a map of known keys (a misspelt `kind` would quietly make a left
/// join an inner one).
fn input_keys(entry: &serde_json::Value) -> Result<(), String> {
    let Some(map) = entry.as_object() else {
        return Err("each input is a map: {from: COMPONENT, key: FIELD}".into());
    };
    for k in map.keys() {
        if !INPUT_KEYS.contains(&k.as_str()) {
            let hint = crate::syntax::suggest::suggest(k, INPUT_KEYS.iter().copied())
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            return Err(format!("an input has no key `{k}` (from, key, kind){hint}"));
        }
    }
    Ok(())
}

impl Spec {
    fn from_args(
        args: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Spec, (&'static str, String)> {
        let bad = |m: &str| ("inputs", m.to_string());
        let list = args
            .get("inputs")
            .and_then(|v| v.as_array())
            .ok_or_else(|| bad("`join` needs `inputs`: [{from: A, key: k}, {from: B, key: k}]"))?;
        let inputs = list
            .iter()
            .map(|i| {
                input_keys(i).map_err(|m| bad(&m))?;
                let text = |k: &str| i.get(k).and_then(|v| v.as_str()).map(String::from);
                let left = match text("kind").as_deref() {
                    None | Some("inner") => false,
                    Some("left") => true,
                    Some(other) => {
                        return Err(bad(&format!("`kind` is inner or left, not `{other}`")))
                    }
                };
                Ok(Input {
                    from: text("from").ok_or_else(|| bad("each input needs `from`"))?,
                    key: text("key").ok_or_else(|| bad("each input needs `key`"))?,
                    left,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if inputs.len() < 2 {
            return Err(bad("`join` needs at least two inputs"));
        }
        let select = args
            .get("select")
            .and_then(|v| v.as_array())
            .ok_or((
                "select",
                "`join` needs `select`: [A.field, B.field]".to_string(),
            ))?
            .iter()
            .map(|s| {
                let s = s.as_str().unwrap_or_default();
                s.split_once('.')
                    .filter(|(c, f)| !c.is_empty() && !f.is_empty())
                    .map(|(c, f)| (c.to_string(), f.to_string()))
                    .ok_or(("select", format!("`{s}` is not COMPONENT.FIELD")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        for (i, (_, f)) in select.iter().enumerate() {
            if select[..i].iter().any(|(_, g)| g == f) {
                return Err((
                    "select",
                    format!("two selected fields are named `{f}`: an output field has one name"),
                ));
            }
        }
        let (window, time, lag) = window::window_args(args)?;
        let idle = window::idle_arg(args, time.as_deref())?;
        match window {
            None if time.is_some() || args.contains_key("lag") => {
                return Err(("time", "`time` and `lag` need a `window`".into()))
            }
            Some(w) if time.is_some() && w.measure == Measure::Count => {
                return Err((
                    "time",
                    "`time` goes with windows by duration, not by count".into(),
                ))
            }
            _ => {}
        }
        Ok(Spec {
            inputs,
            select,
            window,
            time,
            lag,
            idle,
        })
    }

    fn output_fields(&self) -> Vec<String> {
        self.select.iter().map(|(_, f)| f.clone()).collect()
    }
}

struct Join {
    spec: Spec,
    /// Per input: key position, and the positions of its selected fields' (output index, field).
    keys: Vec<usize>,
    picks: Vec<Vec<(usize, usize)>>,
    /// Per input: where its event time is.
    times: Vec<Option<usize>>,
    /// Input index of each source component.
    input_of: HashMap<String, usize>,
    /// Without a window: every tuple so far.
    whole: Pane,
    /// With a window: the tuples per pane.
    panes: Option<Panes<Pane>>,
    /// Count windows: tuples seen.
    clock: i64,
    /// The time processing-time windows and `idle` go by.
    machine_clock: crate::clock::Clock,
    /// Event time: the latest time seen on each input (`i64::MIN` before its first tuple).
    latest: Vec<i64>,
    /// When each input last sent a tuple (for `idle`).
    heard: Vec<std::time::Instant>,
    late: u64,
    /// The `late` stream, when wired.
    late_stream: Option<crate::model::plan::StreamId>,
    /// `topology.strict`: a late tuple with no `late` stream wired ends the run.
    strict: bool,
    /// Each input's field names, to describe a late tuple.
    input_fields: Vec<Vec<String>>,
    unusable: u64,
    component: String,
    /// The plan, to know a tuple's component from its source task.
    plan: Option<std::sync::Arc<crate::model::plan::Plan>>,
    /// Stateful: tuples kept and dropped since the last checkpoint (`None`: stateless).
    changed: Option<state::Changed>,
    /// The task's share of `topology.state.memory.limit`, of which each pane takes a fresh
    /// one.
    budget: super::memory::KeyBudget,
    /// Where panes spill past the limit (`None`: no state dir; the limit ends the run).
    spill: Option<SpillTo>,
}

impl Join {
    fn new(args: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Join> {
        let spec = Spec::from_args(args).map_err(|(_, e)| anyhow::anyhow!("join: {e}"))?;
        let n = spec.inputs.len();
        let machine_clock = crate::clock::Clock::system();
        Ok(Join {
            panes: spec.window.map(Panes::new),
            spec,
            keys: Vec::new(),
            picks: vec![Vec::new(); n],
            times: vec![None; n],
            input_of: HashMap::new(),
            whole: held::new_pane(n, &Default::default(), &None, "whole"),
            clock: i64::MIN,
            latest: vec![i64::MIN; n],
            heard: vec![machine_clock.now(); n],
            machine_clock,
            late: 0,
            late_stream: None,
            strict: false,
            input_fields: vec![Vec::new(); n],
            unusable: 0,
            component: String::new(),
            plan: None,
            changed: None,
            budget: Default::default(),
            spill: None,
        })
    }

    /// Keep checkpointed state (`stateful: true`): [`CheckpointParticipant::state`](crate::components::CheckpointParticipant::state) is then `Some`.
    fn with_state(mut self, stateful: bool) -> Join {
        self.changed = stateful.then(Default::default);
        self
    }

    /// Keep a tuple of input `i` (and join what its time closes). Without a window every
    /// tuple is kept to the end. Fails past `topology.state.memory.limit` with nowhere to
    /// spill, or when spilled tuples cannot be read or written.
    fn execute_input(
        &mut self,
        i: usize,
        input: &Tuple,
        out: &mut dyn BoltCollector,
    ) -> anyhow::Result<()> {
        let key = input
            .values
            .get(self.keys[i])
            .map(Value::key_text)
            .unwrap_or_default();
        if self.panes.is_some() {
            self.windowed(i, key, input, out)
        } else {
            let n = self.spec.inputs.len();
            keep(
                &mut self.whole,
                key,
                input,
                (None, i, n),
                self.changed.as_mut(),
            )
        }
    }

    /// Join and emit every window that ends at or before `watermark`, oldest first. Fails
    /// when spilled panes cannot be read.
    fn close(&mut self, watermark: i64, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let Some(panes) = self.panes.as_mut() else {
            return Ok(());
        };
        let starts = panes.due(watermark);
        if starts.is_empty() {
            return Ok(());
        }
        let shape = held::Shape {
            picks: &self.picks,
            inputs: &self.spec.inputs,
            width: self.spec.select.len(),
        };
        for start in starts {
            shape.join(panes.window_mut(start), out)?;
        }
        let retired = panes.retire();
        if let Some(changed) = self.changed.as_mut() {
            changed.retired(retired)?;
        }
        Ok(())
    }

    /// Spill past `limit` bytes to files in `dir` (tests: as `prepare` does with a state dir).
    #[cfg(test)]
    fn spill_for_test(&mut self, dir: &std::path::Path, limit: u64) {
        self.budget = super::memory::KeyBudget::with_limit(limit, "join (test)");
        self.spill = Some(SpillTo {
            path: dir.join("join-0.redb"),
            cache: 1 << 20,
        });
        self.whole = self.new_pane("whole");
    }

    /// Whether any of the tuples kept went to disk.
    #[cfg(test)]
    fn spilled(&self) -> bool {
        let mut panes = self.panes.iter().flat_map(|p| p.all()).map(|(_, p)| p);
        self.whole.spilled() || panes.any(Pane::spilled)
    }

    /// A new pane's tuples, bound to the task's share of the memory limit.
    fn new_pane(&self, suffix: &str) -> Pane {
        held::new_pane(self.spec.inputs.len(), &self.budget, &self.spill, suffix)
    }

    /// The time of input `i`'s tuple in its window's measure; `None` when it has no usable
    /// event time.
    fn time_of(&mut self, i: usize, input: &Tuple) -> Option<i64> {
        let spec = self.spec.window?;
        if spec.measure == Measure::Count {
            self.clock = self.clock.max(-1) + 1;
            return Some(self.clock);
        }
        match self.times[i] {
            Some(at) => input.values.get(at).and_then(window::event_time),
            None => Some(self.machine_clock.epoch_millis()),
        }
    }

    /// Keep a tuple in its window's pane, then close what its time closes.
    fn windowed(
        &mut self,
        i: usize,
        key: String,
        input: &Tuple,
        out: &mut dyn BoltCollector,
    ) -> anyhow::Result<()> {
        let Some(t) = self.time_of(i, input) else {
            self.unusable += 1;
            out.dropped(1);
            return Ok(());
        };
        let Some(panes) = self.panes.as_mut() else {
            return Ok(());
        };
        if panes.is_late(t) {
            return Ok(self.left_late(i, t, input, out)?);
        }
        let start = panes.pane_start(t);
        let (n, budget, spill) = (self.spec.inputs.len(), &self.budget, &self.spill);
        let suffix = format!("pane{start}");
        let pane = panes
            .pane_at_with(start, || held::new_pane(n, budget, spill, &suffix))
            .map_err(|e| anyhow::anyhow!(e))?;
        keep(pane, key, input, (Some(start), i, n), self.changed.as_mut())?;
        let measure = panes.spec().measure;
        match measure {
            Measure::Count => self.close(self.clock + 1, out)?,
            Measure::Millis if self.spec.time.is_some() => {
                self.latest[i] = self.latest[i].max(t);
                // When inputs were last heard from matters with `idle` only.
                if let (Some(_), Some(h)) = (self.spec.idle, self.heard.get_mut(i)) {
                    *h = self.machine_clock.now();
                }
                let watermark = self.watermark();
                self.close(watermark, out)?;
            }
            Measure::Millis => {}
        }
        Ok(())
    }
}

impl Join {
    /// Event time: the lowest of the inputs' latest times, less the lag, once every input has
    /// delivered a tuple (as Storm's watermark generator takes the lowest over its input
    /// streams), so a slower input holds windows open instead of making its tuples late.
    fn watermark(&self) -> i64 {
        let idle = self.spec.idle.map(|d| (d, self.machine_clock.now()));
        let lowest = window::lowest_active(&self.latest, &self.heard, idle);
        lowest.saturating_sub(self.spec.lag)
    }

    /// A tuple later than its windows: onto the `late` stream when wired, else counted.
    fn left_late(
        &mut self,
        i: usize,
        t: i64,
        input: &Tuple,
        out: &mut dyn BoltCollector,
    ) -> Result<(), super::FatalError> {
        let Some(stream) = self.late_stream else {
            if self.strict {
                return Err(super::FatalError(format!(
                    "a tuple came later than its windows (time {t} ms) (topology.strict: a late tuple ends the run; wire the `late` stream to keep such tuples)"
                )));
            }
            if self.late == 0 {
                tracing::warn!(
                    "{}: a tuple came later than its windows and was left out (wire the `late` stream to keep such tuples)",
                    self.component
                );
            }
            self.late += 1;
            out.dropped(1);
            return Ok(());
        };
        let fields = self.input_fields[i].iter().cloned();
        let tuple: std::collections::BTreeMap<String, Value> =
            fields.zip(input.values.iter().cloned()).collect();
        let row: Values = [
            Value::Str(self.spec.inputs[i].from.as_str().into()),
            Value::Map(Box::new(tuple)),
        ]
        .into_iter()
        .collect();
        out.send(stream, &[input], row);
        Ok(())
    }
}

/// Keep input `i`'s tuple (of `n` inputs) under `key` in `rows` (the pane starting at
/// `pane`, or the whole input), listed in `changed` when stateful.
fn keep(
    rows: &mut Pane,
    key: String,
    input: &Tuple,
    (pane, i, n): (Option<i64>, usize, usize),
    changed: Option<&mut state::Changed>,
) -> anyhow::Result<()> {
    let new = || held::Held::new(n);
    let push = |h: &mut held::Held| h.push(i, input.values.clone());
    let pos = rows.update(key.as_str(), || key.clone(), new, push)?;
    if let Some(c) = changed {
        c.kept.push((pane, i, key, pos));
    }
    Ok(())
}

impl Bolt for Join {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.machine_clock = ctx.clock.clone();
        self.heard = vec![self.machine_clock.now(); self.heard.len()];
        self.budget = super::memory::KeyBudget::for_task(ctx, "join");
        self.spill = super::memory::spill_to(ctx);
        self.whole = self.new_pane("whole");
        let fields_of = |c: &str| -> anyhow::Result<Vec<String>> {
            let stream = ctx
                .topology
                .inputs_of(&ctx.component)
                .find(|s| s.from == c)
                .ok_or_else(|| anyhow::anyhow!("{}: no stream from `{c}`", ctx.component))?;
            Ok(ctx
                .topology
                .component(c)
                .and_then(|x| x.output_fields(&stream.stream))
                .map(<[String]>::to_vec)
                .unwrap_or_default())
        };
        for (i, input) in self.spec.inputs.iter().enumerate() {
            let fields = fields_of(&input.from)?;
            let at = |f: &str| {
                fields.iter().position(|x| x == f).ok_or_else(|| {
                    anyhow::anyhow!("{}: `{}` has no field `{f}`", ctx.component, input.from)
                })
            };
            self.keys.push(at(&input.key)?);
            for (out_at, (c, f)) in self.spec.select.iter().enumerate() {
                if *c == input.from {
                    self.picks[i].push((out_at, at(f)?));
                }
            }
            self.times[i] = self.spec.time.as_deref().map(at).transpose()?;
            self.input_of.insert(input.from.clone(), i);
            self.input_fields[i] = fields;
        }
        self.plan = Some(ctx.plan.clone());
        self.late_stream = super::wired_stream(ctx, LATE_STREAM);
        self.strict = ctx
            .config
            .get_bool(crate::components::parse::STRICT_KEY)
            .unwrap_or(false);
        self.component = ctx.component.clone();
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            return Ok(());
        }
        // The input a tuple belongs to is known by the component of its source task.
        let Some(i) = self.component_of(input) else {
            return Ok(());
        };
        self.execute_input(i, input, out)?;
        Ok(())
    }

    /// Processing-time windows close by the clock, input or not; with `idle`, event-time
    /// windows close once a silent input stops holding the watermark back.
    fn poll(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.by_clock() {
            self.close(self.machine_clock.epoch_millis(), out)?;
        } else if self.spec.idle.is_some() && self.spec.time.is_some() && self.panes.is_some() {
            let watermark = self.watermark();
            self.close(watermark, out)?;
        }
        Ok(())
    }

    fn poll_interval(&self) -> Option<Duration> {
        let idle = self.spec.idle.filter(|_| self.spec.time.is_some());
        self.by_clock()
            .then_some(Duration::from_millis(20))
            .or(idle.map(|d| (d / 4).clamp(Duration::from_millis(10), Duration::from_millis(100))))
    }

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.panes.is_some() {
            // End of input: every open window is joined.
            self.close(i64::MAX, out)?;
        } else {
            let shape = held::Shape {
                picks: &self.picks,
                inputs: &self.spec.inputs,
                width: self.spec.select.len(),
            };
            shape.join(std::iter::once(&mut self.whole), out)?;
        }
        if self.unusable + self.late > 0 {
            tracing::warn!(
                "{}: {} tuple(s) without a usable event time and {} later than their windows were left out",
                self.component,
                self.unusable,
                self.late
            );
        }
        Ok(())
    }
}

impl crate::components::CheckpointParticipant for Join {
    fn state(&mut self) -> Option<&mut dyn super::BoltState> {
        match self.changed {
            Some(_) => Some(self),
            None => None,
        }
    }
}

impl Join {
    /// Whether windows close by the clock (processing time, by duration).
    fn by_clock(&self) -> bool {
        self.spec.time.is_none()
            && self
                .spec
                .window
                .is_some_and(|w| w.measure == Measure::Millis)
    }

    fn component_of(&self, input: &Tuple) -> Option<usize> {
        let name = self.plan.as_ref()?.component_of_task(input.source_task);
        self.input_of.get(name).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::plan::streams;

    /// Keeps what the bolt sends.
    #[derive(Default)]
    struct Rows(Vec<Values>);

    impl BoltCollector for Rows {
        fn emit(&mut self, _: crate::model::plan::StreamId, _: &[&Tuple], v: Values) -> Vec<u32> {
            self.0.push(v);
            Vec::new()
        }
        fn emit_direct(
            &mut self,
            _: u32,
            _: crate::model::plan::StreamId,
            _: &[&Tuple],
            _: Values,
        ) {
        }
        fn ack(&mut self, _: &Tuple) {}
        fn fail(&mut self, _: &Tuple) {}
        fn report_error(&mut self, _: &str) {}
    }

    /// A join of input 0 `(key, a)` with input 1 `(key, b)`, selecting `a` and `b`.
    fn join(window: serde_json::Value, left: bool) -> Join {
        let kind = if left { "left" } else { "inner" };
        let args = serde_json::json!({
            "inputs": [{"from": "x", "key": "k"}, {"from": "y", "key": "k", "kind": kind}],
            "select": ["x.a", "y.b"],
            "window": window,
        });
        let mut j = Join::new(args.as_object().expect("an object")).expect("valid");
        j.keys = vec![0, 0];
        j.picks = vec![vec![(0, 1)], vec![(1, 1)]];
        j
    }

    fn feed(j: &mut Join, input: &[(usize, &str, i64)]) -> Vec<String> {
        let mut out = Rows::default();
        for &(i, k, v) in input {
            let values: Values = smallvec::smallvec![Value::str(k), Value::Int(v)];
            let t = Tuple::new(values, 1, streams::DEFAULT);
            j.windowed(i, k.to_string(), &t, &mut out)
                .expect("not strict");
        }
        j.finish(&mut out).expect("finish");
        out.0
            .iter()
            .map(|r| format!("{}/{}", r[0].plain_text(), r[1].plain_text()))
            .collect()
    }

    /// Sliding windows of 4 tuples every 2: tuples 0..4, 2..6, 4..8 (and the flushed tail
    /// windows holding tuples), each joined on its own.
    #[test]
    fn sliding_count_windows_join_the_tuples_of_each_window() {
        let input = [
            (0, "a", 1),
            (1, "a", 10),
            (0, "b", 2),
            (1, "c", 30),
            (0, "c", 3),
            (1, "b", 20),
            (1, "a", 11),
            (0, "a", 4),
        ];
        let w = serde_json::json!({"sliding": 4, "every": 2});
        // Windows by tuple position: [-2,2): 0,1; [0,4): 0..3; [2,6): 2..5; [4,8): 4..7;
        // [6,10): 6,7.
        let want = [
            "1/10", // [-2, 2)
            "1/10", "2/", // [0, 4): a joins a; b has no b yet
            "2/20", "3/30", // [2, 6)
            "4/11", "3/",   // [4, 8): a with tuple 6; c without its c (tuple 3 left)
            "4/11", // [6, 10)
        ];
        let got = feed(&mut join(w.clone(), true), &input);
        assert_eq!(got, want);
        let inner: Vec<&str> = want.iter().copied().filter(|r| !r.ends_with('/')).collect();
        assert_eq!(feed(&mut join(w, false), &input), inner);
    }

    /// Processing-time windows close when the task's clock passes their end, input or not,
    /// and not before (a clock moved by hand: no sleeping).
    #[test]
    fn processing_time_windows_close_when_the_clock_passes_their_end() {
        let mut j = join(serde_json::json!({"tumbling": "10s"}), false);
        j.machine_clock = crate::clock::Clock::manual_at(60_000);
        let mut out = Rows::default();
        let send = |j: &mut Join, out: &mut Rows, (i, k, v): (usize, &str, i64)| {
            let values: Values = smallvec::smallvec![Value::str(k), Value::Int(v)];
            let t = Tuple::new(values, 1, streams::DEFAULT);
            j.windowed(i, k.to_string(), &t, out).expect("not strict");
        };
        let shown = |out: &Rows| -> Vec<String> {
            let row = |r: &Values| format!("{}/{}", r[0].plain_text(), r[1].plain_text());
            out.0.iter().map(row).collect()
        };
        send(&mut j, &mut out, (0, "a", 1));
        j.machine_clock.advance(Duration::from_millis(9_999));
        send(&mut j, &mut out, (1, "a", 10));
        j.poll(&mut out).expect("poll");
        assert!(out.0.is_empty(), "closed early: {:?}", shown(&out));
        j.machine_clock.advance(Duration::from_millis(1));
        j.poll(&mut out).expect("poll");
        assert_eq!(shown(&out), ["1/10"]);
        // The next window: its own tuples only, closed by the clock alone.
        send(&mut j, &mut out, (0, "b", 2));
        send(&mut j, &mut out, (1, "b", 20));
        j.machine_clock.advance(Duration::from_secs(10));
        j.poll(&mut out).expect("poll");
        assert_eq!(shown(&out), ["1/10", "2/20"]);
    }
}
