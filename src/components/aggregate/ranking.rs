//! The two halves of a `top` with more than one task (storm-starter's
//! IntermediateRankingsBolt and TotalRankingsBolt). Each partial task scores the keys it is
//! sent (all of a key's tuples go to one task), and when a window closes sends the best `n` of
//! its share, then how far its windows have closed (its watermark). The one total task keeps
//! the candidates per window and ranks a window once every partial task has closed past its
//! end; since each key's score is whole in one task, and every task orders keys as one task
//! would, the final ranking equals the ranking of a single task.
//!
//! Stateful, the total ranking's checkpoint entries are each window's candidates,
//! `[start, end]` (or `"whole"` without windows) → `[[key values], score]` pairs, and
//! `"watermarks"` → each partial task's watermark, in task order.

use super::{rank, sort_by_key_text, window};
use crate::components::{Bolt, BoltCollector, TaskContext, Tuple};
use crate::model::plan::streams;
use crate::tuple::{Value, Values};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The argument that tells the two halves of a split `top` apart in the validated topology
/// (an argument starting with `__` cannot be written, so it is never a user's).
pub(crate) const RANKING_ARG: &str = "__ranking";
pub(crate) const PARTIAL: &str = "partial";
pub(crate) const TOTAL: &str = "total";

/// The first field of a partial row: a candidate, or only a watermark.
const CANDIDATE: &str = "rank";
const PROGRESS: &str = "watermark";

/// The fields a partial task sends: `kind` (`rank` or `watermark`), `watermark`, the window
/// bounds in epoch milliseconds (null without windows), the key fields, `score`.
pub(crate) fn partial_fields(by: &[String]) -> Vec<String> {
    ["kind", "watermark", "window_start", "window_end"]
        .into_iter()
        .map(String::from)
        .chain(by.iter().cloned())
        .chain(["score".to_string()])
        .collect()
}

/// A candidate of a partial task: `ranked` is a `rank, key..., score` row.
pub(crate) fn candidate(watermark: i64, bounds: Option<(i64, i64)>, ranked: Values) -> Values {
    let (start, end) = match bounds {
        Some((s, e)) => (Value::Int(s), Value::Int(e)),
        None => (Value::Null, Value::Null),
    };
    [Value::str(CANDIDATE), Value::Int(watermark), start, end]
        .into_iter()
        .chain(ranked.into_iter().skip(1))
        .collect()
}

/// A partial task's progress alone: every window ending at or before `watermark` is sent.
pub(crate) fn progress(watermark: i64, width: usize) -> Values {
    [Value::str(PROGRESS), Value::Int(watermark)]
        .into_iter()
        .chain(std::iter::repeat_n(Value::Null, width - 2))
        .collect()
}

/// What a partial task keeps to send its progress once per window step, not per tuple.
#[derive(Debug)]
pub(crate) struct Partial {
    /// The last watermark sent.
    pub(crate) sent: Option<i64>,
    pub(crate) width: usize,
}

impl Partial {
    pub(crate) fn new(by: &[String]) -> Partial {
        Partial {
            sent: None,
            width: partial_fields(by).len(),
        }
    }

    /// Whether `watermark` reached a window step (`every` ms) the last one sent had not.
    pub(crate) fn due(&mut self, watermark: i64, every: i64) -> bool {
        let step = |w: i64| w.div_euclid(every.max(1));
        let due = match self.sent {
            None => true,
            Some(s) => watermark == i64::MAX && s != i64::MAX || step(watermark) > step(s),
        };
        if due {
            self.sent = Some(watermark);
        }
        due
    }
}

/// A key of a partial ranking and its score.
type Candidate = (Values, Value);

/// The total ranking: candidates per window, and each partial task's watermark.
pub(crate) struct TotalRanking {
    n: usize,
    /// Key fields' positions in a partial row.
    key_width: usize,
    windowed: bool,
    candidates: BTreeMap<Bounds, Vec<Candidate>>,
    watermarks: HashMap<u32, i64>,
    /// Stateful: the windows whose candidates changed, or were ranked and dropped, since the
    /// last checkpoint (`None`: stateless).
    touched: Option<BTreeSet<Bounds>>,
}

