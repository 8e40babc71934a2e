//! The `http` spout: an HTTP/1.1 server (the hardened one under the UI, `net::http`) whose
//! POSTed records become tuples. Each task listens on `listen` (several tasks share the port
//! with `SO_REUSEPORT`). Tuples are tracked: without `ack` a failed one is emitted again
//! (up to `max_retries`; the client already had its 200), with `ack: true` the request's
//! answer waits for its tuple trees: 200 once all completed, 500 at the first that failed (the
//! client retries the request).

use super::handler::{self, Ingest};
use super::inbox::Inbox;
use super::once::{Answer, Arrival, Once};
use super::record::{self, Layout};
use super::settings::Settings;
use crate::components::parse::spec::Spec;
use crate::components::parse::DropWarnings;
use crate::components::replay::Replay;
use crate::components::{FatalError, Spout, SpoutCollector, SpoutStatus, TaskContext};
use crate::model::plan::{streams, StreamId};
use crate::net::http as server;
use crate::tuple::{Value, Values};
use serde_json::Value as Json;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

type Args = serde_json::Map<String, Json>;

/// A request answered once its tuples' trees complete (`ack: true`).
struct Waiter {
    /// Its records whose trees are not over.
    remaining: usize,
    /// One of its records failed.
    failed: bool,
    /// Its answer, until sent (a request without a key is answered 500 at its first failure).
    answer: Option<Answer>,
}

pub(crate) struct HttpSpout {
    settings: Settings,
    spec: Option<Spec>,
    layout: Layout,
    server: Option<server::Server>,
    inbox: Option<Arc<Inbox>>,
    /// The records of the request being emitted, each with its number in the request, and
    /// the request's id (`ack: true`).
    current: VecDeque<(u32, Values)>,
    current_request: u64,
    bad: VecDeque<(String, String)>,
    replay: Replay<Values>,
    waiting: HashMap<u64, Waiter>,
    /// Requests taken once by their key, answered once committed (`idempotency_header`).
    once: Once,
    next_request: u64,
    errors: Option<StreamId>,
    warnings: DropWarnings,
    /// Unreadable lines seen (their number in the warnings).
    unreadable: u64,
    label: String,
}

/// The output fields for the spout's arguments.
pub(crate) fn output_fields(args: &Args) -> Result<Vec<String>, String> {
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
    pub(crate) fn new(args: &Args) -> Result<HttpSpout, String> {
        let settings = Settings::from_args(args).map_err(|(_, why)| why)?;
        let (spec, read) = read_fields(args)?;
        let layout = Layout::new(
            record::fields_arg(args)?,
            &read,
            &handler::is_source_field,
            spec.is_some(),
        )?;
        let once = Once::new(settings.idempotency_ttl);
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
            once,
            next_request: 0,
            errors: None,
            warnings: DropWarnings::new("http"),
            unreadable: 0,
            label: "http".into(),
        })
    }

    /// Take the next request's records from the inbox, if one is there. A request whose key
    /// was taken before emits nothing: its client waits for that request's answer, or has it.
    fn take_batch(&mut self) -> bool {
        let Some(batch) = self.inbox.as_ref().and_then(|i| i.pop()) else {
            return false;
        };
        self.next_request += 1;
        self.current_request = self.next_request;
        if let Some(reply) = batch.reply {
            let answer = Answer {
                key: batch.key,
                accepted: batch.records.len(),
                rejected: batch.bad.len(),
                replies: vec![reply],
            };
            let skip = match self.once.arrive(self.current_request, answer) {
                Arrival::Take(answer, skip) => {
                    let remaining = batch.records.len()
                        - skip
                            .iter()
                            .filter(|i| (**i as usize) < batch.records.len())
                            .count();
                    let waiter = Waiter {
                        remaining,
                        failed: false,
                        answer: Some(answer),
                    };
                    self.waiting.insert(self.current_request, waiter);
                    if remaining == 0 {
                        self.request_over(self.current_request);
                    }
                    skip
                }
                Arrival::Join(request, answer) => {
                    if let Some(a) = self
                        .waiting
                        .get_mut(&request)
                        .and_then(|w| w.answer.as_mut())
                    {
                        a.replies.extend(answer.replies);
                    }
                    return true;
                }
                Arrival::Settled => return true,
            };
            let records = batch.records.into_iter().zip(0u32..);
            let kept = records
                .filter(|(_, i)| !skip.contains(i))
                .map(|(r, i)| (i, r));
            self.current.extend(kept);
        } else {
            self.current
                .extend(batch.records.into_iter().zip(0u32..).map(|(r, i)| (i, r)));
        }
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

    /// One record of a request is over (its tree completed, or failed).
    fn record_over(&mut self, request: u64, index: u32, ok: bool) {
        if ok {
            self.once.record_done(request, index);
        }
        let Some(w) = self.waiting.get_mut(&request) else {
            return;
        };
        w.remaining = w.remaining.saturating_sub(1);
        w.failed |= !ok;
        let keyed = w.answer.as_ref().is_some_and(|a| a.key.is_some());
        if !ok && !keyed {
            // Without a key the client is told at once: nothing of it is kept.
            if let Some(a) = w.answer.take() {
                a.failed();
            }
        }
        if w.remaining == 0 {
            self.request_over(request);
        }
    }

    /// Every record of a request is over: answer it (or hold its answer until committed).
    fn request_over(&mut self, request: u64) {
        let Some(w) = self.waiting.remove(&request) else {
            return;
        };
        match (w.answer, w.failed) {
            (Some(a), false) => self.once.done(request, a),
            (Some(a), true) => self.once.failed(request, a),
            (None, _) => self.once.forget(request),
        }
    }
}

