//! The checkpointed state of `aggregate` and `top` (and a split `top`'s partial rankings).
//! Entries: without a window, each group, `[key values]` → `[op states]`; with one, each open
//! pane of each key, `[[key values], pane start]` → `[op states]` (panes are removed as their
//! last window closes), and `"progress"` → a map of how far windows have closed and what the
//! watermark has seen (`closed_to`, `clock`, `latest`, `pending_watermark`, `sent`, and the
//! counts of skipped tuples `late_dropped`, `unusable`). Op states are as `saved.rs` writes them.

use super::{saved, Aggregate};
use crate::components::{BoltState, ChangeSink, Entries};
use crate::tuple::{Value, Values};
use std::collections::BTreeMap;

/// The key of the entry of window progress.
const PROGRESS: &str = "progress";

fn key_value(key: &Values) -> Value {
    Value::list(key.to_vec())
}

fn pane_key(start: i64, key: &Values) -> Value {
    Value::list(vec![key_value(key), Value::Int(start)])
}

fn states_value(states: &[super::State]) -> Value {
    Value::list(states.iter().map(saved::encode).collect())
}

impl BoltState for Aggregate {
    /// Groups (or a window's pane entries, then its progress) go to `sink` as their maps list
    /// them: past the memory limit, from the spill file, never all held at once.
    fn changes_into(&mut self, all: bool, sink: &mut ChangeSink<'_>) -> anyhow::Result<()> {
        if self.windows.is_some() {
            self.pane_changes(all, sink)?;
            return sink(&Value::str(PROGRESS), Some(&self.progress()));
        }
        self.groups.changes(all, |k, states| {
            sink(&key_value(k), Some(&states_value(states)))
        })
    }

    fn restore(&mut self, entries: Vec<(Value, Value)>) -> anyhow::Result<()> {
        self.restore_from(&mut entries.into_iter().map(Ok))
    }

    /// Each group (or pane entry) is restored as it comes: past the memory limit, groups go
    /// to the spill file instead of all being held first.
    fn restore_from(&mut self, entries: &mut Entries<'_>) -> anyhow::Result<()> {
        self.groups.clear()?;
        self.stateful = true;
        self.groups.track_changes(true);
        if let Some(w) = self.windows.as_mut() {
            w.reset();
            w.track_changes(true);
        }
        for entry in entries {
            let (key, value) = entry?;
            self.restore_entry(&key, &value).map_err(|e| {
                anyhow::anyhow!(
                    "{}: cannot restore the saved entry {}: {e}",
                    self.what(),
                    key.to_json()
                )
            })?;
        }
        Ok(())
    }
}

