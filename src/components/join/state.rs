//! The checkpointed state of `join`: each tuple it keeps is an entry,
//! `[pane start (or "whole" without a window), input index, key text, position]` → the tuple's
//! values, so a checkpoint writes the tuples that came since the last one, and removes those of
//! panes whose windows have all closed. `"progress"` → `{closed_to, clock, latest, late,
//! unusable}`: how far windows have closed and what the watermark has seen.

use super::{Buffered, Join};
use crate::components::BoltState;
use crate::tuple::{Value, Values};
use std::collections::{BTreeMap, HashMap};

/// Where a kept tuple is: its pane (`None`: the whole input), input, key and position.
pub type At = (Option<i64>, usize, String, usize);

/// One input's buffer of one key in a pane (`None`: the whole input).
type Buffer = (Option<i64>, usize, String);

/// Tuples kept, and dropped with their panes, since the last checkpoint.
#[derive(Default)]
pub struct Changed {
    pub kept: Vec<At>,
    pub dropped: Vec<At>,
}

impl Changed {
    /// Panes whose windows have all closed: their tuples leave the checkpoint.
    pub fn retired(&mut self, panes: Vec<(i64, Buffered)>) {
        for (start, inputs) in panes {
            for (i, keys) in inputs.into_iter().enumerate() {
                for (key, rows) in keys {
                    let at = (0..rows.len()).map(|p| (Some(start), i, key.clone(), p));
                    self.dropped.extend(at);
                }
            }
        }
    }
}

const WHOLE: &str = "whole";
const PROGRESS: &str = "progress";

fn entry_key((pane, i, key, pos): &At) -> Value {
    let pane = pane.map_or(Value::str(WHOLE), Value::Int);
    Value::list(vec![
        pane,
        Value::Int(*i as i64),
        Value::str(key),
        Value::Int(*pos as i64),
    ])
}

impl BoltState for Join {
    fn changes(&mut self, all: bool, out: &mut Vec<(Value, Option<Value>)>) -> anyhow::Result<()> {
        let changed = std::mem::take(self.changed.get_or_insert_with(Changed::default));
        let kept = match all {
            true => self.every_tuple(),
            false => {
                out.extend(changed.dropped.iter().map(|at| (entry_key(at), None)));
                changed.kept
            }
        };
        for at in kept {
            if let Some(row) = self.tuple_at(&at) {
                let row = Value::list(row.to_vec());
                out.push((entry_key(&at), Some(row)));
            }
        }
        out.push((Value::str(PROGRESS), Some(self.progress())));
        Ok(())
    }

    fn restore(&mut self, entries: Vec<(Value, Value)>) -> anyhow::Result<()> {
        self.changed = Some(Changed::default());
        self.whole = vec![HashMap::new(); self.spec.inputs.len()];
        self.panes = self
            .spec
            .window
            .map(crate::components::aggregate::window::Panes::new);
        let mut rows: BTreeMap<Buffer, Vec<(usize, Values)>> = BTreeMap::new();
        for (key, value) in entries {
            let bad = |e: String| {
                anyhow::anyhow!(
                    "join: cannot restore the saved entry {}: {e}",
                    key.to_json()
                )
            };
            if key.as_str() == Some(PROGRESS) {
                self.restore_progress(&value).map_err(bad)?;
                continue;
            }
            let (pane, i, k, pos) = self.read_at(&key).map_err(bad)?;
            let Value::List(v) = value else {
                return Err(bad("a kept tuple is a list of values".into()));
            };
            rows.entry((pane, i, k))
                .or_default()
                .push((pos, v.into_iter().collect()));
        }
        for ((pane, i, key), mut kept) in rows {
            kept.sort_by_key(|(pos, _)| *pos);
            if kept.iter().enumerate().any(|(n, (pos, _))| n != *pos) {
                anyhow::bail!("join: the saved tuples of key `{key}` of input {i} have gaps");
            }
            let values = kept.into_iter().map(|(_, v)| v).collect();
            self.buffer_of(pane, i)
                .map_err(|e| anyhow::anyhow!("join: {e}"))?
                .insert(key, values);
        }
        Ok(())
    }
}

