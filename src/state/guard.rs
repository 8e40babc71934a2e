//! What makes stored state trustworthy: every row a store or a commit record keeps carries a
//! checksum over its owner, key and value, verified on every read, and each task's committed
//! rows have a digest (their number and the XOR of their checksums) that a read recomputes, so
//! a flipped bit, a row that vanished or one that moved to another key is an error naming the
//! file, never a silently different value. A panic inside the database on a damaged file is
//! caught and becomes such an error too.
//!
//! Layouts (all integers little-endian):
//! - a committed row or a position: the value's bytes, then its 8-byte checksum;
//! - a prepared change: a tag byte (1: set, 0: removed), the value's bytes (none when
//!   removed), then the checksum of tag and value;
//! - a digest: the row count, the XOR of the rows' checksums, then the checksum of both.

use anyhow::bail;

/// Bytes a checksum adds.
const SUM_BYTES: usize = 8;

/// FNV-1a (64 bits) over `parts`, each preceded by its length so no two splits of the same
/// bytes collide. Any change of a single byte changes the result.
fn checksum(parts: &[&[u8]]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut h = OFFSET;
    for part in parts {
        for b in (part.len() as u64).to_le_bytes().iter().chain(part.iter()) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(PRIME);
        }
    }
    h
}

/// The checksum of a task's row: `domain` (what kind of row), the task and the key.
fn row_sum(domain: &str, component: &str, index: u32, key: &[u8], value: &[u8]) -> u64 {
    checksum(&[
        domain.as_bytes(),
        component.as_bytes(),
        &index.to_le_bytes(),
        key,
        value,
    ])
}

/// `value` with the checksum of a row of `domain` of task (`component`, `index`) under `key`.
pub(crate) fn seal(domain: &str, component: &str, index: u32, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + SUM_BYTES);
    out.extend_from_slice(value);
    out.extend_from_slice(&row_sum(domain, component, index, key, value).to_le_bytes());
    out
}

/// The value of a sealed row and its checksum, once verified.
pub(crate) fn unseal<'a>(
    domain: &str,
    component: &str,
    index: u32,
    key: &[u8],
    stored: &'a [u8],
) -> anyhow::Result<(&'a [u8], u64)> {
    let Some(at) = stored.len().checked_sub(SUM_BYTES) else {
        bail!(
            "a {domain} row of {component}[{index}] is {} bytes, too short for its checksum",
            stored.len()
        );
    };
    let (value, sum) = stored.split_at(at);
    let expected = row_sum(domain, component, index, key, value);
    if sum != expected.to_le_bytes() {
        bail!(
            "a {domain} row of {component}[{index}] fails its checksum (the file is damaged, \
             or was written by an older storm)"
        );
    }
    Ok((value, expected))
}

/// The checksum stored at the end of a sealed row (unverified: to take it out of a digest).
pub(crate) fn stored_sum(stored: &[u8]) -> u64 {
    let at = stored.len().saturating_sub(SUM_BYTES);
    let mut sum = [0u8; SUM_BYTES];
    let tail = &stored[at..];
    sum[..tail.len()].copy_from_slice(tail);
    u64::from_le_bytes(sum)
}

/// A prepared change (`None`: the key was removed), sealed.
pub(crate) fn seal_change(
    component: &str,
    index: u32,
    key: &[u8],
    value: Option<&[u8]>,
) -> Vec<u8> {
    let mut tagged = Vec::with_capacity(1 + value.map_or(0, <[u8]>::len));
    match value {
        Some(v) => {
            tagged.push(1);
            tagged.extend_from_slice(v);
        }
        None => tagged.push(0),
    }
    seal("prepared", component, index, key, &tagged)
}

