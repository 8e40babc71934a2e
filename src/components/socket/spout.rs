//! The `socket` spout: records received over TCP or UDP (`listen`, `protocol`, `framing`,
//! `format`, syslog included) as tracked tuples. A failed tuple is emitted again (up to
//! `max_retries`); a frame that cannot be read goes to `errors` when wired, else it is dropped,
//! counted and warned about (with `--strict` it ends the run), as `stdin`'s readers do.

use super::decode::{self, Decode, Item};
use super::server::{self, Inlet, Listener};
use super::settings::{Protocol, Settings};
use crate::components::http::record::{self, Layout};
use crate::components::parse::DropWarnings;
use crate::components::replay::Replay;
use crate::components::{FatalError, Spout, SpoutCollector, SpoutStatus, TaskContext};
use crate::model::plan::{streams, StreamId};
use crate::tuple::{Value, Values};
use serde_json::Value as Json;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::Duration;

type Args = serde_json::Map<String, Json>;

pub(crate) struct SocketSpout {
    settings: Settings,
    decode: Decode,
    listener: Option<Listener>,
    inlet: Option<Inlet>,
    items: VecDeque<Item>,
    replay: Replay<Values>,
    errors: Option<StreamId>,
    warnings: DropWarnings,
    unreadable: u64,
    label: String,
    overflow: crate::logging::Throttle,
}

/// The output fields for the spout's arguments.
pub(crate) fn output_fields(args: &Args) -> Result<Vec<String>, String> {
    if let Some(fields) = record::fields_arg(args)? {
        return Ok(fields);
    }
    Ok(decode::kind_and_fields(args)?.1)
}

impl SocketSpout {
    pub(crate) fn new(args: &Args) -> Result<SocketSpout, String> {
        let settings = Settings::from_args(args).map_err(|(_, why)| why)?;
        let (kind, read) = decode::kind_and_fields(args)?;
        let formatted = !matches!(kind, decode::Kind::Lines);
        let layout = Layout::new(
            record::fields_arg(args)?,
            &read,
            &decode::is_source_field,
            formatted,
        )?;
        Ok(SocketSpout {
            settings,
            decode: Decode {
                kind,
                layout,
                max_record: crate::components::parse::DEFAULT_MAX_RECORD,
            },
            listener: None,
            inlet: None,
            items: VecDeque::new(),
            replay: Replay::new(crate::components::replay::max_retries(args)),
            errors: None,
            warnings: DropWarnings::new("socket"),
            unreadable: 0,
            label: "socket".into(),
            overflow: crate::logging::Throttle::new(Duration::from_secs(10)),
        })
    }

    /// A frame that could not be read: to `errors`, or dropped and counted.
    fn unreadable(
        &mut self,
        line: String,
        reason: String,
        out: &mut dyn SpoutCollector,
    ) -> Result<(), FatalError> {
        self.unreadable += 1;
        let at = self.unreadable;
        record::unreadable(self.errors, &mut self.warnings, at, &line, &reason, out)
    }

    /// Datagrams dropped for want of room, and connections refused past the bound: counted
    /// and warned about (bounded).
    fn report_losses(&mut self, out: &mut dyn SpoutCollector) {
        let Some(inlet) = &self.inlet else { return };
        let dropped = inlet.dropped.swap(0, Ordering::Relaxed);
        let refused = inlet.refused.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            out.dropped(dropped);
        }
        if dropped + refused == 0 {
            return;
        }
        if let Some(held) = self.overflow.allow() {
            tracing::warn!(
                "{}: dropped {dropped} record(s) of datagrams that found the topology behind, refused {refused} connection(s) past max_connections {}{}",
                self.label,
                self.settings.max_connections,
                crate::logging::held_back(held)
            );
        }
    }
}

impl Spout for SocketSpout {
    fn open(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.label = format!("{} task {}", ctx.component, ctx.task_id);
        self.errors = crate::components::wired_stream(ctx, crate::components::parse::ERRORS_STREAM);
        self.warnings = DropWarnings::for_task(ctx);
        self.warnings.judge_input = false;
        self.replay.set_label(&ctx.component, ctx.task_id);
        if let Some(max) = ctx.config.get_u64(crate::components::parse::MAX_RECORD_KEY) {
            self.decode.max_record = usize::try_from(max).unwrap_or(usize::MAX);
        }
        let max_frame = self.settings.max_frame.unwrap_or(self.decode.max_record);
        let tasks = ctx.spec().map_or(1, |c| c.tasks);
        let name = format!("socket-in-{}", ctx.task_id);
        let (listener, inlet) = server::start(
            &name,
            &self.settings,
            self.decode.clone(),
            max_frame,
            ctx.waker.clone(),
            tasks > 1,
        )
        .map_err(|e| {
            FatalError(format!(
                "{}: cannot listen on {}: {e}",
                ctx.component, self.settings.listen
            ))
        })?;
        let proto = match self.settings.protocol {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        };
        crate::stderr_println!("{}: listening on {proto}://{}", self.label, listener.addr);
        self.listener = Some(listener);
        self.inlet = Some(inlet);
        Ok(())
    }

    fn next_tuple(&mut self, out: &mut dyn SpoutCollector) -> anyhow::Result<SpoutStatus> {
        if let Some((id, values)) = self.replay.next_replay() {
            out.send(streams::DEFAULT, values, Some(Value::Int(id as i64)));
            return Ok(SpoutStatus::Busy);
        }
        if self.items.is_empty() {
            self.report_losses(out);
            let next = self.inlet.as_mut().and_then(|i| i.rx.try_recv().ok());
            match next {
                Some(batch) => self.items.extend(batch),
                None => return Ok(SpoutStatus::Idle),
            }
        }
        match self.items.pop_front() {
            Some(Item::Record(values)) => {
                self.warnings.read();
                let id = self.replay.track(values.clone());
                out.send(streams::DEFAULT, values, Some(Value::Int(id as i64)));
            }
            Some(Item::Bad(line, reason)) => self.unreadable(line, reason, out)?,
            None => {}
        }
        Ok(SpoutStatus::Busy)
    }

    fn ack(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        self.replay.ack(&msg_id);
        Ok(())
    }

    fn fail(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        self.replay.fail(&msg_id);
        Ok(())
    }

    fn lost(&self) -> u64 {
        self.replay.lost()
    }

    fn close(&mut self) {
        self.listener = None;
        let mut left = self.items.len();
        if let Some(inlet) = &mut self.inlet {
            while let Ok(batch) = inlet.rx.try_recv() {
                left += batch.len();
            }
        }
        if left > 0 {
            tracing::warn!(
                "{}: stopped with {left} received record(s) not emitted",
                self.label
            );
        }
    }
}
