//! `storm zk dump`: the coordination tree of a simulated cluster (`docs/coordination.md`).

use assert_cmd::Command;

const FIXED: &str = "1764441600";

fn storm() -> Command {
    let mut cmd = Command::cargo_bin("storm").unwrap();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

fn dump(extra: &[&str]) -> String {
    let out = storm()
        .args([
            "zk",
            "dump",
            "topologies/wordcount.yaml",
            "--fixed-time",
            FIXED,
        ])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "storm zk dump failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn zk_dump_on_the_default_localhost_supervisor() {
    insta::assert_snapshot!(dump(&[]));
}

#[test]
fn zk_dump_on_two_hosts() {
    insta::assert_snapshot!(dump(&[
        "--slots",
        "host1:6700,host2:6700",
        "-c",
        "topology.workers=2"
    ]));
}

#[test]
fn zk_dump_as_json() {
    let text = dump(&["--format", "json", "--slots", "host1:6700,host2:6700"]);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["path"], "/storm");
    insta::assert_snapshot!(text);
}

#[test]
fn zk_dump_is_reproducible_with_a_fixed_time() {
    assert_eq!(dump(&[]), dump(&[]));
}

#[test]
fn zk_dump_honours_the_zookeeper_root() {
    let text = dump(&["-c", "storm.zookeeper.root=/apps/storm"]);
    assert!(text.lines().all(|l| l.starts_with("/apps/storm")), "{text}");
}

#[test]
fn zk_dump_rejects_a_malformed_slot_as_a_usage_error() {
    storm()
        .args([
            "zk",
            "dump",
            "topologies/wordcount.yaml",
            "--slots",
            "host1",
        ])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicates::str::contains(
            "--slots: `host1` is not HOST:PORT",
        ));
}

#[test]
fn zk_dump_of_an_unreachable_live_cluster_fails_clearly() {
    // Port 1 on loopback: nothing listens there.
    storm()
        .args(["zk", "dump", "--nimbus", "127.0.0.1:1"])
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicates::str::contains(
            "cannot reach nimbus at 127.0.0.1:1",
        ));
}
