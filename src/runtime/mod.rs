//! The runtime: builds workers and executors from the plan and runs them. Local mode runs all
//! `topology.workers` workers in this process; tuples crossing workers take the transfer thread →
//! link → receive thread path that processes and hosts use (only the link differs).

pub mod acker;
pub mod collector;
pub mod executor;
pub mod message;
pub mod metrics;
pub mod open_trees;
pub mod routing;
pub mod worker;

use crate::components::{catalog, Bolt, Spout, TaskContext, Waker};
use crate::net::link::Link;
use crate::placement::Placement;
use crate::topology::model::Topology;
use crate::topology::plan::{Plan, ACKER_ID};
use collector::Emitter;
use executor::{BoltExecutor, ExecutorReport, RunControl, SpoutExecutor, TaskSlot};
use message::{Message, Transfer};
use metrics::{ComponentReport, Histogram, LatencyReport, TaskReport, TaskStats};
use routing::{Outbox, RouteTable, Router, SinkSpec};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Default `topology.max.spout.pending` when acking is on and none is set: bounds the lines a
/// replaying spout keeps, and so memory.
pub const DEFAULT_MAX_PENDING: u64 = 4096;

/// Both ends of a worker's incoming frame channel.
type FrameChannel = (
    crossbeam_channel::Sender<Vec<u8>>,
    crossbeam_channel::Receiver<Vec<u8>>,
);

/// What a finished run reports.
#[derive(Debug)]
pub struct RunReport {
    pub components: Vec<ComponentReport>,
    pub elapsed: Duration,
    /// Tuples given up after their retries.
    pub lost: u64,
    /// Whether acking was on.
    pub acking: bool,
}

/// A running topology: stats readable while it runs, a stop switch, and the final join.
pub struct Running {
    pub control: Arc<RunControl>,
    pub stats: BTreeMap<u32, (String, Arc<TaskStats>)>,
    handles: Vec<(String, JoinHandle<anyhow::Result<ExecutorReport>>)>,
    /// Transfer threads: joined at the end so every frame for other workers is sent.
    plumbing: Vec<JoinHandle<()>>,
    plan: Arc<Plan>,
    topology: Arc<Topology>,
    started: Instant,
    done: crossbeam_channel::Receiver<()>,
}

/// How workers in other processes are reached. Local mode has none.
pub trait Network {
    /// Deliver frames that other processes send to local worker `worker` into `into`.
    fn listen(&self, worker: usize, into: crossbeam_channel::Sender<Vec<u8>>)
        -> anyhow::Result<()>;
    /// A link from local worker `from` to worker `to`, which runs in another process.
    fn connect(&self, from: usize, to: usize) -> anyhow::Result<Box<dyn Link>>;
}

/// Local mode: every worker is in this process.
pub struct InProcess;

impl Network for InProcess {
    fn listen(
        &self,
        _worker: usize,
        _into: crossbeam_channel::Sender<Vec<u8>>,
    ) -> anyhow::Result<()> {
        Ok(())
    }
    fn connect(&self, from: usize, to: usize) -> anyhow::Result<Box<dyn Link>> {
        anyhow::bail!("worker {to} is not in this process (asked by worker {from})")
    }
}

/// Start a topology in local mode: `topology.workers` workers, all in this process.
pub fn start_local(topology: Arc<Topology>) -> anyhow::Result<Running> {
    let plan = Plan::new(&topology);
    let placement = Placement::round_robin(&plan, topology.config.workers() as usize);
    let all: Vec<usize> = (0..placement.workers).collect();
    start(topology, &placement, &all, &InProcess)
}

