//! The command line: help text, exit codes, graph output, and completion scripts kept in step
//! with `completions/`.

use crate::validate::storm;

#[test]
fn help_is_stable() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path()).arg("--help").output().expect("runs");
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!("help", String::from_utf8_lossy(&out.stdout));
    let out = storm(conf.path())
        .args(["validate", "--help"])
        .output()
        .expect("runs");
    insta::assert_snapshot!("validate_help", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn usage_errors_exit_2() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path()).arg("validate").output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let out = storm(conf.path())
        .args(["graph", "x.yaml", "--format", "png"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn graph_as_dot_and_mermaid() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["graph", "topologies/wordcount.yaml"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!("graph_dot", String::from_utf8_lossy(&out.stdout));
    let out = storm(conf.path())
        .args([
            "graph",
            "topologies/flux-wordcount.yaml",
            "--format",
            "mermaid",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!("graph_mermaid", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn graph_of_an_invalid_topology_fails_with_diagnostics() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["graph", "tests/fixtures/invalid/unknown-type.yaml"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("error: unknown component type `splitter`")
    );
}

/// The scripts in `completions/` must equal what `storm completions` prints. After changing
/// the CLI, regenerate them with `STORM_UPDATE_COMPLETIONS=1 cargo test completions`.
#[test]
fn completion_scripts_in_the_repository_are_up_to_date() {
    use clap_complete::Shell;
    let update = std::env::var_os("STORM_UPDATE_COMPLETIONS").is_some();
    for (shell, file) in [
        (Shell::Bash, "storm.bash"),
        (Shell::Zsh, "_storm"),
        (Shell::Fish, "storm.fish"),
        (Shell::Elvish, "storm.elv"),
        (Shell::PowerShell, "_storm.ps1"),
    ] {
        let generated = storm::commands::completions::script(shell);
        let path = std::path::Path::new("completions").join(file);
        if update {
            std::fs::write(&path, &generated).expect("write completions");
            continue;
        }
        let kept = std::fs::read(&path).unwrap_or_default();
        assert!(
            kept == generated,
            "{} is out of date: run `STORM_UPDATE_COMPLETIONS=1 cargo test completions`",
            path.display()
        );
    }
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["completions", "fish"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        out.stdout,
        storm::commands::completions::script(Shell::Fish)
    );
}

#[test]
fn inline_topologies_are_located_in_the_text() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["validate", "-e", "stdin | nosuchthing | stdout"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("<-e>:1:"), "{stderr}");
    assert!(stderr.contains(": error: "), "{stderr}");
}

#[test]
fn config_of_a_flux_file_uses_the_filter_properties() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args([
            "config",
            "tests/fixtures/valid/flux-includes.yaml",
            "--filter",
            "tests/fixtures/valid/flux.properties",
        ])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("topology.debug "))
        .unwrap_or("");
    // Read from the included file, located at the include entry of the including file.
    assert!(line.contains("= true"), "{line}");
    assert!(
        line.ends_with("(tests/fixtures/valid/flux-includes.yaml:4)"),
        "{line}"
    );
}
