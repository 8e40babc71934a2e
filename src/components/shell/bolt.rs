//! The shell bolt (Storm's `ShellBolt`): each input tuple goes to the child under a string id
//! and stays in flight until the child acks or fails it; the child's messages arrive through the
//! reader thread and are applied in `execute` and `poll`. Asynchronous like Storm's: the
//! executor waits on the child only for back-pressure (`topology.shellbolt.max.pending`), in
//! `finish`, and for at most 1 ms at a time while answering a child that asks for task ids
//! (`converse`).

use super::lifecycle::{self, RestartPolicy, Settings};
use super::process::{ChildEvent, ShellProcess};
use super::protocol::{self, ChildMessage, Command, Emit};
use super::{log_child_message, resolve_cwd, UnknownCommands};
use crate::components::{Bolt, BoltCollector, FatalError, TaskContext};
use crate::model::plan::SYSTEM_TASK;
use crate::model::{Component, DEFAULT_STREAM};
use crate::slots::Slots;
use crate::tuple::Tuple;
use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A bolt whose work is done by a multilang child process.
pub struct ShellBolt {
    command: Vec<String>,
    cwd: PathBuf,
    outputs: BTreeMap<String, Vec<String>>,
    task: Option<Prepared>,
    child: Option<ShellProcess>,
    /// Tuples sent to the child and not yet acked or failed, by id (Storm's `_inputs`). A
    /// slot table rather than a hash map: the child answers nearly in the order it was sent,
    /// so the table is walked in order, where hashed ids missed the cache on every answer
    /// (three quarters of the time spent applying the child's messages).
    inflight: Slots<Tuple>,
    /// The tag of the next id: a sequence, so a reused slot gets a different id.
    next_tag: u32,
    policy: RestartPolicy,
    /// When the first heartbeat since the child's last message was sent: silence is measured
    /// from there, so time the executor itself spent blocked (back-pressure) never counts.
    awaiting_since: Option<Instant>,
    last_heartbeat: Instant,
    fatal: Option<String>,
    errors: u64,
    /// Task-id answers sent so far.
    answers: u64,
    /// How long [`ShellBolt::converse`] watches for the child's next message before sleeping.
    spin: Duration,
    unknown: UnknownCommands,
    /// `finish: true`: the child is told of the end of input (see [`FINISH_STREAM`]).
    tell_finish: bool,
}

/// The end-of-input extension: after its last input a shell bolt with `finish: true` gets one
/// tuple on this stream from this component, and the end of the run waits for its answer.
const FINISH_STREAM: &str = "__finish";
const FINISH_COMPONENT: &str = "__system";

/// The longest [`ShellBolt::poll`] stays answering a child that asks for task ids.
const CONVERSE_FOR: Duration = Duration::from_millis(1);
/// ... provided its next message comes within this.
const CONVERSE_GAP: Duration = Duration::from_micros(300);
/// ... watching for it this long before going to sleep.
const CONVERSE_SPIN: Duration = Duration::from_micros(50);

struct Prepared {
    ctx: TaskContext,
    settings: Settings,
    label: String,
    /// The values of a tick tuple as Storm gives them: `[tickSecs]`.
    tick_values: Vec<crate::tuple::Value>,
}

impl ShellBolt {
    /// A shell bolt for `component`; the child starts in `prepare`. A relative `cwd` is taken
    /// from `base_dir` (the topology file's folder), which is also the default.
    pub fn new(component: &Component, base_dir: &Path) -> ShellBolt {
        let now = Instant::now();
        ShellBolt {
            command: component.command.clone().unwrap_or_default(),
            cwd: resolve_cwd(component.cwd.as_deref(), base_dir),
            outputs: component.outputs.clone(),
            task: None,
            child: None,
            inflight: Slots::default(),
            next_tag: 1,
            policy: RestartPolicy::default(),
            awaiting_since: None,
            last_heartbeat: now,
            fatal: None,
            errors: 0,
            answers: 0,
            spin: CONVERSE_SPIN,
            unknown: UnknownCommands::default(),
            tell_finish: component.finish,
        }
    }