impl Aggregate {
    fn what(&self) -> &'static str {
        if self.top.is_some() {
            "top"
        } else {
            "aggregate"
        }
    }

    /// Every open pane's entries (`all`) or those changed, and those of retired panes, to
    /// `sink` one at a time. Fails when a spilled pane cannot be read or `sink` fails.
    fn pane_changes(&mut self, all: bool, sink: &mut ChangeSink<'_>) -> anyhow::Result<()> {
        let Some(w) = self.windows.as_mut() else {
            return Ok(());
        };
        w.track_changes_if_untracked();
        for (start, key) in w.removed.iter_mut().flat_map(|r| r.drain(..)) {
            sink(&pane_key(start, &key), None)?;
        }
        for (start, pane) in w.panes.panes_mut() {
            pane.track_changes_if_untracked();
            pane.changes(all, |k, states| {
                sink(&pane_key(*start, k), Some(&states_value(states)))
            })?;
        }
        Ok(())
    }

    /// How far windows have closed and what the watermark has seen.
    fn progress(&self) -> Value {
        let int = |i: i64| Value::Int(i);
        let closed = self
            .windows
            .as_ref()
            .map_or(i64::MIN, |w| w.panes.closed_to());
        let sent = self.partial.as_ref().and_then(|p| p.sent);
        let fields = [
            ("closed_to", int(closed)),
            ("clock", int(self.clock)),
            (
                "latest",
                Value::list(self.latest.iter().copied().map(int).collect()),
            ),
            ("pending_watermark", int(self.pending_watermark)),
            ("sent", sent.map_or(Value::Null, int)),
            ("late_dropped", int(self.late_dropped as i64)),
            ("unusable", int(self.unusable as i64)),
        ];
        let map: BTreeMap<String, Value> = fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        Value::Map(Box::new(map))
    }

    fn restore_entry(&mut self, key: &Value, value: &Value) -> Result<(), String> {
        match (key, self.windows.is_some()) {
            (Value::Str(s), true) if s == PROGRESS => self.restore_progress(value),
            (Value::List(l), true) => match l.as_slice() {
                [k, Value::Int(start)] => {
                    let (k, states) = (self.key_of(k)?, self.states_of(value)?);
                    let w = self.windows.as_mut().ok_or("no windows")?;
                    w.pane_at(*start)
                        .and_then(|pane| pane.restore(k, states, |m, s| merge_saved(m, &s)))
                        .map_err(|e| format!("{e:#}"))
                }
                _ => Err("a pane entry is [[key values], pane start]".into()),
            },
            (k, false) => {
                let (k, states) = (self.key_of(k)?, self.states_of(value)?);
                self.groups
                    .restore(k, states, |m, s| merge_saved(m, &s))
                    .map_err(|e| format!("{e:#}"))
            }
            _ => Err("not an entry of a windowed aggregate".into()),
        }
    }

    /// A saved key: the list of the `by` fields' values.
    fn key_of(&self, k: &Value) -> Result<Values, String> {
        match k {
            Value::List(l) if l.len() == self.spec.by.len() => Ok(l.iter().cloned().collect()),
            _ => Err(format!(
                "a key is a list of {} value(s), one per field of `by`",
                self.spec.by.len()
            )),
        }
    }

    /// Saved op states: one per op, in the order of `ops`.
    fn states_of(&self, v: &Value) -> Result<Vec<super::State>, String> {
        let ops = &self.spec.ops;
        match v {
            Value::List(l) if l.len() == ops.len() => ops
                .iter()
                .zip(l.iter())
                .map(|(op, v)| saved::decode(op.kind, v).map_err(|e| format!("`{}`: {e}", op.name)))
                .collect(),
            _ => Err(format!(
                "the states are a list of {} op state(s)",
                ops.len()
            )),
        }
    }

    fn restore_progress(&mut self, v: &Value) -> Result<(), String> {
        let Value::Map(m) = v else {
            return Err("the progress is a map".into());
        };
        let int = |name: &str| v.int_field(name);
        if let Some(w) = self.windows.as_mut() {
            w.panes.set_closed_to(int("closed_to")?);
        }
        self.clock = int("clock")?;
        self.pending_watermark = int("pending_watermark")?;
        self.late_dropped = int("late_dropped")?.max(0) as u64;
        self.late_restored = self.late_dropped;
        self.unusable = int("unusable")?.max(0) as u64;
        let latest: Option<Vec<i64>> = m.get("latest").and_then(Value::int_list);
        match latest {
            Some(l) if l.len() == self.latest.len() => self.latest = l,
            _ => {
                return Err(format!(
                    "the progress's `latest` is not {} time(s)",
                    self.latest.len()
                ))
            }
        }
        if let Some(p) = self.partial.as_mut() {
            p.sent = match m.get("sent") {
                Some(Value::Int(i)) => Some(*i),
                _ => None,
            };
        }
        Ok(())
    }
}

