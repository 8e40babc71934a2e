//! A multilang child's detached descendant (`setsid cmd &`: a session and process group of
//! its own, out of reach of the child's group kill) does not outlive the run, in one process
//! or in worker processes: the run and each worker adopt their orphaned descendants and end
//! them when they end.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// `sleep` processes started with `marker` as their duration: (pid, parent pid).
fn sleepers(marker: &str) -> Vec<(u32, u32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            let ours = args.first().is_some_and(|a| a.ends_with(b"sleep"))
                && args.get(1) == Some(&marker.as_bytes());
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            ours.then_some((pid, ppid))
        })
        .collect()
}

/// SIGKILLs the sleepers of `.0` left when a test fails.
struct Sleepers(String);

impl Drop for Sleepers {
    fn drop(&mut self) {
        for (pid, _) in sleepers(&self.0) {
            crate::cluster::signal(pid, "-KILL");
        }
    }
}

/// `generate(count=20) -> shell bolt -> stdout`, the bolt started by `sh`, which first starts
/// `setsid sleep MARKER &` and writes its pid to `started`.
fn topology(dir: &Path, marker: &str) -> PathBuf {
    let adapter = Path::new(env!("CARGO_MANIFEST_DIR")).join("multilang/python");
    let bolt = format!(
        "import sys\nsys.path.insert(0, {:?})\nimport storm\n\
         class B(storm.BasicBolt):\n    def process(self, t):\n        \
         storm.emit(t.values, need_task_ids=False)\nB().run()\n",
        adapter.display().to_string()
    );
    std::fs::write(dir.join("bolt.py"), bolt).expect("write the bolt");
    let started = dir.join("started");
    let script = format!(
        "setsid sleep {marker} </dev/null >/dev/null 2>&1 & echo $! > {}; exec python3 bolt.py",
        started.display()
    );
    let yaml = format!(
        "name: detached\nspouts:\n  - id: gen\n    type: generate\n    \
         args: {{ count: 20, values: [x] }}\n    fields: [v]\n\
         bolts:\n  - id: py\n    type: shell\n    command: [sh, -c, {script:?}]\n    \
         fields: [out]\n  - id: print\n    type: stdout\n\
         streams:\n  - {{ from: gen, to: py, grouping: shuffle }}\n  \
         - {{ from: py, to: print, grouping: global }}\n"
    );
    let file = dir.join("detached.yaml");
    std::fs::write(&file, yaml).expect("write the topology");
    file
}

/// Run the topology with `extra`; the run must succeed, and its sleeper must be gone when it
/// has ended.
fn no_sleeper_outlives(extra: &[&str], n: u32) {
    let marker = format!("1000.{}{n}", std::process::id());
    let _guard = Sleepers(marker.clone());
    let dir = tempfile::tempdir().expect("tempdir");
    let file = topology(dir.path(), &marker);
    let out = crate::run::storm(dir.path())
        .current_dir(dir.path())
        .timeout(Duration::from_secs(90))
        .args(["run", "--progress", "never"])
        .arg(&file)
        .args(extra)
        .output()
        .expect("storm run");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 20);
    let started = std::fs::read_to_string(dir.path().join("started")).expect("started");
    assert!(!started.trim().is_empty(), "the bolt started no sleeper");
    assert_eq!(sleepers(&marker), [], "a detached sleeper outlived the run");
}

#[test]
fn a_detached_grandchild_ends_with_a_run_in_one_process() {
    no_sleeper_outlives(&[], 1);
}

#[test]
fn a_detached_grandchild_ends_with_its_worker_process() {
    no_sleeper_outlives(&["--processes", "--workers", "2"], 2);
}
