//! The coordination tree on a real ZooKeeper ensemble: a [`CoordinationStore`] over the
//! `zookeeper-client` crate, used when `storm.zookeeper.servers` is set. Same layout as the
//! embedded tree; ephemeral, sequential nodes and one-shot watches are ZooKeeper's own.
//!
//! Sessions: the store's own ZooKeeper session (`OWN_SESSION`) holds the ephemeral nodes of
//! the process that opened it (a nimbus's registration and leader latch, a supervisor's node).
//! When that session
//! expires the store connects a new one at the next call and counts a new [`ZkStore::epoch`],
//! so owners re-create their ephemeral nodes; a watch cut by the expiry fires once, so its
//! owner re-reads and watches again on the new session. Sessions opened with
//! `open_session` (supervisors that register through nimbus, not knowing the ensemble
//! themselves) are ZooKeeper sessions of their own:
//! their ephemeral nodes vanish when they are closed, expired for want of heartbeats, or when
//! the nimbus holding them dies.
//!
//! The client is asynchronous; every call here blocks on it with a deadline (the connection
//! timeout), so a lost ensemble is an error, never a hang.

use crate::cluster::coordination::znode_store::{
    validate_path, CoordinationStore, CreateMode, EventKind, SessionId, Stat, StoreError,
    WatchedEvent, Watcher,
};
use crate::config::Config;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use zookeeper_client as zk;

/// The session id that stands for the store's own ZooKeeper session.
pub(crate) const OWN_SESSION: SessionId = 0;

/// Storm's defaults: `storm.zookeeper.port`, `storm.zookeeper.session.timeout` and
/// `storm.zookeeper.connection.timeout` (milliseconds).
const DEFAULT_PORT: u64 = 2181;
const DEFAULT_SESSION_MS: u64 = 20_000;
const DEFAULT_CONNECTION_MS: u64 = 15_000;

/// Where the ensemble is and how long to wait for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkSettings {
    /// ZooKeeper's connect string: `host:port,host:port`.
    pub(crate) connect: String,
    pub(crate) session_timeout: Duration,
    pub(crate) connection_timeout: Duration,
}

impl ZkSettings {
    /// The ensemble named by `storm.zookeeper.servers` (hosts, or `host:port`), with
    /// `storm.zookeeper.port` for hosts without a port; `None` when no server is set.
    pub(crate) fn from_config(config: &Config) -> Option<ZkSettings> {
        let servers = config.get("storm.zookeeper.servers")?.as_array()?;
        let port = config
            .get_u64("storm.zookeeper.port")
            .unwrap_or(DEFAULT_PORT);
        let hosts: Vec<String> = servers
            .iter()
            .filter_map(|s| s.as_str())
            .map(|h| with_port(h, port))
            .collect();
        if hosts.is_empty() {
            return None;
        }
        Some(ZkSettings::new(hosts.join(","), config))
    }

    /// A connect string given on the command line, with the timeouts of `config`.
    pub fn new(connect: String, config: &Config) -> ZkSettings {
        let ms = |key, default| Duration::from_millis(config.get_u64(key).unwrap_or(default));
        ZkSettings {
            connect,
            session_timeout: ms("storm.zookeeper.session.timeout", DEFAULT_SESSION_MS),
            connection_timeout: ms("storm.zookeeper.connection.timeout", DEFAULT_CONNECTION_MS),
        }
    }
}

/// `host` with `:port` added unless it has one (a bracketed IPv6 address counts as a host).
fn with_port(host: &str, port: u64) -> String {
    let has_port = match host.rsplit_once(':') {
        Some((h, p)) => !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && !h.is_empty(),
        None => false,
    };
    if has_port && !host.ends_with(']') {
        host.to_string()
    } else {
        format!("{host}:{port}")
    }
}

/// A session opened for someone else (a supervisor), kept alive by its heartbeats.
struct Proxy {
    client: zk::Client,
    timeout: Duration,
    last_seen: Instant,
}

/// The coordination tree in a ZooKeeper ensemble.
pub struct ZkStore {
    settings: ZkSettings,
    own: Mutex<zk::Client>,
    /// Counts the store's own sessions: +1 each time an expired one is replaced.
    epoch: AtomicU64,
    proxies: Mutex<HashMap<SessionId, Proxy>>,
    next_session: AtomicU64,
}

/// Run `fut` to completion on this thread, or fail with `Timeout` after `limit`.
fn wait<T>(
    limit: Duration,
    fut: impl Future<Output = Result<T, zk::Error>>,
) -> Result<T, zk::Error> {
    futures_lite::future::block_on(futures_lite::future::or(fut, async move {
        async_io::Timer::after(limit).await;
        Err(zk::Error::Timeout)
    }))
}

