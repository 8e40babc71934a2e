use super::*;
use crate::config::{Config, Origin};
use crate::model::{ComponentKind, ComponentType, Stream};

/// A component of type `ctype` with `parallelism` executors and as many tasks.
fn component(id: &str, ctype: &str, parallelism: u32) -> Component {
    let ctype = ComponentType::from_name(ctype).expect("a built-in");
    let kind = if ctype.can_be(ComponentKind::Bolt) {
        ComponentKind::Bolt
    } else {
        ComponentKind::Spout
    };
    Component {
        id: id.into(),
        kind,
        ctype,
        args: serde_json::Map::new(),
        parallelism,
        tasks: parallelism,
        outputs: BTreeMap::new(),
        command: None,
        cwd: None,
        tick: None,
        finish: false,
        stateful: false,
        chain: true,
        config: BTreeMap::new(),
    }
}

fn stream(from: &str, to: &str, grouping: Grouping) -> Stream {
    Stream {
        from: from.into(),
        to: to.into(),
        stream: "default".into(),
        grouping,
        name: None,
    }
}

fn topology(components: Vec<Component>, streams: Vec<Stream>) -> Topology {
    Topology {
        name: "t".into(),
        config: Config::default(),
        components,
        streams,
        base_dir: ".".into(),
    }
}

/// `stdin | filter | dedupe(word) | stdout`, as the DSL writes it.
fn pipeline(p: [u32; 4]) -> Topology {
    topology(
        vec![
            component("in", "stdin", p[0]),
            component("keep", "filter", p[1]),
            component("dedupe", "dedupe", p[2]),
            component("out", "stdout", p[3]),
        ],
        vec![
            stream("in", "keep", Grouping::Shuffle),
            stream("keep", "dedupe", Grouping::Fields(vec!["word".into()])),
            stream("dedupe", "out", Grouping::Shuffle),
        ],
    )
}

#[test]
fn shuffle_edges_between_equal_parallelism_chain_and_a_keyed_edge_ends_a_chain() {
    for p in [1, 2] {
        let c = Chains::of(&pipeline([p, p, p, p]));
        assert_eq!(c.upstream_of("keep"), Some("in"), "the spout's first bolt");
        assert!(
            !c.is_chained("keep", "dedupe"),
            "a fields edge, parallelism {p}"
        );
        assert_eq!(c.upstream_of("out"), Some("dedupe"));
        assert_eq!(c.head_of("out"), "dedupe");
        assert_eq!(c.head_of("keep"), "in");
        assert_eq!((c.depth_of("keep"), c.depth_of("in")), (1, 0));
    }
    let mut t = pipeline([1, 1, 1, 1]);
    t.streams[1].grouping = Grouping::LocalOrShuffle;
    let c = Chains::of(&t);
    assert_eq!(c.head_of("out"), "in", "a chain of three links");
    assert_eq!(c.depth_of("out"), 3);
}

#[test]
fn unequal_parallelism_or_tasks_breaks_the_chain() {
    let c = Chains::of(&pipeline([1, 2, 2, 1]));
    assert!(!c.is_chained("in", "keep"), "1 → 2");
    assert!(!c.is_chained("dedupe", "out"), "2 → 1");
    let mut t = pipeline([2, 2, 2, 2]);
    t.components[1].tasks = 4;
    assert!(
        !Chains::of(&t).is_chained("in", "keep"),
        "2 tasks → 4 tasks"
    );
}

#[test]
fn chaining_is_turned_off_for_the_topology_or_per_component() {
    let mut t = pipeline([1, 1, 1, 1]);
    t.config
        .set(CHAINING_KEY, serde_json::json!(false), Origin::CommandLine);
    assert!(Chains::of(&t).is_empty());
    let mut t = pipeline([1, 1, 1, 1]);
    t.components[1].chain = false;
    let c = Chains::of(&t);
    assert!(!c.is_chained("in", "keep"), "keep says chain: false");
    assert!(c.is_chained("dedupe", "out"));
    let mut t = pipeline([1, 1, 1, 1]);
    t.components[2].chain = false;
    assert!(
        !Chains::of(&t).is_chained("dedupe", "out"),
        "nothing is fused onto it"
    );
}

