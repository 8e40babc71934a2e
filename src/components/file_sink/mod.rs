//! The `file` sink bolt: each tuple becomes one record (a JSON line, a CSV/TSV row, or one
//! field `raw`) in the file its `path` names for it (`out/{service}/%Y-%m-%d/%H.jsonl`:
//! fields of the tuple, and the time of the processing clock or of the `time` field, UTC).
//! Files rotate by size, age, record count and inactivity (`rotate`), compressed with gzip or
//! zstd. Storm's HdfsBolt (rotation and sync policies) and Flink's FileSink are the models.
//!
//! Without state: at least once. Records go straight into their files; a tuple is acked once
//! its record was flushed (and fsynced: `sync`), so a crash may leave a last partial line and
//! a replay may write a record twice. With `stateful: true`: exactly once, see `commit`.

mod args;
pub(crate) mod builtin;
mod commit;
mod names;
mod part;
mod path;

use crate::components::sink_format::{push_header, push_record};
use crate::components::{Bolt, BoltCollector, BoltState, FatalError, TaskContext};
use crate::tuple::{Tuple, Value};
use args::Config;
use commit::{Pending, Saved, SavedPart, Txn};
use part::Part;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

type Args = serde_json::Map<String, serde_json::Value>;

/// The state entry's key.
const STATE_KEY: &str = "file_sink";
/// Parts open at once per task: past it, the least recently written one is closed.
const MAX_OPEN: usize = 256;
/// How long the end of a run waits for its last checkpoint to commit before publishing.
const COMMIT_WAIT: Duration = Duration::from_secs(30);

struct FileSink {
    cfg: Config,
    base_dir: PathBuf,
    label: String,
    names: Vec<String>,
    raw_at: usize,
    time_at: Option<usize>,
    /// This task's index when the component has several (it goes into file names).
    task: Option<u32>,
    staging: Option<PathBuf>,
    open: HashMap<String, Part>,
    /// Each bucket's next part number.
    next: BTreeMap<String, u64>,
    line: String,
    /// Without state: inputs written, acked at the next sync.
    unsynced: Vec<Tuple>,
    /// Records written past which a sync is due (`sync.records`, at most a quarter of the
    /// spouts' pending bound).
    sync_records: u64,
    last_sync: Instant,
    /// The time rotation, syncing and records without a time go by.
    machine_clock: crate::clock::Clock,
    txn: Option<Txn>,
    bad_times: crate::logging::Throttle,
}

impl FileSink {
    /// The sink from its arguments (`stateful`: files published with the checkpoints).
    fn new(args: &Args, stateful: bool, base_dir: &Path) -> Result<FileSink, String> {
        let cfg = Config::from_args(args).map_err(|e| e.to_string())?;
        Ok(FileSink {
            cfg,
            base_dir: base_dir.to_path_buf(),
            label: "file sink".into(),
            names: Vec::new(),
            raw_at: 0,
            time_at: None,
            task: None,
            staging: None,
            open: HashMap::new(),
            next: BTreeMap::new(),
            line: String::new(),
            unsynced: Vec::new(),
            sync_records: u64::MAX,
            last_sync: Instant::now(),
            machine_clock: crate::clock::Clock::system(),
            txn: stateful.then(Txn::default),
            bad_times: crate::logging::Throttle::new(Duration::from_secs(10)),
        })
    }

    fn fatal(&self, e: impl std::fmt::Display) -> anyhow::Error {
        FatalError(format!("{}: {e}", self.label)).into()
    }

    /// The record's time: its `time` field (epoch ms or RFC 3339), else the clock's.
    fn time_of(&mut self, input: &Tuple) -> i64 {
        let Some(at) = self.time_at else {
            return self.machine_clock.epoch_millis();
        };
        let t = input
            .values
            .get(at)
            .and_then(crate::components::aggregate::window::event_time);
        t.unwrap_or_else(|| {
            if let Some(n) = self.bad_times.allow() {
                tracing::warn!(
                    "{}: a tuple has no time in its time field; the clock's is used ({n} more)",
                    self.label
                );
            }
            self.machine_clock.epoch_millis()
        })
    }

    /// The open part of `bucket`, opened when there is none.
    fn part_for(&mut self, bucket: &str) -> anyhow::Result<&mut Part> {
        if !self.open.contains_key(bucket) {
            if self.open.len() >= MAX_OPEN {
                let idle = self
                    .open
                    .iter()
                    .min_by_key(|(_, p)| p.last_write)
                    .map(|(b, _)| b.clone());
                if let Some(b) = idle {
                    self.close(&b)?;
                }
            }
            let mut part = self.open_part(bucket).map_err(|e| self.fatal(e))?;
            part.stamp(self.machine_clock.now());
            self.open.insert(bucket.to_string(), part);
        }
        let label = self.label.clone();
        self.open
            .get_mut(bucket)
            .ok_or_else(|| FatalError(format!("{label}: no open part")).into())
    }

