//! The UI's view of a local run (`storm run --ui`): one topology, read straight from its
//! tasks' counters; activate and deactivate pause the spouts, kill drains and ends the run,
//! rebalance re-places its tasks (the runtime's `Rebalancer`).

use super::{
    components_of, Action, ErrorView, Source, SupervisorView, TaskFigures, TaskView, TopologyView,
};
use crate::model::plan::Plan;
use crate::runtime::executor::RunControl;
use crate::runtime::metrics::TaskStats;
use crate::runtime::rebalance::Rebalancer;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A running local topology as the UI sees it.
pub(crate) struct LocalRun {
    id: String,
    stats: BTreeMap<u32, (String, Arc<TaskStats>)>,
    control: Arc<RunControl>,
    started: Instant,
    /// The run's layout (it changes with each rebalance) and the way to rebalance it.
    rebalancer: Rebalancer,
    /// A kill is waiting its time: the topology shows KILLED and takes no other operation.
    killing: std::sync::atomic::AtomicBool,
    /// The log levels set by name (`/logconfig`, `storm set_log_level --ui`).
    log_levels: std::sync::Mutex<crate::log_config::LogConfig>,
}

impl LocalRun {
    pub(crate) fn new(
        stats: BTreeMap<u32, (String, Arc<TaskStats>)>,
        control: Arc<RunControl>,
        rebalancer: Rebalancer,
    ) -> LocalRun {
        // Storm's ids are `name-counter-launchtime`; one local topology is counter 1.
        let name = &rebalancer.layout().topology.name;
        let id = format!("{name}-1-{}", crate::cluster::nimbus::now_secs());
        LocalRun {
            id,
            stats,
            control,
            started: Instant::now(),
            rebalancer,
            killing: std::sync::atomic::AtomicBool::new(false),
            log_levels: Default::default(),
        }
    }

    /// The figures of every task, read now.
    fn figures(&self) -> TaskFigures {
        let layout = self.rebalancer.layout();
        let mut worker_of_task = BTreeMap::new();
        let executors = layout.plan.executors();
        for ((_, range), w) in executors.iter().zip(&layout.placement.worker_of_exec) {
            for t in range.clone() {
                worker_of_task.insert(t, *w);
            }
        }
        let mut f = TaskFigures::default();
        for (task, (_, st)) in &self.stats {
            let worker = format!("local:{}", worker_of_task.get(task).copied().unwrap_or(0));
            f.tasks
                .insert(*task, task_view(*task, &worker, st, &layout.plan));
            let recent = st.recent_errors.lock().unwrap_or_else(|e| e.into_inner());
            f.errors.insert(
                *task,
                recent
                    .iter()
                    .map(|(error, time_secs)| ErrorView {
                        error: error.clone(),
                        time_secs: *time_secs,
                        worker: worker.clone(),
                    })
                    .collect(),
            );
            drop(recent);
            let user = st.user.lock().unwrap_or_else(|e| e.into_inner());
            let mut copy = crate::runtime::metrics::UserMetrics::default();
            copy.merge(&user);
            f.metrics.insert(*task, copy);
            f.lag.insert(*task, st.lag());
        }
        f
    }

    fn status(&self) -> &'static str {
        if self.control.stop.load(Relaxed) || self.killing.load(Relaxed) {
            "KILLED"
        } else if self.control.rebalancing.load(Relaxed) {
            "REBALANCING"
        } else if self.control.paused.load(Relaxed) {
            "INACTIVE"
        } else {
            "ACTIVE"
        }
    }
}

/// One task's counters as they are now.
fn task_view(task: u32, worker: &str, st: &TaskStats, plan: &Plan) -> TaskView {
    TaskView {
        task,
        worker: worker.to_string(),
        supervisor: String::new(),
        emitted: st.emitted(),
        transferred: st.transferred(),
        executed: st.executed(),
        acked: st.acked(),
        failed: st.failed.load(Relaxed),
        execute_ns: st.execute_ns.load(Relaxed),
        complete_us: st.complete_us.load(Relaxed),
        completes_sampled: st.completes_sampled.load(Relaxed),
        errors: st.errors.load(Relaxed),
        dropped: st.dropped.load(Relaxed),
        streams: st
            .stream_counts()
            .into_iter()
            .map(|(id, e, t)| (plan.stream_name(id).to_string(), (e, t)))
            .collect(),
    }
}

/// Lines a tap holds for a slow reader before it drops new ones.
const TAP_BUFFER: usize = 10_000;

