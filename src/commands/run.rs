//! `storm run`: load and validate a topology, run it locally, stop it gracefully on
//! SIGINT/SIGTERM or `--duration`, show progress, and print the summary and `--stats`.

use super::{load_topology, Status};
use crate::cli::{ProgressMode, RunArgs};
use crate::runtime::{self, RunReport};
use crate::topology::{LoadOptions, Loaded};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn run(args: RunArgs) -> anyhow::Result<Status> {
    if let Some(addr) = args.nimbus.clone() {
        return super::run_attached::run(args, &addr);
    }
    if args.processes {
        return super::run_processes::run(args);
    }
    let (loaded, _) = match load_for_run(&args) {
        Ok(l) => l,
        Err(status) => return Ok(status),
    };
    let signalled = drain_on_signals()?;

    let running = runtime::start_local(Arc::new(loaded.topology))?;
    let show_progress = match args.progress {
        ProgressMode::Always => true,
        ProgressMode::Never => false,
        ProgressMode::Auto => std::io::stderr().is_terminal() && !args.quiet,
    };
    // Dropped when the run has ended: wakes the monitor at once (a sleeping monitor would
    // add up to one period to every run).
    let (finished, ended) = crossbeam_channel::bounded::<()>(0);
    let monitor = {
        let control = running.control.clone();
        let stats = running.stats.clone();
        let signalled = signalled.clone();
        let deadline = args.duration.map(|d| Instant::now() + d);
        std::thread::Builder::new()
            .name("run-monitor".into())
            .spawn(move || {
                let bar = show_progress.then(super::progress::Progress::new);
                while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                    ended.recv_timeout(Duration::from_millis(50))
                {
                    if signalled.load(Ordering::Relaxed)
                        || deadline.is_some_and(|d| Instant::now() >= d)
                    {
                        control.stop.store(true, Ordering::Relaxed);
                    }
                    if let Some(b) = &bar {
                        b.update(&stats);
                    }
                }
                if let Some(b) = bar {
                    b.finish();
                }
            })?
    };
    let result = running.wait();
    drop(finished);
    let _ = monitor.join();
    let report = result?;
    if let Some(path) = &args.stats {
        write_stats(path, &report)?;
    }
    print_summary(&args, &report);
    if report.lost > 0 {
        crate::stderr_println!(
            "error: {} tuple(s) were given up on after their retries and are lost",
            report.lost
        );
        return Ok(Status::Failure);
    }
    if !report.acking && !args.quiet {
        let failed: u64 = report
            .components
            .iter()
            .filter(|c| c.kind == "bolt")
            .map(|c| c.failed)
            .sum();
        if failed > 0 {
            crate::stderr_println!(
                "warning: acking is off (topology.acker.executors: 0): {failed} failed tuple(s) were not replayed and are lost"
            );
        }
    }
    Ok(Status::Success)
}

/// The per-component table at the end of a run: drawn when stderr is a terminal (so a run
/// inside `| sort | head` stays quiet) or with `--summary`, never with `--quiet`; system
/// components only with `--system`.
pub(super) fn print_summary(args: &RunArgs, report: &RunReport) {
    let wanted = args.summary || std::io::stderr().is_terminal();
    if args.quiet || !wanted {
        return;
    }
    let shown: Vec<_> = report
        .components
        .iter()
        .filter(|c| args.system || !c.id.starts_with("__"))
        .cloned()
        .collect();
    crate::stderr_println!(
        "{}",
        runtime::metrics::render_table(&shown, report.elapsed.as_secs_f64())
    );
}

/// CPU seconds used by this process and by its ended children (shell components), from
/// `/proc/self/stat` (Linux; zeros elsewhere).
fn process_cpu_secs() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // utime, stime, cutime, cstime are fields 14-17 of the whole line: 11-14 after `)`.
    let tick = 100.0; // USER_HZ on Linux
    let at = |i: usize| f.get(i).copied().unwrap_or(0.0) / tick;
    (at(11) + at(12), at(13) + at(14))
}

/// The topology of a run in any mode, with the `-c` overrides it was loaded with (`--workers N`
/// is `topology.workers=N`). Warnings are printed unless `--quiet`.
pub(super) fn load_for_run(args: &RunArgs) -> Result<(Loaded, Vec<String>), Status> {
    let mut overrides = args.config.overrides.clone();
    if let Some(w) = args.workers {
        overrides.push(format!("topology.workers={w}"));
    }
    let opts = LoadOptions {
        overrides: overrides.clone(),
        filter: args.source.filter.clone(),
    };
    let loaded = load_topology(
        args.source.file.as_deref(),
        args.source.expr.as_deref(),
        &opts,
        !args.quiet,
    )?;
    Ok((loaded, overrides))
}

/// First SIGINT/SIGTERM sets the flag (stop the spouts and drain); a second one while draining
/// erases the progress line and exits 130 at once.
pub(super) fn drain_on_signals() -> anyhow::Result<Arc<AtomicBool>> {
    let signalled = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let flag = signalled.clone();
        let action = move || {
            if flag.swap(true, Ordering::SeqCst) {
                crate::logging::clear_status_line();
                signal_hook::low_level::exit(130);
            }
        };
        // SAFETY: the action is async-signal-safe: atomics, one write(2), and _exit.
        unsafe { signal_hook::low_level::register(sig, action) }?;
    }
    Ok(signalled)
}

fn write_stats(path: &std::path::Path, report: &RunReport) -> anyhow::Result<()> {
    let (cpu_self, cpu_children) = process_cpu_secs();
    let json = serde_json::json!({
        "elapsed_secs": report.elapsed.as_secs_f64(),
        "cpu_secs": { "storm": cpu_self, "children": cpu_children },
        "acking": report.acking,
        "lost": report.lost,
        "components": report.components,
    });
    let text = serde_json::to_string_pretty(&json)?;
    std::fs::write(path, text + "\n")
        .map_err(|e| anyhow::anyhow!("cannot write --stats file {}: {e}", path.display()))
}
