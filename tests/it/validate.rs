//! `storm validate`: every validation check has a fixture under `tests/fixtures/invalid/` whose
//! rendered diagnostics are snapshotted; bad inputs give one line; the loader never panics.

use assert_cmd::Command;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

/// `storm` with its user configuration isolated from the machine's.
pub fn storm(conf_dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("storm").expect("the storm binary is built");
    cmd.env("STORM_CONF_DIR", conf_dir).env_remove("RUST_LOG");
    cmd
}

fn fixtures(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new("tests/fixtures").join(dir))
        .expect("fixtures folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_invalid_fixture_fails_with_located_snapshotted_diagnostics() {
    let conf = tempfile::tempdir().expect("tempdir");
    let files = fixtures("invalid");
    assert!(files.len() >= 20, "only {} fixtures", files.len());
    for file in files {
        let out = storm(conf.path())
            .arg("validate")
            .arg(&file)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", file.display());
        assert!(
            out.stdout.is_empty(),
            "{}: stdout must stay empty",
            file.display()
        );
        let first = stderr.lines().next().unwrap_or("");
        let shown = file.display().to_string();
        assert!(
            first.starts_with(&format!("{shown}:")) && first.contains(": error: "),
            "{shown}: first line is not FILE:LINE:COL: error: ...: {first}"
        );
        let name = file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("fixture")
            .to_string();
        insta::assert_snapshot!(name, stderr);
    }
}

#[test]
fn several_mistakes_are_all_reported() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["validate", "tests/fixtures/invalid/several-mistakes.yaml"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors = stderr.lines().filter(|l| l.contains(": error: ")).count();
    assert!(errors >= 5, "{stderr}");
}

#[test]
fn warnings_do_not_fail_validation() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args([
            "validate",
            "tests/fixtures/warn/unreachable-and-unknown-key.yaml",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ok: tests/fixtures/warn/unreachable-and-unknown-key.yaml (1 spouts, 3 bolts, 4 executors, 4 tasks)\n"
    );
}

/// The filter expression language is written in parallel; until it parses, the filter
/// example cannot validate.
#[test]
fn the_example_topologies_validate() {
    let conf = tempfile::tempdir().expect("tempdir");
    let mut files: Vec<PathBuf> = std::fs::read_dir("topologies")
        .expect("topologies folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 4);
    let out = storm(conf.path())
        .arg("validate")
        .args(&files)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok: ")).count(),
        files.len()
    );
    assert!(
        stdout.contains("ok: topologies/wordcount.yaml (1 spouts, 3 bolts, 8 executors, 8 tasks)")
    );
}

#[test]
fn json_format_lists_diagnostics() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args([
            "validate",
            "--format",
            "json",
            "tests/fixtures/invalid/unknown-type.yaml",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stderr).expect("JSON on stderr");
    insta::assert_json_snapshot!(v);
}

#[test]
fn unreadable_inputs_give_one_line_and_exit_1() {
    let conf = tempfile::tempdir().expect("tempdir");
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).expect("write");
        p
    };
    let huge = dir.path().join("huge.yaml");
    std::fs::File::create(&huge)
        .and_then(|f| f.set_len(50 * 1024 * 1024))
        .expect("sparse file");
    let cases = [
        (dir.path().join("missing.yaml"), "no such file"),
        (dir.path().to_path_buf(), "is a directory"),
        (write("empty.yaml", b"  \n"), "empty file"),
        (
            write("binary.yaml", &[0x7f, b'E', b'L', b'F', 0, 1, 2, 0xff]),
            "binary data",
        ),
        (write("latin1.yaml", b"name: caf\xe9\n"), "not UTF-8"),
        (huge, "too large"),
    ];
    for (path, reason) in cases {
        let out = storm(conf.path())
            .arg("validate")
            .arg(&path)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", path.display());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(reason),
            "{} should say {reason}: {stderr}",
            path.display()
        );
        assert!(!stderr.contains("panicked"));
    }
}

#[test]
fn flux_includes_and_filter_properties() {
    let opts = storm::topology::LoadOptions {
        overrides: vec![],
        filter: Some("tests/fixtures/valid/flux.properties".into()),
    };
    let loaded =
        storm::topology::load_file(Path::new("tests/fixtures/valid/flux-includes.yaml"), &opts)
            .map_err(|e| format!("{e:?}"))
            .expect("valid with its properties");
    let t = &loaded.topology;
    assert_eq!(t.name, "with-includes");
    // Without `override`, the including file's values win; the included ones fill the gaps.
    assert_eq!(t.config.workers(), 2);
    assert!(t.config.debug());
    let ids: Vec<&str> = t.components.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["words", "log"]);
    assert_eq!(t.component("log").map(|c| c.parallelism), Some(3));
    assert_eq!(
        t.component("words")
            .and_then(|c| c.output_fields("default")),
        Some(&["word".to_string()][..])
    );
}

