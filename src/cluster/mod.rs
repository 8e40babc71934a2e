//! The cluster's coordination state: a ZooKeeper-shaped tree (`store`, `tree`, `snapshot`,
//! `dump`), Storm's layout of it (`layout`), Nimbus's scheduler (`scheduler`) and its
//! reading and writing of the state (`nimbus_state`), and the simulated cluster behind
//! `storm zk dump` (`simulation`).

pub mod dump;
pub mod layout;
pub mod nimbus_state;
pub mod scheduler;
pub mod simulation;
pub mod snapshot;
pub mod store;
pub mod tree;

pub use nimbus_state::{ClusterError, ClusterState};
pub use store::{CoordinationStore, CreateMode, SessionId, StoreError};
pub use tree::SharedTree;
