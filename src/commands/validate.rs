//! `storm validate` (owned by the topology-files work; placeholder until it lands).

pub fn run(_args: crate::cli::ValidateArgs) -> anyhow::Result<super::Status> {
    anyhow::bail!("storm validate is not implemented yet")
}
