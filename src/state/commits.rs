//! The commit record of a topology's checkpoints: which txid was last committed (every task
//! prepared it), with the topology's name and each component's parallelism so a resumed run
//! can check it matches. One small crash-safe database beside the workers' stores; a commit is
//! one transaction.
//!
//! One table, `record`: `txid` and `at_ms` (u64, little-endian), `shape` (the name and the
//! parallelisms as one [`super::codec`] list: `[name, [component, parallelism], …]`) and
//! `workers` (u64: the worker stores the checkpoints need, `worker-0.redb` up) and, in a
//! nimbus's replica of another nimbus's store, `replicated` (u64: the checkpoint it received
//! whole), each value sealed with a checksum ([`super::guard`]) verified on read.

use super::codec;
use super::guard::{self, caught};
use crate::tuple::Value;
use anyhow::{bail, Context};
use redb::{Database, Durability, TableDefinition};
use std::path::Path;

const RECORD: TableDefinition<&str, &[u8]> = TableDefinition::new("record");

/// What the commit record holds about the last committed checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Committed {
    pub(crate) txid: u64,
    /// Milliseconds since the Unix epoch when it was committed.
    pub(crate) at_ms: u64,
}

/// A topology's name and each component's parallelism.
pub(crate) type Shape = (String, Vec<(String, u32)>);

pub struct Commits {
    db: guard::GuardedDb,
    /// The state dir whose commit mark follows each commit (`commit_mark.rs`), if it has one.
    marked: Option<std::path::PathBuf>,
    /// The file, or "memory", for errors.
    name: String,
}

impl Commits {
    /// Open (creating it, and `dir`, if missing) the commit record in `dir`.
    pub fn open(dir: &Path) -> anyhow::Result<Commits> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot make the state dir {}", dir.display()))?;
        let path = super::paths::commits_path(dir);
        let name = path.display().to_string();
        caught(&name, || {
            let db = Database::create(&path)
                .map_err(|e| super::checkpoint_store::open_error("commit record", &name, e))?;
            Commits::with_table(db, name.clone())
        })
    }

    /// Open the commit record of the state dir `dir` as [`Commits::open`], held to the dir's
    /// commit mark: refused when it names an older checkpoint than the mark, which each commit
    /// then moves on.
    pub(crate) fn open_marked(dir: &Path) -> anyhow::Result<Commits> {
        let mut commits = Commits::open(dir)?;
        let recorded = commits.committed()?.map(|c| c.txid);
        super::commit_mark::check(dir, recorded)?;
        commits.marked = Some(dir.to_path_buf());
        Ok(commits)
    }

    /// The commit record just made in a dir since renamed to `dir`, held to the dir's commit
    /// mark from now on (a new dir has none to check it against).
    pub(crate) fn moved_to(mut self, dir: &Path) -> Commits {
        self.name = super::paths::commits_path(dir).display().to_string();
        self.db.rename(&self.name);
        self.marked = Some(dir.to_path_buf());
        self
    }

    /// A commit record in memory.
    pub(crate) fn memory() -> anyhow::Result<Commits> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .context("cannot make a commit record in memory")?;
        Commits::with_table(db, "memory".into())
    }

    fn with_table(db: Database, name: String) -> anyhow::Result<Commits> {
        let tx = db.begin_write().with_context(|| name.clone())?;
        tx.open_table(RECORD).with_context(|| name.clone())?;
        tx.commit().with_context(|| name.clone())?;
        Ok(Commits {
            db: guard::GuardedDb::new(db, &name),
            marked: None,
            name,
        })
    }

    /// The bytes under `key`, if any.
    fn get(&self, key: &str) -> anyhow::Result<Option<Vec<u8>>> {
        let read = || -> anyhow::Result<Option<Vec<u8>>> {
            let tx = self.db.begin_read()?;
            let table = tx.open_table(RECORD)?;
            let Some(stored) = table.get(key)? else {
                return Ok(None);
            };
            let (value, _) = guard::unseal("record", "", 0, key.as_bytes(), stored.value())?;
            Ok(Some(value.to_vec()))
        };
        caught(&self.name, read).with_context(|| format!("reading {key} in {}", self.name))
    }

    fn get_u64(&self, key: &str) -> anyhow::Result<Option<u64>> {
        let Some(bytes) = self.get(key)? else {
            return Ok(None);
        };
        match <[u8; 8]>::try_from(bytes.as_slice()) {
            Ok(eight) => Ok(Some(u64::from_le_bytes(eight))),
            Err(_) => bail!("{}: {key} is {} bytes, not 8", self.name, bytes.len()),
        }
    }

    /// The last committed checkpoint, if any.
    pub(crate) fn committed(&self) -> anyhow::Result<Option<Committed>> {
        let Some(txid) = self.get_u64("txid")? else {
            return Ok(None);
        };
        let at_ms = self.get_u64("at_ms")?.unwrap_or(0);
        Ok(Some(Committed { txid, at_ms }))
    }

    /// Record `txid` as committed (durably). A txid at or below the one recorded is ignored.
    pub fn commit(&self, txid: u64) -> anyhow::Result<()> {
        if self.committed()?.is_some_and(|c| c.txid >= txid) {
            return Ok(());
        }
        self.put(&[
            ("txid", txid.to_le_bytes().to_vec()),
            ("at_ms", now_ms().to_le_bytes().to_vec()),
        ])
        .with_context(|| format!("committing checkpoint {txid} in {}", self.name))?;
        match &self.marked {
            Some(dir) => super::commit_mark::write(dir, txid),
            None => Ok(()),
        }
    }

    /// Write these keys in one durable transaction, each value sealed.
    fn put(&self, pairs: &[(&str, Vec<u8>)]) -> anyhow::Result<()> {
        guard::write_tx(&self.db, &self.name, Durability::Immediate, |tx| {
            let mut table = tx.open_table(RECORD)?;
            for (key, value) in pairs {
                let sealed = guard::seal("record", "", 0, key.as_bytes(), value);
                table.insert(*key, sealed.as_slice())?;
            }
            Ok(())
        })
    }

    /// The checkpoint a copy of another store received whole (every part it prepared), not
    /// yet committed here: a nimbus's replica of the leader's checkpoints.
    pub(crate) fn replicated(&self) -> anyhow::Result<Option<u64>> {
        self.get_u64("replicated")
    }

    /// Record that checkpoint `txid` was received whole (durably).
    pub(crate) fn set_replicated(&self, txid: u64) -> anyhow::Result<()> {
        self.put(&[("replicated", txid.to_le_bytes().to_vec())])
            .with_context(|| format!("recording checkpoint {txid} received in {}", self.name))
    }

    /// How many worker stores the checkpoints need (recorded at the first run of a state dir).
    pub(crate) fn workers(&self) -> anyhow::Result<Option<u64>> {
        self.get_u64("workers")
    }

    /// Record how many worker stores the checkpoints need.
    pub(crate) fn set_workers(&self, workers: u64) -> anyhow::Result<()> {
        self.put(&[("workers", workers.to_le_bytes().to_vec())])
            .with_context(|| format!("recording the worker count in {}", self.name))
    }

    /// The topology's name and each component's parallelism, as the first run recorded them.
    pub(crate) fn shape(&self) -> anyhow::Result<Option<Shape>> {
        let Some(bytes) = self.get("shape")? else {
            return Ok(None);
        };
        let value = codec::from_bytes(&bytes)
            .and_then(|v| shape_of(&v))
            .with_context(|| format!("{}: the recorded topology shape", self.name))?;
        Ok(Some(value))
    }

    /// Record the topology's name and parallelism (the first run of a state dir).
    pub fn set_shape(&self, name: &str, components: &[(String, u32)]) -> anyhow::Result<()> {
        let mut items = vec![Value::str(name)];
        items.extend(
            components.iter().map(|(c, n)| {
                Value::List(Box::new(vec![Value::str(c), Value::Int(i64::from(*n))]))
            }),
        );
        let bytes = codec::to_bytes(&Value::List(Box::new(items)));
        self.put(&[("shape", bytes)])
            .with_context(|| format!("recording the topology's shape in {}", self.name))
    }
}

