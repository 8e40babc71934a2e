//! Packing multilang resources: collected from a topology's folder, round-tripped, bounded,
//! and refused with the file named when one cannot be read.

use super::*;
use crate::topology::{load_file, LoadOptions};

/// A topology whose shell bolt runs `scripts/split.py`, with a `multilang/` folder beside it.
fn layout(dir: &Path) -> PathBuf {
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("scripts/split.py", "print('split')\n");
    write("scripts/unused.py", "unused\n");
    write("multilang/python/storm.py", "# adapter\n");
    write("multilang/python/__pycache__/storm.pyc", "cache");
    write("data/big.csv", "left out by .stormignore\n");
    write("data/small.txt", "shipped\n");
    write(".stormignore", "# not for the workers\n*.csv\n");
    write(".hidden", "never shipped\n");
    let topo =
        "name: shipped\nspouts:\n  - id: lines\n    type: stdin\nbolts:\n  - id: split\n    \
                type: shell\n    command: [python3, split.py, --fast]\n    cwd: scripts\n    \
                fields: [word]\n  - id: print\n    type: stdout\nstreams:\n  - from: lines\n    \
                to: split\n    grouping: shuffle\n  - from: split\n    to: print\n    \
                grouping: shuffle\n";
    write("topo.yaml", topo);
    dir.join("topo.yaml")
}

fn loaded(file: &Path) -> Topology {
    match load_file(file, &LoadOptions::default()) {
        Ok(l) => l.topology,
        Err(_) => panic!("{} does not load", file.display()),
    }
}

#[test]
fn the_topology_folder_is_collected_but_what_stormignore_leaves_out_and_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let topology = loaded(&layout(dir.path()));
    let r = collect(&topology).unwrap();
    let names: Vec<&str> = r.files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "data/small.txt",
            "multilang/python/storm.py",
            "scripts/split.py",
            "scripts/unused.py",
            "topo.yaml"
        ]
    );
    assert_eq!(r.base, "");
    let packed = pack(&r);
    assert_eq!(unpack(&packed).unwrap(), r);
    assert_eq!(unpack("").unwrap(), Resources::default());
    assert_eq!(pack(&Resources::default()), "");

    // Unpacked for a worker: the topology resolves its shell bolt's folder inside the copy.
    let out = tempfile::tempdir().unwrap();
    let copy = out.path().join("copy");
    let unpacked = Unpacked::write(&r, &copy).unwrap();
    let text = std::fs::read_to_string(copy.join("scripts/split.py")).unwrap();
    assert_eq!(text, "print('split')\n");
    assert!(copy.join("multilang/python/storm.py").is_file());
    let mut moved = topology.clone();
    relocate(&mut moved, &unpacked.topology_dir);
    let cwd = moved
        .component("split")
        .and_then(|c| c.cwd.clone())
        .unwrap();
    assert!(cwd.join("split.py").is_file(), "{}", cwd.display());
    assert_eq!(
        moved.base_dir, topology.base_dir,
        "other paths stay as submitted"
    );
    drop(unpacked);
    assert!(!copy.exists(), "the copy is removed when the worker ends");
}

#[test]
fn a_working_folder_above_the_topology_keeps_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("multilang/examples/split.py", "split\n");
    write("multilang/python/storm.py", "adapter\n");
    let topo = "name: up\nspouts:\n  - id: lines\n    type: stdin\nbolts:\n  - id: split\n    \
                type: shell\n    command: [python3, split.py]\n    cwd: ../multilang/examples\n    \
                fields: [word]\nstreams:\n  - from: lines\n    to: split\n    grouping: shuffle\n";
    write("topologies/up.yaml", topo);
    let mut topology = loaded(&dir.path().join("topologies/up.yaml"));
    let r = collect(&topology).unwrap();
    assert_eq!(r.base, "topologies");
    let names: Vec<&str> = r.files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "multilang/examples/split.py",
            "multilang/python/storm.py",
            "topologies/up.yaml"
        ]
    );
    let out = tempfile::tempdir().unwrap();
    let unpacked = Unpacked::write(&r, &out.path().join("copy")).unwrap();
    relocate(&mut topology, &unpacked.topology_dir);
    let cwd = topology
        .component("split")
        .and_then(|c| c.cwd.clone())
        .unwrap();
    assert!(cwd.join("split.py").is_file(), "{}", cwd.display());
    assert!(
        cwd.join("../python/storm.py").is_file(),
        "{}",
        cwd.display()
    );
    assert!(cwd.starts_with(out.path()), "{}", cwd.display());
}

#[test]
fn too_many_bytes_are_refused_naming_the_file_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let file = layout(dir.path());
    std::fs::write(
        dir.path().join("multilang/big.bin"),
        vec![0u8; MAX_TOTAL_BYTES + 1],
    )
    .unwrap();
    let err = format!("{:#}", collect(&loaded(&file)).unwrap_err());
    assert!(
        err.contains("big.bin")
            && err.contains(&MAX_TOTAL_BYTES.to_string())
            && err.contains(".stormignore"),
        "{err}"
    );
}

#[test]
fn too_many_files_are_refused_before_reading_naming_stormignore() {
    let dir = tempfile::tempdir().unwrap();
    let file = layout(dir.path());
    let many = dir.path().join("many");
    std::fs::create_dir_all(&many).unwrap();
    for i in 0..=MAX_FILES {
        std::fs::write(many.join(i.to_string()), "").unwrap();
    }
    let err = format!("{:#}", collect(&loaded(&file)).unwrap_err());
    assert!(
        err.contains(&MAX_FILES.to_string()) && err.contains(".stormignore"),
        "{err}"
    );
    // Left out, the folder ships again.
    std::fs::write(dir.path().join(".stormignore"), "/many/\n").unwrap();
    assert!(collect(&loaded(&file)).is_ok());
}

#[test]
fn an_unreadable_script_is_an_error_naming_the_component_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = layout(dir.path());
    let script = dir.path().join("scripts/split.py");
    // Named by the command and there, but its reading fails (`/proc/self/mem` at offset 0).
    std::fs::remove_file(&script).unwrap();
    std::os::unix::fs::symlink("/proc/self/mem", &script).unwrap();
    let err = format!("{:#}", collect(&loaded(&file)).unwrap_err());
    assert!(
        err.contains("component `split`") && err.contains("split.py"),
        "{err}"
    );
}

#[test]
fn damaged_or_escaping_packs_are_refused() {
    let r = Resources {
        base: String::new(),
        files: vec![("../evil".into(), b"x".to_vec())],
    };
    let err = format!("{:#}", unpack(&pack(&r)).unwrap_err());
    assert!(err.contains("outside"), "{err}");
    let good = pack(&Resources {
        base: String::new(),
        files: vec![("a".into(), b"x".to_vec())],
    });
    assert!(unpack(&good[..good.len() - 2]).is_err());
    assert!(unpack("zz").is_err());
}

#[test]
fn copies_of_workers_that_are_gone_are_swept_and_live_ones_kept() {
    let root = tempfile::tempdir().unwrap();
    let gone = root.path().join("t-1-127_0_0_1_7000-4294967295");
    let live = root
        .path()
        .join(format!("t-1-127_0_0_1_7001-{}", std::process::id()));
    let other = root.path().join("not-a-copy");
    for d in [&gone, &live, &other] {
        std::fs::create_dir_all(d).unwrap();
    }
    sweep(root.path());
    assert!(!gone.exists() && live.exists() && other.exists());
}
