//! Moving bytes between workers: frames (a header and a payload this layer does not read), the
//! links frames travel on (in memory for local mode; TCP for processes and hosts), stream
//! reassembly, and the cluster-secret handshake. What the payloads mean is the runtime's
//! (`runtime::wire`); nothing here names a tuple.

pub mod auth;
pub(crate) mod frame;
pub(crate) mod http;
pub(crate) mod link;
pub mod listener;
pub mod outbound;
pub(crate) mod peers;
pub mod reassembly;

pub use link::Network;
