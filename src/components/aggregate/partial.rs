//! Partial aggregation for `aggregate` and `top`: which of them take partial op states from
//! their senders (`model::partials`), the states' form on stream `__partial`, and their merge
//! on arrival. A sender folds the tuples of one key bound for one task into op states
//! (`runtime::partials`) and sends `[key…, state…, unusable]`: each state as `saved.rs` writes
//! it, `min`/`max` as the list of their best value of each kind (so a merge keeps what the
//! values themselves would have kept), and the count of values a numeric op could not use.
//!
//! Exact: `count`, `count_distinct`, `top(n, f)` counts and the sketch bins of `percentile`
//! add up; `sum` and `avg` sum exactly whatever the order (`exact.rs`); `min`/`max`, `first`
//! and `last` see each sender's values in its order. The approximate `count_distinct` is left
//! out (its sketch's estimate may depend on how it was built), and so are windows, event time
//! and `emit: tick`/`update`, whose results depend on when each tuple arrived.

use super::ops::{Kind, OpSpec, State};
use super::{saved, Aggregate, Emit, Spec};
use crate::tuple::{Tuple, Value, Values};

/// Whether the states of `kind` merge into exactly what one state fed every value would hold.
pub(super) fn merges_exactly(kind: Kind) -> bool {
    !matches!(kind, Kind::ApproxDistinct)
}

/// The `by` fields and ops of an `aggregate` (or a `top`, `top: true`) written with `args`,
/// when it takes partial states: no window, no event time, emitting at the end, every op
/// merging exactly.
pub(crate) fn partial_ops(
    args: &serde_json::Map<String, serde_json::Value>,
    top: bool,
) -> Option<(Vec<String>, Vec<OpSpec>)> {
    let spec: Spec = match top {
        true => super::top_spec(args).ok()?.0,
        false => Spec::from_args(args).ok()?,
    };
    let plain = spec.window.is_none() && spec.time.is_none() && spec.emit == Emit::End;
    (plain && spec.ops.iter().all(|o| merges_exactly(o.kind))).then_some((spec.by, spec.ops))
}

/// `state` as it travels in a partial tuple.
pub(super) fn wire(state: &State) -> Value {
    match state {
        State::Extreme { best, others, .. } => {
            Value::list(best.iter().chain(others.iter()).cloned().collect())
        }
        _ => saved::encode(state),
    }
}

/// A state of `kind` read from a partial tuple.
pub(super) fn unwire(kind: Kind, v: &Value) -> Result<State, String> {
    match (kind, v) {
        (Kind::Min | Kind::Max, Value::List(bests)) => {
            let mut state = State::new(kind);
            for b in bests.iter() {
                state.add(Some(b));
            }
            Ok(state)
        }
        (Kind::Min | Kind::Max, _) => Err("a list of best values expected".into()),
        _ => saved::decode(kind, v),
    }
}

/// The states of `ops` read from their wire form (as [`wire`] wrote them), in order.
pub(super) fn unwire_all(ops: &[OpSpec], states: &[Value]) -> Result<Vec<State>, String> {
    ops.iter()
        .zip(states)
        .map(|(o, v)| unwire(o.kind, v))
        .collect()
}

/// The partial tuple of `key` with `states` and the count of values they could not use.
pub(crate) fn partial_row(key: Values, states: &[State], unusable: i64) -> Values {
    let mut row = key;
    row.extend(states.iter().map(wire));
    row.push(Value::Int(unusable));
    row
}

