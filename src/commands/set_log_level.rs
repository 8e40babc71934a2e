//! `storm set_log_level NAME -l LOGGER=LEVEL[:TIMEOUT] -r LOGGER` (Storm's command): change
//! the log levels of a running topology through nimbus (kept under `/logconfigs/ID`, installed
//! by every worker at its next heartbeat) or through a UI (`POST /topology/:id/logconfig`).

use super::cluster::{acting_nimbus, operation_token};
use super::Status;
use crate::cli::SetLogLevelArgs;
use crate::cluster::protocol::rpc::Request;
use crate::log_config::{now_ms, Change, LogConfig};

pub(crate) fn run(a: SetLogLevelArgs) -> anyhow::Result<Status> {
    let changes: Vec<Change> = a.set.iter().chain(&a.reset).cloned().collect();
    let (id, config) = match &a.target.ui {
        Some(ui) => through_ui(ui, &a, &changes)?,
        None => {
            let nimbus = match acting_nimbus(a.target.nimbus.as_deref(), &a.target.config) {
                Ok(n) => n,
                Err(s) => return Ok(s),
            };
            nimbus.call::<(String, LogConfig)>(&Request::SetLogConfig {
                name: a.name.clone(),
                changes,
            })?
        }
    };
    crate::stderr_println!(
        "log levels of {} ({id}): {}",
        a.name,
        config.describe(now_ms())
    );
    Ok(Status::Success)
}

/// Storm's REST body for `changes`: a reset is a logger without a target level.
fn rest_body(changes: &[Change]) -> serde_json::Value {
    let named: serde_json::Map<String, serde_json::Value> = changes
        .iter()
        .map(|c| match c {
            Change::Set {
                logger,
                level,
                timeout,
            } => (
                logger.clone(),
                serde_json::json!({ "target_level": level, "timeout": timeout }),
            ),
            Change::Reset { logger } => (logger.clone(), serde_json::json!({})),
        })
        .collect();
    serde_json::json!({ "namedLoggerLevels": named })
}

fn through_ui(
    ui: &str,
    a: &SetLogLevelArgs,
    changes: &[Change],
) -> anyhow::Result<(String, LogConfig)> {
    let name = super::ui::encode(&a.name);
    let path = format!("/api/v1/topology/{name}/logconfig");
    let token = operation_token(&a.target);
    let body = rest_body(changes).to_string();
    let answer = crate::ui::client::post_body(ui, &path, token.as_deref(), &body)?;
    let id = answer["topologyId"].as_str().unwrap_or(&a.name).to_string();
    let config: LogConfig = serde_json::from_value(answer)
        .map_err(|e| anyhow::anyhow!("{ui}{path}: an answer without namedLoggerLevels: {e}"))?;
    Ok((id, config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reset_is_a_logger_without_a_target_level() {
        let changes = [
            Change::Set {
                logger: "storm".into(),
                level: "DEBUG".into(),
                timeout: 5,
            },
            Change::Reset {
                logger: "ROOT".into(),
            },
        ];
        assert_eq!(
            rest_body(&changes),
            serde_json::json!({"namedLoggerLevels": {
                "storm": {"target_level": "DEBUG", "timeout": 5}, "ROOT": {}
            }})
        );
    }
}
