//! The validated topology: what the runtime, the scheduler and the graph printer see.
//! It carries no source spans; everything in it has been checked by `validate`.

use crate::config::Config;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The stream every component emits on unless it names another (Storm's `Utils.DEFAULT_STREAM_ID`).
pub const DEFAULT_STREAM: &str = "default";

#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    pub name: String,
    /// Effective configuration (defaults, storm.yaml, the file's `config:`, `-c`).
    pub config: Config,
    /// Spouts first, then bolts, each in file order.
    pub components: Vec<Component>,
    pub streams: Vec<Stream>,
    /// Folder of the topology file: the default working directory of shell components.
    pub base_dir: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ComponentKind {
    Spout,
    Bolt,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    pub id: String,
    pub kind: ComponentKind,
    pub ctype: ComponentType,
    /// `args:` as written (a JSON object; empty when absent).
    pub args: serde_json::Map<String, serde_json::Value>,
    /// Executors.
    pub parallelism: u32,
    /// Tasks (≥ parallelism).
    pub tasks: u32,
    /// Declared output streams and their fields (resolved: built-in defaults, `fields:`,
    /// `streams:`, Flux configMethods, or inherited input fields for pass-through bolts).
    pub outputs: BTreeMap<String, Vec<String>>,
    /// Program and arguments of a shell component.
    pub command: Option<Vec<String>>,
    /// Working directory of a shell component (default: `Topology::base_dir`).
    pub cwd: Option<PathBuf>,
    /// Per-component tick frequency (overrides `topology.tick.tuple.freq.secs`).
    pub tick: Option<Duration>,
    /// A shell bolt gets one tuple on stream `__finish` after its last input (`finish: true`).
    pub finish: bool,
    /// The component keeps checkpointed state (resolved: its `stateful:` key, else
    /// `topology.stateful` for the built-ins that keep state). Only types for which
    /// [`ComponentType::keeps_state`] holds are ever stateful.
    pub stateful: bool,
    /// Per-component configuration (Flux `config:` on a component).
    pub config: BTreeMap<String, serde_json::Value>,
}

impl Component {
    pub fn is_spout(&self) -> bool {
        self.kind == ComponentKind::Spout
    }

    /// A string argument, if present and a string.
    pub fn arg_str(&self, key: &str) -> Option<&str> {
        self.args.get(key).and_then(|v| v.as_str())
    }

    /// Fields of one output stream.
    pub fn output_fields(&self, stream: &str) -> Option<&[String]> {
        self.outputs.get(stream).map(|v| v.as_slice())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    pub from: String,
    pub to: String,
    /// Stream id on the `from` component (default `"default"`).
    pub stream: String,
    pub grouping: Grouping,
    /// Informational name (Flux's `name`).
    pub name: Option<String>,
}

/// How tuples on a stream are spread over the target component's tasks (Storm's groupings).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Grouping {
    Shuffle,
    Fields(Vec<String>),
    All,
    Global,
    None,
    Direct,
    LocalOrShuffle,
    PartialKey(Vec<String>),
}

impl Grouping {
    /// The name as our YAML writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Grouping::Shuffle => "shuffle",
            Grouping::Fields(_) => "fields",
            Grouping::All => "all",
            Grouping::Global => "global",
            Grouping::None => "none",
            Grouping::Direct => "direct",
            Grouping::LocalOrShuffle => "local_or_shuffle",
            Grouping::PartialKey(_) => "partial_key",
        }
    }

    /// Every grouping type name accepted (lower case; matching is case-insensitive and
    /// `localOrShuffle` / `partialKey` spellings are accepted too).
    pub const NAMES: &'static [&'static str] = &[
        "shuffle",
        "fields",
        "all",
        "global",
        "none",
        "direct",
        "local_or_shuffle",
        "partial_key",
    ];

    /// The key fields of a fields or partial-key grouping.
    pub fn key_fields(&self) -> Option<&[String]> {
        match self {
            Grouping::Fields(f) | Grouping::PartialKey(f) => Some(f),
            _ => None,
        }
    }
}

