//! Rebalancing a local run (Storm's `rebalance`): the spouts are deactivated, the run waits
//! until no tree is open (or the wait is over), then every executor parks and hands its tasks
//! back whole, and the run's thread starts a new layout (new worker and executor counts,
//! placed by the same round-robin as at the start) with those same tasks: their components'
//! state, their spouts' open trees and their counters carry over, and what was still queued
//! for them (or on its way between workers) follows them to their new queues. The spouts are
//! then active again, unless they were deactivated before.
//!
//! A [`Rebalancer`] (held by the UI) asks; [`Running::wait`] carries the switch out between
//! its waits for executors, since it owns their threads.

use super::builder::{self, Wiring};
use super::executor::{Parked, RunControl};
use super::message::Message;
use super::metrics::TaskStats;
use super::{InProcess, Layout, Running, SharedLayout};
use crate::model::plan::Plan;
use crate::model::rebalance::{Invalid, Rebalance};
use crate::model::Topology;
use crate::placement::Placement;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A switch to a new layout, asked of the run's thread; the answer comes back on `reply`.
pub(crate) struct Switch {
    topology: Topology,
    reply: Sender<anyhow::Result<()>>,
}

/// What parking every executor gives back.
struct Parking {
    /// Every task, those of executors that had ended before included.
    tasks: Vec<Parked>,
    /// The parked executors' receive queues.
    inboxes: Vec<Receiver<Message>>,
    /// What was taken from them while the others parked.
    leftovers: Vec<Message>,
}

/// How often the wait looks at the spouts' open trees.
const DRAIN_POLL: Duration = Duration::from_millis(20);
/// Polls in a row that must see no open tree before the wait ends early (a spout may be in
/// the middle of its last round when it is deactivated).
const DRAINED_POLLS: u32 = 3;

/// Asks a local run to rebalance; cheap to clone.
#[derive(Clone)]
pub(crate) struct Rebalancer {
    switches: Sender<Switch>,
    layout: SharedLayout,
    control: Arc<RunControl>,
    stats: BTreeMap<u32, (String, Arc<TaskStats>)>,
}

impl Rebalancer {
    /// The run's layout as of now.
    pub(crate) fn layout(&self) -> Arc<Layout> {
        self.layout
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Start a rebalance: checked here (an [`Invalid`] error for a bad request), carried out
    /// on a thread of its own after at most `wait`.
    pub(crate) fn start(&self, request: &Rebalance, wait: Duration) -> anyhow::Result<()> {
        let layout = self.layout();
        if layout.topology.is_stateful() {
            return Err(Invalid(
                "a topology with stateful components cannot be rebalanced yet".into(),
            )
            .into());
        }
        let topology = request
            .apply(&layout.topology, &layout.plan)
            .map_err(Invalid)?;
        anyhow::ensure!(
            !self.control.stop.load(Relaxed),
            "the topology is being killed"
        );
        if self.control.rebalancing.swap(true, Relaxed) {
            return Err(Invalid("a rebalance is already under way".into()).into());
        }
        let this = self.clone();
        let acking = layout.plan.ackers > 0;
        let spawned = std::thread::Builder::new()
            .name("rebalance".into())
            .spawn(move || this.carry_out(topology, wait, acking));
        if let Err(e) = spawned {
            self.control.rebalancing.store(false, Relaxed);
            anyhow::bail!("cannot start the rebalance: {e}");
        }
        Ok(())
    }

    /// Deactivate, wait, switch, and restore the activation as it was.
    fn carry_out(self, topology: Topology, wait: Duration, acking: bool) {
        let was_paused = self.control.paused.swap(true, Relaxed);
        self.drain(wait, acking);
        let (reply, answer) = crossbeam_channel::bounded(1);
        let switched = self
            .switches
            .send(Switch { topology, reply })
            .map_err(|_| anyhow::anyhow!("the run has ended"))
            .and_then(|()| {
                answer
                    .recv()
                    .map_err(|_| anyhow::anyhow!("the run has ended"))?
            });
        match switched {
            Ok(()) => tracing::info!("rebalanced"),
            Err(e) => tracing::warn!("rebalance: {e:#}"),
        }
        self.control.paused.store(was_paused, Relaxed);
        self.control.rebalancing.store(false, Relaxed);
    }

    /// Wait up to `wait`; with acking on, stop waiting once no spout task has a tree open.
    fn drain(&self, wait: Duration, acking: bool) {
        let clock = &self.control.clock;
        let end = clock.now() + wait;
        let mut drained = 0;
        while clock.now() < end && !self.control.stop.load(Relaxed) {
            std::thread::sleep(DRAIN_POLL.min(clock.wait_for(end)));
            let open: u64 = self
                .stats
                .values()
                .map(|(_, s)| s.pending.load(Relaxed))
                .sum();
            drained = if acking && open == 0 { drained + 1 } else { 0 };
            if drained >= DRAINED_POLLS {
                return;
            }
        }
    }
}

impl Running {
    /// The handle a local run's UI rebalances it through.
    pub(crate) fn rebalancer(&self) -> Rebalancer {
        Rebalancer {
            switches: self.switches.0.clone(),
            layout: self.layout.clone(),
            control: self.control.clone(),
            stats: self.stats.clone(),
        }
    }

