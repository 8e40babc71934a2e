//! Followed files (`file(follow=true)`): lines appended while the run goes come out, through a
//! rename-and-create rotation and a copy-truncate; `start_at: end` skips what was there; SIGINT
//! ends the run cleanly (exit 0); a checkpointed count of a followed file is exact through
//! SIGKILLs, appends and rotations.

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
        Followed::spawn(conf, &["run".into(), "-e".into(), topology])
    }

    /// `storm args…`, its stdout lines gathered.
    fn spawn(conf: &Path, args: &[String]) -> Followed {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("storm"))
            .args(args)
            .env("STORM_CONF_DIR", conf)
            // A position file without a state dir goes under the user state folder.
            .env("XDG_STATE_HOME", conf)
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

impl Drop for Followed {
    /// A failed test leaves no run behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
fn two_rotations_between_two_looks_lose_no_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.log");
    append(&path, "a1\n");
    let run = Followed::start(dir.path(), &path, "");
    run.wait_for(&["a1"]);
    // Within one poll interval: A rotated, B written and rotated, C written.
    std::fs::rename(&path, dir.path().join("app.log.1")).expect("rotate A");
    append(&path, "b1\nb2\n");
    std::fs::rename(&path, dir.path().join("app.log.2")).expect("rotate B");
    append(&path, "c1\n");
    run.wait_for(&["a1", "b1", "b2", "c1"]);
    append(&path, "c2\n");
    run.wait_for(&["a1", "b1", "b2", "c1", "c2"]);
    run.interrupt();
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

/// Run `args` (with checkpoints logged), call `between(n)` after the `n`th checkpoint commit,
/// and SIGKILL the run after the `commits`th (the position in the last commit then may be
/// before a rotation the reader never saw).
fn kill_after_commits(args: &[String], conf: &Path, commits: u32, between: &mut dyn FnMut(u32)) {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("storm"))
        .args(args)
        .env("STORM_CONF_DIR", conf)
        .env("XDG_STATE_HOME", conf)
        .env("STORM_LOG", "storm::runtime::checkpoint=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let stderr = child.stderr.take().expect("stderr piped");
    let mut seen = 0;
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        if line.contains("checkpoint committed") {
            seen += 1;
            between(seen);
            if seen == commits {
                break;
            }
        }
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    assert_eq!(seen, commits, "the run ended early");
}

/// The exactly-once proof for a followed file: a checkpointed word count of a file that is
/// appended to and rotated (rename-and-create) while the run is SIGKILLed at random moments
/// and restarted, 10 times; a last run, stopped once its counts reach the reference, prints
/// exactly the counts of every line written (no loss, no duplicate).
#[test]
fn a_followed_file_counted_with_state_is_exact_through_kills_and_rotations() {
    use rand::{Rng, SeedableRng};
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.log");
    let state = dir.path().join("state");
    let mut rng = rand::rngs::StdRng::seed_from_u64(32);
    let mut written = Vec::new();
    let write = |rng: &mut rand::rngs::StdRng, written: &mut Vec<u8>| {
        let mut text = String::new();
        for _ in 0..rng.random_range(50..300) {
            let words = rng.random_range(1..6);
            let line: Vec<String> = (0..words)
                .map(|_| format!("w{}", rng.random_range(0..40)))
                .collect();
            text.push_str(&line.join(" "));
            text.push('\n');
        }
        append(&path, &text);
        written.extend_from_slice(text.as_bytes());
    };
    write(&mut rng, &mut written);
    let args = |state: &Path| {
        vec![
            "run".to_string(),
            "-e".into(),
            format!(
                "name exact\nlines = file(path={}, follow=true)\n  | split\n  | count(word, emit=update)\n  | stdout",
                path.display()
            ),
            "--state-dir".into(),
            state.display().to_string(),
            "-c".into(),
            "topology.stateful=true".into(),
            "-c".into(),
            "topology.state.checkpoint.interval.ms=50".into(),
            "-c".into(),
            "topology.max.spout.pending=4".into(),
        ]
    };
    for trial in 0..10 {
        let commits = rng.random_range(1..6);
        kill_after_commits(&args(&state), dir.path(), commits, &mut |seen| {
            // Between commits: append, and now and then rotate.
            if rng.random_bool(0.3) {
                let old = dir.path().join(format!("app.log.{trial}.{seen}"));
                std::fs::rename(&path, &old).expect("rotate");
            }
            write(&mut rng, &mut written);
        });
        // While stopped: lines the run never read.
        if rng.random_bool(0.5) {
            write(&mut rng, &mut written);
        }
    }
    let expected = super::run::expected_counts(&written);
    let run = Followed::spawn(dir.path(), &args(&state));
    poll_until(
        "the counts to reach the reference",
        Duration::from_secs(120),
        Duration::from_millis(50),
        || {
            let mut last = std::collections::BTreeMap::new();
            for line in run.lines() {
                let (w, n) = line.rsplit_once('\t').expect("word<TAB>count");
                last.insert(w.to_string(), n.parse::<u64>().expect("a count"));
            }
            for (w, n) in &last {
                let want = expected.get(w).copied().unwrap_or(0);
                assert!(*n <= want, "{w}: counted {n}, written {want}: a duplicate");
            }
            (last == expected).then_some(())
        },
    );
    run.interrupt();
}

/// A file rotated once while a checkpointed run was stopped: the resumed run reads the rest of
/// the old file (found beside it by its device and inode), then the new one.
#[test]
fn a_rotation_while_stopped_reads_the_old_tail_then_the_new_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.log");
    let state = dir.path().join("state");
    append(&path, "a1\n");
    let args = vec![
        "run".to_string(),
        "-e".into(),
        format!(
            "name rotated\nlines = file(path={}, follow=true)\n  | count(line, emit=update)\n  | stdout",
            path.display()
        ),
        "--state-dir".into(),
        state.display().to_string(),
        "-c".into(),
        "topology.stateful=true".into(),
    ];
    let run = Followed::spawn(dir.path(), &args);
    run.wait_for(&["a1\t1"]);
    run.interrupt();
    append(&path, "a2\n");
    std::fs::rename(&path, dir.path().join("app.log.1")).expect("rotate");
    append(&path, "b1\n");
    let run = Followed::spawn(dir.path(), &args);
    run.wait_for(&["a2\t1", "b1\t1"]);
    run.interrupt();
    // Two rotations while stopped: the file between them is read too.
    append(&path, "b2\n");
    std::fs::rename(&path, dir.path().join("app.log.2")).expect("rotate B");
    append(&path, "c1\n");
    std::fs::rename(&path, dir.path().join("app.log.3")).expect("rotate C");
    append(&path, "d1\n");
    let run = Followed::spawn(dir.path(), &args);
    run.wait_for(&["b2\t1", "c1\t1", "d1\t1"]);
    run.interrupt();
}

