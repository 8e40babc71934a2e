//! The shell spout (Storm's `ShellSpout`): synchronous turns. Each `next`, `ack`, `fail`,
//! `activate` or `deactivate` command is answered by any number of emits, logs, errors and
//! metrics, ended by `sync`. A child that exits cleanly has no more input: the spout is
//! exhausted, so a finite shell spout ends the run.

use super::lifecycle::{self, RestartPolicy, Settings};
use super::process::{ChildEvent, ShellProcess};
use super::protocol::{self, ChildMessage, Command, Emit, SpoutCommand};
use super::{log_child_message, resolve_cwd, UnknownCommands};
use crate::components::{FatalError, Spout, SpoutCollector, SpoutStatus, TaskContext};
use crate::model::{Component, DEFAULT_STREAM};
use crate::tuple::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How long a child may stay silent after `activate` or `deactivate` before it is taken to
/// ignore them (as Apache Storm's storm.js does): every adapter that knows them answers at once.
const ACTIVATION_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// A spout whose tuples come from a multilang child process.
pub struct ShellSpout {
    command: Vec<String>,
    cwd: PathBuf,
    outputs: BTreeMap<String, Vec<String>>,
    task: Option<Prepared>,
    child: Option<ShellProcess>,
    policy: RestartPolicy,
    fatal: Option<String>,
    exhausted: bool,
    /// Emits and errors of `activate` / `deactivate` turns, which have no collector: applied at
    /// the next turn that has one.
    deferred: Vec<Emit>,
    deferred_errors: Vec<String>,
    /// Metric updates of those turns.
    deferred_metrics: Vec<(String, serde_json::Value)>,
    errors: u64,
    /// The child ignores `activate` / `deactivate` (see `ACTIVATION_GRACE`).
    silent_activation: bool,
    unknown: UnknownCommands,
}

struct Prepared {
    ctx: TaskContext,
    settings: Settings,
    label: String,
}

/// How a turn ended.
enum TurnEnd {
    Synced {
        emitted: usize,
    },
    /// The child exited with status 0.
    Exited,
    /// The run is stopping and the child kept the turn past [`STOP_GRACE`].
    Abandoned,
    Fault(String),
}

/// How long a child may keep a turn going once the run is stopping; then it is killed, so a
/// child hanging in `next` cannot hold the first Ctrl-C up for the subprocess timeout.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(2);
/// How often a turn waiting for the child looks whether the run is stopping.
const STOP_CHECK: std::time::Duration = std::time::Duration::from_millis(100);

impl ShellSpout {
    /// A shell spout for `component`; the child starts in `open`. A relative `cwd` is taken
    /// from `base_dir` (the topology file's folder), which is also the default.
    pub fn new(component: &Component, base_dir: &Path) -> ShellSpout {
        ShellSpout {
            command: component.command.clone().unwrap_or_default(),
            cwd: resolve_cwd(component.cwd.as_deref(), base_dir),
            outputs: component.outputs.clone(),
            task: None,
            child: None,
            policy: RestartPolicy::default(),
            fatal: None,
            exhausted: false,
            deferred: Vec::new(),
            deferred_errors: Vec::new(),
            deferred_metrics: Vec::new(),
            errors: 0,
            silent_activation: false,
            unknown: UnknownCommands::default(),
        }
    }

    fn label(&self) -> &str {
        self.task
            .as_ref()
            .map(|p| p.label.as_str())
            .unwrap_or("shell spout")
    }

    /// Make sure a child runs; `false` while a restart is not yet due (unless `block`).
    fn ensure_child(
        &mut self,
        mut out: Option<&mut dyn SpoutCollector>,
        block: bool,
    ) -> anyhow::Result<bool> {
        loop {
            if let Some(f) = &self.fatal {
                return Err(FatalError(f.clone()).into());
            }
            if self.child.is_some() {
                return Ok(true);
            }
            let Some(p) = &self.task else {
                return Err(FatalError("shell spout used before open".into()).into());
            };
            if !self.policy.take_restart(block) {
                return Ok(false);
            }
            match lifecycle::start(
                &self.command,
                &self.cwd,
                &p.ctx,
                &p.label,
                &p.settings,
                lifecycle::Kind::Spout,
            ) {
                Ok(child) => {
                    tracing::warn!("{}: child restarted", p.label);
                    self.child = Some(child);
                }
                Err(e) => self.fault(format!("restart failed: {e}"), reborrow(&mut out))?,
            }
        }
    }

