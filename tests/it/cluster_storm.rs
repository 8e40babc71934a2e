//! Apache Storm's own multilang material on nimbus + supervisor: Storm's `storm.js` and
//! `storm.py` laid out beside `randomsentence.js` and `splitsentence.py` as in a jar's
//! `resources/` run from the folder `storm submit` ships (the submitted folder deleted at
//! once), and no secret (`ui.token`, the cluster secret, what `storm.secret.keys` lists)
//! reaches a child's handshake conf; a killed crash-looping topology leaves its slots to the
//! next one at once.

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
    tick: 7
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

/// Nimbus and one supervisor with `slots` slots; nimbus's address.
fn cluster(daemons: &mut Daemons, data: &Path, slots: usize) -> String {
    let addr = start_nimbus(daemons, data);
    let ports: Vec<String> = (0..slots)
        .map(|_| free_port("127.0.0.1").to_string())
        .collect();
    let port = ports.join(",");
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
    let addr = cluster(&mut daemons, &keep.path().join("nimbus"), 1);

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
    // Its `tick:` as Storm's component config has it; Storm's lists are lists.
    assert_eq!(dumped["topology.tick.tuple.freq.secs"], 7, "{text}");
    for list in ["storm.zookeeper.servers", "nimbus.seeds"] {
        assert!(dumped[list].is_array(), "{list} in {text}");
    }
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

/// Two workers whose python bolt dies at start: every worker dies, again and again.
const CRASHING: &str = "\
name: crashing
config:
  topology.workers: 2
  topology.message.timeout.secs: 600
spouts:
  - id: gen
    type: generate
    args: { count: 1000000, rate: 100, values: [[a]] }
bolts:
  - id: dies
    type: shell
    command: [python3, -c, 'import sys; sys.exit(3)']
    fields: [word]
    parallelism: 2
streams:
  - from: gen
    to: dies
";

const TWO_WORKERS: &str = "\
name: two-workers
config:
  topology.workers: 2
  topology.acker.executors: 0
spouts:
  - id: gen
    type: generate
    args: { count: 1000000, rate: 100, values: [[a]] }
bolts:
  - id: sink
    type: discard
    parallelism: 2
streams:
  - from: gen
    to: sink
";

/// `storm list`'s row of `name`: its status and worker count.
fn listed(addr: &str, name: &str) -> Option<(String, String)> {
    let out = client(&["list", "--nimbus", addr])?;
    let line = out.lines().find(|l| l.starts_with(name))?;
    let cols: Vec<&str> = line.split_whitespace().collect();
    Some((cols.get(2)?.to_string(), cols.get(3)?.to_string()))
}

/// Killed after its slots were reported failing, a crash-looping topology has nothing in
/// flight: its slots go to the next topology at once (not after its 600 s message timeout),
/// and the next one's status is its own, not an inherited `failing`. `storm get-errors` shows
/// the crashing one's last errors first, and `storm remoteconfvalue` nimbus's own values.
#[test]
fn a_killed_crash_looping_topology_frees_its_slots_for_the_next_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut daemons = Daemons::default();
    let addr = cluster(&mut daemons, &dir.path().join("nimbus"), 2);
    let crashing = dir.path().join("crashing.yaml");
    std::fs::write(&crashing, CRASHING).expect("write");
    let two = dir.path().join("two.yaml");
    std::fs::write(&two, TWO_WORKERS).expect("write");
    let path = |p: &Path| p.to_str().expect("utf-8").to_string();

    let id = client(&["submit", &path(&crashing), "--nimbus", &addr]).expect("submit");
    let id = id.trim().to_string();
    eventually(
        "both slots of the crashing topology reported failing",
        || {
            let failing = listed(&addr, "crashing").is_some_and(|(status, _)| status == "failing");
            let tree = client(&["zk", "dump", "--nimbus", &addr])?;
            let slots: std::collections::BTreeSet<&str> = tree
                .split("worker slot ")
                .skip(1)
                .filter_map(|rest| rest.split_once(" keeps failing").map(|(slot, _)| slot))
                .collect();
            (failing && slots.len() == 2).then_some(())
        },
    );
    // Storm's `storm get-errors`: each component's last error, as Storm's JSON.
    let errors = client(&["get-errors", "crashing", "--nimbus", &addr]).expect("get-errors");
    let errors: serde_json::Value = serde_json::from_str(&errors).expect("JSON");
    assert_eq!(errors["Topology Name"], "crashing", "{errors}");
    let dies = errors["Comp-Errors"]["dies"].as_str().unwrap_or("");
    assert!(!dies.is_empty(), "{errors}");
    assert!(client(&["get-errors", "no-such", "--nimbus", &addr]).is_none());
    // Storm's `storm remoteconfvalue`: nimbus's own value (started with `-c ...=3`).
    let key = "nimbus.task.timeout.secs";
    let value = client(&["remoteconfvalue", key, "--nimbus", &addr]);
    assert_eq!(value.as_deref(), Some("nimbus.task.timeout.secs: 3\n"));
    assert!(client(&["remoteconfvalue", "no.such.key", "--nimbus", &addr]).is_none());
    client(&["kill", "crashing", "--nimbus", &addr]).expect("kill");
    client(&["submit", &path(&two), "--nimbus", &addr]).expect("submit the next");
    let (status, workers) = eventually("the next topology on both slots", || {
        listed(&addr, "two-workers").filter(|(_, workers)| workers == "2")
    });
    assert_eq!((status.as_str(), workers.as_str()), ("active", "2"));
    assert!(
        listed(&addr, "crashing").is_none(),
        "the killed one is gone"
    );
    // Its dead workers' copies of its folder went with them.
    let copies = std::env::temp_dir().join("storm-resources");
    eventually("the crashed workers' copies removed", || {
        let ours = |e: std::fs::DirEntry| {
            let name = e.file_name();
            name.to_string_lossy().starts_with(&format!("{id}-"))
        };
        let left = std::fs::read_dir(&copies)
            .map(|d| d.flatten().any(ours))
            .unwrap_or(false);
        (!left).then_some(())
    });
}

