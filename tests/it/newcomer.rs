//! What a newcomer hits first: arguments a component does not read, field names that do not
//! exist, a pipeline with no sink, relative paths, the end-of-run summary inside a pipeline,
//! and the help that lists the built-ins.

use crate::run::{parse_counts, storm};
use std::collections::BTreeMap;

/// A misspelt argument is an error with a did-you-mean: the run does not split on spaces
/// while the user asked for commas.
#[test]
fn an_unknown_argument_is_an_error_not_ignored() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["run", "-q", "-e", r#"stdin | split(sep=",") | stdout"#])
        .write_stdin("a,b c\n")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "nothing may run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    insta::assert_snapshot!(stderr);
    // The right name does what it says, split on commas only.
    let out = storm(conf.path())
        .args([
            "run",
            "-q",
            "-e",
            r#"stdin | split(separator=",") | stdout"#,
        ])
        .write_stdin("a,b c\n")
        .output()
        .expect("runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a\nb c\n");
}

/// Argument types are checked for every built-in.
#[test]
fn argument_types_are_checked() {
    let conf = tempfile::tempdir().expect("tempdir");
    for (text, expected) in [
        (
            "stdin | split(separator=5) | stdout",
            "`args.separator` must be a string",
        ),
        (
            "stdin | split | count(word, emit=never) | stdout",
            "must be one of: end, tick, update",
        ),
        (
            "stdin(max_retries=x) | stdout",
            "`args.max_retries` must be a number",
        ),
        (
            "stdin | chaos(fail=2) | stdout",
            "must be a fraction between 0 and 1",
        ),
        ("stdin | log(level=info)", "`log` takes no arguments"),
    ] {
        validate_fails_saying(conf.path(), text, expected);
    }
}

/// `storm validate -e DSL` fails (exit 1) with an error located in the text that says `says`.
pub fn validate_fails_saying(conf: &std::path::Path, dsl: &str, says: &str) {
    let out = storm(conf)
        .args(["validate", "-e", dsl])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{dsl}: {stderr}");
    assert!(stderr.contains(says), "{dsl}: {stderr}");
    assert!(stderr.starts_with("<-e>:1:"), "{dsl}: located: {stderr}");
}

/// Field names are followed through a shell component's declared fields.
#[test]
fn fields_after_a_shell_component_are_checked() {
    let conf = tempfile::tempdir().expect("tempdir");
    let text = "stdin | s = shell(python3, x.py) fields=[level,service] \
                | [fields service] count(servce) | stdout";
    let out = storm(conf.path())
        .args(["validate", "-e", text])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("`s` does not declare field `servce`")
            && stderr.contains("did you mean `service`?"),
        "{stderr}"
    );
    // And through the filter expression and split's field.
    for (text, field) in [
        (
            "stdin | s = shell(python3, x.py) fields=[a] | filter(\"b == 1\") | stdout",
            "b",
        ),
        (
            "stdin | s = shell(python3, x.py) fields=[a] | split(field=c) | stdout",
            "c",
        ),
    ] {
        let out = storm(conf.path())
            .args(["validate", "-e", text])
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text}: {stderr}");
        assert!(stderr.contains(&format!("`{field}`")), "{text}: {stderr}");
    }
}

/// A topology where nothing writes runs, prints nothing and exits 0: validate says so.
#[test]
fn a_pipeline_without_a_sink_is_warned_about() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["validate", "-e", "stdin | split | count(word)"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stderr));
    // A sink of any kind (or discard, chosen silence) takes the warning away.
    for text in [
        "stdin | split | count(word) | stdout",
        "stdin | split | count(word) | log",
        "stdin | split | count(word) | discard",
    ] {
        let out = storm(conf.path())
            .args(["validate", "-e", text])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0));
        assert!(
            out.stderr.is_empty(),
            "{text}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Every relative path in a topology file is relative to the file's folder, whatever the
/// current directory: a `file` spout's path as a shell component's `cwd`.
#[test]
fn relative_paths_are_relative_to_the_topology_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topo_dir = dir.path().join("jobs");
    std::fs::create_dir_all(topo_dir.join("data")).expect("mkdir");
    let text = "b a\nc b b\n";
    std::fs::write(topo_dir.join("data/words.txt"), text).expect("write");
    std::fs::write(
        topo_dir.join("count.yaml"),
        "name: rel\nspouts:\n  - { id: text, type: file, args: { path: data/words.txt } }\n\
         bolts:\n  - { id: split, type: split }\n  - { id: count, type: count, args: { fields: [word] } }\n  - { id: print, type: stdout }\n\
         streams:\n  - { from: text, to: split }\n  - { from: split, to: count, grouping: { type: fields, args: [word] } }\n  - { from: count, to: print }\n",
    )
    .expect("write");
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let out = storm(dir.path())
        .current_dir(elsewhere.path())
        .arg("run")
        .arg(topo_dir.join("count.yaml"))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for w in text.split_whitespace() {
        *expected.entry(w.to_string()).or_default() += 1;
    }
    assert_eq!(parse_counts(&out.stdout), expected);
}

