//! The coordination store: the ZooKeeper-shaped tree that holds the cluster state. `znode_store`
//! is the interface daemons ask of it; `tree` keeps it in memory, `zookeeper` on an ensemble;
//! `layout` is Storm's layout of it; `snapshot` saves and restores it, `dump` prints it.

pub(crate) mod dump;
pub(crate) mod layout;
mod snapshot;
pub(crate) mod tree;
pub mod znode_store;
pub mod zookeeper;
