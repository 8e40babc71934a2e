//! An `aggregate` (or `top`) folded where its lines are read. Chained onto a `stdin` or `file`
//! spout that reads fields on reader threads, and alone receiving its lines, an aggregate that
//! emits at the end hands the spout a [`ChunkFold`] (see `Spout::run_fold`): each reader
//! thread folds a chunk of lines, in order, into op states per window pane and key, and the
//! spout hands the bolt one `__folded` tuple for the chunk instead of a tuple per line, which
//! [`Aggregate::add_folded`] merges as the lines would have been added one by one.
//!
//! Exact: the states merge exactly (`partial.rs`; the approximate `count_distinct` is left
//! out, and so are sets, sketches and frequency tables, see `folds_lightly`), and with event time a chunk is merged only where adding its lines one by one could not
//! have differed. A line is late, as the bolt judges it, when every window of its pane closed
//! before it came: by the watermark before the chunk (checked as the chunk is merged, pane by
//! pane) or by the lines before it in the chunk (checked here; such a line is counted late
//! and left out, as the bolt leaves it out). A line in a pane some window of which (not all:
//! a sliding window) closed by the lines before it in the chunk would have missed that window
//! alone: the chunk is not folded, and its lines are emitted one by one. So is a chunk with a
//! line not read ahead, or with more groups than folding saves.
//!
//! A `__folded` tuple: `[latest, late, timeless, row…]`: the latest event time of the chunk
//! (`i64::MIN` without one), its lines late by the lines before them, its lines without a
//! usable time, and per pane and key a list `[pane, tuples, usages, key…, state…]`: `usages`
//! the pairs `[usage, tuples]` (see [`Usage`]), each state as a partial tuple carries it.

use super::ops::{Kind, State};
use super::partial::{unwire_all, wire};
use super::window::{self, KeyMap};
use super::{Aggregate, Emit, Placing};
use crate::components::{BoltCollector, FatalError, Folded, ReaderFold};
use crate::tuple::{Tuple, Value, Values};
use std::sync::Arc;

/// The most groups (pane and key) a chunk is folded into; past it, folding saves too little
/// and the chunk's lines are emitted.
const MAX_GROUPS: usize = 256;

/// Where an aggregate reads a line's values, and its windows of event time.
#[derive(Debug)]
struct Layout {
    keys: Box<[usize]>,
    fields: Box<[Option<usize>]>,
    kinds: Box<[Kind]>,
    window: Option<Timing>,
}

/// Event-time windows: the time field, the window and pane widths, and the lag (ms).
#[derive(Debug, Clone, Copy)]
struct Timing {
    time: usize,
    size: i64,
    every: i64,
    lag: i64,
}

/// What one pane and key hold: the op states, the tuples folded, and how many tuples had each
/// [`Usage`].
struct Group {
    states: Vec<State>,
    tuples: i64,
    usages: Vec<(u64, i64)>,
}

/// How one tuple's values met the ops, as bits: bit 0, some op other than `min`/`max` could not
/// use its value (not a number for `sum` or `avg`); then two bits per `min`/`max` op, in order,
/// the kind of its value ([`kind_of`]). Whether `min` or `max` can use a value depends on the
/// kind of the first value its state kept, which only the bolt knows (a chunk's first value
/// may not be the first of its group), so the bolt counts the unusable tuples as it merges.
type Usage = u64;

/// The most `min`/`max` ops a fold tells the kinds of apart.
const MAX_EXTREMES: usize = 31;

/// The kind of a value as `min` and `max` compare them: 0 none (null or missing), 1 a number,
/// 2 a string, 3 a boolean; `None` for a value that compares with nothing (a list, a map),
/// which a chunk is not folded with.
fn kind_of(v: Option<&Value>) -> Option<u64> {
    match v {
        None | Some(Value::Null) => Some(0),
        Some(Value::Int(_) | Value::Float(_)) => Some(1),
        Some(Value::Str(_)) => Some(2),
        Some(Value::Bool(_)) => Some(3),
        Some(_) => None,
    }
}

/// Whether `kind` is `min` or `max`.
fn is_extreme(kind: Kind) -> bool {
    matches!(kind, Kind::Min | Kind::Max)
}

/// The fold of one reader thread, over the chunk it reads.
pub(crate) struct ChunkFold {
    layout: Arc<Layout>,
    /// Per pane start (0 without windows), per key: the group's place in `groups`.
    panes: Vec<(i64, KeyMap<usize>)>,
    groups: Vec<Group>,
    latest: i64,
    late: i64,
    timeless: i64,
    /// Lines taken.
    lines: u64,
    times: window::EventTimes,
    /// The chunk cannot be folded.
    broken: bool,
}

