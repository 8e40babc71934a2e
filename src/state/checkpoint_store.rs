//! One worker's checkpoint store (Storm's state provider): for each task, its committed
//! key/value entries and (for a spout) its position, plus what checkpoints not yet known to be
//! committed prepared. An embedded ACID database (redb) under the state dir, or the same
//! tables in memory (`topology.state.provider: memory`).
//!
//! A checkpoint is written in two steps, as in Storm's state: `prepare` durably writes a task's
//! changes under the checkpoint's txid; once every task of the topology has prepared it, the
//! commit record ([`super::Commits`]) says so, and `fold` moves the prepared changes of every
//! txid up to it into the committed entries. A crash between the two leaves the prepared
//! changes; a restore folds what was committed and discards the rest.
//!
//! Tables, keys and values in [`super::codec`]'s encoding, every value sealed with a checksum
//! ([`super::guard`]) verified on read:
//! - `committed`: (component, index, key) → value
//! - `digests`: (component, index) → the count and checksum XOR of the task's committed rows
//! - `positions`: (component, index) → position
//! - `prepared-TXID`: (component, index, key) → value, or a removal
//! - `prepared_positions-TXID`: (component, index) → position
//!
//! A table per txid: folding or discarding a checkpoint deletes its tables whole. (Removing a
//! million rows one by one from one shared table took redb 80 s and grew the file to 14 GB in
//! our benchmark; deleting the table takes microseconds.)
//!
//! Only `prepare` pays for a durable commit (an fsync): `fold` and `discard_after` commit
//! without one. redb reopens a crashed database at its last durable commit, and each durable
//! commit makes the ones before it durable too, so a fold or discard lost in a crash leaves the
//! prepared changes it would have moved or dropped, which the restore folds or discards again.

use super::codec;
use super::guard::{self, caught, Digest};
use super::TaskKey;
use crate::tuple::Value;
use anyhow::Context;
use redb::{Database, Durability, ReadableTable, TableDefinition, TableHandle, WriteTransaction};
use std::path::Path;

type Committed<'a> = TableDefinition<'a, (&'static str, u32, &'static [u8]), &'static [u8]>;
type Prepared<'a> = TableDefinition<'a, (&'static str, u32, &'static [u8]), &'static [u8]>;
type Positions<'a> = TableDefinition<'a, (&'static str, u32), &'static [u8]>;

const COMMITTED: Committed = TableDefinition::new("committed");

/// The page cache of a worker's store file (redb's default, 1 GiB, would let a store of
/// millions of keys hold as much memory as the keyed state it checkpoints).
const STORE_CACHE: usize = 64 << 20;
const POSITIONS: Positions = TableDefinition::new("positions");
const DIGESTS: Positions = TableDefinition::new("digests");
/// `writes`: how many write transactions the store has committed (u64, sealed), so a store the
/// database opened at an older transaction (its newest header slot damaged) is told from the
/// mark beside it (`commit_mark.rs`).
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// The names of a txid's prepared tables start so, the txid follows in decimal.
const PREPARED: &str = "prepared-";
const PREPARED_POSITIONS: &str = "prepared_positions-";

/// The prepared changes of `txid`.
fn prepared(txid: u64) -> (String, String) {
    (
        format!("{PREPARED}{txid}"),
        format!("{PREPARED_POSITIONS}{txid}"),
    )
}

/// One task's part of a checkpoint: its changes (`None`: removed) and, for a spout, its
/// position.
type TaskChanges<'a> = (&'a TaskKey, &'a [(Value, Option<Value>)], Option<&'a Value>);

/// Takes a task's changes one row at a time (`None`: the key was removed) as
/// [`Store::prepare_with`] writes them, so a checkpoint of millions of keys is never held whole.
pub(crate) type ChangeSink<'a> = dyn FnMut(&Value, Option<&Value>) -> anyhow::Result<()> + 'a;

/// One task's part of a checkpoint or its committed state, as the store encodes it: rows of
/// (key, value, `None` for a removal) and a spout's position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RawState {
    pub(crate) rows: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    pub(crate) position: Option<Vec<u8>>,
}

pub struct Store {
    db: guard::GuardedDb,
    /// Its mark (`worker-N.mark`), moved on after each durable write, when it has one, with
    /// the count it holds: the tasks of a worker write from their own threads, so the mark is
    /// written by one at a time and only forward.
    mark: Option<(std::path::PathBuf, std::sync::Mutex<u64>)>,
    /// The file, or "memory", for errors.
    name: String,
}

/// The write transactions `db` has committed (0 for a new store).
fn writes_of(db: &Database) -> anyhow::Result<u64> {
    let tx = db.begin_read()?;
    let table = match tx.open_table(META) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let stored = table.get("writes")?;
    stored.map_or(Ok(0), |s| guard::unseal_u64("meta", b"writes", s.value()))
}