/// A prepared change out of its sealed bytes, once verified.
pub(crate) fn unseal_change<'a>(
    component: &str,
    index: u32,
    key: &[u8],
    stored: &'a [u8],
) -> anyhow::Result<Option<&'a [u8]>> {
    let (tagged, _) = unseal("prepared", component, index, key, stored)?;
    match tagged.split_first() {
        Some((1, value)) => Ok(Some(value)),
        Some((0, [])) => Ok(None),
        _ => bail!("a prepared row of {component}[{index}] has no valid tag"),
    }
}

/// A task's committed rows as a count and the XOR of their checksums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Digest {
    pub(crate) rows: u64,
    xor: u64,
}

impl Digest {
    pub(crate) fn add(&mut self, sum: u64) {
        self.rows += 1;
        self.xor ^= sum;
    }

    pub(crate) fn remove(&mut self, sum: u64) {
        self.rows = self.rows.wrapping_sub(1);
        self.xor ^= sum;
    }

    /// Its stored bytes, sealed for task (`component`, `index`).
    pub(crate) fn to_bytes(self, component: &str, index: u32) -> Vec<u8> {
        let mut raw = self.rows.to_le_bytes().to_vec();
        raw.extend_from_slice(&self.xor.to_le_bytes());
        seal("digest", component, index, &[], &raw)
    }

    pub(crate) fn from_bytes(component: &str, index: u32, stored: &[u8]) -> anyhow::Result<Digest> {
        let (raw, _) = unseal("digest", component, index, &[], stored)?;
        let (Some(rows), Some(xor)) = (raw.get(..8), raw.get(8..16)) else {
            bail!(
                "the digest of {component}[{index}] is {} bytes, not 16",
                raw.len()
            );
        };
        let word = |b: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            u64::from_le_bytes(w)
        };
        Ok(Digest {
            rows: word(rows),
            xor: word(xor),
        })
    }
}

/// The u64 (little-endian) a sealed row `stored` holds, once its checksum is verified.
pub(crate) fn unseal_u64(domain: &str, key: &[u8], stored: &[u8]) -> anyhow::Result<u64> {
    let (value, _) = unseal(domain, "", 0, key, stored)?;
    match <[u8; 8]>::try_from(value) {
        Ok(eight) => Ok(u64::from_le_bytes(eight)),
        Err(_) => bail!("{} bytes where a number takes 8", value.len()),
    }
}

/// What a [`caught`] call running on this thread works on: the file, and the message of a
/// panic of the database already unwinding out of it.
struct Guarded {
    name: String,
    unwinding: Option<String>,
}

thread_local! {
    /// Set while [`caught`] runs on this thread: its panics are reported as errors, not
    /// printed by the panic hook.
    static GUARDED: std::cell::RefCell<Option<Guarded>> = const { std::cell::RefCell::new(None) };
}

/// Wrap the panic hook (once) so a panic inside [`caught`] prints nothing. A second panic
/// while the first unwinds (the database's own cleanup failing on the damaged file) would
/// abort the process with no word of the file; the hook ends it with an error naming it.
fn quiet_guarded_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let second = GUARDED.with(|g| match g.borrow_mut().as_mut() {
                None => Some(None),
                Some(guarded) => match &guarded.unwinding {
                    Some(first) => Some(Some(format!(
                        "{} is damaged: reading it failed ({first})",
                        guarded.name
                    ))),
                    None => {
                        guarded.unwinding = Some(panic_text(info.payload()));
                        None
                    }
                },
            });
            match second {
                Some(None) => previous(info),
                Some(Some(what)) => {
                    crate::stderr_println!(
                        "error: {what}, and so did the cleanup after it (`storm run \
                         --fresh` or `storm state clear` start over)"
                    );
                    std::process::exit(1);
                }
                None => {}
            }
        }));
    });
}

/// The message a panic carries.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}

/// A database file whose closing is guarded as its reads and writes are ([`caught`]): closing
/// flushes what is pending, and the database can panic there too on a damaged file, after
/// the error that refused it was already on its way out.
pub(crate) struct GuardedDb {
    db: std::mem::ManuallyDrop<redb::Database>,
    name: String,
}