/// Start the executors of the `local` workers of a placement; tuples for other workers go
/// through `net`. The runtime does not care whether a peer worker is a thread, a process or
/// another host: only the links differ.
pub fn start(
    topology: Arc<Topology>,
    placement: &Placement,
    local: &[usize],
    net: &dyn Network,
) -> anyhow::Result<Running> {
    let plan = Arc::new(Plan::new(&topology));
    let config = &topology.config;
    let workers = placement.workers.max(1);
    let executors = plan.executors();
    let worker_of_exec = &placement.worker_of_exec;
    anyhow::ensure!(
        worker_of_exec.len() == executors.len() && worker_of_exec.iter().all(|&w| w < workers),
        "placement does not match the topology's {} executors",
        executors.len()
    );
    let is_local = |w: usize| local.contains(&w);
    let max_task = plan.total_tasks() as usize;

    let receive_size = config.executor_receive_buffer_size().max(2);
    let inboxes: Vec<(
        crossbeam_channel::Sender<Message>,
        crossbeam_channel::Receiver<Message>,
    )> = executors
        .iter()
        .map(|_| crossbeam_channel::bounded(receive_size))
        .collect();
    let mut exec_of_task = vec![usize::MAX; max_task + 1];
    for (i, (_, r)) in executors.iter().enumerate() {
        for t in r.clone() {
            exec_of_task[t as usize] = i;
        }
    }
    let transfers: Vec<(
        crossbeam_channel::Sender<Transfer>,
        crossbeam_channel::Receiver<Transfer>,
    )> = (0..workers)
        .map(|_| crossbeam_channel::bounded(config.transfer_buffer_size().max(2)))
        .collect();

    // Per-worker route tables: local executors directly, other workers through the transfer queue.
    let tables: Vec<RouteTable> = (0..workers)
        .map(|w| {
            let mut sinks = Vec::new();
            let mut sink_of_exec = vec![0usize; executors.len()];
            for (i, sink) in sink_of_exec.iter_mut().enumerate() {
                if worker_of_exec[i] == w {
                    *sink = sinks.len();
                    sinks.push(SinkSpec::Local(inboxes[i].0.clone()));
                }
            }
            let mut sink_of_worker = vec![0usize; workers];
            for (other, sink) in sink_of_worker.iter_mut().enumerate() {
                if other != w {
                    *sink = sinks.len();
                    sinks.push(SinkSpec::Remote {
                        worker: other,
                        transfer: transfers[w].0.clone(),
                    });
                }
            }
            let task_sink = exec_of_task
                .iter()
                .map(|&e| {
                    if e == usize::MAX {
                        0
                    } else if worker_of_exec[e] == w {
                        sink_of_exec[e]
                    } else {
                        sink_of_worker[worker_of_exec[e]]
                    }
                })
                .collect();
            RouteTable { task_sink, sinks }
        })
        .collect();

    // Links and the worker threads of the local workers.
    let mut plumbing = Vec::new();
    let mut incoming: BTreeMap<usize, FrameChannel> = BTreeMap::new();
    for &w in local {
        let (tx, rx) = crossbeam_channel::bounded::<Vec<u8>>(worker::LINK_BUFFERS);
        net.listen(w, tx.clone())?;
        incoming.insert(w, (tx, rx));
    }
    for &w in local {
        let mut links: Vec<Option<Box<dyn Link>>> = Vec::new();
        for to in 0..workers {
            links.push(if to == w {
                None
            } else if let Some((tx, _)) = incoming.get(&to) {
                Some(Box::new(crate::net::link::MemoryLink(tx.clone())))
            } else {
                Some(net.connect(w, to)?)
            });
        }
        plumbing.push(worker::spawn_transfer(w, transfers[w].1.clone(), links)?);
        let inbox_of_task: Vec<Option<usize>> = exec_of_task
            .iter()
            .map(|&e| (e != usize::MAX && worker_of_exec[e] == w).then_some(e))
            .collect();
        let rx = incoming
            .get(&w)
            .map(|(_, rx)| rx.clone())
            .ok_or_else(|| anyhow::anyhow!("worker {w} has no receive channel"))?;
        // Receive threads end when every link into them is gone; they are not joined, since a
        // network listener may hold a link until the process exits.
        drop(worker::spawn_receive(
            w,
            rx,
            inbox_of_task,
            inboxes.iter().map(|(tx, _)| tx.clone()).collect(),
            config.receiver_buffer_size(),
        )?);
    }
    drop(incoming);
    drop(transfers);

    // Upstream task counts for end of input: every task of a component says it to each of
    // its downstream tasks.
    let mut eos_expected = vec![0u32; max_task + 1];
    for c in &plan.components {
        let senders = c.tasks.end() - c.tasks.start() + 1;
        for d in routing::downstream_tasks(&topology, &plan, &c.id) {
            if let Some(e) = eos_expected.get_mut(d as usize) {
                *e += senders;
            }
        }
    }

    let control = Arc::new(RunControl {
        stop: Default::default(),
    });
    let acking = plan.ackers > 0;
    let max_pending = config
        .max_spout_pending()
        .or(acking.then_some(DEFAULT_MAX_PENDING))
        .map(|v| v as usize);
    let timeout = (acking && config.message_timeouts_enabled()).then(|| config.message_timeout());
    let mut stats = BTreeMap::new();
    let mut handles = Vec::new();
    let (done_tx, done) = crossbeam_channel::bounded(executors.len().max(1));

    for (i, (component_id, range)) in executors.iter().enumerate() {
        let w = worker_of_exec[i];
        if !is_local(w) {
            continue;
        }
        let local_tasks: Vec<u32> = executors
            .iter()
            .enumerate()
            .filter(|(j, _)| worker_of_exec[*j] == w)
            .flat_map(|(_, (_, r))| r.clone())
            .collect();
        let spec = topology.component(component_id);
        let mut cfg = topology.config.clone();
        if let Some(s) = spec {
            for (k, v) in &s.config {
                cfg.set(
                    k.clone(),
                    v.clone(),
                    crate::config::Origin::Topology {
                        path: topology.base_dir.clone(),
                        line: 0,
                    },
                );
            }
        }
        let cfg = Arc::new(cfg);
        let first = *plan
            .component(component_id)
            .map(|c| c.tasks.start())
            .unwrap_or(&1);
        let inbox_tx = inboxes[i].0.clone();
        let make_slot = |task: u32, stats: &mut BTreeMap<u32, (String, Arc<TaskStats>)>| {
            let st = Arc::new(TaskStats::default());
            stats.insert(task, (component_id.to_string(), st.clone()));
            let tx = inbox_tx.clone();
            let ctx = TaskContext {
                topology: topology.clone(),
                plan: plan.clone(),
                component: component_id.to_string(),
                task_id: task,
                task_index: task - first,
                config: cfg.clone(),
                waker: Waker::new(move || {
                    let _ = tx.try_send(Message::Wake);
                }),
            };
            let router = Router::new(&topology, &plan, component_id, task, &local_tasks);
            let emitter = Emitter::new(task, router, st, component_id.to_string(), task_seed(task));
            (ctx, emitter)
        };
        let outbox = Outbox::new(tables[w].clone());
        let inbox = inboxes[i].1.clone();
        let name = format!("{component_id}-{}", range.start());
        let done_tx = done_tx.clone();
        let is_spout = spec.is_some_and(|s| s.is_spout());
        let handle = if is_spout {
            let Some(spec) = spec else { continue };
            let mut tasks: Vec<TaskSlot<dyn Spout>> = Vec::new();
            for task in range.clone() {
                let (ctx, emitter) = make_slot(task, &mut stats);
                tasks.push(TaskSlot {
                    component: catalog::spout(spec, task - first, &topology.base_dir)?,
                    ctx,
                    emitter,
                    eos_expected: 0,
                    eos_seen: Default::default(),
                    finished: false,
                });
            }
            let exec = SpoutExecutor {
                inbox,
                outbox,
                tasks,
                first_task: *range.start(),
                max_pending,
                timeout,
                control: control.clone(),
                ack_now: Vec::new(),
                clock: std::time::Instant::now(),
            };
            spawn_named(name, done_tx, move || exec.run())?
        } else {
            let mut tasks: Vec<TaskSlot<dyn Bolt>> = Vec::new();
            for task in range.clone() {
                let (ctx, emitter) = make_slot(task, &mut stats);
                let component: Box<dyn Bolt> = if *component_id == ACKER_ID {
                    Box::new(acker::Acker::default())
                } else {
                    let Some(spec) = spec else { continue };
                    catalog::bolt(spec, &topology.base_dir)?
                };
                tasks.push(TaskSlot {
                    component,
                    ctx,
                    emitter,
                    eos_expected: eos_expected[task as usize],
                    eos_seen: Default::default(),
                    finished: false,
                });
            }
            let tick = if *component_id == ACKER_ID {
                timeout
            } else {
                spec.and_then(|s| s.tick).or_else(|| config.tick_freq())
            };
            let exec = BoltExecutor {
                inbox,
                outbox,
                tasks,
                first_task: *range.start(),
                tick,
            };
            spawn_named(name, done_tx, move || exec.run())?
        };
        handles.push((component_id.to_string(), handle));
    }
    drop(inboxes);
    drop(tables);
    Ok(Running {
        control,
        stats,
        handles,
        plumbing,
        plan,
        topology,
        started: Instant::now(),
        done,
    })
}

