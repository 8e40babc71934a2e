//! Multilang resources shipped with a submission (what Storm keeps in a topology jar's
//! `resources/` folder), so a worker on any host runs a shell component without the
//! submitting host's files.
//!
//! `storm submit` of a topology with `shell` components ships the topology file's folder:
//! every file under it but hidden entries, `__pycache__` and what its `.stormignore` leaves
//! out (`stormignore`). A component whose working folder lies outside it (`cwd:
//! ../multilang/examples`) adds each file its command names (`split.py` in `[python3,
//! split.py]`) and any `multilang/` folder that working folder lies in (our Python adapter is
//! in `multilang/python/`). Paths are kept relative to the deepest folder holding them and
//! the topology file, so `../multilang/examples` still points at the same files once unpacked.
//! They are packed into one length-prefixed byte string, hex-encoded into the submission
//! (which nimbus keeps in its data folder and, with ZooKeeper, in the ensemble). A worker
//! unpacks them into a folder of its own, removed when the worker ends (and, for a worker
//! that was killed, by the next worker or its supervisor), and points those shell
//! components' working folders into it, as Storm's workers run children in the extracted
//! `resources/`; every other path stays as submitted.

use crate::cluster::protocol::rpc::Submission;
use crate::cluster::protocol::stormignore::{StormIgnore, FILE_NAME};
use crate::model::Topology;
use std::path::{Component as Part, Path, PathBuf};

/// The most bytes of resources one submission may carry (all files together): hex-encoded
/// they fit one request to nimbus (`rpc::MAX_MESSAGE_BYTES`). With ZooKeeper a submission
/// must also fit one node (`ha::fits_in_a_node`, about 1 MB).
const MAX_TOTAL_BYTES: usize = 4 * 1024 * 1024;
/// The most files one submission may carry.
const MAX_FILES: usize = 10_000;
/// Marks the packed format (and its version).
const MAGIC: &[u8] = b"STORMRES1";

/// Files to ship: `base` is the topology file's folder relative to the common root of all
/// paths ('/'-separated, empty when it is the root); each file's path is relative to that root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Resources {
    base: String,
    files: Vec<(String, Vec<u8>)>,
}

/// Collect the resources of `topology`'s shell components (see the module comment).
pub(crate) fn collect(topology: &Topology) -> anyhow::Result<Resources> {
    if !topology.components.iter().any(|c| c.ctype.runs_program()) {
        return Ok(Resources::default());
    }
    let base = canonical(&topology.base_dir, "the topology's folder")?;
    let mut paths: Vec<PathBuf> = Vec::new();
    let ignore = StormIgnore::load(&base)?;
    walk(&base, &base, &ignore, &mut paths)?;
    let none = StormIgnore::default();
    for c in &topology.components {
        if !c.ctype.runs_program() {
            continue;
        }
        let cwd = match &c.cwd {
            Some(cwd) if cwd.starts_with(&topology.base_dir) => {
                let what = format!("component `{}`: its working folder", c.id);
                canonical(cwd, &what)?
            }
            // The topology's folder, shipped whole above; or an absolute folder of its own,
            // which must be there on every host, as in local mode.
            _ => continue,
        };
        if cwd.starts_with(&base) {
            continue;
        }
        for arg in c.command.iter().flatten().skip(1) {
            let file = normalize(&cwd.join(arg));
            if Path::new(arg).is_relative() && file.is_file() {
                paths.push(file);
            }
        }
        if let Some(ml) = cwd
            .ancestors()
            .find(|a| a.file_name() == Some("multilang".as_ref()))
        {
            walk(ml, ml, &none, &mut paths)?;
        }
    }
    paths.sort();
    paths.dedup();
    gather(&base, &paths, topology)
}

/// Read `paths` relative to their common root with `base`, bounded in count and size.
fn gather(base: &Path, paths: &[PathBuf], topology: &Topology) -> anyhow::Result<Resources> {
    anyhow::ensure!(
        paths.len() <= MAX_FILES,
        "the multilang resources of `{}` are {} files; a submission carries at most {MAX_FILES}",
        topology.name,
        paths.len()
    );
    let root = paths
        .iter()
        .filter_map(|p| p.parent())
        .fold(base.to_path_buf(), |r, p| common(&r, p));
    let mut out = Resources {
        base: slashed(base.strip_prefix(&root).unwrap_or(Path::new(""))),
        files: Vec::new(),
    };
    let mut total = 0usize;
    for p in paths {
        let data = std::fs::read(p).map_err(|e| {
            let owner = owner_of(topology, p);
            anyhow::anyhow!("{owner}: cannot read {} to ship it: {e}", p.display())
        })?;
        total += data.len();
        anyhow::ensure!(
            total <= MAX_TOTAL_BYTES,
            "{}: shipping it makes the multilang resources {total} bytes; a submission carries \
             at most {MAX_TOTAL_BYTES} bytes (list what the workers do not need in {})",
            p.display(),
            base.join(FILE_NAME).display()
        );
        out.files
            .push((slashed(p.strip_prefix(&root).unwrap_or(p)), data));
    }
    Ok(out)
}