    /// Send one tuple to the child (waiting while too many are pending), as from its own
    /// component and stream, or from the (component, stream) given in `names`.
    fn hand_to_child(
        &mut self,
        input: &Tuple,
        names: Option<(&str, &str)>,
        out: &mut dyn BoltCollector,
    ) -> anyhow::Result<()> {
        self.ensure_child(out, true)?;

        self.pump(out)?;
        // Back-pressure: at most `topology.shellbolt.max.pending` tuples queued to the child.
        loop {
            self.ensure_child(out, true)?;
            let max = self.prepared()?.settings.max_pending;
            match &mut self.child {
                Some(c) if c.queued() >= max => {
                    c.flush();
                    if c.queued() >= max {
                        self.wait_event(out, Duration::from_millis(5))?;
                    }
                }
                _ => break,
            }
        }
        let (Some(p), Some(child)) = (&self.task, &mut self.child) else {
            return Err(FatalError("shell bolt used before prepare".into()).into());
        };
        let tag = self.next_tag;
        // Ids stay non-zero and never repeat within 2^32 tuples.
        self.next_tag = tag.checked_add(1).unwrap_or(1);
        let id = self.inflight.insert(tag, input.clone());
        // Storm's ticks come from task -1 of `__system`.
        let task = if input.source_task == SYSTEM_TASK {
            -1
        } else {
            i64::from(input.source_task)
        };
        // Storm's tick tuples carry the tick frequency in seconds; ours come bare.
        let values = if input.is_tick() && input.values.is_empty() {
            &p.tick_values[..]
        } else {
            &input.values[..]
        };
        child.send_tuple(|buf| {
            protocol::write_bolt_tuple(
                buf,
                id,
                names.map_or_else(|| p.ctx.component_of_task(input.source_task), |n| n.0),
                names.map_or_else(|| p.ctx.stream_name(input.stream), |n| n.1),
                task,
                values,
            )
        });
        // Tuples go out in batches, unless the child has nothing else to work on (every
        // tuple in flight is still here): then at once.
        if child.wants_flush() || self.inflight.len() <= child.queued() {
            child.flush();
        }
        Ok(())
    }

