//! The acker (Storm's `AckerBolt`): tracks each spout tuple's tree as the XOR of its edge ids.
//! A tree whose value returns to zero is complete and its spout task is told `ack`; a failed
//! tree is told `fail`. A tree untouched for a whole tick (one message timeout) is forgotten, so
//! a lost one is dropped after one to two timeouts, as Storm's rotating buckets do.

use crate::components::BoltCollector;
use crate::model::plan::streams;
use rustc_hash::FxHashMap;

#[derive(Debug, Default, Clone, Copy)]
struct Entry {
    val: u64,
    /// 0 until `__ack_init` arrives (acks may overtake it).
    spout_task: u32,
    failed: bool,
    /// The rotation during which the tree was last touched.
    rotation: u32,
}

/// The acker (run by its own executor kind, `acker_executor.rs`).
#[derive(Default)]
pub struct Acker {
    /// Open trees by root. One map touched once per message, rather than Storm's rotating
    /// buckets (a look-up in each): a tick scans it instead and drops the trees untouched for
    /// a whole rotation, so a forgotten tree still goes after one to two timeouts.
    pending: FxHashMap<u64, Entry>,
    rotation: u32,
    /// Trees completed by the message being handled: (spout task, root, failed).
    done: Vec<(u32, u64, bool)>,
}

impl Acker {
    /// XOR one value into a tree (Storm's acker: `init` also names the spout task).
    fn apply(&mut self, root: u64, val: u64, spout_task: Option<u32>, failed: bool) {
        use std::collections::hash_map::Entry as Slot;
        let rotation = self.rotation;
        let done = |e: &Entry| e.spout_task != 0 && (e.failed || e.val == 0);
        match self.pending.entry(root) {
            Slot::Occupied(mut o) => {
                let e = o.get_mut();
                e.val ^= val;
                e.failed |= failed;
                e.rotation = rotation;
                if let Some(t) = spout_task {
                    e.spout_task = t;
                }
                if done(e) {
                    let e = o.remove();
                    self.done.push((e.spout_task, root, e.failed));
                }
            }
            Slot::Vacant(v) => {
                let e = Entry {
                    val,
                    spout_task: spout_task.unwrap_or(0),
                    failed,
                    rotation,
                };
                if done(&e) {
                    self.done.push((e.spout_task, root, e.failed));
                } else {
                    v.insert(e);
                }
            }
        }
    }

    /// A tick (every message timeout): forget the trees untouched since the one before.
    pub(crate) fn rotate(&mut self) {
        let keep_from = self.rotation;
        self.pending.retain(|_, e| e.rotation >= keep_from);
        self.rotation = self.rotation.wrapping_add(1);
    }

    /// Tell each spout task about its completed trees, one message per task and outcome.
    fn send_outcomes(&mut self, out: &mut dyn BoltCollector) {
        if self.done.is_empty() {
            return;
        }
        self.done
            .sort_unstable_by_key(|(task, _, failed)| (*task, *failed));
        let mut i = 0;
        while i < self.done.len() {
            let (task, _, failed) = self.done[i];
            let mut roots = Vec::new();
            while i < self.done.len() && self.done[i].0 == task && self.done[i].2 == failed {
                roots.push((self.done[i].1, 0));
                i += 1;
            }
            let stream = if failed {
                streams::ACK_FAIL
            } else {
                streams::ACK_ACK
            };
            out.send_acks(task, stream, roots);
        }
        self.done.clear();
    }
}

