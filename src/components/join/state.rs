//! The checkpointed state of `join`: each tuple it keeps is an entry,
//! `[pane start (or "whole" without a window), input index, key text, position]` → the tuple's
//! values, so a checkpoint writes the tuples that came since the last one, and removes those of
//! panes whose windows have all closed. `"progress"` → `{closed_to, clock, latest, late,
//! unusable}`: how far windows have closed and what the watermark has seen. Tuples that
//! spilled are read back from their file for a checkpoint; a restore puts each entry in its
//! key's place as it comes, so restored tuples past the memory limit spill as kept ones do.

use super::held::{Held, Pane};
use super::Join;
use crate::components::{BoltState, ChangeSink, Entries};
use crate::tuple::{Value, Values};

/// Where a kept tuple is: its pane (`None`: the whole input), input, key and position.
type At = (Option<i64>, usize, String, usize);

/// Tuples kept, and dropped with their panes, since the last checkpoint.
#[derive(Default)]
pub(crate) struct Changed {
    pub(crate) kept: Vec<At>,
    dropped: Vec<At>,
}

impl Changed {
    /// Panes whose windows have all closed: their tuples leave the checkpoint. Fails when a
    /// spilled pane cannot be read.
    pub(crate) fn retired(&mut self, panes: Vec<(i64, Pane)>) -> anyhow::Result<()> {
        for (start, mut pane) in panes {
            pane.each(|key, held| {
                for (i, rows) in held.inputs.iter().enumerate() {
                    let at = (0..rows.len()).map(|p| (Some(start), i, key.clone(), p));
                    self.dropped.extend(at);
                }
            })?;
        }
        Ok(())
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
    /// Kept tuples go to `sink` as they are listed (past the memory limit, from the spill
    /// file), never all collected first; the progress last.
    fn changes_into(&mut self, all: bool, sink: &mut ChangeSink<'_>) -> anyhow::Result<()> {
        let changed = std::mem::take(self.changed.get_or_insert_with(Changed::default));
        match all {
            true => self.every_tuple(sink)?,
            false => {
                for at in &changed.dropped {
                    sink(&entry_key(at), None)?;
                }
                self.kept_tuples(changed.kept, sink)?;
            }
        }
        sink(&Value::str(PROGRESS), Some(&self.progress()))
    }

    fn restore(&mut self, entries: Vec<(Value, Value)>) -> anyhow::Result<()> {
        self.restore_from(&mut entries.into_iter().map(Ok))
    }

    /// Each entry is put in its key's place as it comes (past the memory limit, spilled as
    /// kept tuples are); then no key may lack a position.
    fn restore_from(&mut self, entries: &mut Entries<'_>) -> anyhow::Result<()> {
        self.changed = Some(Changed::default());
        self.whole = self.new_pane(WHOLE);
        self.panes = self
            .spec
            .window
            .map(crate::components::aggregate::window::Panes::new);
        for entry in entries {
            let (key, value) = entry?;
            self.restore_entry(&key, value).map_err(|e| {
                anyhow::anyhow!(
                    "join: cannot restore the saved entry {}: {e:#}",
                    key.to_json()
                )
            })?;
        }
        let mut gap = None;
        let mut find = |key: &String, held: &Held| {
            if gap.is_none() {
                gap = held.gap().map(|i| (key.clone(), i));
            }
        };
        self.whole.each(&mut find)?;
        for (_, pane) in self.panes.iter_mut().flat_map(|p| p.panes_mut()) {
            pane.each(&mut find)?;
        }
        match gap {
            Some((key, i)) => {
                anyhow::bail!("join: the saved tuples of key `{key}` of input {i} have gaps")
            }
            None => Ok(()),
        }
    }
}

impl Join {
    fn restore_entry(&mut self, key: &Value, value: Value) -> anyhow::Result<()> {
        if key.as_str() == Some(PROGRESS) {
            return self.restore_progress(&value).map_err(anyhow::Error::msg);
        }
        let (pane, i, k, pos) = self.read_at(key).map_err(anyhow::Error::msg)?;
        let Value::List(v) = value else {
            anyhow::bail!("a kept tuple is a list of values");
        };
        let tuple: Values = v.into_iter().collect();
        let n = self.spec.inputs.len();
        let mut placed = Ok(());
        self.pane_of(pane)?.update(
            k.as_str(),
            || k.clone(),
            || Held::new(n),
            |held| placed = held.place(i, pos, tuple),
        )?;
        placed.map_err(anyhow::Error::msg)
    }

    /// The tuples of every pane (and the whole input), each as an entry.
    fn every_tuple(&mut self, sink: &mut ChangeSink<'_>) -> anyhow::Result<()> {
        let mut all = |pane: Option<i64>, map: &mut Pane| {
            map.try_each(|key, held| {
                for (i, rows) in held.inputs.iter().enumerate() {
                    for (pos, row) in rows.iter().enumerate() {
                        let at = (pane, i, key.clone(), pos);
                        sink(&entry_key(&at), Some(&Value::list(row.to_vec())))?;
                    }
                }
                Ok(())
            })
        };
        all(None, &mut self.whole)?;
        for (start, pane) in self.panes.iter_mut().flat_map(|p| p.panes_mut()) {
            all(Some(*start), pane)?;
        }
        Ok(())
    }

