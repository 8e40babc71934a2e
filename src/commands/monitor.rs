//! `storm monitor NAME -m COMPONENT [-s STREAM] [-i SECS] [-w emitted|transferred]` (Storm's
//! throughput poll): every interval, one line with how many tuples the component emitted and
//! transferred on the stream since the line before, and the throughput of the watched count,
//! read from the per-stream counters of a UI's component page (`outputStats`): a local run's
//! (`--ui`) or nimbus's (`ui.port` on nimbus's host: `--nimbus` or `nimbus.seeds`).

use super::Status;
use crate::cli::{MonitorArgs, Watch};
use crate::ui::client;
use serde_json::Value;
use std::io::Write;
use std::time::{Duration, Instant};

/// The component's figures on the stream at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    at: Instant,
    emitted: u64,
    transferred: u64,
}

/// Storm's header line (tab-separated, as its `monitor` prints it).
fn header() -> String {
    "topology\tcomponent\tparallelism\tstream\ttime-diff ms\temitted\ttransferred\t\
     throughput (Avg. Tuple/s)"
        .to_string()
}

/// One line: the counts since `before` and the watched one's rate. A count that went back (a
/// restarted worker counts from zero) counts from zero.
fn line(what: (&str, &str, u64, &str), before: &Sample, now: &Sample, watch: Watch) -> String {
    let (topology, component, parallelism, stream) = what;
    let diff = |a: u64, b: u64| if a >= b { a - b } else { a };
    let emitted = diff(now.emitted, before.emitted);
    let transferred = diff(now.transferred, before.transferred);
    let ms = now.at.saturating_duration_since(before.at).as_millis();
    let watched = match watch {
        Watch::Emitted => emitted,
        Watch::Transferred => transferred,
    };
    let rate = if ms == 0 {
        0.0
    } else {
        watched as f64 * 1000.0 / ms as f64
    };
    format!(
        "{topology}\t{component}\t{parallelism}\t{stream}\t{ms}\t{emitted}\t{transferred}\t{rate:.1}"
    )
}

/// The UI to read: `--ui`, else nimbus's (`ui.port` on the host of `--nimbus` or the first
/// of `nimbus.seeds`).
fn ui_address(a: &MonitorArgs) -> Result<String, Status> {
    if let Some(ui) = &a.target.ui {
        return Ok(ui.clone());
    }
    let config =
        crate::config::layers::cluster_config(&a.target.config.overrides).map_err(|errors| {
            for e in errors {
                crate::stderr_println!("error: {e}");
            }
            Status::Failure
        })?;
    let addrs = super::cluster::nimbus_addrs(a.target.nimbus.as_deref(), &config)?;
    let first = addrs.split(',').next().unwrap_or_default().trim();
    let host = first.rsplit_once(':').map_or(first, |(h, _)| h);
    let port = config
        .get_u64("ui.port")
        .unwrap_or(u64::from(crate::ui::DEFAULT_PORT));
    Ok(format!("{host}:{port}"))
}

/// The component page's figures on `stream`; an unknown stream is an error naming those the
/// component has.
fn sample(ui: &str, path: &str, stream: &str) -> anyhow::Result<(Value, Sample)> {
    let page = client::get_json(ui, path)?;
    let at = Instant::now();
    let empty = Vec::new();
    let rows = page["outputStats"].as_array().unwrap_or(&empty);
    let Some(row) = rows.iter().find(|r| r["stream"] == stream) else {
        let names: Vec<&str> = rows.iter().filter_map(|r| r["stream"].as_str()).collect();
        let hint = crate::syntax::suggest::suggest(stream, names.iter().copied())
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        let known = match names.is_empty() {
            true => "it emits on none".to_string(),
            false => format!("its streams: {}", names.join(", ")),
        };
        anyhow::bail!(
            "component `{}` has no output stream `{stream}` ({known}){hint}",
            page["id"].as_str().unwrap_or("?")
        );
    };
    let count = |k: &str| row[k].as_u64().unwrap_or(0);
    let s = Sample {
        at,
        emitted: count("emitted"),
        transferred: count("transferred"),
    };
    Ok((page, s))
}

pub(crate) fn run(a: MonitorArgs) -> anyhow::Result<Status> {
    let ui = match ui_address(&a) {
        Ok(u) => u,
        Err(s) => return Ok(s),
    };
    let path = format!(
        "/api/v1/topology/{}/component/{}",
        super::ui::encode(&a.name),
        super::ui::encode(&a.component)
    );
    let (page, mut before) = sample(&ui, &path, &a.stream)?;
    let name = page["name"].as_str().unwrap_or(&a.name).to_string();
    let parallelism = page["executors"].as_u64().unwrap_or(0);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", header())?;
    out.flush()?;
    let mut lines = 0;
    while a.count.is_none_or(|n| lines < n) {
        std::thread::sleep(Duration::from_secs(a.interval));
        let (_, now) = sample(&ui, &path, &a.stream)?;
        let what = (
            name.as_str(),
            a.component.as_str(),
            parallelism,
            a.stream.as_str(),
        );
        writeln!(out, "{}", line(what, &before, &now, a.watch))?;
        out.flush()?;
        before = now;
        lines += 1;
    }
    Ok(Status::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_storms_monitor_prints_them() {
        let t0 = Instant::now();
        let s = |ms: u64, emitted: u64, transferred: u64| Sample {
            at: t0 + Duration::from_millis(ms),
            emitted,
            transferred,
        };
        let what = ("wordcount", "split", 4, "default");
        let mut text = header() + "\n";
        text += &(line(what, &s(0, 100, 200), &s(4000, 2100, 4200), Watch::Emitted) + "\n");
        text += &(line(
            what,
            &s(4000, 2100, 4200),
            &s(8002, 2100, 4200),
            Watch::Emitted,
        ) + "\n");
        // A restarted worker's counters start over: counted from zero.
        text += &line(
            what,
            &s(8002, 2100, 4200),
            &s(12002, 50, 100),
            Watch::Transferred,
        );
        insta::assert_snapshot!(text, @r"
        topology	component	parallelism	stream	time-diff ms	emitted	transferred	throughput (Avg. Tuple/s)
        wordcount	split	4	default	4000	2000	4000	500.0
        wordcount	split	4	default	4002	0	0	0.0
        wordcount	split	4	default	4000	50	100	25.0
        ");
    }
}
