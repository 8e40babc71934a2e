//! The command line as clap derive definitions: flags as written. Commands resolve
//! them into real objects in `commands/`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "storm",
    version,
    about = "Apache Storm's model as a declarative dataflow runner",
    long_about = "Run Apache Storm topologies written in YAML (Flux-shaped) or a compact DSL: \
in-process, as worker processes, or across hosts. Components are built-ins or any program \
speaking Storm's multilang protocol.",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse and check topology files; print `ok: FILE` lines or located errors
    Validate(ValidateArgs),
    /// Run a topology (a shell filter when it reads stdin)
    #[command(after_help = components_help())]
    Run(RunArgs),
    /// The coordination tree Storm would keep in ZooKeeper
    #[command(subcommand)]
    Zk(ZkCommand),
    /// Print the topology as a graph (Graphviz dot or Mermaid)
    Graph(GraphArgs),
    /// Print the effective configuration, each key with where its value came from
    Config(ConfigArgs),
    /// Print a shell completion script
    Completions(CompletionsArgs),
    /// Run the cluster's master: holds the coordination tree, schedules topologies
    Nimbus(NimbusArgs),
    /// Run a supervisor: starts a worker process for each slot assigned to it
    Supervisor(SupervisorArgs),
    /// Submit a topology to a running cluster
    Submit(SubmitArgs),
    /// List the topologies of a running cluster
    List(NimbusAddrArgs),
    /// Kill a topology on a running cluster
    Kill(KillArgs),
    /// Activate a deactivated topology: its spouts emit again
    Activate(OperationArgs),
    /// Deactivate a topology: its spouts pause, tuples in flight complete
    Deactivate(OperationArgs),
    /// Re-place a running topology with new worker and executor counts (tasks are fixed)
    Rebalance(RebalanceArgs),
    /// A live terminal view of a running topology's components (from its UI or nimbus)
    Top(TopArgs),
    /// Print the tuples a component emits, live, as JSON lines (from a run's UI)
    Tap(TapArgs),
    /// Show or remove the checkpoints a state dir keeps (`storm run --state-dir DIR`)
    #[command(subcommand)]
    State(StateCommand),
    /// Run a topology in this process (Storm 2.x's `storm local`; the same as `storm run`)
    #[command(after_help = components_help())]
    Local(RunArgs),
    /// Storm's `storm jar`: there is no JVM here; says what to use instead (exit 2)
    Jar(JarArgs),
    /// Print this storm's version
    Version,
    /// Print one key of the local configuration (defaults, storm.yaml, -c), as `KEY: VALUE`
    #[command(name = "localconfvalue")]
    LocalConfValue(ConfValueArgs),
    /// Print one key of nimbus's configuration, as `KEY: VALUE`
    #[command(name = "remoteconfvalue")]
    RemoteConfValue(RemoteConfValueArgs),
    /// The last error of each component of a topology on a cluster, as Storm's JSON
    #[command(name = "get-errors")]
    GetErrors(GetErrorsArgs),
    /// Set log levels of a running topology's processes, for a while or until reset
    #[command(name = "set_log_level")]
    SetLogLevel(SetLogLevelArgs),
    /// Print the logs of a topology's workers on a cluster (those running COMPONENT's tasks)
    Logs(LogsArgs),
    /// Storm's throughput poll: a component's emitted and transferred tuples on one stream,
    /// a line per interval
    Monitor(MonitorArgs),
    /// Internal: one worker process (started by a supervisor)
    #[command(hide = true)]
    Worker(WorkerArgs),
}