/// The seed of a task's root and edge ids: fresh entropy on every start. Seeding from the task
/// id alone made a restarted task draw the same ids again, so it could reuse the root of a
/// tree an acker still held and corrupt that tree's XOR (Storm's ids are random too).
pub(crate) fn task_seed(task: u32) -> u64 {
    rand::random::<u64>() ^ u64::from(task)
}

fn spawn_named(
    name: String,
    done: crossbeam_channel::Sender<()>,
    f: impl FnOnce() -> anyhow::Result<ExecutorReport> + Send + 'static,
) -> std::io::Result<JoinHandle<anyhow::Result<ExecutorReport>>> {
    std::thread::Builder::new().name(name).spawn(move || {
        // Signals on the way out even when `f` panics: `wait` then joins the thread and fails
        // the run instead of waiting for a signal that never comes.
        let _signal = SignalOnExit(done);
        f()
    })
}

/// Tells `Running::wait` that an executor thread is ending, however it ends.
struct SignalOnExit(crossbeam_channel::Sender<()>);

impl Drop for SignalOnExit {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// The message of a panic, as the executor thread's join hands it back.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

impl Running {
    /// Ask the spouts to stop and the topology to drain (signals, `--duration`).
    pub fn stop(&self) {
        self.control.stop.store(true, Ordering::Relaxed);
    }

