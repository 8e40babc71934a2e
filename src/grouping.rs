//! Stream groupings: which of the target component's tasks receive a tuple (Storm's
//! `mk-grouper`). One `Grouper` per (stream, target component) edge, owned by the emitting task.

use crate::java_hash;
use crate::topology::model::Grouping;
use crate::tuple::Value;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// Chooses target tasks for one edge.
#[derive(Debug, Clone)]
pub struct Grouper {
    kind: Kind,
    /// Target tasks, ascending.
    targets: Vec<u32>,
}

#[derive(Debug, Clone)]
enum Kind {
    /// Storm's ShuffleGrouper: a shuffled copy of the targets walked round-robin, reshuffled at
    /// the end of every cycle, so load is even over each cycle.
    Shuffle {
        order: Vec<u32>,
        next: usize,
        rng: SmallRng,
    },
    Fields(Vec<usize>),
    /// Storm's PartialKeyGrouping: two candidate tasks from two hashes, the less loaded wins.
    PartialKey {
        keys: Vec<usize>,
        load: Vec<u64>,
    },
    All,
    Global,
    Direct,
}

/// What the grouper decided for one tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Choice {
    One(u32),
    /// Every target task.
    All,
    /// Direct grouping: the emitter must name the task (`emit_direct`).
    Direct,
}

impl Grouper {
    /// `key_indices` are the positions of the grouping's fields in the source stream's fields.
    /// `local` are the targets in the emitter's own worker (for local-or-shuffle).
    pub fn new(
        grouping: &Grouping,
        targets: Vec<u32>,
        key_indices: Vec<usize>,
        local: &[u32],
        seed: u64,
    ) -> Grouper {
        let shuffle = |pool: Vec<u32>| {
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut order = pool;
            order.shuffle(&mut rng);
            Kind::Shuffle {
                order,
                next: 0,
                rng,
            }
        };
        let kind = match grouping {
            Grouping::Shuffle | Grouping::None => shuffle(targets.clone()),
            // Storm's LocalOrShuffleGrouping: same-worker targets when there are any.
            Grouping::LocalOrShuffle => {
                let near: Vec<u32> = targets
                    .iter()
                    .copied()
                    .filter(|t| local.contains(t))
                    .collect();
                shuffle(if near.is_empty() {
                    targets.clone()
                } else {
                    near
                })
            }
            Grouping::Fields(_) => Kind::Fields(key_indices),
            Grouping::PartialKey(_) => Kind::PartialKey {
                keys: key_indices,
                load: vec![0; targets.len()],
            },
            Grouping::All => Kind::All,
            Grouping::Global => Kind::Global,
            Grouping::Direct => Kind::Direct,
        };
        Grouper { kind, targets }
    }

    pub fn targets(&self) -> &[u32] {
        &self.targets
    }

    /// Choose the receiving task(s) of one tuple.
    #[inline]
    pub fn choose(&mut self, values: &[Value]) -> Choice {
        self.choose_keyed(|keys| {
            java_hash::list_hash(keys.iter().map(|&k| values.get(k).unwrap_or(&Value::Null)))
        })
    }

    /// `choose` for a tuple whose one value is the string `s`, without building it.
    #[inline]
    pub fn choose_str(&mut self, s: &str) -> Choice {
        self.choose_keyed(|keys| {
            // List.hashCode of the key fields: `s` at index 0, null (hash 0) past the end.
            keys.iter().fold(1i32, |h, &k| {
                let v = if k == 0 { java_hash::string_hash(s) } else { 0 };
                h.wrapping_mul(31).wrapping_add(v)
            })
        })
    }

