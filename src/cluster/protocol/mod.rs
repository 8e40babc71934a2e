//! What daemons and commands say to each other: `rpc` (nimbus's requests and replies),
//! `retry` (a client's retries through an election), and the multilang files a submission
//! ships (`resources`, chosen with `stormignore`).

pub(crate) mod resources;
pub(crate) mod retry;
pub mod rpc;
pub(crate) mod stormignore;
