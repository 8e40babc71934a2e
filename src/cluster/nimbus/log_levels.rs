//! Nimbus's side of `storm set_log_level` (Storm's `setLogConfig` / `getLogConfig`): the log
//! levels of a live topology kept under `/logconfigs/ID`, where every worker reads them with
//! its heartbeat's answer and installs them in its log filter.

use super::{no_running_topology, Nimbus};
use crate::cluster::coordination::layout::TopologyStatus;
use crate::log_config::{self, Change, LogConfig};

impl Nimbus {
    /// The id of the live topology named `name` (or with that id).
    fn live_id(&self, name: &str) -> anyhow::Result<String> {
        let state = self.state();
        for id in state.topology_ids()? {
            if state.storm_base(&id)?.is_some_and(|b| {
                (b.name == name || id == name) && b.status != TopologyStatus::Killed
            }) {
                return Ok(id);
            }
        }
        Err(no_running_topology(&state, name))
    }

    /// Carry out `changes` on the log levels of topology `name`; its id and the levels now in
    /// effect (timed-out ones dropped).
    pub(crate) fn set_log_config(
        &self,
        name: &str,
        changes: &[Change],
    ) -> anyhow::Result<(String, LogConfig)> {
        for c in changes {
            log_config::logger(c.logger()).map_err(|e| anyhow::anyhow!("{e}"))?;
            if let Change::Set { level, .. } = c {
                log_config::level(level).map_err(|e| anyhow::anyhow!("{e}"))?;
            }
        }
        let id = self.live_id(name)?;
        let now = log_config::now_ms();
        let state = self.state();
        let mut config = state.log_config(&id)?.live(now);
        config.apply(changes, now);
        state.set_log_config(&id, &config)?;
        drop(state);
        self.save()?;
        Ok((id, config))
    }

    /// The log levels in effect for topology `name`, and its id.
    pub(crate) fn log_config(&self, name: &str) -> anyhow::Result<(String, LogConfig)> {
        let id = self.live_id(name)?;
        let config = self.state().log_config(&id)?.live(log_config::now_ms());
        Ok((id, config))
    }
}
