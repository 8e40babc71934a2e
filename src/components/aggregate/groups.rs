//! The groups of an `aggregate` (or `top`) without a window, in a map that spills to disk past
//! `topology.state.memory.limit` (see `state::spill`): how a group is written there, and the
//! best `n` of a `top` kept while its groups are read back in key order.

use super::ops::Kind;
use super::{saved, Spec, State};
use crate::components::memory::value_bytes;
use crate::state::codec;
use crate::state::spill::{order, Layout, SpillMap};
use crate::tuple::{Value, Values};

/// The groups of `spec`'s ops.
pub(crate) fn map(spec: &Spec) -> SpillMap<Values, Vec<State>> {
    let kinds = spec.ops.iter().map(|o| o.kind).collect();
    SpillMap::new(Box::new(Groups { kinds }))
}

/// Makes the empty groups of a window's pane, for ops of `kinds`.
pub(crate) fn maker(kinds: Vec<Kind>) -> super::keyed::MakePane {
    Box::new(move || {
        SpillMap::new(Box::new(Groups {
            kinds: kinds.clone(),
        }))
    })
}

/// Makes the empty groups of a window's pane, for `spec`'s ops.
pub(crate) fn pane_maker(spec: &Spec) -> super::keyed::MakePane {
    maker(spec.ops.iter().map(|o| o.kind).collect())
}

struct Groups {
    kinds: Vec<Kind>,
}

impl Layout<Values, Vec<State>> for Groups {
    /// As rows are sorted at the end: by the text of the key values, then their types.
    fn order(&self, key: &Values, out: &mut Vec<u8>) {
        order::text_order(key, super::type_rank, out)
    }

    fn encode(&self, key: &Values, states: &Vec<State>, out: &mut Vec<u8>) {
        codec::encode(&Value::list(key.to_vec()), out);
        codec::encode(
            &Value::list(states.iter().map(saved::encode).collect()),
            out,
        );
    }

    fn decode(&self, record: &[u8]) -> anyhow::Result<(Values, Vec<State>)> {
        let (key, used) = codec::decode(record)?;
        let states = codec::from_bytes(record.get(used..).unwrap_or_default())?;
        let (Value::List(key), Value::List(states)) = (key, states) else {
            anyhow::bail!("aggregate: a spilled group is not a key and its states");
        };
        anyhow::ensure!(
            states.len() == self.kinds.len(),
            "aggregate: a spilled group has {} op state(s), not {}",
            states.len(),
            self.kinds.len()
        );
        let states = self
            .kinds
            .iter()
            .zip(states.iter())
            .map(|(kind, v)| saved::decode(*kind, v).map_err(|e| anyhow::anyhow!("aggregate: {e}")))
            .collect::<anyhow::Result<_>>()?;
        Ok((key.into_iter().collect(), states))
    }

    /// A group's key and one state per op (as a new group holds them).
    fn bytes(&self, key: &Values) -> u64 {
        let key: u64 = key.iter().map(value_bytes).sum();
        let states = self.kinds.len() * std::mem::size_of::<State>();
        key + (std::mem::size_of::<Values>() + 24 + states) as u64
    }
}

/// The best `n` keys by score seen so far, as `rank` would pick them from the same keys in
/// the same order: higher scores first, keys that came first first among equal scores, scores
/// that are not numbers last.
#[derive(Default)]
pub(crate) struct Best {
    rows: Vec<(Values, Value)>,
}

impl Best {
    pub(crate) fn offer(&mut self, key: Values, score: Value, n: usize) {
        // Whether the new score goes before `held` (`rank`'s comparison of the two is Less).
        let behind = |held: &Value| match (held.as_num(), score.as_num()) {
            (Some(h), Some(new)) => h.order(new).is_lt(),
            (h, new) => h.is_some().cmp(&new.is_some()).is_lt(),
        };
        let at = self
            .rows
            .iter()
            .position(|(_, held)| behind(held))
            .unwrap_or(self.rows.len());
        if at < n {
            self.rows.insert(at, (key, score));
            self.rows.truncate(n);
        }
    }

    /// The rows as `rank` makes them: the rank from 1, the key values, the score.
    pub(crate) fn ranked(self) -> Vec<Values> {
        self.rows
            .into_iter()
            .enumerate()
            .map(|(i, (k, score))| {
                std::iter::once(Value::Int(i as i64 + 1))
                    .chain(k)
                    .chain([score])
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Offered keys one by one, `Best` ranks as `rank` does over all of them at once.
        #[test]
        fn best_ranks_as_rank_does(scores in proptest::collection::vec(prop_oneof![
            (0i64..5).prop_map(Value::Int),
            (0i64..5).prop_map(|i| Value::Float(i as f64 + 0.5)),
            Just(Value::Null),
        ], 0..40), n in 1usize..8) {
            let keys: Vec<Values> = (0..scores.len())
                .map(|i| smallvec::smallvec![Value::Int(i as i64)])
                .collect();
            let want = super::super::rank(keys.iter().zip(scores.iter().cloned()), n);
            let mut best = Best::default();
            for (k, s) in keys.iter().zip(&scores) {
                best.offer(k.clone(), s.clone(), n);
            }
            prop_assert_eq!(best.ranked(), want);
        }
    }
}
