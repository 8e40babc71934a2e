//! The cold part of a spill map: one scratch redb file per task, its rows keyed by order bytes
//! (see `order.rs`), so a lookup finds a key and a scan lists keys in output order. The file
//! lives only as long as its run: it is made empty when opened and removed when dropped; the
//! checkpoints, not this file, are what a resumed run restores from. Nothing here needs to
//! survive a crash, so writes are never synced to disk.

use crate::state::guard::caught;
use anyhow::Context;
use redb::{Database, Durability, ReadOnlyTable, TableDefinition};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

type Rows = TableDefinition<'static, &'static [u8], &'static [u8]>;
const ROWS: Rows = TableDefinition::new("spilled");

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
    /// The table as of the last write, kept open between writes for lookups.
    reader: Option<ReadOnlyTable<&'static [u8], &'static [u8]>>,
}

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
            reader: None,
        };
        cold.write(|tx| {
            tx.open_table(ROWS)?;
            Ok(())
        })?;
        Ok(cold)
    }

    /// Rows held.
    pub(crate) fn rows(&self) -> u64 {
        self.len
    }

    /// The file's size in bytes (0 when it cannot be read).
    pub(crate) fn file_bytes(&self) -> u64 {
        std::fs::metadata(&self.path).map_or(0, |m| m.len())
    }

    fn write(
        &self,
        f: impl FnOnce(&redb::WriteTransaction) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        caught(&self.name, || {
            let mut tx = self.db.begin_write()?;
            // Immediate frees the pages earlier writes left (syncing costs nothing here).
            tx.set_durability(Durability::Immediate);
            f(&tx)?;
            tx.commit()?;
            Ok(())
        })
        .with_context(|| format!("writing the spill file {}", self.name))
    }

    /// Write `rows` (order bytes, record), replacing rows of the same keys.
    fn put(&mut self, rows: &mut [(Vec<u8>, Vec<u8>)]) -> anyhow::Result<()> {
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        self.reader = None;
        let mut added = 0;
        self.write(|tx| {
            let mut table = tx.open_table(ROWS)?;
            for (key, record) in rows.iter() {
                if table.insert(key.as_slice(), record.as_slice())?.is_none() {
                    added += 1;
                }
            }
            Ok(())
        })?;
        self.len += added;
        Ok(())
    }

    /// Every row removed.
    pub(crate) fn clear(&mut self) -> anyhow::Result<()> {
        self.reader = None;
        self.write(|tx| {
            tx.delete_table(ROWS)?;
            tx.open_table(ROWS)?;
            Ok(())
        })?;
        self.len = 0;
        Ok(())
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
    rows: Vec<(Vec<u8>, Vec<u8>)>,
    /// Rows written so far.
    pub(crate) written: u64,
}

impl Batch {
    /// Add the row (order bytes, record), writing the chunk to `cold` once it is full.
    pub(crate) fn push(&mut self, cold: &mut Cold, row: (Vec<u8>, Vec<u8>)) -> anyhow::Result<()> {
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