/// The name and parallelisms out of a recorded shape value.
fn shape_of(v: &Value) -> anyhow::Result<Shape> {
    let Value::List(items) = v else {
        bail!("not a list");
    };
    let Some((Value::Str(name), rest)) = items.split_first() else {
        bail!("no topology name");
    };
    let mut components = Vec::new();
    for item in rest {
        match item {
            Value::List(pair) => match pair.as_slice() {
                [Value::Str(c), Value::Int(n)] => {
                    let n = u32::try_from(*n).context("a parallelism out of range")?;
                    components.push((c.to_string(), n));
                }
                _ => bail!("a component is not [name, parallelism]"),
            },
            _ => bail!("a component is not [name, parallelism]"),
        }
    }
    Ok((name.to_string(), components))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_txids_are_ignored() {
        let c = Commits::memory().unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(c.committed().ok(), Some(None));
        for txid in [3, 2, 3, 5, 4] {
            c.commit(txid).unwrap_or_else(|e| panic!("{e:#}"));
        }
        assert_eq!(c.committed().ok().flatten().map(|c| c.txid), Some(5));
    }

    #[test]
    fn the_record_survives_reopening() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let shape = vec![("lines".to_string(), 1), ("count".to_string(), 4)];
        let before = now_ms();
        {
            let c = Commits::open(dir.path()).unwrap_or_else(|e| panic!("{e:#}"));
            c.set_shape("wc", &shape)
                .unwrap_or_else(|e| panic!("{e:#}"));
            c.commit(7).unwrap_or_else(|e| panic!("{e:#}"));
        }
        let c = Commits::open(dir.path()).unwrap_or_else(|e| panic!("{e:#}"));
        let committed = c.committed().ok().flatten();
        assert_eq!(committed.as_ref().map(|c| c.txid), Some(7));
        assert!(committed.is_some_and(|c| c.at_ms >= before && c.at_ms <= now_ms()));
        assert_eq!(c.shape().ok(), Some(Some(("wc".to_string(), shape))));
    }
}
