//! `storm run` in local mode: the whole topology runs in this process, its workers as
//! threads, with the progress line while it runs.

use super::{drain_on_signals, finish, load_for_run, Scope, StopWatcher, StopWhen};
use crate::cli::{ProgressMode, RunArgs};
use crate::commands::Status;
use crate::runtime;
use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Run the topology in this process until its input ends or it is stopped.
pub(super) fn run(args: RunArgs) -> anyhow::Result<Status> {
    let (loaded, _) = match load_for_run(&args) {
        Ok(l) => l,
        Err(status) => return Ok(status),
    };
    let signalled = drain_on_signals()?;

    let topology = Arc::new(loaded.topology);
    let at_least_once = topology.at_least_once();
    let message_timeout = topology.config.message_timeout();
    let reporting = runtime::reporters::configured(&topology.config)?;
    let running = runtime::start_local(topology.clone())?;
    // Named as the UI names a local run: `name-1-launch time`.
    let local_id = format!("{}-1-{}", topology.name, crate::cluster::nimbus::now_secs());
    let reporters = runtime::reporters::start(reporting, &local_id, 0, &running.stats);
    let ui = match &args.ui {
        Some(addr) => Some(crate::commands::ui::serve_local(addr, topology, &running)?),
        None => None,
    };
    let progress = show_progress(&args).then(|| running.stats.clone());
    let control = running.control.clone();
    let abandon = running.control.clone();
    let when = StopWhen::new(signalled, args.duration)
        .abandon_after(message_timeout, move || {
            abandon.abandon.store(true, Ordering::Relaxed)
        })
        // A thread blocked where giving up cannot reach it, most likely writing to an output
        // nobody reads: only ending the process ends the run.
        .end_if_stuck(super::exit_with(
            "the run did not end after its drain was given up (an output nobody reads, or a component that does not return); exiting",
        ));
    let watcher = StopWatcher::spawn(
        when,
        move || control.stop.store(true, Ordering::Relaxed),
        progress,
    )?;
    let result = running.wait();
    runtime::tap::flush_debug();
    // The last reading, with the run's final counts.
    drop(reporters);
    drop(ui);
    drop(watcher);
    finish(&args, &result?, Scope::Local, at_least_once)
}

/// Whether the progress line is drawn: `--progress`, or by default when stderr is a terminal
/// and the run is not `--quiet`.
fn show_progress(args: &RunArgs) -> bool {
    match args.progress {
        ProgressMode::Always => true,
        ProgressMode::Never => false,
        ProgressMode::Auto => std::io::stderr().is_terminal() && !args.quiet,
    }
}