#[test]
fn outputs_are_resolved_through_pass_through_bolts() {
    let text = "name: t\nspouts:\n  - {id: g, type: generate, args: {fields: [a, b]}}\n\
bolts:\n  - {id: c, type: chaos}\n  - {id: n, type: count}\n  - {id: s, type: shell, command: [x], fields: [y], streams: {err: [e]}}\n\
streams:\n  - {from: g, to: c}\n  - {from: c, to: n}\n  - {from: n, to: s}\n";
    let raw = storm::topology::parse_yaml(text, Path::new("."), &Default::default());
    let ctx = storm::topology::validate::Context {
        text,
        path: "t.yaml".into(),
        base_dir: ".".into(),
        overrides: &[],
        default_name: None,
    };
    let (t, _) = storm::topology::validate::validate(raw, &ctx)
        .map_err(|d| format!("{d:?}"))
        .expect("valid");
    let fields = |id: &str, s: &str| {
        t.component(id)
            .and_then(|c| c.output_fields(s))
            .map(|f| f.join(","))
    };
    assert_eq!(fields("c", "default").as_deref(), Some("a,b"));
    assert_eq!(fields("n", "default").as_deref(), Some("a,count"));
    assert_eq!(fields("s", "default").as_deref(), Some("y"));
    assert_eq!(fields("s", "err").as_deref(), Some("e"));
}

fn check_never_panics(text: &str) -> Result<(), TestCaseError> {
    let raw = storm::topology::parse_yaml(text, Path::new("."), &Default::default());
    let ctx = storm::topology::validate::Context {
        text,
        path: "p.yaml".into(),
        base_dir: ".".into(),
        overrides: &[],
        default_name: None,
    };
    if let Err(diags) = storm::topology::validate::validate(raw, &ctx) {
        prop_assert!(diags.iter().any(|d| d.is_error()));
        for d in diags {
            if let Some(s) = d.span {
                prop_assert!(
                    s.start <= s.end && s.end <= text.len(),
                    "span {s:?} outside the text"
                );
            }
            let source = storm::syntax::diag::Source {
                name: "p.yaml".into(),
                text: text.into(),
            };
            prop_assert!(!d.render(&source).is_empty());
        }
    }
    Ok(())
}

const WORDCOUNT: &str = include_str!("../../topologies/wordcount.yaml");
const FLUX: &str = include_str!("../../topologies/flux-wordcount.yaml");

/// `text` with `len` bytes at `at` replaced by `insert`, cut on character boundaries.
fn mutate(text: &str, at: usize, len: usize, insert: &str) -> String {
    let mut start = at.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + len).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{}{}", &text[..start], insert, &text[end..])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_yaml_never_panics(text in "[a-z:\\[\\]{}\\-#'\" \n_.0-9|>&*!%@`]{0,200}") {
        check_never_panics(&text)?;
    }

    #[test]
    fn mutated_wordcount_never_panics(at in 0usize..WORDCOUNT.len(), len in 0usize..20, insert in "[a-z:\\[\\]{}\\- \n\"0-9é]{0,8}") {
        check_never_panics(&mutate(WORDCOUNT, at, len, &insert))?;
    }

    #[test]
    fn mutated_flux_never_panics(at in 0usize..FLUX.len(), len in 0usize..20, insert in "[a-zA-Z:\\[\\]{}\\-$ \n\"0-9]{0,8}") {
        check_never_panics(&mutate(FLUX, at, len, &insert))?;
    }
}

/// A chain of `n` chaos bolts after a stdin spout, its streams listed in reverse.
fn chain(n: usize) -> String {
    let mut text = String::from("name: big\nspouts:\n  - {id: s, type: stdin}\nbolts:\n");
    for i in 0..n {
        text.push_str(&format!("  - {{id: f{i}, type: chaos}}\n"));
    }
    text.push_str("streams:\n");
    for i in (0..n).rev() {
        let from = if i == 0 {
            "s".to_string()
        } else {
            format!("f{}", i - 1)
        };
        text.push_str(&format!("  - {{from: {from}, to: f{i}}}\n"));
    }
    text
}

fn validate_chain(
    text: &str,
) -> Result<storm::model::Topology, Vec<storm::syntax::diag::Diagnostic>> {
    let raw = storm::topology::parse_yaml(text, Path::new("."), &Default::default());
    let ctx = storm::topology::validate::Context {
        text,
        path: "big.yaml".into(),
        base_dir: ".".into(),
        overrides: &[],
        default_name: None,
    };
    storm::topology::validate::validate(raw, &ctx).map(|(t, _)| t)
}

