//! Multilang resources travel with a submission: a python3 shell bolt whose topology file and
//! scripts are deleted as soon as `storm submit` returns still runs on a nimbus + supervisor
//! cluster, from the copy its worker unpacked.

use crate::cluster::{client, eventually, free_port, storm, Daemons};
use std::path::{Path, PathBuf};

/// Records each input's first value, upper-cased, the pid of the worker that runs it and its
/// working folder, one line each, in the file named by its argument; it imports the adapter from `../python`, as
/// `multilang/examples/split.py` does.
const RECORD_PY: &str = r#"import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import storm  # noqa: E402


class Record(storm.BasicBolt):
    def initialize(self, conf, context):
        self.out = open(sys.argv[1], "a")

    def process(self, tup):
        line = (str(tup.values[0]).upper(), os.getppid(), os.getcwd())
        self.out.write("%s %d %s\n" % line)
        self.out.flush()


Record().run()
"#;

const INPUTS: usize = 300;

/// `count` inputs at `rate` a second into the python bolt, which records them in `out`.
pub(crate) fn topology(out: &Path, count: u64, rate: u64) -> String {
    format!(
        "name: shipped-scripts
config:
  topology.workers: 1
  topology.acker.executors: 0
spouts:
  - id: gen
    type: generate
    args: {{ count: {count}, rate: {rate}, values: [[a], [b], [c]] }}
bolts:
  - id: record
    type: shell
    command: [python3, record.py, {}]
    cwd: multilang/examples
    fields: [word]
streams:
  - from: gen
    to: record
    grouping: shuffle
",
        out.display()
    )
}

/// The topology folder: `shipped.yaml` (`text`), the script and our adapter (copied from the
/// repository); the topology file's path.
pub(crate) fn write_sources(dir: &Path, text: &str) -> PathBuf {
    let examples = dir.join("multilang/examples");
    let python = dir.join("multilang/python");
    std::fs::create_dir_all(&examples).expect("create multilang/examples");
    std::fs::create_dir_all(&python).expect("create multilang/python");
    std::fs::write(examples.join("record.py"), RECORD_PY).expect("write record.py");
    let adapter = Path::new(env!("CARGO_MANIFEST_DIR")).join("multilang/python/storm.py");
    std::fs::copy(&adapter, python.join("storm.py")).expect("copy storm.py");
    let file = dir.join("shipped.yaml");
    std::fs::write(&file, text).expect("write the topology");
    file
}

#[test]
fn a_shell_bolt_runs_on_the_cluster_after_its_submitted_folder_is_deleted() {
    let keep = tempfile::tempdir().expect("tempdir");
    let out = keep.path().join("recorded.txt");
    let data = keep.path().join("nimbus");
    let sources = tempfile::tempdir().expect("tempdir");
    let file = write_sources(sources.path(), &topology(&out, INPUTS as u64, 1000));

    let mut daemons = Daemons::default();
    let log = keep.path().join("nimbus.log");
    daemons.spawn_logged(
        "nimbus",
        storm()
            .args(["nimbus", "--listen", "127.0.0.1:0", "--data"])
            .arg(&data)
            .args(["-c", "ui.port=0"]),
        &log,
    );
    let addr = crate::support::nimbus_addr(&log);
    eventually("nimbus to answer", || client(&["list", "--nimbus", &addr]));
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

    let submitted = client(&["submit", file.to_str().expect("utf-8"), "--nimbus", &addr]);
    let id = submitted.expect("submit succeeds").trim().to_string();
    // Gone before any worker starts: only the shipped copy can run the bolt.
    let gone = sources.path().to_path_buf();
    sources.close().expect("delete the topology's folder");
    assert!(!gone.exists());

    let stored = data.join("stormdist").join(&id).join("submission.json");
    let stored = std::fs::read_to_string(&stored).expect("nimbus keeps the submission");
    assert!(stored.contains("\"resources\""), "{stored}");

    let lines = eventually("every input recorded by the python bolt", || {
        let text = std::fs::read_to_string(&out).ok()?;
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        (lines.len() >= INPUTS).then_some(lines)
    });
    assert_eq!(lines.len(), INPUTS, "each input recorded once");
    assert!(
        lines
            .iter()
            .all(|l| ["A", "B", "C"].contains(&l.split(' ').next().unwrap_or(""))),
        "{lines:?}"
    );
    let tree = client(&["zk", "dump", "--nimbus", &addr]).expect("dump");
    assert!(tree.contains(&format!("/storm/taskbeats/{id}/")), "{tree}");

    // The bolt ran from the worker's unpacked copy, which goes when the worker ends.
    let copies = std::env::temp_dir().join("storm-resources");
    let cwd = lines[0].split(' ').nth(2).unwrap_or("").to_string();
    let copy = copies.to_string_lossy().to_string();
    assert!(
        cwd.starts_with(&format!("{copy}/{id}-")) && cwd.ends_with("multilang/examples"),
        "{cwd}"
    );
    let ours = |name: &str| name.starts_with(&format!("{id}-"));
    eventually("the worker's copy removed", || {
        let left = std::fs::read_dir(&copies)
            .ok()?
            .flatten()
            .any(|e| ours(&e.file_name().to_string_lossy()));
        (!left).then_some(())
    });
}