    /// A new part of `bucket` under the next free name (in the staging dir with state).
    fn open_part(&mut self, bucket: &str) -> std::io::Result<Part> {
        let path = self.base_dir.join(bucket);
        let unpublished: Vec<PathBuf> = match &self.txn {
            Some(t) => t
                .unpublished()
                .into_iter()
                .chain(t.closed.iter().cloned())
                .map(|p| p.target)
                .collect(),
            None => Vec::new(),
        };
        let mut n = self.next.get(bucket).copied().unwrap_or(0);
        let target = loop {
            let candidate = names::part_name(&path, self.task, n);
            n += 1;
            if !candidate.exists() && !unpublished.contains(&candidate) {
                break candidate;
            }
        };
        self.next.insert(bucket.to_string(), n);
        let mut part = match (&mut self.txn, &self.staging) {
            (Some(t), Some(staging)) => {
                t.seq += 1;
                let name = target
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let temp = staging.join(format!("{}.{name}", t.seq));
                Part::create(temp, target, self.cfg.compression, false)?
            }
            _ => {
                let p = Part::create(target.clone(), target, self.cfg.compression, true)?;
                if self.cfg.sync.fsync {
                    if let Some(dir) = p.target.parent().filter(|d| !d.as_os_str().is_empty()) {
                        part::sync_dir(dir)?;
                    }
                }
                p
            }
        };
        if self.cfg.header {
            let mut head = String::new();
            push_header(&mut head, self.cfg.format, &self.names);
            head.push('\n');
            part.write(head.as_bytes())?;
            part.records = 0;
        }
        Ok(part)
    }

    /// Whether a part must rotate now (by size or record count).
    fn full(&self, p: &Part) -> bool {
        let r = &self.cfg.rotate;
        r.records.is_some_and(|n| p.records >= n) || r.size.is_some_and(|s| p.bytes >= s)
    }

    /// Close the part of `bucket`: published with the next checkpoint with state, else done.
    fn close(&mut self, bucket: &str) -> anyhow::Result<()> {
        let Some(part) = self.open.remove(bucket) else {
            return Ok(());
        };
        let (temp, target) = part.close().map_err(|e| self.fatal(e))?;
        if let Some(t) = self.txn.as_mut() {
            t.closed.push(Pending { temp, target });
        }
        Ok(())
    }

    /// Close the parts whose age or idleness says so.
    fn rotate_by_time(&mut self) -> anyhow::Result<()> {
        let (r, clock) = (&self.cfg.rotate, &self.machine_clock);
        let due: Vec<String> = self
            .open
            .iter()
            .filter(|(_, p)| {
                r.interval.is_some_and(|i| clock.since(p.opened) >= i)
                    || clock.since(p.last_write) >= r.inactive
            })
            .map(|(b, _)| b.clone())
            .collect();
        for b in due {
            self.close(&b)?;
        }
        Ok(())
    }

    /// Without state: make what was written durable (`sync`), then ack its inputs; a write
    /// that failed fails them and ends the run.
    fn sync(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let fsync = self.cfg.sync.fsync;
        let result = self.open.values_mut().try_for_each(|p| p.seal(fsync));
        self.last_sync = self.machine_clock.now();
        match result {
            Ok(()) => {
                self.unsynced.drain(..).for_each(|t| out.ack(&t));
                Ok(())
            }
            Err(e) => {
                self.unsynced.drain(..).for_each(|t| out.fail(&t));
                Err(self.fatal(e))
            }
        }
    }

    /// With state, once per run before anything is written: clear the staging dir of files
    /// no checkpoint refers to (written after the checkpoint a resumed run started from).
    fn clean_staging(&mut self) -> anyhow::Result<()> {
        let (Some(t), Some(staging)) = (self.txn.as_mut(), &self.staging) else {
            return Ok(());
        };
        if t.cleaned {
            return Ok(());
        }
        t.cleaned = true;
        let pending = t.unpublished();
        let keep: Vec<&Path> = self
            .open
            .values()
            .map(|p| p.temp.as_path())
            .chain(pending.iter().map(|p| p.temp.as_path()))
            .collect();
        let removed =
            commit::clear_staging(staging, &keep).map_err(|e| FatalError(e.to_string()))?;
        if removed > 0 {
            tracing::info!(
                "{}: removed {removed} in-progress file(s) of an uncommitted checkpoint",
                self.label
            );
        }
        Ok(())
    }