/// Merge saved states into those of a key restored before: state saved before `1` and `1.0`
/// were one key may hold both, which are one group now.
fn merge_saved(mine: &mut [super::State], saved: &[super::State]) {
    for (mine, saved) in mine.iter_mut().zip(saved) {
        mine.merge(saved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::state_check::{cuts, resumed, straight, tick, tuple};
    use crate::components::Bolt;
    use crate::tuple::Tuple;
    use proptest::prelude::*;

    const OPS: &[&str] = &[
        "count",
        "sum(v)",
        "avg(v)",
        "min(v)",
        "max(v)",
        "count_distinct(v)",
        "first(v)",
        "last(v)",
        "percentile(v, 0.5) as p50",
        "top(2, v)",
    ];

    /// A stateful aggregate (or `top`) by `k` of `(k, v, t)` tuples, set up as `prepare` would.
    fn made(args: serde_json::Value, top: bool) -> Aggregate {
        let args = args.as_object().cloned().unwrap_or_default();
        let a = match top {
            true => Aggregate::top(&args),
            false => Aggregate::new(&args),
        };
        let mut a = a.expect("valid").with_state(true);
        a.keys = vec![0];
        a.fields = a
            .spec
            .ops
            .iter()
            .map(|o| o.field.as_ref().map(|_| 1))
            .collect();
        a.time = a.spec.time.as_ref().map(|_| 2);
        a
    }

    /// `(k, v, t)` tuples with rising times (out of order by at most 3), and some ticks.
    fn inputs() -> impl Strategy<Value = Vec<Tuple>> {
        let one = (0u8..4, -5i64..20, 0i64..4, 0i64..4, 0u8..10);
        proptest::collection::vec(one, 0..60).prop_map(|raw| {
            let mut clock = 0;
            raw.into_iter()
                .map(|(k, v, step, behind, kind)| {
                    clock += step;
                    let v = match kind {
                        0 => return tick(),
                        1 => Value::Null,
                        // Never a whole number: `top(n, f)` orders ties by text, and 1.0
                        // shows as 1 does.
                        2 => Value::Float(v as f64 + 0.25),
                        _ => Value::Int(v),
                    };
                    let key = Value::str(&format!("k{k}"));
                    tuple(smallvec::smallvec![key, v, Value::Int(clock - behind)])
                })
                .collect()
        })
    }

    fn window() -> impl Strategy<Value = Option<serde_json::Value>> {
        prop_oneof![
            Just(None),
            (1i64..6).prop_map(|n| Some(serde_json::json!({"tumbling": n}))),
            (1i64..4, 1i64..4).prop_map(|(s, e)| Some(serde_json::json!({"sliding": s * e, "every": e}))),
            (1i64..4, 1i64..4).prop_map(|(s, e)| Some(serde_json::json!({"sliding": format!("{}ms", s * e * 3), "every": format!("{}ms", e * 3)}))),
        ]
    }

    proptest! {
        /// Checkpointed at random cuts and resumed, an aggregate of every op emits what one
        /// run straight through emits: by key, per count window, per event-time window.
        #[test]
        fn resumed_aggregates_equal_uninterrupted(
            input in inputs(),
            cut in cuts(60),
            window in window(),
            emit in prop::sample::select(vec!["end", "tick", "update"]),
            lag in 0i64..3,
        ) {
            let mut args = serde_json::json!({"by": "k", "ops": OPS, "emit": emit});
            if let Some(w) = &window {
                args = serde_json::json!({"by": "k", "ops": OPS, "window": w});
                if w.to_string().contains("ms") {
                    args["time"] = "t".into();
                    args["lag"] = format!("{lag}ms").into();
                }
            }
            let make = || made(args.clone(), false);
            prop_assert_eq!(resumed(&make, &input, &cut), straight(&make, &input));
        }

        /// The same for `top`, whole or windowed, and as the partial rankings of a split top.
        #[test]
        fn resumed_tops_equal_uninterrupted(
            input in inputs(),
            cut in cuts(60),
            window in window(),
            partial in any::<bool>(),
        ) {
            let mut args = serde_json::json!({"by": "k", "n": 2, "score": "t"});
            if let Some(w) = &window {
                args["window"] = w.clone();
                if w.to_string().contains("ms") {
                    args["time"] = "t".into();
                }
            }
            if partial {
                args[super::super::ranking::RANKING_ARG] = super::super::ranking::PARTIAL.into();
            }
            let make = || made(args.clone(), true);
            prop_assert_eq!(resumed(&make, &input, &cut), straight(&make, &input));
        }
    }

    #[test]
    fn closed_panes_are_removed_from_the_checkpoint() {
        let mut a = made(
            serde_json::json!({"by": "k", "window": {"tumbling": 2}}),
            false,
        );
        let mut out = crate::components::state_check::Rows::default();
        let mut store = crate::components::state_check::Folded::new();
        let t = |k: &str| {
            tuple(smallvec::smallvec![
                Value::str(k),
                Value::Null,
                Value::Int(0)
            ])
        };
        a.execute(&t("a"), &mut out).expect("execute");
        crate::components::state_check::checkpoint(&mut a, true, &mut store);
        let pane = |k: &str, start: i64| {
            Value::list(vec![Value::list(vec![Value::str(k)]), Value::Int(start)])
        };
        assert!(store.contains_key(&pane("a", 0)));
        a.execute(&t("b"), &mut out).expect("execute");
        a.execute(&t("c"), &mut out).expect("execute");
        crate::components::state_check::checkpoint(&mut a, false, &mut store);
        let mut keys: Vec<String> = store.keys().map(|k| k.to_json().to_string()).collect();
        keys.sort();
        assert_eq!(keys, [r#""progress""#, r#"[["c"],2]"#]);
    }

    /// State saved when `1` and `1.0` were two keys restores as one group, merged.
    #[test]
    fn saved_groups_of_one_and_one_point_zero_restore_as_one() {
        let mut a = made(serde_json::json!({"by": "k", "ops": ["count"]}), false);
        let key = |v: Value| Value::list(vec![v]);
        let counted = |n: i64| Value::list(vec![Value::Int(n)]);
        a.restore(vec![
            (key(Value::Int(1)), counted(2)),
            (key(Value::Float(1.0)), counted(3)),
        ])
        .expect("restores");
        let counts: Vec<Value> = a.groups.hot().map(|(_, s)| s[0].value()).collect();
        assert_eq!(counts, [Value::Int(5)]);
    }

    #[test]
    fn restore_says_which_entry_it_cannot_read() {
        let mut a = made(
            serde_json::json!({"by": "k", "ops": ["count", "avg(v)"]}),
            false,
        );
        let entry = |k: Value, v: Value| vec![(Value::list(vec![k]), v)];
        let e = a
            .restore(entry(Value::str("x"), Value::list(vec![Value::Int(1)])))
            .expect_err("one state for two ops");
        assert_eq!(
            e.to_string(),
            r#"aggregate: cannot restore the saved entry ["x"]: the states are a list of 2 op state(s)"#
        );
        let e = a
            .restore(entry(
                Value::str("x"),
                Value::list(vec![Value::Int(1), Value::Int(2)]),
            ))
            .expect_err("avg is a pair");
        assert!(
            e.to_string()
                .ends_with("`avg_v`: [sum, n] expected, found 2"),
            "{e}"
        );
        assert!(a.restore(vec![(Value::str("k"), Value::Int(1))]).is_err());
    }
}
