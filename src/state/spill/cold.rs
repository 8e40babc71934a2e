//! The cold part of a spill map: one scratch redb file per task, its rows keyed by order bytes
//! (see `order.rs`), so a lookup finds a key and a scan lists keys in output order. The file
//! lives only as long as its run: it is made empty when opened and removed when dropped; the
//! checkpoints, not this file, are what a resumed run restores from. Nothing here needs to
//! survive a crash, so writes are never synced to disk.
//!
//! A second table lists the keys whose rows changed since the last checkpoint took the
//! changes, so the record of changes of a spilling map lives on disk with the rows it names.

use crate::state::guard::caught;
use anyhow::Context;
use redb::{Database, Durability, ReadOnlyTable, TableDefinition};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

type Rows = TableDefinition<'static, &'static [u8], &'static [u8]>;
const ROWS: Rows = TableDefinition::new("spilled");

type Changed = TableDefinition<'static, &'static [u8], ()>;
const CHANGED: Changed = TableDefinition::new("changed");

/// A file redb writes through without ever syncing it.
#[derive(Debug)]
struct Scratch(std::fs::File);

impl redb::StorageBackend for Scratch {
    fn len(&self) -> Result<u64, std::io::Error> {
        Ok(self.0.metadata()?.len())
    }

    fn read(&self, offset: u64, len: usize) -> Result<Vec<u8>, std::io::Error> {
        let mut buf = vec![0; len];
        self.0.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }

    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        self.0.set_len(len)
    }

    fn sync_data(&self, _eventual: bool) -> Result<(), std::io::Error> {
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        self.0.write_all_at(data, offset)
    }
}

pub(crate) struct Cold {
    db: Database,
    path: PathBuf,
    name: String,
    /// Rows held.
    len: u64,
    /// Keys listed as changed.
    changed: u64,
    /// The table as of the last write, kept open between writes for lookups.
    reader: Option<ReadOnlyTable<&'static [u8], &'static [u8]>>,
}

/// A row to write: its order bytes, its record, and whether it is a change a checkpoint has
/// not taken yet.
pub(crate) type Row = (Vec<u8>, Vec<u8>, bool);

impl Cold {
    /// A new, empty file at `path` (one left by an earlier run is replaced), with a page cache
    /// of `cache` bytes.
    pub(crate) fn create(path: &Path, cache: usize) -> anyhow::Result<Cold> {
        let name = path.display().to_string();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot make the spill dir {}", dir.display()))?;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .with_context(|| format!("cannot make the spill file {name}"))?;
        let db = caught(&name, || {
            Database::builder()
                .set_cache_size(cache)
                .create_with_backend(Scratch(file))
                .with_context(|| format!("cannot make the spill file {name}"))
        })?;
        let cold = Cold {
            db,
            path: path.to_path_buf(),
            name,
            len: 0,
            changed: 0,
            reader: None,
        };
        cold.write(|tx| {
            tx.open_table(ROWS)?;
            tx.open_table(CHANGED)?;
            Ok(())
        })?;
        Ok(cold)
    }

    /// Rows held.
    pub(crate) fn rows(&self) -> u64 {
        self.len
    }

    /// Keys listed as changed.
    pub(crate) fn changed(&self) -> u64 {
        self.changed
    }

    /// The file's size in bytes (0 when it cannot be read).
    pub(crate) fn file_bytes(&self) -> u64 {
        std::fs::metadata(&self.path).map_or(0, |m| m.len())
    }

    fn write(
        &self,
        f: impl FnOnce(&redb::WriteTransaction) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        // Immediate frees the pages earlier writes left (syncing costs nothing here).
        crate::state::guard::write_tx(&self.db, &self.name, Durability::Immediate, f)
            .with_context(|| format!("writing the spill file {}", self.name))
    }

    /// Write `rows`, replacing rows of the same keys, and list the changed ones.
    fn put(&mut self, rows: &mut [Row]) -> anyhow::Result<()> {
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        self.reader = None;
        let (mut added, mut listed) = (0, 0);
        self.write(|tx| {
            let mut table = tx.open_table(ROWS)?;
            let mut changed = tx.open_table(CHANGED)?;
            for (key, record, change) in rows.iter() {
                if table.insert(key.as_slice(), record.as_slice())?.is_none() {
                    added += 1;
                }
                if *change && changed.insert(key.as_slice(), ())?.is_none() {
                    listed += 1;
                }
            }
            Ok(())
        })?;
        self.len += added;
        self.changed += listed;
        Ok(())
    }

    /// Every row removed, and every change.
    pub(crate) fn clear(&mut self) -> anyhow::Result<()> {
        self.reader = None;
        self.write(|tx| {
            tx.delete_table(ROWS)?;
            tx.open_table(ROWS)?;
            tx.delete_table(CHANGED)?;
            tx.open_table(CHANGED)?;
            Ok(())
        })?;
        self.len = 0;
        self.changed = 0;
        Ok(())
    }