/// Listen to the emits of `component` (every task of it): JSON lines on the returned channel,
/// which ends when the run does. `stream` must be one the component declares.
fn tap(
    plan: &Plan,
    stats: &BTreeMap<u32, (String, Arc<TaskStats>)>,
    component: &str,
    stream: Option<&str>,
    every: u64,
) -> anyhow::Result<crossbeam_channel::Receiver<String>> {
    let Some(c) = plan.component(component) else {
        let ids: Vec<&str> = plan.components.iter().map(|c| c.id.as_str()).collect();
        let hint = crate::syntax::suggest::suggest(component, ids.iter().copied())
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        anyhow::bail!("no component `{component}`{hint}");
    };
    anyhow::ensure!(
        !component.starts_with("__"),
        "`{component}` is a system component: it emits no tuples of the topology to tap"
    );
    let names: Vec<String> = plan.stream_names.clone();
    let stream_id = match stream {
        None => None,
        Some(s) => Some(plan.stream_id(s).ok_or_else(|| {
            let hint = crate::syntax::suggest::suggest(s, names.iter().map(String::as_str))
                .map(|x| format!("; did you mean `{x}`?"))
                .unwrap_or_default();
            anyhow::anyhow!("no stream `{s}` in this topology{hint}")
        })?),
    };
    let names = Arc::new(names);
    let (tx, rx) = crossbeam_channel::bounded(TAP_BUFFER);
    for task in c.tasks.clone() {
        if let Some((_, st)) = stats.get(&task) {
            st.taps.add(crate::runtime::tap::Listener {
                stream: stream_id,
                stream_names: names.clone(),
                component: component.to_string(),
                every: every.max(1),
                seen: 0,
                tx: tx.clone(),
            });
        }
    }
    Ok(rx)
}

impl Source for LocalRun {
    fn log_config(&self, _id: &str) -> anyhow::Result<crate::log_config::LogConfig> {
        let levels = self.log_levels.lock().unwrap_or_else(|e| e.into_inner());
        Ok(levels.live(crate::log_config::now_ms()))
    }

    /// The whole process is the topology: its log filter changes at once.
    fn change_log_config(
        &self,
        _id: &str,
        changes: &[crate::log_config::Change],
    ) -> anyhow::Result<crate::log_config::LogConfig> {
        let now = crate::log_config::now_ms();
        let mut levels = self.log_levels.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = levels.live(now);
        next.apply(changes, now);
        crate::logging::set_named_levels(&next.directives(now))?;
        tracing::info!("log levels set: {}", next.describe(now));
        *levels = next.clone();
        Ok(next)
    }

    fn tap(
        &self,
        _id: &str,
        component: &str,
        stream: Option<&str>,
        every: u64,
    ) -> anyhow::Result<crossbeam_channel::Receiver<String>> {
        tap(
            &self.rebalancer.layout().plan,
            &self.stats,
            component,
            stream,
            every,
        )
    }

    fn supervisors(&self) -> Vec<SupervisorView> {
        let workers = self.rebalancer.layout().placement.workers;
        vec![SupervisorView {
            id: "local".into(),
            host: "local".into(),
            uptime_secs: self.started.elapsed().as_secs(),
            slots_total: workers,
            slots_used: workers,
        }]
    }

    fn topologies(&self) -> Vec<TopologyView> {
        let layout = self.rebalancer.layout();
        let topology = &layout.topology;
        vec![TopologyView {
            id: self.id.clone(),
            name: topology.name.clone(),
            status: self.status().into(),
            uptime: self.started.elapsed(),
            workers: layout.placement.workers,
            msg_timeout_secs: topology.config.message_timeout().as_secs(),
            debug: topology.config.debug(),
            configuration: super::shown_configuration(&topology.config),
            components: components_of(topology, &layout.plan, &self.figures()),
        }]
    }

    fn act(&self, _id: &str, action: &Action) -> anyhow::Result<()> {
        if self.control.stop.load(Relaxed) || self.killing.load(Relaxed) {
            return Err(crate::model::rebalance::Invalid(
                "the topology is being killed: it takes no other operation".into(),
            )
            .into());
        }
        if matches!(action, Action::Activate | Action::Deactivate)
            && self.control.rebalancing.load(Relaxed)
        {
            return Err(crate::model::rebalance::Invalid(
                "the topology is rebalancing: it returns to its status before when the \
                 rebalance ends"
                    .into(),
            )
            .into());
        }
        match action {
            Action::Activate => self.control.paused.store(false, Relaxed),
            Action::Deactivate => self.control.paused.store(true, Relaxed),
            Action::Kill { wait_secs } => {
                // Storm's kill: deactivate, wait, then end (here: drain and end the run).
                self.killing.store(true, Relaxed);
                self.control.paused.store(true, Relaxed);
                let control = self.control.clone();
                let wait = Duration::from_secs(*wait_secs);
                std::thread::Builder::new()
                    .name("ui-kill".into())
                    .spawn(move || {
                        std::thread::sleep(wait);
                        control.stop.store(true, Relaxed);
                    })?;
            }
            Action::Rebalance { wait_secs, options } => {
                let wait = Duration::from_secs(*wait_secs);
                self.rebalancer.start(options, wait)?;
            }
        }
        Ok(())
    }
}