/// A window's bounds (`None`: the whole input).
type Bounds = Option<(i64, i64)>;

impl TotalRanking {
    pub(crate) fn new(
        args: &serde_json::Map<String, serde_json::Value>,
    ) -> anyhow::Result<TotalRanking> {
        let (spec, n) = super::top_spec(args).map_err(|(_, e)| anyhow::anyhow!("top: {e}"))?;
        Ok(TotalRanking {
            n,
            key_width: spec.by.len(),
            windowed: spec.window.is_some(),
            candidates: BTreeMap::new(),
            watermarks: HashMap::new(),
            touched: None,
        })
    }

    /// Keep checkpointed state (`stateful: true`): [`CheckpointParticipant::state`](crate::components::CheckpointParticipant::state) is then `Some`.
    pub(crate) fn with_state(mut self, stateful: bool) -> TotalRanking {
        self.touched = stateful.then(BTreeSet::new);
        self
    }

    /// The lowest watermark of all partial tasks: every window ending by then is complete.
    fn complete_to(&self) -> i64 {
        self.watermarks.values().copied().min().unwrap_or(i64::MIN)
    }

    /// Rank and send every window complete by `to`, oldest first.
    fn emit(&mut self, to: i64, out: &mut dyn BoltCollector) {
        while let Some(entry) = self.candidates.first_entry() {
            let end = entry.key().map_or(i64::MAX, |(_, e)| e);
            if end > to {
                break;
            }
            let (bounds, mut rows) = entry.remove_entry();
            if let Some(t) = self.touched.as_mut() {
                t.insert(bounds);
            }
            sort_by_key_text(&mut rows, |r| &r.0);
            let ranked = rank(rows.iter().map(|(k, s)| (k, s.clone())), self.n);
            let shown = bounds
                .map(|(s, e)| vec![window::time_value(s), window::time_value(e)])
                .unwrap_or_default();
            for row in ranked {
                let row: Values = shown.iter().cloned().chain(row).collect();
                out.send(streams::DEFAULT, &[], row);
            }
        }
    }
}

impl Bolt for TotalRanking {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        // Every task of the partial rankings starts with no window closed.
        for stream in ctx.topology.inputs_of(&ctx.component) {
            if let Some(tasks) = ctx.plan.component(&stream.from) {
                self.watermarks
                    .extend(tasks.tasks.clone().map(|t| (t, i64::MIN)));
            }
        }
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let v = &input.values;
        let (Some(kind), Some(Value::Int(watermark))) = (v.first(), v.get(1)) else {
            return Ok(());
        };
        if kind.as_str() == Some(CANDIDATE) && v.len() == 4 + self.key_width + 1 {
            let bounds = match (&v[2], &v[3]) {
                (Value::Int(s), Value::Int(e)) if self.windowed => Some((*s, *e)),
                _ => None,
            };
            let key: Values = v[4..4 + self.key_width].iter().cloned().collect();
            let score = v[4 + self.key_width].clone();
            self.candidates
                .entry(bounds)
                .or_default()
                .push((key, score));
            if let Some(t) = self.touched.as_mut() {
                t.insert(bounds);
            }
        }
        // A candidate's watermark is where its batch ends: windows after this one in the same
        // batch are still on the way, so only a progress row moves the task's watermark.
        if kind.as_str() == Some(PROGRESS) {
            let seen = self.watermarks.entry(input.source_task).or_insert(i64::MIN);
            *seen = (*seen).max(*watermark);
            let to = self.complete_to();
            if self.windowed {
                self.emit(to, out);
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        // End of input: every partial task has sent all it had.
        self.emit(i64::MAX, out);
        Ok(())
    }
}

impl crate::components::CheckpointParticipant for TotalRanking {
    fn state(&mut self) -> Option<&mut dyn crate::components::BoltState> {
        match self.touched {
            Some(_) => Some(self),
            None => None,
        }
    }
}

const WHOLE: &str = "whole";
const WATERMARKS: &str = "watermarks";

fn bounds_key(b: Bounds) -> Value {
    match b {
        Some((s, e)) => Value::List(Box::new(vec![Value::Int(s), Value::Int(e)])),
        None => Value::str(WHOLE),
    }
}

impl crate::components::BoltState for TotalRanking {
    fn changes_into(
        &mut self,
        all: bool,
        sink: &mut crate::components::ChangeSink<'_>,
    ) -> anyhow::Result<()> {
        let touched = std::mem::take(self.touched.get_or_insert_with(BTreeSet::new));
        let windows: Vec<Bounds> = match all {
            true => self.candidates.keys().copied().collect(),
            false => touched.into_iter().collect(),
        };
        for b in windows {
            let saved = self.candidates.get(&b).map(|rows| {
                let pair = |(k, s): &Candidate| {
                    Value::List(Box::new(vec![Value::List(Box::new(k.to_vec())), s.clone()]))
                };
                Value::List(Box::new(rows.iter().map(pair).collect()))
            });
            sink(&bounds_key(b), saved.as_ref())?;
        }
        let mut tasks: Vec<(&u32, &i64)> = self.watermarks.iter().collect();
        tasks.sort();
        let marks = tasks.into_iter().map(|(_, w)| Value::Int(*w)).collect();
        sink(&Value::str(WATERMARKS), Some(&Value::List(Box::new(marks))))
    }

