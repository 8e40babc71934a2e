//! Apache Storm's own multilang material on nimbus + supervisor: Storm's `storm.js` and
//! `storm.py` laid out beside `randomsentence.js` and `splitsentence.py` as in a jar's
//! `resources/` run from the folder `storm submit` ships (the submitted folder deleted at
//! once), and no secret (`ui.token`, the cluster secret, what `storm.secret.keys` lists)
//! reaches a child's handshake conf.

use crate::cluster::{client, eventually, free_port, start_nimbus, storm, Daemons};
use std::path::{Path, PathBuf};

/// Storm's sentence spout (node) into Storm's split bolt (python) into our recorder (python,
/// on Storm's storm.py), which writes each word to `words` and its conf to `conf`.
fn topology(words: &Path, conf: &Path) -> String {
    format!(
        "name: storm-multilang
config:
  topology.workers: 1
  topology.message.timeout.secs: 30
spouts:
  - id: sentences
    type: shell
    command: [node, randomsentence.js]
    fields: [sentence]
bolts:
  - id: split
    type: shell
    command: [python3, splitsentence.py]
    fields: [word]
  - id: record
    type: shell
    command: [python3, record.py, {}, {}]
    fields: [word]
streams:
  - from: sentences
    to: split
    grouping: shuffle
  - from: split
    to: record
    grouping: shuffle
",
        words.display(),
        conf.display()
    )
}

/// A copy of `tests/fixtures/storm/multilang` with the topology file written into it.
fn storm_layout(dir: &Path, text: &str) -> PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/storm/multilang");
    for entry in std::fs::read_dir(&fixtures).expect("the fixtures") {
        let entry = entry.expect("a fixture");
        std::fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy a fixture");
    }
    let file = dir.join("sentences.yaml");
    std::fs::write(&file, text).expect("write the topology");
    file
}

/// Nimbus and one supervisor with one slot; nimbus's address.
fn cluster(daemons: &mut Daemons, data: &Path) -> String {
    let addr = format!("127.0.0.1:{}", free_port("127.0.0.1"));
    start_nimbus(daemons, &addr, data);
    let port = free_port("127.0.0.1").to_string();
    daemons.spawn(
        "supervisor",
        storm().args([
            "supervisor",
            "--nimbus",
            &addr,
            "--host",
            "127.0.0.1",
            "--slots",
            &port,
        ]),
    );
    eventually("the supervisor", || {
        let tree = client(&["zk", "dump", "--nimbus", &addr])?;
        tree.contains("/storm/supervisors/").then_some(())
    });
    addr
}

const WORDS: &[&str] = &[
    "the", "cow", "jumped", "over", "moon", "an", "apple", "a", "day", "keeps", "doctor", "away",
    "four", "score", "and", "seven", "years", "ago", "snow", "white", "dwarfs", "i", "am", "at",
    "two", "with", "nature",
];

#[test]
fn storms_own_multilang_layout_runs_from_the_shipped_folder_without_secrets() {
    let keep = tempfile::tempdir().expect("tempdir");
    let words = keep.path().join("words.txt");
    let conf = keep.path().join("conf.json");
    let sources = tempfile::tempdir().expect("tempdir");
    let file = storm_layout(sources.path(), &topology(&words, &conf));
    let mut daemons = Daemons::default();
    let addr = cluster(&mut daemons, &keep.path().join("nimbus"));

    let submitted = client(&[
        "submit",
        file.to_str().expect("utf-8"),
        "--nimbus",
        &addr,
        "-c",
        "ui.token=the-ui-token",
        "-c",
        "storm.secret.keys=[db.url]",
        "-c",
        "db.url=postgres://user:pw@db",
        "-c",
        "db.name=words",
    ]);
    let id = submitted.expect("submit succeeds").trim().to_string();
    sources.close().expect("delete the submitted folder");

    let seen = eventually("words recorded by the python bolt", || {
        let text = std::fs::read_to_string(&words).ok()?;
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        (lines.len() >= 20).then_some(lines)
    });
    assert!(seen.iter().all(|w| WORDS.contains(&w.as_str())), "{seen:?}");

    // Storm's storm.py handed the recorder its conf: no secret in it.
    let text = std::fs::read_to_string(&conf).expect("the recorder's conf");
    let dumped: serde_json::Value = serde_json::from_str(&text).expect("JSON conf");
    let cwd = dumped["cwd"].as_str().unwrap_or("").to_string();
    let copies = std::env::temp_dir().join("storm-resources");
    assert!(
        cwd.starts_with(&copies.to_string_lossy().to_string()),
        "{cwd}"
    );
    let dumped = &dumped["conf"];
    assert_eq!(dumped["storm.id"], id.as_str(), "{text}");
    for secret in [
        "ui.token",
        "storm.cluster.secret",
        "db.url",
        "storm.secret.keys",
    ] {
        assert!(dumped.get(secret).is_none(), "{secret} in {text}");
    }
    assert!(
        !text.contains("the-ui-token") && !text.contains("pw@db"),
        "{text}"
    );
    assert_eq!(dumped["db.name"], "words", "other keys reach it: {text}");
}

/// `storm run --processes` lays the children out as a cluster does: they run from a copy of
/// the topology's folder, which is gone when the run ends.
#[test]
fn processes_run_children_from_a_copy_removed_at_the_end() {
    let keep = tempfile::tempdir().expect("tempdir");
    let words = keep.path().join("words.txt");
    let conf = keep.path().join("conf.json");
    let sources = tempfile::tempdir().expect("tempdir");
    let file = storm_layout(sources.path(), &topology(&words, &conf));
    let out = storm()
        .arg("run")
        .arg(&file)
        .args(["--processes", "--duration", "3s"])
        .output()
        .expect("storm run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&conf).expect("the recorder's conf");
    let dumped: serde_json::Value = serde_json::from_str(&text).expect("JSON conf");
    let cwd = PathBuf::from(dumped["cwd"].as_str().unwrap_or(""));
    let copies = std::env::temp_dir().join("storm-resources");
    assert!(cwd.starts_with(&copies), "{}", cwd.display());
    assert!(!cwd.exists(), "{} left behind", cwd.display());
    let recorded = std::fs::read_to_string(&words).expect("words recorded");
    assert!(recorded.lines().count() > 0);
}
