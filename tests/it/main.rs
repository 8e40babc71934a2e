//! The integration tests: one binary, one module per area.

mod cli;
mod cluster;
mod config;
mod multilang;
mod net;
mod validate;
mod zk;
