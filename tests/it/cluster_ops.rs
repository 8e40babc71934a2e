//! The operator's commands on nimbus + a supervisor with real processes: `storm set_log_level`
//! changes what a worker logs and the change ends with its timeout. Every process started
//! here is ended by a guard, even when a test fails.

use crate::cluster::{client, eventually, free_port, start_nimbus, storm, Daemons};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

/// A supervisor whose standard error (and its workers', which inherit it) goes to a file;
/// SIGTERM and a bounded wait when dropped.
pub(crate) struct Supervisor {
    child: Option<Child>,
    pub(crate) log: PathBuf,
}

impl Supervisor {
    pub(crate) fn start(nimbus: &str, dir: &Path, extra: &[&str]) -> Supervisor {
        let log = dir.join("supervisor.log");
        let file = std::fs::File::create(&log).expect("create the supervisor's log");
        let port = free_port("127.0.0.1").to_string();
        let child = storm()
            .env_remove("STORM_LOG")
            .args(["supervisor", "--nimbus", nimbus, "--host", "127.0.0.1"])
            .args(["--slots", &port])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start a supervisor");
        eventually("the supervisor", || {
            let tree = client(&["zk", "dump", "--nimbus", nimbus])?;
            tree.contains("/storm/supervisors/").then_some(())
        });
        Supervisor {
            child: Some(child),
            log,
        }
    }

    pub(crate) fn text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            crate::cluster::signal(child.id(), "-TERM");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while std::time::Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            if !matches!(child.try_wait(), Ok(Some(_))) {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// A topology whose python bolt (on Storm's `storm.py`) logs each tuple at DEBUG
/// (`storm.logDebug`) and appends it to `seen`.
fn debug_logging_topology(dir: &Path, seen: &Path) -> PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/storm/multilang");
    std::fs::copy(fixtures.join("storm.py"), dir.join("storm.py")).expect("copy storm.py");
    std::fs::write(
        dir.join("debugger.py"),
        "import sys\nimport storm\n\n\
         class Debugger(storm.BasicBolt):\n\
         \x20   def initialize(self, conf, context):\n\
         \x20       self.out = open(sys.argv[1], 'a')\n\n\
         \x20   def process(self, tup):\n\
         \x20       storm.logDebug('seen %s' % tup.values[0])\n\
         \x20       self.out.write('%s\\n' % tup.values[0])\n\
         \x20       self.out.flush()\n\n\
         Debugger().run()\n",
    )
    .expect("write the bolt");
    let file = dir.join("debugged.yaml");
    std::fs::write(
        &file,
        format!(
            "name: debugged\n\
             spouts:\n  - id: words\n    type: generate\n    args: {{ rate: 40, values: [[a]] }}\n\
             bolts:\n  - id: debugger\n    type: shell\n    command: [python3, debugger.py, {}]\n    fields: [word]\n\
             streams:\n  - from: words\n    to: debugger\n    grouping: shuffle\n",
            seen.display()
        ),
    )
    .expect("write the topology");
    file
}

fn lines_of(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn set_log_level_turns_a_workers_debug_on_and_its_timeout_turns_it_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sources = tempfile::tempdir().expect("tempdir");
    let seen = dir.path().join("seen.txt");
    let file = debug_logging_topology(sources.path(), &seen);
    let mut daemons = Daemons::default();
    let addr = format!("127.0.0.1:{}", free_port("127.0.0.1"));
    start_nimbus(&mut daemons, &addr, &dir.path().join("nimbus"));
    let sup = Supervisor::start(&addr, dir.path(), &[]);
    let out = storm()
        .args(["submit"])
        .arg(&file)
        .args(["--nimbus", &addr])
        .output()
        .expect("storm submit");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually("tuples through the bolt", || {
        (lines_of(&seen) > 0).then_some(())
    });
    assert!(!sup.text().contains("seen a"), "DEBUG is off at start");

    let out = storm()
        .args(["set_log_level", "debugged", "--nimbus", &addr])
        .args(["-l", "storm::components::shell=DEBUG:3"])
        .output()
        .expect("storm set_log_level");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("storm::components::shell=DEBUG (3s)"),
        "{said}"
    );

    eventually("the worker logging at DEBUG", || {
        sup.text().contains("seen a").then_some(())
    });
    let text = eventually("the level's timeout", || {
        let t = sup.text();
        t.contains("timed out after 3s").then_some(t)
    });
    assert!(
        text.contains("log levels set: storm::components::shell=DEBUG"),
        "{text}"
    );
    // Once it timed out, tuples keep coming and none is logged.
    let at_revert = lines_of(&seen);
    eventually("40 more tuples", || {
        (lines_of(&seen) > at_revert + 40).then_some(())
    });
    let text = sup.text();
    let after = text
        .split("timed out after 3s")
        .nth(1)
        .expect("the timeout line");
    assert!(!after.contains("seen a"), "{after}");

    // Nimbus lists nothing once the timeout passed; -r answers with what is left.
    let out = storm()
        .args(["set_log_level", "debugged", "--nimbus", &addr, "-r", "ROOT"])
        .output()
        .expect("storm set_log_level -r");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("none (every logger at its starting level)"),
        "{said}"
    );

    // Refused before anything is sent: Java logger names name nothing here.
    let out = storm()
        .args(["set_log_level", "debugged", "--nimbus", &addr])
        .args(["-l", "org.apache.storm=DEBUG"])
        .output()
        .expect("storm set_log_level");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("module path"));
    let out = storm()
        .args(["set_log_level", "debuged", "--nimbus", &addr, "-r", "ROOT"])
        .output()
        .expect("storm set_log_level");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `debugged`"));
}
