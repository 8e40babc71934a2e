//! The open connections of a server, oldest first, and which of them wait for a request:
//! the ones that may be closed to make room.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::Notify;

/// The open connections, oldest first, and which of them wait for a request.
#[derive(Default)]
pub(crate) struct Slots {
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
pub(crate) struct Slot {
    id: u64,
    slots: Arc<Slots>,
    /// Notified when the connection is to close to make room.
    pub(crate) shed: Arc<Notify>,
}

impl Slots {
    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn count(&self) -> usize {
        self.open().by_id.len()
    }

    pub(crate) fn take(self: &Arc<Self>) -> Slot {
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
    pub(crate) fn shed_one(&self) -> bool {
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
    pub(crate) fn waiting(&self, yes: bool) {
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
