//! Logging: `tracing` to standard error, level from `STORM_LOG` (default `warn`), so standard
//! output carries only the topology's own output.

pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STORM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