/// `start_at` on a file that is not followed would be ignored: it is refused, located.
#[test]
fn start_at_without_follow_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("app.log"), "a\n").expect("write");
    let out = super::run::storm(dir.path())
        .current_dir(dir.path())
        .args([
            "validate",
            "-e",
            "file(path=app.log, start_at=end) | stdout",
        ])
        .timeout(Duration::from_secs(120))
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`start_at` needs `follow: true`"), "{err}");
}

/// `file_path` and `file_line`: each line's path as written and its 1-based number in its
/// file, against a reference; numbering goes on after a resume from a checkpoint (the stopped
/// run's last line is not numbered again), starts again at 1 in a file made by a rotation,
/// and works without `follow` and with `format`.
#[test]
fn file_fields_give_the_path_and_line_number_through_resume_and_rotation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.log");
    let state = dir.path().join("state");
    append(&path, "a\nb\n");
    let args = vec![
        "run".to_string(),
        "-e".into(),
        format!(
            "name numbered\nlines = file(path={}, follow=true, fields=[file_line, line, file_path])\n  | count(fields=[file_line, line, file_path], emit=update)\n  | stdout",
            path.display()
        ),
        "--state-dir".into(),
        state.display().to_string(),
        "-c".into(),
        "topology.stateful=true".into(),
        "-c".into(),
        "topology.state.checkpoint.interval.ms=50".into(),
    ];
    let p = path.display().to_string();
    // Counted (a stateful bolt, so the run checkpoints): each row is seen once.
    let row = |n: u32, line: &str| format!("{n}\t{line}\t{p}\t1");
    let run = Followed::spawn(dir.path(), &args);
    run.wait_for(&[&row(1, "a"), &row(2, "b")]);
    // SIGINT drains and commits a last checkpoint.
    run.interrupt();
    append(&path, "c\n");
    let run = Followed::spawn(dir.path(), &args);
    run.wait_for(&[&row(3, "c")]);
    std::fs::rename(&path, dir.path().join("app.log.1")).expect("rotate");
    append(&path, "d\ne\n");
    run.wait_for(&[&row(3, "c"), &row(1, "d"), &row(2, "e")]);
    run.interrupt();

    // Not followed, read as JSON: the fields go where `fields` puts them.
    std::fs::write(dir.path().join("in.json"), "{\"n\": 7}\n\n{\"n\": 8}\n").expect("write");
    let out = super::run::storm(dir.path())
        .current_dir(dir.path())
        .args([
            "run",
            "-e",
            "file(path=in.json, format=json, fields=[file_path, n, file_line]) | stdout",
        ])
        .timeout(Duration::from_secs(120))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "in.json\t7\t1\nin.json\t8\t3\n"
    );
}