/// The built-in component types and the Flux classes that map onto them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ComponentType {
    Stdin,
    File,
    Generate,
    Split,
    Count,
    Aggregate,
    Top,
    Join,
    Dedupe,
    Lookup,
    Filter,
    Parse,
    Map,
    Stdout,
    Log,
    Discard,
    Chaos,
    Shell,
    /// `org.apache.storm.testing.TestWordSpout`
    TestWordSpout,
    /// `org.apache.storm.testing.TestWordCounter`
    TestWordCounter,
    Kafka,
    Redis,
}

impl ComponentType {
    pub const ALL: &'static [ComponentType] = &[
        ComponentType::Stdin,
        ComponentType::File,
        ComponentType::Generate,
        ComponentType::Split,
        ComponentType::Count,
        ComponentType::Aggregate,
        ComponentType::Top,
        ComponentType::Join,
        ComponentType::Dedupe,
        ComponentType::Lookup,
        ComponentType::Filter,
        ComponentType::Parse,
        ComponentType::Map,
        ComponentType::Stdout,
        ComponentType::Log,
        ComponentType::Discard,
        ComponentType::Chaos,
        ComponentType::Shell,
        ComponentType::TestWordSpout,
        ComponentType::TestWordCounter,
        ComponentType::Kafka,
        ComponentType::Redis,
    ];

    /// The name used in `type:`.
    pub fn name(self) -> &'static str {
        match self {
            ComponentType::Stdin => "stdin",
            ComponentType::File => "file",
            ComponentType::Generate => "generate",
            ComponentType::Split => "split",
            ComponentType::Count => "count",
            ComponentType::Aggregate => "aggregate",
            ComponentType::Top => "top",
            ComponentType::Join => "join",
            ComponentType::Dedupe => "dedupe",
            ComponentType::Lookup => "lookup",
            ComponentType::Filter => "filter",
            ComponentType::Parse => "parse",
            ComponentType::Map => "map",
            ComponentType::Stdout => "stdout",
            ComponentType::Log => "log",
            ComponentType::Discard => "discard",
            ComponentType::Chaos => "chaos",
            ComponentType::Shell => "shell",
            ComponentType::TestWordSpout => "test_word_spout",
            ComponentType::TestWordCounter => "test_word_counter",
            ComponentType::Kafka => "kafka",
            ComponentType::Redis => "redis",
        }
    }

    /// What the type does, in one line (`storm run --help`).
    pub fn summary(self) -> &'static str {
        use ComponentType::*;
        match self {
            Stdin => "spout: one `line` per line of standard input, or its fields with `format`",
            File => "spout: one `line` per line of a file (`path`), or its fields with `format`",
            Generate => "spout: `count` tuples of `values` or random words, at `rate`/s",
            Split => "bolt: one `word` per piece of a string `field`, on whitespace or `separator`",
            Count => {
                "bolt: tuples per key of `fields`; totals at the end, on ticks or every update"
            }
            Aggregate => {
                "bolt: count, sum, avg, min, max, distinct, percentile, top… per key of `by`"
            }
            Join => "bolt: joins two or more inputs on a key (inner or left), whole or per window",
            Top => "bolt: the `n` keys of `by` with the highest `score`, per window or overall",
            Dedupe => {
                "bolt: the first tuple of each `key` passes (exact, per `window`, or a `cache`)"
            }
            Lookup => {
                "bolt: adds columns of the row of a table file (`path`) whose `key` equals `on`"
            }
            Filter => "bolt: keeps the tuples for which the expression `where` holds",
            Parse => "bolt: fields out of a line: json, csv, tsv, regex, logfmt, kv, combined",
            Map => "bolt: computes (`set`), renames, keeps or drops fields of each tuple",
            Stdout => "bolt: writes each tuple as a line on standard output: tsv, json or csv",
            Log => "bolt: writes each tuple with its component and task to stderr",
            Discard => "bolt: acks and drops every tuple",
            Chaos => "bolt: passes tuples on, failing `fail`, dropping `drop`, delaying `delay`",
            Shell => "spout or bolt: a program speaking Storm's multilang protocol (`command`)",
            TestWordSpout => "spout: Storm's TestWordSpout (random words)",
            TestWordCounter => "bolt: Storm's TestWordCounter (word, count)",
            Kafka => {
                "spout or bolt: reads `topics` of Kafka `brokers`, or writes records to a `topic`"
            }
            Redis => "spout or bolt: reads a Redis `stream`, or looks up / writes keys (`command`)",
        }
    }

    /// Types that exist for Flux files' Java classes rather than to be written by name.
    pub fn is_flux_only(self) -> bool {
        matches!(
            self,
            ComponentType::TestWordSpout | ComponentType::TestWordCounter
        )
    }

    pub fn from_name(name: &str) -> Option<ComponentType> {
        ComponentType::ALL
            .iter()
            .copied()
            .find(|t| t.name() == name)
    }

    /// `stdin` spouts and `stdout` sinks: in a run across processes or hosts they stay in the
    /// `storm run` process, so a shell pipeline behaves the same at any scale.
    pub fn is_console(self) -> bool {
        matches!(self, ComponentType::Stdin | ComponentType::Stdout)
    }

    /// The built-ins that keep state a checkpoint can save (`stateful: true`).
    pub fn keeps_state(self) -> bool {
        use ComponentType::*;
        matches!(
            self,
            Count | Aggregate | Top | Join | Dedupe | Kafka | Redis
        )
    }

    /// Spouts that can go back to a checkpoint's position (`Spout::position`), so that
    /// checkpointed state sees each of their tuples once: `stdin`, `file` and `generate`.
    pub fn rewinds(self) -> bool {
        use ComponentType::*;
        matches!(self, Stdin | File | Generate | Kafka)
    }

    /// The names of the spout types that rewind, for messages.
    pub fn rewinding_names() -> Vec<&'static str> {
        ComponentType::ALL
            .iter()
            .filter(|t| t.rewinds())
            .map(|t| t.name())
            .collect()
    }

    /// The names of the types that keep state, for messages.
    pub fn stateful_names() -> Vec<&'static str> {
        ComponentType::ALL
            .iter()
            .filter(|t| t.keeps_state())
            .map(|t| t.name())
            .collect()
    }

    /// Whether this type can be a spout, a bolt, or (shell) both.
    pub fn can_be(self, kind: ComponentKind) -> bool {
        use ComponentType::*;
        match self {
            Stdin | File | Generate | TestWordSpout => kind == ComponentKind::Spout,
            Shell | Kafka | Redis => true,
            _ => kind == ComponentKind::Bolt,
        }
    }
}