/// `storm jar`'s arguments, taken whole (only to be explained).
#[derive(Debug, Args)]
pub struct JarArgs {
    /// The jar, its main class and their arguments
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    pub(crate) args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RemoteConfValueArgs {
    /// The configuration key
    #[arg(value_name = "KEY")]
    pub(crate) key: String,
    #[command(flatten)]
    pub(crate) target: NimbusAddrArgs,
}

#[derive(Debug, Args)]
pub struct GetErrorsArgs {
    /// Topology name (or id)
    pub(crate) name: String,
    #[command(flatten)]
    pub(crate) target: NimbusAddrArgs,
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("changes").required(true).multiple(true).args(["set", "reset"]))]
pub struct SetLogLevelArgs {
    /// Topology name (or id)
    pub(crate) name: String,
    /// Set LOGGER (a module path such as `storm::runtime`, or ROOT) to LEVEL (ALL, TRACE,
    /// DEBUG, INFO, WARN, ERROR, FATAL, OFF), for TIMEOUT seconds when given (repeatable)
    #[arg(short = 'l', long = "level", value_name = "LOGGER=LEVEL[:TIMEOUT]",
          value_parser = crate::log_config::parse_setting)]
    pub(crate) set: Vec<crate::log_config::Change>,
    /// Put LOGGER back at its starting level (repeatable)
    #[arg(short = 'r', long = "reset", value_name = "LOGGER",
          value_parser = crate::log_config::parse_reset)]
    pub(crate) reset: Vec<crate::log_config::Change>,
    #[command(flatten)]
    pub(crate) target: TargetArgs,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Topology name (or id)
    pub(crate) name: String,
    /// Only the workers running this component's tasks
    pub(crate) component: Option<String>,
    /// Bytes shown from the end of each worker's log
    #[arg(long, value_name = "BYTES", default_value_t = 51_200,
          value_parser = clap::value_parser!(u64).range(1..=16 * 1024 * 1024))]
    pub(crate) length: u64,
    #[command(flatten)]
    pub(crate) target: NimbusAddrArgs,
}

/// What `storm monitor`'s throughput counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum Watch {
    #[default]
    Emitted,
    Transferred,
}

#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Topology name (or id)
    pub(crate) name: String,
    /// The component watched
    #[arg(short = 'm', long = "component", value_name = "COMPONENT")]
    pub(crate) component: String,
    /// The output stream watched
    #[arg(
        short = 's',
        long = "stream",
        value_name = "STREAM",
        default_value = "default"
    )]
    pub(crate) stream: String,
    /// Seconds between two lines
    #[arg(short = 'i', long = "interval", value_name = "SECS", default_value_t = 4,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub(crate) interval: u64,
    /// The count the throughput is of
    #[arg(short = 'w', long = "watch", value_enum, default_value_t = Watch::Emitted)]
    pub(crate) watch: Watch,
    /// Stop after this many lines (default: until interrupted)
    #[arg(long, value_name = "N")]
    pub(crate) count: Option<u64>,
    #[command(flatten)]
    pub(crate) target: TargetArgs,
}

#[derive(Debug, Args)]
pub struct ConfValueArgs {
    /// The configuration key
    #[arg(value_name = "KEY")]
    pub(crate) key: String,
    #[command(flatten)]
    pub(crate) config: ConfigOverrides,
}

/// The built-in component types, one line each, under `storm run --help`.
fn components_help() -> String {
    use crate::model::ComponentType;
    let mut out =
        String::from("Built-in components (`type:` in YAML, the first word in the DSL):\n");
    for t in ComponentType::ALL.iter().filter(|t| !t.is_flux_only()) {
        out += &format!("  {:<10} {}\n", t.name(), t.summary());
    }
    out += "Their arguments: docs/components.md. The DSL: docs/dsl.md.";
    out
}

/// Where the topology comes from: a file, or inline DSL text.
#[derive(Debug, Args, Clone)]
#[group(skip)]
#[command(group = clap::ArgGroup::new("topology").required(true).args(["file", "expr"]))]
pub(crate) struct TopologySource {
    /// Topology file (`.yaml`/`.yml`, Flux YAML, or `.storm` DSL)
    #[arg(value_name = "FILE", conflicts_with = "expr")]
    pub(crate) file: Option<PathBuf>,
    /// The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)
    #[arg(short = 'e', long = "expr", value_name = "TEXT")]
    pub(crate) expr: Option<String>,
    /// Properties file for Flux `${key}` substitution
    #[arg(long = "filter", value_name = "FILE")]
    pub(crate) filter: Option<PathBuf>,
}

/// `-c KEY=VALUE` overrides (VALUE read as YAML).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct ConfigOverrides {
    /// Override one configuration key; VALUE is read as YAML (repeatable)
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE", value_parser = key_value)]
    pub(crate) overrides: Vec<String>,
}

