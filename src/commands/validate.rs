//! `storm validate FILE... | -e TEXT`: parse and check, never run. `ok: FILE (...)` lines on
//! stdout; diagnostics (warnings too) on stderr, as text or a JSON array.

use super::Status;
use crate::cli::{DiagFormat, ValidateArgs};
use crate::syntax::diag::{json_all, render_all, Diagnostic, Severity, Source};
use crate::topology::{load_file, load_inline, LoadError, LoadOptions, Loaded};
use std::io::Write;

pub(crate) fn run(args: ValidateArgs) -> anyhow::Result<Status> {
    let opts = LoadOptions {
        overrides: args.config.overrides.clone(),
        filter: args.filter.clone(),
    };
    let results: Vec<Result<Loaded, LoadError>> = match &args.expr {
        Some(text) => vec![load_inline(text, &opts)],
        None => args.files.iter().map(|f| load_file(f, &opts)).collect(),
    };
    let mut status = Status::Success;
    let mut json = Vec::new();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for result in results {
        let (source, diagnostics) = match result {
            Ok(loaded) => {
                let t = &loaded.topology;
                let (executors, tasks) = t.executor_and_task_counts();
                writeln!(
                    out,
                    "ok: {} ({} spouts, {} bolts, {executors} executors, {tasks} tasks)",
                    loaded.source.name,
                    t.spouts().count(),
                    t.bolts().count()
                )?;
                (loaded.source, loaded.warnings)
            }
            Err(LoadError::Unreadable(reason)) => {
                status = Status::Failure;
                match args.format {
                    DiagFormat::Text => crate::stderr_println!("error: {reason}"),
                    DiagFormat::Json => json.push(unreadable_json(&reason)),
                }
                continue;
            }
            Err(LoadError::Invalid {
                source,
                diagnostics,
            }) => {
                status = Status::Failure;
                (source, diagnostics)
            }
        };
        report(&source, &diagnostics, args.format, &mut json);
    }
    if args.format == DiagFormat::Json {
        let text = serde_json::to_string_pretty(&serde_json::Value::Array(json))?;
        crate::stderr_println!("{text}");
    }
    out.flush()?;
    Ok(status)
}

fn report(
    source: &Source,
    diagnostics: &[Diagnostic],
    format: DiagFormat,
    json: &mut Vec<serde_json::Value>,
) {
    match format {
        DiagFormat::Text => crate::stderr_print!("{}", render_all(diagnostics, source)),
        DiagFormat::Json => json.extend(json_all(diagnostics, source)),
    }
}

fn unreadable_json(reason: &str) -> serde_json::Value {
    let (file, message) = reason.split_once(": ").unwrap_or(("", reason));
    serde_json::json!({
        "file": file,
        "line": null,
        "column": null,
        "severity": Severity::Error,
        "message": message,
        "help": null,
    })
}