    /// Report a broken child, stop it and schedule a restart, or give up when it keeps failing.
    /// Tuples it emitted stay tracked by the acker: they time out or fail and are handed back.
    fn fault(
        &mut self,
        reason: String,
        out: Option<&mut dyn SpoutCollector>,
    ) -> anyhow::Result<()> {
        let msg = format!("{}: {reason}", self.label());
        tracing::error!("{msg}");
        match out {
            Some(out) => out.report_error(&msg),
            None => self.deferred_errors.push(msg),
        }
        if let Some(mut child) = self.child.take() {
            child.shutdown();
        }
        match self.policy.failed(Instant::now()) {
            Ok(delay) => {
                tracing::warn!(
                    "{}: restarting the child in {}",
                    self.label(),
                    humantime::format_duration(delay)
                );
                Ok(())
            }
            Err(why) => {
                let fatal = format!("{}: {why}; last failure: {reason}", self.label());
                self.fatal = Some(fatal.clone());
                Err(FatalError(fatal).into())
            }
        }
    }

    /// Send one command and apply the child's answers until `sync`.
    fn turn(&mut self, cmd: SpoutCommand, mut out: Option<&mut dyn SpoutCollector>) -> TurnEnd {
        let (Some(child), Some(p)) = (&mut self.child, &self.task) else {
            return TurnEnd::Fault("no child process".into());
        };
        let timeout = p.settings.timeout;
        child.send(&cmd.to_json());
        let activation = matches!(cmd, SpoutCommand::Activate | SpoutCommand::Deactivate);
        if activation && self.silent_activation {
            return TurnEnd::Synced { emitted: 0 };
        }
        let mut emitted = 0;
        // Apache Storm's own storm.js never answers `activate`/`deactivate` (they came after
        // it was written): a child silent for ACTIVATION_GRACE after one is taken to ignore
        // them, and is not waited for on them again.
        let mut grace = activation && ACTIVATION_GRACE < timeout;
        loop {
            // Any message counts as life; silence for the whole timeout is a hang.
            let wait = if grace { ACTIVATION_GRACE } else { timeout };
            let in_grace = std::mem::take(&mut grace);
            let command = match self.next_command(&cmd, wait, in_grace) {
                Ok(Command::Sync) => return TurnEnd::Synced { emitted },
                Ok(command) => command,
                Err(end) => return end,
            };
            match self.apply(command, reborrow(&mut out)) {
                Ok(n) => emitted += n,
                Err(problem) => return TurnEnd::Fault(problem),
            }
        }
    }

    /// The child's next command in the turn for `cmd`, waiting up to `wait` (a grace period
    /// when `in_grace`, else the timeout), or how the turn ends without one.
    fn next_command(
        &mut self,
        cmd: &SpoutCommand,
        wait: std::time::Duration,
        in_grace: bool,
    ) -> Result<Command, TurnEnd> {
        let event = self.receive(wait)?;
        match event {
            None if in_grace => {
                tracing::info!(
                    "{}: the child does not answer `{}`; going on without waiting for it",
                    self.label(),
                    cmd.name()
                );
                self.silent_activation = true;
                Err(TurnEnd::Synced { emitted: 0 })
            }
            None => Err(TurnEnd::Fault(format!(
                "the child hangs: no answer to `{}` within {} (topology.subprocess.timeout.secs)",
                cmd.name(),
                humantime::format_duration(wait)
            ))),
            Some(ChildEvent::Message(Ok(ChildMessage::Command(c)))) => Ok(c),
            Some(ChildEvent::Message(Ok(ChildMessage::Pid(pid)))) => Err(TurnEnd::Fault(format!(
                "protocol error: unexpected pid message {{\"pid\": {pid}}} after the handshake"
            ))),
            Some(ChildEvent::Message(Err(e))) => {
                Err(TurnEnd::Fault(format!("protocol error: {e}")))
            }
            Some(ChildEvent::Eof) => Err(self.ended()),
        }
    }