/// `-c` takes `KEY=VALUE` with a non-empty key (a usage error otherwise).
fn key_value(text: &str) -> Result<String, String> {
    match text.split_once('=') {
        Some((key, _)) if !key.trim().is_empty() => Ok(text.to_string()),
        _ => Err("expected KEY=VALUE, e.g. `-c topology.workers=2`".into()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum DiagFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Topology files
    #[arg(value_name = "FILE", required_unless_present = "expr")]
    pub(crate) files: Vec<PathBuf>,
    /// A topology inline, in the DSL
    #[arg(
        short = 'e',
        long = "expr",
        value_name = "TEXT",
        conflicts_with = "files"
    )]
    pub(crate) expr: Option<String>,
    /// Properties file for Flux `${key}` substitution
    #[arg(long = "filter", value_name = "FILE")]
    pub(crate) filter: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) config: ConfigOverrides,
    /// Output format of the diagnostics
    #[arg(long, value_enum, default_value_t = DiagFormat::Text)]
    pub(crate) format: DiagFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum ProgressMode {
    #[default]
    Auto,
    Never,
    Always,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub(crate) source: TopologySource,
    #[command(flatten)]
    pub(crate) config: ConfigOverrides,
    /// Number of workers (overrides topology.workers)
    #[arg(long, value_name = "N")]
    pub(crate) workers: Option<u32>,
    /// Run each worker as its own process, talking over loopback TCP
    #[arg(long)]
    pub(crate) processes: bool,
    /// Run attached on a running cluster
    #[arg(long, value_name = "ADDR")]
    pub(crate) nimbus: Option<String>,
    /// Stop (gracefully, draining) after this long: `30s`, `2m`
    #[arg(long, value_name = "DUR", value_parser = humantime::parse_duration)]
    pub(crate) duration: Option<std::time::Duration>,
    /// Keep checkpointed state in DIR (an embedded database per worker), and resume from what
    /// DIR holds (sets topology.state.dir and topology.state.provider=embedded)
    #[arg(long, value_name = "DIR")]
    pub(crate) state_dir: Option<PathBuf>,
    /// Start over: remove what the state dir holds first, even a damaged one (refused while a
    /// run holds it)
    #[arg(long)]
    pub(crate) fresh: bool,
    /// Progress display on stderr
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub(crate) progress: ProgressMode,
    /// Print nothing on stderr but errors (no summary)
    #[arg(short, long)]
    pub quiet: bool,
    /// End the run with an error at the first input line that cannot be read, value that
    /// cannot be converted or late tuple (sets topology.strict=true)
    #[arg(long)]
    pub(crate) strict: bool,
    /// Print the per-component summary at the end even when stderr is not a terminal
    #[arg(long, conflicts_with = "quiet")]
    pub(crate) summary: bool,
    /// Include system components (the acker, `__acker`) in the summary
    #[arg(long)]
    pub(crate) system: bool,
    /// Write the full run figures as JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub(crate) stats: Option<PathBuf>,
    /// Serve the Storm UI, its REST API and /metrics while the run lasts [default ADDR:
    /// 127.0.0.1:8080; port 0 picks a free one]
    #[arg(long, value_name = "ADDR", num_args = 0..=1,
          default_missing_value = crate::ui::DEFAULT_ADDR, value_parser = ui_addr)]
    pub(crate) ui: Option<String>,
}

/// `--ui` takes `HOST:PORT` (a file name there means the option swallowed the topology).
fn ui_addr(text: &str) -> Result<String, String> {
    match text.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
            Ok(text.to_string())
        }
        _ => Err(format!(
            "expected HOST:PORT, e.g. `--ui 127.0.0.1:8080` (to use the default address, put              `--ui` after the topology file, or write `--ui={}`)",
            crate::ui::DEFAULT_ADDR
        )),
    }
}

#[derive(Debug, Subcommand)]
pub enum ZkCommand {
    /// Submit to a simulated cluster and print the coordination tree (or a live one with --nimbus)
    Dump(ZkDumpArgs),
}

#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// The topology, its last committed checkpoint, each task's entries and position, the files
    Ls(StateDirArgs),
    /// Every committed entry, one a line: `component[index]  key  value` (JSON), or JSON lines
    Dump(StateDumpArgs),
    /// Remove a state dir and its checkpoints (only a dir holding checkpoint.redb)
    Clear(StateClearArgs),
}

