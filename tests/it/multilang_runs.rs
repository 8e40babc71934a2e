//! Whole `storm run`s with shell components written in Python: third-party adapters (pystorm,
//! installed into a virtualenv), the `metrics` and unknown commands, the environment children
//! get, and what Ctrl-C does to a run whose tuple outlasts the message timeout.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Run `storm run -q TOPOLOGY ARGS...` in `dir` with `envs`; its output, after at most a minute.
fn storm_run(dir: &Path, topology: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = super::run::storm(dir);
    cmd.timeout(Duration::from_secs(60))
        .current_dir(dir)
        .args(["run", "-q"])
        .arg(topology)
        .args(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("storm runs");
    Output {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Output {
    fn sorted_lines(&self) -> Vec<&str> {
        let mut lines: Vec<&str> = self.stdout.lines().collect();
        lines.sort_unstable();
        lines
    }
}

/// A virtualenv with pystorm installed (see `support::venv`).
fn pystorm_venv() -> PathBuf {
    crate::support::venv("pystorm", &["pystorm"], "import pystorm, simplejson")
}

const PYSTORM_SPOUT: &str = r#"
import sys
from pystorm import Spout

SENTENCES = ["the cow jumped over the moon", "the man went to the store"]

class Sentences(Spout):
    outputs = ["sentence"]

    def initialize(self, conf, context):
        self.next = 0
        self.pending = {}

    def next_tuple(self):
        if self.next < len(SENTENCES):
            i = self.next
            self.next += 1
            self.pending[i] = SENTENCES[i]
            self.emit([SENTENCES[i]], tup_id=i)
        elif not self.pending:
            sys.exit(0)

    def ack(self, tup_id):
        self.pending.pop(tup_id, None)

    def fail(self, tup_id):
        self.emit([self.pending[tup_id]], tup_id=tup_id)

Sentences().run()
"#;

const PYSTORM_BOLT: &str = r#"
from pystorm import Bolt

class Split(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])

Split().run()
"#;

/// pystorm imports the real simplejson package (relative imports and all): storm's shim for
/// Apache's storm.py must not stand in its way. A pystorm spout and bolt, unchanged, in a
/// virtualenv that has pystorm, give exact word counts.
#[test]
fn pystorm_spout_and_bolt_run_unchanged() {
    let venv = pystorm_venv();
    let python = venv.join("bin/python").display().to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("spout.py"), PYSTORM_SPOUT).expect("write spout");
    std::fs::write(dir.path().join("bolt.py"), PYSTORM_BOLT).expect("write bolt");
    let yaml = format!(
        r#"
name: pystorm
spouts:
  - id: sentences
    type: shell
    command: [{python:?}, spout.py]
    fields: [sentence]
bolts:
  - id: split
    type: shell
    command: [{python:?}, bolt.py]
    fields: [word]
  - id: count
    type: count
  - id: print
    type: stdout
streams:
  - {{ from: sentences, to: split, grouping: shuffle }}
  - {{ from: split, to: count, grouping: {{ type: fields, args: [word] }} }}
  - {{ from: count, to: print, grouping: global }}
"#
    );
    let topo = dir.path().join("topo.yaml");
    std::fs::write(&topo, yaml).expect("write topology");
    let out = storm_run(dir.path(), &topo, &[], &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        out.sorted_lines(),
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
    assert!(!out.stderr.contains("error"), "{}", out.stderr);
}

/// In a Python that has the real simplejson, the shim gives that very package (submodules
/// included), and its `dumps` still writes the `map(...)` anchors of Apache's storm.py.
#[test]
fn the_simplejson_shim_defers_to_an_installed_simplejson() {
    let venv = pystorm_venv();
    let out = Command::new(venv.join("bin/python"))
        .env("PYTHONPATH", repo().join("multilang/compat"))
        .args([
            "-c",
            "import simplejson, simplejson.errors, os\n\
             print(os.path.basename(os.path.dirname(simplejson.__file__)))\n\
             print(simplejson.dumps({'anchors': map(str, [7]), 'id': 1}, sort_keys=True))",
        ])
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "simplejson\n{\"anchors\": [\"7\"], \"id\": 1}\n"
    );
}

/// A topology `generate(count) -> shell bolt -> stdout`, the bolt's body after our adapter's
/// import, written with the topology into `dir`.
fn generate_shell_stdout(dir: &Path, config: &str, count: u32, body: &str) -> PathBuf {
    let adapter = repo().join("multilang/python").display().to_string();
    let script =
        format!("import sys, os, json\nsys.path.insert(0, {adapter:?})\nimport storm\n{body}");
    std::fs::write(dir.join("bolt.py"), script).expect("write bolt");
    let yaml = format!(
        r#"
name: shell-run
config:
{config}
spouts:
  - id: gen
    type: generate
    args: {{ count: {count}, values: [x] }}
    fields: [v]
bolts:
  - id: py
    type: shell
    command: [python3, bolt.py]
    fields: [out]
  - id: print
    type: stdout
streams:
  - {{ from: gen, to: py, grouping: shuffle }}
  - {{ from: py, to: print, grouping: global }}
"#
    );
    let topo = dir.join("topo.yaml");
    std::fs::write(&topo, yaml).expect("write topology");
    topo
}

/// Storm's ShellBolt ignores commands it does not know; `metrics` updates the component's
/// metrics, which `--stats` and the summary show.
#[test]
fn unknown_commands_are_ignored_and_metrics_reach_the_stats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = r#"
class B(storm.BasicBolt):
    def process(self, t):
        storm.sendMsgToParent({"command": "frobnicate", "level": 11})
        storm.rpcMetrics("rows", 2)
        storm.rpcMetrics("label", "last one")
        storm.emit(["ok"], need_task_ids=False)
B().run()
"#;
    let topo = generate_shell_stdout(dir.path(), "  topology.debug: false", 3, body);
    let stats = dir.path().join("stats.json");
    let stats_arg = stats.display().to_string();
    let mut cmd = super::run::storm(dir.path());
    let out = cmd
        .timeout(Duration::from_secs(60))
        .args(["run", "--progress", "never", "--summary"])
        .arg(&topo)
        .args(["--stats", &stats_arg])
        .output()
        .expect("storm runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\nok\nok\n");
    assert_eq!(
        stderr
            .matches("unknown multilang command `frobnicate`")
            .count(),
        1,
        "logged once: {stderr}"
    );
    assert!(!stderr.contains("restart"), "{stderr}");
    assert!(
        stderr.contains("metric rows: last 2, sum 6, 3 update(s)"),
        "{stderr}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats written"))
            .expect("stats are JSON");
    let py = json["components"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["id"] == "py"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(py["errors"], 0, "{py}");
    assert_eq!(
        py["metrics"],
        serde_json::json!({
            "label": { "updates": 3, "last": "last one", "sum": 0.0 },
            "rows": { "updates": 3, "last": 2, "sum": 6.0 },
        })
    );
}