impl Acker {
    /// The runtime's acker traffic from task `from` (`Message::Acks`): (root, value) pairs on
    /// `__ack_init` (value: the XOR of the tree's first edges; `from` is the spout task),
    /// `__ack_ack` (value: what the ack XORs in) or `__ack_fail` (value unused); many trees
    /// per message (see `Emitter::flush_acks`). Completed trees go back to each spout task in
    /// one message per outcome.
    pub fn handle(
        &mut self,
        stream: crate::model::plan::StreamId,
        from: u32,
        pairs: &[(u64, u64)],
        out: &mut dyn BoltCollector,
    ) -> anyhow::Result<()> {
        match stream {
            streams::ACK_INIT => {
                for &(root, xor) in pairs {
                    self.apply(root, xor, Some(from), false);
                }
            }
            streams::ACK_ACK => {
                for &(root, val) in pairs {
                    self.apply(root, val, None, false);
                }
            }
            streams::ACK_FAIL => {
                for &(root, _) in pairs {
                    self.apply(root, 0, None, true);
                }
            }
            _ => {}
        }
        self.send_outcomes(out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuple::Tuple;
    use proptest::prelude::*;

    /// Records the acker's answers as the runtime sends them: (root, 0) pairs per task.
    #[derive(Default)]
    struct Answers(Vec<Answer>);
    type Answer = (u32, crate::model::plan::StreamId, Vec<(u64, u64)>);

    impl BoltCollector for Answers {
        fn emit(
            &mut self,
            _: crate::model::plan::StreamId,
            _: &[&Tuple],
            _: crate::tuple::Values,
        ) -> Vec<u32> {
            Vec::new()
        }
        fn emit_direct(
            &mut self,
            _: u32,
            _: crate::model::plan::StreamId,
            _: &[&Tuple],
            _: crate::tuple::Values,
        ) {
            panic!("the acker answers with send_acks");
        }
        fn ack(&mut self, _: &Tuple) {}
        fn fail(&mut self, _: &Tuple) {}
        fn report_error(&mut self, _: &str) {}
        fn send_acks(
            &mut self,
            task: u32,
            stream: crate::model::plan::StreamId,
            pairs: Vec<(u64, u64)>,
        ) {
            self.0.push((task, stream, pairs));
        }
    }

    #[test]
    fn batched_messages_complete_each_tree_on_its_last_edge() {
        let mut acker = Acker::default();
        let mut sent = Answers::default();
        let ok = |r: anyhow::Result<()>| assert!(r.is_ok(), "{r:?}");
        // Acks may overtake the init: trees 100 (edges 1^2) and 200 (edge 4) from spout task 7.
        ok(acker.handle(streams::ACK_ACK, 9, &[(100, 1)], &mut sent));
        assert!(sent.0.is_empty());
        ok(acker.handle(streams::ACK_INIT, 7, &[(100, 1 ^ 2), (200, 4)], &mut sent));
        assert!(sent.0.is_empty(), "{:?}", sent.0);
        ok(acker.handle(streams::ACK_ACK, 9, &[(100, 2), (200, 4)], &mut sent));
        assert_eq!(
            sent.0,
            vec![(7, streams::ACK_ACK, vec![(100, 0), (200, 0)])]
        );
        // A failed tree is reported as failed, once.
        ok(acker.handle(streams::ACK_INIT, 7, &[(300, 8)], &mut sent));
        ok(acker.handle(streams::ACK_FAIL, 9, &[(300, 0)], &mut sent));
        assert_eq!(sent.0.last(), Some(&(7, streams::ACK_FAIL, vec![(300, 0)])));
        assert!(acker.pending.is_empty());
    }

    #[test]
    fn pair_messages_complete_trees_per_spout_task_and_outcome() {
        let mut acker = Acker::default();
        let mut out = Answers::default();
        let ok = |r: anyhow::Result<()>| assert!(r.is_ok(), "{r:?}");
        // Spout task 7 opens trees 100 and 200, spout task 8 opens tree 300.
        ok(acker.handle(streams::ACK_INIT, 7, &[(100, 1 ^ 2), (200, 4)], &mut out));
        ok(acker.handle(streams::ACK_INIT, 8, &[(300, 16)], &mut out));
        assert!(out.0.is_empty());
        // One message from a bolt acks edges of all three trees and completes 100 and 300.
        ok(acker.handle(
            streams::ACK_ACK,
            5,
            &[(100, 1), (300, 16), (100, 2), (200, 8)],
            &mut out,
        ));
        out.0.sort();
        assert_eq!(
            out.0,
            vec![
                (7, streams::ACK_ACK, vec![(100, 0)]),
                (8, streams::ACK_ACK, vec![(300, 0)]),
            ]
        );
        // Tree 200 still waits for edge 4 ^ 8; a fail ends it at once.
        out.0.clear();
        ok(acker.handle(streams::ACK_FAIL, 5, &[(200, 0)], &mut out));
        assert_eq!(out.0, vec![(7, streams::ACK_FAIL, vec![(200, 0)])]);
        assert!(acker.pending.is_empty());
    }

    #[test]
    fn forgotten_trees_go_after_two_ticks() {
        let mut acker = Acker::default();
        acker.apply(1, 5, Some(7), false);
        acker.rotate();
        assert_eq!(acker.pending.len(), 1, "kept through one tick");
        acker.apply(2, 6, Some(7), false);
        acker.rotate();
        assert!(!acker.pending.contains_key(&1), "gone after the second");
        assert!(
            acker.pending.contains_key(&2),
            "a tree touched since the last tick stays"
        );
        acker.apply(2, 6, None, false);
        assert!(acker.pending.is_empty());
        assert_eq!(acker.done, vec![(7, 2, false)]);
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