/// Which component a file is shipped for (for error messages).
fn owner_of(topology: &Topology, file: &Path) -> String {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    topology
        .components
        .iter()
        .find(|c| c.command.iter().flatten().any(|a| a.ends_with(name)))
        .map(|c| format!("component `{}`", c.id))
        .unwrap_or_else(|| format!("topology `{}` (multilang folder)", topology.name))
}

fn canonical(p: &Path, what: &str) -> anyhow::Result<PathBuf> {
    std::fs::canonicalize(p).map_err(|e| anyhow::anyhow!("{what} {}: {e}", p.display()))
}

/// Every regular file under `dir` (none when it is not a folder), skipping hidden entries,
/// `__pycache__`, symbolic links to folders and what `ignore` (patterns relative to `root`)
/// leaves out. Stops with an error past [`MAX_FILES`], before reading any file.
fn walk(
    root: &Path,
    dir: &Path,
    ignore: &StormIgnore,
    out: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| anyhow::anyhow!("cannot list {}: {e}", dir.display()))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "__pycache__" {
            continue;
        }
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let relative = slashed(path.strip_prefix(root).unwrap_or(&path));
        if ignore.ignores(&relative, kind.is_dir()) {
            continue;
        }
        if kind.is_dir() {
            walk(root, &path, ignore, out)?;
        } else if path.is_file() {
            out.push(path);
            anyhow::ensure!(
                out.len() <= MAX_FILES,
                "{}: shipping the topology's folder takes more than {MAX_FILES} files, the most \
                 a submission carries; list what the workers do not need in {}",
                root.display(),
                root.join(FILE_NAME).display()
            );
        }
    }
    Ok(())
}

/// `p` with `.` and `..` resolved lexically.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in p.components() {
        match part {
            Part::CurDir => {}
            Part::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The deepest folder holding both `a` and `b`.
fn common(a: &Path, b: &Path) -> PathBuf {
    a.components()
        .zip(b.components())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect()
}

fn slashed(p: &Path) -> String {
    let parts: Vec<_> = p.iter().map(|s| s.to_string_lossy()).collect();
    parts.join("/")
}

/// The packed form carried by a submission: hex of the length-prefixed bytes; empty when
/// there is nothing to ship.
pub(crate) fn pack(r: &Resources) -> String {
    if r.files.is_empty() {
        return String::new();
    }
    let mut bytes = MAGIC.to_vec();
    let mut put = |b: &[u8]| {
        bytes.extend_from_slice(&(b.len() as u32).to_be_bytes());
        bytes.extend_from_slice(b);
    };
    put(r.base.as_bytes());
    put(&(r.files.len() as u32).to_be_bytes());
    for (path, data) in &r.files {
        put(path.as_bytes());
        put(data);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Read back what [`pack`] wrote, checking the bounds and that every path stays inside the
/// folder it will be unpacked into.
pub(crate) fn unpack(packed: &str) -> anyhow::Result<Resources> {
    if packed.is_empty() {
        return Ok(Resources::default());
    }
    let bytes = unhex(packed)?;
    let rest = bytes
        .strip_prefix(MAGIC)
        .ok_or_else(|| anyhow::anyhow!("the resources are not in a format this storm reads"))?;
    let mut reader = ByteCursor(rest);
    let base = reader.text()?;
    let count = u32::from_be_bytes(
        reader
            .field()?
            .try_into()
            .map_err(|_| anyhow::anyhow!("the resources' file count is damaged"))?,
    ) as usize;
    anyhow::ensure!(
        count <= MAX_FILES,
        "the resources hold {count} files; at most {MAX_FILES}"
    );
    let mut out = Resources {
        base: inside(base)?,
        files: Vec::new(),
    };
    let mut total = 0usize;
    for _ in 0..count {
        let path = inside(reader.text()?)?;
        let data = reader.field()?.to_vec();
        total += data.len();
        anyhow::ensure!(
            total <= MAX_TOTAL_BYTES,
            "the resources exceed {MAX_TOTAL_BYTES} bytes at {path}"
        );
        out.files.push((path, data));
    }
    anyhow::ensure!(reader.0.is_empty(), "the resources have trailing bytes");
    Ok(out)
}

/// A relative path of plain names only (no `..`, no root): it cannot leave its folder.
fn inside(p: String) -> anyhow::Result<String> {
    let ok = Path::new(&p)
        .components()
        .all(|c| matches!(c, Part::Normal(_)));
    anyhow::ensure!(ok, "the resources name a path outside their folder: {p:?}");
    Ok(p)
}

fn unhex(s: &str) -> anyhow::Result<Vec<u8>> {
    anyhow::ensure!(
        s.len() % 2 == 0,
        "the resources are damaged (odd hex length)"
    );
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| anyhow::anyhow!("the resources are damaged (not hex at {i})"))
        })
        .collect()
}

