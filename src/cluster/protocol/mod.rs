//! What daemons and commands say to each other: `rpc` (nimbus's requests and replies),
//! `retry` (a client's retries through an election), and the multilang files a submission
//! ships (`multilang_files`, chosen with `stormignore`).

pub(crate) mod multilang_files;
pub(crate) mod retry;
pub mod rpc;
mod stormignore;
