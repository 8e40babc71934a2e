//! One part file the `file` sink writes: the file under its temporary or final name, its
//! compressor (each sync or checkpoint ends a gzip member or zstd frame, so the file up to
//! that point reads whole on its own: both formats read concatenated members/frames), and
//! its counts for rotation.

use super::args::Compression;
use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

const BUFFER: usize = 256 * 1024;

/// The writer over the file.
enum Enc {
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<File>>),
}

impl Enc {
    fn new(w: BufWriter<File>, c: Compression) -> std::io::Result<Enc> {
        Ok(match c {
            Compression::None => Enc::Plain(w),
            Compression::Gzip => Enc::Gzip(flate2::write::GzEncoder::new(
                w,
                flate2::Compression::default(),
            )),
            Compression::Zstd => Enc::Zstd(zstd::stream::write::Encoder::new(w, 3)?),
        })
    }

    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Enc::Plain(w) => w.write_all(b),
            Enc::Gzip(w) => w.write_all(b),
            Enc::Zstd(w) => w.write_all(b),
        }
    }

    /// End the member or frame: the buffered writer under it.
    fn end(self) -> std::io::Result<BufWriter<File>> {
        match self {
            Enc::Plain(w) => Ok(w),
            Enc::Gzip(w) => w.finish(),
            Enc::Zstd(w) => w.finish(),
        }
    }
}

/// A part file being written.
pub(crate) struct Part {
    /// Where its bytes are written (under the staging dir when they are published later).
    pub(crate) temp: PathBuf,
    /// Its published name.
    pub(crate) target: PathBuf,
    enc: Option<Enc>,
    compression: Compression,
    /// Bytes on disk at the last seal.
    pub(crate) len: u64,
    /// Bytes of records written (before compression).
    pub(crate) bytes: u64,
    pub(crate) records: u64,
    pub(crate) opened: Instant,
    pub(crate) last_write: Instant,
    /// Written to since the last seal.
    dirty: bool,
}

fn located(e: std::io::Error, what: &str, path: &Path) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("cannot {what} {}: {e}", path.display()))
}

impl Part {
    /// A new, empty part file at `temp` (made with its directories; an existing file at
    /// `temp` is an error when `exclusive`).
    pub(crate) fn create(
        temp: PathBuf,
        target: PathBuf,
        c: Compression,
        exclusive: bool,
    ) -> std::io::Result<Part> {
        if let Some(dir) = temp.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| located(e, "create the directory", dir))?;
        }
        let mut o = std::fs::OpenOptions::new();
        o.write(true);
        match exclusive {
            true => o.create_new(true),
            false => o.create(true).truncate(true),
        };
        let file = o.open(&temp).map_err(|e| located(e, "create", &temp))?;
        Part::over(file, temp, target, c, 0)
    }

    /// A part file a checkpoint saved, `len` bytes long then: cut back to that length (what
    /// was written after the checkpoint is written again from replayed inputs).
    pub(crate) fn resume(
        temp: PathBuf,
        target: PathBuf,
        c: Compression,
        len: u64,
    ) -> std::io::Result<Part> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(&temp)
            .map_err(|e| located(e, "open the in-progress file", &temp))?;
        let on_disk = file
            .metadata()
            .map_err(|e| located(e, "read", &temp))?
            .len();
        if on_disk < len {
            return Err(std::io::Error::other(format!(
                "the in-progress file {} holds {on_disk} bytes, fewer than the {len} its checkpoint saved",
                temp.display()
            )));
        }
        file.set_len(len)
            .map_err(|e| located(e, "truncate", &temp))?;
        file.seek(std::io::SeekFrom::Start(len))
            .map_err(|e| located(e, "seek in", &temp))?;
        Part::over(file, temp, target, c, len)
    }

    /// Count the part's age and idleness from `now`.
    pub(crate) fn stamp(&mut self, now: Instant) {
        self.opened = now;
        self.last_write = now;
    }

    fn over(
        file: File,
        temp: PathBuf,
        target: PathBuf,
        c: Compression,
        len: u64,
    ) -> std::io::Result<Part> {
        let now = Instant::now();
        Ok(Part {
            enc: Some(Enc::new(BufWriter::with_capacity(BUFFER, file), c)?),
            temp,
            target,
            compression: c,
            len,
            bytes: 0,
            records: 0,
            opened: now,
            last_write: now,
            dirty: false,
        })
    }

    /// Write one record's bytes.
    pub(crate) fn write(&mut self, record: &[u8]) -> std::io::Result<()> {
        let enc = self
            .enc
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the part file is closed"))?;
        enc.write_all(record)
            .map_err(|e| located(e, "write", &self.temp))?;
        self.bytes += record.len() as u64;
        self.records += 1;
        self.dirty = true;
        Ok(())
    }

    /// Make what was written whole on disk: end the compressed member, flush, and with
    /// `fsync` sync the file's data. `len` is then the file's length.
    pub(crate) fn seal(&mut self, fsync: bool) -> std::io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let enc = self
            .enc
            .take()
            .ok_or_else(|| std::io::Error::other("the part file is closed"))?;
        let mut w = enc.end().map_err(|e| located(e, "write", &self.temp))?;
        w.flush().map_err(|e| located(e, "write", &self.temp))?;
        let file = w.get_mut();
        if fsync {
            file.sync_data()
                .map_err(|e| located(e, "sync", &self.temp))?;
        }
        self.len = file
            .stream_position()
            .map_err(|e| located(e, "read", &self.temp))?;
        self.enc = Some(Enc::new(w, self.compression)?);
        self.dirty = false;
        Ok(())
    }

    /// Seal and close (synced: a closed part is published or acked as it is).
    pub(crate) fn close(mut self) -> std::io::Result<(PathBuf, PathBuf)> {
        self.seal(true)?;
        Ok((self.temp, self.target))
    }
}

/// Sync a directory, so a file created or renamed in it survives a crash.
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| located(e, "sync the directory", dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gunzip(path: &Path) -> String {
        let f = File::open(path).expect("open");
        let mut out = String::new();
        flate2::read::MultiGzDecoder::new(f)
            .read_to_string(&mut out)
            .expect("gunzip");
        out
    }

    /// Sealed members read back whole, and a resumed part cut back to its saved length
    /// forgets what came after.
    #[test]
    fn seal_resume_and_truncate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let temp = dir.path().join("p.gz");
        let mut p =
            Part::create(temp.clone(), temp.clone(), Compression::Gzip, true).expect("create");
        p.write(b"a\n").expect("write");
        p.seal(true).expect("seal");
        let saved = p.len;
        p.write(b"b\n").expect("write");
        p.seal(false).expect("seal");
        drop(p);
        assert_eq!(gunzip(&temp), "a\nb\n");
        let mut p =
            Part::resume(temp.clone(), temp.clone(), Compression::Gzip, saved).expect("resume");
        p.write(b"c\n").expect("write");
        p.close().expect("close");
        assert_eq!(gunzip(&temp), "a\nc\n");
        assert!(Part::resume(temp.clone(), temp.clone(), Compression::Gzip, 1 << 20).is_err());
    }

    #[test]
    fn zstd_frames_concatenate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let temp = dir.path().join("p.zst");
        let mut p =
            Part::create(temp.clone(), temp.clone(), Compression::Zstd, true).expect("create");
        p.write(b"x\n").expect("write");
        p.seal(false).expect("seal");
        p.write(b"y\n").expect("write");
        p.close().expect("close");
        let bytes = std::fs::read(&temp).expect("read");
        let out = zstd::stream::decode_all(&bytes[..]).expect("unzstd");
        assert_eq!(out, b"x\ny\n");
    }
}