/// storm-starter's sentence spout (it emits again every tuple that fails) into its async
/// split bolt (5 s a tuple) with a 5 s message timeout: every tree times out and is emitted
/// again, so a drain would never end by itself.
const ENDLESS_DRAIN: &str = "\
name: endless-drain
config:
  topology.message.timeout.secs: 5
spouts:
  - id: sentences
    type: shell
    command: [node, randomsentence.js]
    fields: [sentence]
bolts:
  - id: split
    type: shell
    command: [node, asyncSplitsentence.js]
    fields: [word]
  - id: sink
    type: discard
streams:
  - from: sentences
    to: split
    grouping: shuffle
  - from: split
    to: sink
    grouping: shuffle
";

/// Wait for `child` to end (killing it if it outlives the cluster tests' wait); its exit code
/// and standard error.
fn ended(mut child: std::process::Child) -> (Option<i32>, String) {
    let status = crate::support::poll_until(
        "the run to end",
        crate::cluster::WAIT,
        std::time::Duration::from_millis(100),
        || child.try_wait().ok().flatten(),
    );
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    (status.code(), err)
}

/// `--duration` ends a run whose drain never would, locally and over worker processes: what
/// is still pending after the message timeout and the grace is abandoned and counted.
#[test]
fn a_duration_ends_a_drain_that_would_never_end() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A 1 s message timeout: the deadline comes sooner, and the 5 s bolt still never drains.
    let topology = ENDLESS_DRAIN.replace("timeout.secs: 5", "timeout.secs: 1");
    let file = storm_layout(dir.path(), &topology);
    // Both modes at once: each waits out the same fixed grace.
    let modes = [&[][..], &["--processes"][..]];
    let children: Vec<_> = modes
        .iter()
        .map(|mode| {
            storm()
                .arg("run")
                .arg(&file)
                .args(["--duration", "2s", "--summary"])
                .args(*mode)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("storm run")
        })
        .collect();
    for (mode, child) in modes.iter().zip(children) {
        let (code, err) = ended(child);
        assert_eq!(code, Some(0), "{mode:?}: {err}");
        // Whether a tree is still open at the deadline depends on how far the children got
        // (on a loaded machine every tree may have completed): when one was given up, the
        // summary counts it.
        if err.contains("giving up what is still pending") {
            assert!(err.contains("abandoned: "), "{mode:?}: {err}");
        }
    }
}