    /// The child's next event within `wait`, looking every [`STOP_CHECK`] whether the run is
    /// stopping: then the child has [`STOP_GRACE`] more, and the turn is abandoned after it.
    fn receive(&mut self, wait: std::time::Duration) -> Result<Option<ChildEvent>, TurnEnd> {
        let deadline = Instant::now() + wait;
        let mut stop_deadline = None;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            if self.task.as_ref().is_some_and(|p| p.ctx.stopping.now()) {
                let until = *stop_deadline.get_or_insert(now + STOP_GRACE);
                if now >= until {
                    return Err(TurnEnd::Abandoned);
                }
            }
            let Some(child) = self.child.as_mut() else {
                return Ok(None);
            };
            if let Some(event) = child.recv_timeout((deadline - now).min(STOP_CHECK)) {
                return Ok(Some(event));
            }
        }
    }

    /// How the turn ends when the child closed its output: it exited with status 0, or it died.
    fn ended(&mut self) -> TurnEnd {
        let Some(child) = self.child.as_mut() else {
            return TurnEnd::Fault("no child process".into());
        };
        if child
            .wait_exit(std::time::Duration::from_secs(1))
            .is_some_and(|s| s.success())
        {
            return TurnEnd::Exited;
        }
        TurnEnd::Fault(lifecycle::death_reason(child, "unexpectedly"))
    }

    /// Apply one command of the child other than `sync`: how many tuples it emitted, or the
    /// protocol error that ends the turn. Without a collector (activate/deactivate), what
    /// needs one waits for the next turn.
    fn apply(
        &mut self,
        command: Command,
        out: Option<&mut dyn SpoutCollector>,
    ) -> Result<usize, String> {
        match command {
            Command::Sync => {}
            Command::Emit(emit) => match out {
                Some(o) => {
                    self.emit(emit, o)?;
                    return Ok(1);
                }
                None => {
                    // No collector in activate/deactivate: emit at the next turn; the
                    // task-id answer, if wanted, is an empty list.
                    if emit.need_task_ids && emit.task.is_none() {
                        if let Some(c) = &mut self.child {
                            c.send_task_ids(&[]);
                        }
                    }
                    self.deferred.push(emit);
                }
            },
            Command::Ack { id } | Command::Fail { id } => {
                return Err(format!(
                    "protocol error: a spout cannot ack or fail (id \"{}\")",
                    protocol::excerpt(&id)
                ))
            }
            Command::Log { msg, level } => log_child_message(self.label(), level, &msg),
            Command::Error { msg } => {
                self.errors += 1;
                let msg = format!("{}: {msg}", self.label());
                match out {
                    Some(o) => o.report_error(&msg),
                    None => self.deferred_errors.push(msg),
                }
            }
            Command::Metrics { name, params } => match out {
                Some(o) => o.metric(&name, &params),
                None => self.deferred_metrics.push((name, params)),
            },
            Command::Unknown { name } => {
                let label = self
                    .task
                    .as_ref()
                    .map_or("shell spout", |p| p.label.as_str());
                self.unknown.note(label, &name);
            }
        }
        Ok(0)
    }

    fn emit(&mut self, emit: Emit, out: &mut dyn SpoutCollector) -> Result<(), String> {
        let Some(p) = &self.task else {
            return Err("shell spout used before open".into());
        };
        let stream = emit.stream.as_deref().unwrap_or(DEFAULT_STREAM);
        let sid = super::check_emit(&self.outputs, &p.ctx, stream, &emit)?;
        let (values, msg_id) = (emit.tuple, emit.id);
        match emit.task {
            Some(task) => out.emit_direct(task, sid, values, msg_id),
            None if emit.need_task_ids => {
                let tasks = out.emit(sid, values, msg_id);
                if let Some(child) = &mut self.child {
                    child.send_task_ids(&tasks);
                }
            }
            None => out.send(sid, values, msg_id),
        }
        Ok(())
    }

    /// Apply what activate/deactivate turns left for a collector.
    fn flush_deferred(&mut self, out: &mut dyn SpoutCollector) -> Result<(), String> {
        for msg in std::mem::take(&mut self.deferred_errors) {
            out.report_error(&msg);
        }
        for (name, params) in std::mem::take(&mut self.deferred_metrics) {
            out.metric(&name, &params);
        }
        for emit in std::mem::take(&mut self.deferred) {
            self.emit(emit, out)?;
        }
        Ok(())
    }

    /// Run a command turn and deal with its end; `Some(status)` when the spout is exhausted.
    fn command(
        &mut self,
        cmd: SpoutCommand,
        mut out: Option<&mut dyn SpoutCollector>,
    ) -> anyhow::Result<SpoutStatus> {
        if self.exhausted {
            return Ok(SpoutStatus::Exhausted);
        }
        if let Some(o) = reborrow(&mut out) {
            if let Err(problem) = self.flush_deferred(o) {
                self.fault(problem, Some(o))?;
                return Ok(SpoutStatus::Idle);
            }
        }
        let block = !matches!(cmd, SpoutCommand::Next);
        if !self.ensure_child(reborrow(&mut out), block)? {
            return Ok(SpoutStatus::Idle);
        }
        match self.turn(cmd, reborrow(&mut out)) {
            TurnEnd::Synced { emitted } => {
                self.policy.progressed();
                Ok(if emitted > 0 {
                    SpoutStatus::Busy
                } else {
                    SpoutStatus::Idle
                })
            }
            TurnEnd::Exited => {
                tracing::info!("{}: the child exited cleanly: no more input", self.label());
                self.exhausted = true;
                if let Some(mut child) = self.child.take() {
                    child.shutdown();
                }
                Ok(SpoutStatus::Exhausted)
            }
            TurnEnd::Abandoned => {
                tracing::warn!(
                    "{}: the run is stopping and the child gave no answer within {}; killing it",
                    self.label(),
                    humantime::format_duration(STOP_GRACE)
                );
                self.exhausted = true;
                if let Some(mut child) = self.child.take() {
                    child.shutdown();
                }
                Ok(SpoutStatus::Exhausted)
            }
            TurnEnd::Fault(reason) => {
                self.fault(reason, out)?;
                Ok(SpoutStatus::Idle)
            }
        }
    }

    /// Ack and fail after the child has exited cannot reach it.
    fn gone(&self, what: &str, msg_id: &Value) -> bool {
        if self.exhausted {
            tracing::debug!(
                "{}: {what} of {msg_id:?} after the child exited: dropped",
                self.label()
            );
        }
        self.exhausted
    }
}

