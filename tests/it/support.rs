//! Helpers shared by the integration tests that drive real processes.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// Poll `f` every `every` until it gives a value; fail naming `what` once `wait` is over.
pub(crate) fn poll_until<T>(
    what: &str,
    wait: Duration,
    every: Duration,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + wait;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(every);
    }
}

/// The address a daemon reports in its standard error `log` on a line that starts with
/// `prefix` (`nimbus: listening on ADDR (data in ...)`, `nimbus: ui on http://ADDR/`), once it
/// has. Daemons listen on port 0 and say which port they got, so no test picks a port that
/// another process may take before the daemon binds it.
pub(crate) fn reported_addr(log: &Path, prefix: &str) -> String {
    poll_until(
        &format!("`{prefix}` in {}", log.display()),
        Duration::from_secs(60),
        Duration::from_millis(20),
        || {
            let text = std::fs::read_to_string(log).ok()?;
            let rest = text.lines().find_map(|l| l.strip_prefix(prefix))?;
            let addr = rest.split_whitespace().next()?;
            Some(addr.trim_end_matches('/').to_string())
        },
    )
}

/// Where `storm nimbus` listens: the address it reports in its standard error `log`.
pub(crate) fn nimbus_addr(log: &Path) -> String {
    reported_addr(log, "nimbus: listening on ")
}

/// Where nimbus serves its UI: the address it reports in its standard error `log`.
pub(crate) fn nimbus_ui_addr(log: &Path) -> String {
    reported_addr(log, "nimbus: ui on http://")
}

/// Read `child`'s stderr on a thread until `found` picks something out of one of its lines
/// (a `\r` ends a line too, as progress lines are drawn). The thread goes on reading to the
/// end, so the child never blocks on a full pipe, and hands back everything it read. Fails
/// with what the child said if it ends first, or if nothing is found within `wait`.
pub(crate) fn watch_stderr<T: Send + 'static>(
    child: &mut std::process::Child,
    wait: Duration,
    what: &str,
    found: impl Fn(&str) -> Option<T> + Send + 'static,
) -> (T, std::thread::JoinHandle<String>) {
    use std::io::Read;
    let mut stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let (mut said, mut buf, mut line) = (Vec::new(), [0u8; 4096], Vec::new());
        let mut looking = true;
        while let Ok(n @ 1..) = stderr.read(&mut buf) {
            said.extend_from_slice(&buf[..n]);
            for &b in &buf[..n] {
                if b != b'\n' && b != b'\r' {
                    line.push(b);
                    continue;
                }
                if let Some(v) = found(&String::from_utf8_lossy(&line)).filter(|_| looking) {
                    looking = false;
                    let _ = tx.send(Ok(v));
                }
                line.clear();
            }
        }
        let said = String::from_utf8_lossy(&said).into_owned();
        let _ = tx.send(Err(said.clone()));
        said
    });
    match rx.recv_timeout(wait) {
        Ok(Ok(v)) => (v, reader),
        Ok(Err(said)) => panic!("the child ended without {what}:\n{said}"),
        Err(_) => panic!("no {what} within {wait:?}"),
    }
}

/// The address a `storm run --ui` child prints on stderr (`ui: http://ADDR/`).
pub(crate) fn ui_address(child: &mut std::process::Child, wait: Duration) -> String {
    let found = |line: &str| {
        let rest = line.strip_prefix("ui: http://")?;
        Some(rest.trim_end_matches('/').to_string())
    };
    watch_stderr(child, wait, "serving its UI", found).0
}

/// Wait until a run started with `--progress always` has drawn its first progress line (its
/// spouts are emitting); the thread returned hands back the whole of its stderr.
pub(crate) fn await_progress(
    child: &mut std::process::Child,
    wait: Duration,
) -> std::thread::JoinHandle<String> {
    let found = |line: &str| line.contains(" tuples (").then_some(());
    watch_stderr(child, wait, "a progress line", found).1
}