impl Aggregate {
    /// Merge a partial tuple (`[key…, state…, unusable]` on stream `__partial`) into its group.
    pub(super) fn add_partial(&mut self, input: &Tuple) -> anyhow::Result<()> {
        let (width, ops) = (self.spec.by.len(), self.spec.ops.len());
        let values = input.values.as_slice();
        let (Some(key), Some(states), Some(Value::Int(unusable))) = (
            values.get(..width),
            values.get(width..width + ops),
            values.get(width + ops),
        ) else {
            anyhow::bail!(
                "aggregate: a partial tuple is not {width} key value(s), {ops} op state(s) and a count"
            );
        };
        let partials = unwire_all(&self.spec.ops, states)
            .map_err(|e| anyhow::anyhow!("aggregate: a partial state: {e}"))?;
        let key: Values = key.iter().cloned().collect();
        let spec_ops = &self.spec.ops;
        let fresh = || spec_ops.iter().map(|o| State::new(o.kind)).collect();
        self.groups.update(
            key.as_slice(),
            || key.clone(),
            fresh,
            |states| {
                for (s, p) in states.iter_mut().zip(&partials) {
                    s.merge(p);
                }
                true
            },
        )?;
        self.unusable += u64::try_from(*unusable).unwrap_or(0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KINDS: &[Kind] = &[
        Kind::Count,
        Kind::Sum,
        Kind::Avg,
        Kind::Min,
        Kind::Max,
        Kind::CountDistinct,
        Kind::First,
        Kind::Last,
        Kind::Percentile(0.9),
        Kind::Percentile(0.5),
        Kind::Top(2),
    ];

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            4 => (-500i64..500).prop_map(|i| Value::Float(i as f64 / 10.0)),
            2 => (-50i64..50).prop_map(Value::Int),
            1 => (-1e6f64..1e6f64).prop_map(Value::Float),
            1 => (0u8..4).prop_map(|c| Value::str(&format!("s{c}"))),
            1 => Just(Value::Null),
            1 => any::<bool>().prop_map(Value::Bool),
            1 => Just(Value::Int(i64::MAX)),
        ]
    }

    fn folded(kind: Kind, values: &[Value]) -> State {
        let mut s = State::new(kind);
        for v in values {
            s.add(Some(v));
        }
        s
    }

    proptest! {
        /// Values cut into runs, each run folded apart (a sender's partial state), sent and
        /// merged in order into one state: the same result, to the bit, as one state fed
        /// every value, for every op that takes partials.
        #[test]
        fn merged_partial_states_equal_one_state_fed_everything(
            kind in prop::sample::select(KINDS),
            values in proptest::collection::vec(value(), 0..80),
            cuts in proptest::collection::vec(0usize..80, 0..6),
        ) {
            let whole = folded(kind, &values);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(values.len())).collect();
            cuts.extend([0, values.len()]);
            cuts.sort_unstable();
            let mut merged = State::new(kind);
            for run in cuts.windows(2) {
                let partial = folded(kind, &values[run[0]..run[1]]);
                let arrived = unwire(kind, &wire(&partial)).expect("reads back");
                merged.merge(&arrived);
            }
            prop_assert_eq!(merged.value(), whole.value());
            if let (Value::Float(a), Value::Float(b)) = (merged.value(), whole.value()) {
                prop_assert_eq!(a.to_bits(), b.to_bits());
            }
        }
    }

    #[test]
    fn a_min_after_values_of_another_kind_keeps_what_the_values_would_have() {
        // One state sees 5; the next run holds "x" then 7: 7 compares with 5, "x" does not.
        let mut merged = folded(Kind::Max, &[Value::Int(5)]);
        let run = folded(Kind::Max, &[Value::str("x"), Value::Int(7)]);
        merged.merge(&unwire(Kind::Max, &wire(&run)).expect("reads"));
        assert_eq!(merged.value(), Value::Int(7));
        let mut fresh = State::new(Kind::Max);
        fresh.merge(&unwire(Kind::Max, &wire(&run)).expect("reads"));
        assert_eq!(fresh.value(), Value::str("x"));
    }

    #[test]
    fn only_plain_aggregates_with_exact_ops_take_partials() {
        let args = |j: serde_json::Value| j.as_object().cloned().unwrap_or_default();
        let plain = args(serde_json::json!({"by": ["s"], "ops": ["count", "avg(x)", "max(x)"]}));
        let (by, ops) = partial_ops(&plain, false).expect("takes partials");
        assert_eq!((by, ops.len()), (vec!["s".to_string()], 3));
        for refused in [
            serde_json::json!({"by": ["s"], "ops": ["count"], "window": {"tumbling": "1m"}}),
            serde_json::json!({"by": ["s"], "ops": ["count"], "emit": "update"}),
            serde_json::json!({"by": ["s"], "ops": ["count_distinct(x)"], "approx": true}),
        ] {
            assert!(
                partial_ops(&args(refused.clone()), false).is_none(),
                "{refused}"
            );
        }
        let top = args(serde_json::json!({"by": ["s"], "n": 3, "score": "x"}));
        assert!(partial_ops(&top, true).is_some());
    }
}