/// `path` as a glob, followed: every matching file is read, a file created later that matches
/// is picked up, a file that does not match is not, and a matching file renamed to another
/// matching name is not read again (files are told by identity, not name).
#[test]
fn a_followed_glob_picks_up_new_files_and_reads_a_renamed_one_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    append(&dir.path().join("a.log"), "a1\n");
    append(&dir.path().join("other.txt"), "x\n");
    let topology = format!(
        "name globbed\nlines = file(path=\"{}/*.log\", follow=true, fields=[file_path, file_line, line])\n  | stdout",
        dir.path().display()
    );
    let run = Followed::spawn(dir.path(), &["run".into(), "-e".into(), topology]);
    let row = |file: &str, n: u32, line: &str| {
        format!("{}\t{n}\t{line}", dir.path().join(file).display())
    };
    run.wait_for(&[&row("a.log", 1, "a1")]);
    append(&dir.path().join("b.log"), "b1\n");
    run.wait_for(&[&row("a.log", 1, "a1"), &row("b.log", 1, "b1")]);
    // Renamed within the glob: not read again; what is appended after still comes out once.
    std::fs::rename(dir.path().join("b.log"), dir.path().join("b2.log")).expect("rename");
    append(&dir.path().join("c.log"), "c1\n");
    run.wait_for(&[
        &row("a.log", 1, "a1"),
        &row("b.log", 1, "b1"),
        &row("c.log", 1, "c1"),
    ]);
    append(&dir.path().join("a.log"), "a2\n");
    run.wait_for(&[
        &row("a.log", 1, "a1"),
        &row("b.log", 1, "b1"),
        &row("c.log", 1, "c1"),
        &row("a.log", 2, "a2"),
    ]);
    run.interrupt();
}

/// A glob without `follow`: its files in sorted order, then the run ends; a glob matching
/// nothing is an error at start.
#[test]
fn a_glob_without_follow_reads_its_files_in_order_and_none_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("b.log"), "b1\n").expect("write");
    std::fs::write(dir.path().join("a.log"), "a1\na2\n").expect("write");
    std::fs::write(dir.path().join("c.txt"), "c1\n").expect("write");
    let run = |pattern: &str| {
        super::run::storm(dir.path())
            .current_dir(dir.path())
            .args(["run", "-e", &format!("file(path=\"{pattern}\") | stdout")])
            .timeout(Duration::from_secs(120))
            .output()
            .expect("runs")
    };
    let out = run("*.log");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a1\na2\nb1\n");
    let out = run("*.nope");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no file matches") && err.contains("*.nope"),
        "{err}"
    );
}

/// Without checkpoints but with a state dir, a followed file's position is kept in a file: a
/// restarted run goes on from it (after SIGINT exactly; after SIGKILL from the last write, at
/// least once: nothing lost).
#[test]
fn a_position_file_keeps_a_followed_file_without_checkpoints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.log");
    let state = dir.path().join("state");
    append(&path, "a1\n");
    let args = vec![
        "run".to_string(),
        "-e".into(),
        format!(
            "name kept\nlines = file(path={}, follow=true, fields=[file_line, line])\n  | stdout",
            path.display()
        ),
        "--state-dir".into(),
        state.display().to_string(),
    ];
    let run = Followed::spawn(dir.path(), &args);
    run.wait_for(&["1\ta1"]);
    run.interrupt();
    let file = state.join("positions").join("lines.0.json");
    assert!(file.is_file(), "no position file at {}", file.display());
    append(&path, "a2\n");
    let run = Followed::spawn(dir.path(), &args);
    run.wait_for(&["2\ta2"]);
    // Wait for a write that has a2 behind it, then SIGKILL: a3, appended while stopped, comes
    // out after the restart, and a2 does not again.
    poll_until(
        "the position past a2",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || {
            let text = std::fs::read_to_string(&file).ok()?;
            text.contains("\"offset\":6").then_some(())
        },
    );
    drop(run);
    append(&path, "a3\n");
    let run = Followed::spawn(dir.path(), &args);
    run.wait_for(&["3\ta3"]);
    run.interrupt();
}

