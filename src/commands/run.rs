//! `storm run`: load, validate, and execute a topology locally.

pub fn run(_args: crate::cli::RunArgs) -> anyhow::Result<super::Status> {
    anyhow::bail!("storm run is not implemented yet")
}
