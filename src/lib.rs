//! storm: Apache Storm's model rebuilt as a declarative-config dataflow runner.
//!
//! The flow: a topology file is parsed (`topology`), validated into a model with its layered
//! configuration (`config`), scheduled onto workers (`cluster`), and executed by the runtime
//! (`runtime`) with built-in or multilang components (`components`).

pub mod cli;
pub mod cluster;
pub mod commands;
pub mod components;
pub mod config;
pub mod diag;
pub mod expr;
pub mod grouping;
pub mod java_hash;
pub mod logging;
pub mod net;
pub mod runtime;
pub mod topology;
pub mod tuple;