impl ChunkFold {
    fn new(layout: Arc<Layout>) -> ChunkFold {
        ChunkFold {
            layout,
            panes: Vec::new(),
            groups: Vec::new(),
            latest: i64::MIN,
            late: 0,
            timeless: 0,
            lines: 0,
            times: window::EventTimes::default(),
            broken: false,
        }
    }

    /// The pane of a line with these values, or `None` when the bolt would not add it: no
    /// usable time (counted), late by the lines before it (counted), or in a pane a window of
    /// which they closed (the chunk is broken).
    fn pane_of(&mut self, values: &[Value]) -> Option<i64> {
        let Some(w) = self.layout.window else {
            return Some(0);
        };
        let Some(t) = values.get(w.time).and_then(|v| self.times.read(v)) else {
            self.timeless += 1;
            return None;
        };
        let pane = window::floor_to(t, w.every);
        let watermark = self.latest.saturating_sub(w.lag);
        if pane.saturating_add(w.size) <= watermark {
            self.late += 1;
            return None;
        }
        if pane.saturating_add(w.every) <= watermark {
            self.broken = true;
            return None;
        }
        self.latest = self.latest.max(t);
        Some(pane)
    }

    /// The place in `groups` of the group of `values` in `pane`, made the first time.
    fn group(&mut self, pane: i64, values: &[Value]) -> Option<usize> {
        let at = match self.panes.iter().rposition(|(p, _)| *p == pane) {
            Some(at) => at,
            None => {
                self.panes.push((pane, KeyMap::default()));
                self.panes.len() - 1
            }
        };
        let index = &mut self.panes.get_mut(at)?.1;
        let found = match &self.layout.keys[..] {
            [k] => index.get(std::slice::from_ref(values.get(*k)?)).copied(),
            keys => index.get(key_of(keys, values).as_slice()).copied(),
        };
        let i = match found {
            Some(i) => i,
            None => {
                if self.groups.len() >= MAX_GROUPS {
                    self.broken = true;
                    return None;
                }
                index.insert(key_of(&self.layout.keys, values), self.groups.len());
                self.groups.push(Group {
                    states: self.layout.kinds.iter().map(|&k| State::new(k)).collect(),
                    tuples: 0,
                    usages: Vec::new(),
                });
                self.groups.len() - 1
            }
        };
        Some(i)
    }
}

/// The key of a line's values at `keys` (a missing one null).
fn key_of(keys: &[usize], values: &[Value]) -> Values {
    keys.iter()
        .map(|&i| values.get(i).cloned().unwrap_or(Value::Null))
        .collect()
}

impl ReaderFold for ChunkFold {
    fn add(&mut self, values: &[Value]) {
        self.lines += 1;
        if self.broken {
            return;
        }
        let Some(pane) = self.pane_of(values) else {
            return;
        };
        let Some(i) = self.group(pane, values) else {
            return;
        };
        let Some(group) = self.groups.get_mut(i) else {
            return;
        };
        let layout = &self.layout;
        let (mut usage, mut shift) = (0u64, 1);
        for ((state, field), &kind) in group
            .states
            .iter_mut()
            .zip(&layout.fields[..])
            .zip(&layout.kinds[..])
        {
            let v = field.and_then(|i| values.get(i));
            let used = state.add(v);
            if !is_extreme(kind) {
                usage |= u64::from(!used);
                continue;
            }
            let Some(k) = kind_of(v) else {
                self.broken = true;
                return;
            };
            usage |= k << shift;
            shift += 2;
        }
        group.tuples += 1;
        match group.usages.iter_mut().find(|(u, _)| *u == usage) {
            Some((_, n)) => *n += 1,
            None => group.usages.push((usage, 1)),
        }
    }

    fn abandon(&mut self) {
        self.broken = true;
    }

