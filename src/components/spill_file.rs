//! Where bytes held for a rollback move past their memory budget (the output a checkpoint has
//! not committed yet, the standard input it may read again): each part is in memory or at a
//! range of an anonymous temporary file, made when first needed, read back by range, and
//! emptied once nothing in it is wanted. The file's name is removed as soon as it is made, so
//! nothing is left behind however the process ends.

use std::fs::{File, OpenOptions};
use std::io::{Error, ErrorKind};
use std::os::unix::fs::FileExt;

/// Bytes kept for later: in memory, or moved to the spill file.
pub(crate) enum Part {
    Bytes(Vec<u8>),
    Spilled { at: u64, len: usize },
}

impl Part {
    pub(crate) fn len(&self) -> usize {
        match self {
            Part::Bytes(b) => b.len(),
            Part::Spilled { len, .. } => *len,
        }
    }
}

/// The spill file of one kind of kept bytes, made when first needed.
pub(crate) struct Spill {
    /// Names the file while it is made.
    prefix: &'static str,
    file: Option<SpillFile>,
}

impl Spill {
    pub(crate) fn new(prefix: &'static str) -> Spill {
        Spill { prefix, file: None }
    }

    /// Move `part` to the file, if it is in memory; returns the bytes moved.
    pub(crate) fn move_out(&mut self, part: &mut Part) -> std::io::Result<usize> {
        let Part::Bytes(bytes) = part else {
            return Ok(0);
        };
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(SpillFile::create(self.prefix)?),
        };
        let at = file.append(bytes)?;
        let len = bytes.len();
        *part = Part::Spilled { at, len };
        Ok(len)
    }

    /// Fill `buf` with the bytes of `part` from byte `from` on.
    pub(crate) fn read(&self, part: &Part, from: usize, buf: &mut [u8]) -> std::io::Result<()> {
        match part {
            Part::Bytes(b) => buf.copy_from_slice(&b[from..from + buf.len()]),
            Part::Spilled { at, .. } => self
                .file
                .as_ref()
                .ok_or_else(|| Error::other(format!("the {} file is gone", self.prefix)))?
                .file
                .read_exact_at(buf, at + from as u64)?,
        }
        Ok(())
    }

    /// Nothing spilled is wanted any more: empty the file (a failure is only warned of).
    pub(crate) fn clear(&mut self) {
        if let Some(f) = &mut self.file {
            if let Err(e) = f.clear() {
                tracing::warn!("cannot empty the {} file: {e}", self.prefix);
            }
        }
    }

    /// Bytes in the file.
    #[cfg(test)]
    pub(crate) fn written(&self) -> u64 {
        self.file.as_ref().map_or(0, |f| f.len)
    }
}

/// The anonymous file itself.
struct SpillFile {
    file: File,
    /// Bytes written so far (where the next append goes).
    len: u64,
}

impl SpillFile {
    /// A new, empty, unnamed file in the temp folder; `prefix` names it while it is made.
    fn create(prefix: &str) -> std::io::Result<SpillFile> {
        let dir = std::env::temp_dir();
        for _ in 0..16 {
            let name = format!(
                "{prefix}-{}-{:016x}",
                std::process::id(),
                rand::random::<u64>()
            );
            let path = dir.join(name);
            let opened = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path);
            match opened {
                Ok(file) => {
                    std::fs::remove_file(&path)?;
                    return Ok(SpillFile { file, len: 0 });
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::new(e.kind(), format!("{}: {e}", dir.display()))),
            }
        }
        Err(Error::other(format!(
            "{}: no free file name",
            dir.display()
        )))
    }

    /// Append `bytes`; returns the offset they start at.
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<u64> {
        self.file.write_all_at(bytes, self.len)?;
        let at = self.len;
        self.len += bytes.len() as u64;
        Ok(at)
    }

    /// Forget everything written.
    fn clear(&mut self) -> std::io::Result<()> {
        self.file.set_len(0)?;
        self.len = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(spill: &Spill, part: &Part) -> Vec<u8> {
        let mut buf = vec![0; part.len()];
        spill.read(part, 0, &mut buf).expect("reads");
        buf
    }

    #[test]
    fn parts_read_back_as_kept_and_a_clear_starts_over() {
        let mut spill = Spill::new("storm-test-spill");
        let mut a = Part::Bytes(b"hello ".to_vec());
        let mut b = Part::Bytes(b"world".to_vec());
        assert_eq!(spill.move_out(&mut a).expect("moves"), 6);
        assert_eq!(spill.move_out(&mut a).expect("moves"), 0, "already out");
        assert_eq!(spill.written(), 6);
        assert_eq!(read_all(&spill, &b), b"world", "read from memory");
        spill.move_out(&mut b).expect("moves");
        assert!(matches!(b, Part::Spilled { at: 6, len: 5 }));
        assert_eq!(read_all(&spill, &b), b"world");
        assert_eq!(read_all(&spill, &a), b"hello ");
        let mut tail = [0; 3];
        spill.read(&b, 2, &mut tail).expect("reads");
        assert_eq!(&tail, b"rld");
        let past = Part::Spilled { at: 8, len: 10 };
        assert!(
            spill.read(&past, 0, &mut [0; 10]).is_err(),
            "short is an error"
        );
        spill.clear();
        assert_eq!(spill.written(), 0);
    }
}
