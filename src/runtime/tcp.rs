//! `TcpNetwork`: the runtime's `Network` over TCP, for workers in other processes or on other
//! hosts (Storm's Netty messaging layer). Each local worker listens on its own address
//! (a mio receive loop, `net::listener`), which checks every data frame with this runtime's
//! wire codec before handing it on; each (local worker, remote worker) pair gets a lazily
//! connected `TcpLink` (`net::outbound`). With a cluster secret every connection is
//! authenticated. Addresses live in a [`Peers`] book: a local worker may listen on port 0 (its
//! bound address is then recorded), and a peer's address may be learned, or change, later.
//!
//! Dropping the network stops its listeners (and so lets the workers' receive threads end).

use super::wire;
use crate::net::auth::Secret;
use crate::net::link::{Link, Network};
use crate::net::listener::{self, ListenerHandle};
use crate::net::outbound::{LinkOptions, TcpLink};
use crate::net::peers::Peers;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Workers reached over TCP.
pub struct TcpNetwork {
    addrs: Peers,
    local: BTreeSet<usize>,
    secret: Option<Secret>,
    options: LinkOptions,
    listeners: Mutex<Vec<ListenerHandle>>,
    /// Set by [`TcpNetwork::sever`]: every link stops sending.
    severed: Arc<AtomicBool>,
}

impl TcpNetwork {
    /// `addrs` holds the addresses of the workers of the topology known so far; `local` those
    /// run here.
    pub fn new(
        addrs: BTreeMap<usize, SocketAddr>,
        local: impl IntoIterator<Item = usize>,
        secret: Option<Secret>,
    ) -> TcpNetwork {
        TcpNetwork {
            addrs: Peers::new(addrs),
            local: local.into_iter().collect(),
            secret,
            options: LinkOptions::default(),
            listeners: Mutex::new(Vec::new()),
            severed: Arc::default(),
        }
    }

    /// Override link tunables (tests shorten the linger time).
    pub fn with_options(mut self, options: LinkOptions) -> TcpNetwork {
        self.options = options;
        self
    }

    /// Addresses actually bound by `listen` so far (a port 0 in `addrs` becomes a real port).
    pub fn bound(&self) -> Vec<(usize, SocketAddr)> {
        match self.listeners.lock() {
            Ok(l) => l.iter().map(|h| (h.worker, h.addr)).collect::<Vec<_>>(),
            Err(_) => Vec::new(),
        }
    }

    /// The book of worker addresses: what is learned about a peer goes in here, and every
    /// link reads it on its next connect attempt.
    pub fn peers(&self) -> &Peers {
        &self.addrs
    }

    /// Halt every link at once: what is queued is dropped and nothing more is sent (the run
    /// is halted for a rollback; its tuples must not reach the workers of the next one).
    pub(crate) fn sever(&self) {
        self.severed.store(true, Ordering::Relaxed);
    }

    /// Stop every listener and join its thread (also done on drop).
    fn shutdown(&self) {
        let taken = match self.listeners.lock() {
            Ok(mut l) => std::mem::take(&mut *l),
            Err(p) => std::mem::take(&mut *p.into_inner()),
        };
        for mut h in taken {
            h.shutdown();
        }
    }

    fn addr_of(&self, worker: usize) -> anyhow::Result<SocketAddr> {
        self.addrs
            .get(worker)
            .ok_or_else(|| anyhow::anyhow!("no network address for worker {worker}"))
    }
}

impl Drop for TcpNetwork {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Network for TcpNetwork {
    fn listen(
        &self,
        worker: usize,
        into: crossbeam_channel::Sender<Vec<u8>>,
    ) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.local.contains(&worker),
            "worker {worker} does not run in this process"
        );
        let addr = self.addr_of(worker)?;
        let handle = listener::spawn(
            worker,
            addr,
            self.secret.clone(),
            self.options.handshake_timeout,
            wire::check,
            into,
        )?;
        self.addrs.set(worker, handle.addr);
        match self.listeners.lock() {
            Ok(mut l) => l.push(handle),
            Err(p) => p.into_inner().push(handle),
        }
        Ok(())
    }

    fn connect(&self, from: usize, to: usize) -> anyhow::Result<Box<dyn Link>> {
        anyhow::ensure!(
            !self.local.contains(&to),
            "worker {to} runs in this process; it needs no TCP link"
        );
        Ok(Box::new(TcpLink::open(
            from,
            to,
            self.addrs.clone(),
            self.secret.clone(),
            self.options.clone(),
            self.severed.clone(),
        )?))
    }
}