    fn finish(&mut self) -> Option<Folded> {
        let mut fresh = ChunkFold::new(self.layout.clone());
        fresh.times = std::mem::take(&mut self.times);
        let done = std::mem::replace(self, fresh);
        if done.broken || done.lines == 0 {
            return None;
        }
        let mut out = Values::with_capacity(3 + done.groups.len());
        out.push(Value::Int(done.latest));
        out.push(Value::Int(done.late));
        out.push(Value::Int(done.timeless));
        for (pane, index) in done.panes {
            for (key, i) in index {
                let g = done.groups.get(i)?;
                let usages = g.usages.iter().flat_map(|&(u, n)| [u as i64, n]);
                let usages = Value::list(usages.map(Value::Int).collect());
                let mut row = vec![Value::Int(pane), Value::Int(g.tuples), usages];
                row.extend(key);
                row.extend(g.states.iter().map(wire));
                out.push(Value::list(row));
            }
        }
        Some(Folded {
            values: out,
            executed: done.lines,
        })
    }

    fn fresh(&self) -> Box<dyn ReaderFold> {
        Box::new(ChunkFold::new(self.layout.clone()))
    }
}

/// Whether a state of `kind` is worth folding ahead: it merges exactly and is small. A set,
/// a sketch or a frequency table (`count_distinct`, `percentile`, `top(n, …)`) is carried as a
/// list of its values, and making and reading those lists cost more than adding the lines one
/// by one (a sliding 5-minute window with `percentile`, 2 M CSV lines: 0.70 s folded against
/// 0.63 s not).
fn folds_lightly(kind: Kind) -> bool {
    super::partial::merges_exactly(kind)
        && !matches!(
            kind,
            Kind::CountDistinct | Kind::Percentile(_) | Kind::Top(_)
        )
}

/// How many of `row`'s tuples some op could not have used, added one by one to the bolt's
/// `states` as they are before the row is merged: `sum`/`avg` as the fold saw, `min`/`max` by
/// the kind of the first value they keep (the bolt's, or else the row's own first).
fn unusable_in(states: &[State], row: &Row) -> u64 {
    let best_kind = |s: &State| match s {
        State::Extreme { best: Some(b), .. } => kind_of(Some(b)),
        _ => None,
    };
    let kinds: Vec<Option<u64>> = states
        .iter()
        .zip(&row.states)
        .filter(|(s, _)| matches!(s, State::Extreme { .. }))
        .map(|(s, r)| best_kind(s).or_else(|| best_kind(r)))
        .collect();
    let rejected = |usage: Usage| {
        usage & 1 == 1
            || kinds.iter().enumerate().any(|(e, kept)| {
                let k = usage >> (1 + 2 * e) & 3;
                k != 0 && Some(k) != *kept
            })
    };
    row.usages
        .iter()
        .filter(|(u, _)| rejected(*u))
        .map(|(_, n)| u64::try_from(*n).unwrap_or(0))
        .sum()
}

/// [`FatalError::folded`] for `aggregate`.
fn folded_refused(why: &str) -> anyhow::Error {
    FatalError::folded("aggregate", why)
}

/// One row of a `__folded` tuple, read.
struct Row {
    pane: i64,
    tuples: i64,
    /// How many tuples had each usage.
    usages: Vec<(Usage, i64)>,
    key: Values,
    states: Vec<State>,
}

impl Aggregate {
    /// The fold of this aggregate's lines where they are read, when its result can be had
    /// from it (see the module's comment) and `topology.partial.aggregation` is not false:
    /// emitting at the end, keeping no state, every op
    /// merging exactly, one input, no `late` stream and not `topology.strict` (a late line
    /// then goes somewhere of its own), not ranking partially; windows by event time only,
    /// moving the watermark with every tuple and not judging inputs idle.
    pub(super) fn chunk_fold(&self, placed: &Placing) -> Option<ChunkFold> {
        let spec = &self.spec;
        let plain = placed.folds && spec.emit == Emit::End && self.partial.is_none();
        let alone = placed.inputs.len() <= 1 && placed.late.is_none() && !placed.strict;
        let light = spec.ops.iter().all(|o| folds_lightly(o.kind));
        let extremes = spec.ops.iter().filter(|o| is_extreme(o.kind)).count();
        if !(plain && alone && light) || extremes > MAX_EXTREMES {
            return None;
        }
        let window = match (&spec.window, placed.time) {
            (None, None) => None,
            (Some(w), Some(time)) => {
                let by_time = w.measure == window::Measure::Millis;
                if !by_time || spec.watermark.is_some() || spec.idle.is_some() {
                    return None;
                }
                Some(Timing {
                    time,
                    size: w.size,
                    every: w.every,
                    lag: spec.lag,
                })
            }
            _ => return None,
        };
        let layout = Layout {
            keys: placed.keys.clone().into(),
            fields: placed.fields.clone().into(),
            kinds: spec.ops.iter().map(|o| o.kind).collect(),
            window,
        };
        Some(ChunkFold::new(Arc::new(layout)))
    }

