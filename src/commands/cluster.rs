//! The cluster commands (`nimbus`, `supervisor`, `submit`, `list`, `kill`, and the internal
//! `worker`). Distributed execution is not built yet: each says so and exits 1.

use super::Status;
use crate::cli::{KillArgs, NimbusAddrArgs, NimbusArgs, SubmitArgs, SupervisorArgs, WorkerArgs};

fn not_yet(what: &str) -> anyhow::Result<Status> {
    anyhow::bail!("`storm {what}` (distributed execution) is not implemented yet; use `storm run FILE` for local mode")
}

pub fn nimbus(_a: NimbusArgs) -> anyhow::Result<Status> {
    not_yet("nimbus")
}
pub fn supervisor(_a: SupervisorArgs) -> anyhow::Result<Status> {
    not_yet("supervisor")
}
pub fn submit(_a: SubmitArgs) -> anyhow::Result<Status> {
    not_yet("submit")
}
pub fn list(_a: NimbusAddrArgs) -> anyhow::Result<Status> {
    not_yet("list")
}
pub fn kill(_a: KillArgs) -> anyhow::Result<Status> {
    not_yet("kill")
}
pub fn worker(_a: WorkerArgs) -> anyhow::Result<Status> {
    not_yet("worker")
}