/// A run's standard error, read as it comes (so the child never blocks on a full pipe).
struct Stderr(std::sync::Arc<std::sync::Mutex<String>>);

impl Stderr {
    fn of(child: &mut std::process::Child) -> Stderr {
        use std::io::{BufRead, BufReader};
        let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let pipe = child.stderr.take().expect("stderr piped");
        let into = text.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut t = into.lock().unwrap_or_else(|e| e.into_inner());
                t.push_str(&line);
                t.push('\n');
            }
        });
        Stderr(text)
    }

    fn text(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The first SIGINT drains and ends the run within the message timeout and the grace,
/// abandoning what is pending; a second one while it drains ends it at once with 130.
#[test]
fn a_first_interrupt_ends_an_endless_drain_and_a_second_exits_130() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = storm_layout(dir.path(), ENDLESS_DRAIN);
    let start = || {
        let mut child = storm()
            .arg("run")
            .arg(&file)
            .arg("--summary")
            .env("STORM_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("storm run");
        let err = Stderr::of(&mut child);
        // The spout logs each emit once its task ids are back: a tree is then pending in
        // the 5-second bolt.
        eventually("a sentence emitted", || {
            err.text().contains("sent to task ids").then_some(())
        });
        (child, err)
    };
    let (mut child, err) = start();
    crate::cluster::signal(child.id(), "-INT");
    let status = crate::support::poll_until(
        "the run to end",
        crate::cluster::WAIT,
        std::time::Duration::from_millis(100),
        || child.try_wait().ok().flatten(),
    );
    let text = eventually("the summary", || {
        let t = err.text();
        t.lines().any(|l| l.starts_with("ran ")).then_some(t)
    });
    assert_eq!(status.code(), Some(0), "{text}");
    // The pending tree either completed in its 5 s (racing its 5 s timeout) or was given up
    // at the deadline: then the summary counts it.
    if text.contains("giving up what is still pending") {
        assert!(text.contains("abandoned: "), "{text}");
    }

    // Two signals sent back to back can reach the process as one (a pending signal is not
    // queued twice), so the second is repeated until the run ends: the drain is endless, so
    // only a second interrupt can end it this soon.
    let (mut child, _err) = start();
    crate::cluster::signal(child.id(), "-INT");
    let status = crate::support::poll_until(
        "the run to end",
        crate::cluster::WAIT,
        std::time::Duration::from_millis(200),
        || {
            let ended = child.try_wait().ok().flatten();
            if ended.is_none() {
                crate::cluster::signal(child.id(), "-INT");
            }
            ended
        },
    );
    assert_eq!(status.code(), Some(130));
}

/// A Flux file naming Storm's no-op `BaseWorkerHook` validates, with a warning that says it
/// is ignored; any other hook class stays an error.
#[test]
fn storms_no_op_worker_hook_is_a_warning() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = storm()
        .current_dir(root)
        .args(["validate", "tests/fixtures/warn/flux-base-worker-hook.yaml"])
        .output()
        .expect("storm validate");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "warning: `workerHooks`: `org.apache.storm.hooks.BaseWorkerHook` does nothing; ignored"
        ),
        "{err}"
    );
    let out = storm()
        .current_dir(root)
        .args(["validate", "tests/fixtures/invalid/flux-worker-hooks.yaml"])
        .output()
        .expect("storm validate");
    assert_eq!(out.status.code(), Some(1));
}

