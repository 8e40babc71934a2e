//! The `jdbc` sink, `jdbc_lookup` bolt and `jdbc` spout against Debian's PostgreSQL 15,
//! started by each test in a temporary folder on a loopback port (as the `postgres` user when
//! the tests run as root: it refuses root), with password authentication. Tables are read back
//! with `psql`, the independent client: inserts, upserts and batches equal a reference; a
//! lookup caches its answers (a counter the query bumps says how often it ran); the spout
//! reads a table incrementally; a stateful table-to-table copy SIGKILLed at random moments
//! ends equal to its source, no row lost or doubled; an unreachable server is an error at
//! start; the password is never printed.

use super::support::poll_until;
use rand::{Rng, SeedableRng};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BIN: &str = "/usr/lib/postgresql/15/bin";
pub(crate) const PASSWORD: &str = "s3cret-pw";

/// A PostgreSQL server, stopped (and its folder removed) when dropped.
pub(crate) struct Pg {
    dir: tempfile::TempDir,
    child: Child,
    pub(crate) port: u16,
}

/// The command run as the unprivileged `postgres` user when this process is root.
fn as_server_user(program: &str) -> Command {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    if !root {
        return Command::new(program);
    }
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=postgres",
        "--regid=postgres",
        "--init-groups",
        program,
    ]);
    c
}

impl Pg {
    pub(crate) fn start() -> Pg {
        let mut dir = tempfile::tempdir().expect("tempdir");
        let owner = |p: &Path| {
            let status = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "[ $(id -u) != 0 ] || chown -R postgres:postgres '{}'",
                    p.display()
                ))
                .status()
                .expect("chown runs");
            assert!(status.success());
        };
        std::fs::write(dir.path().join("pw"), PASSWORD).expect("writes the password file");
        owner(dir.path());
        let out = as_server_user(&format!("{BIN}/initdb"))
            .args(["-D", "data", "-U", "storm", "--auth=scram-sha-256"])
            .args(["--pwfile=pw", "-E", "UTF8", "--no-sync"])
            .current_dir(dir.path())
            .output()
            .expect("initdb runs (is Debian's postgresql installed?)");
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for _ in 0..5 {
            let port = free_port();
            let child = server(dir.path(), port);
            let mut pg = Pg { dir, child, port };
            if pg.wait_ready() {
                return pg;
            }
            let _ = pg.child.kill();
            let _ = pg.child.wait();
            dir = std::mem::replace(&mut pg.dir, tempfile::tempdir().expect("tempdir"));
        }
        panic!("postgres did not start on a free port");
    }

    /// Stop the server at once (as a crash would), then start it again on the same port and
    /// data once `between` ran (its connections are then gone).
    pub(crate) fn restart(&mut self, between: impl FnOnce()) {
        super::cluster::signal(self.child.id(), "-QUIT");
        let _ = self.child.wait();
        between();
        self.child = server(self.dir.path(), self.port);
        assert!(self.wait_ready(), "postgres did not start again");
    }

    /// Whether the server answers, waiting while it starts (false: it ended, its port taken).
    fn wait_ready(&mut self) -> bool {
        poll_until(
            "postgres to answer",
            Duration::from_secs(60),
            Duration::from_millis(100),
            || {
                if matches!(self.child.try_wait(), Ok(Some(_))) {
                    return Some(false);
                }
                self.try_psql("select 1").is_ok().then_some(true)
            },
        )
    }

    /// The connection string, without the password (it comes from `PGPASSWORD` or config).
    pub(crate) fn url(&self) -> String {
        format!("postgresql://storm@127.0.0.1:{}/postgres", self.port)
    }

    fn try_psql(&self, sql: &str) -> Result<String, String> {
        let out = Command::new("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "storm",
            ])
            .args([
                "-d",
                "postgres",
                "-At",
                "-F",
                "\t",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ])
            .env("PGPASSWORD", PASSWORD)
            .env("PGTZ", "UTC")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        match out.status.success() {
            true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
            false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
        }
    }

    /// Run `sql` with psql; its rows, tab-separated.
    pub(crate) fn psql(&self, sql: &str) -> String {
        self.try_psql(sql)
            .unwrap_or_else(|e| panic!("psql {sql:?} failed: {e}"))
    }

    /// The rows of `sql`, one string each.
    pub(crate) fn rows(&self, sql: &str) -> Vec<String> {
        self.psql(sql).lines().map(String::from).collect()
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        // SIGQUIT: an immediate shutdown, children included.
        super::cluster::signal(self.child.id(), "-QUIT");
        let _ = self.child.wait();
    }
}