/// Open one ZooKeeper session.
fn connect(settings: &ZkSettings, session_timeout: Duration) -> Result<zk::Client, zk::Error> {
    let connector = zk::Client::connector()
        .with_session_timeout(session_timeout)
        .with_connection_timeout(settings.connection_timeout);
    wait(
        settings.connection_timeout + Duration::from_secs(1),
        connector.connect(&settings.connect),
    )
}

/// Whether a session can no longer be used.
fn is_over(state: zk::SessionState) -> bool {
    matches!(
        state,
        zk::SessionState::Expired | zk::SessionState::Closed | zk::SessionState::AuthFailed
    )
}

/// A ZooKeeper error as the store's error about `path`.
fn store_error(e: zk::Error, path: &str, session: SessionId) -> StoreError {
    match e {
        zk::Error::NoNode => StoreError::NoNode(path.to_string()),
        zk::Error::NodeExists => StoreError::NodeExists(path.to_string()),
        zk::Error::BadVersion => StoreError::BadVersion {
            path: path.to_string(),
            expected: -1,
            actual: -1,
        },
        zk::Error::NotEmpty => StoreError::NotEmpty(path.to_string()),
        zk::Error::NoChildrenForEphemerals => StoreError::NoChildrenForEphemerals(path.to_string()),
        zk::Error::SessionExpired | zk::Error::ClientClosed => StoreError::SessionExpired(session),
        other => StoreError::Unavailable(format!("{path}: {other}")),
    }
}

impl ZkStore {
    /// Connect to the ensemble; fails when no server answers within the connection timeout.
    pub fn connect(settings: ZkSettings) -> Result<ZkStore, StoreError> {
        let client = connect(&settings, settings.session_timeout).map_err(|e| {
            StoreError::Unavailable(format!(
                "cannot reach ZooKeeper at {}: {e}",
                settings.connect
            ))
        })?;
        Ok(ZkStore {
            settings,
            own: Mutex::new(client),
            epoch: AtomicU64::new(1),
            proxies: Mutex::new(HashMap::new()),
            next_session: AtomicU64::new(OWN_SESSION + 1),
        })
    }

    /// The connect string.
    pub(crate) fn address(&self) -> &str {
        &self.settings.connect
    }

    /// Which of the store's own sessions is current: it changes when an expired session is
    /// replaced, and ephemeral nodes of `OWN_SESSION` must then be created again.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Whether the store's own session is connected now (a disconnected client may be
    /// expired on the servers without knowing it yet).
    pub(crate) fn connected(&self) -> bool {
        self.lock_own().state() == zk::SessionState::SyncConnected
    }

    /// Make sure the store's own session is usable: a new one replaces one that ended.
    pub(crate) fn renew(&self) -> Result<(), StoreError> {
        self.own_client().map(|_| ())
    }

    fn lock_own(&self) -> MutexGuard<'_, zk::Client> {
        self.own.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_proxies(&self) -> MutexGuard<'_, HashMap<SessionId, Proxy>> {
        self.proxies.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The own session's client, connecting a new session when the current one is over.
    fn own_client(&self) -> Result<zk::Client, StoreError> {
        let mut own = self.lock_own();
        if is_over(own.state()) {
            let fresh = connect(&self.settings, self.settings.session_timeout).map_err(|e| {
                StoreError::Unavailable(format!(
                    "cannot reach ZooKeeper at {}: {e}",
                    self.settings.connect
                ))
            })?;
            tracing::warn!(
                "zookeeper: session {} ended; continuing on new session {}",
                own.session_id(),
                fresh.session_id()
            );
            *own = fresh;
            self.epoch.fetch_add(1, Ordering::AcqRel);
        }
        Ok(own.clone())
    }

    /// The client of `session`: the own one, or a live proxy.
    fn session_client(&self, session: SessionId) -> Result<zk::Client, StoreError> {
        if session == OWN_SESSION {
            return self.own_client();
        }
        let proxies = self.lock_proxies();
        match proxies.get(&session) {
            Some(p) if !is_over(p.client.state()) => Ok(p.client.clone()),
            _ => Err(StoreError::SessionExpired(session)),
        }
    }

