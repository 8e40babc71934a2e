//! The cluster's coordination state: a ZooKeeper-shaped tree (`store`, `tree`, `snapshot`,
//! `dump`), Storm's layout of it (`layout`), Nimbus's reading and
//! writing of the state (`nimbus_state`, which places executors with `crate::placement`), the simulated cluster behind
//! `storm zk dump` (`simulation`). The daemons: `nimbus` (serving `rpc`), `supervisor`, and
//! `worker` processes (tuples between workers over `runtime::tcp`). `zookeeper` keeps the
//! tree in a ZooKeeper ensemble instead; `leader` and `ha` let several nimbuses share it;
//! `supervisor_zk` is a supervisor's own session with the ensemble.

pub mod dump;
pub mod ha;
pub mod layout;
pub mod leader;
pub mod nimbus;
pub mod nimbus_state;
pub mod resources;
pub mod retry;
pub mod rpc;
pub mod simulation;
pub mod snapshot;
pub mod store;
pub mod stormignore;
pub mod submission;
pub mod supervisor;
pub mod supervisor_zk;
pub mod tree;
pub mod worker;
pub mod worker_checkpoints;
pub mod worker_logs;
pub mod zookeeper;

pub use nimbus_state::{ClusterError, ClusterState};
pub use store::{CoordinationStore, CreateMode, SessionId, StoreError};
pub use tree::SharedTree;
