//! The one place that installs SIGINT/SIGTERM handling: the first signal sets a flag the
//! caller watches (stop the spouts and drain, or stop a daemon); what a second one does is the
//! caller's choice ([`Second`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The signals that ask a command to stop.
const STOP_SIGNALS: [i32; 2] = [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM];

/// The exit status of a command ended by a second signal.
const INTERRUPTED: i32 = 130;

/// What a second SIGINT/SIGTERM does once the first has set the flag.
pub(crate) enum Second {
    /// Nothing more: every signal only sets the flag (a daemon stops cleanly when it sees it).
    SetsTheFlag,
    /// Erase the progress line and exit 130 at once, from the signal handler itself.
    Exits,
    /// Run this clean-up, erase the progress line and exit 130. The clean-up need not be
    /// async-signal-safe: signals are taken on a thread of their own, not in a handler.
    CleansUpAndExits(Box<dyn FnOnce() + Send>),
}

/// Installs the handling of SIGINT/SIGTERM and returns the flag the first one sets.
pub(crate) fn on_stop_signals(second: Second) -> anyhow::Result<Arc<AtomicBool>> {
    let signalled = Arc::new(AtomicBool::new(false));
    match second {
        Second::SetsTheFlag => {
            for sig in STOP_SIGNALS {
                signal_hook::flag::register(sig, signalled.clone())?;
            }
        }
        Second::Exits => exit_in_handler(&signalled)?,
        Second::CleansUpAndExits(clean_up) => exit_on_thread(&signalled, clean_up)?,
    }
    Ok(signalled)
}

/// A handler per signal that sets the flag, or exits if it was set already.
fn exit_in_handler(signalled: &Arc<AtomicBool>) -> anyhow::Result<()> {
    for sig in STOP_SIGNALS {
        let flag = signalled.clone();
        let action = move || {
            if flag.swap(true, Ordering::SeqCst) {
                crate::logging::clear_status_line();
                signal_hook::low_level::exit(INTERRUPTED);
            }
        };
        // SAFETY: the action is async-signal-safe: atomics, one write(2), and _exit.
        unsafe { signal_hook::low_level::register(sig, action) }?;
    }
    Ok(())
}

/// A thread that takes the signals: the first sets the flag, the second cleans up and exits.
fn exit_on_thread(
    signalled: &Arc<AtomicBool>,
    clean_up: Box<dyn FnOnce() + Send>,
) -> anyhow::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new(STOP_SIGNALS)?;
    let first = signalled.clone();
    std::thread::Builder::new()
        .name("run-signals".into())
        .spawn(move || {
            let mut clean_up = Some(clean_up);
            for (n, _) in signals.forever().enumerate() {
                if n == 0 {
                    first.store(true, Ordering::Relaxed);
                } else {
                    crate::logging::clear_status_line();
                    if let Some(clean_up) = clean_up.take() {
                        clean_up();
                    }
                    std::process::exit(INTERRUPTED);
                }
            }
        })?;
    Ok(())
}
