//! storm: Apache Storm's model rebuilt as a declarative-config dataflow runner.
//!
//! The flow: a topology file is parsed (`topology`), validated into a model with its layered
//! configuration (`config`), scheduled onto workers (`cluster`), and executed by the runtime
//! (`runtime`) with built-in or multilang components (`components`).

/// `eprint!` that ignores a closed standard error (`2>&1 | head`) instead of panicking.
#[macro_export]
macro_rules! stderr_print {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprintln!` that ignores a closed standard error instead of panicking.
#[macro_export]
macro_rules! stderr_println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod cli;
pub mod clock;
pub mod cluster;
pub mod commands;
pub mod components;
pub mod config;
pub mod expr;
pub mod grouping;
pub mod java_hash;
mod java_random;
mod lifeline;
mod log_config;
pub mod logging;
pub mod model;
pub mod net;
pub mod placement;
mod recursion_guard;
pub mod runtime;
mod short_str;
mod slots;
pub mod state;
pub mod syntax;
pub mod topology;
pub mod tuple;
mod ui;
