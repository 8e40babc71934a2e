//! The `file` sink: partitioned paths (fields and strftime), rotation by records, size and
//! interval, gzip and zstd read back with the `gzip` and `zstd` programs, and with
//! `stateful: true` exactly once through SIGKILLs at random moments (published files compared
//! with the input: no record lost, none twice, none partial). An unwritable directory and a
//! full disk (a tiny tmpfs) end the run with a clear error, and a stateful run resumed once
//! there is room again publishes exactly the input.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `n` JSON records: an id, a service (`s0`..`s{k-1}`), an epoch-ms time in hour `id % 2`.
fn input(dir: &Path, n: usize, services: usize) -> PathBuf {
    let path = dir.join("in.jsonl");
    let text: String = (0..n)
        .map(|i| {
            let ts = 1_796_292_000_000u64 + (i as u64 % 2) * 3_600_000;
            format!(
                "{{\"id\":{i},\"service\":\"s{}\",\"ts\":{ts}}}\n",
                i % services
            )
        })
        .collect();
    std::fs::write(&path, text).expect("writes the input");
    path
}

/// A topology: the input (through `chaos` with `delay` when given) into a file sink.
fn topology(dir: &Path, input: &Path, sink: &str, delay: Option<&str>) -> PathBuf {
    let (chain, streams) = match delay {
        Some(d) => (
            format!("  - {{id: slow, type: chaos, args: {{delay: {d}}}}}\n"),
            "  - {from: in, to: slow}\n  - {from: slow, to: out}\n",
        ),
        None => (String::new(), "  - {from: in, to: out}\n"),
    };
    let yaml = format!(
        "name: file-sink
spouts:
  - {{id: in, type: file, args: {{path: \"{}\", format: json, fields: [id, service, ts]}}}}
bolts:
{chain}  - {{id: out, type: file, {sink}}}
streams:
{streams}",
        input.display()
    );
    let file = dir.join("topology.yaml");
    std::fs::write(&file, yaml).expect("writes the topology");
    file
}

fn storm(args: &[&str]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("storm"))
        .args(args)
        .env_remove("STORM_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("storm runs")
}

fn ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "storm failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every file under `dir` (not the staging dir), by path relative to it.
pub(crate) fn files(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == ".storm-staging") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap_or(&p).display().to_string();
                out.insert(rel, p);
            }
        }
    }
    out
}

/// The ids in JSON lines, counted; a line that is not a whole record fails.
pub(crate) fn ids(text: &str, counts: &mut BTreeMap<i64, usize>) {
    for line in text.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("a partial record {line:?}: {e}"));
        *counts.entry(v["id"].as_i64().expect("an id")).or_insert(0) += 1;
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("reads")
}

/// `out/{service}/%Y-%m-%d/%H.jsonl` with the `ts` field's time: one directory per service
/// and day, one file per hour, rotated every 50 records into `H.1.jsonl`, `H.2.jsonl`…
#[test]
fn records_go_to_partitioned_files_rotated_by_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inp = input(dir.path(), 600, 3);
    let sink = "args: {path: \"out/{service}/%Y-%m-%d/%H.jsonl\", time: ts, rotate: {records: 50}}";
    let file = topology(dir.path(), &inp, sink, None);
    ok(&storm(&["run", &file.display().to_string()]));
    let out = files(&dir.path().join("out"));
    // 3 services x 2 hours, 100 records each: 2 parts of 50.
    let names: Vec<&str> = out.keys().map(String::as_str).collect();
    assert_eq!(names.len(), 12, "{names:?}");
    assert!(
        names.contains(&"s0/2026-12-03/10.jsonl") && names.contains(&"s2/2026-12-03/11.1.jsonl"),
        "{names:?}"
    );
    let mut counts = BTreeMap::new();
    for p in out.values() {
        let text = read(p);
        assert_eq!(text.lines().count(), 50);
        ids(&text, &mut counts);
    }
    assert_eq!(counts.len(), 600);
    let first = read(&out["s1/2026-12-03/11.jsonl"]);
    assert!(
        first.starts_with("{\"id\":1,\"service\":\"s1\",\"ts\":1796295600000}\n"),
        "{first}"
    );
}

