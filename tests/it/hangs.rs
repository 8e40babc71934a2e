//! Runs end when asked: SIGINT in the first moments of a stateful `--processes` run (while
//! its workers start, join their first generation and restore) ends it, its input still open.

use crate::run_reliability::{signal, Run};
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

/// 20 trials, the signal 0 to 380 ms after the start (so in every phase of the start: before
/// the handlers, while the workers launch, while they join, while they run): each run ends by
/// itself, with exit 0 (drained), or 130 or the signal itself (it came before storm could catch it), though
/// its standard input stays open.
#[test]
fn an_early_interrupt_ends_a_stateful_run_over_processes() {
    for trial in 0..20u64 {
        let mut run = Run::start(
            &[
                "run",
                "topologies/wordcount.yaml",
                "--processes",
                "--workers",
                "2",
                "-c",
                "topology.stateful=true",
            ],
            true,
        );
        // The signal's moment is what this test varies.
        std::thread::sleep(Duration::from_millis(20 * trial));
        signal(run.pid(), "-INT");
        let status = run.wait_status();
        let ended = matches!(status.code(), Some(0) | Some(130)) || status.signal() == Some(2);
        assert!(ended, "trial {trial}: {status:?}");
    }
}

/// A tuple over the 64 MiB frame limit between workers (a 70 MB line) fails the run at once
/// with an error that gives its size and the limit, instead of breaking the link and being
/// replayed for ever.
#[test]
fn a_tuple_over_the_frame_limit_fails_the_run_with_a_clear_error() {
    let mut run = Run::start(
        &[
            "run",
            "-e",
            "stdin | split | count(word) | stdout",
            "--processes",
            "--workers",
            "2",
        ],
        true,
    );
    let mut line = vec![b'x'; 70_000_000];
    line.push(b'\n');
    run.write(&line);
    let out = run.finish();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("takes 70000048 bytes, over the limit of 64 MiB"),
        "{stderr}"
    );
}