/// The server on `port` with its data in `dir`.
fn server(dir: &Path, port: u16) -> Child {
    as_server_user(&format!("{BIN}/postgres"))
        .args(["-D", "data", "-p", &port.to_string(), "-k", "."])
        .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
        .args(["-c", "max_connections=200"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("postgres starts")
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    l.local_addr().expect("an address").port()
}

/// A `storm run` (with `PGPASSWORD` set), its stdout lines gathered, its stderr (when asked
/// with `log`, a `STORM_LOG` filter) given to the caller.
pub(crate) struct Running {
    pub(crate) child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Running {
    pub(crate) fn start(args: &[String], dir: &Path, log: Option<&str>) -> Running {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("storm"));
        cmd.args(args)
            .current_dir(dir)
            .env("STORM_CONF_DIR", dir)
            .env("PGPASSWORD", PASSWORD)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(if log.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        match log {
            Some(l) => cmd.env("STORM_LOG", l),
            None => cmd.env_remove("STORM_LOG"),
        };
        let mut child = cmd.spawn().expect("storm run starts");
        let out = child.stdout.take().expect("stdout piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let into = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                into.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
        Running { child, lines }
    }

    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// SIGINT: the run drains and exits 0.
    pub(crate) fn interrupt(mut self) {
        super::cluster::signal(self.child.id(), "-INT");
        let status = self.child.wait().expect("reaped");
        assert!(status.success(), "{status:?}");
    }

    fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `storm ARGS…` run to its end in `dir` with `PGPASSWORD` set: (status, stdout, stderr).
fn storm(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(assert_cmd::cargo::cargo_bin("storm"))
        .args(args)
        .current_dir(dir)
        .env("STORM_CONF_DIR", dir)
        .env("PGPASSWORD", PASSWORD)
        .env_remove("STORM_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("storm runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("writes");
    p
}

/// Rows inserted in batches and upserted by key, from one CSV file: `events` holds every row
/// once, `latest` the last row of each service (the file's order), typed columns included.
#[test]
fn inserts_and_upserts_in_batches_equal_the_reference() {
    let pg = Pg::start();
    pg.psql(
        "create table events (id bigint, service text, n integer, ratio double precision, ok boolean, note text);
         create table latest (service text primary key, n integer, seen bigint)",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let mut csv = String::new();
    let mut latest = std::collections::BTreeMap::new();
    let mut events = Vec::new();
    for i in 0..1000 {
        let service = format!("svc-{}", i * 7 % 13);
        let (n, ratio, ok) = (i % 97, i as f64 / 8.0, i % 3 == 0);
        let note = if i % 10 == 0 {
            String::new()
        } else {
            format!("note {i}")
        };
        csv.push_str(&format!("{i},{service},{n},{ratio},{ok},{note}\n"));
        latest.insert(service.clone(), format!("{service}\t{n}\t{i}"));
        let shown = if note.is_empty() { "" } else { note.as_str() };
        events.push(format!(
            "{i}\t{service}\t{n}\t{ratio}\t{}\t{shown}",
            if ok { "t" } else { "f" }
        ));
    }
    write(dir.path(), "in.csv", &csv);
    let yaml = format!(
        "name: sink
spouts:
  - {{id: in, type: file, args: {{path: in.csv, format: csv, columns: [id, service, n, ratio, ok, note]}}}}
bolts:
  - {{id: all, type: jdbc, parallelism: 2, args: {{url: \"{u}\", table: events, columns: [id, service, n, ratio, ok, note], batch: 64}}}}
  - {{id: last, type: jdbc, args: {{url: \"{u}\", table: latest, columns: [service, n, {{seen: id}}], on_conflict: [service], batch: {{rows: 50, timeout: 20ms}}}}}}
streams:
  - {{from: in, to: all}}
  - {{from: in, to: last, grouping: global}}
",
        u = pg.url()
    );
    write(dir.path(), "t.yaml", &yaml);
    let (ok, _, err) = storm(dir.path(), &["run", "t.yaml"]);
    assert!(ok, "storm run failed: {err}");
    let got =
        pg.rows("select id, service, n, ratio, ok, coalesce(note, '') from events order by id");
    assert_eq!(got, events);
    let got = pg.rows("select service, n, seen from latest order by service");
    assert_eq!(got, latest.into_values().collect::<Vec<_>>());
}

/// One tuple per row of the query's answer (none for a user without rows), answers cached:
/// the query's function counts its calls, once per distinct user with the cache and once
/// per tuple without it.
#[test]
fn a_lookup_emits_one_tuple_per_row_and_caches_its_answers() {
    let pg = Pg::start();
    pg.psql(
        "create table users (id integer primary key, name text);
         create table roles (user_id integer, role text);
         create table calls (n integer); insert into calls values (0);
         insert into users values (1, 'ann'), (2, 'bob'), (4, 'dee');
         insert into roles values (1, 'admin'), (1, 'dev'), (2, 'ops');
         create function user_roles(uid integer) returns table(name text, role text)
           language plpgsql volatile as $$
           begin
             update calls set n = n + 1;
             return query select u.name, r.role from users u join roles r on r.user_id = u.id
               where u.id = uid order by r.role;
           end $$",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let users = [1, 2, 3, 1, 2, 1, 4, 3, 1, 2, 2, 1];
    let input: String = users
        .iter()
        .enumerate()
        .map(|(i, u)| format!("{u},{i}\n"))
        .collect();
    write(dir.path(), "in.csv", &input);
    let roles = |u: i32| -> Vec<(&str, &str)> {
        match u {
            1 => vec![("ann", "admin"), ("ann", "dev")],
            2 => vec![("bob", "ops")],
            _ => vec![],
        }
    };
    let mut expected: Vec<String> = users
        .iter()
        .enumerate()
        .flat_map(|(i, u)| {
            roles(*u)
                .into_iter()
                .map(move |(n, r)| format!("{u}\t{i}\t{n}\t{r}"))
        })
        .collect();
    expected.sort();
    for (cache, calls) in [("cache: {size: 100, ttl: 1h}, ", 4), ("", users.len())] {
        pg.psql("update calls set n = 0");
        let yaml = format!(
            "name: lookup
spouts:
  - {{id: in, type: file, args: {{path: in.csv, format: csv, columns: [user, seq]}}}}
bolts:
  - {{id: roles, type: jdbc_lookup, args: {{url: \"{u}\", {cache}query: \"select name, role from user_roles($1)\", params: [user], select: [name, role]}}}}
  - {{id: out, type: stdout}}
streams:
  - {{from: in, to: roles}}
  - {{from: roles, to: out}}
",
            u = pg.url()
        );
        write(dir.path(), "t.yaml", &yaml);
        let (ok, out, err) = storm(dir.path(), &["run", "t.yaml"]);
        assert!(ok, "storm run failed: {err}");
        let mut got: Vec<String> = out.lines().map(String::from).collect();
        got.sort();
        assert_eq!(got, expected, "{cache}");
        assert_eq!(
            pg.psql("select n from calls").trim(),
            calls.to_string(),
            "{cache}"
        );
    }
}

/// The spout reads the rows already there, then those inserted while it runs, each once.
#[test]
fn the_spout_reads_a_table_incrementally() {
    let pg = Pg::start();
    pg.psql(
        "create table src (id bigserial primary key, v text, at timestamptz default '2026-01-02T03:04:05Z');
         insert into src (v) select 'a' || g from generate_series(1, 25) g",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = format!(
        "name: read
spouts:
  - {{id: src, type: jdbc, args: {{url: \"{u}\", table: src, column: id, columns: [v, at], poll: 20ms, batch: 10, start: 5}}}}
bolts:
  - {{id: out, type: stdout}}
streams:
  - {{from: src, to: out}}
",
        u = pg.url()
    );
    write(dir.path(), "t.yaml", &yaml);
    let args = vec!["run".to_string(), "t.yaml".to_string()];
    let run = Running::start(&args, dir.path(), None);
    let line = |i: i32| {
        format!(
            "{}{i}\t2026-01-02T03:04:05Z",
            if i <= 25 { "a" } else { "b" }
        )
    };
    let first: Vec<String> = (6..=25).map(line).collect();
    poll_until(
        "the rows after `start`",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || (run.lines().len() >= first.len()).then_some(()),
    );
    pg.psql("insert into src (v) select 'b' || g from generate_series(26, 40) g");
    let all: Vec<String> = (6..=40).map(line).collect();
    poll_until(
        "the rows inserted later",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || (run.lines().len() >= all.len()).then_some(()),
    );
    let got = run.lines();
    run.interrupt();
    assert_eq!(got, all);
}

/// A stateful copy of a table (the `jdbc` spout into a `jdbc` sink of plain inserts, no key)
/// SIGKILLed at random moments while rows keep coming, and restarted on its state dir, ends
/// with exactly the source's rows: none lost, none written twice.
#[test]
fn a_stateful_copy_is_exact_through_sigkills() {
    let pg = Pg::start();
    pg.psql(
        "create table src (id bigserial primary key, v text not null);
         create table dst (id bigint, v text)",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = format!(
        "name: copy
spouts:
  - {{id: src, type: jdbc, args: {{url: \"{u}\", table: src, column: id, columns: [id, v], poll: 20ms, batch: 40}}}}
bolts:
  - {{id: dst, type: jdbc, parallelism: 2, stateful: true, args: {{url: \"{u}\", table: dst, columns: [id, v], batch: 16}}}}
streams:
  - {{from: src, to: dst, grouping: shuffle}}
",
        u = pg.url()
    );
    write(dir.path(), "t.yaml", &yaml);
    let args: Vec<String> = [
        "run",
        "t.yaml",
        "-c",
        "topology.state.checkpoint.interval.ms=100",
        "--state-dir",
        "state",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(34);
    let insert = |rng: &mut rand::rngs::StdRng, trial: usize| {
        let n = rng.random_range(20..200);
        pg.psql(&format!(
            "insert into src (v) select 't{trial}-' || g from generate_series(1, {n}) g"
        ));
    };
    let log = "storm::components::jdbc=debug,storm::runtime::checkpoint=debug";
    let mut moments = [0; 3];
    let (mut writes, mut skips) = (0, 0);
    for trial in 0..12 {
        insert(&mut rng, trial);
        let mut run = Running::start(&args, dir.path(), Some(log));
        let stderr = run.child.stderr.take().expect("stderr piped");
        let mut lines = BufReader::new(stderr).lines().map_while(Result::ok);
        // 0: a moment after the start; 1: after a checkpoint's commit; 2: after a
        // checkpoint's rows were written (the `skip`-th such line).
        let (kind, skip) = (rng.random_range(0..3), rng.random_range(0..4));
        let mut seen = 0;
        let mut delay = Duration::from_millis(rng.random_range(0..300));
        for line in lines.by_ref() {
            let written = line.contains("jdbc checkpoint rows written");
            writes += usize::from(written);
            skips += usize::from(line.contains("there already, skipped"));
            if written && rng.random_range(0..4) == 0 {
                insert(&mut rng, 100 + trial);
            }
            let hit = match kind {
                0 => true,
                1 => line.contains("checkpoint committed"),
                _ => written,
            };
            if hit {
                seen += 1;
                if seen > skip {
                    delay = Duration::from_millis(rng.random_range(0..5));
                    break;
                }
            }
        }
        moments[kind] += 1;
        std::thread::sleep(delay);
        // Keep reading stderr so the run never blocks on a full pipe before the kill.
        std::thread::spawn(move || lines.for_each(drop));
        run.kill();
    }
    eprintln!("moments {moments:?}, checkpoint writes seen {writes}, skipped {skips}");
    assert!(
        writes > 0,
        "no checkpoint's rows were written before a kill"
    );
    insert(&mut rng, 999);
    let total: usize = pg
        .psql("select count(*) from src")
        .trim()
        .parse()
        .expect("a count");
    let run = Running::start(&args, dir.path(), None);
    poll_until(
        "every row copied",
        Duration::from_secs(120),
        Duration::from_millis(100),
        || {
            let n: usize = pg.psql("select count(*) from dst").trim().parse().ok()?;
            (n >= total).then_some(())
        },
    );
    run.interrupt();
    let doubled = pg.rows("select id, v, count(*) from dst group by id, v having count(*) > 1");
    assert!(
        doubled.is_empty(),
        "rows written twice (moments {moments:?}): {doubled:?}"
    );
    let lost = pg.rows("select id, v from src except select id, v from dst");
    assert!(lost.is_empty(), "rows lost (moments {moments:?}): {lost:?}");
    let extra = pg.rows("select id, v from dst except select id, v from src");
    assert!(extra.is_empty(), "rows not in the source: {extra:?}");
    assert_eq!(
        pg.psql("select count(*) from dst").trim(),
        total.to_string()
    );
    let markers = pg.rows("select task from storm_commits where topology = 'copy' order by task");
    assert_eq!(markers, vec!["0", "1"]);
}

/// A server that does not answer is an error when the run starts, naming where it tried
/// without the password; `storm config` hides passwords; a row that does not fit its column
/// is dropped with a warning naming the field and the column.
#[test]
fn unreachable_servers_bad_values_and_passwords() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dead = free_port();
    let yaml = format!(
        "name: dead
spouts:
  - {{id: in, type: generate, args: {{count: 3, fields: [n]}}}}
bolts:
  - {{id: out, type: jdbc, args: {{url: \"postgresql://storm:{PASSWORD}@127.0.0.1:{dead}/postgres\", table: t, columns: [n]}}}}
streams:
  - {{from: in, to: out}}
"
    );
    write(dir.path(), "t.yaml", &yaml);
    let (ok, out, err) = storm(dir.path(), &["run", "t.yaml"]);
    assert!(!ok, "a run without its server succeeded: {out}");
    assert!(err.contains("cannot connect"), "{err}");
    assert!(
        err.contains(&format!("postgresql://storm@127.0.0.1:{dead}/postgres")),
        "{err}"
    );
    assert!(!err.contains(PASSWORD), "the password was printed: {err}");
    let url = format!("my.url=postgresql://storm:{PASSWORD}@db:5432/x");
    let (ok, out, err) = storm(
        dir.path(),
        &["config", "-c", "jdbc.password=hush", "-c", &url],
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("jdbc.password") && !out.contains("hush"),
        "{out}"
    );
    assert!(
        out.contains("postgresql://storm:<hidden>@db:5432/x") && !out.contains(PASSWORD),
        "{out}"
    );

    let pg = Pg::start();
    pg.psql("create table nums (n integer, label text)");
    write(dir.path(), "in.csv", "1,a\nabc,b\n3,c\n");
    let yaml = format!(
        "name: bad
spouts:
  - {{id: in, type: file, args: {{path: in.csv, format: csv, columns: [value, label]}}}}
bolts:
  - {{id: out, type: jdbc, args: {{url: \"{u}\", table: nums, columns: [{{n: value}}, label]}}}}
streams:
  - {{from: in, to: out}}
",
        u = pg.url()
    );
    write(dir.path(), "t.yaml", &yaml);
    let (ok, _, err) = storm(dir.path(), &["run", "t.yaml"]);
    assert!(ok, "{err}");
    assert!(
        err.contains("field `value` (column `n` of `nums`): \"abc\" is a string, not an integer"),
        "{err}"
    );
    assert_eq!(
        pg.rows("select n, label from nums order by n"),
        ["1\ta", "3\tc"]
    );
}

/// `storm validate` checks the arguments offline, each error located: a column naming no
/// field (with a did-you-mean), `on_conflict` outside `columns`, `params` against the
/// query's `$n`, a connection string that is none (its password not repeated), a sink's
/// argument on a spout.
#[test]
fn jdbc_arguments_are_checked_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = "name: bad
spouts:
  - {id: in, type: generate, args: {count: 3, fields: [service, count]}}
  - {id: rows, type: jdbc, args: {url: 'postgresql://u@h/db', table: t, column: id, columns: [id], on_conflict: [id]}}
bolts:
  - {id: a, type: jdbc, args: {url: 'postgresql://u@h/db', table: t, columns: [servce, count], on_conflict: [svc]}}
  - {id: b, type: jdbc_lookup, args: {url: 'postgresql://u@h/db', query: 'select x from t where a = $1 and b = $2', params: [service], select: [x]}}
  - {id: c, type: jdbc, args: {url: 'postgresql://u:hush@h:port/db', table: t, columns: [count]}}
  - {id: d, type: discard}
streams:
  - {from: in, to: a}
  - {from: in, to: b}
  - {from: in, to: c}
  - {from: rows, to: d}
";
    write(dir.path(), "t.yaml", yaml);
    let (ok, _, err) = storm(dir.path(), &["validate", "t.yaml"]);
    assert!(!ok);
    for want in [
        "does not declare field `servce`",
        "did you mean `service`?",
        "`on_conflict` names `svc`, which is not one of `columns`",
        "`query` takes 2 parameter(s)",
        "`url` is not a PostgreSQL connection string",
        "`on_conflict` is an argument of a jdbc sink",
        "t.yaml:6:",
    ] {
        assert!(err.contains(want), "no `{want}` in: {err}");
    }
    // The DSL's components are checked the same way.
    let dsl = "generate(count=3, fields=[service]) | jdbc(url=\"postgresql://u@h/db\", table=t, columns=[servce], on_conflict=[x])";
    let (ok, _, dsl_err) = storm(dir.path(), &["validate", "-e", dsl]);
    assert!(!ok);
    assert!(dsl_err.contains("did you mean `service`?"), "{dsl_err}");
    assert!(dsl_err.contains("`on_conflict` names `x`"), "{dsl_err}");
    // The messages never repeat a password (the snippet quotes the file as written).
    let messages: Vec<&str> = err.lines().filter(|l| l.contains("error:")).collect();
    assert!(messages.iter().all(|l| !l.contains("hush")), "{err}");
}

/// A server that goes away while the run goes on: the batch waits, retried with back-off,
/// and is written once the server is back; every row is in the table once.
#[test]
fn a_lost_server_is_waited_for_and_its_batch_written_once_it_is_back() {
    let mut pg = Pg::start();
    pg.psql("create table lines (line text)");
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("in.log");
    let first: Vec<String> = (0..50).map(|i| format!("before {i}")).collect();
    std::fs::write(&log, first.join("\n") + "\n").expect("writes");
    let yaml = format!(
        "name: wait
spouts:
  - {{id: in, type: file, args: {{path: in.log, follow: true}}}}
bolts:
  - {{id: out, type: jdbc, args: {{url: \"{u}\", table: lines, columns: [line], batch: {{rows: 10, timeout: 10ms}}, retry: 2m}}}}
streams:
  - {{from: in, to: out}}
",
        u = pg.url()
    );
    write(dir.path(), "t.yaml", &yaml);
    let args = vec!["run".to_string(), "t.yaml".to_string()];
    let mut run = Running::start(&args, dir.path(), Some("storm::components::jdbc=warn"));
    let warned = Arc::new(Mutex::new(String::new()));
    let into = warned.clone();
    let stderr = run.child.stderr.take().expect("stderr piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            into.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_str(&(line + "\n"));
        }
    });
    let count = |pg: &Pg| -> usize {
        pg.psql("select count(*) from lines")
            .trim()
            .parse()
            .unwrap_or(0)
    };
    poll_until(
        "the first lines",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || (count(&pg) == first.len()).then_some(()),
    );
    let later: Vec<String> = (0..30).map(|i| format!("during {i}")).collect();
    pg.restart(|| {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .expect("opens");
        std::io::Write::write_all(&mut f, (later.join("\n") + "\n").as_bytes()).expect("appends");
        // The run notices the server is gone: it says it tries again, and waits.
        poll_until(
            "the run to retry",
            Duration::from_secs(60),
            Duration::from_millis(50),
            || {
                let text = warned.lock().unwrap_or_else(|e| e.into_inner()).clone();
                text.contains("trying again").then_some(())
            },
        );
    });
    let total = first.len() + later.len();
    poll_until(
        "the lines written while the server was away",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || (count(&pg) >= total).then_some(()),
    );
    run.interrupt();
    let text = warned.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(!text.contains(PASSWORD), "{text}");
    let mut want: Vec<String> = first.iter().chain(&later).cloned().collect();
    want.sort();
    assert_eq!(pg.rows("select line from lines order by line"), want);
}
