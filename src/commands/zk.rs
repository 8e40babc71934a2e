//! `storm zk dump` (placeholder until the coordination-tree work lands).

pub fn dump(_args: crate::cli::ZkDumpArgs) -> anyhow::Result<super::Status> {
    anyhow::bail!("storm zk dump is not implemented yet")
}
