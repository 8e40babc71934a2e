//! The cluster, in folders by role. `coordination`: the ZooKeeper-shaped tree that holds the
//! cluster state (the store interface, the in-memory tree, ZooKeeper, Storm's layout of it,
//! snapshots and dumps). `protocol`: what daemons and commands say to each other (`rpc`, the
//! client's retries, the multilang files a submission ships). The daemons: `nimbus` (with the
//! cluster state as it reads and writes it, which places executors with `crate::placement`;
//! leader election and HA on ZooKeeper; submissions; the simulated cluster behind
//! `storm zk dump`), `supervisor` (with its own ZooKeeper session), and `worker` processes
//! (tuples between workers over `runtime::tcp`; their part in checkpoints). `worker_logs` stays
//! here: supervisors write the logs, nimbus serves them, the UI and `storm logs` read them.

pub mod coordination;
pub(crate) mod nimbus;
pub mod protocol;
pub(crate) mod supervisor;
pub(crate) mod worker;
pub(crate) mod worker_logs;

pub use coordination::tree::SharedTree;
pub use coordination::znode_store::{CoordinationStore, CreateMode, StoreError};
pub(crate) use nimbus::cluster_state::ClusterError;
