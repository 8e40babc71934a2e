//! State on disk is verified, never trusted blindly: a state dir damaged at random (a flipped
//! bit or a truncation at a random offset of each of its files, an emptied or deleted file)
//! is resumed exactly or refused with an error naming what is damaged, never read as other
//! totals with exit 0; `--fresh` starts over; `storm state clear` refuses a dir a run holds.

use crate::run_reliability::Run;
use rand::{Rng, SeedableRng};
use std::path::Path;

const TOPOLOGY: &str =
    "file(path=tests/fixtures/words.txt) | count(line) stateful=true x2 | stdout";

/// `storm run` of [`TOPOLOGY`] on `dir` with two workers: exit code, sorted stdout, stderr.
fn resume(dir: &Path, extra: &[&str]) -> (Option<i32>, Vec<String>, String) {
    let conf = tempfile::tempdir().expect("tempdir");
    let dir = dir.to_str().expect("a UTF-8 path");
    let out = crate::validate::storm(conf.path())
        .args(["run", "-e", TOPOLOGY, "--workers", "2", "--state-dir", dir])
        .args(extra)
        .output()
        .expect("runs");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), lines, stderr)
}

/// A state dir left by a whole run, and the totals it printed.
fn finished_dir() -> (tempfile::TempDir, Vec<String>) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (code, totals, stderr) = resume(&tmp.path().join("state"), &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!totals.is_empty());
    (tmp, totals)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

/// Whether `stderr` holds an `error:` line naming `dir` (or a file in it).
fn refused_naming(stderr: &str, dir: &Path) -> bool {
    let shown = dir.display().to_string();
    stderr
        .lines()
        .any(|l| l.starts_with("error: ") && l.contains(&shown))
}

/// Damage `path` one way, chosen by `rng`; how, for the failure message.
fn damage(path: &Path, rng: &mut impl Rng) -> String {
    let mut bytes = std::fs::read(path).expect("read");
    let len = bytes.len();
    match rng.random_range(0..3) {
        0 => {
            let (at, bit) = (rng.random_range(0..len), rng.random_range(0..8));
            bytes[at] ^= 1 << bit;
            std::fs::write(path, bytes).expect("write");
            format!("bit {bit} of byte {at} of {len} flipped")
        }
        1 => {
            let at = rng.random_range(0..len);
            std::fs::write(path, &bytes[..at]).expect("write");
            format!("truncated to {at} of {len}")
        }
        _ => {
            std::fs::write(path, b"").expect("write");
            "emptied".into()
        }
    }
}

