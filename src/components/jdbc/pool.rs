//! Connections: one pool per connection string in a process, shared by the tasks of every
//! `jdbc` component there (a task takes a connection for a statement or a transaction and
//! gives it back), prepared statements cached per connection, and the bounded retry with
//! back-off that a lost connection gets while the tuples wait.

use postgres::{Client, NoTls, Statement};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Idle connections a pool keeps (more are opened while more tasks need one at once).
const MAX_IDLE: usize = 16;

/// Prepared statements a connection keeps.
const MAX_STATEMENTS: usize = 64;

/// A connection with its prepared statements.
pub(crate) struct Conn {
    pub(crate) client: Client,
    statements: HashMap<String, Statement>,
}

impl Conn {
    /// The prepared statement of `sql` (prepared once per connection).
    pub(crate) fn prepare(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        if self.statements.len() >= MAX_STATEMENTS {
            self.statements.clear();
        }
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

/// The connections to one server as one user.
pub(crate) struct Pool {
    config: postgres::Config,
    /// Where it connects, for messages (no password).
    pub(crate) target: String,
    idle: Mutex<Vec<Conn>>,
}

impl Pool {
    /// The pool for the connection string `url` of the component `label`, with the password
    /// from the `jdbc.password` config key when the string has none.
    pub(crate) fn for_task(
        ctx: &crate::components::TaskContext,
        url: &str,
        label: &str,
    ) -> Result<Arc<Pool>, crate::components::FatalError> {
        let password = ctx.config.get("jdbc.password").and_then(|v| v.as_str());
        let config = super::url::config(url, password)
            .map_err(|e| crate::components::FatalError(format!("{label}: {e}")))?;
        Ok(Pool::shared(config))
    }

    /// The pool of this process for `config` (made on first use).
    fn shared(config: postgres::Config) -> Arc<Pool> {
        static POOLS: OnceLock<Mutex<HashMap<String, Arc<Pool>>>> = OnceLock::new();
        // Its Debug text hides the password: two users' pools are told apart by it too.
        let key = format!("{config:?}{:?}", config.get_password());
        let pools = POOLS.get_or_init(Default::default);
        let mut pools = pools.lock().unwrap_or_else(|e| e.into_inner());
        pools
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Pool {
                    target: super::url::describe(&config),
                    config,
                    idle: Mutex::new(Vec::new()),
                })
            })
            .clone()
    }

    /// An idle connection, or a new one.
    fn get(&self) -> Result<Conn, postgres::Error> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match idle.filter(|c| !c.client.is_closed()) {
            Some(c) => Ok(c),
            None => Ok(Conn {
                client: self.config.connect(NoTls)?,
                statements: HashMap::new(),
            }),
        }
    }

    /// Give `conn` back (dropped when closed or when enough are idle).
    fn put(&self, conn: Conn) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if !conn.client.is_closed() && idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }

    /// Run `f` on a connection, given back after; a connection lost on the way is retried
    /// with back-off until `bound` has passed (or `stop` says the run is stopping).
    pub(crate) fn with<T>(
        &self,
        bound: Duration,
        stop: &dyn Fn() -> bool,
        mut f: impl FnMut(&mut Conn) -> Result<T, postgres::Error>,
    ) -> Result<T, Failure> {
        let deadline = Instant::now() + bound;
        let mut backoff = Duration::from_millis(50);
        let mut tries = 0u32;
        loop {
            tries += 1;
            let result = self.get().and_then(|mut c| {
                let r = f(&mut c);
                self.put(c);
                r
            });
            let e = match result {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            if !is_connection(&e) {
                return Err(Failure::Refused(describe_error(&e)));
            }
            if Instant::now() + backoff > deadline || stop() {
                return Err(Failure::Unreachable(format!(
                    "{} did not answer after {tries} tries in {}s: {}",
                    self.target,
                    bound.as_secs(),
                    describe_error(&e)
                )));
            }
            tracing::warn!(
                "{}: {}; trying again in {}ms",
                self.target,
                describe_error(&e),
                backoff.as_millis()
            );
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }
}

/// Why a statement did not run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// The server could not be reached (or the connection kept breaking) within the bound.
    Unreachable(String),
    /// The server refused it (a type, a constraint, a missing table): doing it again fails.
    Refused(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unreachable(m) | Failure::Refused(m) => f.write_str(m),
        }
    }
}

/// Whether `e` is about the connection (lost, refused, the server going down) rather than
/// the statement.
fn is_connection(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.as_db_error() {
        // Class 08 (connection exception), 57P01–57P03 (shutdown, cannot connect now).
        Some(db) => {
            let code = db.code().code();
            code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
        }
        // No answer from the server: I/O, a timeout, a closed socket.
        None => !matches!(e.to_string().as_str(), s if s.starts_with("error serializing")),
    }
}

/// `e` as one line: the server's message with its detail and hint, or the client's, redacted.
fn describe_error(e: &postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => {
            let mut s = format!("{} ({})", db.message(), db.code().code());
            if let Some(d) = db.detail() {
                s.push_str(&format!("; {d}"));
            }
            if let Some(h) = db.hint() {
                s.push_str(&format!("; hint: {h}"));
            }
            s
        }
        None => {
            let mut s = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(inner) = source {
                s.push_str(&format!(": {inner}"));
                source = inner.source();
            }
            s
        }
    };
    super::url::redact(&text)
}

/// Run a `CREATE TABLE IF NOT EXISTS`: two tasks making it at once may race (one gets a
/// unique violation on the catalog), which is no error.
pub(crate) fn create_table(client: &mut Client, sql: &str) -> Result<(), postgres::Error> {
    match client.batch_execute(sql) {
        Err(e) if matches!(e.code().map(|c| c.code()), Some("23505" | "42P07")) => Ok(()),
        other => other,
    }
}