    /// The tuples kept since the last checkpoint, read back from memory or their spill file
    /// (a key's spilled tuples once for its run of positions); those of panes retired since
    /// are gone (their removal is written instead).
    fn kept_tuples(&mut self, kept: Vec<At>, sink: &mut ChangeSink<'_>) -> anyhow::Result<()> {
        let mut last: Option<(Option<i64>, String, Held)> = None;
        for at in kept {
            let (pane, i, key, pos) = &at;
            let Some(map) = self.pane_if_open(*pane) else {
                continue;
            };
            let row = match map.get_hot(key.as_str()) {
                Some(held) => held.inputs[*i].get(*pos).cloned(),
                None => {
                    if last.as_ref().is_none_or(|(p, k, _)| p != pane || k != key) {
                        last = map.peek(key)?.map(|h| (*pane, key.clone(), h.into_owned()));
                    }
                    let held = last.as_ref().map(|(_, _, h)| h);
                    held.and_then(|h| h.inputs[*i].get(*pos).cloned())
                }
            };
            if let Some(row) = row {
                sink(&entry_key(&at), Some(&Value::list(row.to_vec())))?;
            }
        }
        Ok(())
    }

    /// The tuples of `pane` (the whole input when `None`), if it is still open.
    fn pane_if_open(&mut self, pane: Option<i64>) -> Option<&mut Pane> {
        match pane {
            None => Some(&mut self.whole),
            Some(start) => self.panes.as_mut()?.get_mut(start),
        }
    }

    /// The tuples of `pane` (the whole input when `None`), made empty the first time.
    fn pane_of(&mut self, pane: Option<i64>) -> anyhow::Result<&mut Pane> {
        let n = self.spec.inputs.len();
        let (budget, spill) = (&self.budget, &self.spill);
        match (pane, self.panes.as_mut()) {
            (None, _) => Ok(&mut self.whole),
            (Some(start), Some(p)) => p
                .pane_at_with(start, || {
                    super::held::new_pane(n, budget, spill, &format!("pane{start}"))
                })
                .map_err(anyhow::Error::msg),
            (Some(_), None) => anyhow::bail!("a pane saved, but the join has no window"),
        }
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

    /// Makes joins like `join(window, left)` that spill past a limit of a few bytes, each to
    /// files of its own under `dir` (the first and the resumed bolt live at once).
    fn spilling(
        dir: &std::path::Path,
        window: Option<serde_json::Value>,
        left: bool,
    ) -> impl Fn() -> ByTask + '_ {
        let made = std::cell::Cell::new(0);
        move || {
            made.set(made.get() + 1);
            let mut j = join(window.clone(), left);
            j.0.spill_for_test(&dir.join(made.get().to_string()), 64);
            j
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// With spilling forced (every key goes to disk and comes back), a join emits what
        /// the in-memory join emits, straight through and checkpointed and resumed.
        #[test]
        fn spilling_joins_equal_in_memory_ones(
            input in inputs(),
            cut in cuts(50),
            window in window(),
            left in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let in_memory = straight(&|| join(window.clone(), left), &input);
            let make = spilling(dir.path(), window.clone(), left);
            prop_assert_eq!(&straight(&make, &input), &in_memory);
            prop_assert_eq!(&resumed(&make, &input, &cut), &in_memory);
        }
    }

    /// Many keys over a tiny limit: the tuples go to disk (whole and per window) and every
    /// row comes out as in memory, in the same order.
    #[test]
    fn a_join_past_its_limit_spills_and_emits_the_same_rows() {
        let input: Vec<Tuple> = (0..600i64)
            .map(|n| {
                let key = Value::str(&format!("k{}", (n * 7919) % 97));
                let values = smallvec::smallvec![key, Value::Int(n), Value::Int(n)];
                Tuple::new(values, (n % 3 == 0) as u32, streams::DEFAULT)
            })
            .collect();
        for window in [None, Some(serde_json::json!({"sliding": 200, "every": 50}))] {
            let dir = tempfile::tempdir().expect("tempdir");
            let make = spilling(dir.path(), window.clone(), true);
            let mut j = make();
            let mut out = crate::components::state_check::Rows::default();
            for t in &input {
                j.execute(t, &mut out).expect("execute");
            }
            assert!(j.0.spilled(), "{window:?}");
            j.finish(&mut out).expect("finish");
            let in_memory = straight(&|| join(window.clone(), true), &input);
            assert!(in_memory.len() > 600, "{}", in_memory.len());
            assert_eq!(out.0, in_memory, "{window:?}");
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
