//! A topology's log levels set by name (Storm's `LogConfig`, what `storm set_log_level` and
//! `POST /topology/:id/logconfig` change): logger to target level, with an optional timeout
//! after which the logger is back at the level its process started with. Pure data and
//! rules; nimbus keeps it under `/logconfigs/ID`, workers and local runs install it in their
//! log filter (`logging`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Storm's (log4j's) level names, as written back.
const LEVELS: [&str; 8] = [
    "ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF",
];

/// The levels set for one topology (Storm's `namedLoggerLevels`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct LogConfig {
    #[serde(rename = "namedLoggerLevels", default)]
    named: BTreeMap<String, LoggerLevel>,
}

/// One logger's setting, with Storm's REST field names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct LoggerLevel {
    target_level: String,
    /// What the logger returns to: `None` (null) is the level its process started with
    /// (`STORM_LOG`, `warn` by default), the only level this storm returns to.
    #[serde(default)]
    reset_level: Option<String>,
    /// Seconds the level holds (0: until changed).
    #[serde(default)]
    timeout: u64,
    /// When it stops holding, in Unix milliseconds (0: never), as Storm's nimbus sets it.
    #[serde(default)]
    timeout_epoch: u64,
}

/// One change asked for: set a logger's level for a while, or reset it (Storm's `-r`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Change {
    Set {
        logger: String,
        level: String,
        timeout: u64,
    },
    Reset {
        logger: String,
    },
}

impl Change {
    pub(crate) fn logger(&self) -> &str {
        match self {
            Change::Set { logger, .. } | Change::Reset { logger } => logger,
        }
    }
}

/// A Storm level name in upper case, or why it is not one.
pub(crate) fn level(text: &str) -> Result<String, String> {
    let up = text.trim().to_ascii_uppercase();
    if LEVELS.contains(&up.as_str()) {
        Ok(up)
    } else {
        Err(format!(
            "level `{text}` is not one of {}",
            LEVELS.join(", ")
        ))
    }
}

