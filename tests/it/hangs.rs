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
