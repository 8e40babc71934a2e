//! Taps on a task's emits (`storm tap`, `topology.debug`): while someone listens, each emitted
//! tuple (or every Nth, sampled) is written as a JSON line to the listeners' channels. With
//! nobody listening an emit costs one relaxed load of a flag.

use crate::tuple::Values;
use crossbeam_channel::{Sender, TrySendError};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

/// The listeners of one task.
#[derive(Debug, Default)]
pub(crate) struct Taps {
    on: AtomicBool,
    listeners: Mutex<Vec<Listener>>,
}

/// One listener: which stream, how often, where to.
#[derive(Debug)]
pub(crate) struct Listener {
    /// Only this stream (by id), or all.
    pub(crate) stream: Option<crate::model::plan::StreamId>,
    /// Names of the streams by id, for the lines.
    pub(crate) stream_names: Arc<Vec<String>>,
    pub(crate) component: String,
    /// Take one emit in `every` (1: all).
    pub(crate) every: u64,
    pub(crate) seen: u64,
    pub(crate) tx: Sender<String>,
}

impl Taps {
    /// Whether anyone listens (checked on every emit).
    #[inline]
    pub(crate) fn on(&self) -> bool {
        self.on.load(Relaxed)
    }

    pub(crate) fn add(&self, listener: Listener) {
        let mut l = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        l.push(listener);
        self.on.store(true, Relaxed);
    }

    /// Hand one emit to the listeners that want it; listeners that went away are dropped.
    #[cold]
    pub(crate) fn publish(&self, task: u32, stream: crate::model::plan::StreamId, values: &Values) {
        let mut listeners = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        listeners.retain_mut(|l| {
            if l.stream.is_some_and(|s| s != stream) {
                return true;
            }
            l.seen += 1;
            if (l.seen - 1) % l.every.max(1) != 0 {
                return true;
            }
            let line = serde_json::json!({
                "component": l.component,
                "task": task,
                "stream": l.stream_names.get(stream as usize).map_or("?", |s| s.as_str()),
                "values": values.iter().map(|v| v.to_json()).collect::<Vec<_>>(),
            });
            // A listener that cannot keep up misses lines rather than slowing the task.
            !matches!(
                l.tx.try_send(line.to_string()),
                Err(TrySendError::Disconnected(_))
            )
        });
        if listeners.is_empty() {
            self.on.store(false, Relaxed);
        }
    }
}

/// Debug lines waiting for stderr before a slow terminal makes new ones drop.
const DEBUG_BUFFER: usize = 10_000;

/// Held while a debug line is taken and printed.
static PRINTING: Mutex<()> = Mutex::new(());

/// The process's debug channel: both ends, the printer thread started with it.
static DEBUG: OnceLock<(Sender<String>, crossbeam_channel::Receiver<String>)> = OnceLock::new();

fn debug_channel() -> &'static (Sender<String>, crossbeam_channel::Receiver<String>) {
    DEBUG.get_or_init(|| {
        let (tx, rx) = crossbeam_channel::bounded(DEBUG_BUFFER);
        let lines = rx.clone();
        let started = std::thread::Builder::new()
            .name("debug-taps".into())
            .spawn(move || loop {
                // Received and printed under the lock: `flush_debug` never misses a line
                // this thread holds.
                let _printing = PRINTING.lock().unwrap_or_else(|e| e.into_inner());
                match lines.recv_timeout(std::time::Duration::from_millis(50)) {
                    Ok(line) => crate::stderr_println!("debug: {line}"),
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
                }
            });
        if let Err(e) = started {
            tracing::warn!("topology.debug: cannot start the printer thread: {e}");
        }
        (tx, rx)
    })
}

/// `topology.debug: true` (Storm's; `debug` is the component's effective value): every emit
/// of a user component's task is written to stderr as a JSON line prefixed `debug: ` (a worker
/// process's stderr is its log). Called as each task is made, so not one emit is missed.
pub(crate) fn debug(debug: bool, plan: &crate::model::plan::Plan, component: &str, taps: &Taps) {
    if !debug || component.starts_with("__") {
        return;
    }
    taps.add(Listener {
        stream: None,
        stream_names: Arc::new(plan.stream_names.clone()),
        component: component.to_string(),
        every: 1,
        seen: 0,
        tx: debug_channel().0.clone(),
    });
}

/// Print the debug lines still waiting (at the end of a run, before the process exits).
pub(crate) fn flush_debug() {
    if let Some((_, rx)) = DEBUG.get() {
        let _printing = PRINTING.lock().unwrap_or_else(|e| e.into_inner());
        while let Ok(line) = rx.try_recv() {
            crate::stderr_println!("debug: {line}");
        }
    }
}
