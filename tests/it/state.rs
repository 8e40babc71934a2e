//! `storm state ls|dump|clear` on state dirs built through the store's API: what is shown is
//! what a resume would restore (committed checkpoints folded, later ones left out).

use crate::validate::storm;
use std::path::Path;
use storm::state::{dir, Commits, Store, TaskKey};
use storm::tuple::Value;

fn task(component: &str, index: u32) -> TaskKey {
    TaskKey {
        component: component.into(),
        index,
    }
}

fn set(k: &str, v: i64) -> (Value, Option<Value>) {
    (Value::str(k), Some(Value::Int(v)))
}

/// A word count's state dir: checkpoints 1 and 2 committed, 3 prepared only (a crash before
/// its commit), over two workers.
fn word_count_dir(path: &Path) {
    let commits = Commits::open(path).expect("commit record");
    let shape = [("lines".to_string(), 1), ("count".to_string(), 2)];
    commits.set_shape("wc", &shape).expect("shape");
    let w0 = Store::open(&dir::worker_path(path, 0)).expect("worker 0");
    let w1 = Store::open(&dir::worker_path(path, 1)).expect("worker 1");
    let offset = |n: i64| {
        let kept = Value::List(Box::new(vec![Value::str("the end")]));
        let map = [
            ("offset".to_string(), Value::Int(n)),
            ("kept".to_string(), kept),
        ];
        Value::Map(Box::new(map.into_iter().collect()))
    };
    let prepare = |txid, store: &Store, t: &TaskKey, changes: &[(Value, Option<Value>)]| {
        store.prepare(txid, t, changes, None).expect("prepare");
    };
    prepare(1, &w0, &task("count", 0), &[set("the", 2), set("a", 1)]);
    prepare(1, &w1, &task("count", 1), &[set("end", 1)]);
    w0.prepare(1, &task("lines", 0), &[], Some(&offset(12)))
        .expect("prepare");
    commits.commit(1).expect("commit");
    prepare(
        2,
        &w0,
        &task("count", 0),
        &[set("the", 3), (Value::str("a"), None)],
    );
    let key = Value::List(Box::new(vec![Value::str("x y"), Value::Int(7)]));
    let changes = [(key, Some(Value::Float(0.5)))];
    prepare(2, &w1, &task("count", 1), &changes);
    commits.commit(2).expect("commit");
    prepare(3, &w0, &task("count", 0), &[set("never", 1)]);
    w0.prepare(3, &task("lines", 0), &[], Some(&offset(99)))
        .expect("prepare");
}

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path()).args(args).output().expect("runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

fn filtered(f: impl FnOnce()) {
    insta::with_settings!({filters => vec![
        (r"state dir   .*", "state dir   [DIR]"),
        (r"\d+(\.\d)? (B|KiB|MiB)", "[SIZE]"),
        (r"at \d{4}-\d\d-\d\dT[0-9:.]+Z", "at [TIME]"),
    ]}, { f() });
}

#[test]
fn state_ls_shows_the_committed_checkpoint_tasks_and_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    word_count_dir(tmp.path());
    let dir = tmp.path().to_string_lossy();
    let (code, out, err) = run(&["state", "ls", &dir]);
    assert_eq!(code, Some(0), "{err}");
    filtered(|| insta::assert_snapshot!("state_ls", out));
}

#[test]
fn state_dump_shows_committed_entries_as_text_and_json_lines() {
    let tmp = tempfile::tempdir().expect("tempdir");
    word_count_dir(tmp.path());
    let dir = tmp.path().to_string_lossy();
    let (code, text, err) = run(&["state", "dump", &dir]);
    assert_eq!(code, Some(0), "{err}");
    insta::assert_snapshot!("state_dump_text", text);
    let (code, json, err) = run(&["state", "dump", &dir, "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    insta::assert_snapshot!("state_dump_json", json);
    for line in json.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("each line is JSON");
    }
}

#[test]
fn state_clear_removes_only_a_state_dir_and_asks_first() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let plain = tmp.path().join("photos");
    std::fs::create_dir(&plain).expect("mkdir");
    std::fs::write(plain.join("cat.jpg"), b"meow").expect("write");
    let (code, _, err) = run(&["state", "clear", &plain.to_string_lossy(), "--yes"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("is not a state dir: it holds no checkpoint.redb"),
        "{err}"
    );
    assert!(plain.join("cat.jpg").exists(), "left alone");

    let state = tmp.path().join("wc");
    std::fs::create_dir(&state).expect("mkdir");
    word_count_dir(&state);
    let (code, _, err) = run(&["state", "clear", &state.to_string_lossy()]);
    assert_eq!(code, Some(2), "no terminal to ask on: --yes is needed");
    assert!(err.contains("without --yes"), "{err}");
    assert!(state.exists());
    let (code, _, err) = run(&["state", "clear", &state.to_string_lossy(), "--yes"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!state.exists());
}

#[test]
fn state_errors_are_located() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("missing");
    let (code, _, err) = run(&["state", "ls", &missing.to_string_lossy()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("missing"), "{err}");

    word_count_dir(tmp.path());
    std::fs::write(dir::worker_path(tmp.path(), 1), vec![0xa5u8; 8192]).expect("write");
    let (code, _, err) = run(&["state", "dump", &tmp.path().to_string_lossy()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("worker-1.redb"), "{err}");

    let (code, _, err) = run(&["state", "lss", "x"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("similar subcommand exists: 'ls'"), "{err}");
}
