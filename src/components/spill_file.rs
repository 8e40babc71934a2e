//! Where bytes held for a rollback move past their memory budget (the output a checkpoint has
//! not committed yet, the standard input it may read again): an anonymous temporary file,
//! appended to, read back by range, and emptied once nothing in it is wanted. Its name is
//! removed as soon as it is made, so nothing is left behind however the process ends.

use std::fs::{File, OpenOptions};
use std::io::{Error, ErrorKind};
use std::os::unix::fs::FileExt;

pub(crate) struct SpillFile {
    file: File,
    /// Bytes written so far (where the next append goes).
    len: u64,
}

impl SpillFile {
    /// A new, empty, unnamed file in the temp folder; `prefix` names it while it is made.
    pub(crate) fn create(prefix: &str) -> std::io::Result<SpillFile> {
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
    pub(crate) fn append(&mut self, bytes: &[u8]) -> std::io::Result<u64> {
        self.file.write_all_at(bytes, self.len)?;
        let at = self.len;
        self.len += bytes.len() as u64;
        Ok(at)
    }

    /// The `len` bytes at `at`.
    pub(crate) fn read(&self, at: u64, len: usize) -> std::io::Result<Vec<u8>> {
        let mut bytes = vec![0; len];
        self.read_into(at, &mut bytes)?;
        Ok(bytes)
    }

    /// Fill `buf` with the bytes at `at`.
    pub(crate) fn read_into(&self, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.file.read_exact_at(buf, at)
    }

    /// Bytes in the file.
    #[cfg(test)]
    pub(crate) fn written(&self) -> u64 {
        self.len
    }

    /// Forget everything written (nothing in it is wanted any more).
    pub(crate) fn clear(&mut self) -> std::io::Result<()> {
        self.file.set_len(0)?;
        self.len = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_back_as_written_and_a_clear_starts_over() {
        let mut f = SpillFile::create("storm-test-spill").expect("a temp file");
        let a = f.append(b"hello ").expect("appends");
        let b = f.append(b"world").expect("appends");
        assert_eq!((a, b), (0, 6));
        assert_eq!(f.read(b, 5).expect("reads"), b"world");
        assert_eq!(f.read(a, 6).expect("reads"), b"hello ");
        assert!(
            f.read(8, 10).is_err(),
            "past the end is an error, not short"
        );
        f.clear().expect("clears");
        assert_eq!(f.append(b"again").expect("appends"), 0);
    }
}
