//! Shell components driven through the Spout / Bolt traits with real child processes (python3,
//! and node where present) and a recording collector.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use storm::components::shell::{context::context_json, ShellBolt, ShellSpout};
use storm::components::{
    Bolt, BoltCollector, Spout, SpoutCollector, SpoutStatus, TaskContext, Waker,
};
use storm::config::{Config, Origin};
use storm::model::plan::{streams, Plan, StreamId, SYSTEM_TASK};
use storm::model::{Component, ComponentKind, ComponentType, Grouping, Stream, Topology};
use storm::tuple::{Tuple, Value, Values};

/// What a component did through its collector.
#[derive(Default, Debug)]
struct Recorder {
    /// (stream, values, anchors' first values, spout message id)
    emits: Vec<(StreamId, Values, Vec<Values>, Option<Value>)>,
    direct: Vec<(u32, StreamId, Values)>,
    acks: Vec<Values>,
    fails: Vec<Values>,
    errors: Vec<String>,
    metrics: Vec<(String, serde_json::Value)>,
}

/// Task ids every non-direct emit "reaches".
const TARGETS: [u32; 2] = [3, 4];

impl BoltCollector for Recorder {
    fn emit(&mut self, stream: StreamId, anchors: &[&Tuple], values: Values) -> Vec<u32> {
        let anchors = anchors.iter().map(|t| t.values.clone()).collect();
        self.emits.push((stream, values, anchors, None));
        TARGETS.to_vec()
    }
    fn emit_direct(&mut self, task: u32, stream: StreamId, _anchors: &[&Tuple], values: Values) {
        self.direct.push((task, stream, values));
    }
    fn ack(&mut self, input: &Tuple) {
        self.acks.push(input.values.clone());
    }
    fn fail(&mut self, input: &Tuple) {
        self.fails.push(input.values.clone());
    }
    fn report_error(&mut self, msg: &str) {
        self.errors.push(msg.to_string());
    }
    fn metric(&mut self, name: &str, value: &serde_json::Value) {
        self.metrics.push((name.to_string(), value.clone()));
    }
}