impl Topology {
    pub fn component(&self, id: &str) -> Option<&Component> {
        self.components.iter().find(|c| c.id == id)
    }

    /// Streams that feed the given component.
    pub fn inputs_of<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a Stream> + 'a {
        self.streams.iter().filter(move |s| s.to == id)
    }

    /// Streams that leave the given component.
    pub fn outputs_of<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a Stream> + 'a {
        self.streams.iter().filter(move |s| s.from == id)
    }

    pub fn spouts(&self) -> impl Iterator<Item = &Component> {
        self.components.iter().filter(|c| c.is_spout())
    }

    pub fn bolts(&self) -> impl Iterator<Item = &Component> {
        self.components.iter().filter(|c| !c.is_spout())
    }

    /// Whether any component keeps checkpointed state (the run then checkpoints).
    pub fn is_stateful(&self) -> bool {
        self.components.iter().any(|c| c.stateful)
    }

    /// The ids of its spouts that cannot rewind to a checkpoint.
    pub fn unrewinding_spouts(&self) -> Vec<&str> {
        self.components
            .iter()
            .filter(|c| c.kind == ComponentKind::Spout && !c.ctype.rewinds())
            .map(|c| c.id.as_str())
            .collect()
    }

    /// Whether its state is kept at least once rather than exactly once: stateful, with a
    /// spout that cannot rewind (which validation allows only with
    /// `topology.state.guarantee: at_least_once`).
    pub fn at_least_once(&self) -> bool {
        self.is_stateful() && !self.unrewinding_spouts().is_empty()
    }

    /// Total executors and tasks of user components.
    pub fn executor_and_task_counts(&self) -> (u64, u64) {
        self.components.iter().fold((0, 0), |(e, t), c| {
            (e + u64::from(c.parallelism), t + u64::from(c.tasks))
        })
    }
}
