//! `storm completions` (owned by the topology-files work; placeholder until it lands).

pub fn run(_args: crate::cli::CompletionsArgs) -> anyhow::Result<super::Status> {
    anyhow::bail!("storm completions is not implemented yet")
}