/// A virtualenv named `name` with the pip `packages` installed, made once and kept in the temp
/// folder under a stable name (a later run of the tests reuses it); `check` is Python that
/// succeeds once it works. Built in a fresh folder and renamed into place, so a concurrent or
/// interrupted build never leaves a half-made one behind. Fails (never skips) when Python, venv
/// or pip cannot make it.
pub(crate) fn venv(name: &str, packages: &[&str], check: &str) -> PathBuf {
    let venv = std::env::temp_dir().join(format!("storm-it-{name}-venv"));
    let python = venv.join("bin/python");
    let works = |python: &Path| {
        Command::new(python)
            .args(["-c", check])
            .status()
            .is_ok_and(|s| s.success())
    };
    if works(&python) {
        return venv;
    }
    let building = tempfile::Builder::new()
        .prefix(&format!("storm-it-{name}-venv-"))
        .tempdir()
        .expect("tempdir")
        .keep();
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&building)
        .status()
        .expect("python3 runs");
    assert!(status.success(), "python3 -m venv failed");
    let out = Command::new(building.join("bin/python"))
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(packages)
        .output()
        .expect("pip runs");
    assert!(
        out.status.success(),
        "pip install {packages:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A broken one left from before (another Python, say) makes way; another test process may
    // have won the race meanwhile: then its venv is used and ours dropped.
    if venv.exists() && !works(&python) {
        let _ = std::fs::remove_dir_all(&venv);
    }
    if std::fs::rename(&building, &venv).is_err() {
        let _ = std::fs::remove_dir_all(&building);
    }
    assert!(works(&python), "the {name} virtualenv does not work");
    venv
}

/// A child serving a UI (`storm run --ui`, a nimbus), ended (SIGTERM, then SIGKILL after ten
/// seconds) when dropped, with the folder its files are in.
pub(crate) struct Served {
    pub(crate) child: Child,
    pub(crate) addr: String,
    pub(crate) _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The answer to a request sent on `s` (HTTP/1.0, or with `Connection: close`): its status
/// code and body as text, read to the end.
pub(crate) fn read_http_answer(s: &mut impl std::io::Read) -> (u16, String) {
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read the answer");
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status code");
    (status, body.to_string())
}

/// A child (`storm run` fed on its stdin) whose standard output and error are read as they
/// come, so it never blocks on a full pipe and a test waits on what it has said (a row out, a
/// table reloaded) instead of sleeping.
pub(crate) struct Live {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: Said,
    stderr: Said,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Live {
    /// Start `cmd` with its stdin, stdout and stderr piped.
    pub(crate) fn spawn(cmd: &mut Command) -> Live {
        use std::process::Stdio;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the child starts");
        let stdin = child.stdin.take();
        let stdout = Said::default();
        let stderr = Said::default();
        let out = child.stdout.take().expect("stdout piped");
        let err = child.stderr.take().expect("stderr piped");
        let readers = vec![collect(out, stdout.clone()), collect(err, stderr.clone())];
        Live {
            child,
            stdin,
            stdout,
            stderr,
            readers,
        }
    }

    /// Its stdin (until `finish` closes it).
    pub(crate) fn stdin(&mut self) -> &mut std::process::ChildStdin {
        self.stdin.as_mut().expect("stdin still open")
    }

    /// Wait (up to a minute) until what it wrote on stdout and stderr so far satisfies `done`.
    pub(crate) fn wait_for(&self, what: &str, done: impl Fn(&str, &str) -> bool) {
        let said = |s: &Said| String::from_utf8_lossy(&s.lock().expect("output lock")).into_owned();
        poll_until(
            what,
            Duration::from_secs(60),
            Duration::from_millis(10),
            || done(&said(&self.stdout), &said(&self.stderr)).then_some(()),
        );
    }

    /// Close its stdin and wait for it to end: its exit status, stdout and stderr.
    pub(crate) fn finish(mut self) -> (std::process::ExitStatus, String, String) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("the child ends");
        for r in self.readers.drain(..) {
            r.join().expect("a reader thread");
        }
        let take = |s: &Said| String::from_utf8_lossy(&s.lock().expect("lock")).into_owned();
        (status, take(&self.stdout), take(&self.stderr))
    }
}

impl Drop for Live {
    /// A test that failed half-way leaves no child behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a child wrote on one of its outputs so far.
type Said = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;

/// A thread that appends what `from` gives to `into` until it ends.
fn collect(
    mut from: impl std::io::Read + Send + 'static,
    into: Said,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            into.lock()
                .expect("output lock")
                .extend_from_slice(&buf[..n]);
        }
    })
}

/// The `--stats` file of a run, read.
pub fn stats(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("stats written")).expect("JSON")
}

/// Component `id` of a run's `--stats`.
pub fn stats_component<'a>(stats: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    stats["components"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("no component {id} in {stats}"))
}