    /// ZooKeeper's stat as the store's, the owner of an ephemeral node named by our ids.
    fn stat(&self, s: &zk::Stat) -> Stat {
        let owner = (s.ephemeral_owner != 0).then(|| self.local_session(s.ephemeral_owner));
        Stat {
            czxid: s.czxid as u64,
            mzxid: s.mzxid as u64,
            version: s.version,
            cversion: s.cversion,
            ephemeral_owner: owner,
            num_children: s.num_children.max(0) as u32,
            data_length: s.data_length.max(0) as u32,
        }
    }

    /// Our id of a ZooKeeper session id (its raw value when the session is not ours).
    fn local_session(&self, zk_id: i64) -> SessionId {
        if self.lock_own().session_id().0 == zk_id {
            return OWN_SESSION;
        }
        self.lock_proxies()
            .iter()
            .find(|(_, p)| p.client.session_id().0 == zk_id)
            .map(|(id, _)| *id)
            .unwrap_or(zk_id as u64)
    }

    /// End a proxy session. Dropping its last client closes it on the servers, which then
    /// delete its ephemeral nodes, but later; they are deleted here first, so the session's
    /// nodes are gone when this returns, as the trait promises.
    fn end(&self, client: zk::Client) {
        if is_over(client.state()) {
            return;
        }
        if let Ok(paths) = self.wait(client.list_ephemerals("/")) {
            for path in paths {
                let _ = self.wait(client.delete(&path, None));
            }
        }
    }

    fn wait<T>(&self, fut: impl Future<Output = Result<T, zk::Error>>) -> Result<T, zk::Error> {
        wait(self.settings.connection_timeout, fut)
    }
}

/// Deliver a one-shot ZooKeeper watch to `to`. A watch ended by the session (expiry, close)
/// is delivered as `cut`, so its owner reads again, and watches again on the new session.
fn forward(watch: zk::OneshotWatcher, to: Watcher, path: String, cut: EventKind) {
    let task = async move {
        let event = watch.changed().await;
        let kind = match event.event_type {
            zk::EventType::NodeCreated => EventKind::NodeCreated,
            zk::EventType::NodeDeleted => EventKind::NodeDeleted,
            zk::EventType::NodeDataChanged => EventKind::NodeDataChanged,
            zk::EventType::NodeChildrenChanged => EventKind::NodeChildrenChanged,
            zk::EventType::Session => cut,
        };
        let _ = to.send(WatchedEvent { kind, path });
    };
    // Detached: the task ends with the watch.
    drop(asyncs::spawn(task));
}

impl CoordinationStore for ZkStore {
    fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String, StoreError> {
        validate_path(path)?;
        let (session, zmode) = match mode {
            CreateMode::Persistent => (OWN_SESSION, zk::CreateMode::Persistent),
            CreateMode::PersistentSequential => (OWN_SESSION, zk::CreateMode::PersistentSequential),
            CreateMode::Ephemeral(s) => (s, zk::CreateMode::Ephemeral),
            CreateMode::EphemeralSequential(s) => (s, zk::CreateMode::EphemeralSequential),
        };
        let client = self.session_client(session)?;
        let options = zmode.with_acls(zk::Acls::anyone_all());
        let (_, sequence) = self
            .wait(client.create(path, data, &options))
            .map_err(|e| store_error(e, path, session))?;
        Ok(if mode.is_sequential() {
            format!("{path}{sequence}")
        } else {
            path.to_string()
        })
    }

    fn get_data(&self, path: &str, watch: Option<Watcher>) -> Result<(Vec<u8>, Stat), StoreError> {
        validate_path(path)?;
        let client = self.own_client()?;
        let err = |e| store_error(e, path, OWN_SESSION);
        match watch {
            None => {
                let (data, stat) = self.wait(client.get_data(path)).map_err(err)?;
                Ok((data, self.stat(&stat)))
            }
            Some(to) => {
                let (data, stat, w) = self.wait(client.get_and_watch_data(path)).map_err(err)?;
                forward(w, to, path.to_string(), EventKind::NodeDataChanged);
                Ok((data, self.stat(&stat)))
            }
        }
    }

    fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat, StoreError> {
        validate_path(path)?;
        let client = self.own_client()?;
        let stat = self
            .wait(client.set_data(path, data, version))
            .map_err(|e| store_error(e, path, OWN_SESSION))?;
        Ok(self.stat(&stat))
    }

    fn delete(&self, path: &str, version: Option<i32>) -> Result<(), StoreError> {
        validate_path(path)?;
        let client = self.own_client()?;
        self.wait(client.delete(path, version))
            .map_err(|e| store_error(e, path, OWN_SESSION))
    }