/// A followed glob tells files by a fingerprint of their first 256 bytes too: a copy of a file
/// already read, under another matching name, is not read again; a file of other content is.
#[test]
fn a_copy_of_a_followed_file_under_the_glob_is_not_read_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let long: String = (0..20)
        .map(|i| format!("line {i} of the first file\n"))
        .collect();
    assert!(long.len() >= 256);
    append(&dir.path().join("a.log"), &long);
    let topology = format!(
        "name printed\nlines = file(path=\"{}/*.log\", follow=true)\n  | stdout",
        dir.path().display()
    );
    let run = Followed::spawn(dir.path(), &["run".into(), "-e".into(), topology]);
    let mut want: Vec<String> = long.lines().map(String::from).collect();
    run.wait_for(&want.iter().map(String::as_str).collect::<Vec<_>>());
    std::fs::copy(dir.path().join("a.log"), dir.path().join("copy.log")).expect("copy");
    // A marker file created after the copy: once it is read, the copy was looked at.
    append(&dir.path().join("z.log"), "marker\n");
    want.push("marker".into());
    run.wait_for(&want.iter().map(String::as_str).collect::<Vec<_>>());
    // Stopped and drained: the copy's lines did not come later either.
    let mut run = run;
    crate::cluster::signal(run.child.id(), "-INT");
    assert!(run.child.wait().expect("reaped").success());
    assert_eq!(run.lines(), want);
}

/// A checkpointed followed glob resumes each of its files where it was: lines appended to two
/// files and a new file made while the run was stopped come out once each, numbered on.
#[test]
fn a_checkpointed_glob_resumes_each_file_where_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    append(&dir.path().join("a.log"), "a1\n");
    append(&dir.path().join("b.log"), "b1\n");
    let args = vec![
        "run".to_string(),
        "-e".into(),
        format!(
            "name globbed\nlines = file(path=\"{}/*.log\", follow=true, fields=[file_line, line])\n  | count(fields=[file_line, line], emit=update)\n  | stdout",
            dir.path().display()
        ),
        "--state-dir".into(),
        state.display().to_string(),
        "-c".into(),
        "topology.stateful=true".into(),
    ];
    let sorted = |run: &Followed| {
        let mut l = run.lines();
        l.sort();
        l
    };
    let run = Followed::spawn(dir.path(), &args);
    poll_until(
        "a1 and b1",
        Duration::from_secs(60),
        Duration::from_millis(20),
        || (sorted(&run) == ["1\ta1\t1", "1\tb1\t1"]).then_some(()),
    );
    run.interrupt();
    append(&dir.path().join("a.log"), "a2\n");
    append(&dir.path().join("b.log"), "b2\n");
    append(&dir.path().join("c.log"), "c1\n");
    let run = Followed::spawn(dir.path(), &args);
    let want = ["1\tc1\t1", "2\ta2\t1", "2\tb2\t1"];
    poll_until(
        "the new lines",
        Duration::from_secs(60),
        Duration::from_millis(20),
        || {
            let got = sorted(&run);
            assert!(got.len() <= want.len(), "{got:?}");
            (got == want).then_some(())
        },
    );
    run.interrupt();
}

/// `n` lines `{tag}1`, `{tag}2`, … long enough together to have a fingerprint (256 bytes).
fn long_lines(tag: &str, n: usize) -> Vec<String> {
    (1..=n)
        .map(|i| format!("{tag}{i} {}", "x".repeat(40)))
        .collect()
}

/// Without a state dir, a followed file's position is kept under `$XDG_STATE_HOME`; it names
/// the file by a fingerprint of its content too: a file rewritten in place while the run was
/// stopped (the same inode, other content, longer than the old offset: what a reused inode
/// looks like) is read from its first line, not taken for the old file grown.
#[test]
fn a_reused_inode_is_not_taken_for_the_old_file_across_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.log");
    let old = long_lines("a", 8);
    append(&path, &(old.join("\n") + "\n"));
    let run = Followed::start(dir.path(), &path, "");
    let want: Vec<&str> = old.iter().map(String::as_str).collect();
    run.wait_for(&want);
    run.interrupt();
    let kept = dir.path().join("storm/positions/followed");
    let files: Vec<_> = std::fs::read_dir(&kept)
        .expect("the position folder under $XDG_STATE_HOME")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        files.len() == 1 && files[0].starts_with("lines.0-") && files[0].ends_with(".json"),
        "{files:?}"
    );
    // Rewritten in place (O_TRUNC keeps the inode), longer than what was read.
    let new = long_lines("b", 12);
    std::fs::write(&path, new.join("\n") + "\n").expect("rewrite");
    let run = Followed::start(dir.path(), &path, "");
    let want: Vec<&str> = new.iter().map(String::as_str).collect();
    run.wait_for(&want);
    run.interrupt();
}

