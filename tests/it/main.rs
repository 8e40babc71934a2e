//! The integration tests: one binary, one module per area.

mod acking;
mod checkpoints;
mod cli;
mod cluster;
mod cluster_hardening;
pub(crate) mod cluster_resources;
mod config;
mod cookbook;
mod flux;
mod input_limits;
mod layering;
mod map;
mod multilang;
mod multilang_runs;
mod net;
mod newcomer;
mod records;
mod run;
mod run_reliability;
mod state;
mod stateful;
mod support;
mod ui;
mod validate;
mod windows;
mod zk;
mod zookeeper;