    fn restore(&mut self, entries: Vec<(Value, Value)>) -> anyhow::Result<()> {
        self.candidates.clear();
        self.touched = Some(BTreeSet::new());
        for (key, value) in entries {
            self.restore_entry(&key, &value).map_err(|e| {
                anyhow::anyhow!("top: cannot restore the saved entry {}: {e}", key.to_json())
            })?;
        }
        Ok(())
    }
}

impl TotalRanking {
    fn restore_entry(&mut self, key: &Value, value: &Value) -> Result<(), String> {
        let bounds = match key {
            Value::Str(s) if s == WATERMARKS => return self.restore_watermarks(value),
            Value::Str(s) if s == WHOLE => None,
            Value::List(l) => match l.as_slice() {
                [Value::Int(s), Value::Int(e)] => Some((*s, *e)),
                _ => return Err("a window is [start, end]".into()),
            },
            _ => return Err("not an entry of a total ranking".into()),
        };
        let Value::List(rows) = value else {
            return Err("the candidates are a list".into());
        };
        let width = self.key_width;
        let rows = rows.iter().map(|r| match r {
            Value::List(p) => match p.as_slice() {
                [Value::List(k), score] if k.len() == width => {
                    Ok((k.iter().cloned().collect(), score.clone()))
                }
                _ => Err(format!("a candidate is [[{width} key value(s)], score]")),
            },
            _ => Err(format!("a candidate is [[{width} key value(s)], score]")),
        });
        let rows = rows.collect::<Result<Vec<Candidate>, String>>()?;
        self.candidates.insert(bounds, rows);
        Ok(())
    }