    /// Wait until every executor has ended, or one has failed (returned at once).
    pub fn wait(mut self) -> anyhow::Result<RunReport> {
        let mut latency: BTreeMap<String, Histogram> = BTreeMap::new();
        let mut lost = 0;
        let total = self.handles.len();
        let mut signalled = 0;
        while signalled < total {
            let _ = self.done.recv();
            signalled += 1;
            // A thread signals just before it ends: wait until every signalled one is joinable,
            // or a failing executor could be missed while the others wait forever.
            while total - self.handles.len()
                + self.handles.iter().filter(|(_, h)| h.is_finished()).count()
                < signalled
            {
                std::thread::yield_now();
            }
            // Join whatever has finished; a failure ends the run at once.
            let mut i = 0;
            while i < self.handles.len() {
                if self.handles[i].1.is_finished() {
                    let (component, h) = self.handles.swap_remove(i);
                    match h.join() {
                        Ok(Ok(report)) => {
                            latency
                                .entry(component)
                                .or_default()
                                .merge(&report.complete_latency);
                        }
                        Ok(Err(e)) => return Err(e.context(format!("component `{component}`"))),
                        Err(p) => anyhow::bail!(
                            "component `{component}` crashed: {}",
                            panic_message(p.as_ref())
                        ),
                    }
                } else {
                    i += 1;
                }
            }
        }
        for h in self.plumbing.drain(..) {
            let _ = h.join();
        }
        let elapsed = self.started.elapsed();
        for (_, st) in self.stats.values() {
            lost += st.lost.load(Ordering::Relaxed);
        }
        Ok(RunReport {
            components: self.reports(&latency, elapsed),
            elapsed,
            lost,
            acking: self.plan.ackers > 0,
        })
    }