/// Inside a pipeline (stderr not a terminal) a run prints no summary; `--summary` asks for it,
/// without system components unless `--system`.
#[test]
fn the_summary_is_shown_when_asked_and_hides_system_components() {
    let conf = tempfile::tempdir().expect("tempdir");
    let run = |extra: &[&str]| {
        let out = storm(conf.path())
            .args(["run", "-e", "stdin | split | count(word) | stdout"])
            .args(extra)
            .write_stdin("a b a\n")
            .output()
            .expect("runs");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert_eq!(run(&[]), "", "no summary inside a pipeline");
    let summary = run(&["--summary"]);
    // Component rows start at the margin; indented lines (complete latency) belong to the row above.
    let rows: Vec<&str> = summary
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        rows,
        ["component", "count", "split", "stdin", "stdout", "ran"],
        "{summary}"
    );
    let all = run(&["--summary", "--system"]);
    assert!(all.lines().any(|l| l.starts_with("__acker ")), "{all}");
}

/// On a terminal, the progress line does not stay on screen when the reader of stdout goes
/// away (`| head`): the run erases it before it ends.
#[test]
fn the_progress_line_is_erased_when_output_is_closed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = assert_cmd::cargo::cargo_bin("storm");
    let typescript = dir.path().join("typescript");
    // `script` gives storm a terminal as stderr; stdout goes to a reader that leaves.
    let inner = format!(
        "STORM_CONF_DIR={} {} run -e 'generate(rate=200) | stdout' --progress always \
         | (sleep 1.5; head -1 >/dev/null)",
        dir.path().display(),
        bin.display()
    );
    let status = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &inner])
        .arg(&typescript)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("script (util-linux) runs");
    assert!(status.success(), "{status}");
    let screen = std::fs::read(&typescript).expect("typescript written");
    let last_draw = screen
        .windows(b"tuples (".len())
        .rposition(|w| w == b"tuples (")
        .expect("progress was drawn");
    let erase = b"\r\x1b[2K";
    assert!(
        screen[last_draw..].windows(erase.len()).any(|w| w == erase),
        "the last progress line was not erased: {:?}",
        String::from_utf8_lossy(&screen[last_draw..])
    );
}

/// `storm run --help` lists every built-in with one line and points at their documentation;
/// `storm run` alone mentions `-e`.
#[test]
fn run_help_lists_the_built_ins_and_usage_mentions_expr() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["run", "--help"])
        .output()
        .expect("runs");
    let help = String::from_utf8_lossy(&out.stdout);
    for t in storm::model::ComponentType::ALL {
        if !t.is_flux_only() {
            assert!(
                help.contains(&format!("\n  {:<10} ", t.name())),
                "{}: {help}",
                t.name()
            );
        }
    }
    assert!(help.contains("docs/components.md"), "{help}");
    let out = storm(conf.path()).arg("run").output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--expr <TEXT>"));
}

/// docs/components.md documents every argument every built-in reads.
#[test]
fn every_argument_is_documented() {
    let doc = std::fs::read_to_string("docs/components.md").expect("docs/components.md");
    for t in storm::model::ComponentType::ALL {
        assert!(
            doc.contains(&format!("## `{}`", t.name())),
            "{} has no section",
            t.name()
        );
        for arg in storm::topology::validate::argument_names(*t) {
            assert!(
                doc.contains(&format!("`{arg}`")),
                "`{}`'s `{arg}` is not documented",
                t.name()
            );
        }
    }
}

/// Each built-in's section of docs/components.md (its `### \`name\`` sections, and those it
/// defers to with "as for `other`" or a link) documents every argument its descriptor lists.
#[test]
fn each_argument_is_in_its_types_section() {
    let doc = std::fs::read_to_string("docs/components.md").expect("docs/components.md");
    let sections: Vec<(&str, &str)> = doc
        .split("\n### `")
        .skip(1)
        .filter_map(|s| s.split_once('`'))
        .map(|(name, rest)| (name, rest.split("\n## ").next().unwrap_or(rest)))
        .collect();
    let section_of = |name: &str| -> String {
        let own: String = sections
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, text)| *text)
            .collect();
        let deferred = sections
            .iter()
            .filter(|(n, _)| {
                own.contains(&format!("as for `{n}`")) || own.contains(&format!("[`{n}`]"))
            })
            .map(|(_, text)| *text);
        deferred.fold(own.clone(), |all, text| all + text)
    };
    for t in storm::model::ComponentType::ALL {
        let text = section_of(t.name());
        for arg in t.argument_names() {
            assert!(
                text.contains(&format!("`{arg}`")),
                "`{}`'s `{arg}` is not in its section of docs/components.md",
                t.name()
            );
        }
    }
}