/// Regression: stream wiring and output resolution were quadratic (a 20 000-bolt chain listed
/// in reverse took minutes). Linear now; the bound is loose to stay reliable on slow machines.
/// A chain that long is past the executor limit: it still validates in linear time, to one
/// error; a chain within the limit resolves its outputs to the end.
#[test]
fn large_topologies_validate_in_linear_time() {
    let errors = validate_chain(&chain(20_000)).expect_err("past the executor limit");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        format!("{errors:?}").contains("at most 4096 can run"),
        "{errors:?}"
    );
    let n = 4_000;
    let t = validate_chain(&chain(n))
        .map_err(|d| format!("{:?}", d.first()))
        .expect("valid");
    assert_eq!(t.components.len(), n + 1);
    assert_eq!(
        t.component(&format!("f{}", n - 1))
            .and_then(|c| c.output_fields("default")),
        Some(&["line".to_string()][..])
    );
    // Linear, not quadratic: four times the components take about four times as long (a
    // quadratic pass would take sixteen). The two sizes alternate, five rounds, and each keeps
    // its best run, so a burst of load on a shared machine lands on both or is left out.
    let time = |text: &str| {
        let started = std::time::Instant::now();
        let _ = validate_chain(text);
        started.elapsed()
    };
    let (small_text, large_text) = (chain(1_000), chain(4_000));
    let mut small = std::time::Duration::MAX;
    let mut large = std::time::Duration::MAX;
    for _ in 0..5 {
        small = small.min(time(&small_text));
        large = large.min(time(&large_text));
    }
    assert!(
        large < small * 10,
        "1,000 components: {small:?}, 4,000: {large:?}"
    );
}

#[test]
fn a_yaml_file_and_its_dsl_twin_give_the_same_model() {
    let opts = storm::topology::LoadOptions::default();
    let load = |p: &str| match storm::topology::load_file(Path::new(p), &opts) {
        Ok(l) => l.topology,
        Err(e) => panic!("{p}: {e:?}"),
    };
    let yaml = load("topologies/wordcount.yaml");
    let dsl = load("topologies/wordcount.storm");
    assert_eq!(yaml.name, dsl.name);
    assert_eq!(yaml.components, dsl.components);
    assert_eq!(yaml.streams, dsl.streams);
    assert_eq!(yaml.base_dir, dsl.base_dir);
    // Same values; only where they were written (file and line) differs.
    let values = |t: &storm::model::Topology| {
        t.config
            .entries
            .iter()
            .map(|(k, e)| (k.clone(), e.value.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(values(&yaml), values(&dsl));
}

/// `stateful:` decides for its component; without it `topology.stateful` makes the built-ins
/// that keep state stateful and leaves the others stateless.
#[test]
fn stateful_resolves_from_the_key_then_the_topology_config() {
    let opts = storm::topology::LoadOptions::default();
    let load = |text: &str| match storm::topology::load_inline(text, &opts) {
        Ok(l) => l.topology,
        Err(e) => panic!("{text}: {e:?}"),
    };
    let flags = |t: &storm::model::Topology| {
        t.components
            .iter()
            .map(|c| (c.id.clone(), c.stateful))
            .collect::<Vec<_>>()
    };
    let plain = load("stdin | split | count(word) | stdout");
    assert!(!plain.is_stateful());
    assert!(flags(&plain).iter().all(|(_, s)| !s));
    let one = load("stdin | split | count(word) stateful=true | dedupe | stdout");
    assert_eq!(
        flags(&one),
        [
            ("stdin".to_string(), false),
            ("split".into(), false),
            ("count".into(), true),
            ("dedupe".into(), false),
            ("stdout".into(), false)
        ]
    );
    assert!(one.is_stateful());
    let all = load(
        "config topology.stateful=true\nstdin | split | count(word) | dedupe stateful=false | stdout",
    );
    assert_eq!(
        flags(&all),
        [
            ("stdin".to_string(), false),
            ("split".into(), false),
            ("count".into(), true),
            ("dedupe".into(), false),
            ("stdout".into(), false)
        ]
    );
}

/// An argument refused both by its shape and by its component's own reading is reported once,
/// with the more particular message.
#[test]
fn one_bad_argument_is_one_error() {
    let conf = tempfile::tempdir().expect("tempdir");
    for (dsl, message) in [
        (
            "stdin | top(n=-2, by=[line]) | stdout",
            "`n` must be a whole number ≥ 1",
        ),
        (
            "stdin | aggregate(ops=[count], emit=never) | stdout",
            "(got `never`)",
        ),
    ] {
        let out = storm(conf.path())
            .args(["validate", "-e", dsl])
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{dsl}");
        assert_eq!(err.matches("error:").count(), 1, "{dsl}: {err}");
        assert!(err.contains(message), "{dsl}: {err}");
    }
}
