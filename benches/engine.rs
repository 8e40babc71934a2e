//! Micro-benchmarks of the engine's hot paths: groupings, Java hashing, the frame codec, the
//! acker's XOR bookkeeping, the `split` and `count` bolts, and the queue candidates for executor receive
//! queues.
//! Run: `cargo bench --bench engine`.

use crossbeam_channel::bounded;
use crossbeam_queue::ArrayQueue;
use divan::{black_box, Bencher};
use storm::components::{Bolt, BoltCollector, CheckpointParticipant};
use storm::grouping::Grouper;
use storm::model::plan::{streams, StreamId};
use storm::model::Grouping;
use storm::runtime::acker::Acker;
use storm::runtime::message::Message;
use storm::runtime::wire as frame;
use storm::tuple::{Anchor, Tuple, Value};

fn main() {
    divan::main();
}

const WORDS: &[&str] = &[
    "nathan", "mike", "jackson", "golda", "bertels", "straße", "kalomi",
];

#[divan::bench(args = ["shuffle", "fields", "partial_key", "global"])]
fn grouping_choose(bencher: Bencher, kind: &str) {
    let g = match kind {
        "shuffle" => Grouping::Shuffle,
        "fields" => Grouping::Fields(vec!["w".into()]),
        "partial_key" => Grouping::PartialKey(vec!["w".into()]),
        _ => Grouping::Global,
    };
    let mut grouper = Grouper::new(&g, (1..=8).collect(), vec![0], &[], 1);
    let values: Vec<[Value; 1]> = WORDS.iter().map(|w| [Value::str(w)]).collect();
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % values.len();
        black_box(grouper.choose(&values[i]))
    });
}

#[divan::bench]
fn java_string_hash(bencher: Bencher) {
    bencher.bench(|| {
        WORDS
            .iter()
            .map(|w| storm::java_hash::string_hash(black_box(w)))
            .fold(0i32, |a, b| a ^ b)
    });
}

fn batch(n: usize) -> Vec<Tuple> {
    (0..n)
        .map(|i| {
            let mut t = Tuple::new(
                smallvec::smallvec![Value::str(WORDS[i % WORDS.len()]), Value::Int(i as i64)],
                3,
                0,
            );
            t.anchors
                .push(Anchor::new(i as u64 * 7919, i as u64 * 104729));
            t
        })
        .collect()
}

#[divan::bench(args = [1, 64, 1024])]
fn frame_encode(bencher: Bencher, n: usize) {
    let f = Message::Tuples {
        task: 5,
        tuples: batch(n),
    };
    let mut buf = Vec::with_capacity(64 * n);
    bencher
        .counter(divan::counter::ItemsCount::new(n))
        .bench_local(|| {
            buf.clear();
            frame::encode(&f, &mut buf);
            black_box(buf.len())
        });
}

#[divan::bench(args = [1, 64, 1024])]
fn frame_decode(bencher: Bencher, n: usize) {
    let mut buf = Vec::new();
    let f = Message::Tuples {
        task: 5,
        tuples: batch(n),
    };
    frame::encode(&f, &mut buf);
    bencher
        .counter(divan::counter::ItemsCount::new(n))
        .bench(|| black_box(frame::decode(black_box(&buf)).ok()));
}

/// Counts what the acker tells spouts.
struct Outcomes(u64);

impl BoltCollector for Outcomes {
    fn emit(&mut self, _: StreamId, _: &[&Tuple], _: storm::tuple::Values) -> Vec<u32> {
        Vec::new()
    }
    fn emit_direct(&mut self, _: u32, _: StreamId, _: &[&Tuple], _: storm::tuple::Values) {}
    fn ack(&mut self, _: &Tuple) {}
    fn fail(&mut self, _: &Tuple) {}
    fn report_error(&mut self, _: &str) {}
    fn send_acks(&mut self, _: u32, _: StreamId, pairs: Vec<(u64, u64)>) {
        self.0 += pairs.len() as u64;
    }
}

/// The acker's work for 64 trees of three edges, batched as the collectors send them: one
/// `__ack_init` message, then three `__ack_ack` messages; every tree completes.
#[divan::bench]
fn acker_xor_trees_64(bencher: Bencher) {
    let mut acker = Acker::default();
    let mut out = Outcomes(0);
    let mut root = 0u64;
    bencher.bench_local(|| {
        let mut init = Vec::with_capacity(64);
        let mut acks: Vec<Vec<(u64, u64)>> = (0..3).map(|_| Vec::with_capacity(64)).collect();
        for _ in 0..64 {
            root = root.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let edges = [root ^ 1, root ^ 2, root ^ 3];
            init.push((root, edges.iter().fold(0, |a, e| a ^ e)));
            for (msg, e) in acks.iter_mut().zip(edges) {
                msg.push((root, e));
            }
        }
        let _ = acker.handle(streams::ACK_INIT, 1, &init, &mut out);
        for msg in acks {
            let _ = acker.handle(streams::ACK_ACK, 2, &msg, &mut out);
        }
        black_box(out.0)
    });
}

/// Keeps what a bolt emits (the values only).
struct Emitted(Vec<storm::tuple::Values>);

