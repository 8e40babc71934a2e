//! A worker's part in the checkpoints nimbus coordinates (a checkpointed topology whose
//! workers run in several processes): join the topology's current generation and wait until
//! every worker did, restore this worker's tasks from the last commit, and ship what its tasks
//! prepare, and when they end, to nimbus. Every answer names the current generation; a newer
//! one than this worker's means a worker was lost and this one must roll back.

use crate::cluster::coordination::layout::NodePort;
use crate::cluster::protocol::rpc::{
    self, CheckpointNews, CheckpointReply, JoinReply, Request, StatePage,
};
use crate::components::stdin_file::feed;
use crate::model::plan::Plan;
use crate::model::Topology;
use crate::placement::Placement;
use crate::runtime::checkpoint::setup::saving_tasks;
use crate::runtime::checkpoint::{task_key, RemoteCheckpoints, Report};
use crate::state::{packed, RawState, Store, TaskKey};
use crate::tuple::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most bytes of rows one shipped part carries (a request is at most 16 MB).
const PART_BYTES: usize = 4 << 20;
/// How long a worker waits for the other workers to join its generation.
const JOIN_WAIT: Duration = Duration::from_secs(300);
/// How long a part is offered to an unreachable nimbus before the worker gives up on it.
const SHIP_RETRY_FOR: Duration = Duration::from_secs(30);

/// A worker's checkpoints while it runs.
pub(crate) struct WorkerCheckpoints {
    pub(crate) generation: u64,
    /// The newest generation heard of.
    newest: Arc<AtomicU64>,
    /// Shipping failed: nimbus lost what this worker prepared, so it rolls back.
    failed: Arc<AtomicBool>,
    shipper: Option<JoinHandle<()>>,
}

impl WorkerCheckpoints {
    /// Whether this worker must roll back (a newer generation, or a part nimbus never got).
    pub(crate) fn rolled_back(&self) -> bool {
        self.newest.load(Ordering::Relaxed) > self.generation || self.failed.load(Ordering::Relaxed)
    }

    /// What a heartbeat's answer says: the current generation, and the last commit in it
    /// (what it covers of the held output goes out).
    pub(crate) fn heard(&self, generation: u64, committed: u64) {
        self.newest.fetch_max(generation, Ordering::Relaxed);
        if generation == self.generation {
            release_output(committed);
        }
    }

    /// Wait until everything the tasks reported is shipped (their report channel is closed
    /// once the run ended).
    pub(crate) fn shipped(&mut self) {
        if let Some(h) = self.shipper.take() {
            let _ = h.join();
        }
    }
}

/// How a worker's start in a checkpointed topology went.
pub(crate) enum Start {
    /// Joined and restored: what the runtime takes part in checkpoints with.
    Started(RemoteCheckpoints, WorkerCheckpoints),
    /// `stop` was set while joining.
    Stopped,
    /// The generation runs with another assignment than the worker placed itself by.
    Moved,
}

