//! Part file names: the rendered path for a bucket's first part, then `NAME.1.EXT`,
//! `NAME.2.EXT`… as it rotates; with several tasks, each task's files carry `.tN`
//! (`10.t1.jsonl`, `10.t1.2.jsonl`), so tasks never write the same file.

use std::path::{Path, PathBuf};

/// The name of part `n` of the bucket at `path`, for task `task` (`None`: the only task).
pub(crate) fn part_name(path: &Path, task: Option<u32>, n: u64) -> PathBuf {
    if task.is_none() && n == 0 {
        return path.to_path_buf();
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (stem, ext) = split_ext(&name);
    let mut out = stem.to_string();
    if let Some(t) = task {
        out.push_str(&format!(".t{t}"));
    }
    if n > 0 {
        out.push_str(&format!(".{n}"));
    }
    out.push_str(ext);
    path.with_file_name(out)
}

/// A file name's stem and extension: the last one, or the last two when the last is a
/// compression's (`.jsonl.gz`).
fn split_ext(name: &str) -> (&str, &str) {
    let Some(last) = name.rfind('.').filter(|&i| i > 0) else {
        return (name, "");
    };
    let compressed = matches!(&name[last..], ".gz" | ".zst" | ".zstd");
    if compressed {
        if let Some(before) = name[..last].rfind('.').filter(|&i| i > 0) {
            return (&name[..before], &name[before..]);
        }
    }
    (&name[..last], &name[last..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_parts() {
        let p = Path::new("out/api/10.jsonl");
        assert_eq!(part_name(p, None, 0), PathBuf::from("out/api/10.jsonl"));
        assert_eq!(part_name(p, None, 2), PathBuf::from("out/api/10.2.jsonl"));
        assert_eq!(
            part_name(p, Some(1), 0),
            PathBuf::from("out/api/10.t1.jsonl")
        );
        let gz = Path::new("o/10.jsonl.gz");
        assert_eq!(part_name(gz, None, 1), PathBuf::from("o/10.1.jsonl.gz"));
        assert_eq!(part_name(Path::new("log"), None, 1), PathBuf::from("log.1"));
        assert_eq!(
            part_name(Path::new(".hidden"), None, 1),
            PathBuf::from(".hidden.1")
        );
    }
}