/// A logger name this storm can filter on: `ROOT` (everything) or a Rust module path
/// (`storm`, `storm::runtime::executor`).
pub(crate) fn logger(name: &str) -> Result<String, String> {
    if name.eq_ignore_ascii_case("ROOT") {
        return Ok("ROOT".into());
    }
    let path = !name.is_empty()
        && name.split("::").all(|part| {
            !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    if path {
        Ok(name.to_string())
    } else {
        Err(format!(
            "logger `{name}`: a logger is a module path like `storm::runtime`, or ROOT \
             (Java logger names such as `org.apache.storm` name nothing here)"
        ))
    }
}

/// `storm set_log_level -l LOGGER=LEVEL[:TIMEOUT]` (Storm's syntax; TIMEOUT in seconds).
pub(crate) fn parse_setting(text: &str) -> Result<Change, String> {
    let (name, rest) = text.split_once('=').ok_or_else(|| {
        format!("expected LOGGER=LEVEL[:TIMEOUT], e.g. `storm=DEBUG:30`, not `{text}`")
    })?;
    let (lvl, timeout) = match rest.split_once(':') {
        Some((l, t)) => {
            let secs = t
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("timeout `{t}` is not a number of seconds"))?;
            (l, secs)
        }
        None => (rest, 0),
    };
    Ok(Change::Set {
        logger: logger(name.trim())?,
        level: level(lvl)?,
        timeout,
    })
}

/// `storm set_log_level -r LOGGER`.
pub(crate) fn parse_reset(text: &str) -> Result<Change, String> {
    Ok(Change::Reset {
        logger: logger(text.trim())?,
    })
}

/// The changes of Storm's REST body `{"namedLoggerLevels": {LOGGER: {"target_level": LEVEL,
/// "timeout": SECS}}}`; a logger without a target level is reset (Storm's REMOVE).
pub(crate) fn changes_of_body(body: &Value) -> Result<Vec<Change>, String> {
    let named = body
        .get("namedLoggerLevels")
        .and_then(Value::as_object)
        .ok_or("the body must hold `namedLoggerLevels`: an object of logger names")?;
    let mut out = Vec::new();
    for (name, setting) in named {
        let name = logger(name)?;
        let target = setting
            .get("target_level")
            .and_then(Value::as_str)
            .unwrap_or("");
        if target.is_empty() {
            out.push(Change::Reset { logger: name });
            continue;
        }
        let lvl = level(target).map_err(|e| format!("`{name}`: target_level: {e}"))?;
        let timeout = match setting.get("timeout") {
            None | Some(Value::Null) => 0,
            Some(t) => t
                .as_u64()
                .or_else(|| t.as_str().and_then(|s| s.trim().parse().ok()))
                .ok_or_else(|| format!("`{name}`: timeout `{t}` is not a number of seconds"))?,
        };
        out.push(Change::Set {
            logger: name,
            level: lvl,
            timeout,
        });
    }
    Ok(out)
}

impl LogConfig {
    pub(crate) fn is_empty(&self) -> bool {
        self.named.is_empty()
    }

    /// Carry out `changes` at `now_ms` (Unix milliseconds): a set level's timeout starts now.
    pub(crate) fn apply(&mut self, changes: &[Change], now_ms: u64) {
        for c in changes {
            match c {
                Change::Set {
                    logger,
                    level,
                    timeout,
                } => {
                    let epoch = match *timeout {
                        0 => 0,
                        t => now_ms.saturating_add(t.saturating_mul(1000)),
                    };
                    self.named.insert(
                        logger.clone(),
                        LoggerLevel {
                            target_level: level.clone(),
                            reset_level: None,
                            timeout: *timeout,
                            timeout_epoch: epoch,
                        },
                    );
                }
                Change::Reset { logger } => {
                    self.named.remove(logger);
                }
            }
        }
    }

    /// The settings still holding at `now_ms` (a timed-out one is no longer in effect).
    pub(crate) fn live(&self, now_ms: u64) -> LogConfig {
        LogConfig {
            named: self
                .named
                .iter()
                .filter(|(_, l)| l.timeout_epoch == 0 || l.timeout_epoch > now_ms)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }

    /// What a log filter installs at `now_ms`: logger, level and the whole seconds left
    /// (rounded up; 0: no timeout), the timed-out ones left out.
    pub(crate) fn directives(&self, now_ms: u64) -> Vec<(String, String, u64)> {
        self.live(now_ms)
            .named
            .into_iter()
            .map(|(name, l)| {
                let left = match l.timeout_epoch {
                    0 => 0,
                    e => (e - now_ms).div_ceil(1000).max(1),
                };
                (name, l.target_level, left)
            })
            .collect()
    }

    /// One line describing the settings, for logs: `storm=DEBUG (10s), ROOT=INFO`.
    pub(crate) fn describe(&self, now_ms: u64) -> String {
        let d = self.directives(now_ms);
        if d.is_empty() {
            return "none (every logger at its starting level)".into();
        }
        d.iter()
            .map(|(n, l, s)| match s {
                0 => format!("{n}={l}"),
                s => format!("{n}={l} ({s}s)"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The time now in Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_as_storms_cli_writes_them() {
        assert_eq!(
            parse_setting("storm::runtime=debug:30"),
            Ok(Change::Set {
                logger: "storm::runtime".into(),
                level: "DEBUG".into(),
                timeout: 30
            })
        );
        assert_eq!(
            parse_setting("root=INFO"),
            Ok(Change::Set {
                logger: "ROOT".into(),
                level: "INFO".into(),
                timeout: 0
            })
        );
        assert!(parse_setting("storm=LOUD").is_err());
        assert!(parse_setting("storm=DEBUG:soon").is_err());
        assert!(parse_setting("org.apache.storm=DEBUG")
            .unwrap_err()
            .contains("module path"));
        assert!(parse_setting("storm").is_err());
        assert_eq!(
            parse_reset("ROOT"),
            Ok(Change::Reset {
                logger: "ROOT".into()
            })
        );
    }

    #[test]
    fn timeouts_start_when_set_and_end_the_setting() {
        let mut c = LogConfig::default();
        c.apply(
            &parse_setting("storm=DEBUG:10")
                .into_iter()
                .collect::<Vec<_>>(),
            1_000,
        );
        c.apply(
            &[parse_setting("ROOT=INFO").unwrap_or_else(|e| panic!("{e}"))],
            1_000,
        );
        assert_eq!(c.named["storm"].timeout_epoch, 11_000);
        assert_eq!(
            c.directives(1_500),
            vec![
                ("ROOT".to_string(), "INFO".to_string(), 0),
                ("storm".to_string(), "DEBUG".to_string(), 10)
            ]
        );
        assert_eq!(c.describe(1_500), "ROOT=INFO, storm=DEBUG (10s)");
        assert_eq!(c.live(11_000).named.len(), 1);
        c.apply(
            &[Change::Reset {
                logger: "ROOT".into(),
            }],
            2_000,
        );
        assert_eq!(c.live(2_000).named.len(), 1);
    }

    #[test]
    fn storms_rest_body_is_read_and_written_in_its_shape() {
        let body = serde_json::json!({"namedLoggerLevels": {
            "ROOT": {"target_level": "debug", "timeout": "30"},
            "storm": {}
        }});
        let changes = changes_of_body(&body).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(changes.len(), 2);
        let mut c = LogConfig::default();
        c.apply(&changes, 0);
        let shown = serde_json::to_value(&c).unwrap_or_default();
        assert_eq!(
            shown,
            serde_json::json!({"namedLoggerLevels": {"ROOT": {
                "target_level": "DEBUG", "reset_level": null, "timeout": 30,
                "timeout_epoch": 30_000
            }}})
        );
        assert!(changes_of_body(&serde_json::json!({"ROOT": {}})).is_err());
        let bad = serde_json::json!({"namedLoggerLevels": {"ROOT": {"target_level": "LOUD"}}});
        assert!(changes_of_body(&bad).is_err());
    }
}
