//! `storm config` (owned by the topology-files work; placeholder until it lands).

pub fn run(_args: crate::cli::ConfigArgs) -> anyhow::Result<super::Status> {
    anyhow::bail!("storm config is not implemented yet")
}