impl SpoutCollector for Recorder {
    fn emit(&mut self, stream: StreamId, values: Values, msg_id: Option<Value>) -> Vec<u32> {
        self.emits.push((stream, values, Vec::new(), msg_id));
        TARGETS.to_vec()
    }
    fn emit_direct(&mut self, task: u32, stream: StreamId, values: Values, _id: Option<Value>) {
        self.direct.push((task, stream, values));
    }
    fn report_error(&mut self, msg: &str) {
        self.errors.push(msg.to_string());
    }
    fn metric(&mut self, name: &str, value: &serde_json::Value) {
        self.metrics.push((name.to_string(), value.clone()));
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A Python script using our adapter, written to `dir`.
fn script(dir: &Path, name: &str, body: &str) -> Vec<String> {
    let adapter = repo().join("multilang/python");
    let text = format!(
        "import sys, json, time, os\nsys.path.insert(0, {:?})\nimport storm\n{body}",
        adapter.display().to_string()
    );
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write test script");
    vec!["python3".into(), path.display().to_string()]
}

fn component(
    id: &str,
    kind: ComponentKind,
    command: Vec<String>,
    outputs: &[(&str, &[&str])],
) -> Component {
    Component {
        id: id.into(),
        kind,
        ctype: ComponentType::from_name("shell").expect("built-in"),
        args: Default::default(),
        parallelism: 1,
        tasks: 1,
        outputs: outputs
            .iter()
            .map(|(s, f)| (s.to_string(), f.iter().map(|x| x.to_string()).collect()))
            .collect(),
        command: Some(command),
        cwd: None,
        tick: None,
        finish: false,
        stateful: false,
        chain: true,
        config: Default::default(),
    }
}

/// A topology `src -> <the component under test> -> sink`, with config keys set.
fn topology(under_test: Component, config: &[(&str, serde_json::Value)]) -> Topology {
    let mut cfg = Config::default();
    for (k, v) in config {
        cfg.set(*k, v.clone(), Origin::CommandLine);
    }
    let src = Component {
        ctype: ComponentType::from_name("stdin").expect("built-in"),
        ..component(
            "src",
            ComponentKind::Spout,
            vec![],
            &[("default", &["line"])],
        )
    };
    let sink = Component {
        ctype: ComponentType::from_name("discard").expect("built-in"),
        ..component("sink", ComponentKind::Bolt, vec![], &[])
    };
    let id = under_test.id.clone();
    let mut streams = vec![Stream {
        from: id.clone(),
        to: "sink".into(),
        stream: "default".into(),
        grouping: Grouping::Fields(vec!["word".into()]),
        name: None,
    }];
    if !under_test.is_spout() {
        streams.insert(
            0,
            Stream {
                from: "src".into(),
                to: id.clone(),
                stream: "default".into(),
                grouping: Grouping::Shuffle,
                name: None,
            },
        );
    }
    Topology {
        name: "t".into(),
        config: cfg,
        components: vec![src, under_test, sink],
        streams,
        base_dir: repo(),
    }
}

fn context(topology: Topology, id: &str) -> TaskContext {
    let plan = Plan::new(&topology);
    let task_id = plan.component(id).map(|c| *c.tasks.start()).unwrap_or(0);
    TaskContext {
        config: Arc::new(topology.config.clone()),
        topology: Arc::new(topology),
        plan: Arc::new(plan),
        component: id.into(),
        task_id,
        task_index: 0,
        waker: Waker::noop(),
        stopping: storm::components::Stopping::never(),
        clock: storm::clock::Clock::system(),
    }
}

fn input(ctx: &TaskContext, values: &[&str]) -> Tuple {
    let src = ctx
        .plan
        .component("src")
        .map(|c| *c.tasks.start())
        .unwrap_or(1);
    Tuple::new(
        values.iter().map(|v| Value::str(v)).collect(),
        src,
        streams::DEFAULT,
    )
}

fn words(vals: &[&str]) -> Values {
    vals.iter().map(|v| Value::str(v)).collect()
}

/// Poll until `done` holds or `limit` passes; the result of the last poll is returned.
fn poll_until(
    bolt: &mut ShellBolt,
    out: &mut Recorder,
    limit: Duration,
    done: impl Fn(&Recorder, &ShellBolt) -> bool,
) -> anyhow::Result<()> {
    let end = Instant::now() + limit;
    while !done(out, bolt) && Instant::now() < end {
        bolt.poll(out)?;
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

fn prepared_bolt(
    body: &str,
    outputs: &[(&str, &[&str])],
    config: &[(&str, serde_json::Value)],
) -> (ShellBolt, TaskContext, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cmd = script(dir.path(), "bolt.py", body);
    let comp = component("pybolt", ComponentKind::Bolt, cmd, outputs);
    let mut bolt = ShellBolt::new(&comp, dir.path());
    let ctx = context(topology(comp, config), "pybolt");
    bolt.prepare(&ctx).expect("prepare");
    (bolt, ctx, dir)
}

#[test]
fn python_split_bolt_emits_anchored_words_and_acks() {
    let cmd = vec![
        "python3".to_string(),
        repo()
            .join("multilang/examples/split.py")
            .display()
            .to_string(),
    ];
    let comp = component("split", ComponentKind::Bolt, cmd, &[("default", &["word"])]);
    let mut bolt = ShellBolt::new(&comp, &repo());
    let ctx = context(topology(comp, &[]), "split");
    bolt.prepare(&ctx).expect("prepare");
    assert!(!bolt.auto_ack());
    let mut out = Recorder::default();
    bolt.execute(&input(&ctx, &["the cow jumped"]), &mut out)
        .expect("execute");
    bolt.execute(&input(&ctx, &["over  the moon"]), &mut out)
        .expect("execute");
    bolt.finish(&mut out).expect("finish");
    bolt.cleanup();
    let emitted: Vec<(Values, Vec<Values>)> = out
        .emits
        .iter()
        .map(|(_, v, a, _)| (v.clone(), a.clone()))
        .collect();
    let first = words(&["the cow jumped"]);
    let second = words(&["over  the moon"]);
    assert_eq!(
        emitted,
        vec![
            (words(&["the"]), vec![first.clone()]),
            (words(&["cow"]), vec![first.clone()]),
            (words(&["jumped"]), vec![first.clone()]),
            (words(&["over"]), vec![second.clone()]),
            (words(&["the"]), vec![second.clone()]),
            (words(&["moon"]), vec![second.clone()]),
        ]
    );
    assert_eq!(out.acks, vec![first, second]);
    assert!(out.fails.is_empty() && out.errors.is_empty(), "{out:?}");
}

/// Storm's ticks carry the tick frequency in seconds, `[tickSecs]`.
#[test]
fn ticks_reach_the_child_from_system_task_minus_one() {
    let body = r#"
class B(storm.Bolt):
    def process(self, t):
        storm.emit([json.dumps([t.component, t.stream, t.task, t.is_tick_tuple(), t.values])], anchors=[t])
        storm.ack(t)
B().run()
"#;
    let (mut bolt, _ctx, _dir) = prepared_bolt(
        body,
        &[("default", &["word"])],
        &[("topology.tick.tuple.freq.secs", 7.into())],
    );
    let mut out = Recorder::default();
    let tick = Tuple::new(Default::default(), SYSTEM_TASK, streams::TICK);
    bolt.execute(&tick, &mut out).expect("execute");
    bolt.finish(&mut out).expect("finish");
    assert_eq!(
        out.emits[0].1,
        words(&[r#"["__system", "__tick", -1, true, [7]]"#])
    );
    assert_eq!(out.acks.len(), 1);
}

/// What a real child receives in its handshake: Storm's `topology.name` and `storm.id` in
/// `conf`, and the component's system streams in `context` beside its own.
#[test]
fn handshake_carries_topology_name_storm_id_and_system_streams() {
    let body = r#"
class B(storm.Bolt):
    def initialize(self, conf, context):
        self.seen = [conf.get("topology.name"), conf.get("storm.id"), sorted(context["streams"]),
                     context["stream->outputfields"].get("__ack_ack")]
    def process(self, t):
        storm.emit([json.dumps(self.seen)], anchors=[t])
        storm.ack(t)
B().run()
"#;
    let (mut bolt, ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &[]);
    let mut out = Recorder::default();
    bolt.execute(&input(&ctx, &["x"]), &mut out)
        .expect("execute");
    bolt.finish(&mut out).expect("finish");
    let Some(Value::Str(seen)) = out.emits.first().map(|e| e.1[0].clone()) else {
        panic!("nothing emitted: {out:?}");
    };
    let seen: serde_json::Value = serde_json::from_str(&seen).expect("json");
    assert_eq!(seen[0], "t");
    let id = seen[1].as_str().unwrap_or_default();
    let (name, secs) = id.rsplit_once("-1-").unwrap_or_default();
    assert!(
        name == "t" && secs.parse::<u64>().is_ok(),
        "storm.id {id} is NAME-1-SECONDS"
    );
    assert_eq!(
        seen[2],
        serde_json::json!([
            "__ack_ack",
            "__ack_fail",
            "__ack_reset_timeout",
            "__eventlog",
            "__metrics",
            "__system",
            "default"
        ])
    );
    assert_eq!(seen[3], serde_json::json!(["id", "ack-val"]));
}

/// A `print` in a Python bolt puts a line that is not a protocol message on the child's
/// stdout: still an error, and the message says what to do instead.
#[test]
fn print_in_a_bolt_says_stdout_is_for_the_protocol() {
    let body = r#"
class B(storm.BasicBolt):
    def process(self, t):
        print("debug: a")
        storm.emit(["x"])
B().run()
"#;
    let (mut bolt, ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &[]);
    let mut out = Recorder::default();
    bolt.execute(&input(&ctx, &["x"]), &mut out)
        .expect("execute");
    poll_until(&mut bolt, &mut out, Duration::from_secs(10), |o, _| {
        !o.errors.is_empty()
    })
    .expect("poll");
    bolt.cleanup();
    insta::assert_snapshot!(out.errors.join("\n"));
}

/// A child that dies in the middle of writing a message is noticed when its output ends, not
/// when heartbeats go unanswered: the error names the exit, never a hang. Several times over,
/// for a race that would show one time in several.
#[test]
fn a_child_dying_mid_message_is_noticed_by_its_exit() {
    let body = r#"
class B(storm.Bolt):
    def process(self, t):
        sys.stdout.write('{"command": "emit", "tuple": ["hal')
        sys.stdout.flush()
        os._exit(4)
B().run()
"#;
    for round in 0..16 {
        let (mut bolt, ctx, _dir) = prepared_bolt(
            body,
            &[("default", &["word"])],
            &[("topology.subprocess.timeout.secs", 5.into())],
        );
        let mut out = Recorder::default();
        bolt.execute(&input(&ctx, &["x"]), &mut out)
            .expect("execute");
        poll_until(&mut bolt, &mut out, Duration::from_secs(30), |o, _| {
            !o.errors.is_empty()
        })
        .expect("poll");
        bolt.cleanup();
        assert!(
            out.errors
                .first()
                .is_some_and(|e| e.contains("exited unexpectedly (exit status: 4)")),
            "round {round}: {:?}",
            out.errors
        );
        assert_eq!(out.fails, vec![words(&["x"])], "round {round}");
    }
}

#[test]
fn python_spout_emits_n_tuples_then_is_exhausted() {
    let cmd = vec![
        "python3".to_string(),
        repo()
            .join("multilang/examples/sentences.py")
            .display()
            .to_string(),
        "3".to_string(),
    ];
    let comp = component(
        "sentences",
        ComponentKind::Spout,
        cmd,
        &[("default", &["sentence"])],
    );
    let mut spout = ShellSpout::new(&comp, &repo());
    let ctx = context(topology(comp, &[]), "sentences");
    spout.open(&ctx).expect("open");
    spout.activate().expect("activate");
    let mut out = Recorder::default();
    let mut failed_once = false;
    let mut statuses = Vec::new();
    for _ in 0..50 {
        let status = spout.next_tuple(&mut out).expect("next");
        statuses.push(status);
        if status == SpoutStatus::Exhausted {
            break;
        }
        // Ack what was emitted; fail the first tuple once, so it is replayed.
        if let Some((_, _, _, Some(id))) = out.emits.last().cloned() {
            if status == SpoutStatus::Busy {
                if !failed_once {
                    failed_once = true;
                    spout.fail(id, &mut out).expect("fail");
                } else {
                    spout.ack(id, &mut out).expect("ack");
                }
            }
        }
    }
    assert_eq!(statuses.last(), Some(&SpoutStatus::Exhausted));
    let ids: Vec<Option<Value>> = out.emits.iter().map(|e| e.3.clone()).collect();
    assert_eq!(
        ids,
        vec![
            Some(0.into()),
            Some(0.into()),
            Some(1.into()),
            Some(2.into())
        ]
    );
    assert_eq!(out.emits[0].1, words(&["the cow jumped over the moon"]));
    assert_eq!(
        spout.next_tuple(&mut out).expect("next"),
        SpoutStatus::Exhausted
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    spout.close();
}

#[test]
fn killed_child_fails_its_in_flight_tuples_and_is_restarted() {
    let body = r#"
class B(storm.Bolt):
    def process(self, t):
        if t.values[0] != "hold":
            storm.ack(t)
B().run()
"#;
    let (mut bolt, ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &[]);
    let mut out = Recorder::default();
    bolt.execute(&input(&ctx, &["hold"]), &mut out)
        .expect("execute");
    bolt.execute(&input(&ctx, &["hold"]), &mut out)
        .expect("execute");
    let first_pid = bolt.child_pid().expect("child runs");
    let killed = std::process::Command::new("kill")
        .args(["-9", &first_pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    poll_until(&mut bolt, &mut out, Duration::from_secs(10), |o, b| {
        o.fails.len() == 2 && b.child_pid().is_some()
    })
    .expect("poll");
    assert_eq!(out.fails, vec![words(&["hold"]), words(&["hold"])]);
    assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
    assert!(
        out.errors[0].starts_with("shell bolt \"pybolt\" task 2: exited unexpectedly (signal: 9"),
        "{}",
        out.errors[0]
    );
    assert_ne!(bolt.child_pid(), Some(first_pid));
    bolt.execute(&input(&ctx, &["ok"]), &mut out)
        .expect("execute after restart");
    bolt.finish(&mut out).expect("finish");
    assert_eq!(out.acks, vec![words(&["ok"])]);
}

#[test]
fn invalid_json_is_reported_with_the_offending_text() {
    let body = r#"
class B(storm.Bolt):
    def process(self, t):
        sys.stdout.write("this is not json\nend\n")
        sys.stdout.flush()
B().run()
"#;
    let (mut bolt, ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &[]);
    let mut out = Recorder::default();
    bolt.execute(&input(&ctx, &["x"]), &mut out)
        .expect("execute");
    poll_until(&mut bolt, &mut out, Duration::from_secs(10), |o, _| {
        !o.errors.is_empty()
    })
    .expect("poll");
    insta::assert_snapshot!(out.errors.join("\n"), @r#"shell bolt "pybolt" task 2: protocol error: the child wrote "this is not json" to its stdout, which is not a protocol message: invalid JSON (expected ident at line 1 column 2). A multilang child must write only protocol messages to stdout: write other output to stderr, or send it with the `log` command"#);
    assert_eq!(out.fails, vec![words(&["x"])]);
}

#[test]
fn protocol_breaches_are_reported_and_fail_the_tuples() {
    let body = r#"
class B(storm.Bolt):
    def process(self, t):
        v = t.values[0]
        if v == "stream":
            storm.emit(["a"], stream="nope", anchors=[t])
        elif v == "arity":
            storm.emit(["a", "b"], anchors=[t])
        elif v == "ack":
            storm.ack("999")
        elif v == "fine":
            storm.ack(t)
        elif v == "direct":
            storm.emitDirect(999, ["a"], anchors=[t])
B().run()
"#;
    let (mut bolt, ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &[]);
    let mut out = Recorder::default();
    // Four breaches: a fifth within 30 s would be fatal.
    let cases = ["stream", "arity", "ack", "direct"];
    for case in cases {
        bolt.execute(&input(&ctx, &[case]), &mut out)
            .expect("execute");
        let n = out.errors.len();
        poll_until(&mut bolt, &mut out, Duration::from_secs(10), |o, b| {
            o.errors.len() > n && b.child_pid().is_some()
        })
        .expect("poll");
        // Each breach is followed by a good tuple, so the failures never add up to fatal.
        bolt.execute(&input(&ctx, &["fine"]), &mut out)
            .expect("execute");
        bolt.poll(&mut out).expect("poll");
        poll_until(&mut bolt, &mut out, Duration::from_secs(10), |_, b| {
            b.in_flight() == 0
        })
        .expect("poll");
    }
    insta::assert_snapshot!(out.errors.join("\n"));
    let failed: Vec<Values> = cases.iter().map(|c| words(&[c])).collect();
    assert_eq!(out.fails, failed);
    assert_eq!(out.acks, vec![words(&["fine"]); 4]);
}

#[test]
fn hung_child_is_detected_within_the_subprocess_timeout() {
    let body = r#"
class B(storm.Bolt):
    def process(self, t):
        time.sleep(1000)
B().run()
"#;
    let config = [("topology.subprocess.timeout.secs", serde_json::json!(1))];
    let (mut bolt, ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &config);
    let mut out = Recorder::default();
    let start = Instant::now();
    bolt.execute(&input(&ctx, &["x"]), &mut out)
        .expect("execute");
    poll_until(&mut bolt, &mut out, Duration::from_secs(10), |o, _| {
        !o.errors.is_empty()
    })
    .expect("poll");
    assert!(start.elapsed() >= Duration::from_secs(1));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    insta::assert_snapshot!(out.errors.join("\n"), @r#"shell bolt "pybolt" task 2: the child hangs: no answer to heartbeats for 1s (topology.subprocess.timeout.secs)"#);
    assert_eq!(out.fails, vec![words(&["x"])]);
}

#[test]
fn heartbeats_keep_an_idle_child_alive() {
    let body = "storm.BasicBolt().run()\n";
    let config = [("topology.subprocess.timeout.secs", serde_json::json!(1))];
    let (mut bolt, _ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &config);
    let pid = bolt.child_pid();
    let mut out = Recorder::default();
    // Without answered heartbeats the child would be taken for hung after 1 s.
    poll_until(&mut bolt, &mut out, Duration::from_millis(2500), |_, _| {
        false
    })
    .expect("poll");
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(bolt.child_pid(), pid);
}

#[test]
fn crash_loop_ends_in_a_fatal_error() {
    let body = r#"
class B(storm.Bolt):
    def process(self, t):
        sys.stderr.write("boom\n")
        sys.exit(3)
B().run()
"#;
    let (mut bolt, ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &[]);
    let mut out = Recorder::default();
    let start = Instant::now();
    let mut fatal = None;
    while fatal.is_none() && start.elapsed() < Duration::from_secs(30) {
        let step = bolt
            .execute(&input(&ctx, &["x"]), &mut out)
            .and_then(|()| bolt.poll(&mut out));
        fatal = step.err();
        std::thread::sleep(Duration::from_millis(10));
    }
    let fatal = fatal.expect("a crash loop is fatal");
    assert!(fatal
        .downcast_ref::<storm::components::FatalError>()
        .is_some());
    insta::assert_snapshot!(fatal.to_string(), @r#"shell bolt "pybolt" task 2: gave up after 5 failures in a row with no work done in between; last failure: exited unexpectedly (exit status: 3); stderr: boom"#);
    assert_eq!(out.errors.len(), 5);
    assert_eq!(out.acks.len(), 0);
}

#[test]
fn direct_emits_and_task_id_answers() {
    let body = r#"
class B(storm.BasicBolt):
    def process(self, t):
        storm.emitDirect(1, ["d"], stream="direct")
        assert storm.emit(["n"], need_task_ids=False) is None
        ids = storm.emit(["x"])
        storm.emit([json.dumps(ids)])
        storm.rpcMetrics("seen", 1)
        storm.log("logged at warn", 3)
B().run()
"#;
    let (mut bolt, ctx, _dir) =
        prepared_bolt(body, &[("default", &["word"]), ("direct", &["v"])], &[]);
    let mut out = Recorder::default();
    bolt.execute(&input(&ctx, &["a"]), &mut out)
        .expect("execute");
    bolt.execute(&input(&ctx, &["b"]), &mut out)
        .expect("execute");
    bolt.finish(&mut out).expect("finish");
    let direct = ctx.plan.stream_id("direct").expect("direct stream");
    assert_eq!(
        out.direct,
        vec![(1, direct, words(&["d"])), (1, direct, words(&["d"]))]
    );
    let emitted: Vec<Values> = out.emits.iter().map(|e| e.1.clone()).collect();
    let answer = words(&["[3, 4]"]);
    assert_eq!(
        emitted,
        vec![
            words(&["n"]),
            words(&["x"]),
            answer.clone(),
            words(&["n"]),
            words(&["x"]),
            answer
        ]
    );
    assert_eq!(
        out.metrics,
        vec![("seen".to_string(), serde_json::json!(1)); 2]
    );
    assert_eq!(out.acks.len(), 2);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
}

#[test]
fn python_errors_are_reported_and_the_tuple_failed() {
    let body = r#"
class B(storm.BasicBolt):
    def process(self, t):
        raise ValueError("bad input " + t.values[0])
B().run()
"#;
    let (mut bolt, ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &[]);
    let mut out = Recorder::default();
    bolt.execute(&input(&ctx, &["q"]), &mut out)
        .expect("execute");
    bolt.finish(&mut out).expect("finish");
    assert_eq!(out.fails, vec![words(&["q"])]);
    assert_eq!(out.errors.len(), 1);
    assert!(
        out.errors[0].contains("ValueError: bad input q"),
        "{}",
        out.errors[0]
    );
    assert_eq!(bolt.error_count(), 1);
}

#[test]
fn missing_program_fails_prepare_clearly() {
    let comp = component(
        "ghost",
        ComponentKind::Bolt,
        vec!["/nonexistent/program".into()],
        &[("default", &["word"])],
    );
    let mut bolt = ShellBolt::new(&comp, &repo());
    let ctx = context(topology(comp, &[]), "ghost");
    let err = bolt
        .prepare(&ctx)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.starts_with("shell bolt \"ghost\" task 2: cannot start `/nonexistent/program` in "),
        "{err}"
    );
}

#[test]
fn handshake_context_has_storms_shape() {
    let comp = component(
        "pybolt",
        ComponentKind::Bolt,
        vec!["x".into()],
        &[("default", &["word"])],
    );
    let ctx = context(topology(comp, &[]), "pybolt");
    let json = serde_json::to_string_pretty(&context_json(&ctx)).expect("json");
    insta::assert_snapshot!(json);
}

#[test]
fn node_child_speaks_the_protocol_too() {
    // Needs Node.js: `.ci/run` installs it where it is missing.
    assert!(
        std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok(),
        "`node` is needed by this test and is not installed"
    );
    // A raw multilang bolt in JavaScript, without any adapter: upper-cases its input.
    let js = r#"
const fs = require('fs'); const os = require('os'); const path = require('path');
let buf = '';
function send(m) { process.stdout.write(JSON.stringify(m) + '\nend\n'); }
process.stdin.on('data', d => {
  buf += d;
  let i;
  while ((i = buf.indexOf('\nend\n')) >= 0) {
    const msg = JSON.parse(buf.slice(0, i)); buf = buf.slice(i + 5);
    if (msg.pidDir) { fs.writeFileSync(path.join(msg.pidDir, String(process.pid)), ''); send({pid: process.pid}); }
    else if (Array.isArray(msg)) {}
    else if (msg.stream === '__heartbeat') send({command: 'sync'});
    else { send({command: 'emit', anchors: [msg.id], tuple: [msg.tuple[0].toUpperCase()], need_task_ids: false}); send({command: 'ack', id: msg.id}); }
  }
});
"#;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("upper.js"), js).expect("write");
    let comp = component(
        "upper",
        ComponentKind::Bolt,
        vec!["node".into(), "upper.js".into()],
        &[("default", &["word"])],
    );
    let mut bolt = ShellBolt::new(&comp, dir.path());
    let ctx = context(topology(comp, &[]), "upper");
    bolt.prepare(&ctx).expect("prepare");
    let mut out = Recorder::default();
    bolt.execute(&input(&ctx, &["storm"]), &mut out)
        .expect("execute");
    bolt.finish(&mut out).expect("finish");
    assert_eq!(out.emits[0].1, words(&["STORM"]));
    assert_eq!(out.acks, vec![words(&["storm"])]);
}

fn opened_spout(
    body: &str,
    config: &[(&str, serde_json::Value)],
) -> (ShellSpout, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cmd = script(dir.path(), "spout.py", body);
    let comp = component(
        "pyspout",
        ComponentKind::Spout,
        cmd,
        &[("default", &["word"])],
    );
    let mut spout = ShellSpout::new(&comp, dir.path());
    let ctx = context(topology(comp, config), "pyspout");
    spout.open(&ctx).expect("open");
    (spout, dir)
}

/// Call `next_tuple` until `done` holds, an error, or `limit`.
fn next_until(
    spout: &mut ShellSpout,
    out: &mut Recorder,
    limit: Duration,
    done: impl Fn(&Recorder) -> bool,
) -> anyhow::Result<Vec<SpoutStatus>> {
    let end = Instant::now() + limit;
    let mut statuses = Vec::new();
    while !done(out) && Instant::now() < end {
        statuses.push(spout.next_tuple(out)?);
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(statuses)
}

/// A spout's `metrics` reach its collector, those sent while it is activated too (that turn
/// has no collector: they are applied at the next turn).
#[test]
fn spout_metrics_reach_the_collector_even_from_activate() {
    let body = r#"
class S(storm.Spout):
    def activate(self):
        storm.rpcMetrics("activated", 1)
    def nextTuple(self):
        storm.rpcMetrics("next", {"n": 2})
        storm.emit(["w"])
S().run()
"#;
    let (mut spout, _dir) = opened_spout(body, &[]);
    spout.activate().expect("activate");
    let mut out = Recorder::default();
    next_until(&mut spout, &mut out, Duration::from_secs(10), |o| {
        !o.emits.is_empty()
    })
    .expect("next");
    spout.close();
    assert_eq!(
        out.metrics,
        vec![
            ("activated".to_string(), serde_json::json!(1)),
            ("next".to_string(), serde_json::json!({"n": 2}))
        ]
    );
}

#[test]
fn spout_breaking_the_protocol_is_restarted() {
    // Each incarnation emits one good tuple, then writes garbage.
    let body = r#"
class S(storm.Spout):
    def initialize(self, conf, context):
        self.n = 0
    def nextTuple(self):
        self.n += 1
        if self.n == 1:
            storm.emit(["w%d" % os.getpid()])
        else:
            sys.stdout.write("{oops\nend\n")
            sys.stdout.flush()
S().run()
"#;
    let (mut spout, _dir) = opened_spout(body, &[]);
    let mut out = Recorder::default();
    let statuses = next_until(&mut spout, &mut out, Duration::from_secs(10), |o| {
        o.emits.len() == 2
    })
    .expect("recovers");
    assert!(statuses.contains(&SpoutStatus::Idle));
    assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
    insta::assert_snapshot!(out.errors[0], @r#"shell spout "pyspout" task 2: protocol error: the child wrote "{oops" to its stdout, which is not a protocol message: invalid JSON (key must be a string at line 1 column 2). A multilang child must write only protocol messages to stdout: write other output to stderr, or send it with the `log` command"#);
    assert_ne!(
        out.emits[0].1, out.emits[1].1,
        "a new process emitted the second tuple"
    );
    spout.close();
}

#[test]
fn spout_hang_and_crash_loop_end_in_errors() {
    let hang =
        "class S(storm.Spout):\n    def nextTuple(self):\n        time.sleep(1000)\nS().run()\n";
    let config = [("topology.subprocess.timeout.secs", serde_json::json!(1))];
    let (mut spout, _dir) = opened_spout(hang, &config);
    let mut out = Recorder::default();
    assert_eq!(spout.next_tuple(&mut out).expect("next"), SpoutStatus::Idle);
    insta::assert_snapshot!(out.errors.join("\n"), @r#"shell spout "pyspout" task 2: the child hangs: no answer to `next` within 1s (topology.subprocess.timeout.secs)"#);
    spout.close();

    let crash = "class S(storm.Spout):\n    def nextTuple(self):\n        os._exit(2)\nS().run()\n";
    let (mut spout, _dir) = opened_spout(crash, &[]);
    let mut out = Recorder::default();
    let err = next_until(&mut spout, &mut out, Duration::from_secs(30), |_| false)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(
        err,
        "shell spout \"pyspout\" task 2: gave up after 5 failures in a row with no work done \
         in between; last failure: exited unexpectedly (exit status: 2)"
    );
    assert_eq!(out.errors.len(), 5);
}

#[test]
fn finish_gives_up_on_tuples_a_live_child_never_answers() {
    // A bolt that forgets to ack, but answers heartbeats.
    let body = "storm.Bolt().run()\n";
    let config = [("topology.subprocess.timeout.secs", serde_json::json!(1))];
    let (mut bolt, ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &config);
    let mut out = Recorder::default();
    bolt.execute(&input(&ctx, &["lost"]), &mut out)
        .expect("execute");
    let start = Instant::now();
    bolt.finish(&mut out).expect("finish");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(out.fails, vec![words(&["lost"])]);
    insta::assert_snapshot!(out.errors.join("\n"), @r#"shell bolt "pybolt" task 2: 1 tuple(s) neither acked nor failed within 1s of the end of input"#);
}

#[test]
fn spout_emits_directly_and_reads_task_ids() {
    let body = r#"
class S(storm.Spout):
    def activate(self):
        storm.emit(["early"], need_task_ids=False)
    def nextTuple(self):
        ids = storm.emit(["x"], id="m1")
        storm.emitDirect(1, [json.dumps(ids)])
S().run()
"#;
    let (mut spout, _dir) = opened_spout(body, &[]);
    spout.activate().expect("activate");
    let mut out = Recorder::default();
    assert_eq!(spout.next_tuple(&mut out).expect("next"), SpoutStatus::Busy);
    let emitted: Vec<(Values, Option<Value>)> = out
        .emits
        .iter()
        .map(|e| (e.1.clone(), e.3.clone()))
        .collect();
    assert_eq!(
        emitted,
        vec![
            (words(&["early"]), None),
            (words(&["x"]), Some(Value::str("m1")))
        ]
    );
    assert_eq!(out.direct, vec![(1, streams::DEFAULT, words(&["[3, 4]"]))]);
    spout.close();
}

#[test]
fn stderr_floods_do_not_block_the_child() {
    // Far more than a pipe buffer of stderr per tuple.
    let body = r#"
class B(storm.BasicBolt):
    def process(self, t):
        sys.stderr.write(("noise " * 100 + "\n") * 500)
        sys.stderr.flush()
B().run()
"#;
    let (mut bolt, ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &[]);
    let mut out = Recorder::default();
    for _ in 0..3 {
        bolt.execute(&input(&ctx, &["x"]), &mut out)
            .expect("execute");
    }
    bolt.finish(&mut out).expect("finish");
    assert_eq!(out.acks.len(), 3);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
}

#[test]
fn max_pending_makes_execute_wait_for_a_slow_child() {
    // The child sleeps on its first tuple; big tuples fill the pipe, so with at most one tuple
    // queued the third execute waits until the child reads again.
    let body = r#"
class B(storm.BasicBolt):
    def initialize(self, conf, context):
        self.first = True
    def process(self, t):
        if self.first:
            self.first = False
            time.sleep(1.0)
B().run()
"#;
    let config = [("topology.shellbolt.max.pending", serde_json::json!(1))];
    let (mut bolt, ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &config);
    let mut out = Recorder::default();
    let big = "y".repeat(200_000);
    let start = Instant::now();
    for _ in 0..3 {
        bolt.execute(&input(&ctx, &[&big]), &mut out)
            .expect("execute");
    }
    let waited = start.elapsed();
    bolt.finish(&mut out).expect("finish");
    assert!(waited >= Duration::from_millis(500), "{waited:?}");
    assert_eq!(out.acks.len(), 3);
}

#[test]
fn a_child_asking_for_task_ids_is_answered_in_order_through_poll() {
    // Driven as the executor drives it (execute, then poll when idle): poll answers such a
    // child as its messages come, reading its output itself for a while.
    let body = r#"
class B(storm.BasicBolt):
    def process(self, t):
        for i in range(3):
            ids = storm.emit([t.values[0] + "." + str(i)])
            if ids != [3, 4]:
                raise ValueError("task ids " + repr(ids))
B().run()
"#;
    let (mut bolt, ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &[]);
    let mut out = Recorder::default();
    let n = 300;
    for i in 0..n {
        bolt.execute(&input(&ctx, &[&i.to_string()]), &mut out)
            .expect("execute");
        if i % 50 == 0 {
            bolt.poll(&mut out).expect("poll");
        }
    }
    poll_until(&mut bolt, &mut out, Duration::from_secs(20), |o, _| {
        o.acks.len() == n
    })
    .expect("poll");
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let expected: Vec<Values> = (0..n)
        .flat_map(|i| (0..3).map(move |k| words(&[&format!("{i}.{k}")])))
        .collect();
    let emitted: Vec<Values> = out.emits.iter().map(|e| e.1.clone()).collect();
    assert_eq!(emitted, expected);
    let acked: Vec<Values> = (0..n).map(|i| words(&[&i.to_string()])).collect();
    assert_eq!(out.acks, acked);
    assert_eq!(bolt.in_flight(), 0);
    bolt.cleanup();
}

#[test]
fn a_child_dying_while_answered_through_poll_is_restarted() {
    // The first child exits in the middle of its exchanges: its in-flight tuples fail, a new
    // child takes the next ones.
    let body = r#"
marker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "died")
class B(storm.BasicBolt):
    def process(self, t):
        storm.emit([t.values[0]])
        if t.values[0] == "40" and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(3)
B().run()
"#;
    let (mut bolt, ctx, _dir) = prepared_bolt(body, &[("default", &["word"])], &[]);
    let mut out = Recorder::default();
    // The first child reads ahead: all of the first 50 reach it before it dies.
    for (from, to) in [(0, 50), (50, 100)] {
        for i in from..to {
            bolt.execute(&input(&ctx, &[&i.to_string()]), &mut out)
                .expect("execute");
            bolt.poll(&mut out).expect("poll");
        }
        poll_until(&mut bolt, &mut out, Duration::from_secs(20), |o, _| {
            o.acks.len() + o.fails.len() == to
        })
        .expect("poll");
    }
    assert!(
        out.errors.iter().any(|e| e.contains("exited")),
        "{:?}",
        out.errors
    );
    assert!(!out.fails.is_empty());
    assert!(out.fails.contains(&words(&["40"])), "{:?}", out.fails);
    assert!(
        out.acks.contains(&words(&["39"])) && out.acks.contains(&words(&["99"])),
        "acks {:?} fails {:?} errors {:?}",
        out.acks,
        out.fails,
        out.errors
    );
    assert_eq!(bolt.in_flight(), 0);
    bolt.cleanup();
}

/// Raw multilang in Python, no adapter: `read` and `send` one message, and the handshake
/// (needs `sys`, `os` and a `json` module imported before it).
const RAW_PROTOCOL: &str = r#"
def read():
    lines = []
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        if line == "end\n":
            return json.loads("".join(lines))
        lines.append(line)
def send(m):
    sys.stdout.write(json.dumps(m) + "\nend\n"); sys.stdout.flush()
setup = read()
open(os.path.join(setup["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
"#;

/// Components written against Apache Storm's own adapters as they are: a spout that, like
/// storm.js, never answers `activate`/`deactivate`, and a bolt that, like storm.py's
/// `emitBolt`, serialises `map(...)` anchors through `simplejson` and waits for its task ids.
/// Raw protocol code, no adapter of ours: the run must end with exact totals.
#[test]
fn storm_era_adapters_run_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spout = [
        "import sys, os, json\n",
        RAW_PROTOCOL,
        r#"
sentences = ["the cow jumped over the moon", "the man went to the store"]
sent = 0
while True:
    msg = read()
    if isinstance(msg, list):
        continue
    cmd = msg["command"]
    if cmd == "next":
        if sent == len(sentences):
            sys.exit(0)
        send({"command": "emit", "id": sent, "tuple": [sentences[sent]]})
        sent += 1
        send({"command": "sync"})
    elif cmd in ("ack", "fail"):
        send({"command": "sync"})
    # activate / deactivate: no answer at all, as storm.js
"#,
    ]
    .concat();
    let bolt = [
        "import sys, os\nfrom collections import deque\nimport simplejson as json\n",
        RAW_PROTOCOL,
        r#"
waiting = deque()
while True:
    tup = waiting.popleft() if waiting else read()
    if isinstance(tup, list):
        continue
    if tup["stream"] == "__heartbeat":
        send({"command": "sync"})
        continue
    for word in tup["tuple"][0].split(" "):
        send({"command": "emit", "anchors": map(lambda t: t["id"], [tup]), "tuple": [word]})
        while True:
            msg = read()
            if isinstance(msg, list):
                break
            waiting.append(msg)
    send({"command": "ack", "id": tup["id"]})
"#,
    ]
    .concat();
    std::fs::write(dir.path().join("spout.py"), spout).expect("write spout");
    std::fs::write(dir.path().join("bolt.py"), bolt).expect("write bolt");
    let yaml = r#"
name: storm-era
spouts:
  - id: sentences
    type: shell
    command: [python3, spout.py]
    fields: [sentence]
bolts:
  - id: split
    type: shell
    command: [python3, bolt.py]
    fields: [word]
  - id: count
    type: count
  - id: print
    type: stdout
streams:
  - { from: sentences, to: split, grouping: shuffle }
  - { from: split, to: count, grouping: { type: fields, args: [word] } }
  - { from: count, to: print, grouping: global }
"#;
    let topo = dir.path().join("topo.yaml");
    std::fs::write(&topo, yaml).expect("write topology");
    let out = super::run::storm(dir.path())
        .timeout(Duration::from_secs(60))
        .args(["run", "-q"])
        .arg(&topo)
        .output()
        .expect("storm runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "cow\t1",
            "jumped\t1",
            "man\t1",
            "moon\t1",
            "over\t1",
            "store\t1",
            "the\t4",
            "to\t1",
            "went\t1"
        ]
    );
}

/// Ctrl-C at a terminal signals the whole foreground process group. Storm drains on it
/// (`docs/reliability.md`), so its children must not get the signal too: they finish the tuples in flight
/// instead of dying with a KeyboardInterrupt and being restarted mid-drain.
#[test]
fn ctrl_c_to_the_process_group_drains_python_bolts_instead_of_killing_them() {
    use std::os::unix::process::CommandExt;
    let conf = tempfile::tempdir().expect("tempdir");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("storm"))
        .env("STORM_CONF_DIR", conf.path())
        .current_dir(repo())
        .args([
            "run",
            "--progress",
            "always",
            "-e",
            "generate(rate=20000) | shell(python3, multilang/examples/passthrough.py) fields=[word] | count(word) | stdout",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        // A group of its own, as a shell gives a foreground job (and so the test's own group
        // is not signalled).
        .process_group(0)
        .spawn()
        .expect("spawns");
    // The first progress line comes a second in, when tuples have long been flowing through
    // the Python bolts.
    let stderr = crate::support::await_progress(&mut child, Duration::from_secs(30));
    let group = format!("-{}", child.id());
    let status = std::process::Command::new("kill")
        .args(["-INT", "--", &group])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let out = child.wait_with_output().expect("ends");
    let stderr = stderr.join().expect("stderr read");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("exited unexpectedly"), "{stderr}");
    assert!(!stderr.contains("KeyboardInterrupt"), "{stderr}");
    let counted: u64 = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.rsplit('\t').next()?.parse::<u64>().ok())
        .sum();
    assert!(counted > 0, "the drained counts were printed");
}