    /// The choice, given how to hash the key fields (Java's `List.hashCode` of their values).
    #[inline(always)]
    fn choose_keyed(&mut self, key_hash: impl FnOnce(&[usize]) -> i32) -> Choice {
        match &mut self.kind {
            Kind::Shuffle { order, next, rng } => {
                if *next >= order.len() {
                    order.shuffle(rng);
                    *next = 0;
                }
                let t = order[*next];
                *next += 1;
                Choice::One(t)
            }
            Kind::Fields(keys) => {
                let i = java_hash::floor_mod(key_hash(keys), self.targets.len());
                Choice::One(self.targets[i])
            }
            Kind::PartialKey { keys, load } => {
                let h = key_hash(keys);
                let n = self.targets.len();
                let first = java_hash::floor_mod(h, n);
                // A second, independent hash of the same key (Storm uses two seeded Guava hashes).
                let h2 = (h as u32).wrapping_mul(0x9E37_79B9).rotate_left(16) ^ 0x5bd1_e995;
                let second = h2 as usize % n.max(1);
                let pick = if load[second] < load[first] {
                    second
                } else {
                    first
                };
                load[pick] += 1;
                Choice::One(self.targets[pick])
            }
            Kind::All => Choice::All,
            Kind::Global => Choice::One(self.targets[0]),
            Kind::Direct => Choice::Direct,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn grouper(g: Grouping, targets: &[u32], local: &[u32]) -> Grouper {
        Grouper::new(&g, targets.to_vec(), vec![0], local, 7)
    }

    #[test]
    fn global_picks_lowest_task() {
        let mut g = grouper(Grouping::Global, &[3, 4, 5], &[]);
        assert_eq!(g.choose(&[Value::str("x")]), Choice::One(3));
    }

    #[test]
    fn fields_places_keys_as_storm() {
        let mut g = grouper(Grouping::Fields(vec!["w".into()]), &[11, 12, 13, 14], &[]);
        // floorMod(Arrays.asList("nathan").hashCode(), 4) == 3
        assert_eq!(g.choose(&[Value::str("nathan")]), Choice::One(14));
    }

    #[test]
    fn local_or_shuffle_stays_local() {
        let mut g = grouper(Grouping::LocalOrShuffle, &[1, 2, 3, 4], &[2, 4]);
        for _ in 0..100 {
            match g.choose(&[]) {
                Choice::One(t) => assert!(t == 2 || t == 4),
                other => panic!("unexpected {other:?}"),
            }
        }
        let mut far = grouper(Grouping::LocalOrShuffle, &[1, 2], &[9]);
        let seen: std::collections::BTreeSet<_> = (0..10).map(|_| far.choose(&[])).collect();
        assert_eq!(seen.len(), 2);
    }

    proptest! {
        /// Routing on a bare string picks what routing on the tuple `[s]` picks, for every
        /// grouping that reads the values and any key fields (past the end: null).
        #[test]
        fn choose_str_agrees_with_choose(s in "\\PC{0,16}", n in 1u32..7, keys in proptest::collection::vec(0usize..3, 1..3), partial in any::<bool>()) {
            let targets: Vec<u32> = (10..10 + n).collect();
            let g = if partial {
                Grouping::PartialKey(vec!["w".into()])
            } else {
                Grouping::Fields(vec!["w".into()])
            };
            let mut by_values = Grouper::new(&g, targets.clone(), keys.clone(), &[], 3);
            let mut by_str = Grouper::new(&g, targets, keys, &[], 3);
            let values = [Value::str(&s)];
            for _ in 0..3 {
                prop_assert_eq!(by_str.choose_str(&s), by_values.choose(&values));
            }
        }

        #[test]
        fn shuffle_is_even_over_each_cycle(n in 1usize..16, cycles in 1usize..8, seed in any::<u64>()) {
            let targets: Vec<u32> = (1..=n as u32).collect();
            let mut g = Grouper::new(&Grouping::Shuffle, targets.clone(), vec![], &[], seed);
            let mut counts: HashMap<u32, usize> = HashMap::new();
            for _ in 0..n * cycles {
                if let Choice::One(t) = g.choose(&[]) { *counts.entry(t).or_default() += 1; }
            }
            for t in targets { prop_assert_eq!(counts.get(&t).copied().unwrap_or(0), cycles); }
        }

        #[test]
        fn fields_sends_equal_keys_to_one_task(words in proptest::collection::vec("[a-zé]{0,6}", 1..50), n in 1u32..9) {
            let targets: Vec<u32> = (1..=n).collect();
            let mut g = Grouper::new(&Grouping::Fields(vec!["w".into()]), targets, vec![0], &[], 1);
            let mut seen: HashMap<String, Choice> = HashMap::new();
            for w in words {
                let c = g.choose(&[Value::str(&w)]);
                prop_assert_eq!(*seen.entry(w).or_insert(c), c);
            }
        }

        #[test]
        fn partial_key_uses_at_most_two_tasks_per_key(n in 2u32..9, reps in 1usize..50) {
            let targets: Vec<u32> = (1..=n).collect();
            let mut g = Grouper::new(&Grouping::PartialKey(vec!["w".into()]), targets, vec![0], &[], 1);
            let used: std::collections::BTreeSet<_> = (0..reps).map(|_| g.choose(&[Value::str("k")])).collect();
            prop_assert!(used.len() <= 2);
        }
    }
}
