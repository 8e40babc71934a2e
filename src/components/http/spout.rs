//! The `http` spout: an HTTP/1.1 server (the hardened one under the UI, `net::http`) whose
//! POSTed records become tuples. Each task listens on `listen` (several tasks share the port
//! with `SO_REUSEPORT`). Tuples are tracked: without `ack` a failed one is emitted again
//! (up to `max_retries`; the client already had its 200), with `ack: true` the request's
//! answer waits for its tuple trees: 200 once all completed, 500 at the first that failed (the
//! client retries the request).

use super::handler::{self, Ingest};
use super::inbox::Inbox;
use super::record::{self, Layout};
use super::settings::Settings;
use crate::components::parse::spec::Spec;
use crate::components::parse::DropWarnings;
use crate::components::replay::Replay;
use crate::components::{FatalError, Spout, SpoutCollector, SpoutStatus, TaskContext};
use crate::model::plan::{streams, StreamId};
use crate::net::http::{self as server, Response};
use crate::tuple::{Value, Values};
use serde_json::Value as Json;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

type Args = serde_json::Map<String, Json>;

/// A request answered once its tuples' trees complete (`ack: true`).
struct Waiter {
    remaining: usize,
    accepted: usize,
    rejected: usize,
    reply: tokio::sync::oneshot::Sender<Response>,
}

pub struct HttpSpout {
    settings: Settings,
    spec: Option<Spec>,
    layout: Layout,
    server: Option<server::Server>,
    inbox: Option<Arc<Inbox>>,
    /// The records of the request being emitted, and its id (`ack: true`).
    current: VecDeque<Values>,
    current_request: u64,
    bad: VecDeque<(String, String)>,
    replay: Replay<Values>,
    waiting: HashMap<u64, Waiter>,
    next_request: u64,
    errors: Option<StreamId>,
    warnings: DropWarnings,
    /// Unreadable lines seen (their number in the warnings).
    unreadable: u64,
    label: String,
}

/// The output fields for the spout's arguments.
pub fn output_fields(args: &Args) -> Result<Vec<String>, String> {
    if let Some(fields) = record::fields_arg(args)? {
        return Ok(fields);
    }
    Ok(read_fields(args)?.1)
}

/// The reader's spec (none without `format`) and the fields it gives.
fn read_fields(args: &Args) -> Result<(Option<Spec>, Vec<String>), String> {
    if !args.contains_key("format") {
        return Ok((None, vec![record::LINE_FIELD.to_string()]));
    }
    let spec = record::reader_spec(args, &handler::is_source_field)?;
    let names = spec.field_names();
    Ok((Some(spec), names))
}

impl HttpSpout {
    pub fn new(args: &Args) -> Result<HttpSpout, String> {
        let settings = Settings::from_args(args).map_err(|(_, why)| why)?;
        let (spec, read) = read_fields(args)?;
        let layout = Layout::new(
            record::fields_arg(args)?,
            &read,
            &handler::is_source_field,
            spec.is_some(),
        )?;
        Ok(HttpSpout {
            settings,
            spec,
            layout,
            server: None,
            inbox: None,
            current: VecDeque::new(),
            current_request: 0,
            bad: VecDeque::new(),
            replay: Replay::new(crate::components::replay::max_retries(args)),
            waiting: HashMap::new(),
            next_request: 0,
            errors: None,
            warnings: DropWarnings::new("http"),
            unreadable: 0,
            label: "http".into(),
        })
    }

    /// Take the next request's records from the inbox, if one is there.
    fn take_batch(&mut self) -> bool {
        let Some(batch) = self.inbox.as_ref().and_then(|i| i.pop()) else {
            return false;
        };
        self.next_request += 1;
        self.current_request = self.next_request;
        if let Some(reply) = batch.reply {
            let waiter = Waiter {
                remaining: batch.records.len(),
                accepted: batch.records.len(),
                rejected: batch.bad.len(),
                reply,
            };
            self.waiting.insert(self.current_request, waiter);
        }
        self.current.extend(batch.records);
        self.bad.extend(batch.bad);
        true
    }

    /// A line that could not be read: to `errors`, or dropped and counted.
    fn unreadable(
        &mut self,
        (line, reason): (String, String),
        out: &mut dyn SpoutCollector,
    ) -> Result<(), FatalError> {
        self.unreadable += 1;
        let at = self.unreadable;
        record::unreadable(self.errors, &mut self.warnings, at, &line, &reason, out)
    }

    fn answer(&mut self, request: u64, ok: bool) {
        let Some(w) = self.waiting.remove(&request) else {
            return;
        };
        let response = match ok {
            true => handler::accepted(w.accepted, w.rejected),
            false => handler::refusal(
                500,
                "a record failed in the topology (or timed out): send the request again",
            ),
        };
        // The client may have gone: nothing to tell.
        let _ = w.reply.send(response);
    }
}