/// Reads length-prefixed fields.
struct ByteCursor<'a>(&'a [u8]);

impl<'a> ByteCursor<'a> {
    fn field(&mut self) -> anyhow::Result<&'a [u8]> {
        let damaged = || anyhow::anyhow!("the resources are damaged (cut short)");
        let (len, rest) = self.0.split_first_chunk::<4>().ok_or_else(damaged)?;
        let len = u32::from_be_bytes(*len) as usize;
        anyhow::ensure!(rest.len() >= len, damaged());
        let (field, rest) = rest.split_at(len);
        self.0 = rest;
        Ok(field)
    }

    fn text(&mut self) -> anyhow::Result<String> {
        String::from_utf8(self.field()?.to_vec())
            .map_err(|_| anyhow::anyhow!("the resources name a path that is not UTF-8"))
    }
}

/// A worker's unpacked copy of its topology's resources, removed when dropped.
#[derive(Debug)]
pub(crate) struct Unpacked {
    dir: PathBuf,
    /// Where the topology file would be: shell components resolve from here.
    topology_dir: PathBuf,
}

impl Unpacked {
    /// Write `r` into `dir` (created; emptied first).
    fn write(r: &Resources, dir: &Path) -> anyhow::Result<Unpacked> {
        let _ = std::fs::remove_dir_all(dir);
        let topology_dir = dir.join(&r.base);
        let mk = |d: &Path| {
            std::fs::create_dir_all(d)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", d.display()))
        };
        mk(&topology_dir)?;
        for (path, data) in &r.files {
            let file = dir.join(path);
            if let Some(parent) = file.parent() {
                mk(parent)?;
            }
            std::fs::write(&file, data)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
        }
        Ok(Unpacked {
            dir: dir.to_path_buf(),
            topology_dir,
        })
    }
}

impl Drop for Unpacked {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A worker's copy of `sub`'s resources, in a folder of its own under the system's temporary
/// folder (`storm-resources/ID-SLOT-PID`); the shell components of `topology` (loaded from
/// `sub`) whose working folder was shipped then run from the copy. Nothing else changes: other
/// paths (`file` spouts, `lookup` tables) still resolve from the topology's folder as
/// submitted. `None` when nothing was shipped.
pub(crate) fn for_worker(
    sub: &Submission,
    topology: &mut Topology,
    id: &str,
    slot: &str,
) -> anyhow::Result<Option<Unpacked>> {
    let r = unpack(&sub.resources).map_err(|e| anyhow::anyhow!("topology {id}: {e:#}"))?;
    if r.files.is_empty() || sub.path == "<-e>" {
        return Ok(None);
    }
    let slot: String = slot
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let root = copies_root();
    sweep(&root);
    let dir = root.join(format!("{id}-{slot}-{}", std::process::id()));
    let unpacked = Unpacked::write(&r, &dir)?;
    relocate(topology, &unpacked.topology_dir);
    Ok(Some(unpacked))
}

/// The folder workers unpack their copies in.
fn copies_root() -> PathBuf {
    std::env::temp_dir().join("storm-resources")
}

/// Remove the copies left by workers that are gone: a supervisor calls it when one of its
/// workers dies and when it stops, a worker before it unpacks its own.
pub(crate) fn sweep_copies() {
    sweep(&copies_root());
}

/// Remove the copies under `root` left by workers that are gone (a SIGKILLed worker cannot
/// remove its own): each folder's name ends with its worker's pid. Only where `/proc` lists
/// the live processes; elsewhere copies of killed workers stay.
fn sweep(root: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name.to_str().and_then(|n| n.rsplit('-').next());
        if let Some(pid) = pid.filter(|p| p.parse::<u32>().is_ok()) {
            if !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// Point the shell components whose working folder [`collect`] shipped (the topology's folder
/// or one relative to it) at the same place under `copy`, the unpacked topology folder.
fn relocate(topology: &mut Topology, copy: &Path) {
    let base = topology.base_dir.clone();
    for c in &mut topology.components {
        if !c.ctype.runs_program() {
            continue;
        }
        c.cwd = match c.cwd.take() {
            None => Some(copy.to_path_buf()),
            Some(cwd) => match cwd.strip_prefix(&base) {
                Ok(rel) => Some(copy.join(rel)),
                Err(_) => Some(cwd),
            },
        };
    }
}

#[cfg(test)]
#[path = "multilang_files_tests.rs"]
mod tests;