/// A bolt that prints, as one line, what a child can see of storm's environment and secrets.
const ENVIRONMENT_BOLT: &str = r#"
class B(storm.BasicBolt):
    def initialize(self, conf, context):
        self.conf = conf
    def process(self, t):
        leaked = sorted(k for k, v in self.conf.items() if "secret" in k or v == "conf-secret")
        storm.emit([" ".join([
            os.environ.get("GREETING", "-"),
            os.environ.get("ANSWER", "-"),
            os.environ.get("STORM_CLUSTER_SECRET", "no-env-secret"),
            ",".join(leaked) or "no-conf-secret",
            str(sorted(self.conf.get("topology.environment").items())),
        ])])
B().run()
"#;

/// `topology.environment` reaches every child's environment (Storm's ShellProcess sets it);
/// the cluster secret, from the environment or `-c`, reaches neither the child's environment
/// nor its handshake conf.
#[test]
fn children_get_topology_environment_and_never_the_cluster_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topo = generate_shell_stdout(
        dir.path(),
        "  topology.environment: { GREETING: hello, ANSWER: 42, STORM_CLUSTER_SECRET: nope }",
        1,
        ENVIRONMENT_BOLT,
    );
    let expected = "hello 42 no-env-secret no-conf-secret \
         [('ANSWER', 42), ('GREETING', 'hello'), ('STORM_CLUSTER_SECRET', 'nope')]\n";
    for mode in [&[][..], &["--processes"][..]] {
        let mut args = vec!["-c", "storm.cluster.secret=conf-secret"];
        args.extend_from_slice(mode);
        let out = storm_run(
            dir.path(),
            &topo,
            &args,
            &[("STORM_CLUSTER_SECRET", "env-secret")],
        );
        assert_eq!(out.code, Some(0), "{mode:?}: {}", out.stderr);
        assert_eq!(out.stdout, expected, "{mode:?}: {}", out.stderr);
    }
}

