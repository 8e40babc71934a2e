//! Accepting connections within bounds: each accepted connection takes a slot; past
//! `max_connections`, or when the process is out of file descriptors, the connection that has
//! waited longest for a request is told to close, and accepting backs off instead of failing.

use super::conn::{self, Shared};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// The open connections, oldest first, and which of them wait for a request.
#[derive(Default)]
pub struct Slots {
    inner: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    next: u64,
    by_id: BTreeMap<u64, Entry>,
}

struct Entry {
    /// Since when it has waited for (or been reading) a request; `None` while it answers.
    waiting_since: Option<Instant>,
    shed: Arc<Notify>,
}

/// One connection's slot, given back when dropped.
pub struct Slot {
    id: u64,
    slots: Arc<Slots>,
    /// Notified when the connection is to close to make room.
    pub shed: Arc<Notify>,
}

impl Slots {
    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn count(&self) -> usize {
        self.open().by_id.len()
    }

    fn take(self: &Arc<Self>) -> Slot {
        let shed = Arc::new(Notify::new());
        let mut open = self.open();
        let id = open.next;
        open.next += 1;
        open.by_id.insert(
            id,
            Entry {
                waiting_since: Some(Instant::now()),
                shed: shed.clone(),
            },
        );
        Slot {
            id,
            slots: self.clone(),
            shed,
        }
    }

    /// Close the connection that has waited longest for a request; false when none waits.
    fn shed_one(&self) -> bool {
        let mut open = self.open();
        let oldest = open
            .by_id
            .iter()
            .filter_map(|(id, e)| e.waiting_since.map(|t| (t, *id)))
            .min();
        let Some((_, id)) = oldest else {
            return false;
        };
        if let Some(entry) = open.by_id.remove(&id) {
            entry.shed.notify_one();
        }
        true
    }
}

impl Slot {
    /// Mark the connection as waiting for a request (it may be shed) or answering (it may not).
    pub fn waiting(&self, yes: bool) {
        if let Some(e) = self.slots.open().by_id.get_mut(&self.id) {
            e.waiting_since = yes.then(Instant::now);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.open().by_id.remove(&self.id);
    }
}

/// Whether an accept error means the process (or system) has no file descriptor left.
fn out_of_descriptors(e: &std::io::Error) -> bool {
    // EMFILE (24) and ENFILE (23) on Linux and the BSDs.
    matches!(e.raw_os_error(), Some(23 | 24))
}

/// Accept and serve connections until `stop` fires (or its sender is dropped).
pub async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let slots = Arc::new(Slots::default());
    let mut backoff = Duration::from_millis(10);
    let mut warned: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => return,
            r = listener.accept() => r,
        };
        match accepted {
            Ok((stream, peer)) => {
                backoff = Duration::from_millis(10);
                if slots.count() >= shared.limits.max_connections && !slots.shed_one() {
                    // Every open connection is answering: this one waits for none of them.
                    conn::turn_away(stream);
                    continue;
                }
                let slot = slots.take();
                tokio::spawn(conn::serve(stream, peer, shared.clone(), slot));
            }
            Err(e) => {
                let starved = out_of_descriptors(&e);
                if starved {
                    slots.shed_one();
                }
                if warned.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                    tracing::warn!(
                        "http: cannot accept a connection ({e}); {}",
                        match starved {
                            true => "closing the longest-idle one and retrying",
                            false => "retrying",
                        }
                    );
                    warned = Some(Instant::now());
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}