    /// The end-of-input extension: one tuple on `__finish` from `__system` (task -1, no
    /// values) after the last input; the child answers with its last emits and an ack.
    fn send_finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let marker = Tuple::new(
            Default::default(),
            SYSTEM_TASK,
            crate::model::plan::streams::DEFAULT,
        );
        self.hand_to_child(&marker, Some((FINISH_COMPONENT, FINISH_STREAM)), out)
    }

    /// `error` commands the child sent so far.
    pub fn error_count(&self) -> u64 {
        self.errors
    }

    /// Tuples sent to the child and not yet acked or failed.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// The running child's process id.
    pub fn child_pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.pid())
    }

    fn prepared(&self) -> anyhow::Result<&Prepared> {
        self.task
            .as_ref()
            .ok_or_else(|| FatalError("shell bolt used before prepare".into()).into())
    }

    fn start_child(&mut self) -> Result<(), String> {
        let Some(p) = &self.task else {
            return Err("shell bolt used before prepare".into());
        };
        let child = lifecycle::start(
            &self.command,
            &self.cwd,
            &p.ctx,
            &p.label,
            &p.settings,
            lifecycle::Kind::Bolt,
        )?;
        let now = Instant::now();
        self.child = Some(child);
        self.awaiting_since = None;
        self.last_heartbeat = now;
        Ok(())
    }

    /// Make sure a child runs, restarting one that failed. With `block`, waits for the back-off;
    /// without, returns `false` while a restart is not yet due.
    fn ensure_child(&mut self, out: &mut dyn BoltCollector, block: bool) -> anyhow::Result<bool> {
        loop {
            if let Some(f) = &self.fatal {
                return Err(FatalError(f.clone()).into());
            }
            if self.child.is_some() {
                return Ok(true);
            }
            if !self.policy.take_restart(block) {
                return Ok(false);
            }
            match self.start_child() {
                Ok(()) => {
                    let label = &self.prepared()?.label;
                    tracing::warn!("{label}: child restarted");
                }
                Err(e) => self.fault(format!("restart failed: {e}"), out)?,
            }
        }
    }

    /// Report a broken child, fail its in-flight tuples (so they are replayed), stop it and
    /// schedule a restart, or give up (fatal) when it keeps failing.
    fn fault(&mut self, reason: String, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let label = self.prepared()?.label.clone();
        let msg = format!("{label}: {reason}");
        tracing::error!("{msg}");
        out.report_error(&msg);
        if let Some(mut child) = self.child.take() {
            child.shutdown();
        }
        // Failed in the order they were sent (the tag is a sequence).
        let mut failed = self.inflight.drain();
        failed.sort_unstable_by_key(|(id, _)| *id >> 32);
        for (_, tuple) in &failed {
            out.fail(tuple);
        }
        match self.policy.failed(Instant::now()) {
            Ok(delay) => {
                tracing::warn!(
                    "{label}: {} in-flight tuple(s) failed; restarting the child in {}",
                    failed.len(),
                    humantime::format_duration(delay)
                );
                Ok(())
            }
            Err(why) => {
                let fatal = format!("{label}: {why}; last failure: {reason}");
                self.fatal = Some(fatal.clone());
                Err(FatalError(fatal).into())
            }
        }
    }

    fn handle(&mut self, event: ChildEvent, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.awaiting_since = None;
        let problem = match event {
            ChildEvent::Message(Ok(ChildMessage::Command(cmd))) => match self.apply(cmd, out) {
                Ok(()) => return Ok(()),
                Err(p) => p,
            },
            ChildEvent::Message(Ok(ChildMessage::Pid(pid))) => {
                format!(
                    "protocol error: unexpected pid message {{\"pid\": {pid}}} after the handshake"
                )
            }
            ChildEvent::Message(Err(e)) => format!("protocol error: {e}"),
            ChildEvent::Eof => match self.child.as_mut() {
                Some(child) => lifecycle::death_reason(child, "unexpectedly"),
                None => return Ok(()),
            },
        };
        self.fault(problem, out)
    }

    /// Apply one command; `Err` is a protocol error.
    fn apply(&mut self, cmd: Command, out: &mut dyn BoltCollector) -> Result<(), String> {
        match cmd {
            Command::Sync => Ok(()),
            Command::Ack { id } => {
                let input = self.take_input(&id, "ack")?;
                out.ack(&input);
                self.policy.progressed();
                Ok(())
            }
            Command::Fail { id } => {
                let input = self.take_input(&id, "fail")?;
                out.fail(&input);
                self.policy.progressed();
                Ok(())
            }
            Command::Log { msg, level } => {
                if let Some(p) = &self.task {
                    log_child_message(&p.label, level, &msg);
                }
                Ok(())
            }
            Command::Error { msg } => {
                self.errors += 1;
                let label = self
                    .task
                    .as_ref()
                    .map(|p| p.label.as_str())
                    .unwrap_or("shell");
                out.report_error(&format!("{label}: {msg}"));
                Ok(())
            }
            Command::Metrics { name, params } => {
                out.metric(&name, &params);
                Ok(())
            }
            Command::Unknown { name } => {
                if let Some(p) = &self.task {
                    self.unknown.note(&p.label, &name);
                }
                Ok(())
            }
            Command::Emit(emit) => self.emit(emit, out),
        }
    }

    fn emit(&mut self, emit: Emit, out: &mut dyn BoltCollector) -> Result<(), String> {
        let Some(p) = &self.task else {
            return Err("shell bolt used before prepare".into());
        };
        let stream = emit.stream.as_deref().unwrap_or(DEFAULT_STREAM);
        let sid = super::check_emit(&self.outputs, &p.ctx, stream, &emit)?;
        let mut anchors: SmallVec<[&Tuple; 2]> = SmallVec::new();
        for a in &emit.anchors {
            match a.parse::<u64>().ok().and_then(|id| self.inflight.get(id)) {
                Some(t) => anchors.push(t),
                None => {
                    return Err(format!(
                        "protocol error: emit anchored to unknown tuple id \"{}\" (never sent, or already acked or failed)",
                        protocol::excerpt(a)
                    ))
                }
            }
        }
        let values = emit.tuple;
        match emit.task {
            Some(task) => out.emit_direct(task, sid, &anchors, values),
            None if emit.need_task_ids => {
                let tasks = out.emit(sid, &anchors, values);
                if let Some(child) = &mut self.child {
                    child.send_task_ids(&tasks);
                    self.answers += 1;
                }
            }
            None => out.send(sid, &anchors, values),
        }
        Ok(())
    }

    /// Remove an acked or failed input (Storm: "Acked a non-existent or already acked/failed id").
    fn take_input(&mut self, id: &str, what: &str) -> Result<Tuple, String> {
        id.parse::<u64>()
            .ok()
            .and_then(|n| self.inflight.remove(n))
            .ok_or_else(|| {
                format!(
                    "protocol error: {what} of unknown tuple id \"{}\" (never sent, or already acked or failed)",
                    protocol::excerpt(id)
                )
            })
    }

    /// Apply everything the reader has parsed; send at once the answers the child waits for.
    fn pump(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if let Some(child) = &self.child {
            child.rearm();
        }
        while let Some(event) = self.child.as_mut().and_then(|c| c.try_recv()) {
            self.handle(event, out)?;
        }
        if let Some(child) = &mut self.child {
            if child.wants_flush() {
                child.flush();
            }
        }
        Ok(())
    }

    /// Send everything queued, wait up to `wait` for one message, apply it and whatever else
    /// is there, and check the child's health.
    fn wait_event(&mut self, out: &mut dyn BoltCollector, wait: Duration) -> anyhow::Result<()> {
        if let Some(event) = self.child.as_mut().and_then(|c| c.recv_timeout(wait)) {
            self.handle(event, out)?;
        }
        self.pump(out)?;
        self.check_health(out)
    }

    /// The child waits for the task ids of each emit (Apache Storm's storm.py always does).
    /// Rather than going back to the executor after every answer — which passes each emit on
    /// alone and goes to sleep, only to be woken for the next one — stay with the child for a
    /// moment, answering as its messages come, so one pass serves many round trips. Ends when
    /// the child pauses for [`CONVERSE_GAP`], or after [`CONVERSE_FOR`] (the executor's own
    /// batching delay), so the executor's input never waits longer than that.
    fn converse(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if !self.child.as_mut().is_some_and(|c| c.begin_direct()) {
            return Ok(());
        }
        let result = self.converse_directly(out);
        if let Some(child) = &mut self.child {
            child.end_direct();
        }
        result?;
        // The last direct read may have brought more than the one message handled before the
        // time was up. The reader thread never saw those, so nothing would wake the executor
        // for them, while the child may be waiting for the answer to one (an emit's task ids):
        // handle them now.
        self.pump(out)
    }

    fn converse_directly(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let end = Instant::now() + CONVERSE_FOR;
        loop {
            let now = Instant::now();
            let left = end.saturating_duration_since(now);
            if left.is_zero() {
                return Ok(());
            }
            let Some(child) = &mut self.child else {
                return Ok(());
            };
            let event = child.recv_direct(self.spin, left.min(CONVERSE_GAP));
            // Watch without sleeping next time only if this answer came within that time:
            // a child that takes longer (real work per tuple) is not worth a busy CPU.
            self.spin = if now.elapsed() < CONVERSE_SPIN {
                CONVERSE_SPIN
            } else {
                Duration::ZERO
            };
            let Some(event) = event else {
                return Ok(());
            };
            self.handle(event, out)?;
        }
    }

    /// At `finish` every upstream task has finished, so every spout tree is closed: a tracked
    /// tuple still in flight here was already failed or timed out at its spout (replayed, or
    /// given up on), and nothing the child does with it can count any more. Whether every
    /// tuple left is such a one (untracked tuples must still be processed).
    fn only_stale_left(&self) -> bool {
        self.inflight.ids_where(|t| t.anchors.is_empty()).is_empty()
    }

    /// Stop the child rather than wait for it to work through tuples whose trees are closed
    /// (a tuple slower than the message timeout, replayed again and again, would keep the end
    /// of a run, or the drain after Ctrl-C, waiting a long time); they are failed.
    fn drop_stale(&mut self, out: &mut dyn BoltCollector) {
        if let Some(mut child) = self.child.take() {
            child.shutdown();
        }
        let mut stale = self.inflight.drain();
        stale.sort_unstable_by_key(|(id, _)| *id >> 32);
        for (_, tuple) in &stale {
            out.fail(tuple);
        }
        if let Some(p) = &self.task {
            tracing::warn!(
                "{}: stopped the child with {} tuple(s) in flight whose trees had already failed or timed out at their spout",
                p.label,
                stale.len()
            );
        }
    }

    /// Storm's heartbeat: a `__heartbeat` tuple every second; no message at all for the timeout
    /// after a heartbeat is a hang.
    fn check_health(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.child.is_none() {
            return Ok(());
        }
        let settings = self.prepared()?.settings;
        let now = Instant::now();
        if self
            .awaiting_since
            .is_some_and(|since| now.duration_since(since) > settings.timeout)
        {
            let reason = format!(
                "the child hangs: no answer to heartbeats for {} (topology.subprocess.timeout.secs)",
                humantime::format_duration(settings.timeout)
            );
            return self.fault(reason, out);
        }
        if now.duration_since(self.last_heartbeat) >= settings.heartbeat {
            let Some(child) = &mut self.child else {
                return Ok(());
            };
            child.send(&protocol::heartbeat(&rand::random::<u32>().to_string()));
            child.flush();
            self.last_heartbeat = now;
            self.awaiting_since.get_or_insert(now);
        }
        Ok(())
    }
}

