//! Moving tuples between workers: the pure frame codec and the links frames travel on
//! (in memory for local mode; TCP for processes and hosts), with the cluster-secret handshake.

pub mod auth;
pub mod frame;
pub mod link;
pub mod listener;
pub mod outbound;
pub mod reassembly;
pub mod transport;

pub use transport::TcpNetwork;
