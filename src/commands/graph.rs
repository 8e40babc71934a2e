//! `storm graph` (owned by the topology-files work; placeholder until it lands).

pub fn run(_args: crate::cli::GraphArgs) -> anyhow::Result<super::Status> {
    anyhow::bail!("storm graph is not implemented yet")
}