/// A line that takes the Python split bolt longer than the message timeout fails again and
/// again: that is logged (pointing at the spout's `max_retries`), and Ctrl-C drains and ends
/// the run instead of waiting for every replay.
#[test]
fn ctrl_c_ends_a_run_whose_tuple_outlasts_the_message_timeout() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("input.txt");
    let mut text = "word ".repeat(300_000);
    text.push('\n');
    std::fs::write(&input, text).expect("write input");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("storm"))
        .env("STORM_CONF_DIR", dir.path())
        .env_remove("STORM_LOG")
        .current_dir(repo())
        .args([
            "run",
            "topologies/multilang.yaml",
            "-c",
            "topology.message.timeout.secs=1",
        ])
        .stdin(std::fs::File::open(&input).expect("open input"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("storm starts");
    // stderr is read to its end by a thread (storm must never block on it); its lines come
    // here.
    let stderr = BufReader::new(child.stderr.take().expect("stderr is piped"));
    let (lines, seen) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let mut log = Vec::new();
    while let Ok(line) = seen.recv_timeout(Duration::from_secs(60)) {
        log.push(line);
        if log.last().is_some_and(|l| l.contains("is replayed again")) {
            break;
        }
    }
    let warning = log.last().cloned().unwrap_or_default();
    if !(warning.contains("spout \"lines\" task") && warning.contains("`max_retries`")) {
        // The run (and its Python children, in its process group) must not outlive the test.
        let _ = Command::new("kill")
            .args(["-KILL", &format!("-{}", child.id())])
            .status();
        let _ = child.wait();
        panic!("no replay warning naming `max_retries`: {log:?}");
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    // One Ctrl-C ends the run; should it not, the test ends it after a minute and fails.
    let mut waited = Duration::ZERO;
    let status = loop {
        if let Some(status) = child.try_wait().expect("storm is waited for") {
            break Some(status);
        }
        if waited >= Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
        waited += Duration::from_millis(50);
    };
    let _ = reader.join();
    log.extend(seen.try_iter());
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{log:?}");
    // The drain did not wait for the child to work through the copies of the line.
    assert!(
        log.iter()
            .any(|l| l.contains("stopped the child with")
                && l.contains("already failed or timed out")),
        "{log:?}"
    );
}

/// `finish: true`: a Python bolt (our adapter's `finish()` hook) is told of the end of its
/// input and emits its last state, which reaches the output before the run ends; without it,
/// nothing changes for the child.
#[test]
fn a_shell_bolt_with_finish_emits_its_last_state_at_the_end_of_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("total.py"),
        format!(
            "import sys\nsys.path.insert(0, {:?})\nimport storm\n\n\
             class Total(storm.BasicBolt):\n    n = 0\n    def process(self, tup):\n        self.n += len(tup.values[0].split())\n\
             \x20   def finish(self):\n        storm.emit([self.n])\n\nTotal().run()\n",
            repo().join("multilang/python").display().to_string()
        ),
    )
    .expect("write bolt");
    let topology = |finish: bool| {
        let path = dir.path().join(format!("total-{finish}.yaml"));
        std::fs::write(
            &path,
            format!(
                "name: total\nspouts:\n  - {{ id: lines, type: stdin }}\nbolts:\n  - {{ id: total, type: shell, command: [python3, total.py], fields: [words], finish: {finish} }}\n  - {{ id: print, type: stdout }}\nstreams:\n  - {{ from: lines, to: total }}\n  - {{ from: total, to: print }}\n"
            ),
        )
        .expect("write topology");
        path
    };
    let text = "a b c\nd e\n\nf\n";
    let run = |path: &Path| {
        let mut cmd = super::run::storm(dir.path());
        cmd.timeout(Duration::from_secs(60))
            .current_dir(dir.path())
            .args(["run", "-q"])
            .arg(path)
            .write_stdin(text);
        cmd.output().expect("storm runs")
    };
    let out = run(&topology(true));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{}\n", text.split_whitespace().count())
    );
    let out = run(&topology(false));
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "",
        "without finish the child never hears of the end"
    );
}