/// Storm's tick tuple values for this task: `[tickSecs]`, the component's tick frequency
/// (its `tick`, else `topology.tick.tuple.freq.secs`) in whole seconds; `[]` without ticks.
fn tick_values(ctx: &TaskContext) -> Vec<crate::tuple::Value> {
    ctx.spec()
        .and_then(|c| c.tick)
        .or_else(|| ctx.config.tick_freq())
        .map(|d| vec![crate::tuple::Value::Int(d.as_secs() as i64)])
        .unwrap_or_default()
}

impl Bolt for ShellBolt {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        let settings = Settings::from_config(&ctx.config);
        let label = lifecycle::label("bolt", ctx);
        if self.command.is_empty() {
            return Err(FatalError(format!("{label}: no `command` to run")).into());
        }
        self.task = Some(Prepared {
            ctx: ctx.clone(),
            settings,
            label: label.clone(),
            tick_values: tick_values(ctx),
        });
        self.start_child()
            .map_err(|e| FatalError(format!("{label}: {e}")).into())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.hand_to_child(input, None, out)
    }

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.tell_finish {
            self.send_finish(out)?;
        }
        // Every tuple handed to the child is acked or failed (a hang or death fails them all).
        // A live child that answers heartbeats but leaves tuples unanswered for the hung
        // timeout is treated as hung too, so the end of a run never waits forever.
        let mut left = self.inflight.len();
        let mut last_progress = Instant::now();
        while !self.inflight.is_empty() {
            if self.only_stale_left() {
                self.drop_stale(out);
                break;
            }
            self.ensure_child(out, true)?;
            self.wait_event(out, Duration::from_millis(20))?;
            let now = Instant::now();
            if self.inflight.len() < left {
                left = self.inflight.len();
                last_progress = now;
            } else if now.duration_since(last_progress) > self.prepared()?.settings.timeout {
                let reason = format!(
                    "{} tuple(s) neither acked nor failed within {} of the end of input",
                    self.inflight.len(),
                    humantime::format_duration(self.prepared()?.settings.timeout)
                );
                self.fault(reason, out)?;
            }
        }
        Ok(())
    }

    fn poll(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.ensure_child(out, false)? {
            let answers = self.answers;
            self.pump(out)?;
            if self.answers > answers {
                self.converse(out)?;
            }
            self.check_health(out)?;
            // The executor is idle (or its poll timer is due): nothing more is coming to batch.
            if let Some(child) = &mut self.child {
                child.flush();
            }
        }
        Ok(())
    }

    fn poll_interval(&self) -> Option<Duration> {
        let heartbeat = self
            .task
            .as_ref()
            .map(|p| p.settings.heartbeat)
            .unwrap_or(Duration::from_secs(1));
        Some((heartbeat / 4).clamp(Duration::from_millis(5), Duration::from_millis(250)))
    }

    fn auto_ack(&self) -> bool {
        false
    }

    fn cleanup(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.shutdown();
        }
    }
}