/// Join topology `id`'s generation from `slot` as `incarnation` (drawn once per worker run)
/// and wait until every worker joined it. `None`: `stop` was set meanwhile.
fn join(
    nimbus: &rpc::Client,
    (id, slot, incarnation): (&str, &NodePort, u64),
    stop: &AtomicBool,
    beat: &dyn Fn(),
) -> anyhow::Result<Option<JoinReply>> {
    let request = Request::CheckpointJoin {
        id: id.into(),
        slot: slot.clone(),
        incarnation,
    };
    let deadline = Instant::now() + JOIN_WAIT;
    let mut next_beat = Instant::now();
    let mut next_warning = Instant::now();
    loop {
        if Instant::now() >= next_beat {
            beat();
            next_beat = Instant::now() + Duration::from_secs(1);
        }
        // No answer, or a leader that cannot take the topology over yet (it fetches the
        // state from the nimbus that held it): asked again until the wait is over, rather
        // than the worker dying and its slot being reported failing.
        let reply: JoinReply = match nimbus.call(&request) {
            Ok(reply) => reply,
            Err(e) if retried(&e, deadline, stop) => {
                if Instant::now() >= next_warning {
                    tracing::warn!("joining the checkpoints of {id}: {e:#}; asking again");
                    next_warning = Instant::now() + Duration::from_secs(10);
                }
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
            Err(e) => return Err(e),
        };
        // Every worker joined: the others run this generation, and what they drain needs
        // this worker's tasks, so it runs too, even stopped (its spouts then stay inactive).
        if reply.ready {
            return Ok(Some(reply));
        }
        // A stopped (killed, draining) topology's worker that starts again runs nothing once
        // it joined (a restarted one rolls the others back: what they drain needs the tasks
        // it lost).
        if stop.load(Ordering::Relaxed) || reply.killed {
            return Ok(None);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the other workers of {id} did not join generation {} within {}",
            reply.generation,
            humantime::format_duration(JOIN_WAIT)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether a failed join is asked again: before `deadline`, unless stopped or the topology is
/// gone (killed, or finished).
fn retried(e: &anyhow::Error, deadline: Instant, stop: &AtomicBool) -> bool {
    let gone = format!("{e:#}").contains("no topology");
    !gone && Instant::now() < deadline && !stop.load(Ordering::Relaxed)
}

/// The tasks of worker `me` that save checkpoints, with their names in the store.
fn local_saving_tasks(
    topology: &Topology,
    plan: &Plan,
    placement: &Placement,
    me: usize,
) -> BTreeMap<u32, TaskKey> {
    let saving = saving_tasks(topology, plan);
    let mut out = BTreeMap::new();
    for (component, tasks) in placement.executors_of(plan, me) {
        let first = plan.component(component).map_or(0, |c| *c.tasks.start());
        for t in tasks.filter(|t| saving.contains(t)) {
            out.insert(t, task_key(component, t - first));
        }
    }
    out
}

/// Restore `task`'s committed state from nimbus into `store`, page by page.
fn restore(
    nimbus: &rpc::Client,
    id: &str,
    generation: u64,
    task: &TaskKey,
    store: &Store,
) -> anyhow::Result<()> {
    let mut from = Some(0);
    while let Some(f) = from {
        let page: StatePage = nimbus.call(&Request::CheckpointState {
            id: id.into(),
            generation,
            task: task.clone(),
            from: f,
        })?;
        store.restore_rows(task, &packed::unpack(&page.state)?)?;
        from = page.next;
    }
    Ok(())
}

/// Who a worker is: its topology, its slot, its incarnation (drawn once per worker run), and
/// the version of the assignment it placed itself by.
pub(crate) struct Joining<'a> {
    pub(crate) id: &'a str,
    pub(crate) slot: &'a NodePort,
    pub(crate) incarnation: u64,
    pub(crate) assignment: u64,
}

/// Join the generation, restore this worker's tasks and start shipping their reports. A
/// generation that ends while this worker restores is joined again.
pub(crate) fn start(
    nimbus: &rpc::Client,
    who: &Joining<'_>,
    (topology, plan, placement, me): (&Topology, &Plan, &Placement, usize),
    stop: &AtomicBool,
    beat: &dyn Fn(),
) -> anyhow::Result<Start> {
    let keys = local_saving_tasks(topology, plan, placement, me);
    let (joined, store) = loop {
        let Some(joined) = join(nimbus, (who.id, who.slot, who.incarnation), stop, beat)? else {
            return Ok(Start::Stopped);
        };
        if joined.assignment != who.assignment {
            return Ok(Start::Moved);
        }
        let store = Arc::new(Store::memory()?);
        let restored = match joined.txid {
            0 => Ok(()),
            _ => keys
                .values()
                .try_for_each(|key| restore(nimbus, who.id, joined.generation, key, &store)),
        };
        match restored {
            Ok(()) => break (joined, store),
            Err(e) => {
                let now: CheckpointReply =
                    nimbus.call(&Request::CheckpointStatus { id: who.id.into() })?;
                if now.generation == joined.generation {
                    return Err(e);
                }
            }
        }
    };
    let stdin_task = keys.iter().find_map(|(t, k)| {
        let c = topology.component(&k.component)?;
        (c.ctype.is_console() && c.is_spout()).then_some(*t)
    });
    if stdin_task.is_some() {
        feed::enable()?;
    }
    // Printed lines are not taken back: they wait for the commit after them.
    if runs_stdout(topology, plan, placement, me) {
        crate::components::output_gate::enable();
    }
    let (reports, rx) = crossbeam_channel::unbounded();
    let newest = Arc::new(AtomicU64::new(joined.generation));
    let failed = Arc::new(AtomicBool::new(false));
    let shipper = Shipper {
        nimbus: nimbus.clone(),
        id: who.id.into(),
        generation: joined.generation,
        store: store.clone(),
        shipped: keys.keys().map(|&t| (t, 0)).collect(),
        keys,
        stdin_task,
        offsets: BTreeMap::new(),
        newest: newest.clone(),
        failed: failed.clone(),
    };
    let handle = std::thread::Builder::new()
        .name("checkpoint-ship".into())
        .spawn(move || shipper.run(rx))?;
    let remote = RemoteCheckpoints {
        store,
        base: joined.txid,
        reports,
        rollback: joined.generation > 1,
    };
    let worker = WorkerCheckpoints {
        generation: joined.generation,
        newest,
        failed,
        shipper: Some(handle),
    };
    Ok(Start::Started(remote, worker))
}

/// Ships the reports of a worker's tasks to nimbus, in order.
struct Shipper {
    nimbus: rpc::Client,
    id: String,
    generation: u64,
    store: Arc<Store>,
    keys: BTreeMap<u32, TaskKey>,
    /// The last txid each task shipped (`u64::MAX`: ended).
    shipped: BTreeMap<u32, u64>,
    /// The `stdin` spout's task here, whose kept input is trimmed at each commit.
    stdin_task: Option<u32>,
    /// Its input offset at each checkpoint shipped and not yet committed.
    offsets: BTreeMap<u64, u64>,
    newest: Arc<AtomicU64>,
    failed: Arc<AtomicBool>,
}

impl Shipper {
    fn run(mut self, reports: crossbeam_channel::Receiver<Report>) {
        for report in reports {
            if self.failed.load(Ordering::Relaxed) {
                continue;
            }
            if let Err(e) = self.ship(report) {
                tracing::warn!("checkpoints of {}: {e:#}; rolling back", self.id);
                self.failed.store(true, Ordering::Relaxed);
            }
        }
    }

    fn ship(&mut self, report: Report) -> anyhow::Result<()> {
        let news = match report {
            Report::Prepared { txid, task } => self.prepared(txid, task)?,
            Report::Finished { task } => {
                self.shipped.insert(task, u64::MAX);
                vec![CheckpointNews::Finished { task }]
            }
        };
        for n in news {
            let reply = self.send(n)?;
            self.newest.fetch_max(reply.generation, Ordering::Relaxed);
            if reply.generation == self.generation {
                self.committed(reply.committed);
                release_output(reply.committed);
            }
        }
        // What every task here shipped is nimbus's now.
        if let Some(&low) = self.shipped.values().min() {
            self.store.drop_prepared_upto(low)?;
        }
        Ok(())
    }

    /// The parts of what `task` prepared under `txid`.
    fn prepared(&mut self, txid: u64, task: u32) -> anyhow::Result<Vec<CheckpointNews>> {
        let key = self
            .keys
            .get(&task)
            .ok_or_else(|| anyhow::anyhow!("task {task} is not one of this worker's"))?
            .clone();
        let raw = self.store.prepared_rows(txid, &key)?;
        if Some(task) == self.stdin_task {
            if let Some(offset) = raw.position.as_deref().and_then(offset_of) {
                self.offsets.insert(txid, offset);
            }
        }
        self.shipped.insert(task, txid);
        let parts = split(raw);
        let n = parts.len();
        Ok(parts
            .into_iter()
            .enumerate()
            .map(|(i, part)| CheckpointNews::Prepared {
                txid,
                task,
                key: key.clone(),
                part: packed::pack(&part),
                last: i + 1 == n,
            })
            .collect())
    }

    /// Send one piece of news, trying again while nimbus cannot be reached.
    fn send(&self, news: CheckpointNews) -> anyhow::Result<CheckpointReply> {
        let request = Request::Checkpoint {
            id: self.id.clone(),
            generation: self.generation,
            news,
        };
        let deadline = Instant::now() + SHIP_RETRY_FOR;
        let mut delay = Duration::from_millis(50);
        loop {
            match self.nimbus.call(&request) {
                Ok(reply) => return Ok(reply),
                Err(e) if Instant::now() >= deadline => return Err(e),
                Err(e) => tracing::debug!("shipping a checkpoint part: {e:#}; trying again"),
            }
            std::thread::sleep(delay);
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }

    /// Checkpoint `txid` is committed: the kept standard input before its offset goes.
    fn committed(&mut self, txid: u64) {
        let Some((_, &offset)) = self.offsets.range(..=txid).next_back() else {
            return;
        };
        if let Some(f) = feed::get() {
            f.trim(offset);
        }
        self.offsets = self.offsets.split_off(&(txid + 1));
    }
}

/// Write the held output checkpoint `committed` covers (and let this process's transactional
/// Kafka sinks write the checkpoints it covers).
fn release_output(committed: u64) {
    crate::components::committed::checkpoint_committed(committed);
    if let Err(e) = crate::components::stdout::release_held(Some(committed)) {
        tracing::warn!("cannot write to standard output: {e}");
    }
}

/// Whether worker `me` runs a `stdout` sink.
fn runs_stdout(topology: &Topology, plan: &Plan, placement: &Placement, me: usize) -> bool {
    placement.executors_of(plan, me).any(|(component, _)| {
        topology
            .component(component)
            .is_some_and(|c| c.ctype.is_console() && !c.is_spout())
    })
}

/// `raw` in parts of at most [`PART_BYTES`] of rows (at least one part; the position goes with
/// the first).
fn split(raw: RawState) -> Vec<RawState> {
    let mut parts = vec![RawState {
        rows: Vec::new(),
        position: raw.position,
    }];
    let mut size = 0;
    for row in raw.rows {
        let len = row.0.len() + row.1.as_ref().map_or(0, Vec::len) + 8;
        if size > 0 && size + len > PART_BYTES {
            parts.push(RawState::default());
            size = 0;
        }
        size += len;
        if let Some(last) = parts.last_mut() {
            last.rows.push(row);
        }
    }
    parts
}

/// The input offset a line spout's encoded position records.
fn offset_of(position: &[u8]) -> Option<u64> {
    match crate::state::codec::from_bytes(position).ok()? {
        Value::Map(m) => match m.get("offset")? {
            Value::Int(n) => u64::try_from(*n).ok(),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_hold_every_row_once_in_order_within_the_limit() {
        let rows: Vec<_> = (0..30u32)
            .map(|i| (i.to_be_bytes().to_vec(), Some(vec![1; PART_BYTES / 7])))
            .collect();
        let parts = split(RawState {
            rows: rows.clone(),
            position: Some(vec![9]),
        });
        assert!(parts.len() > 3, "{}", parts.len());
        assert_eq!(parts[0].position, Some(vec![9]));
        assert!(parts[1..].iter().all(|p| p.position.is_none()));
        let sizes_ok = parts.iter().all(|p| {
            p.rows
                .iter()
                .map(|r| r.0.len() + 8 + PART_BYTES / 7)
                .sum::<usize>()
                <= PART_BYTES
        });
        assert!(sizes_ok);
        let back: Vec<_> = parts.into_iter().flat_map(|p| p.rows).collect();
        assert_eq!(back, rows);
        assert_eq!(
            split(RawState::default()).len(),
            1,
            "an empty part still says prepared"
        );
    }

    #[test]
    fn the_offset_of_a_line_spout_position_is_read() {
        let mut m = std::collections::BTreeMap::new();
        m.insert("offset".to_string(), Value::Int(42));
        let bytes = crate::state::codec::to_bytes(&Value::Map(Box::new(m)));
        assert_eq!(offset_of(&bytes), Some(42));
        assert_eq!(
            offset_of(&crate::state::codec::to_bytes(&Value::Int(1))),
            None
        );
    }
}