    /// The list of changed keys emptied (a checkpoint took them); the rows stay.
    pub(crate) fn clear_changed(&mut self) -> anyhow::Result<()> {
        if self.changed == 0 {
            return Ok(());
        }
        self.reader = None;
        self.write(|tx| {
            tx.delete_table(CHANGED)?;
            tx.open_table(CHANGED)?;
            Ok(())
        })?;
        self.changed = 0;
        Ok(())
    }

    /// The rows of the keys listed as changed, in key order, read as they are listed: the
    /// list is never all in memory.
    pub(crate) fn changed_rows(&mut self) -> anyhow::Result<ChangedRows> {
        let name = self.name.clone();
        let (keys, rows) = caught(&name, || {
            let tx = self.db.begin_read()?;
            let keys = tx.open_table(CHANGED)?.range::<&[u8]>(..)?;
            Ok((keys, tx.open_table(ROWS)?))
        })
        .with_context(|| format!("reading the spill file {name}"))?;
        Ok(ChangedRows { keys, rows, name })
    }

    fn reader(&mut self) -> anyhow::Result<&ReadOnlyTable<&'static [u8], &'static [u8]>> {
        if self.reader.is_none() {
            let table = caught(&self.name, || Ok(self.db.begin_read()?.open_table(ROWS)?))
                .with_context(|| format!("reading the spill file {}", self.name))?;
            self.reader = Some(table);
        }
        self.reader
            .as_ref()
            .context("the spill file's table is not open")
    }

    /// The record of `key`, if held.
    pub(crate) fn get(&mut self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        let name = self.name.clone();
        let table = self.reader()?;
        caught(&name, || Ok(table.get(key)?.map(|g| g.value().to_vec())))
            .with_context(|| format!("reading the spill file {name}"))
    }

    /// Every row, in key order.
    pub(crate) fn scan(&mut self) -> anyhow::Result<Scan> {
        let name = self.name.clone();
        let table = self.reader()?;
        let range = caught(&name, || Ok(table.range::<&[u8]>(..)?))
            .with_context(|| format!("reading the spill file {name}"))?;
        Ok(Scan { range, name })
    }
}

impl Drop for Cold {
    fn drop(&mut self) {
        self.reader = None;
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Entries leaving memory hold this many encoded rows at most before they are written.
const CHUNK: usize = 16 * 1024;

/// Rows to write, handed one at a time and written a chunk at a time: an eviction of
/// millions of entries never holds all their encodings at once.
#[derive(Default)]
pub(crate) struct Batch {
    rows: Vec<Row>,
    /// Rows written so far.
    pub(crate) written: u64,
}

impl Batch {
    /// Add `row`, writing the chunk to `cold` once it is full.
    pub(crate) fn push(&mut self, cold: &mut Cold, row: Row) -> anyhow::Result<()> {
        self.rows.push(row);
        if self.rows.len() >= CHUNK {
            self.flush(cold)?;
        }
        Ok(())
    }

    /// Write what is left.
    pub(crate) fn flush(&mut self, cold: &mut Cold) -> anyhow::Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        self.written += self.rows.len() as u64;
        cold.put(&mut self.rows)?;
        self.rows.clear();
        Ok(())
    }
}

/// The rows of the keys listed as changed: (order bytes, record).
pub(crate) struct ChangedRows {
    keys: redb::Range<'static, &'static [u8], ()>,
    rows: ReadOnlyTable<&'static [u8], &'static [u8]>,
    name: String,
}

impl Iterator for ChangedRows {
    type Item = anyhow::Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let key = match self.keys.next()? {
            Ok((key, _)) => key.value().to_vec(),
            Err(e) => return Some(Err(self.damaged(e.into()))),
        };
        let record = match caught(&self.name, || Ok(self.rows.get(key.as_slice())?)) {
            Ok(Some(record)) => record.value().to_vec(),
            Ok(None) => {
                let e = anyhow::anyhow!("a key listed as changed has no row");
                return Some(Err(self.damaged(e)));
            }
            Err(e) => return Some(Err(self.damaged(e))),
        };
        Some(Ok((key, record)))
    }
}

impl ChangedRows {
    fn damaged(&self, e: anyhow::Error) -> anyhow::Error {
        e.context(format!("reading the spill file {}", self.name))
    }
}

/// The rows of a spill file in key order: (order bytes, record).
pub(crate) struct Scan {
    range: redb::Range<'static, &'static [u8], &'static [u8]>,
    name: String,
}

impl Iterator for Scan {
    type Item = anyhow::Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let row = self.range.next()?;
        Some(
            row.map(|(k, v)| (k.value().to_vec(), v.value().to_vec()))
                .with_context(|| format!("reading the spill file {}", self.name)),
        )
    }
}
