//! Followed files (`file(follow=true)`): lines appended while the run goes come out, through a
//! rename-and-create rotation and a copy-truncate; `start_at: end` skips what was there; SIGINT
//! ends the run cleanly (exit 0).

use super::support::poll_until;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running `storm run` of `file(path=…, follow=true, …) | stdout`, its stdout lines gathered.
struct Followed {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Followed {
    fn start(conf: &Path, path: &Path, extra_args: &str) -> Followed {
        let topology = format!(
            "name followed\nlines = file(path={}, follow=true{extra_args})\n  | stdout",
            path.display()
        );
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("storm"))
            .args(["run", "-e", &topology])
            .env("STORM_CONF_DIR", conf)
            .env_remove("STORM_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("storm run starts");
        let out = child.stdout.take().expect("stdout piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let into = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                into.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
        Followed { child, lines }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Wait until the output is exactly `want` (in order).
    fn wait_for(&self, want: &[&str]) {
        poll_until(
            &format!("output {want:?}"),
            Duration::from_secs(60),
            Duration::from_millis(20),
            || {
                let got = self.lines();
                assert!(
                    got.len() <= want.len() && got.iter().zip(want).all(|(g, w)| g == w),
                    "got {got:?}, want {want:?}"
                );
                (got.len() == want.len()).then_some(())
            },
        );
    }

    /// SIGINT: the run drains and exits 0.
    fn interrupt(mut self) {
        crate::cluster::signal(self.child.id(), "-INT");
        let status = self.child.wait().expect("reaped");
        assert!(status.success(), "{status:?}");
    }
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .expect("open for append");
    f.write_all(text.as_bytes()).expect("append");
}

#[test]
fn a_followed_file_is_read_as_it_grows_and_through_rotations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.log");
    append(&path, "a1\na2\n");
    let run = Followed::start(dir.path(), &path, "");
    run.wait_for(&["a1", "a2"]);
    append(&path, "a3\n");
    run.wait_for(&["a1", "a2", "a3"]);
    // Rename-and-create: the old file's tail, then the new file from its start.
    let old = dir.path().join("app.log.1");
    std::fs::rename(&path, &old).expect("rename");
    append(&old, "a4\n");
    append(&path, "b1 a longer line\n");
    run.wait_for(&["a1", "a2", "a3", "a4", "b1 a longer line"]);
    // Copy-truncate: the file is now shorter than what was read, and is read again from 0.
    std::fs::write(&path, "c1\n").expect("truncate and write");
    run.wait_for(&["a1", "a2", "a3", "a4", "b1 a longer line", "c1"]);
    run.interrupt();
}

#[test]
fn start_at_end_skips_what_the_file_held() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.log");
    append(&path, "old1\nold2\n");
    let run = Followed::start(dir.path(), &path, ", start_at=end");
    // The run has started reading once a marker line appended now comes out: poll with it.
    poll_until(
        "the run to read",
        Duration::from_secs(60),
        Duration::from_millis(100),
        || {
            append(&path, "new\n");
            (!run.lines().is_empty()).then_some(())
        },
    );
    assert!(run.lines().iter().all(|l| l == "new"), "{:?}", run.lines());
    run.interrupt();
}

#[test]
fn a_missing_file_is_an_error_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("absent.log");
    let topology = format!(
        "name followed\nlines = file(path={}, follow=true)\n  | stdout",
        path.display()
    );
    let out = super::run::storm(dir.path())
        .args(["run", "-e", &topology])
        .timeout(Duration::from_secs(120))
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot open") && err.contains("absent.log"),
        "{err}"
    );
}
