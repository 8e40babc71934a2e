//! Stream groupings: which of the target component's tasks receive a tuple (Storm's
//! `mk-grouper`). One `Grouper` per (stream, target component) edge, owned by the emitting task.

use crate::java_hash;
use crate::java_random::JavaRandom;
use crate::model::Grouping;
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
    /// Storm's PartialKeyGrouping: two candidate tasks drawn from the key, the less loaded
    /// (tuples sent so far by this grouper, per target index) wins.
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

    pub(crate) fn targets(&self) -> &[u32] {
        &self.targets
    }

    /// Choose the receiving task(s) of one tuple.
    #[inline]
    pub fn choose(&mut self, values: &[Value]) -> Choice {
        let value = |k: usize| values.get(k).unwrap_or(&Value::Null);
        // Fields grouping: `1` and `1.0` are one key (see `java_hash`).
        if matches!(self.kind, Kind::Fields(_)) {
            return self.choose_keyed(|k| java_hash::key_hash(value(k)));
        }
        self.choose_keyed(|k| java_hash::value_hash(value(k)))
    }

    /// `choose` for a tuple whose one value is the string `s`, without building it.
    #[inline]
    pub(crate) fn choose_str(&mut self, s: &str) -> Choice {
        // `s` at index 0, null (hash 0) past the end.
        self.choose_keyed(|k| if k == 0 { java_hash::string_hash(s) } else { 0 })
    }

    /// The choice, given the Java `hashCode` of the tuple's value at each key field position.
    #[inline(always)]
    fn choose_keyed(&mut self, field_hash: impl Fn(usize) -> i32) -> Choice {
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
            // One target takes every key: nothing to hash (a keyed step chained onto its spout).
            Kind::Fields(_) if self.targets.len() == 1 => Choice::One(self.targets[0]),
            Kind::Fields(keys) => {
                // List.hashCode of the key values.
                let h = keys
                    .iter()
                    .fold(1i32, |h, &k| h.wrapping_mul(31).wrapping_add(field_hash(k)));
                let i = java_hash::floor_mod(h, self.targets.len());
                Choice::One(self.targets[i])
            }
            Kind::PartialKey { keys, load } => {
                let hashes = keys.iter().map(|&k| field_hash(k));
                let [first, second] = partial_key_candidates(hashes, self.targets.len());
                // Storm's BalancedTargetSelector: the less loaded candidate, ties to the first.
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

/// Storm's `RandomTwoTaskAssignmentCreator`: the indexes of a key's two candidate tasks among
/// `n` targets. The key is the 4-byte big-endian `hashCode` of each key value
/// (`PartialKeyGrouping.getKeyBytes`); `java.util.Random` seeded with `Arrays.hashCode` of those
/// bytes draws two indexes, the second moved on by one when it repeats the first.
fn partial_key_candidates(hashes: impl IntoIterator<Item = i32>, n: usize) -> [usize; 2] {
    let seed = hashes
        .into_iter()
        .flat_map(i32::to_be_bytes)
        .fold(1i32, |h, b| {
            h.wrapping_mul(31).wrapping_add(i32::from(b as i8))
        });
    let n = n.max(1);
    let bound = i32::try_from(n).unwrap_or(i32::MAX);
    let mut random = JavaRandom::new(i64::from(seed));
    let first = random.next_int(bound) as usize;
    let mut second = random.next_int(bound) as usize;
    if second == first {
        second = (second + 1) % n;
    }
    [first, second]
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

    /// Every `group`/`pick` line of the vectors Java printed with Storm's own PartialKeyGrouping
    /// code (tests/fixtures/java/PartialKeyVectors.java): one grouper per group, fed the same
    /// keys in the same order, picks the same tasks.
    #[test]
    fn partial_key_picks_what_storm_picks() {
        let text = include_str!("../tests/fixtures/java/partial_key_vectors.txt");
        let mut g: Option<Grouper> = None;
        let mut picks = 0;
        for line in text.lines() {
            if let Some(group) = line.strip_prefix("group ") {
                let (fields, tasks) = group.split_once(' ').expect("group FIELDS TASKS");
                let fields: usize = fields.parse().expect("field count");
                let targets: Vec<u32> =
                    tasks.split(',').map(|t| t.parse().expect("task")).collect();
                let keys = (0..fields).collect();
                g = Some(Grouper::new(
                    &Grouping::PartialKey(vec![]),
                    targets,
                    keys,
                    &[],
                    1,
                ));
            } else if let Some(pick) = line.strip_prefix("pick ") {
                let (json, task) = pick.rsplit_once(' ').expect("pick JSON TASK");
                let values: Vec<Value> = match serde_json::from_str(json).expect("json") {
                    serde_json::Value::Array(items) => items.iter().map(Value::from_json).collect(),
                    other => panic!("not a list: {other}"),
                };
                let g = g.as_mut().expect("a group line first");
                let task: u32 = task.parse().expect("task");
                assert_eq!(g.choose(&values), Choice::One(task), "{line}");
                picks += 1;
            }
        }
        assert!(picks >= 500, "only {picks} picks");
    }

    #[test]
    fn partial_key_candidates_are_two_distinct_tasks_when_there_are_two() {
        for h in [-5, 0, 1, 99162322] {
            let [a, b] = partial_key_candidates([h], 2);
            assert_ne!(a, b);
            assert_eq!(partial_key_candidates([h], 1), [0, 0]);
        }
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

        /// `1` and `1.0` are one key: fields grouping sends them to one task.
        #[test]
        fn fields_sends_an_integer_and_its_float_to_one_task(i in -(1i64 << 53)..(1i64 << 53), n in 1u32..9) {
            let targets: Vec<u32> = (1..=n).collect();
            let mut g = Grouper::new(&Grouping::Fields(vec!["k".into()]), targets, vec![0, 1], &[], 1);
            let as_int = g.choose(&[Value::Int(i), Value::str("x")]);
            prop_assert_eq!(g.choose(&[Value::Float(i as f64), Value::str("x")]), as_int);
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
