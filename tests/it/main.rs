//! The integration tests: one binary, one module per area.

mod acking;
mod cli;
mod cluster;
mod cluster_hardening;
mod config;
mod input_limits;
mod multilang;
mod net;
mod run;
mod validate;
mod zk;