/// 10 trials on each file of the dir: always the same totals with exit 0, or a refusal whose
/// error names the state dir (never a panic).
#[test]
fn a_damaged_state_dir_is_resumed_exactly_or_refused() {
    let (pristine, expected) = finished_dir();
    let pristine = pristine.path().join("state");
    let mut files: Vec<_> = std::fs::read_dir(&pristine)
        .expect("read dir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    files.sort();
    assert_eq!(
        files.len(),
        6,
        "checkpoint.redb, two worker stores and a mark beside each: {files:?}"
    );
    let mut rng = rand::rngs::SmallRng::seed_from_u64(29);
    for file in &files {
        for trial in 0..10 {
            let tmp = tempfile::tempdir().expect("tempdir");
            let dir = tmp.path().join("state");
            copy_dir(&pristine, &dir);
            let how = damage(&dir.join(file), &mut rng);
            let (code, totals, stderr) = resume(&dir, &[]);
            let what = format!("{file:?} {how} (trial {trial}): exit {code:?}\n{stderr}");
            assert!(!stderr.contains("panicked"), "{what}");
            if code == Some(0) {
                assert_eq!(totals, expected, "{what}");
            } else {
                assert!(refused_naming(&stderr, &dir), "{what}");
            }
        }
    }
}

/// `storm state dump` of `dir`: exit code, stdout, stderr.
fn dump(dir: &Path) -> (Option<i32>, String, String) {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = crate::validate::storm(conf.path())
        .args(["state", "dump"])
        .arg(dir)
        .output()
        .expect("runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// Bits of the database headers' two transaction slots (bytes 64 to 319) of the commit record
/// and of both worker stores, flipped one at a time (bit 0 of every byte, and another bit of
/// every fifth): the dir reads as the same committed entries, or is refused with an error
/// naming it. The database falls back to the slot before when the newest one is damaged: for
/// the commit record that named an older checkpoint, or none, and the run started over with
/// exit 0; for a worker store it lost the last checkpoint's rows (half the entries gone, exit
/// 0). Now the marks beside them refuse both. Other flips of a worker store made the
/// database's cleanup panic while a first panic unwound, which aborted the process.
#[test]
fn damaged_header_slots_never_read_as_an_older_checkpoint_nor_abort() {
    let (pristine, _) = finished_dir();
    let pristine = pristine.path().join("state");
    let (code, want, stderr) = dump(&pristine);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(want.lines().count() > 100, "{want}");
    let mut refused_by_the_mark = 0;
    let bits = (64..320)
        .map(|byte| byte * 8)
        .chain((64..320).step_by(5).map(|byte| byte * 8 + 1 + byte % 7));
    let bits: Vec<usize> = bits.collect();
    for file in ["checkpoint.redb", "worker-0.redb", "worker-1.redb"] {
        for &bit in &bits {
            let tmp = tempfile::tempdir().expect("tempdir");
            let dir = tmp.path().join("state");
            copy_dir(&pristine, &dir);
            let path = dir.join(file);
            let mut bytes = std::fs::read(&path).expect("read");
            bytes[bit / 8] ^= 1 << (bit % 8);
            std::fs::write(&path, bytes).expect("write");
            let (code, got, stderr) = dump(&dir);
            let what = format!(
                "{file}, bit {} of byte {}: exit {code:?}
{stderr}",
                bit % 8,
                bit / 8
            );
            match code {
                Some(0) => assert_eq!(got, want, "{what}"),
                Some(1) => {
                    assert!(refused_naming(&stderr, &dir), "{what}");
                    refused_by_the_mark += usize::from(
                        stderr.contains("was committed (") || stderr.contains(" were made ("),
                    );
                }
                _ => panic!("{what}"),
            }
        }
    }
    // The slots' fall-backs that changed what the dir reads (bit 0 of byte 65 or 193 of a
    // worker store here) are there, and refused by the marks.
    assert!(
        refused_by_the_mark > 0,
        "no flip fell back to an older slot"
    );
}

/// A deleted worker store or commit record is refused by name, and `--fresh` starts over.
#[test]
fn a_missing_part_is_refused_and_fresh_starts_over() {
    let (tmp, expected) = finished_dir();
    let dir = tmp.path().join("state");
    std::fs::remove_file(dir.join("worker-1.redb")).expect("rm");
    let (code, _, stderr) = resume(&dir, &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("needs ") && stderr.contains("worker-1.redb, which is missing"),
        "{stderr}"
    );
    std::fs::remove_file(dir.join("checkpoint.redb")).expect("rm");
    let (code, _, stderr) = resume(&dir, &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("holds worker stores but no commit record checkpoint.redb"),
        "{stderr}"
    );
    let (code, totals, stderr) = resume(&dir, &["--fresh"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("--fresh: removed the state dir"),
        "{stderr}"
    );
    assert_eq!(totals, expected);
}

/// `storm state clear` refuses a dir a live run holds, and removes it once the run ended.
#[test]
fn state_clear_refuses_a_dir_a_run_holds() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("state");
    let dir_arg = dir.to_str().expect("UTF-8").to_string();
    let mut run = Run::start(
        &[
            "run",
            "-e",
            "stdin | count(line) stateful=true | stdout",
            "--state-dir",
            &dir_arg,
        ],
        true,
    );
    crate::support::poll_until(
        "the state dir",
        std::time::Duration::from_secs(60),
        std::time::Duration::from_millis(20),
        || dir.join("checkpoint.redb").is_file().then_some(()),
    );
    let conf = tempfile::tempdir().expect("tempdir");
    let clear = || {
        crate::validate::storm(conf.path())
            .args(["state", "clear", "--yes", &dir_arg])
            .output()
            .expect("runs")
    };
    let out = clear();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is in use by a run"), "{stderr}");
    assert!(dir.exists());
    let ended = run.finish();
    assert!(ended.status.success());
    assert!(clear().status.success());
    assert!(!dir.exists());
}
