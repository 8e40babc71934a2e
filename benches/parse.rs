//! Micro-benchmarks of the record readers on lines shaped like `gen_events.py`'s: the JSON
//! fast path taking three fields of an object (flat, or with a nested member to skip), as
//! `stdin(format=json, fields=[...])` does.
//! Run: `cargo bench --bench parse`.

use divan::{black_box, Bencher};
use serde_json::{json, Map};
use storm::components::parse::{spec::Spec, Parser};

fn main() {
    divan::main();
}

/// A thousand event lines: skewed endpoints, a message with escaped quotes on some.
fn lines() -> Vec<String> {
    let endpoints = [
        "/api/v1/users",
        "/api/v3/ship",
        "/login",
        "/api/v2/orders/search",
    ];
    (0..1000)
        .map(|i| {
            let msg = if i % 3 == 0 { "alpha \\\"quoted\\\" beta" } else { "alpha beta cache" };
            format!(
                "{{\"ts\":\"2026-11-02T08:{:02}:{:02}.{:03}Z\",\"level\":\"info\",\"service\":\"svc-{:02}\",\"endpoint\":\"{}\",\"status\":200,\"latency_ms\":{}.{:03},\"user\":{},\"msg\":\"{}\"}}",
                i / 600 % 60, i / 10 % 60, i % 1000, i % 7, endpoints[i % 4], i % 300, i * 7 % 1000, i % 50, msg
            )
        })
        .collect()
}

#[divan::bench(sample_count = 200, sample_size = 1000)]
fn json_three_fields(bencher: Bencher) {
    three_fields(bencher, lines());
}

/// The same lines with a nested member before the wanted fields (skipped by the fast path).
#[divan::bench(sample_count = 200, sample_size = 1000)]
fn json_three_fields_nested(bencher: Bencher) {
    let nested = r#","req":{"path":"/api/v1","args":[1,"a\"b",{"k":null}]},"level""#;
    let lines = lines()
        .into_iter()
        .map(|l| l.replacen(",\"level\"", nested, 1))
        .collect();
    three_fields(bencher, lines);
}

fn three_fields(bencher: Bencher, lines: Vec<String>) {
    let mut args = Map::new();
    args.insert("format".into(), json!("json"));
    args.insert("fields".into(), json!(["ts", "endpoint", "latency_ms"]));
    let spec = Spec::from_args(&args).expect("a valid spec");
    let mut parser = Parser::new(&spec).expect("a parser");
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % lines.len();
        black_box(parser.parse(black_box(&lines[i])).ok())
    });
}
