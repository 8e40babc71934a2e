//! `topology.metrics.reporters` read as Storm 2.x writes it: a list of maps, each naming a
//! reporter `class` (Storm's class name or a short name) with its options; the runtime's
//! reporters (src/runtime/reporters) send what these describe.

use regex::Regex;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Duration;

/// The configuration key.
pub(crate) const KEY: &str = "topology.metrics.reporters";

/// Where one reporter sends its figures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    /// Graphite's plaintext protocol over TCP.
    Graphite {
        host: String,
        port: u16,
        prefix: Option<String>,
    },
    /// One CSV file per metric in a directory.
    Csv { dir: PathBuf },
    /// Text blocks on stderr.
    Console,
}

/// One configured reporter.
#[derive(Debug, Clone)]
pub(crate) struct ReporterConf {
    pub(crate) target: Target,
    pub(crate) period: Duration,
    /// Only metrics whose full name matches are reported (Storm's `RegexFilter`).
    pub(crate) filter: Option<Regex>,
}

/// Storm's default reporting period: 10 seconds.
const DEFAULT_PERIOD_SECS: u64 = 10;

/// Every reporter the value lists, or a located error naming the entry and the option.
/// `local_dir` is `storm.local.dir`, where CSV files go when `csv.log.dir` is not given.
pub(crate) fn parse(
    value: Option<&Value>,
    local_dir: Option<&str>,
) -> anyhow::Result<Vec<ReporterConf>> {
    let list = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(other) => anyhow::bail!("{KEY}: expected a list of {{class: …}} maps, got {other}"),
    };
    list.iter()
        .enumerate()
        .map(|(i, entry)| {
            let map = entry.as_object().ok_or_else(|| {
                anyhow::anyhow!("{KEY}[{i}]: expected a map with `class`, got {entry}")
            })?;
            one(map, local_dir).map_err(|e| anyhow::anyhow!("{KEY}[{i}]: {e}"))
        })
        .collect()
}

/// One reporter's map.
fn one(map: &Map<String, Value>, local_dir: Option<&str>) -> anyhow::Result<ReporterConf> {
    let class = text(map, "class")?.ok_or_else(|| anyhow::anyhow!("`class` is missing"))?;
    let target = match class.as_str() {
        "graphite" | "org.apache.storm.metrics2.reporters.GraphiteStormReporter" => graphite(map)?,
        "csv" | "org.apache.storm.metrics2.reporters.CsvStormReporter" => {
            let dir = match (text(map, "csv.log.dir")?, local_dir) {
                (Some(d), _) => PathBuf::from(d),
                (None, Some(l)) => PathBuf::from(l).join("csvmetrics"),
                (None, None) => {
                    anyhow::bail!("`csv.log.dir` is missing (and storm.local.dir is unset)")
                }
            };
            Target::Csv { dir }
        }
        "console" | "org.apache.storm.metrics2.reporters.ConsoleStormReporter" => Target::Console,
        other => anyhow::bail!(
            "unknown reporter class {other:?} (known: graphite, csv, console, or Storm's \
             org.apache.storm.metrics2.reporters.{{Graphite,Csv,Console}}StormReporter)"
        ),
    };
    Ok(ReporterConf {
        target,
        period: period(map)?,
        filter: filter(map)?,
    })
}

/// Graphite's options: `graphite.host` (required), `graphite.port` (default 2003),
/// `graphite.prefixed.with`, and `graphite.transport` which must be `tcp` when given.
fn graphite(map: &Map<String, Value>) -> anyhow::Result<Target> {
    let host =
        text(map, "graphite.host")?.ok_or_else(|| anyhow::anyhow!("`graphite.host` is missing"))?;
    let port = match map.get("graphite.port") {
        None | Some(Value::Null) => 2003,
        Some(v) => number(v)
            .and_then(|n| u16::try_from(n).ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| anyhow::anyhow!("`graphite.port`: expected a port 1–65535, got {v}"))?,
    };
    if let Some(t) = text(map, "graphite.transport")? {
        if !t.eq_ignore_ascii_case("tcp") {
            anyhow::bail!("`graphite.transport`: only \"tcp\" is supported here, got {t:?}");
        }
    }
    let prefix = text(map, "graphite.prefixed.with")?;
    Ok(Target::Graphite { host, port, prefix })
}