impl BoltCollector for Emitted {
    fn emit(&mut self, _: StreamId, _: &[&Tuple], v: storm::tuple::Values) -> Vec<u32> {
        self.0.push(v);
        Vec::new()
    }
    fn send(&mut self, _: StreamId, _: &[&Tuple], v: storm::tuple::Values) {
        self.0.push(v);
    }
    fn emit_direct(&mut self, _: u32, _: StreamId, _: &[&Tuple], v: storm::tuple::Values) {
        self.0.push(v);
    }
    fn ack(&mut self, _: &Tuple) {}
    fn fail(&mut self, _: &Tuple) {}
    fn report_error(&mut self, _: &str) {}
}

/// The `split` bolt on 64 lines of eight words: finding the words and making each a tuple's
/// values (the collector only keeps them).
#[divan::bench]
fn split_64_lines(bencher: Bencher) {
    let mut split = storm::components::split::Split::new(&Default::default());
    let lines: Vec<Tuple> = (0..64)
        .map(|i| {
            let line: Vec<&str> = (0..8).map(|j| WORDS[(i + j) % WORDS.len()]).collect();
            Tuple::new(
                smallvec::smallvec![Value::str(&line.join(" "))],
                1,
                streams::DEFAULT,
            )
        })
        .collect();
    let mut out = Emitted(Vec::with_capacity(512));
    bencher
        .counter(divan::counter::ItemsCount::new(512usize))
        .bench_local(|| {
            out.0.clear();
            for line in &lines {
                let _ = split.execute(line, &mut out);
            }
            black_box(out.0.len())
        });
}

/// The `count` bolt on words of a 100 000-word vocabulary, stateless and stateful (tracking
/// the keys that change, with a checkpoint taking the changes after every 64 × 4 096 words,
/// most of the vocabulary by then): what keeping state costs per counted word.
#[divan::bench(args = [false, true], sample_count = 400)]
fn count_4096_words(bencher: Bencher, stateful: bool) {
    let mut count = storm::components::count::Count::new(&Default::default()).with_state(stateful);
    let vocabulary = 100_000;
    let words: Vec<Tuple> = (0..vocabulary)
        .map(|i| {
            let w = format!("w{}", (i * 7919) % vocabulary);
            Tuple::new(smallvec::smallvec![Value::str(&w)], 1, streams::DEFAULT)
        })
        .collect();
    let mut out = Emitted(Vec::new());
    let mut changes = Vec::new();
    let (mut at, mut batches) = (0, 0u32);
    bencher
        .counter(divan::counter::ItemsCount::new(4096usize))
        .bench_local(|| {
            for _ in 0..4096 {
                let _ = count.execute(&words[at], &mut out);
                at = (at + 1) % words.len();
            }
            batches += 1;
            if let (0, Some(state)) = (batches % 64, count.state()) {
                changes.clear();
                state
                    .changes(false, &mut changes)
                    .expect("changes are read");
            }
            black_box(changes.len())
        });
}

const QUEUE_ITEMS: usize = 1 << 18;
const QUEUE_BATCH: usize = 64;

/// Candidate 1 (kept): a bounded crossbeam channel whose elements are batches of tuples.
#[divan::bench(sample_count = 20)]
fn queue_channel_of_batches(bencher: Bencher) {
    bencher
        .counter(divan::counter::ItemsCount::new(QUEUE_ITEMS))
        .bench(|| {
            let (tx, rx) = bounded::<Vec<u64>>(1024);
            let producer = std::thread::spawn(move || {
                let mut b = Vec::with_capacity(QUEUE_BATCH);
                for i in 0..QUEUE_ITEMS as u64 {
                    b.push(i);
                    if b.len() == QUEUE_BATCH {
                        let _ = tx.send(std::mem::replace(&mut b, Vec::with_capacity(QUEUE_BATCH)));
                    }
                }
            });
            let mut sum = 0u64;
            while let Ok(b) = rx.recv() {
                sum = b.iter().fold(sum, |a, x| a.wrapping_add(*x));
            }
            let _ = producer.join();
            black_box(sum)
        });
}

/// Candidate 2: a Disruptor-style bounded ring of single tuples (crossbeam's lock-free
/// ArrayQueue), consumed in batches of what is available, spinning then yielding when empty.
#[divan::bench(sample_count = 20)]
fn queue_ring_consumed_in_batches(bencher: Bencher) {
    bencher
        .counter(divan::counter::ItemsCount::new(QUEUE_ITEMS))
        .bench(|| {
            let q = std::sync::Arc::new(ArrayQueue::<u64>::new(1024 * QUEUE_BATCH));
            let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (qp, dp) = (q.clone(), done.clone());
            let producer = std::thread::spawn(move || {
                for i in 0..QUEUE_ITEMS as u64 {
                    let mut v = i;
                    while let Err(back) = qp.push(v) {
                        v = back;
                        std::thread::yield_now();
                    }
                }
                dp.store(true, std::sync::atomic::Ordering::Release);
            });
            let mut sum = 0u64;
            let mut got = 0;
            while got < QUEUE_ITEMS {
                let mut n = 0;
                while let Some(x) = q.pop() {
                    sum = sum.wrapping_add(x);
                    n += 1;
                    if n == QUEUE_BATCH {
                        break;
                    }
                }
                got += n;
                if n == 0 {
                    if done.load(std::sync::atomic::Ordering::Acquire) && q.is_empty() {
                        break;
                    }
                    std::thread::yield_now();
                }
            }
            let _ = producer.join();
            black_box(sum)
        });
}