    fn reports(
        &self,
        latency: &BTreeMap<String, Histogram>,
        elapsed: Duration,
    ) -> Vec<ComponentReport> {
        let mut out = Vec::new();
        for c in &self.plan.components {
            let kind = if c.id == ACKER_ID {
                "acker"
            } else if self.topology.component(&c.id).is_some_and(|s| s.is_spout()) {
                "spout"
            } else {
                "bolt"
            };
            let tasks: Vec<(u32, &Arc<TaskStats>)> = c
                .tasks
                .clone()
                .filter_map(|t| self.stats.get(&t).map(|(_, s)| (t, s)))
                .collect();
            let sum = |f: fn(&TaskStats) -> u64| tasks.iter().map(|(_, s)| f(s)).sum::<u64>();
            let executed = sum(|s| s.executed.load(Ordering::Relaxed));
            let exec_ns = sum(|s| s.execute_ns.load(Ordering::Relaxed));
            out.push(ComponentReport {
                id: c.id.clone(),
                kind,
                tasks: tasks.len() as u32,
                executors: c.executors.len() as u32,
                emitted: sum(|s| s.emitted.load(Ordering::Relaxed)),
                transferred: sum(|s| s.transferred.load(Ordering::Relaxed)),
                executed,
                acked: sum(|s| s.acked.load(Ordering::Relaxed)),
                failed: sum(|s| s.failed.load(Ordering::Relaxed)),
                replayed: sum(|s| s.replayed.load(Ordering::Relaxed)),
                timed_out: sum(|s| s.timed_out.load(Ordering::Relaxed)),
                lost: sum(|s| s.lost.load(Ordering::Relaxed)),
                errors: sum(|s| s.errors.load(Ordering::Relaxed)),
                dropped: sum(|s| s.dropped.load(Ordering::Relaxed)),
                execute_latency_ms: if executed > 0 {
                    exec_ns as f64 / executed as f64 / 1e6
                } else {
                    0.0
                },
                capacity: exec_ns as f64
                    / (elapsed.as_nanos().max(1) as f64 * c.executors.len().max(1) as f64),
                queue_peak: sum(|s| s.queue_peak.load(Ordering::Relaxed)),
                pending_peak: tasks
                    .iter()
                    .map(|(_, s)| s.pending_peak.load(Ordering::Relaxed))
                    .max()
                    .unwrap_or(0),
                complete_latency_ms: latency.get(&c.id).and_then(LatencyReport::of),
                metrics: {
                    let mut total = metrics::UserMetrics::default();
                    for (_, s) in &tasks {
                        total.merge(&s.user.lock().unwrap_or_else(|e| e.into_inner()));
                    }
                    if total.dropped > 0 {
                        tracing::warn!(
                            "{}: {} update(s) of user metrics beyond the first {} names were dropped",
                            c.id,
                            total.dropped,
                            metrics::MAX_USER_METRICS
                        );
                    }
                    total.by_name
                },
                per_task: tasks
                    .iter()
                    .map(|(t, s)| TaskReport {
                        task: *t,
                        emitted: s.emitted.load(Ordering::Relaxed),
                        transferred: s.transferred.load(Ordering::Relaxed),
                        executed: s.executed.load(Ordering::Relaxed),
                        acked: s.acked.load(Ordering::Relaxed),
                        failed: s.failed.load(Ordering::Relaxed),
                    })
                    .collect(),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    /// The first ids task 2 of a word count draws, started as the runtime starts it.
    fn first_ids_of_a_start() -> Vec<u64> {
        let topology = crate::cluster::simulation::tests::wordcount(&[]);
        let plan = Plan::new(&topology);
        let router = Router::new(&topology, &plan, "count", 2, &[2]);
        let stats = Arc::new(TaskStats::default());
        let mut em = Emitter::new(2, router, stats, "count".into(), task_seed(2));
        (0..4).map(|_| em.rng.next_u64()).collect()
    }

    /// A restarted task must not draw the root and edge ids it drew before: the acker may
    /// still hold trees with those roots.
    #[test]
    fn two_starts_of_the_same_task_draw_different_ids() {
        assert_ne!(first_ids_of_a_start(), first_ids_of_a_start());
    }
}