impl Join {
    /// Where every kept tuple is.
    fn every_tuple(&self) -> Vec<At> {
        let whole = std::iter::once((None, &self.whole));
        let panes = self
            .panes
            .iter()
            .flat_map(|p| p.all())
            .map(|(s, b)| (Some(*s), b));
        let mut all = Vec::new();
        for (pane, inputs) in whole.chain(panes) {
            for (i, keys) in inputs.iter().enumerate() {
                for (key, kept) in keys {
                    all.extend((0..kept.len()).map(|p| (pane, i, key.clone(), p)));
                }
            }
        }
        all
    }

    fn tuple_at(&self, (pane, i, key, pos): &At) -> Option<&Values> {
        let inputs = match pane {
            None => &self.whole,
            Some(start) => self.panes.as_ref()?.get(*start)?,
        };
        inputs.get(*i)?.get(key)?.get(*pos)
    }

    /// The buffer of input `i` in `pane` (the whole input when `None`).
    fn buffer_of(
        &mut self,
        pane: Option<i64>,
        i: usize,
    ) -> Result<&mut HashMap<String, Vec<Values>>, String> {
        let n = self.spec.inputs.len();
        let inputs = match (pane, self.panes.as_mut()) {
            (None, _) => &mut self.whole,
            (Some(start), Some(p)) => p.pane_at(start)?,
            (Some(_), None) => return Err("a pane saved, but the join has no window".into()),
        };
        if inputs.is_empty() {
            inputs.resize_with(n, HashMap::new);
        }
        inputs.get_mut(i).ok_or_else(|| format!("no input {i}"))
    }

    fn read_at(&self, key: &Value) -> Result<At, String> {
        let shape = "a kept tuple's key is [pane start or \"whole\", input, key, position]";
        let Value::List(l) = key else {
            return Err(shape.into());
        };
        let (pane, i, k, pos) = match l.as_slice() {
            [pane, Value::Int(i), Value::Str(k), Value::Int(pos)] if *i >= 0 && *pos >= 0 => {
                (pane, *i as usize, k.to_string(), *pos as usize)
            }
            _ => return Err(shape.into()),
        };
        let pane = match pane {
            Value::Int(s) => Some(*s),
            Value::Str(s) if s == WHOLE => None,
            _ => return Err(shape.into()),
        };
        if i >= self.spec.inputs.len() {
            return Err(format!("input {i} of {}", self.spec.inputs.len()));
        }
        Ok((pane, i, k, pos))
    }

    fn progress(&self) -> Value {
        let int = Value::Int;
        let closed = self.panes.as_ref().map_or(i64::MIN, |p| p.closed_to());
        let fields = [
            ("closed_to", int(closed)),
            ("clock", int(self.clock)),
            (
                "latest",
                Value::list(self.latest.iter().copied().map(int).collect()),
            ),
            ("late", int(self.late as i64)),
            ("unusable", int(self.unusable as i64)),
        ];
        let map = fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        Value::Map(Box::new(map))
    }