/// A followed file moved while the run was stopped by a copy (another inode, the same
/// content: a move across file systems) and a new file made under the name: the resumed run
/// finds the old file by its fingerprint, reads only its unread tail, then the new file; no
/// line of the old file comes out twice.
#[test]
fn a_file_moved_by_a_copy_while_stopped_is_found_by_its_fingerprint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.log");
    let state = dir.path().join("state");
    let old = long_lines("a", 8);
    append(&path, &(old.join("\n") + "\n"));
    let args = vec![
        "run".to_string(),
        "-e".into(),
        format!(
            "name moved\nlines = file(path={}, follow=true)\n  | stdout",
            path.display()
        ),
        "--state-dir".into(),
        state.display().to_string(),
        "-c".into(),
        "topology.stateful=true".into(),
    ];
    let run = Followed::spawn(dir.path(), &args);
    let want: Vec<&str> = old.iter().map(String::as_str).collect();
    run.wait_for(&want);
    run.interrupt();
    append(&path, "a-tail\n");
    std::fs::copy(&path, dir.path().join("app.log.1")).expect("copy");
    std::fs::remove_file(&path).expect("remove");
    append(&path, "b1\nb2\n");
    let run = Followed::spawn(dir.path(), &args);
    run.wait_for(&["a-tail", "b1", "b2"]);
    run.interrupt();
}

/// A checkpointed glob names its files by fingerprint too: while the run was stopped, one file
/// is rewritten in place (its inode, other content: read from its start) and another moved by
/// a copy to another matching name (another inode, its content: only its tail is read).
#[test]
fn a_checkpointed_glob_tells_its_files_by_fingerprint_across_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let (a, b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    let (old_a, old_b) = (long_lines("a", 8), long_lines("b", 8));
    append(&a, &(old_a.join("\n") + "\n"));
    append(&b, &(old_b.join("\n") + "\n"));
    let args = vec![
        "run".to_string(),
        "-e".into(),
        format!(
            "name printed\nlines = file(path=\"{}/*.log\", follow=true)\n  | stdout",
            dir.path().display()
        ),
        "--state-dir".into(),
        state.display().to_string(),
        "-c".into(),
        "topology.stateful=true".into(),
    ];
    let sorted = |run: &Followed| {
        let mut l = run.lines();
        l.sort();
        l
    };
    let wait_for = |run: &Followed, mut want: Vec<String>| {
        want.sort();
        poll_until(
            "the lines",
            Duration::from_secs(60),
            Duration::from_millis(20),
            || {
                let got = sorted(run);
                assert!(got.iter().all(|g| want.contains(g)), "{got:?}");
                (got == want).then_some(())
            },
        );
    };
    let run = Followed::spawn(dir.path(), &args);
    wait_for(&run, [old_a.clone(), old_b].concat());
    run.interrupt();
    let new_a = long_lines("n", 10);
    std::fs::write(&a, new_a.join("\n") + "\n").expect("rewrite a in place");
    append(&b, "b-tail\n");
    std::fs::copy(&b, dir.path().join("moved.log")).expect("copy b");
    std::fs::remove_file(&b).expect("remove b");
    let run = Followed::spawn(dir.path(), &args);
    wait_for(&run, [new_a, vec!["b-tail".to_string()]].concat());
    run.interrupt();
}

/// The cause of lost lines the exactly-once proof once showed: a checkpoint taken before the
/// first line names the file the run started on, so a file rotated while the run was killed,
/// before it read anything, is read from its start after the restart (its lines not lost).
#[test]
fn a_rotation_before_the_first_line_is_read_after_a_kill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.log");
    let state = dir.path().join("state");
    append(&path, "");
    let args = vec![
        "run".to_string(),
        "-e".into(),
        format!(
            "name early\nlines = file(path={}, follow=true)\n  | stdout",
            path.display()
        ),
        "--state-dir".into(),
        state.display().to_string(),
        "-c".into(),
        "topology.stateful=true".into(),
        "-c".into(),
        "topology.state.checkpoint.interval.ms=50".into(),
    ];
    kill_after_commits(&args, dir.path(), 2, &mut |_| {});
    append(&path, "a1\n");
    std::fs::rename(&path, dir.path().join("app.log.1")).expect("rotate");
    append(&path, "b1\n");
    let run = Followed::spawn(dir.path(), &args);
    run.wait_for(&["a1", "b1"]);
    run.interrupt();
}
