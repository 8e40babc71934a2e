//! A file's fingerprint, as a followed file or glob tells files by: a checksum of its first
//! [`PRINT_BYTES`] bytes, so a renamed file is known and a reused inode is not taken for it.

use std::path::Path;

/// A followed file's fingerprint is a checksum of this many first bytes; a shorter file has
/// none yet (it is told by device and inode only).
pub(crate) const PRINT_BYTES: usize = 256;

/// The checksum (64-bit FNV-1a) of the first [`PRINT_BYTES`] bytes of `path`, when it has
/// that many.
pub(crate) fn fingerprint(path: &Path) -> Option<u64> {
    use std::io::Read;
    let mut head = Vec::with_capacity(PRINT_BYTES);
    let file = std::fs::File::open(path).ok()?;
    file.take(PRINT_BYTES as u64).read_to_end(&mut head).ok()?;
    (head.len() == PRINT_BYTES).then(|| checksum(&head))
}

/// 64-bit FNV-1a of `bytes`: the fingerprint of a file's first [`PRINT_BYTES`] bytes.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The fingerprint of the open `file`: a checksum of its first [`PRINT_BYTES`] bytes, when it
/// has them (read where they are, the file's read position left alone).
pub(crate) fn print_of(file: &std::fs::File) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        let mut head = [0u8; PRINT_BYTES];
        file.read_exact_at(&mut head, 0).ok()?;
        Some(checksum(&head))
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        None
    }
}
