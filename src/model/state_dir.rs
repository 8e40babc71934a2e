//! Where a topology keeps its state on disk: the state dir its config names when its provider
//! is `embedded` (read by the checkpoints and by keyed state that spills).

use super::Topology;
use std::path::PathBuf;

impl Topology {
    /// The state dir of an `embedded` provider; `None` for `memory`.
    pub(crate) fn state_dir(&self) -> anyhow::Result<Option<PathBuf>> {
        let config = &self.config;
        match config.state_provider() {
            "memory" => Ok(None),
            "embedded" => {
                // Set in the topology file, a relative dir is relative to the file's folder,
                // as every path in it is; from the command line or storm.yaml, to the working
                // dir.
                let dir = config.state_dir(&self.name);
                let in_file = config
                    .entries
                    .get("topology.state.dir")
                    .is_some_and(|e| matches!(e.origin, crate::config::Origin::Topology { .. }));
                Ok(Some(match in_file && dir.is_relative() {
                    true => self.base_dir.join(dir),
                    false => dir,
                }))
            }
            other => anyhow::bail!(
                "topology.state.provider: `{other}` is not a state provider (memory or embedded)"
            ),
        }
    }
}
