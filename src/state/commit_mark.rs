//! The commit mark: a small file beside a state dir's commit record naming the last checkpoint
//! committed there, written (whole, by a rename) after each commit; and likewise beside each
//! worker store (`worker-N.mark`), the number of its last durable write (`Store::open_marked`). The database keeps two
//! header slots and, when the newest one is damaged, opens at the transaction before it, as
//! it would after a crash during that commit; a damaged header would then resume a run from
//! an older checkpoint, or from none, without a word. A record behind its mark is refused
//! instead. The mark can only lag the record (a crash between the commit and the mark), never
//! lead it, so a crash is never taken for damage. A state dir without a mark (made before
//! marks existed, or the mark deleted) is opened as before.

use super::guard;
use anyhow::{bail, Context};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The mark's file name.
pub(crate) const MARK_FILE: &str = "checkpoint.mark";

/// The mark's file in `dir`.
pub(crate) fn mark_path(dir: &Path) -> PathBuf {
    dir.join(MARK_FILE)
}

/// What the mark's checksum is taken over, with the txid.
const DOMAIN: &str = "commit mark";

/// The checkpoint the mark in `dir` names; `None` when there is no mark. A mark that is not
/// whole (emptied, cut, a flipped bit) is an error naming it.
pub(crate) fn read(dir: &Path) -> anyhow::Result<Option<u64>> {
    read_at(&mark_path(dir), dir)
}

/// The number the mark at `path` holds (of the state dir `dir`, for messages).
pub(crate) fn read_at(path: &Path, dir: &Path) -> anyhow::Result<Option<u64>> {
    let stored = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let damaged = || {
        format!(
            "{} is damaged (`storm run --fresh` or `storm state clear {}` start over)",
            path.display(),
            dir.display()
        )
    };
    guard::unseal_u64(DOMAIN, b"txid", &stored)
        .map(Some)
        .with_context(damaged)
}

/// Mark checkpoint `txid` committed in `dir`: written beside the mark, flushed to disk, then
/// renamed over it, so the mark is always whole.
pub(crate) fn write(dir: &Path, txid: u64) -> anyhow::Result<()> {
    write_at(&mark_path(dir), txid)
}

/// Make the mark at `path` hold `n`, whole: written beside it, flushed, renamed over it.
pub(crate) fn write_at(path: &Path, n: u64) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".new");
    let tmp = std::path::PathBuf::from(tmp);
    let sealed = guard::seal(DOMAIN, "", 0, b"txid", &n.to_le_bytes());
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(&sealed)?;
        f.sync_all()
    });
    written
        .and_then(|()| std::fs::rename(&tmp, path))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Refuse a commit record in `dir` that names an older checkpoint (or none) than its mark.
pub(crate) fn check(dir: &Path, recorded: Option<u64>) -> anyhow::Result<()> {
    let Some(marked) = read(dir)? else {
        return Ok(());
    };
    if recorded.is_some_and(|r| r >= marked) {
        return Ok(());
    }
    let record = super::paths::commits_path(dir);
    let holds = match recorded {
        Some(r) => format!("names checkpoint {r}"),
        None => "names no checkpoint".to_string(),
    };
    bail!(
        "{} {holds}, but checkpoint {marked} was committed ({}): the commit record is damaged, \
         and resuming from it would count input again (`storm run --fresh` or \
         `storm state clear {}` start over)",
        record.display(),
        mark_path(dir).display(),
        dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_behind_its_mark_is_refused_and_a_damaged_mark_is_named() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).ok(), Some(None), "no mark yet");
        assert!(check(dir.path(), None).is_ok(), "nothing to hold it to");
        write(dir.path(), 7).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(read(dir.path()).ok(), Some(Some(7)));
        assert!(check(dir.path(), Some(7)).is_ok());
        assert!(
            check(dir.path(), Some(8)).is_ok(),
            "a crash before the mark"
        );
        for recorded in [None, Some(6)] {
            let err = format!(
                "{:#}",
                check(dir.path(), recorded)
                    .err()
                    .unwrap_or_else(|| panic!("{recorded:?} behind the mark is accepted"))
            );
            assert!(err.contains("but checkpoint 7 was committed"), "{err}");
            assert!(err.contains("--fresh"), "{err}");
        }
        let bytes = std::fs::read(mark_path(dir.path())).unwrap_or_default();
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            std::fs::write(mark_path(dir.path()), &flipped).unwrap_or_else(|e| panic!("{e}"));
            let err = read(dir.path()).err().map(|e| format!("{e:#}"));
            assert!(
                err.as_deref()
                    .is_some_and(|e| e.contains("checkpoint.mark is damaged")),
                "bit {bit}: {err:?}"
            );
        }
        for cut in [0, 1, 8, 15] {
            std::fs::write(mark_path(dir.path()), &bytes[..cut]).unwrap_or_else(|e| panic!("{e}"));
            assert!(read(dir.path()).is_err(), "cut to {cut} bytes");
        }
    }
}