    /// Merge a `__folded` tuple: as its lines, added one by one, would have changed the groups
    /// or windows, the counts of late and unusable tuples, and the watermark.
    pub(super) fn add_folded(
        &mut self,
        input: &Tuple,
        out: &mut dyn BoltCollector,
    ) -> anyhow::Result<()> {
        let values = input.values.as_slice();
        let (Some(Value::Int(latest)), Some(Value::Int(late)), Some(Value::Int(timeless))) =
            (values.first(), values.get(1), values.get(2))
        else {
            return Err(folded_refused("it does not start with three counts"));
        };
        for row in values.get(3..).unwrap_or_default() {
            let row = self.folded_row(row)?;
            if self.windows.as_ref().is_some_and(|w| w.is_late(row.pane)) {
                self.left_out_late(row.tuples, out);
                continue;
            }
            self.merge_row(&row)?;
        }
        self.unusable += u64::try_from(*timeless).unwrap_or(0);
        if self.windows.is_some() && *latest > i64::MIN {
            self.latest[0] = self.latest[0].max(*latest);
            let lowest = window::lowest_active(&self.latest, &self.heard, None);
            self.pending_watermark = lowest.saturating_sub(self.spec.lag);
            self.move_watermark(out)?;
        }
        self.left_out_late(*late, out);
        Ok(())
    }