/// Reborrow an optional collector for one call (a coercion `Option` cannot do by itself).
fn reborrow<'a>(
    out: &'a mut Option<&mut dyn SpoutCollector>,
) -> Option<&'a mut dyn SpoutCollector> {
    match out {
        Some(o) => Some(&mut **o),
        None => None,
    }
}

impl Spout for ShellSpout {
    fn may_block(&self) -> bool {
        true
    }

    fn open(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        let settings = Settings::from_config(&ctx.config);
        let label = lifecycle::label("spout", ctx);
        if self.command.is_empty() {
            return Err(FatalError(format!("{label}: no `command` to run")).into());
        }
        let child = lifecycle::start(
            &self.command,
            &self.cwd,
            ctx,
            &label,
            &settings,
            lifecycle::Kind::Spout,
        )
        .map_err(|e| FatalError(format!("{label}: {e}")))?;
        self.child = Some(child);
        self.task = Some(Prepared {
            ctx: ctx.clone(),
            settings,
            label,
        });
        Ok(())
    }

    fn next_tuple(&mut self, out: &mut dyn SpoutCollector) -> anyhow::Result<SpoutStatus> {
        self.command(SpoutCommand::Next, Some(out))
    }

    fn ack(&mut self, msg_id: Value, out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        if !self.gone("ack", &msg_id) {
            self.command(SpoutCommand::Ack(msg_id.to_json()), Some(out))?;
        }
        Ok(())
    }

    fn fail(&mut self, msg_id: Value, out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        if self.exhausted {
            tracing::warn!(
                "{}: tuple {msg_id:?} failed after the child exited: it cannot be replayed",
                self.label()
            );
            return Ok(());
        }
        self.command(SpoutCommand::Fail(msg_id.to_json()), Some(out))?;
        Ok(())
    }

    fn activate(&mut self) -> anyhow::Result<()> {
        self.command(SpoutCommand::Activate, None).map(|_| ())
    }

    fn deactivate(&mut self) -> anyhow::Result<()> {
        self.command(SpoutCommand::Deactivate, None).map(|_| ())
    }

    fn close(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.shutdown();
        }
    }
}
