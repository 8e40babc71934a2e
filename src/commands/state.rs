//! `storm state ls|dump|clear DIR`: what a state dir keeps, as a resume would restore it
//! (read by `crate::state::dir`), and removing one.

use super::Status;
use crate::cli::{StateClearArgs, StateDirArgs, StateDumpArgs, TreeFormat};
use crate::state::dir::{self, Contents};
use crate::tuple::Value;
use anyhow::Context;
use std::io::{BufRead, IsTerminal, Write};

pub(crate) fn ls(args: StateDirArgs) -> anyhow::Result<Status> {
    let contents = dir::read(&args.dir)?;
    write_out(&render_ls(&args.dir, &contents))
}

pub(crate) fn dump(args: StateDumpArgs) -> anyhow::Result<Status> {
    let contents = dir::read(&args.dir)?;
    let text = match args.format {
        TreeFormat::Text => render_dump_text(&contents),
        TreeFormat::Json => render_dump_json(&contents),
    };
    write_out(&text)
}

pub(crate) fn clear(args: StateClearArgs) -> anyhow::Result<Status> {
    dir::check(&args.dir).context("not removing it")?;
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            crate::stderr_println!(
                "error: not removing {} without --yes (standard input is not a terminal to ask on)",
                args.dir.display()
            );
            return Ok(Status::Usage);
        }
        if !confirm(&args.dir)? {
            crate::stderr_println!("{} kept", args.dir.display());
            return Ok(Status::Success);
        }
    }
    dir::clear(&args.dir)?;
    crate::stderr_println!("removed {}", args.dir.display());
    Ok(Status::Success)
}

/// Ask on the terminal whether to remove `dir`; only `y` or `yes` says so.
fn confirm(dir: &std::path::Path) -> anyhow::Result<bool> {
    crate::stderr_print!(
        "remove the state dir {} and every checkpoint in it? [y/N] ",
        dir.display()
    );
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .context("reading the answer")?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

fn write_out(text: &str) -> anyhow::Result<Status> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing to standard output")?;
    Ok(Status::Success)
}

/// `ls`: the topology, the last commit, the files, then one line per task.
fn render_ls(path: &std::path::Path, c: &Contents) -> String {
    let mut out = format!("state dir   {}\n", path.display());
    match &c.shape {
        Some((name, components)) => {
            let parts: Vec<String> = components
                .iter()
                .map(|(c, n)| format!("{c} x{n}"))
                .collect();
            out += &format!("topology    {name} ({})\n", parts.join(", "));
        }
        None => out += "topology    (not recorded)\n",
    }
    match &c.committed {
        Some(k) => out += &format!("committed   checkpoint {} at {}\n", k.txid, time(k.at_ms)),
        None => out += "committed   nothing yet\n",
    }
    out += "files\n";
    let width = c.files.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (name, size) in &c.files {
        out += &format!("  {name:<width$}  {}\n", human_size(*size));
    }
    out += "tasks\n";
    let rows: Vec<(String, String)> = c
        .workers
        .iter()
        .flat_map(|w| w.tasks.iter().map(move |t| (w, t)))
        .map(|(w, t)| {
            let position = if t.position.is_some() {
                ", position"
            } else {
                ""
            };
            let n = t.entries.len();
            let what = format!("{n} entr{}{position}", if n == 1 { "y" } else { "ies" });
            (
                t.task.to_string(),
                format!("{what}  (worker-{})", w.file.worker),
            )
        })
        .collect();
    if rows.is_empty() {
        out += "  (none committed)\n";
    }
    let width = rows.iter().map(|(t, _)| t.len()).max().unwrap_or(0);
    for (task, what) in rows {
        out += &format!("  {task:<width$}  {what}\n");
    }
    out
}

/// `dump` as text: `task  key  value`, keys and values as JSON; then each position.
fn render_dump_text(c: &Contents) -> String {
    let mut out = String::new();
    for t in c.workers.iter().flat_map(|w| &w.tasks) {
        for (k, v) in &t.entries {
            out += &format!("{}  {}  {}\n", t.task, json(k), json(v));
        }
        if let Some(p) = &t.position {
            out += &format!("{}  position  {}\n", t.task, json(p));
        }
    }
    out
}

/// `dump --format json`: one object a line, an entry or a position.
fn render_dump_json(c: &Contents) -> String {
    let mut out = String::new();
    for t in c.workers.iter().flat_map(|w| &w.tasks) {
        let head = |kind: &str| {
            let mut o = serde_json::Map::new();
            o.insert("task".into(), t.task.to_string().into());
            o.insert("component".into(), t.task.component.clone().into());
            o.insert("index".into(), t.task.index.into());
            o.insert("kind".into(), kind.into());
            o
        };
        for (k, v) in &t.entries {
            let mut o = head("entry");
            o.insert("key".into(), k.to_json());
            o.insert("value".into(), v.to_json());
            out += &format!("{}\n", serde_json::Value::Object(o));
        }
        if let Some(p) = &t.position {
            let mut o = head("position");
            o.insert("position".into(), p.to_json());
            out += &format!("{}\n", serde_json::Value::Object(o));
        }
    }
    out
}

fn json(v: &Value) -> String {
    v.to_json().to_string()
}

/// Milliseconds since the epoch as an RFC 3339 UTC time.
fn time(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map_or_else(|| format!("{ms} ms after the epoch"), |t| t.to_string())
}

fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(3 << 20), "3.0 MiB");
    }

    #[test]
    fn times_are_utc() {
        assert_eq!(time(0), "1970-01-01T00:00:00Z");
        assert_eq!(time(1_500), "1970-01-01T00:00:01.5Z");
    }
}
