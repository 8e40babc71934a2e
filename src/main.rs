//! The `storm` binary: parse the command line, run the command, map the outcome to an exit status.

use clap::Parser;
use std::process::ExitCode;

// mimalloc: tuples are allocated on one executor thread and freed on another; glibc's malloc
// spends a quarter of a word count's time on that pattern.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    one_libc_arena();
    let cli = storm::cli::Cli::parse();
    // `storm run --quiet`: errors only.
    let quiet = matches!(&cli.command, storm::cli::Command::Run(a) if a.quiet);
    storm::logging::init(quiet);
    match storm::commands::dispatch(cli) {
        Ok(status) => status.into(),
        Err(err) if storm::commands::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            storm::stderr_println!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}

/// glibc's malloc, still used by the C libraries linked in, reserves 64 MiB of address space
/// for each thread that calls it: six threads took 384 MiB, which under `ulimit -v` runs out
/// long before memory does. Their few allocations need one arena.
fn one_libc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of the allocator, before any thread is started.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