    /// Carry out a switch asked by a [`Rebalancer`] and answer it.
    pub(super) fn on_switch(&mut self, switch: Switch) -> anyhow::Result<()> {
        let result = self.switch_to(switch.topology);
        let failed = result.as_ref().err().map(|e| anyhow::anyhow!("{e:#}"));
        let _ = switch.reply.send(result);
        match failed {
            Some(e) => Err(e.context("rebalance")),
            None => Ok(()),
        }
    }

    /// Park every executor, then start the new layout of `topology` with their tasks, and
    /// hand it what was still queued for them.
    fn switch_to(&mut self, topology: Topology) -> anyhow::Result<()> {
        let Parking {
            tasks: parked,
            inboxes: old_inboxes,
            mut leftovers,
        } = self.park_all()?;
        // Every executor is parked: the new ones must not be.
        self.control.park.store(false, Relaxed);
        let topology = Arc::new(topology);
        let plan = Plan::new(&topology);
        let placement = Placement::round_robin(&plan, topology.config.workers() as usize);
        let all: Vec<usize> = (0..placement.workers).collect();
        let mut wiring =
            Wiring::new(topology.clone(), &placement, &all)?.with_control(self.control.clone());
        let tables = wiring.route_tables();
        let plumbing = wiring.spawn_workers(&InProcess)?;
        // Taking the tasks over points their wakers at the new queues, the last users of the
        // old ones but the receive threads, which end once the old transfer threads have.
        wiring.spawn_resumed(&tables, builder::pool(parked))?;
        let next = wiring.running(plumbing);
        let deadline = Instant::now() + LAST_MESSAGES;
        for rx in &old_inboxes {
            take_rest(rx, deadline, &mut leftovers);
        }
        redeliver(leftovers, &next.plan, &next.wake);
        self.handles = next.handles;
        self.plumbing = next.plumbing;
        self.done = next.done;
        self.plan = next.plan;
        self.topology = topology;
        self.wake = next.wake;
        let layout = next
            .layout
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        *self.layout.lock().unwrap_or_else(|e| e.into_inner()) = layout;
        Ok(())
    }

    /// Ask every executor to park and join them all, emptying the queues of the parked ones
    /// meanwhile (an executor still flushing to one must not block); then join the transfer
    /// threads. Returns every task (those of executors that had ended before included), the
    /// parked executors' queues, and what was taken from them.
    fn park_all(&mut self) -> anyhow::Result<Parking> {
        self.halter().halt();
        self.wake.clear();
        let mut parked = std::mem::take(&mut self.ended);
        let (mut inboxes, mut leftovers) = (Vec::new(), Vec::new());
        while !self.handles.is_empty() {
            let mut joined = false;
            while let Some(i) = self.handles.iter().position(|(_, h)| h.is_finished()) {
                let (component, h) = self.handles.swap_remove(i);
                let report = self.joined(component, h)?;
                parked.extend(report.tasks);
                inboxes.extend(report.inbox);
                joined = true;
            }
            for rx in &inboxes {
                leftovers.extend(rx.try_iter());
            }
            if !joined {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        while self.done.try_recv().is_ok() {}
        for h in self.plumbing.drain(..) {
            let _ = h.join();
        }
        Ok(Parking {
            tasks: parked,
            inboxes,
            leftovers,
        })
    }
}

/// The longest wait, over all old queues, for the last messages on their way to them (the
/// receive threads end right after the transfer threads, already joined; this only bounds a
/// surprise).
const LAST_MESSAGES: Duration = Duration::from_secs(5);

/// Everything still queued or on its way to an old queue, until its last sender is gone (or
/// `deadline`: what is queued by then is taken all the same).
fn take_rest(rx: &Receiver<Message>, deadline: Instant, into: &mut Vec<Message>) {
    loop {
        match rx.recv_deadline(deadline) {
            Ok(m) => into.push(m),
            Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {
                into.extend(rx.try_iter());
                tracing::warn!("rebalance: an old queue is still open; going on without it");
                return;
            }
        }
    }
}

/// Send each message to the queue of its task's new executor, in the order taken (the
/// messages of one task all come from one old queue, so their order is kept).
fn redeliver(messages: Vec<Message>, plan: &Plan, queues: &[Sender<Message>]) {
    let mut exec_of_task = BTreeMap::new();
    for (i, (_, tasks)) in plan.executors().into_iter().enumerate() {
        for t in tasks {
            exec_of_task.insert(t, i);
        }
    }
    for m in messages {
        let task = match &m {
            Message::Tuples { task, .. } => *task,
            Message::Acks(a) => a.task,
            Message::Eos { to, .. } | Message::Marker { to, .. } => *to,
            Message::Wake | Message::Congestion { .. } | Message::Control { .. } => continue,
        };
        if let Some(q) = exec_of_task.get(&task).and_then(|&i| queues.get(i)) {
            // The new executors run: a full queue empties.
            let _ = q.send(m);
        }
    }
}
