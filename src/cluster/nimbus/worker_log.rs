//! Nimbus as the logviewer of its host: a worker's log file read from `storm.log.dir` as
//! nimbus's own configuration names it (Storm's logviewer reads its host's `storm.log.dir`
//! the same way), for the UI's `/api/v1/log` and `storm logs`.

use super::Nimbus;
use crate::cluster::worker_logs::{self, LogChunk, LogError};

impl Nimbus {
    /// `length` bytes from `start` of the worker log named `file`
    /// (`TOPOLOGY-ID/PORT/worker.log`); see [`worker_logs::read_chunk`] for the defaults.
    pub(crate) fn worker_log(
        &self,
        file: &str,
        start: Option<u64>,
        length: Option<u64>,
    ) -> anyhow::Result<LogChunk> {
        let relative = worker_logs::log_path(file)?;
        let dir = worker_logs::artifacts_dir(&self.config);
        let path = dir.join(&relative);
        match worker_logs::read_chunk(&path, start, length) {
            Ok(chunk) => Ok(chunk),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(LogError::NotFound(format!(
                "no worker log {file} under {} (storm.log.dir of nimbus's host: a supervisor \
                 on another host, or with another storm.log.dir, keeps its workers' logs there)",
                dir.display()
            ))
            .into()),
            Err(e) => Err(anyhow::anyhow!("{}: {e}", path.display())),
        }
    }
}