/// `report.period` (default 10) in `report.period.units` (Java's `TimeUnit` names, default
/// `SECONDS`).
fn period(map: &Map<String, Value>) -> anyhow::Result<Duration> {
    let n = match map.get("report.period") {
        None | Some(Value::Null) => DEFAULT_PERIOD_SECS,
        Some(v) => number(v).filter(|n| *n > 0).ok_or_else(|| {
            anyhow::anyhow!("`report.period`: expected a positive integer, got {v}")
        })?,
    };
    let units = text(map, "report.period.units")?.unwrap_or_else(|| "SECONDS".into());
    let period = match units.to_ascii_uppercase().as_str() {
        "MILLISECONDS" => Duration::from_millis(n),
        "SECONDS" => Duration::from_secs(n),
        "MINUTES" => Duration::from_secs(n.saturating_mul(60)),
        "HOURS" => Duration::from_secs(n.saturating_mul(3600)),
        "DAYS" => Duration::from_secs(n.saturating_mul(86400)),
        _ => anyhow::bail!(
            "`report.period.units`: expected MILLISECONDS, SECONDS, MINUTES, HOURS or DAYS, got {units:?}"
        ),
    };
    if period < Duration::from_millis(100) {
        anyhow::bail!("`report.period`: at least 100 ms, got {period:?}");
    }
    Ok(period)
}

/// `filter: {class: org.apache.storm.metrics2.filters.RegexFilter, expression: RE}` (the class
/// may be left out or be `regex`).
fn filter(map: &Map<String, Value>) -> anyhow::Result<Option<Regex>> {
    let f = match map.get("filter") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(f)) => f,
        Some(v) => anyhow::bail!("`filter`: expected a map {{class, expression}}, got {v}"),
    };
    match text(f, "class")?.as_deref() {
        None | Some("regex") | Some("org.apache.storm.metrics2.filters.RegexFilter") => {}
        Some(other) => {
            anyhow::bail!("`filter.class`: only RegexFilter is supported, got {other:?}")
        }
    }
    let expr =
        text(f, "expression")?.ok_or_else(|| anyhow::anyhow!("`filter.expression` is missing"))?;
    let re = Regex::new(&expr).map_err(|e| anyhow::anyhow!("`filter.expression`: {e}"))?;
    Ok(Some(re))
}

/// An optional string option.
fn text(map: &Map<String, Value>, key: &str) -> anyhow::Result<Option<String>> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => anyhow::bail!("`{key}`: expected a string, got {v}"),
    }
}

/// A non-negative integer, written as a number or as text (Storm's YAML often quotes them).
fn number(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn storm_class_names_and_short_names() {
        let v = json!([
            {"class": "org.apache.storm.metrics2.reporters.GraphiteStormReporter",
             "graphite.host": "h", "graphite.port": "2103", "graphite.prefixed.with": "p",
             "report.period": 5, "report.period.units": "SECONDS"},
            {"class": "csv", "csv.log.dir": "/tmp/x"},
            {"class": "console", "report.period": 500, "report.period.units": "MILLISECONDS",
             "filter": {"class": "org.apache.storm.metrics2.filters.RegexFilter", "expression": "ack"}},
        ]);
        let r = parse(Some(&v), None).unwrap();
        assert_eq!(
            r[0].target,
            Target::Graphite {
                host: "h".into(),
                port: 2103,
                prefix: Some("p".into())
            }
        );
        assert_eq!(r[0].period, Duration::from_secs(5));
        assert_eq!(
            r[1].target,
            Target::Csv {
                dir: "/tmp/x".into()
            }
        );
        assert_eq!(r[1].period, Duration::from_secs(10));
        assert_eq!(r[2].period, Duration::from_millis(500));
        assert!(r[2].filter.as_ref().unwrap().is_match("x.__ack-count"));
    }

    #[test]
    fn errors_name_the_entry_and_option() {
        let bad = |v: Value| parse(Some(&v), None).unwrap_err().to_string();
        assert!(bad(json!([{"class": "jmx"}]))
            .starts_with("topology.metrics.reporters[0]: unknown reporter class"));
        assert!(bad(json!([{"class": "console"}, {"class": "graphite"}]))
            .contains("[1]: `graphite.host` is missing"));
        assert!(
            bad(json!([{"class": "graphite", "graphite.host": "h", "graphite.port": 0}]))
                .contains("`graphite.port`")
        );
        assert!(
            bad(json!([{"class": "console", "report.period.units": "WEEKS"}]))
                .contains("`report.period.units`")
        );
        assert!(bad(json!([{"class": "csv"}])).contains("`csv.log.dir` is missing"));
        assert!(bad(json!({"class": "csv"})).contains("expected a list"));
        assert!(
            bad(json!([{"class": "console", "filter": {"expression": "("}}]))
                .contains("`filter.expression`")
        );
    }

    #[test]
    fn csv_defaults_under_the_local_dir() {
        let r = parse(Some(&json!([{"class": "csv"}])), Some("/var/storm")).unwrap();
        assert_eq!(
            r[0].target,
            Target::Csv {
                dir: "/var/storm/csvmetrics".into()
            }
        );
    }
}