/// Count one more write in `tx`: the count it commits.
fn count_write(tx: &WriteTransaction) -> anyhow::Result<u64> {
    let mut table = tx.open_table(META)?;
    let stored = table.get("writes")?;
    let writes = stored.map_or(Ok(0), |s| guard::unseal_u64("meta", b"writes", s.value()))? + 1;
    let sealed = guard::seal("meta", "", 0, b"writes", &writes.to_le_bytes());
    table.insert("writes", sealed.as_slice())?;
    Ok(writes)
}

impl Store {
    /// Open (creating it, and its dir, if missing) the store of a worker at `path`.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        Store::open_checked(path, |_| Ok(()))
    }

    /// [`Store::open`], with `check` run on the database before anything is written to it.
    fn open_checked(
        path: &Path,
        check: impl FnOnce(&Database) -> anyhow::Result<()>,
    ) -> anyhow::Result<Store> {
        let name = path.display().to_string();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot make the state dir {}", dir.display()))?;
        }
        caught(&name, || {
            let db = Database::builder()
                .set_cache_size(STORE_CACHE)
                .create(path)
                .map_err(|e| open_error("store", &name, e))?;
            let db = guard::GuardedDb::new(db, &name);
            check(&db).with_context(|| format!("reading {name}"))?;
            Store::with_tables(db, name.clone())
        })
    }

    /// Open the worker store at `path` of a state dir as [`Store::open`], held to its mark
    /// (`worker-N.mark` beside it): refused when it holds fewer writes than the mark counts,
    /// which each durable write then moves on. Checked before the store is written to.
    pub(crate) fn open_marked(path: &Path) -> anyhow::Result<Store> {
        let mark = path.with_extension("mark");
        let dir = path.parent().unwrap_or(Path::new("."));
        let marked = super::commit_mark::read_at(&mark, dir)?;
        let mut store = Store::open_checked(path, |db| {
            let Some(marked) = marked else {
                return Ok(());
            };
            let writes = writes_of(db)?;
            anyhow::ensure!(
                writes >= marked,
                "{} holds {writes} writes, but {marked} were made ({}): the store is \
                 damaged (its newest transactions are lost), and resuming from it would count \
                 input again or lose it (`storm run --fresh` or `storm state clear {}` start \
                 over)",
                path.display(),
                mark.display(),
                dir.display()
            );
            Ok(())
        })?;
        store.mark = Some((mark, std::sync::Mutex::new(0)));
        Ok(store)
    }

    /// The worker store just made in a dir since renamed, now at `path`: held to its mark
    /// from now on (a new store has none to check it against), as [`Store::open_marked`]
    /// holds one.
    pub(crate) fn moved_to(mut self, path: &Path) -> Store {
        self.name = path.display().to_string();
        self.db.rename(&self.name);
        self.mark = Some((path.with_extension("mark"), std::sync::Mutex::new(0)));
        self
    }

    /// Its file, or "memory", for messages.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// A store in memory.
    pub(crate) fn memory() -> anyhow::Result<Store> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .context("cannot make a store in memory")?;
        Store::with_tables(guard::GuardedDb::new(db, "memory"), "memory".into())
    }

    /// Make the tables (a new database has none; reads need them).
    fn with_tables(db: guard::GuardedDb, name: String) -> anyhow::Result<Store> {
        let store = Store {
            db,
            mark: None,
            name,
        };
        store.write(Durability::Immediate, |tx| {
            tx.open_table(COMMITTED)?;
            tx.open_table(POSITIONS)?;
            tx.open_table(DIGESTS)?;
            Ok(())
        })?;
        Ok(store)
    }

    /// Run `f` in one write transaction, committed with `durability`.
    fn write(
        &self,
        durability: Durability,
        f: impl FnOnce(&WriteTransaction) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let durable = matches!(durability, Durability::Immediate);
        let writes = guard::write_tx(&self.db, &self.name, durability, |tx| {
            f(tx)?;
            count_write(tx)
        })
        .with_context(|| self.name.clone())?;
        match &self.mark {
            Some((mark, written)) if durable => {
                let mut written = written.lock().unwrap_or_else(|e| e.into_inner());
                if writes > *written {
                    super::commit_mark::write_at(mark, writes)?;
                    *written = writes;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Run the read `f`; a panic in the database becomes an error naming the file.
    fn read<T>(&self, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
        caught(&self.name, f).with_context(|| format!("reading {}", self.name))
    }

    /// Durably write `task`'s changes (`None`: the key was removed) and, for a spout, its
    /// position, as prepared under `txid`, in one transaction.
    pub fn prepare(
        &self,
        txid: u64,
        task: &TaskKey,
        changes: &[(Value, Option<Value>)],
        position: Option<&Value>,
    ) -> anyhow::Result<()> {
        self.prepare_all(txid, &[(task, changes, position)])
            .with_context(|| format!("preparing checkpoint {txid} of {task}"))
    }

    /// [`Store::prepare`] for several tasks (a worker's) in one transaction: one fsync for all.
    fn prepare_all(&self, txid: u64, tasks: &[TaskChanges<'_>]) -> anyhow::Result<()> {
        self.write_prepared(txid, |rows| {
            for (task, changes, position) in tasks {
                for (k, v) in changes.iter() {
                    rows.change(task, k, v.as_ref())?;
                }
                if let Some(p) = position {
                    rows.position(task, p)?;
                }
            }
            Ok(())
        })
        .with_context(|| format!("preparing checkpoint {txid}"))
    }

    /// [`Store::prepare`] with the changes handed one at a time by `fill` to the sink it is
    /// given, written as they come: a task whose checkpoint lists millions of keys never holds
    /// them all. An error of `fill` writes nothing.
    pub(crate) fn prepare_with(
        &self,
        txid: u64,
        task: &TaskKey,
        position: Option<&Value>,
        fill: impl FnOnce(&mut ChangeSink<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.write_prepared(txid, |rows| {
            fill(&mut |k, v| rows.change(task, k, v))?;
            match position {
                Some(p) => rows.position(task, p),
                None => Ok(()),
            }
        })
        .with_context(|| format!("preparing checkpoint {txid} of {task}"))
    }

    /// Durably write, in one transaction, what `f` puts in `txid`'s prepared tables.
    fn write_prepared(
        &self,
        txid: u64,
        f: impl FnOnce(&mut PreparedRows<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let (changes_table, position_table) = prepared(txid);
        self.write(Durability::Immediate, |tx| {
            let mut rows = PreparedRows {
                changes: tx.open_table(Prepared::new(&changes_table))?,
                positions: tx.open_table(Positions::new(&position_table))?,
                key: Vec::new(),
                value: Vec::new(),
                pending: Vec::new(),
                pending_task: None,
            };
            f(&mut rows)?;
            rows.flush()
        })
    }

    /// Fold what every txid up to `txid` prepared into the committed entries, oldest first, in
    /// one transaction. Folding again is harmless.
    pub(crate) fn fold(&self, txid: u64) -> anyhow::Result<()> {
        self.write(Durability::None, |tx| {
            let mut committed = tx.open_table(COMMITTED)?;
            let mut positions = tx.open_table(POSITIONS)?;
            let mut digests = Digests::default();
            for t in prepared_txids(tx.list_tables()?.map(|h| h.name().to_string())) {
                if t > txid {
                    break;
                }
                let (changes_table, position_table) = prepared(t);
                for row in tx.open_table(Prepared::new(&changes_table))?.iter()? {
                    let (k, v) = row?;
                    let (c, i, key) = k.value();
                    let change = guard::unseal_change(c, i, key, v.value())
                        .with_context(|| format!("in checkpoint {t}"))?;
                    let digest = digests.of(tx, c, i)?;
                    let old = match change {
                        Some(v) => {
                            let sealed = guard::seal("committed", c, i, key, v);
                            digest.add(guard::stored_sum(&sealed));
                            committed.insert((c, i, key), sealed.as_slice())?
                        }
                        None => committed.remove((c, i, key))?,
                    };
                    if let Some(old) = old {
                        digest.remove(guard::stored_sum(old.value()));
                    }
                }
                for row in tx.open_table(Positions::new(&position_table))?.iter()? {
                    let (k, v) = row?;
                    let (c, i) = k.value();
                    unseal_position(c, i, v.value())
                        .with_context(|| format!("in checkpoint {t}"))?;
                    positions.insert(k.value(), v.value())?;
                }
                tx.delete_table(Prepared::new(&changes_table))?;
                tx.delete_table(Positions::new(&position_table))?;
            }
            digests.save(tx)
        })
        .with_context(|| format!("folding checkpoints up to {txid}"))
    }

    /// Drop what txids after `txid` prepared (never committed: a restore starts from `txid`).
    pub(crate) fn discard_after(&self, txid: u64) -> anyhow::Result<()> {
        self.write(Durability::None, |tx| {
            for t in prepared_txids(tx.list_tables()?.map(|h| h.name().to_string())) {
                if t > txid {
                    let (changes_table, position_table) = prepared(t);
                    tx.delete_table(Prepared::new(&changes_table))?;
                    tx.delete_table(Positions::new(&position_table))?;
                }
            }
            Ok(())
        })
        .with_context(|| format!("discarding checkpoints after {txid}"))
    }

    /// `task`'s committed entries.
    pub(crate) fn entries(&self, task: &TaskKey) -> anyhow::Result<Vec<(Value, Value)>> {
        self.entries_of(task)?.collect()
    }

    /// `task`'s committed entries, read (and verified) one at a time as they are taken.
    pub(crate) fn entries_of(&self, task: &TaskKey) -> anyhow::Result<super::entries::Entries> {
        let open = || -> anyhow::Result<super::entries::Entries> {
            let tx = self.db.begin_read()?;
            let (c, i) = (task.component.as_str(), task.index);
            let recorded = match tx.open_table(DIGESTS)?.get((c, i))? {
                Some(d) => Digest::from_bytes(c, i, d.value())?,
                None => Digest::default(),
            };
            let rows = tx.open_table(COMMITTED)?.range((c, i, [].as_slice())..)?;
            let name = self.name.clone();
            Ok(super::entries::Entries::new(
                rows,
                task.clone(),
                recorded,
                name,
            ))
        };
        self.read(open)
            .with_context(|| format!("reading the entries of {task} in {}", self.name))
    }

    /// `task`'s committed position (spouts).
    pub(crate) fn position(&self, task: &TaskKey) -> anyhow::Result<Option<Value>> {
        let read = || -> anyhow::Result<Option<Value>> {
            let tx = self.db.begin_read()?;
            let table = tx.open_table(POSITIONS)?;
            let (c, i) = (task.component.as_str(), task.index);
            let Some(v) = table.get((c, i))? else {
                return Ok(None);
            };
            Ok(Some(codec::from_bytes(unseal_position(c, i, v.value())?)?))
        };
        self.read(read)
            .with_context(|| format!("reading the position of {task} in {}", self.name))
    }

    /// Every task with committed entries or a position.
    pub(crate) fn tasks(&self) -> anyhow::Result<Vec<TaskKey>> {
        let read = || -> anyhow::Result<Vec<TaskKey>> {
            let tx = self.db.begin_read()?;
            let mut tasks = std::collections::BTreeSet::new();
            for row in tx.open_table(COMMITTED)?.iter()? {
                let row = row?;
                let (c, i, _) = row.0.value();
                // Rows come in order, a task's together: copy the name once per task.
                let last = tasks
                    .last()
                    .map(|t: &TaskKey| (t.component.as_str(), t.index));
                if last != Some((c, i)) {
                    tasks.insert(task_key(c, i));
                }
            }
            for table in [POSITIONS, DIGESTS] {
                for row in tx.open_table(table)?.iter()? {
                    let row = row?;
                    let (c, i) = row.0.value();
                    tasks.insert(task_key(c, i));
                }
            }
            Ok(tasks.into_iter().collect())
        };
        self.read(read)
            .with_context(|| format!("listing the tasks in {}", self.name))
    }

    /// What `txid` prepared for `task`, as encoded in the store: its rows (key, value or
    /// `None` for a removal) and its position. A worker ships these to nimbus, which keeps the
    /// topology's checkpoints when its workers run in several processes.
    pub(crate) fn prepared_rows(&self, txid: u64, task: &TaskKey) -> anyhow::Result<RawState> {
        let read = || -> anyhow::Result<RawState> {
            let tx = self.db.begin_read()?;
            let (changes_table, position_table) = prepared(txid);
            let (component, index) = (task.component.as_str(), task.index);
            let mut raw = RawState::default();
            match tx.open_table(Prepared::new(&changes_table)) {
                Ok(table) => {
                    for row in table.range((component, index, [].as_slice())..)? {
                        let (k, v) = row?;
                        let (c, i, key) = k.value();
                        if (c, i) != (component, index) {
                            break;
                        }
                        let change = guard::unseal_change(c, i, key, v.value())?;
                        raw.rows.push((key.to_vec(), change.map(<[u8]>::to_vec)));
                    }
                }
                Err(redb::TableError::TableDoesNotExist(_)) => {}
                Err(e) => return Err(e.into()),
            }
            match tx.open_table(Positions::new(&position_table)) {
                Ok(table) => {
                    raw.position = match table.get((component, index))? {
                        Some(v) => Some(unseal_position(component, index, v.value())?.to_vec()),
                        None => None,
                    }
                }
                Err(redb::TableError::TableDoesNotExist(_)) => {}
                Err(e) => return Err(e.into()),
            }
            Ok(raw)
        };
        self.read(read)
            .with_context(|| format!("reading checkpoint {txid} of {task} in {}", self.name))
    }

    /// Write rows and a position read with [`Store::prepared_rows`] as prepared under `txid`
    /// (durably: a part of a checkpoint nimbus keeps).
    pub(crate) fn prepare_rows(
        &self,
        txid: u64,
        task: &TaskKey,
        raw: &RawState,
    ) -> anyhow::Result<()> {
        let (changes_table, position_table) = prepared(txid);
        self.write(Durability::Immediate, |tx| {
            let mut table = tx.open_table(Prepared::new(&changes_table))?;
            let mut positions = tx.open_table(Positions::new(&position_table))?;
            let (component, index) = (task.component.as_str(), task.index);
            for (k, v) in &raw.rows {
                let sealed = guard::seal_change(component, index, k, v.as_deref());
                table.insert((component, index, k.as_slice()), sealed.as_slice())?;
            }
            if let Some(p) = &raw.position {
                let sealed = seal_position(component, index, p);
                positions.insert((component, index), sealed.as_slice())?;
            }
            Ok(())
        })
        .with_context(|| format!("preparing checkpoint {txid} of {task}"))
    }

    /// `task`'s committed entries and position, as encoded in the store (every row verified
    /// against its checksum, and the rows against the task's digest).
    pub(crate) fn committed_rows(&self, task: &TaskKey) -> anyhow::Result<RawState> {
        self.read(|| self.committed_rows_inner(task))
            .with_context(|| format!("reading the state of {task} in {}", self.name))
    }

    fn committed_rows_inner(&self, task: &TaskKey) -> anyhow::Result<RawState> {
        let tx = self.db.begin_read()?;
        let (component, index) = (task.component.as_str(), task.index);
        let mut raw = RawState::default();
        let mut seen = Digest::default();
        for row in tx
            .open_table(COMMITTED)?
            .range((component, index, [].as_slice())..)?
        {
            let (k, v) = row?;
            let (c, i, key) = k.value();
            if (c, i) != (component, index) {
                break;
            }
            let (value, sum) = guard::unseal("committed", c, i, key, v.value())?;
            seen.add(sum);
            raw.rows.push((key.to_vec(), Some(value.to_vec())));
        }
        let recorded = match tx.open_table(DIGESTS)?.get((component, index))? {
            Some(d) => Digest::from_bytes(component, index, d.value())?,
            None => Digest::default(),
        };
        anyhow::ensure!(
            seen == recorded,
            "the committed rows of {task} do not match their digest ({} rows found, {} \
             recorded): the file is damaged",
            seen.rows,
            recorded.rows
        );
        raw.position = match tx.open_table(POSITIONS)?.get((component, index))? {
            Some(v) => Some(unseal_position(component, index, v.value())?.to_vec()),
            None => None,
        };
        Ok(raw)
    }

    /// Make `raw` (from [`Store::committed_rows`] of another store) `task`'s committed state.
    pub(crate) fn restore_rows(&self, task: &TaskKey, raw: &RawState) -> anyhow::Result<()> {
        self.write(Durability::None, |tx| {
            let mut committed = tx.open_table(COMMITTED)?;
            let (component, index) = (task.component.as_str(), task.index);
            let mut digests = Digests::default();
            let digest = digests.of(tx, component, index)?;
            for (k, v) in &raw.rows {
                if let Some(v) = v {
                    let sealed = guard::seal("committed", component, index, k, v);
                    digest.add(guard::stored_sum(&sealed));
                    let old =
                        committed.insert((component, index, k.as_slice()), sealed.as_slice())?;
                    if let Some(old) = old {
                        digest.remove(guard::stored_sum(old.value()));
                    }
                }
            }
            if let Some(p) = &raw.position {
                let sealed = seal_position(component, index, p);
                tx.open_table(POSITIONS)?
                    .insert((component, index), sealed.as_slice())?;
            }
            digests.save(tx)
        })
        .with_context(|| format!("restoring the state of {task}"))
    }

    /// Make every write so far durable (those written without waiting for the disk too).
    pub(crate) fn sync(&self) -> anyhow::Result<()> {
        self.write(Durability::Immediate, |_| Ok(()))
            .with_context(|| format!("syncing {}", self.name))
    }

    /// Drop what txids up to `txid` prepared (shipped elsewhere, so not needed here).
    pub(crate) fn drop_prepared_upto(&self, txid: u64) -> anyhow::Result<()> {
        self.write(Durability::None, |tx| {
            for t in prepared_txids(tx.list_tables()?.map(|h| h.name().to_string())) {
                if t > txid {
                    break;
                }
                let (changes_table, position_table) = prepared(t);
                tx.delete_table(Prepared::new(&changes_table))?;
                tx.delete_table(Positions::new(&position_table))?;
            }
            Ok(())
        })
        .with_context(|| format!("dropping checkpoints up to {txid}"))
    }

    /// The txids with prepared changes or positions not yet folded, oldest first.
    pub(crate) fn prepared_txids(&self) -> anyhow::Result<Vec<u64>> {
        let read = || -> anyhow::Result<Vec<u64>> {
            let tx = self.db.begin_read()?;
            let names = tx.list_tables()?.map(|h| h.name().to_string());
            Ok(prepared_txids(names).into_iter().collect())
        };
        self.read(read)
            .with_context(|| format!("listing the prepared checkpoints in {}", self.name))
    }
}

/// A position, sealed for task (`component`, `index`).
fn seal_position(component: &str, index: u32, position: &[u8]) -> Vec<u8> {
    guard::seal("position", component, index, &[], position)
}

/// A stored position, verified.
fn unseal_position<'a>(component: &str, index: u32, stored: &'a [u8]) -> anyhow::Result<&'a [u8]> {
    Ok(guard::unseal("position", component, index, &[], stored)?.0)
}

/// The digests a write transaction changes, loaded on first use and saved at its end.
/// A checkpoint's prepared tables open in a write transaction, and buffers to encode into.
struct PreparedRows<'t> {
    changes: redb::Table<'t, (&'static str, u32, &'static [u8]), &'static [u8]>,
    positions: redb::Table<'t, (&'static str, u32), &'static [u8]>,
    key: Vec<u8>,
    value: Vec<u8>,
    /// Rows of `pending_task` not inserted yet, `(key, sealed value)` in the order they
    /// changed: they go in sorted by key (see [`PreparedRows::flush`]).
    pending: Vec<(Vec<u8>, Vec<u8>)>,
    /// The task, `(component, index)`, whose rows `pending` holds (a task's rows come
    /// together).
    pending_task: Option<(String, u32)>,
}

/// Rows a prepare sorts and inserts at once: a B-tree takes rows in key order with less
/// moving of what its leaves hold than in a hash map's order (a count's save of 5,000 keys
/// took a fifth less time).
const SORTED_ROWS: usize = 16 * 1024;

impl PreparedRows<'_> {
    /// `task`'s key `k` changed to `v` (`None`: removed).
    fn change(&mut self, task: &TaskKey, k: &Value, v: Option<&Value>) -> anyhow::Result<()> {
        let (component, index) = (task.component.as_str(), task.index);
        self.key.clear();
        codec::encode(k, &mut self.key);
        let v = v.map(|v| {
            self.value.clear();
            codec::encode(v, &mut self.value);
            self.value.as_slice()
        });
        let sealed = guard::seal_change(component, index, &self.key, v);
        let same_task = |t: &(String, u32)| t.0 == component && t.1 == index;
        if !self.pending_task.as_ref().is_some_and(same_task) {
            self.flush()?;
            self.pending_task = Some((component.to_string(), index));
        }
        self.pending.push((self.key.clone(), sealed));
        if self.pending.len() >= SORTED_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    /// Insert the pending rows in key order (a stable sort: of a key changed twice, the
    /// later change goes in last and stays).
    fn flush(&mut self) -> anyhow::Result<()> {
        let (Some((component, index)), false) = (&self.pending_task, self.pending.is_empty())
        else {
            return Ok(());
        };
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, sealed) in &pending {
            self.changes.insert(
                (component.as_str(), *index, key.as_slice()),
                sealed.as_slice(),
            )?;
        }
        pending.clear();
        self.pending = pending;
        Ok(())
    }

    /// `task`'s position is `p`.
    fn position(&mut self, task: &TaskKey, p: &Value) -> anyhow::Result<()> {
        let (component, index) = (task.component.as_str(), task.index);
        let sealed = seal_position(component, index, &codec::to_bytes(p));
        self.positions
            .insert((component, index), sealed.as_slice())?;
        Ok(())
    }
}

#[derive(Default)]
struct Digests(std::collections::BTreeMap<(String, u32), Digest>);

impl Digests {
    /// Task (`component`, `index`)'s digest, as stored (verified) or empty.
    fn of(
        &mut self,
        tx: &WriteTransaction,
        component: &str,
        index: u32,
    ) -> anyhow::Result<&mut Digest> {
        let key = (component.to_string(), index);
        if !self.0.contains_key(&key) {
            let stored = tx
                .open_table(DIGESTS)?
                .get((component, index))?
                .map(|v| v.value().to_vec());
            let digest = match stored {
                Some(bytes) => Digest::from_bytes(component, index, &bytes)?,
                None => Digest::default(),
            };
            self.0.insert(key.clone(), digest);
        }
        self.0
            .get_mut(&key)
            .ok_or_else(|| anyhow::anyhow!("the digest of {component}[{index}] went missing"))
    }

    fn save(self, tx: &WriteTransaction) -> anyhow::Result<()> {
        let mut table = tx.open_table(DIGESTS)?;
        for ((component, index), digest) in self.0 {
            table.insert(
                (component.as_str(), index),
                digest.to_bytes(&component, index).as_slice(),
            )?;
        }
        Ok(())
    }
}

/// The txids that have prepared tables among these table names, in order.
fn prepared_txids(names: impl Iterator<Item = String>) -> std::collections::BTreeSet<u64> {
    names
        .filter_map(|name| {
            let txid = name
                .strip_prefix(PREPARED)
                .or_else(|| name.strip_prefix(PREPARED_POSITIONS))?;
            txid.parse().ok()
        })
        .collect()
}

/// Why a database file did not open, naming it (and, when locked, what holds it).
pub(super) fn open_error(what: &str, name: &str, e: redb::DatabaseError) -> anyhow::Error {
    let hint = match e {
        redb::DatabaseError::DatabaseAlreadyOpen => " (a run using this state dir holds it)",
        _ => "",
    };
    anyhow::anyhow!("cannot open {what} {name}: {e}{hint}")
}

fn task_key(component: &str, index: u32) -> TaskKey {
    TaskKey {
        component: component.to_string(),
        index,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(component: &str, index: u32) -> TaskKey {
        task_key(component, index)
    }

    fn s(text: &str) -> Value {
        Value::str(text)
    }

    fn set(k: &str, v: i64) -> (Value, Option<Value>) {
        (s(k), Some(Value::Int(v)))
    }

    fn entries(store: &Store, t: &TaskKey) -> Vec<(Value, Value)> {
        store.entries(t).unwrap_or_else(|e| panic!("{e:#}"))
    }

    fn ok(r: anyhow::Result<()>) {
        r.unwrap_or_else(|e| panic!("{e:#}"));
    }

    /// A prepare's rows go in sorted, a batch at a time: of a key changed twice the later
    /// change stays, and many rows of several tasks (more than a batch) all land.
    #[test]
    fn prepared_rows_sorted_in_batches_keep_the_later_change_of_a_key() {
        let store = Store::memory().unwrap_or_else(|e| panic!("{e:#}"));
        let (a, b) = (task("count", 0), task("count", 1));
        let many: Vec<(Value, Option<Value>)> = (0..(SORTED_ROWS as i64 + 500))
            .rev()
            .map(|i| (Value::Int(i), Some(Value::Int(i * 2))))
            .collect();
        let twice = [set("x", 1), set("w", 5), set("x", 2)];
        ok(store.prepare_all(1, &[(&a, &many, None), (&b, &twice, None)]));
        ok(store.fold(1));
        let got = entries(&store, &a);
        assert_eq!(got.len(), many.len());
        assert!(got.iter().all(|(k, v)| match (k, v) {
            (Value::Int(k), Value::Int(v)) => *v == k * 2,
            _ => false,
        }));
        assert_eq!(
            entries(&store, &b),
            vec![(s("w"), Value::Int(5)), (s("x"), Value::Int(2))]
        );
    }

    #[test]
    fn fold_applies_txids_in_order_with_removals_and_is_idempotent() {
        let store = Store::memory().unwrap_or_else(|e| panic!("{e:#}"));
        let a = task("count", 0);
        ok(store.prepare(1, &a, &[set("x", 1), set("y", 1)], None));
        ok(store.prepare(2, &a, &[set("x", 2), (s("y"), None), set("z", 2)], None));
        ok(store.prepare(3, &a, &[set("x", 3)], None));
        assert!(
            entries(&store, &a).is_empty(),
            "nothing committed before a fold"
        );
        ok(store.fold(2));
        let expected = vec![(s("x"), Value::Int(2)), (s("z"), Value::Int(2))];
        assert_eq!(
            entries(&store, &a),
            expected,
            "2 wins over 1, y removed, 3 not yet"
        );
        ok(store.fold(2));
        assert_eq!(
            entries(&store, &a),
            expected,
            "folding again changes nothing"
        );
        assert_eq!(store.prepared_txids().ok(), Some(vec![3]));
        ok(store.fold(3));
        assert_eq!(entries(&store, &a)[0], (s("x"), Value::Int(3)));
    }

    /// A task's entries read one at a time: its own rows only, the digest checked at the end.
    #[test]
    fn entries_of_a_task_are_read_one_at_a_time() {
        let store = Store::memory().unwrap_or_else(|e| panic!("{e:#}"));
        let (a, b) = (task("count", 0), task("count", 1));
        ok(store.prepare(1, &a, &[set("x", 1), set("y", 2)], None));
        ok(store.prepare(1, &b, &[set("z", 3)], None));
        ok(store.fold(1));
        let mut rows = store.entries_of(&a).unwrap_or_else(|e| panic!("{e:#}"));
        let first = rows.next().map(|r| r.unwrap_or_else(|e| panic!("{e:#}")));
        assert_eq!(first, Some((s("x"), Value::Int(1))));
        let rest: Vec<_> = rows
            .map(|r| r.unwrap_or_else(|e| panic!("{e:#}")))
            .collect();
        assert_eq!(rest, [(s("y"), Value::Int(2))]);
        assert_eq!(entries(&store, &b), [(s("z"), Value::Int(3))]);
    }

    #[test]
    fn tasks_are_kept_apart_and_positions_fold_too() {
        let store = Store::memory().unwrap_or_else(|e| panic!("{e:#}"));
        let (a0, a1, sp) = (task("count", 0), task("count", 1), task("lines", 0));
        ok(store.prepare(1, &a0, &[set("k", 0)], None));
        ok(store.prepare(1, &a1, &[set("k", 1)], None));
        ok(store.prepare(1, &sp, &[], Some(&Value::Int(10))));
        ok(store.prepare(2, &sp, &[], Some(&Value::Int(20))));
        assert_eq!(store.position(&sp).ok(), Some(None));
        ok(store.fold(1));
        assert_eq!(entries(&store, &a0), vec![(s("k"), Value::Int(0))]);
        assert_eq!(entries(&store, &a1), vec![(s("k"), Value::Int(1))]);
        assert_eq!(store.position(&sp).ok(), Some(Some(Value::Int(10))));
        assert_eq!(store.tasks().ok(), Some(vec![a0, a1, sp.clone()]));
        ok(store.fold(2));
        assert_eq!(store.position(&sp).ok(), Some(Some(Value::Int(20))));
    }

    #[test]
    fn prepare_all_writes_every_task_in_one_checkpoint() {
        let store = Store::memory().unwrap_or_else(|e| panic!("{e:#}"));
        let (a, sp) = (task("count", 0), task("lines", 0));
        let changes = [set("x", 1)];
        let position = Value::Int(5);
        let tasks = [(&a, &changes[..], None), (&sp, &[][..], Some(&position))];
        ok(store.prepare_all(1, &tasks));
        ok(store.fold(1));
        assert_eq!(entries(&store, &a), vec![(s("x"), Value::Int(1))]);
        assert_eq!(store.position(&sp).ok(), Some(Some(position)));
    }

    #[test]
    fn prepare_with_writes_changes_as_they_come_and_nothing_when_filling_fails() {
        let store = Store::memory().unwrap_or_else(|e| panic!("{e:#}"));
        let a = task("count", 0);
        ok(store.prepare_with(1, &a, Some(&Value::Int(3)), |sink| {
            for i in 0..1000 {
                sink(&s(&format!("k{i}")), Some(&Value::Int(i)))?;
            }
            sink(&s("gone"), None)
        }));
        let failed = store.prepare_with(2, &a, None, |sink| {
            sink(&s("k1"), Some(&Value::Int(-1)))?;
            anyhow::bail!("the state could not be read")
        });
        let message = failed.err().map(|e| format!("{e:#}")).unwrap_or_default();
        assert!(message.contains("could not be read"), "{message}");
        assert_eq!(store.prepared_txids().ok(), Some(vec![1]));
        ok(store.fold(2));
        let held = entries(&store, &a);
        assert_eq!(held.len(), 1000);
        assert!(held.contains(&(s("k1"), Value::Int(1))));
        assert_eq!(store.position(&a).ok(), Some(Some(Value::Int(3))));
    }

    #[test]
    fn discard_drops_only_later_txids() {
        let store = Store::memory().unwrap_or_else(|e| panic!("{e:#}"));
        let a = task("count", 0);
        for txid in 1..=4 {
            ok(store.prepare(txid, &a, &[set("x", txid as i64)], Some(&Value::Int(0))));
        }
        ok(store.discard_after(2));
        assert_eq!(store.prepared_txids().ok(), Some(vec![1, 2]));
        ok(store.fold(4));
        assert_eq!(entries(&store, &a), vec![(s("x"), Value::Int(2))]);
    }

    #[test]
    fn committed_state_survives_reopening_the_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("worker-0.redb");
        let a = task("count", 0);
        let key = Value::List(Box::new(vec![s("a"), Value::Float(1.5)]));
        {
            let store = Store::open(&path).unwrap_or_else(|e| panic!("{e:#}"));
            ok(store.prepare(1, &a, &[(key.clone(), Some(s("v")))], None));
            ok(store.fold(1));
            ok(store.prepare(2, &a, &[set("later", 2)], None));
        }
        let store = Store::open(&path).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(entries(&store, &a), vec![(key, s("v"))]);
        assert_eq!(
            store.prepared_txids().ok(),
            Some(vec![2]),
            "prepared is durable"
        );
    }

    #[test]
    fn a_file_that_is_not_a_store_is_a_located_error() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("worker-0.redb");
        std::fs::write(&path, vec![7u8; 4096]).unwrap_or_else(|e| panic!("{e}"));
        let err = Store::open(&path).err().map(|e| format!("{e:#}"));
        assert!(
            err.as_deref().is_some_and(|e| e.contains("worker-0.redb")),
            "{err:?}"
        );
    }
}