    /// Publish the closed parts of every checkpoint committed by now.
    fn publish_committed(&mut self) -> anyhow::Result<()> {
        let committed = crate::components::committed::last();
        let due = self
            .txn
            .as_mut()
            .map(|t| t.due(committed))
            .unwrap_or_default();
        for p in &due {
            commit::publish(p).map_err(|e| self.fatal(e))?;
        }
        Ok(())
    }

    /// The end of the run, with state: once the checkpoint saved after `finish` committed,
    /// publish everything (without such a save, there is nothing to wait for).
    fn publish_at_end(&mut self) {
        let Some(t) = self.txn.as_ref().filter(|t| t.finished) else {
            return;
        };
        if t.saved_after_finish {
            let after = t.last_marker.unwrap_or(0);
            if !crate::components::committed::wait_for(after + 1, COMMIT_WAIT) {
                tracing::warn!("{}: the last checkpoint did not commit within {}s; its files stay in {} (a run resumed from the state dir publishes them)", self.label, COMMIT_WAIT.as_secs(), self.staging.as_deref().unwrap_or(Path::new(".")).display());
                return;
            }
        }
        let all = self.txn.as_ref().map(|t| {
            let mut all = t.unpublished();
            all.extend(t.closed.iter().cloned());
            all
        });
        for p in all.unwrap_or_default() {
            if let Err(e) = commit::publish(&p) {
                tracing::error!("{}: {e}", self.label);
            }
        }
        if let Some(t) = self.txn.as_mut() {
            t.ready.clear();
            t.prepared = None;
            t.closed.clear();
        }
    }

    /// The directories the sink writes in, made (and, without state, tried) at prepare.
    fn make_dirs(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        let root = self.base_dir.join(self.cfg.path.root());
        let create = |dir: &Path| {
            std::fs::create_dir_all(dir)
                .map_err(|e| self.fatal(format!("cannot create {}: {e}", dir.display())))
        };
        create(&root)?;
        if self.txn.is_some() {
            let name = format!("{}.{}.{}", ctx.topology.name, ctx.component, ctx.task_index);
            let staging = root.join(".storm-staging").join(name);
            create(&staging)?;
            self.staging = Some(staging);
        } else {
            let probe = root.join(format!(
                ".storm-probe-{}-{}",
                std::process::id(),
                ctx.task_index
            ));
            std::fs::write(&probe, b"")
                .map_err(|e| self.fatal(format!("cannot write in {}: {e}", root.display())))?;
            let _ = std::fs::remove_file(&probe);
        }
        Ok(())
    }
}

impl BoltState for FileSink {
    /// A checkpoint's save: every open part synced (its length saved), the parts closed
    /// since the last save set aside for this checkpoint, and all not yet published saved.
    fn changes_into(
        &mut self,
        _all: bool,
        sink: &mut crate::components::ChangeSink<'_>,
    ) -> anyhow::Result<()> {
        self.clean_staging()?;
        let sealed = self.open.values_mut().try_for_each(|p| p.seal(true));
        sealed.map_err(|e| self.fatal(e))?;
        let parts = self
            .open
            .iter()
            .map(|(bucket, p)| SavedPart {
                bucket: bucket.clone(),
                temp: p.temp.clone(),
                target: p.target.clone(),
                len: p.len,
                records: p.records,
                bytes: p.bytes,
            })
            .collect();
        let Some(t) = self.txn.as_mut() else {
            return Ok(());
        };
        let mut closed = std::mem::take(&mut t.closed);
        if let Some(mut p) = t.prepared.take() {
            // Saved without a marker after it: goes with this checkpoint.
            p.append(&mut closed);
            closed = p;
        }
        t.prepared = Some(closed);
        t.saved_after_finish |= t.finished;
        let saved = Saved {
            seq: t.seq,
            parts,
            pending: t.unpublished(),
            next: self.next.clone(),
        };
        let json = serde_json::to_string(&saved).map_err(|e| self.fatal(e))?;
        sink(&Value::str(STATE_KEY), Some(&Value::str(&json)))
    }

    /// Resume from a checkpoint: publish what it had closed, reopen what it had open.
    fn restore(&mut self, entries: Vec<(Value, Value)>) -> anyhow::Result<()> {
        let Some((_, v)) = entries.iter().find(|(k, _)| k.as_str() == Some(STATE_KEY)) else {
            return Ok(());
        };
        let saved: Saved = serde_json::from_str(v.as_str().unwrap_or_default())
            .map_err(|e| self.fatal(format!("its saved state does not read: {e}")))?;
        for p in &saved.pending {
            commit::publish(p).map_err(|e| self.fatal(e))?;
        }
        self.open.clear();
        for s in saved.parts {
            let mut p = Part::resume(s.temp, s.target, self.cfg.compression, s.len)
                .map_err(|e| self.fatal(e))?;
            p.records = s.records;
            p.bytes = s.bytes;
            p.stamp(self.machine_clock.now());
            self.open.insert(s.bucket, p);
        }
        self.next = saved.next;
        if let Some(t) = self.txn.as_mut() {
            t.seq = saved.seq;
        }
        Ok(())
    }
}