impl GuardedDb {
    pub(crate) fn new(db: redb::Database, name: &str) -> GuardedDb {
        GuardedDb {
            db: std::mem::ManuallyDrop::new(db),
            name: name.to_string(),
        }
    }

    /// Its file was renamed (its dir was): messages name it `name` from now on.
    pub(crate) fn rename(&mut self, name: &str) {
        self.name = name.to_string();
    }
}

impl std::ops::Deref for GuardedDb {
    type Target = redb::Database;

    fn deref(&self) -> &redb::Database {
        &self.db
    }
}

impl Drop for GuardedDb {
    fn drop(&mut self) {
        // SAFETY: the database is taken out once, here, and `self.db` is not used after.
        let db = unsafe { std::mem::ManuallyDrop::take(&mut self.db) };
        if let Err(e) = caught(&self.name, || {
            drop(db);
            Ok(())
        }) {
            // What refused the file was already said; a failed close is like a crash there.
            tracing::debug!("closing the database: {e:#}");
        }
    }
}

/// Run `f` in one write transaction of `db`, committed with `durability`, inside [`caught`].
/// (Leaking the transaction on a panic, to keep its drop from panicking again, left the
/// database waiting for it for ever when it was closed; a second panic is the panic hook's.)
pub(crate) fn write_tx<T>(
    db: &redb::Database,
    name: &str,
    durability: redb::Durability,
    f: impl FnOnce(&redb::WriteTransaction) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    caught(name, || {
        let mut tx = db.begin_write()?;
        tx.set_durability(durability);
        let value = f(&tx)?;
        tx.commit()?;
        Ok(value)
    })
}

/// Run `f`, which reads or writes the database file `name`; a panic inside it (the database
/// library meeting a damaged file) becomes an error naming the file.
pub(crate) fn caught<T>(name: &str, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    quiet_guarded_panics();
    let guarded = Guarded {
        name: name.to_string(),
        unwinding: None,
    };
    let was = GUARDED.with(|g| g.replace(Some(guarded)));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.with(|g| g.replace(was));
    match result {
        Ok(result) => result,
        Err(panic) => {
            let why = panic_text(panic.as_ref());
            bail!("{name} is damaged: reading it failed ({why})")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_single_bit_flip_of_a_sealed_row_is_caught() {
        let stored = seal("committed", "count", 2, b"key", b"value");
        assert_eq!(
            unseal("committed", "count", 2, b"key", &stored)
                .ok()
                .map(|v| v.0),
            Some(&b"value"[..])
        );
        for byte in 0..stored.len() {
            for bit in 0..8 {
                let mut bad = stored.clone();
                bad[byte] ^= 1 << bit;
                assert!(unseal("committed", "count", 2, b"key", &bad).is_err());
            }
        }
        // The same bytes under another key or task are refused too.
        assert!(unseal("committed", "count", 2, b"kez", &stored).is_err());
        assert!(unseal("committed", "count", 3, b"key", &stored).is_err());
    }

    #[test]
    fn changes_and_digests_read_back() {
        for value in [Some(&b"v"[..]), Some(&[][..]), None] {
            let stored = seal_change("c", 0, b"k", value);
            assert_eq!(unseal_change("c", 0, b"k", &stored).ok(), Some(value));
        }
        let mut d = Digest::default();
        d.add(5);
        d.add(9);
        d.remove(5);
        let back = Digest::from_bytes("c", 1, &d.to_bytes("c", 1)).ok();
        assert_eq!(back, Some(Digest { rows: 1, xor: 9 }));
    }

    #[test]
    fn a_panic_becomes_an_error_naming_the_file() {
        let err = caught::<()>("worker-0.redb", || panic!("bad page")).err();
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.contains("worker-0.redb is damaged") && text.contains("bad page"),
            "{text}"
        );
    }
}