    fn exists(&self, path: &str, watch: Option<Watcher>) -> Result<Option<Stat>, StoreError> {
        validate_path(path)?;
        let client = self.own_client()?;
        let err = |e| store_error(e, path, OWN_SESSION);
        let stat = match watch {
            None => self.wait(client.check_stat(path)).map_err(err)?,
            Some(to) => {
                let (stat, w) = self.wait(client.check_and_watch_stat(path)).map_err(err)?;
                forward(w, to, path.to_string(), EventKind::NodeDataChanged);
                stat
            }
        };
        Ok(stat.map(|s| self.stat(&s)))
    }

    fn children(&self, path: &str, watch: Option<Watcher>) -> Result<Vec<String>, StoreError> {
        validate_path(path)?;
        let client = self.own_client()?;
        let err = |e| store_error(e, path, OWN_SESSION);
        let mut kids = match watch {
            None => self.wait(client.list_children(path)).map_err(err)?,
            Some(to) => {
                let (kids, w) = self
                    .wait(client.list_and_watch_children(path))
                    .map_err(err)?;
                forward(w, to, path.to_string(), EventKind::NodeChildrenChanged);
                kids
            }
        };
        kids.sort();
        Ok(kids)
    }

    /// A new ZooKeeper session; when no server answers, an id that is already expired (the
    /// caller's next heartbeat fails with `SessionExpired`, and it opens another).
    fn open_session(&self, timeout: Duration) -> SessionId {
        let id = self.next_session.fetch_add(1, Ordering::AcqRel);
        match connect(&self.settings, timeout) {
            Ok(client) => {
                self.lock_proxies().insert(
                    id,
                    Proxy {
                        client,
                        timeout,
                        last_seen: Instant::now(),
                    },
                );
            }
            Err(e) => tracing::warn!(
                "zookeeper: cannot open a session at {}: {e}",
                self.settings.connect
            ),
        }
        id
    }

    fn touch_session(&self, session: SessionId) -> Result<(), StoreError> {
        if session == OWN_SESSION {
            return Ok(());
        }
        let mut proxies = self.lock_proxies();
        match proxies.get_mut(&session) {
            Some(p) if !is_over(p.client.state()) => {
                p.last_seen = Instant::now();
                Ok(())
            }
            Some(_) => {
                proxies.remove(&session);
                Err(StoreError::SessionExpired(session))
            }
            None => Err(StoreError::SessionExpired(session)),
        }
    }

    fn close_session(&self, session: SessionId) -> Result<(), StoreError> {
        let proxy = self.lock_proxies().remove(&session);
        match proxy {
            Some(p) => {
                self.end(p.client);
                Ok(())
            }
            None => Err(StoreError::SessionExpired(session)),
        }
    }

    fn expire_sessions(&self) -> Vec<SessionId> {
        let now = Instant::now();
        let mut proxies = self.lock_proxies();
        let over: Vec<SessionId> = proxies
            .iter()
            .filter(|(_, p)| {
                is_over(p.client.state()) || now.duration_since(p.last_seen) > p.timeout
            })
            .map(|(id, _)| *id)
            .collect();
        let ended: Vec<zk::Client> = over
            .iter()
            .filter_map(|id| proxies.remove(id))
            .map(|p| p.client)
            .collect();
        drop(proxies);
        for client in ended {
            self.end(client);
        }
        over
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{layers, Origin};
    use serde_json::json;

    #[test]
    fn hosts_take_the_configured_port_unless_they_name_one() {
        assert_eq!(with_port("zk1", 2181), "zk1:2181");
        assert_eq!(with_port("zk1:2182", 2181), "zk1:2182");
        assert_eq!(with_port("[::1]", 2181), "[::1]:2181");
        assert_eq!(with_port("[::1]:2183", 2181), "[::1]:2183");
    }

    #[test]
    fn settings_come_from_storms_keys() {
        let mut config = layers::defaults();
        assert_eq!(ZkSettings::from_config(&config), None);
        config.set(
            "storm.zookeeper.servers",
            json!(["a", "b:2190"]),
            Origin::CommandLine,
        );
        config.set("storm.zookeeper.port", json!(2200), Origin::CommandLine);
        config.set(
            "storm.zookeeper.session.timeout",
            json!(4000),
            Origin::CommandLine,
        );
        let s = ZkSettings::from_config(&config).unwrap();
        assert_eq!(s.connect, "a:2200,b:2190");
        assert_eq!(s.session_timeout, Duration::from_millis(4000));
        assert_eq!(s.connection_timeout, Duration::from_millis(15_000));
    }
}