/// `storm config` with Apache Storm 2.x's own `conf/defaults.yaml` as `storm.yaml`.
fn config_with_storms_defaults(args: &[&str]) -> (Option<i32>, String, String) {
    let conf = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/storm/conf");
    let out = storm()
        .env("STORM_CONF_DIR", &conf)
        .args(args)
        .output()
        .expect("storm");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Storm's `conf/defaults.yaml` is accepted as `storm.yaml` (its transfer buffer of 1000
/// batches included); each key is in its class: obeyed (unmarked), Storm's without effect
/// here (`[no effect]`, listed by `--unused`), or unknown to both (`[unknown]`).
#[test]
fn storms_defaults_yaml_is_accepted_as_storm_yaml_with_key_classes() {
    let (code, out, err) = config_with_storms_defaults(&["config", "-c", "topology.wrokers=3"]);
    assert_eq!(code, Some(0), "{err}");
    let line = |key: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no {key} in {out}"))
            .to_string()
    };
    let transfer = line("topology.transfer.buffer.size");
    assert!(
        transfer.contains("= 1000") && !transfer.contains('['),
        "{transfer}"
    );
    assert!(!line("topology.workers").contains('['));
    assert!(line("drpc.port").ends_with("[no effect]"));
    assert!(line("topology.worker.childopts").ends_with("[no effect]"));
    assert!(line("topology.wrokers").ends_with("[unknown]"));

    let (code, unused, err) = config_with_storms_defaults(&["config", "--unused"]);
    assert_eq!(code, Some(0), "{err}");
    let keys: Vec<&str> = unused
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        keys.contains(&"drpc.port") && keys.contains(&"nimbus.childopts"),
        "{unused}"
    );
    assert!(!keys.contains(&"topology.workers"), "{unused}");
    assert!(
        unused.lines().all(|l| l.ends_with("[no effect]")),
        "{unused}"
    );

    // One line at the start of a run says how many, and where to see them.
    let (code, _, err) = config_with_storms_defaults(&["run", "-e", "generate(count=1) | stdout"]);
    assert_eq!(code, Some(0), "{err}");
    let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("note: ")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains(&format!("{} Storm configuration key(s)", keys.len()))
            && notes[0].contains("storm config --unused"),
        "{err}"
    );
}

/// The commands a Storm operator types: `storm local` runs as `storm run` does, `storm jar`
/// explains in one line that there is no JVM (exit 2), `storm version`, and
/// `storm localconfvalue KEY` (an unset key is an error; a secret is hidden).
#[test]
fn storms_own_command_names_answer() {
    let out = storm()
        .args(["local", "-e", "generate(count=3) | stdout"])
        .output()
        .expect("storm local");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3);

    let out = storm()
        .args(["jar", "topology.jar", "org.example.Main", "-arg"])
        .output()
        .expect("storm jar");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("topology.jar") && err.contains("no JVM") && err.contains("storm submit"),
        "{err}"
    );

    let out = storm().arg("version").output().expect("storm version");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(&format!("storm {} (", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );

    let conf = tempfile::tempdir().expect("tempdir");
    let value = |args: &[&str]| {
        let out = storm()
            .env("STORM_CONF_DIR", conf.path())
            .arg("localconfvalue")
            .args(args)
            .output()
            .expect("storm localconfvalue");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.code(), stdout)
    };
    assert_eq!(
        value(&["topology.workers", "-c", "topology.workers=3"]),
        (Some(0), "topology.workers: 3\n".to_string())
    );
    assert_eq!(
        value(&["storm.zookeeper.root"]),
        (Some(0), "storm.zookeeper.root: \"/storm\"\n".to_string())
    );
    assert_eq!(
        value(&["ui.token", "-c", "ui.token=abc"]),
        (Some(0), "ui.token: \"<hidden>\"\n".to_string())
    );
    assert_eq!(value(&["no.such.key"]).0, Some(1));
}