/// The request id a message id carries (`ack: true`).
fn request_of(msg_id: &Value) -> Option<u64> {
    match msg_id {
        Value::Int(n) => Some(*n as u64),
        _ => None,
    }
}

impl Spout for HttpSpout {
    fn open(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.label = format!("{} task {}", ctx.component, ctx.task_id);
        self.errors = crate::components::wired_stream(ctx, crate::components::parse::ERRORS_STREAM);
        self.warnings = DropWarnings::for_task(ctx);
        self.warnings.judge_input = false;
        self.replay.set_label(&ctx.component, ctx.task_id);
        let max_record = ctx
            .config
            .get_u64(crate::components::parse::MAX_RECORD_KEY)
            .and_then(|m| usize::try_from(m).ok())
            .unwrap_or(crate::components::parse::DEFAULT_MAX_RECORD);
        let token = match &self.settings.token {
            Some(t) => Some(
                t.resolve()
                    .map_err(|e| FatalError(format!("{}: {e}", ctx.component)))?,
            ),
            None => None,
        };
        let inbox = Arc::new(Inbox::new(self.settings.queue, ctx.waker.clone()));
        let ingest = Ingest {
            path: self.settings.path.clone(),
            health_path: self.settings.health_path.clone(),
            token,
            ack: self.settings.ack,
            spec: self.spec.clone(),
            layout: self.layout.clone(),
            max_record,
            inbox: inbox.clone(),
            stopping: ctx.stopping.clone(),
        };
        let tasks = ctx.spec().map_or(1, |c| c.tasks);
        let limits = server::Limits {
            max_body: self.settings.max_body,
            max_connections: self.settings.max_connections,
            reuse_port: tasks > 1,
            ..server::Limits::default()
        };
        let name = format!("http-in-{}", ctx.task_id);
        let listen = &self.settings.listen;
        let served = server::start(&name, listen, limits, Arc::new(ingest)).map_err(|e| {
            FatalError(format!("{}: cannot listen on {listen}: {e}", ctx.component))
        })?;
        crate::stderr_println!(
            "{}: listening on http://{}{}",
            self.label,
            served.addr,
            self.settings.path
        );
        self.server = Some(served);
        self.inbox = Some(inbox);
        Ok(())
    }

    fn next_tuple(&mut self, out: &mut dyn SpoutCollector) -> anyhow::Result<SpoutStatus> {
        if let Some((id, values)) = self.replay.next_replay() {
            out.send(streams::DEFAULT, values, Some(Value::Int(id as i64)));
            return Ok(SpoutStatus::Busy);
        }
        if let Some(bad) = self.bad.pop_front() {
            self.unreadable(bad, out)?;
            return Ok(SpoutStatus::Busy);
        }
        if let Some(values) = self.current.pop_front() {
            self.warnings.read();
            let id = match self.settings.ack {
                true => self.current_request,
                false => self.replay.track(values.clone()),
            };
            out.send(streams::DEFAULT, values, Some(Value::Int(id as i64)));
            return Ok(SpoutStatus::Busy);
        }
        match self.take_batch() {
            true => Ok(SpoutStatus::Busy),
            false => Ok(SpoutStatus::Idle),
        }
    }

    fn ack(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        if !self.settings.ack {
            self.replay.ack(&msg_id);
            return Ok(());
        }
        let Some(request) = request_of(&msg_id) else {
            return Ok(());
        };
        let done = match self.waiting.get_mut(&request) {
            Some(w) => {
                w.remaining = w.remaining.saturating_sub(1);
                w.remaining == 0
            }
            None => false,
        };
        if done {
            self.answer(request, true);
        }
        Ok(())
    }

    fn fail(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        match self.settings.ack {
            false => self.replay.fail(&msg_id),
            true => {
                if let Some(request) = request_of(&msg_id) {
                    self.answer(request, false);
                }
            }
        }
        Ok(())
    }

    fn activate(&mut self) -> anyhow::Result<()> {
        if let Some(i) = &self.inbox {
            i.set_active(true);
        }
        Ok(())
    }

    fn deactivate(&mut self) -> anyhow::Result<()> {
        if let Some(i) = &self.inbox {
            i.set_active(false);
        }
        Ok(())
    }

    fn lost(&self) -> u64 {
        self.replay.lost()
    }

    fn close(&mut self) {
        let left = self.inbox.as_ref().map_or(0, |i| i.close());
        if left > 0 {
            tracing::warn!(
                "{}: stopped with {left} record(s) queued and not emitted (their clients were answered 200)",
                self.label
            );
        }
        // Requests still waiting for their trees are answered 503 when their senders go.
        self.waiting.clear();
        self.server = None;
    }
}