#[derive(Debug, Args)]
pub struct StateDirArgs {
    /// The state dir (`--state-dir`, `topology.state.dir`)
    #[arg(value_name = "DIR")]
    pub(crate) dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct StateDumpArgs {
    /// The state dir (`--state-dir`, `topology.state.dir`)
    #[arg(value_name = "DIR")]
    pub(crate) dir: PathBuf,
    #[arg(long, value_enum, default_value_t = TreeFormat::Text)]
    pub(crate) format: TreeFormat,
}

#[derive(Debug, Args)]
pub struct StateClearArgs {
    /// The state dir (`--state-dir`, `topology.state.dir`)
    #[arg(value_name = "DIR")]
    pub(crate) dir: PathBuf,
    /// Do not ask (needed when standard input is not a terminal)
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum TreeFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct ZkDumpArgs {
    /// Topology file
    #[arg(
        value_name = "FILE",
        required_unless_present_any = ["nimbus", "expr", "zookeeper"]
    )]
    pub(crate) file: Option<PathBuf>,
    /// A topology inline, in the DSL
    #[arg(
        short = 'e',
        long = "expr",
        value_name = "TEXT",
        conflicts_with = "file"
    )]
    pub(crate) expr: Option<String>,
    /// Supervisor slots: one supervisor per host named (default: localhost with supervisor.slots.ports)
    #[arg(long, value_name = "HOST:PORT,...", value_delimiter = ',')]
    pub(crate) slots: Vec<String>,
    /// Print the live tree of a running cluster instead
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["file", "expr", "slots"])]
    pub(crate) nimbus: Option<String>,
    /// Print the live tree held by a ZooKeeper ensemble (under storm.zookeeper.root)
    #[arg(
        long,
        value_name = "HOST:PORT,...",
        conflicts_with_all = ["file", "expr", "slots", "nimbus", "fixed_time"]
    )]
    pub(crate) zookeeper: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = TreeFormat::Text)]
    pub(crate) format: TreeFormat,
    /// Use this Unix time (seconds) instead of the clock, for reproducible dumps
    #[arg(long, value_name = "SECS")]
    pub(crate) fixed_time: Option<u64>,
    #[command(flatten)]
    pub(crate) config: ConfigOverrides,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum GraphFormat {
    #[default]
    Dot,
    Mermaid,
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    #[command(flatten)]
    pub(crate) source: TopologySource,
    #[command(flatten)]
    pub(crate) config: ConfigOverrides,
    /// Graph language
    #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
    pub(crate) format: GraphFormat,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Topology file whose `config:` takes part
    #[arg(value_name = "FILE")]
    pub(crate) file: Option<PathBuf>,
    /// Properties file for Flux `${key}` substitution
    #[arg(long = "filter", value_name = "FILE")]
    pub(crate) filter: Option<PathBuf>,
    /// List only the keys set that Storm knows but that have no effect here
    #[arg(long)]
    pub(crate) unused: bool,
    #[command(flatten)]
    pub(crate) config: ConfigOverrides,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct NimbusArgs {
    /// Address to listen on
    #[arg(long, default_value = "127.0.0.1:6627", value_name = "ADDR")]
    pub(crate) listen: String,
    /// Folder where the coordination tree is persisted
    #[arg(long, value_name = "DIR")]
    pub(crate) data: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) config: ConfigOverrides,
}

#[derive(Debug, Args)]
pub struct SupervisorArgs {
    /// Nimbus address, or several comma-separated (default: nimbus.seeds)
    #[arg(long, value_name = "ADDR,...")]
    pub(crate) nimbus: Option<String>,
    /// This supervisor's host name (what workers bind to and peers connect to)
    #[arg(long, default_value = "127.0.0.1", value_name = "NAME")]
    pub(crate) host: String,
    /// Worker slot ports (default: supervisor.slots.ports)
    #[arg(long, value_name = "PORT,...", value_delimiter = ',')]
    pub(crate) slots: Vec<u16>,
    #[command(flatten)]
    pub(crate) config: ConfigOverrides,
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub(crate) source: TopologySource,
    /// Nimbus address, or several comma-separated (default: nimbus.seeds)
    #[arg(long, value_name = "ADDR,...")]
    pub(crate) nimbus: Option<String>,
    #[command(flatten)]
    pub(crate) config: ConfigOverrides,
}

#[derive(Debug, Args)]
pub struct NimbusAddrArgs {
    /// Nimbus address, or several comma-separated (default: nimbus.seeds)
    #[arg(long, value_name = "ADDR,...")]
    pub(crate) nimbus: Option<String>,
    #[command(flatten)]
    pub(crate) config: ConfigOverrides,
}

