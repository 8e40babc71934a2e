//! Python 3 compatibility for components written against Apache Storm's own `storm.py`.
//!
//! That adapter predates Python 3: its `emitBolt` serialises `map(...)` for the anchors, which
//! Python 3's `json` refuses, so a bolt built on it cannot emit on any runner. It imports
//! `simplejson` when it can, so every child gets a small `simplejson` module of ours first on
//! its `PYTHONPATH` (in its pid directory), whose `dumps` writes iterators as arrays
//! (`multilang/compat/simplejson.py`). It never stands in for a real simplejson: where the
//! child's Python has the package (pystorm depends on it), the shim loads that package under
//! its own name and only wraps its `dumps`, retrying what it refuses; without it, the shim is
//! the standard `json`. Children in other languages never look at it.

use std::ffi::OsString;
use std::path::Path;

const SIMPLEJSON: &str = include_str!("../../../multilang/compat/simplejson.py");

/// Write the shim into `dir` and return the child's `PYTHONPATH`: `dir`, then `inherited`.
pub(crate) fn install(dir: &Path, inherited: Option<OsString>) -> std::io::Result<OsString> {
    std::fs::write(dir.join("simplejson.py"), SIMPLEJSON)?;
    let mut paths = vec![dir.to_path_buf()];
    if let Some(inherited) = inherited {
        paths.extend(std::env::split_paths(&inherited));
    }
    std::env::join_paths(paths).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs python3, which every machine this project runs on has.
    #[test]
    fn storm_py_style_emits_serialise_under_python3() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = install(dir.path(), None).expect("install");
        let out = std::process::Command::new("python3")
            .arg("-c")
            .arg(
                "import simplejson as json\n\
                 print(json.dumps({'anchors': map(lambda a: a, ['7']), 'tuple': ['é']}))\n\
                 print(json.loads('[1]'))",
            )
            .env("PYTHONPATH", path)
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "{\"anchors\": [\"7\"], \"tuple\": [\"\\u00e9\"]}\n[1]\n"
        );
    }
}