/// `rotate.size` closes a part once it holds that many bytes; CSV with `header: true` starts
/// each part with the field names.
#[test]
fn parts_rotate_by_size_with_a_header_each() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inp = input(dir.path(), 200, 1);
    let sink = "args: {path: out/all.csv, format: csv, header: true, rotate: {size: 1KB}}";
    let file = topology(dir.path(), &inp, sink, None);
    ok(&storm(&["run", &file.display().to_string()]));
    let out = files(&dir.path().join("out"));
    assert!(out.len() > 4, "{:?}", out.keys());
    let mut rows = 0;
    for p in out.values() {
        let text = read(p);
        assert!(text.starts_with("id,service,ts\n"), "{text}");
        // The record that passes 1000 bytes closes it: under 1000 + one row (and the header).
        assert!(text.len() < 1000 + 60, "{} bytes", text.len());
        rows += text.lines().count() - 1;
    }
    assert_eq!(rows, 200);
}

/// `rotate.interval` closes parts by age: 300 tuples generated at 200/s (at least 1.5 s) with
/// `interval: 200ms` make several parts.
#[test]
fn parts_rotate_by_interval() {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = "name: interval
spouts:
  - {id: in, type: generate, args: {count: 300, rate: 200}}
bolts:
  - {id: out, type: file, args: {path: out/x.jsonl, rotate: {interval: 200ms}}}
streams:
  - {from: in, to: out}
";
    let file = dir.path().join("topology.yaml");
    std::fs::write(&file, yaml).expect("writes the topology");
    ok(&storm(&["run", &file.display().to_string()]));
    let out = files(&dir.path().join("out"));
    assert!(out.len() >= 3, "{:?}", out.keys());
    assert!(
        out.contains_key("x.jsonl") && out.contains_key("x.1.jsonl"),
        "{:?}",
        out.keys()
    );
    let lines: usize = out.values().map(|p| read(p).lines().count()).sum();
    assert_eq!(lines, 300);
}