    fn folded_row(&self, row: &Value) -> anyhow::Result<Row> {
        let (width, ops) = (self.spec.by.len(), self.spec.ops.len());
        let Value::List(row) = row else {
            return Err(folded_refused("a row is not a list"));
        };
        let (Some(Value::Int(pane)), Some(Value::Int(tuples)), Some(Value::List(usages))) =
            (row.first(), row.get(1), row.get(2))
        else {
            return Err(folded_refused(
                "a row does not start with its pane and counts",
            ));
        };
        let usages = usages
            .chunks(2)
            .map(|pair| match pair {
                [Value::Int(u), Value::Int(n)] => Ok((*u as Usage, *n)),
                _ => Err(anyhow::anyhow!(
                    "aggregate: a folded row's usages are not pairs"
                )),
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let (Some(key), Some(states)) = (row.get(3..3 + width), row.get(3 + width..)) else {
            return Err(folded_refused(&format!(
                "a row has no key of {width} value(s)"
            )));
        };
        if states.len() != ops {
            return Err(folded_refused(&format!("a row has not {ops} op state(s)")));
        }
        let states = unwire_all(&self.spec.ops, states)
            .map_err(|e| folded_refused(&format!("a state: {e}")))?;
        Ok(Row {
            pane: *pane,
            tuples: *tuples,
            usages,
            key: key.iter().cloned().collect(),
            states,
        })
    }

    /// Merge one pane and key's states into the bolt's, counting the tuples whose values an op
    /// could not have used, added one by one.
    fn merge_row(&mut self, row: &Row) -> anyhow::Result<()> {
        let ops = &self.spec.ops;
        let fresh = || ops.iter().map(|o| State::new(o.kind)).collect();
        let merge = |states: &mut Vec<State>| {
            let unusable = unusable_in(states, row);
            for (s, p) in states.iter_mut().zip(&row.states) {
                s.merge(p);
            }
            unusable
        };
        let key = &row.key;
        let unusable = match self.windows.as_mut() {
            Some(w) => w
                .update(row.pane, key, fresh, merge)
                .map_err(|e| FatalError(format!("{e:#}")))?,
            None => self
                .groups
                .update(key.as_slice(), || key.clone(), fresh, merge)?,
        };
        if unusable > 0 && self.windows.is_none() {
            self.warn_unusable_once();
        }
        self.unusable += unusable;
        Ok(())
    }

    /// `n` tuples came later than their windows: left out and counted.
    pub(super) fn left_out_late(&mut self, n: i64, out: &mut dyn BoltCollector) {
        let Ok(n) = u64::try_from(n) else { return };
        if n == 0 {
            return;
        }
        if self.late_dropped == 0 {
            tracing::warn!("{}: a tuple came later than its windows and was left out (wire the `late` stream to keep such tuples)", self.component);
        }
        self.late_dropped += n;
        out.dropped(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fold of `[t, key, x]` lines into `count` and `max(x)` per key, in windows of `size`
    /// ms every `every` ms by `t` (epoch ms), with no lag.
    fn fold(size: i64, every: i64) -> ChunkFold {
        let layout = Layout {
            keys: Box::new([1]),
            fields: Box::new([None, Some(2)]),
            kinds: Box::new([Kind::Count, Kind::Max]),
            window: Some(Timing {
                time: 0,
                size,
                every,
                lag: 0,
            }),
        };
        ChunkFold::new(Arc::new(layout))
    }

    fn line(t: i64, key: &str, x: Value) -> Vec<Value> {
        vec![Value::Int(t), Value::str(key), x]
    }

    /// The head of a finished chunk: latest time, late and timeless lines, and its rows.
    fn head(folded: &Values) -> (Vec<i64>, usize) {
        let ints = folded[..3]
            .iter()
            .map(|v| match v {
                Value::Int(i) => *i,
                other => panic!("{other:?}"),
            })
            .collect();
        (ints, folded.len() - 3)
    }

    #[test]
    fn lines_late_by_the_lines_before_them_are_counted_and_left_out() {
        let mut f = fold(1000, 1000);
        f.add(&line(5_500, "a", Value::Int(1)));
        f.add(&line(7_200, "a", Value::Int(2)));
        f.add(&line(5_900, "b", Value::Int(3)));
        f.add(&line(7_100, "b", Value::Null));
        f.add(&[Value::str("not a time"), Value::str("a"), Value::Int(4)]);
        let folded = f.finish().expect("folded");
        assert_eq!(folded.executed, 5, "every line counts as executed");
        let folded = folded.values;
        assert_eq!(head(&folded), (vec![7_200, 1, 1], 3), "{folded:?}");
        assert!(f.finish().is_none(), "the next chunk starts empty");
    }

    #[test]
    fn a_line_that_would_miss_one_window_of_its_pane_breaks_the_chunk() {
        let mut f = fold(5000, 1000);
        f.add(&line(10_400, "a", Value::Int(1)));
        f.add(&line(10_100, "a", Value::Int(1)));
        assert!(
            f.finish().is_some(),
            "every window of its pane is still open"
        );
        f.add(&line(10_000, "a", Value::Int(1)));
        f.add(&line(9_000, "a", Value::Int(1)));
        assert!(
            f.finish().is_none(),
            "the window ending at 10 s closed before it"
        );
        f.add(&line(10_000, "a", Value::Int(1)));
        f.add(&line(4_999, "a", Value::Int(1)));
        let folded = f.finish().expect("late, not breaking").values;
        assert_eq!(head(&folded).0, vec![10_000, 1, 0]);
    }

    #[test]
    fn too_many_groups_a_list_for_max_or_a_line_not_read_ahead_break_the_chunk() {
        let mut f = fold(1000, 1000);
        for i in 0..=MAX_GROUPS {
            f.add(&line(5_000, &i.to_string(), Value::Int(1)));
        }
        assert!(f.finish().is_none());
        f.add(&line(5_000, "a", Value::list(vec![Value::Int(1)])));
        assert!(f.finish().is_none());
        f.add(&line(5_000, "a", Value::Int(1)));
        f.abandon();
        assert!(f.finish().is_none());
        f.add(&line(5_000, "a", Value::Int(1)));
        assert!(f.finish().is_some());
    }

    /// A row counts as unusable exactly the tuples the bolt would have: `max` keeps the kind
    /// of its first value, the bolt's own if it has one, else the row's.
    #[test]
    fn unusable_tuples_are_judged_by_the_kind_the_bolt_keeps() {
        let mut f = fold(1000, 1000);
        for x in [
            Value::str("n/a"),
            Value::Int(3),
            Value::Float(2.5),
            Value::Null,
        ] {
            f.add(&line(5_000, "a", x));
        }
        let folded = f.finish().expect("folded").values;
        let row = Aggregate::new(&serde_json::Map::new())
            .map(|mut a| {
                a.spec.by = vec!["k".into()];
                a.spec.ops = vec![
                    super::super::ops::OpSpec::parse("count").expect("count"),
                    super::super::ops::OpSpec::parse("max(x)").expect("max"),
                ];
                a.folded_row(&folded[3]).expect("a row")
            })
            .expect("an aggregate");
        let fresh = || vec![State::new(Kind::Count), State::new(Kind::Max)];
        assert_eq!(unusable_in(&fresh(), &row), 2, "the string came first");
        let mut numbers = fresh();
        numbers[1].add(Some(&Value::Int(9)));
        assert_eq!(unusable_in(&numbers, &row), 1, "the bolt kept a number");
    }
}
