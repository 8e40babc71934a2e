//! A task's committed entries read one at a time from its worker's store, as a resumed task
//! takes them: each row's checksum is verified as it is read and the rows' digest once the
//! last is, so a restore never holds every entry at once (keyed state past the memory limit
//! goes straight to its spill file as it comes).

use super::codec;
use super::guard::{self, caught, Digest};
use super::TaskKey;
use crate::tuple::Value;
use anyhow::Context;

/// The committed table's rows from a task's first on: (component, index, key) → sealed value.
type Rows = redb::Range<'static, (&'static str, u32, &'static [u8]), &'static [u8]>;

/// The entries of one task, decoded as they are read; an error (a damaged row, or rows that
/// do not match the task's digest) ends them.
pub(crate) struct Entries {
    /// `None` once the task's rows are done (or failed).
    rows: Option<Rows>,
    task: TaskKey,
    /// The store's file, for errors.
    name: String,
    seen: Digest,
    recorded: Digest,
}

impl Entries {
    pub(super) fn new(rows: Rows, task: TaskKey, recorded: Digest, name: String) -> Entries {
        Entries {
            rows: Some(rows),
            task,
            name,
            seen: Digest::default(),
            recorded,
        }
    }

    /// The next row of the task, verified and decoded; `None` past its last.
    fn step(&mut self) -> anyhow::Result<Option<(Value, Value)>> {
        let Entries {
            rows, task, seen, ..
        } = self;
        let Some(rows) = rows.as_mut() else {
            return Ok(None);
        };
        let Some(row) = rows.next() else {
            return Ok(None);
        };
        let (k, v) = row?;
        let (c, i, key) = k.value();
        if (c, i) != (task.component.as_str(), task.index) {
            return Ok(None);
        }
        let (value, sum) = guard::unseal("committed", c, i, key, v.value())?;
        seen.add(sum);
        Ok(Some((codec::from_bytes(key)?, codec::from_bytes(value)?)))
    }

    /// Past the last row: the rows read must be the ones the digest records.
    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.seen == self.recorded,
            "the committed rows of {} do not match their digest ({} rows found, {} recorded): \
             the file is damaged",
            self.task,
            self.seen.rows,
            self.recorded.rows
        );
        Ok(())
    }
}

impl Iterator for Entries {
    type Item = anyhow::Result<(Value, Value)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.rows.as_ref()?;
        let name = self.name.clone();
        let step = caught(&name, || self.step()).with_context(|| format!("reading {name}"));
        let result = match step {
            Ok(Some(entry)) => return Some(Ok(entry)),
            Ok(None) => self.check(),
            Err(e) => Err(e),
        };
        self.rows = None;
        let context = || format!("reading the entries of {} in {name}", self.task);
        result.with_context(context).err().map(Err)
    }
}
