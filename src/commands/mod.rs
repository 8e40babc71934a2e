//! One module per subcommand: orchestration only. Each returns the exit status it wants
//! (0 success, 1 invalid topology or failed run, 2 usage, 130 interrupted).

use crate::cli::{Cli, Command, StateCommand, ZkCommand};
use std::process::ExitCode;

mod cluster;
pub mod completions;
mod config;
mod graph;
mod logs;
mod monitor;
mod progress;
mod reaper;
mod run;
mod set_log_level;
mod signals;
mod state;
mod storm_cli;
mod top;
mod ui;
mod validate;
mod zk;

/// The exit status of a command that ran to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Success,
    /// Invalid topology or failed run.
    Failure,
    Usage,
    Interrupted,
    /// A worker rolled back: its supervisor starts it again at once.
    RolledBack,
}

impl From<Status> for ExitCode {
    fn from(s: Status) -> ExitCode {
        match s {
            Status::Success => ExitCode::SUCCESS,
            Status::Failure => ExitCode::from(1),
            Status::Usage => ExitCode::from(2),
            Status::Interrupted => ExitCode::from(130),
            Status::RolledBack => ExitCode::from(crate::cluster::supervisor::ROLLED_BACK as u8),
        }
    }
}

pub fn dispatch(cli: Cli) -> anyhow::Result<Status> {
    match cli.command {
        Command::Validate(a) => validate::run(a),
        Command::Run(a) => run::run(a),
        Command::Zk(ZkCommand::Dump(a)) => zk::dump(a),
        Command::Graph(a) => graph::run(a),
        Command::Config(a) => config::run(a),
        Command::Completions(a) => completions::run(a),
        Command::Nimbus(a) => cluster::nimbus(a),
        Command::Supervisor(a) => cluster::supervisor(a),
        Command::Submit(a) => cluster::submit(a),
        Command::List(a) => cluster::list(a),
        Command::Kill(a) => cluster::kill(a),
        Command::Worker(a) => cluster::worker(a),
        Command::Activate(a) => cluster::set_active(a, true),
        Command::Deactivate(a) => cluster::set_active(a, false),
        Command::Rebalance(a) => cluster::rebalance(a),
        Command::Top(a) => top::run(a),
        Command::Local(a) => run::run(a),
        Command::Jar(a) => Ok(storm_cli::jar(&a)),
        Command::Version => Ok(storm_cli::version()),
        Command::LocalConfValue(a) => Ok(storm_cli::local_conf_value(&a)),
        Command::GetErrors(a) => cluster::get_errors(a),
        Command::RemoteConfValue(a) => cluster::remote_conf_value(a),
        Command::Tap(a) => ui::tap(a),
        Command::SetLogLevel(a) => set_log_level::run(a),
        Command::Logs(a) => logs::run(a),
        Command::Monitor(a) => monitor::run(a),
        Command::State(StateCommand::Ls(a)) => state::ls(a),
        Command::State(StateCommand::Dump(a)) => state::dump(a),
        Command::State(StateCommand::Clear(a)) => state::clear(a),
    }
}

/// Load the topology a command names (a file, or `-e` DSL text). On failure the reason is
/// printed on stderr (diagnostics rendered against the source) and the exit status returned;
/// on success its warnings are printed on stderr when `show_warnings`.
fn load_topology(
    file: Option<&std::path::Path>,
    expr: Option<&str>,
    opts: &crate::topology::LoadOptions,
    show_warnings: bool,
) -> Result<crate::topology::Loaded, Status> {
    use crate::topology::{load_file, load_inline, LoadError};
    let result = match (file, expr) {
        (_, Some(text)) => load_inline(text, opts),
        (Some(path), None) => load_file(path, opts),
        (None, None) => {
            crate::stderr_println!("error: no topology given (a FILE or -e TEXT)");
            return Err(Status::Usage);
        }
    };
    match result {
        Ok(loaded) => {
            if show_warnings {
                crate::stderr_print!(
                    "{}",
                    crate::syntax::diag::render_all(&loaded.warnings, &loaded.source)
                );
                if let Some(note) =
                    crate::config::storm_keys::no_effect_summary(&loaded.topology.config)
                {
                    crate::stderr_println!("{note}");
                }
            }
            Ok(loaded)
        }
        Err(LoadError::Unreadable(reason)) => {
            crate::stderr_println!("error: {reason}");
            Err(Status::Failure)
        }
        Err(LoadError::Invalid {
            source,
            diagnostics,
        }) => {
            crate::stderr_print!("{}", crate::syntax::diag::render_all(&diagnostics, &source));
            Err(Status::Failure)
        }
    }
}

/// Whether an error is a closed standard output: the run then ends quietly.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