    fn restore_progress(&mut self, v: &Value) -> Result<(), String> {
        let Value::Map(m) = v else {
            return Err("the progress is a map".into());
        };
        let int = |name: &str| v.int_field(name);
        if let Some(p) = self.panes.as_mut() {
            p.set_closed_to(int("closed_to")?);
        }
        self.clock = int("clock")?;
        self.late = int("late")?.max(0) as u64;
        self.unusable = int("unusable")?.max(0) as u64;
        let latest: Option<Vec<i64>> = m.get("latest").and_then(Value::int_list);
        match latest {
            Some(l) if l.len() == self.latest.len() => self.latest = l,
            _ => return Err(format!("`latest` is not {} time(s)", self.latest.len())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::state_check::{cuts, resumed, straight, tick};
    use crate::components::{Bolt, BoltCollector, CheckpointParticipant};
    use crate::model::plan::streams;
    use crate::tuple::Tuple;
    use proptest::prelude::*;

    /// A join whose input is its tuple's source task (no plan needed).
    struct ByTask(Join);

    impl Bolt for ByTask {
        fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
            if !input.is_tick() {
                self.0
                    .execute_input(input.source_task as usize, input, out)?;
            }
            Ok(())
        }
        fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
            self.0.finish(out)
        }
    }

    impl CheckpointParticipant for ByTask {
        fn state(&mut self) -> Option<&mut dyn BoltState> {
            self.0.state()
        }
    }

    /// A stateful join of input 0 `(k, a, t)` with input 1 `(k, b, t)`.
    fn join(window: Option<serde_json::Value>, left: bool) -> ByTask {
        let kind = if left { "left" } else { "inner" };
        let mut args = serde_json::json!({
            "inputs": [{"from": "x", "key": "k"}, {"from": "y", "key": "k", "kind": kind}],
            "select": ["x.a", "y.b"],
        });
        if let Some(w) = window {
            if w.to_string().contains("ms") {
                args["time"] = "t".into();
            }
            args["window"] = w;
        }
        let mut j = Join::new(args.as_object().expect("an object"))
            .expect("valid")
            .with_state(true);
        j.keys = vec![0, 0];
        j.picks = vec![vec![(0, 1)], vec![(1, 1)]];
        if j.spec.time.is_some() {
            j.times = vec![Some(2), Some(2)];
        }
        ByTask(j)
    }

    fn inputs() -> impl Strategy<Value = Vec<Tuple>> {
        let one = (0u32..2, 0u8..3, 0i64..9, 0i64..4, 0u8..12);
        proptest::collection::vec(one, 0..50).prop_map(|raw| {
            let mut clock = 0;
            raw.into_iter()
                .map(|(i, k, v, step, kind)| {
                    clock += step;
                    if kind == 0 {
                        return tick();
                    }
                    let key = Value::str(&format!("k{k}"));
                    let values = smallvec::smallvec![key, Value::Int(v), Value::Int(clock)];
                    Tuple::new(values, i, streams::DEFAULT)
                })
                .collect()
        })
    }

    fn window() -> impl Strategy<Value = Option<serde_json::Value>> {
        prop_oneof![
            Just(None),
            (1i64..6).prop_map(|n| Some(serde_json::json!({"tumbling": n}))),
            (1i64..4, 1i64..4)
                .prop_map(|(s, e)| Some(serde_json::json!({"sliding": s * e, "every": e}))),
            (1i64..4, 1i64..4).prop_map(|(s, e)| {
                let (size, every) = (format!("{}ms", s * e * 3), format!("{}ms", e * 3));
                Some(serde_json::json!({"sliding": size, "every": every}))
            }),
        ]
    }

    proptest! {
        /// Checkpointed at random cuts and resumed, a join emits what one run straight
        /// through emits: whole, per count window, per event-time window; inner or left.
        #[test]
        fn resumed_joins_equal_uninterrupted(
            input in inputs(),
            cut in cuts(50),
            window in window(),
            left in any::<bool>(),
        ) {
            let make = || join(window.clone(), left);
            prop_assert_eq!(resumed(&make, &input, &cut), straight(&make, &input));
        }
    }

    #[test]
    fn restore_rejects_gaps_and_unknown_inputs() {
        let at = |i: i64, pos: i64| {
            Value::list(vec![
                Value::str(WHOLE),
                Value::Int(i),
                Value::str("k"),
                Value::Int(pos),
            ])
        };
        let row = Value::list(vec![Value::str("k"), Value::Int(1)]);
        let e = join(None, false)
            .0
            .restore(vec![(at(0, 1), row.clone())])
            .expect_err("position 0 is missing");
        assert_eq!(
            e.to_string(),
            "join: the saved tuples of key `k` of input 0 have gaps"
        );
        let e = join(None, false)
            .0
            .restore(vec![(at(5, 0), row)])
            .expect_err("two inputs");
        assert!(e.to_string().ends_with("input 5 of 2"), "{e}");
    }
}