    /// Each partial task's watermark, in task order (tasks keep their order across runs).
    fn restore_watermarks(&mut self, value: &Value) -> Result<(), String> {
        let mut tasks: Vec<u32> = self.watermarks.keys().copied().collect();
        tasks.sort_unstable();
        let marks: Option<Vec<i64>> = value.int_list();
        match marks {
            Some(m) if m.len() == tasks.len() => {
                self.watermarks = tasks.into_iter().zip(m).collect();
                Ok(())
            }
            _ => Err(format!(
                "the watermarks are a list of {} integer(s), one per partial task",
                tasks.len()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::state_check::{cuts, resumed, straight};
    use proptest::prelude::*;

    /// Keys of the same text but different types tie in one order, whichever came first.
    #[test]
    fn equal_text_keys_of_different_types_rank_in_a_fixed_order() {
        use crate::tuple::Value;
        let keys = |a: Value, b: Value| {
            let mut rows: Vec<(Values, i64)> = vec![
                ([a].into_iter().collect(), 5),
                ([b].into_iter().collect(), 5),
            ];
            sort_by_key_text(&mut rows, |r| &r.0);
            let ranked = rank(rows.iter().map(|(k, s)| (k, Value::Int(*s))), 2);
            ranked.into_iter().map(|r| r[1].clone()).collect::<Vec<_>>()
        };
        let one_way = keys(Value::Float(1.0), Value::Int(1));
        let other_way = keys(Value::Int(1), Value::Float(1.0));
        assert_eq!(one_way, vec![Value::Int(1), Value::Float(1.0)]);
        assert_eq!(
            one_way.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>(),
            other_way
                .iter()
                .map(|v| format!("{v:?}"))
                .collect::<Vec<_>>()
        );
    }

    /// A stateful total ranking of the best 2 by one key field, fed by partial tasks 7 and 9.
    fn total(windowed: bool) -> TotalRanking {
        let mut args = serde_json::json!({"by": "k", "n": 2});
        if windowed {
            args["window"] = serde_json::json!({"tumbling": "10ms"});
        }
        let mut t = TotalRanking::new(args.as_object().expect("an object"))
            .expect("valid")
            .with_state(true);
        t.watermarks = [(7, i64::MIN), (9, i64::MIN)].into_iter().collect();
        t
    }

    /// Rows of partial tasks 7 and 9: candidates of windows and progress.
    fn rows() -> impl Strategy<Value = Vec<Tuple>> {
        let one = (any::<bool>(), 0u8..3, 0i64..100, 0i64..10, 0u8..4, 0i64..9);
        proptest::collection::vec(one, 0..50).prop_map(|raw| {
            raw.into_iter()
                .map(|(first, kind, wm, w, k, score)| {
                    let task = if first { 7 } else { 9 };
                    let values = match kind {
                        0 => progress(wm, 6),
                        _ => {
                            let ranked: Values = smallvec::smallvec![
                                Value::Int(1),
                                Value::str(&format!("k{k}")),
                                Value::Int(score)
                            ];
                            candidate(wm, Some((w * 10, w * 10 + 10)), ranked)
                        }
                    };
                    Tuple::new(values, task, streams::DEFAULT)
                })
                .collect()
        })
    }

    proptest! {
        /// Checkpointed at random cuts and resumed, the total ranking emits what one run
        /// straight through emits.
        #[test]
        fn resumed_total_rankings_equal_uninterrupted(
            input in rows(),
            cut in cuts(50),
            windowed in any::<bool>(),
        ) {
            let make = || total(windowed);
            prop_assert_eq!(resumed(&make, &input, &cut), straight(&make, &input));
        }
    }

    #[test]
    fn restore_checks_the_watermarks_and_candidates() {
        use crate::components::BoltState;
        let list = |v: Vec<Value>| Value::List(Box::new(v));
        let e = total(true)
            .restore(vec![(Value::str("watermarks"), list(vec![Value::Int(1)]))])
            .expect_err("two tasks");
        assert_eq!(
            e.to_string(),
            "top: cannot restore the saved entry \"watermarks\": the watermarks are a list of 2 integer(s), one per partial task"
        );
        let window = list(vec![Value::Int(0), Value::Int(10)]);
        let bad = list(vec![list(vec![Value::str("a")])]);
        assert!(total(true).restore(vec![(window, bad)]).is_err());
    }

    #[test]
    fn progress_is_due_once_per_window_step_and_at_the_end() {
        let mut p = Partial::new(&[]);
        assert!(p.due(5, 10));
        assert!(!p.due(9, 10));
        assert!(p.due(10, 10));
        assert!(!p.due(19, 10));
        assert!(p.due(i64::MAX, 10));
        assert!(!p.due(i64::MAX, 10));
    }

    #[test]
    fn rows_carry_the_key_between_the_bounds_and_the_score() {
        let by = vec!["k".to_string()];
        assert_eq!(
            partial_fields(&by),
            [
                "kind",
                "watermark",
                "window_start",
                "window_end",
                "k",
                "score"
            ]
        );
        let ranked: Values = smallvec::smallvec![Value::Int(1), Value::str("a"), Value::Int(3)];
        let row = candidate(7, Some((0, 10)), ranked);
        assert_eq!(row.len(), 6);
        assert_eq!(row[4], Value::str("a"));
        assert_eq!(progress(7, 6).len(), 6);
    }
}
