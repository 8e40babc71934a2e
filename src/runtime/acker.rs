//! The acker (Storm's `AckerBolt`): tracks each spout tuple's tree as the XOR of its edge ids.
//! A tree whose value returns to zero is complete and its spout task is told `ack`; a failed
//! tree is told `fail`. Pending trees live in rotating buckets, rotated on each tick (every
//! message timeout), so a forgotten tree is dropped after one to two timeouts.

use crate::components::{Bolt, BoltCollector, Tuple};
use crate::topology::plan::streams;
use crate::tuple::Value;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::hash::Hash;

/// Storm's `RotatingMap`: the newest bucket takes inserts; `rotate` expires the oldest.
#[derive(Debug)]
pub struct RotatingMap<K, V> {
    buckets: VecDeque<FxHashMap<K, V>>,
}

impl<K: Hash + Eq, V> RotatingMap<K, V> {
    pub fn new(buckets: usize) -> Self {
        RotatingMap {
            buckets: (0..buckets.max(2)).map(|_| FxHashMap::default()).collect(),
        }
    }

    pub fn insert(&mut self, k: K, v: V) {
        for b in self.buckets.iter_mut().skip(1) {
            b.remove(&k);
        }
        if let Some(b) = self.buckets.front_mut() {
            b.insert(k, v);
        }
    }

    pub fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.buckets.iter_mut().find_map(|b| b.get_mut(k))
    }

    pub fn remove(&mut self, k: &K) -> Option<V> {
        self.buckets.iter_mut().find_map(|b| b.remove(k))
    }

    pub fn len(&self) -> usize {
        self.buckets.iter().map(|b| b.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.iter().all(|b| b.is_empty())
    }

    /// Expire the oldest bucket, returning what it held.
    pub fn rotate(&mut self) -> Vec<(K, V)> {
        let old = self.buckets.pop_back().unwrap_or_default();
        self.buckets.push_front(FxHashMap::default());
        old.into_iter().collect()
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Entry {
    val: u64,
    /// 0 until `__ack_init` arrives (acks may overtake it).
    spout_task: u32,
    failed: bool,
}

/// The acker bolt.
pub struct Acker {
    pending: RotatingMap<u64, Entry>,
}

impl Default for Acker {
    fn default() -> Self {
        Acker {
            pending: RotatingMap::new(2),
        }
    }
}

fn as_u64(v: Option<&Value>) -> u64 {
    match v {
        Some(Value::Int(i)) => *i as u64,
        _ => 0,
    }
}

impl Bolt for Acker {
    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            self.pending.rotate();
            return Ok(());
        }
        let root = as_u64(input.values.first());
        let mut fresh = Entry::default();
        let e = match self.pending.get_mut(&root) {
            Some(e) => e,
            None => &mut fresh,
        };
        match input.stream {
            streams::ACK_INIT => {
                e.val ^= as_u64(input.values.get(1));
                e.spout_task = as_u64(input.values.get(2)) as u32;
            }
            streams::ACK_ACK => e.val ^= as_u64(input.values.get(1)),
            streams::ACK_FAIL => e.failed = true,
            _ => return Ok(()),
        }
        let e = *e;
        if e.spout_task != 0 && (e.failed || e.val == 0) {
            let stream = if e.failed {
                streams::ACK_FAIL
            } else {
                streams::ACK_ACK
            };
            self.pending.remove(&root);
            out.emit_direct(
                e.spout_task,
                stream,
                &[],
                smallvec::smallvec![Value::Int(root as i64)],
            );
        } else if self.pending.get_mut(&root).is_none() {
            self.pending.insert(root, e);
        }
        Ok(())
    }

    fn auto_ack(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rotating_map_expires_after_two_rotations() {
        let mut m = RotatingMap::new(2);
        m.insert(1, "a");
        assert!(m.rotate().is_empty());
        assert_eq!(m.rotate(), vec![(1, "a")]);
        assert!(m.is_empty());
    }

    proptest! {
        /// Any order of the init and the acks of a tree's edges completes it exactly when the
        /// last one is applied.
        #[test]
        fn xor_tree_completes_exactly_at_the_last_edge(edges in proptest::collection::vec(1u64.., 1..20), order in any::<u64>()) {
            // The tree: the root emits edges[0]; each edge i>0 is emitted anchored by an earlier
            // edge; acking a tuple XORs its own id with the ids of its children.
            let n = edges.len();
            let mut children: Vec<Vec<u64>> = vec![Vec::new(); n];
            let mut rng = order;
            for (i, &edge) in edges.iter().enumerate().skip(1) {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let parent = (rng >> 33) as usize % i;
                children[parent].push(edge);
            }
            // Messages: the init (xor of the root's direct edges = edges[0]), then an ack per tuple.
            let mut msgs: Vec<u64> = vec![edges[0]];
            for i in 0..n {
                msgs.push(children[i].iter().fold(edges[i], |a, c| a ^ c));
            }
            // Shuffle deterministically.
            for i in (1..msgs.len()).rev() {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                msgs.swap(i, (rng >> 33) as usize % (i + 1));
            }
            let mut val = 0u64;
            for (k, m) in msgs.iter().enumerate() {
                val ^= m;
                if k + 1 < msgs.len() {
                    // Not yet complete unless edge ids collide (vanishingly unlikely; skip those).
                    if val == 0 { return Ok(()); }
                }
            }
            prop_assert_eq!(val, 0);
        }
    }
}