#[test]
fn a_bolt_with_two_inputs_a_direct_edge_or_a_child_process_is_not_chained() {
    let mut t = pipeline([1, 1, 1, 1]);
    t.streams.push(stream("keep", "out", Grouping::Shuffle));
    let c = Chains::of(&t);
    assert!(!c.is_chained("dedupe", "out") && !c.is_chained("keep", "out"));
    let mut t = pipeline([1, 1, 1, 1]);
    t.streams[0].grouping = Grouping::Direct;
    assert!(!Chains::of(&t).is_chained("in", "keep"));
    let mut t = pipeline([1, 1, 1, 1]);
    t.components[1].command = Some(vec!["python3".into(), "keep.py".into()]);
    assert!(!Chains::of(&t).is_chained("in", "keep"));
}

#[test]
fn in_a_topology_that_keeps_state_a_spout_keeps_its_own_thread() {
    let mut t = pipeline([1, 1, 1, 1]);
    t.components[2].stateful = true;
    let c = Chains::of(&t);
    assert!(
        !c.is_chained("in", "keep"),
        "the spout paces the checkpoint rounds"
    );
    assert!(c.is_chained("dedupe", "out"), "bolts still chain");
    let (spout, filter) = (&t.components[0], &t.components[1]);
    assert!(
        may_work_ahead(&t, spout, filter),
        "the spout may still evaluate the filter where it reads"
    );
}

#[test]
fn no_work_is_done_ahead_where_chaining_is_turned_off() {
    let mut t = pipeline([1, 2, 1, 1]);
    assert!(may_work_ahead(&t, &t.components[0], &t.components[1]));
    t.components[1].chain = false;
    assert!(!may_work_ahead(&t, &t.components[0], &t.components[1]));
    t.components[1].chain = true;
    t.components[0].chain = false;
    assert!(!may_work_ahead(&t, &t.components[0], &t.components[1]));
    t.components[0].chain = true;
    t.config
        .set(CHAINING_KEY, serde_json::json!(false), Origin::CommandLine);
    assert!(!may_work_ahead(&t, &t.components[0], &t.components[1]));
}

#[test]
fn a_bolt_that_emits_in_bursts_ends_a_chain() {
    for burst in ["count", "aggregate", "top", "join"] {
        let mut t = pipeline([1, 1, 1, 1]);
        t.components[2].ctype = ComponentType::from_name(burst).expect("a built-in");
        let c = Chains::of(&t);
        assert!(
            !c.is_chained("dedupe", "out"),
            "{burst} emits every key at once"
        );
        assert!(c.is_chained("in", "keep"));
    }
}

#[test]
fn a_keyed_bolt_after_a_spout_reading_fields_with_one_task_each_is_chained() {
    let with = |args: serde_json::Value, p: [u32; 4]| {
        let mut t = pipeline(p);
        t.components[0].args = args.as_object().cloned().unwrap_or_default();
        t.streams.remove(0);
        t.streams[0].from = "in".into();
        Chains::of(&t)
    };
    for format in ["json", "csv", "tsv"] {
        let c = with(serde_json::json!({ "format": format }), [1, 1, 1, 1]);
        assert!(
            c.is_chained("in", "dedupe"),
            "{format}: a fields edge, 1 → 1"
        );
    }
    let c = with(serde_json::json!({ "format": "csv" }), [2, 1, 2, 1]);
    assert!(
        !c.is_chained("in", "dedupe"),
        "2 → 2 tasks: the key decides"
    );
    let c = with(serde_json::json!({}), [1, 1, 1, 1]);
    assert!(
        !c.is_chained("in", "dedupe"),
        "lines only: its thread works"
    );
    let c = with(serde_json::json!({ "format": "logfmt" }), [1, 1, 1, 1]);
    assert!(
        !c.is_chained("in", "dedupe"),
        "logfmt is read on the spout's thread"
    );
    let mut t = pipeline([1, 1, 1, 1]);
    t.components[0].args = serde_json::json!({ "format": "json" })
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert!(
        !Chains::of(&t).is_chained("keep", "dedupe"),
        "only right after the spout"
    );
    let file_into_dedupe = |args: serde_json::Value| {
        let mut file = component("in", "file", 1);
        file.args = args.as_object().cloned().unwrap_or_default();
        let t = topology(
            vec![file, component("dedupe", "dedupe", 1)],
            vec![stream("in", "dedupe", Grouping::Global)],
        );
        Chains::of(&t).is_chained("in", "dedupe")
    };
    for (path, follow) in [("logs/*.csv", false), ("app.csv", true)] {
        assert!(
            !file_into_dedupe(
                serde_json::json!({ "format": "csv", "path": path, "follow": follow })
            ),
            "{path}: its readers read lines only"
        );
    }
    assert!(
        file_into_dedupe(serde_json::json!({ "format": "csv", "path": "app.csv" })),
        "one file, read ahead"
    );
}
