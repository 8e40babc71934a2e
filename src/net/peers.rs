//! Where each peer worker listens, as far as this process knows. Workers bind port 0 and
//! report the address they got (the cluster passes it on), so an address may be unknown at
//! first and may change when a peer restarts: links read the book on every connect attempt.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

/// The shared book of worker addresses, by worker index.
#[derive(Debug, Clone, Default)]
pub struct Peers(Arc<RwLock<BTreeMap<usize, SocketAddr>>>);

impl Peers {
    /// A book that knows `addrs` to begin with.
    pub(crate) fn new(addrs: BTreeMap<usize, SocketAddr>) -> Peers {
        Peers(Arc::new(RwLock::new(addrs)))
    }

    /// Where `worker` listens, if known.
    pub fn get(&self, worker: usize) -> Option<SocketAddr> {
        match self.0.read() {
            Ok(m) => m.get(&worker).copied(),
            Err(p) => p.into_inner().get(&worker).copied(),
        }
    }

    /// Record that `worker` listens at `addr` (it started, or restarted elsewhere).
    pub fn set(&self, worker: usize, addr: SocketAddr) {
        match self.0.write() {
            Ok(mut m) => m.insert(worker, addr),
            Err(p) => p.into_inner().insert(worker, addr),
        };
    }

    /// Whether the address of every worker in `0..workers` is known (one with port 0 is not).
    pub(crate) fn knows_all(&self, workers: usize) -> bool {
        (0..workers).all(|w| self.get(w).is_some_and(|a| a.port() != 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_learned_and_replaced() {
        let a: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let peers = Peers::new([(0, a)].into());
        let copy = peers.clone();
        assert!(
            !peers.knows_all(1),
            "port 0 is not an address to connect to"
        );
        assert_eq!(peers.get(1), None);
        copy.set(0, "127.0.0.1:7001".parse().unwrap());
        copy.set(1, "127.0.0.1:7002".parse().unwrap());
        assert!(peers.knows_all(2));
        copy.set(1, "127.0.0.1:7003".parse().unwrap());
        assert_eq!(peers.get(1).map(|a| a.port()), Some(7003));
    }
}
