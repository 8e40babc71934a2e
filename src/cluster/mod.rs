//! The cluster's coordination state: a ZooKeeper-shaped tree (`store`, `tree`, `snapshot`,
//! `dump`), Storm's layout of it (`layout`), Nimbus's reading and
//! writing of the state (`nimbus_state`, which places executors with `crate::placement`), the simulated cluster behind
//! `storm zk dump` (`simulation`). The daemons: `nimbus` (serving `rpc`), `supervisor`, and
//! `worker` processes (tuples between workers over `runtime::tcp`). `zookeeper` keeps the
//! tree in a ZooKeeper ensemble instead; `leader` and `ha` let several nimbuses share it;
//! `supervisor_zk` is a supervisor's own session with the ensemble.

pub(crate) mod dump;
pub(crate) mod ha;
pub(crate) mod layout;
pub(crate) mod leader;
pub(crate) mod nimbus;
pub(crate) mod nimbus_state;
pub(crate) mod resources;
pub(crate) mod retry;
pub mod rpc;
pub(crate) mod simulation;
pub(crate) mod snapshot;
pub mod store;
pub(crate) mod stormignore;
pub(crate) mod submission;
pub(crate) mod supervisor;
pub(crate) mod supervisor_zk;
pub(crate) mod tree;
pub(crate) mod worker;
pub(crate) mod worker_checkpoints;
pub(crate) mod worker_logs;
pub mod zookeeper;

pub use nimbus_state::{ClusterError, ClusterState};
pub use store::{CoordinationStore, CreateMode, SessionId, StoreError};
pub use tree::SharedTree;