impl Bolt for FileSink {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.label = format!("{} task {}", ctx.component, ctx.task_index);
        self.machine_clock = ctx.clock.clone();
        self.last_sync = self.machine_clock.now();
        self.names = crate::components::input_fields(ctx);
        let position = |n: &str| self.names.iter().position(|f| f == n);
        self.cfg
            .path
            .bind(position)
            .map_err(|e| self.fatal(format!("`path`: {e}")))?;
        let at = |n: &Option<String>| -> anyhow::Result<Option<usize>> {
            match n {
                Some(n) => Ok(Some(crate::components::input_positions(ctx, &[n])?[0])),
                None => Ok(None),
            }
        };
        self.raw_at = at(&self.cfg.raw_field)?.unwrap_or(0);
        self.time_at = at(&self.cfg.time_field)?;
        self.task = ctx.spec().filter(|c| c.tasks > 1).map(|_| ctx.task_index);
        // Tuples wait for the sync to be acked, and spouts stop at their pending bound: a
        // sync every `records` larger than that bound would wait for the interval each time.
        let pending = ctx.config.max_spout_pending_or_default();
        self.sync_records = self.cfg.sync.records.min((pending / 4).max(1));
        self.make_dirs(ctx)
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            if self.txn.is_none() {
                out.ack(input);
            }
            return Ok(());
        }
        self.clean_staging()?;
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        push_record(
            &mut line,
            self.cfg.format,
            &self.names,
            &input.values,
            self.raw_at,
        );
        line.push('\n');
        let time = self.time_of(input);
        let bucket = self.cfg.path.render(&input.values, time);
        let now = self.machine_clock.now();
        let written = self.part_for(&bucket).and_then(|p| {
            p.write(line.as_bytes())?;
            p.last_write = now;
            Ok(())
        });
        self.line = line;
        if let Err(e) = written {
            if self.txn.is_none() {
                out.fail(input);
            }
            return Err(self.fatal(format!("{e:#}")));
        }
        if self.open.get(&bucket).is_some_and(|p| self.full(p)) {
            self.close(&bucket)?;
        }
        if self.txn.is_none() {
            self.unsynced.push(input.clone());
            if self.unsynced.len() as u64 >= self.sync_records {
                self.sync(out)?;
            }
        }
        Ok(())
    }

    fn poll(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.clean_staging()?;
        self.rotate_by_time()?;
        if self.txn.is_some() {
            return self.publish_committed();
        }
        let since_sync = self.machine_clock.since(self.last_sync);
        if !self.unsynced.is_empty() && since_sync >= self.cfg.sync.interval {
            self.sync(out)?;
        }
        Ok(())
    }

    fn poll_interval(&self) -> Option<Duration> {
        let sync = self.cfg.sync.interval;
        Some(if self.txn.is_some() {
            Duration::from_millis(20)
        } else {
            sync.min(Duration::from_millis(100))
        })
    }

    fn auto_ack(&self) -> bool {
        false
    }

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.clean_staging()?;
        let buckets: Vec<String> = self.open.keys().cloned().collect();
        for b in buckets {
            self.close(&b)?;
        }
        match self.txn.as_mut() {
            Some(t) => t.finished = true,
            None => self.sync(out)?,
        }
        Ok(())
    }

    fn cleanup(&mut self) {
        self.publish_at_end();
    }
}

impl crate::components::CheckpointParticipant for FileSink {
    /// Its held output is state only when it writes exactly once.
    fn state(&mut self) -> Option<&mut dyn BoltState> {
        self.txn.is_some().then_some(self as &mut dyn BoltState)
    }
    fn checkpoint_marker(&mut self, _round: u64, txid: u64) -> anyhow::Result<()> {
        if let Some(t) = self.txn.as_mut() {
            if let Some(parts) = t.prepared.take() {
                t.ready.push_back((txid, parts));
            }
            t.last_marker = Some(txid);
        }
        Ok(())
    }
}

/// The sink for component `c` (relative paths from the topology file's folder).
fn bolt(
    c: &crate::model::Component,
    base_dir: &Path,
) -> anyhow::Result<Box<dyn crate::components::CheckpointParticipant>> {
    Ok(Box::new(
        FileSink::new(&c.args, c.stateful, base_dir)
            .map_err(|e| anyhow::anyhow!("{}: {e}", c.id))?,
    ))
}