/// gzip and zstd parts, with and without state, read back whole by `gzip -dc` and `zstd -dc`.
#[test]
fn gzip_and_zstd_parts_read_back_with_the_tools() {
    for (compression, ext, tool) in [("gzip", "gz", "gzip"), ("zstd", "zst", "zstd")] {
        for stateful in [false, true] {
            let dir = tempfile::tempdir().expect("tempdir");
            let inp = input(dir.path(), 3000, 2);
            let sink = format!(
                "stateful: {stateful}, args: {{path: \"out/{{service}}.jsonl.{ext}\", compression: {compression}, rotate: {{records: 1000}}, sync: {{records: 100}}}}"
            );
            let file = topology(dir.path(), &inp, &sink, None);
            let mut args = vec!["run".to_string(), file.display().to_string()];
            if stateful {
                args.extend([
                    "--state-dir".into(),
                    dir.path().join("state").display().to_string(),
                ]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            ok(&storm(&args));
            let out = files(&dir.path().join("out"));
            assert_eq!(out.len(), 4, "{compression}: {:?}", out.keys());
            let mut counts = BTreeMap::new();
            for p in out.values() {
                let dc = Command::new(tool)
                    .arg("-dc")
                    .arg(p)
                    .output()
                    .unwrap_or_else(|e| panic!("`{tool}` runs: {e}"));
                assert!(
                    dc.status.success(),
                    "{tool} -dc {}: {}",
                    p.display(),
                    String::from_utf8_lossy(&dc.stderr)
                );
                ids(&String::from_utf8_lossy(&dc.stdout), &mut counts);
            }
            assert_eq!(counts.len(), 3000, "{compression} stateful={stateful}");
            assert!(counts.values().all(|c| *c == 1));
        }
    }
}

/// A stateful sink SIGKILLed at random moments, 12 times, and resumed from its state dir:
/// after every kill the published files hold only whole records of the input, each at most
/// once; after the last run, each exactly once. In-progress files of the killed rounds are
/// discarded (the replayed input writes them again).
#[test]
fn a_stateful_file_sink_is_exact_through_sigkills() {
    use rand::{Rng, SeedableRng};
    let dir = tempfile::tempdir().expect("tempdir");
    // At least 0.3 ms a record (the chaos delay): the 12 kills, each at most 0.7 s into its
    // run or just after a part's publication, cannot get through 15,000 records.
    let n = 15000;
    let inp = input(dir.path(), n, 3);
    let sink = "stateful: true, args: {path: \"out/{service}/part.jsonl\", rotate: {records: 170}}";
    let file = topology(dir.path(), &inp, sink, Some("300us"));
    let state = dir.path().join("state");
    let out_dir = dir.path().join("out");
    let args = [
        "run".to_string(),
        file.display().to_string(),
        "--state-dir".into(),
        state.display().to_string(),
        "-c".into(),
        "topology.state.checkpoint.interval.ms=100".into(),
        // Markers then flow between the tuples: checkpoints commit all along the run.
        "-c".into(),
        "topology.max.spout.pending=100".into(),
    ];
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let published = |dir: &Path| {
        let mut counts = BTreeMap::new();
        files(dir).values().for_each(|p| ids(&read(p), &mut counts));
        counts
    };
    for trial in 0..12 {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("storm"))
            .args(&args)
            .env_remove("STORM_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("storm runs");
        if trial % 2 == 0 {
            // A random moment of the run (before the first checkpoint, between two, while
            // parts are written or published).
            std::thread::sleep(std::time::Duration::from_millis(rng.random_range(50..700)));
        } else {
            // Just after a part was published (the sink may be renaming the next ones).
            let before = files(&out_dir).len();
            super::support::poll_until(
                "a part to be published",
                std::time::Duration::from_secs(60),
                std::time::Duration::from_millis(2),
                || {
                    let ended = child.try_wait().ok().flatten().is_some();
                    (ended || files(&out_dir).len() > before).then_some(())
                },
            );
        }
        let _ = child.kill();
        let _ = child.wait();
        let counts = published(&out_dir);
        assert!(
            counts.values().all(|c| *c == 1),
            "trial {trial}: a record published twice"
        );
        assert!(counts.keys().all(|id| (0..n as i64).contains(id)));
        eprintln!("trial {trial}: {} records published", counts.len());
        assert!(
            counts.len() < n,
            "trial {trial}: the run ended before its kill"
        );
    }
    ok(&storm(&args.iter().map(String::as_str).collect::<Vec<_>>()));
    let counts = published(&out_dir);
    assert_eq!(counts.len(), n, "every record published");
    assert!(counts.values().all(|c| *c == 1), "no record twice");
    // Each service's records are in its own directory, in input order within each part.
    for (name, p) in files(&out_dir) {
        let text = read(&p);
        let service = name.split('/').next().unwrap_or_default();
        assert!(
            text.lines()
                .all(|l| l.contains(&format!("\"service\":\"{service}\""))),
            "{name}"
        );
    }
    let staging = out_dir.join(".storm-staging");
    let left: Vec<_> = std::fs::read_dir(&staging)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .collect();
    assert!(left.is_empty(), "in-progress files left: {left:?}");
}

/// A path under a regular file, and a read-only file system: the run ends at once with the
/// reason, exit 1.
#[test]
fn an_unwritable_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inp = input(dir.path(), 10, 1);
    std::fs::write(dir.path().join("blocker"), "a file").expect("writes");
    let file = topology(dir.path(), &inp, "args: {path: blocker/out/x.jsonl}", None);
    let out = storm(&["run", &file.display().to_string()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot create")
            && err.contains("blocker/out")
            && err.contains("Not a directory"),
        "{err}"
    );
    let ro = Mount::tmpfs(dir.path(), "ro", "ro,size=64k");
    let sink = format!("args: {{path: \"{}/x.jsonl\"}}", ro.path.display());
    let file = topology(dir.path(), &inp, &sink, None);
    let out = storm(&["run", &file.display().to_string()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Read-only file system"), "{err}");
}

/// A full disk (a 64 KiB tmpfs, 300 KB of records): the run ends with `No space left on
/// device`, exit 1; with state, once the disk has room (remounted larger) the resumed run
/// publishes every record exactly once: nothing was taken as written that was not.
#[test]
fn a_full_disk_is_a_clear_error_and_nothing_is_lost() {
    for stateful in [false, true] {
        let dir = tempfile::tempdir().expect("tempdir");
        let inp = input(dir.path(), 5000, 2);
        let disk = Mount::tmpfs(dir.path(), "disk", "size=64k");
        let sink = format!("stateful: {stateful}, args: {{path: \"{}/{{service}}.jsonl\", rotate: {{records: 400}}}}", disk.path.display());
        let file = topology(dir.path(), &inp, &sink, None);
        let state = dir.path().join("state").display().to_string();
        let mut args = vec!["run", file.to_str().expect("utf-8")];
        if stateful {
            args.extend(["--state-dir", &state]);
        }
        let out = storm(&args);
        assert_eq!(out.status.code(), Some(1), "stateful={stateful}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("No space left on device"), "{err}");
        if stateful {
            disk.remount("size=8m");
            ok(&storm(&args));
            let mut counts = BTreeMap::new();
            files(&disk.path)
                .values()
                .for_each(|p| ids(&read(p), &mut counts));
            assert_eq!(counts.len(), 5000);
            assert!(counts.values().all(|c| *c == 1));
        }
    }
}

/// A tmpfs mounted for a test, unmounted when dropped. (The tests run as root, as CI does.)
struct Mount {
    path: PathBuf,
}

impl Mount {
    fn tmpfs(dir: &Path, name: &str, options: &str) -> Mount {
        let path = dir.join(name);
        std::fs::create_dir_all(&path).expect("mkdir");
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(&path)
            .status()
            .expect("mount runs");
        assert!(
            st.success(),
            "mount -t tmpfs failed (the test needs root, as CI has)"
        );
        Mount { path }
    }

    fn remount(&self, options: &str) {
        let st = Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(&self.path)
            .status()
            .expect("mount runs");
        assert!(st.success(), "remount failed");
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// The sinks in the DSL: a `file` at the end of a pipeline is a sink; `storm validate` locates
/// a bad time pattern, a misspelt argument (with a did-you-mean) and a bad URL.
#[test]
fn the_dsl_runs_the_sink_and_validate_locates_mistakes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inp = input(dir.path(), 300, 3);
    let out_pattern = dir.path().join("out/{service}.jsonl");
    let expr = format!(
        "file(\"{}\", format=json, fields=[id, service, ts]) | file(\"{}\", rotate={{records: 60}}) stateful=true",
        inp.display(),
        out_pattern.display()
    );
    let state = dir.path().join("state").display().to_string();
    ok(&storm(&["run", "-e", &expr, "--state-dir", &state]));
    let out = files(&dir.path().join("out"));
    assert_eq!(out.len(), 6, "{:?}", out.keys());
    assert!(out.contains_key("s2.1.jsonl"), "{:?}", out.keys());
    let bad = storm(&[
        "validate",
        "-e",
        "stdin | file(\"out/%K.log\", compresion=gzip)",
    ]);
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("<-e>:1:14: error: `file` sink: `path` `out/%K.log`: bad time pattern"),
        "{err}"
    );
    assert!(err.contains("did you mean `compression`?"), "{err}");
    let bad = storm(&["validate", "-e", "stdin | http(url=\"http://h:0/in\")"]);
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("`0` is not a port"), "{err}");
}