/// The message id of record `index` of request `request` (`ack: true`).
fn message_id(request: u64, index: u32) -> Value {
    Value::Int(((request << 32) | u64::from(index)) as i64)
}

/// The request and record number a message id carries (`ack: true`).
fn record_of(msg_id: &Value) -> Option<(u64, u32)> {
    match msg_id {
        Value::Int(n) => Some(((*n as u64) >> 32, *n as u32)),
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
        self.once.set_checkpoints(ctx.topology.is_stateful());
        let inbox = Arc::new(Inbox::new(self.settings.queue, ctx.waker.clone()));
        let ingest = Ingest {
            path: self.settings.path.clone(),
            health_path: self.settings.health_path.clone(),
            token,
            ack: self.settings.ack,
            idempotency_header: self.settings.idempotency_header.clone(),
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
        if self.once.holding() {
            self.once.commits(crate::components::committed::last());
        }
        if let Some((id, values)) = self.replay.next_replay() {
            out.send(streams::DEFAULT, values, Some(Value::Int(id as i64)));
            return Ok(SpoutStatus::Busy);
        }
        if let Some(bad) = self.bad.pop_front() {
            self.unreadable(bad, out)?;
            return Ok(SpoutStatus::Busy);
        }
        if let Some((index, values)) = self.current.pop_front() {
            self.warnings.read();
            let id = match self.settings.ack {
                true => message_id(self.current_request, index),
                false => Value::Int(self.replay.track(values.clone()) as i64),
            };
            out.send(streams::DEFAULT, values, Some(id));
            return Ok(SpoutStatus::Busy);
        }
        match self.take_batch() {
            true => Ok(SpoutStatus::Busy),
            false => Ok(SpoutStatus::Idle),
        }
    }

    fn ack(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        match (self.settings.ack, record_of(&msg_id)) {
            (false, _) => self.replay.ack(&msg_id),
            (true, Some((request, index))) => self.record_over(request, index, true),
            (true, None) => {}
        }
        Ok(())
    }

    fn fail(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        match (self.settings.ack, record_of(&msg_id)) {
            (false, _) => self.replay.fail(&msg_id),
            (true, Some((request, index))) => self.record_over(request, index, false),
            (true, None) => {}
        }
        Ok(())
    }

    fn position(&mut self) -> Option<Value> {
        self.settings.exactly_once().then(|| self.once.position())
    }

    fn position_saved(&mut self, txid: u64) {
        self.once.saved(txid);
    }

    fn restore(&mut self, position: Value) -> anyhow::Result<()> {
        self.once.restore(&position)
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