#[derive(Debug, Args)]
pub struct KillArgs {
    /// Topology name
    pub(crate) name: String,
    /// Nimbus address, or several comma-separated (default: nimbus.seeds)
    #[arg(long, value_name = "ADDR,...")]
    pub(crate) nimbus: Option<String>,
    /// Seconds to wait between deactivating and removing (default: the topology's
    /// topology.message.timeout.secs)
    #[arg(short = 'w', long, value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(0..=crate::model::rebalance::MAX_WAIT_SECS))]
    pub(crate) wait: Option<u64>,
    #[command(flatten)]
    pub(crate) config: ConfigOverrides,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Nimbus address
    #[arg(long, value_name = "ADDR")]
    pub(crate) nimbus: String,
    /// Topology id
    #[arg(long)]
    pub(crate) topology: String,
    /// Host and port of this worker's slot
    #[arg(long, value_name = "HOST:PORT")]
    pub(crate) slot: String,
    /// The ZooKeeper ensemble (`host:port,...`) to write task heartbeats and errors to
    /// (instead of sending them to nimbus)
    #[arg(long, value_name = "HOST:PORT,...")]
    pub(crate) zookeeper: Option<String>,
    /// `storm.zookeeper.root`
    #[arg(
        long,
        value_name = "PATH",
        default_value = "/storm",
        requires = "zookeeper"
    )]
    pub(crate) zookeeper_root: String,
    /// `storm.zookeeper.session.timeout`, in milliseconds
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 20_000,
        requires = "zookeeper"
    )]
    pub(crate) zookeeper_session_ms: u64,
    /// `storm.zookeeper.connection.timeout`, in milliseconds
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 15_000,
        requires = "zookeeper"
    )]
    pub(crate) zookeeper_connection_ms: u64,
}

/// Where an operation or a view reaches the topology: nimbus, or the UI of a run (neither:
/// nimbus as `nimbus.seeds` or ZooKeeper find it).
#[derive(Debug, Args, Clone)]
#[command(group = clap::ArgGroup::new("target").args(["nimbus", "ui"]))]
pub(crate) struct TargetArgs {
    /// Nimbus address, or several comma-separated (default: nimbus.seeds)
    #[arg(long, value_name = "ADDR")]
    pub(crate) nimbus: Option<String>,
    /// The UI of a run or of nimbus (`storm run --ui`, nimbus's ui.port)
    #[arg(long, value_name = "ADDR")]
    pub(crate) ui: Option<String>,
    /// The UI's token (ui.token or storm.cluster.secret), for operations through --ui
    #[arg(
        long,
        value_name = "TOKEN",
        env = "STORM_UI_TOKEN",
        hide_env_values = true
    )]
    pub(crate) token: Option<String>,
    #[command(flatten)]
    pub(crate) config: ConfigOverrides,
}

#[derive(Debug, Args)]
pub struct OperationArgs {
    /// Topology name (or id)
    pub(crate) name: String,
    #[command(flatten)]
    pub(crate) target: TargetArgs,
}

#[derive(Debug, Args)]
pub struct RebalanceArgs {
    /// Topology name (or id)
    pub(crate) name: String,
    /// Seconds the spouts stay deactivated before the switch, at most (default: the topology's
    /// message timeout; the switch comes sooner once no tuple tree is pending)
    #[arg(short = 'w', long = "wait", value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(0..=crate::model::rebalance::MAX_WAIT_SECS))]
    pub(crate) wait: Option<u64>,
    /// The new number of workers (at most 256)
    #[arg(short = 'n', long = "num-workers", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=crate::topology::validate::bounds::MAX_WORKERS as i64))]
    pub(crate) num_workers: Option<u32>,
    /// A component's new number of executors, 1 to its task count (repeatable)
    #[arg(short = 'e', long = "executor", value_name = "COMPONENT=PARALLELISM",
          value_parser = crate::model::rebalance::parse_executor)]
    pub(crate) executors: Vec<(String, u32)>,
    #[command(flatten)]
    pub(crate) target: TargetArgs,
}

#[derive(Debug, Args)]
pub struct TopArgs {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// Topology name or id (default: the first one)
    #[arg(long, value_name = "NAME")]
    pub(crate) topology: Option<String>,
    /// Seconds between refreshes
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub(crate) interval: f64,
}

#[derive(Debug, Args)]
pub struct TapArgs {
    /// Topology name (or id)
    pub(crate) name: String,
    /// The component whose emits are shown
    pub(crate) component: String,
    /// Only the tuples of this stream
    #[arg(long, value_name = "STREAM")]
    pub(crate) stream: Option<String>,
    /// Show this share of the tuples (0 < R <= 1: one in round(1/R))
    #[arg(long, value_name = "R", default_value_t = 1.0)]
    pub(crate) sample: f64,
    /// The UI of the run (`storm run FILE --ui ADDR`)
    #[arg(long, value_name = "ADDR")]
    pub(crate) ui: String,
}
