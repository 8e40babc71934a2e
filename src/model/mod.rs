//! The validated topology: what the runtime, the scheduler and the graph printer see.
//! It carries no source spans; everything in it has been checked by `validate`.

use crate::config::Config;

pub(crate) mod chains;
pub(crate) mod partials;
pub mod plan;
pub(crate) mod rebalance;
mod state_dir;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The most workers a topology may ask for (`topology.workers`, and a rebalance's).
pub(crate) const MAX_WORKERS: u32 = 256;

/// The stream every component emits on unless it names another (Storm's `Utils.DEFAULT_STREAM_ID`).
pub(crate) const DEFAULT_STREAM: &str = "default";

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
    /// `ComponentType::keeps_state` holds are ever stateful.
    pub stateful: bool,
    /// `chain:` as written (default true): the component may run fused with its neighbours
    /// (see `chains`).
    pub chain: bool,
    /// Per-component configuration (Flux `config:` on a component).
    pub config: BTreeMap<String, serde_json::Value>,
}

impl Component {
    pub fn is_spout(&self) -> bool {
        self.kind == ComponentKind::Spout
    }

    /// A string argument, if present and a string.
    pub(crate) fn arg_str(&self, key: &str) -> Option<&str> {
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
    pub(crate) fn name(&self) -> &'static str {
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
    pub(crate) const NAMES: &'static [&'static str] = &[
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
    pub(crate) fn key_fields(&self) -> Option<&[String]> {
        match self {
            Grouping::Fields(f) | Grouping::PartialKey(f) => Some(f),
            _ => None,
        }
    }
}

/// A built-in component type: its place in the registry (`components/registry.rs`), which
/// holds its descriptor and gives this handle its methods. Two handles are equal when they
/// name the same type.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ComponentType(pub(crate) u16);

impl Topology {
    pub fn component(&self, id: &str) -> Option<&Component> {
        self.components.iter().find(|c| c.id == id)
    }

    /// Streams that feed the given component.
    pub(crate) fn inputs_of<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a Stream> + 'a {
        self.streams.iter().filter(move |s| s.to == id)
    }

    /// Streams that leave the given component.
    pub(crate) fn outputs_of<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a Stream> + 'a {
        self.streams.iter().filter(move |s| s.from == id)
    }

    pub(crate) fn spouts(&self) -> impl Iterator<Item = &Component> {
        self.components.iter().filter(|c| c.is_spout())
    }

    pub(crate) fn bolts(&self) -> impl Iterator<Item = &Component> {
        self.components.iter().filter(|c| !c.is_spout())
    }

    /// Whether any component keeps checkpointed state (the run then checkpoints).
    pub fn is_stateful(&self) -> bool {
        self.components.iter().any(|c| c.stateful)
    }

    /// The ids of its spouts that cannot rewind to a checkpoint.
    pub(crate) fn unrewinding_spouts(&self) -> Vec<&str> {
        self.components
            .iter()
            .filter(|c| c.kind == ComponentKind::Spout && !c.ctype.rewinds_with(&c.args))
            .map(|c| c.id.as_str())
            .collect()
    }

    /// Whether its state is kept at least once rather than exactly once: stateful, with a
    /// spout that cannot rewind (which validation allows only with
    /// `topology.state.guarantee: at_least_once`).
    pub(crate) fn at_least_once(&self) -> bool {
        self.is_stateful() && !self.unrewinding_spouts().is_empty()
    }

    /// Total executors and tasks of user components.
    pub(crate) fn executor_and_task_counts(&self) -> (u64, u64) {
        self.components.iter().fold((0, 0), |(e, t), c| {
            (e + u64::from(c.parallelism), t + u64::from(c.tasks))
        })
    }
}
