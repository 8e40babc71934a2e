//! The `redis` bolt and spout against Debian's `redis-server`, started by each test on its
//! own port and directory (killed when the test ends); what storm wrote is read back with
//! `redis-cli`, the independent client. Lookups add fields, `filter` keeps hits, the cache
//! saves round trips; every write command reads back; the stream spout under `chaos`
//! failures loses no entry and leaves none pending, and a dead consumer's entries are
//! claimed; a stateful INCRBY/HINCRBY topology SIGKILLed at random moments ends equal to a
//! reference; an unreachable server is an error at start; passwords are never printed.

use super::support::poll_until;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` of this test: its port and directory; killed when dropped.
pub(crate) struct Server {
    child: Child,
    pub(crate) port: u16,
    dir: tempfile::TempDir,
    extra: Vec<String>,
}

/// A port nobody listens on now (bound to port 0 and released).
pub(crate) fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("binds port 0");
    l.local_addr().expect("an address").port()
}

/// `redis-server` on `port` with its files in `dir`, once it accepts connections; `None` when
/// it ended instead (the port was taken).
fn spawn(port: u16, dir: &Path, extra: &[String]) -> Option<Child> {
    let mut child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
        .arg("--dir")
        .arg(dir)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server starts (Debian's redis-server package)");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return None;
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(child);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

impl Server {
    pub(crate) fn start() -> Server {
        Self::start_with(&[])
    }

    /// A server with extra configuration (`--requirepass x`); a port taken meanwhile by
    /// someone else is tried again with another.
    pub(crate) fn start_with(extra: &[&str]) -> Server {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        for _ in 0..5 {
            let dir = tempfile::tempdir().expect("tempdir");
            let port = free_port();
            if let Some(child) = spawn(port, dir.path(), &extra) {
                return Server {
                    child,
                    port,
                    dir,
                    extra,
                };
            }
        }
        panic!("redis-server did not start");
    }

    /// SIGKILL the server.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Start it again on its port and directory.
    fn restart(&mut self) {
        self.child = spawn(self.port, self.dir.path(), &self.extra).expect("redis-server restarts");
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `redis-cli` with `args`, its output (`--raw`: values as they are, one a line).
    pub(crate) fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string(), "--raw"])
            .args(args)
            .output()
            .expect("redis-cli runs");
        assert!(
            out.status.success(),
            "redis-cli {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }

    /// `redis-cli` reading commands from `input` (one a line), for many at once.
    pub(crate) fn pipe(&self, input: &str) {
        let mut child = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-cli runs");
        let mut stdin = child.stdin.take().expect("stdin piped");
        stdin.write_all(input.as_bytes()).expect("writes");
        drop(stdin);
        assert!(child.wait().expect("ends").success());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn storm() -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("storm"));
    c.env_remove("STORM_LOG").env_remove("REDIS_URL");
    c
}

/// `storm run` of `yaml` (written into `dir`) with `input` on stdin.
fn run(dir: &Path, yaml: &str, input: &str, extra: &[&str]) -> Output {
    let file = dir.join("topology.yaml");
    std::fs::write(&file, yaml).expect("writes the topology");
    let mut child = storm()
        .arg("run")
        .arg(&file)
        .args(extra)
        .env("STORM_CONF_DIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("storm runs");
    let mut stdin = child.stdin.take().expect("stdin piped");
    stdin.write_all(input.as_bytes()).expect("writes");
    drop(stdin);
    child.wait_with_output().expect("storm ends")
}

fn ok(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "storm failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sorted(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(String::from).collect();
    v.sort();
    v
}

/// Calls of one command the server counted (`INFO commandstats`).
fn calls(server: &Server, command: &str) -> u64 {
    let info = server.cli(&["INFO", "commandstats"]);
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

/// `hget`, `hmget`, `get` and `sismember` add their answers; `filter` keeps only hits.
#[test]
fn lookups_add_fields_and_filter_keeps_hits() {
    let server = Server::start();
    server.pipe("HSET user:ann country fr plan gold\nHSET user:bob country de\nSET age:ann 41\nSADD vip ann\n");
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = format!(
        "name: lookups
spouts:
  - {{id: in, type: stdin, args: {{format: csv, columns: [user]}}}}
bolts:
  - {{id: country, type: redis, args: {{url: \"{u}\", command: hget, key: \"user:{{user}}\", field: country, as: country}}}}
  - {{id: both, type: redis, args: {{url: \"{u}\", command: hmget, key: \"user:{{user}}\", field: [country, plan], as: [c, p]}}}}
  - {{id: age, type: redis, args: {{url: \"{u}\", command: get, key: \"age:{{user}}\", as: age}}}}
  - {{id: vip, type: redis, args: {{url: \"{u}\", command: sismember, key: vip, field: \"{{user}}\", filter: true}}}}
  - {{id: print, type: stdout}}
streams:
  - {{from: in, to: country}}
  - {{from: country, to: both}}
  - {{from: both, to: age}}
  - {{from: age, to: vip}}
  - {{from: vip, to: print}}
",
        u = server.url()
    );
    let out = ok(&run(dir.path(), &yaml, "ann\nbob\ncid\nann\n", &[]));
    assert_eq!(
        sorted(&out),
        ["ann\tfr\tfr\tgold\t41", "ann\tfr\tfr\tgold\t41"]
    );
    // Without the filter, every tuple passes, misses as empty (null) fields.
    let yaml = yaml.replace("filter: true", "as: vip");
    let out = ok(&run(dir.path(), &yaml, "ann\nbob\ncid\n", &[]));
    assert_eq!(
        sorted(&out),
        [
            "ann\tfr\tfr\tgold\t41\ttrue",
            "bob\tde\tde\t\t\tfalse",
            "cid\t\t\t\t\tfalse"
        ]
    );
}

/// 3,000 lookups of 3 keys with a cache ask the server 3 times; without one, more.
#[test]
fn the_lookup_cache_saves_round_trips() {
    let server = Server::start();
    server.pipe("SET k:a 1\nSET k:b 2\nSET k:c 3\n");
    let dir = tempfile::tempdir().expect("tempdir");
    let input: String = (0..3000)
        .map(|i| format!("{}\n", ["a", "b", "c"][i % 3]))
        .collect();
    let yaml = |cache: &str| {
        format!(
            "name: cached
spouts: [{{id: in, type: stdin}}]
bolts:
  - {{id: get, type: redis, args: {{url: \"{}\", command: get, key: \"k:{{line}}\", as: v, {cache}}}}}
  - {{id: print, type: stdout}}
streams: [{{from: in, to: get}}, {{from: get, to: print}}]
",
            server.url()
        )
    };
    let out = ok(&run(dir.path(), &yaml("ttl: 1h"), &input, &[]));
    let total: i64 = out
        .lines()
        .map(|l| {
            l.split('\t')
                .nth(1)
                .and_then(|n| n.parse::<i64>().ok())
                .unwrap_or(0)
        })
        .sum();
    assert_eq!(total, 6000, "each line got its value");
    assert_eq!(calls(&server, "get"), 3, "one GET per key, then the cache");
    server.cli(&["CONFIG", "RESETSTAT"]);
    ok(&run(dir.path(), &yaml("cache: 0"), &input, &[]));
    assert!(
        calls(&server, "get") > 3,
        "without a cache every batch asks"
    );
}

/// Every write command, read back with `redis-cli`; `ttl` sets an expiry.
#[test]
fn each_write_command_reads_back() {
    let server = Server::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let u = server.url();
    let bolts = [
        ("set", "command: set, key: \"s:{user}\", value: n, ttl: 1h"),
        ("hset", "command: hset, key: h, field: \"{user}\", value: n"),
        ("incrby", "command: incrby, key: \"i:{user}\", value: n"),
        (
            "hincrby",
            "command: hincrby, key: hi, field: \"{user}\", value: n",
        ),
        (
            "zincrby",
            "command: zincrby, key: z, field: \"{user}\", value: n",
        ),
        ("sadd", "command: sadd, key: members, field: \"{user}\""),
        ("xadd", "command: xadd, key: events"),
        ("publish", "command: publish, key: chan, value: user"),
    ];
    let mut yaml = String::from("name: writes\nspouts:\n  - {id: in, type: stdin, args: {format: csv, columns: [user, n]}}\nbolts:\n");
    let mut streams = String::from("streams:\n");
    for (id, args) in bolts {
        yaml.push_str(&format!(
            "  - {{id: {id}, type: redis, args: {{url: \"{u}\", {args}}}}}\n"
        ));
        streams.push_str(&format!("  - {{from: in, to: {id}}}\n"));
    }
    yaml.push_str(&streams);
    // A subscriber, to see what PUBLISH sends.
    let mut sub = Command::new("redis-cli")
        .args(["-p", &server.port.to_string(), "--raw", "SUBSCRIBE", "chan"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli subscribes");
    let sub_out = sub.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(sub_out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    poll_until(
        "the subscription",
        Duration::from_secs(10),
        Duration::from_millis(20),
        || (server.cli(&["PUBSUB", "NUMSUB", "chan"]).lines().nth(1) == Some("1")).then_some(()),
    );
    ok(&run(dir.path(), &yaml, "ann,2\nbob,3\nann,5\n", &[]));
    assert_eq!(server.cli(&["GET", "s:ann"]), "5");
    let pttl: i64 = server.cli(&["PTTL", "s:ann"]).parse().expect("a ttl");
    assert!(pttl > 0 && pttl <= 3_600_000, "{pttl}");
    assert_eq!(server.cli(&["HGET", "h", "bob"]), "3");
    assert_eq!(server.cli(&["GET", "i:ann"]), "7");
    assert_eq!(
        server
            .cli(&["HGETALL", "hi"])
            .lines()
            .collect::<Vec<_>>()
            .len(),
        4
    );
    assert_eq!(server.cli(&["HGET", "hi", "ann"]), "7");
    assert_eq!(server.cli(&["ZSCORE", "z", "ann"]), "7");
    assert_eq!(
        sorted(&server.cli(&["SMEMBERS", "members"])),
        ["ann", "bob"]
    );
    assert_eq!(server.cli(&["XLEN", "events"]), "3");
    let first = server.cli(&["XRANGE", "events", "-", "+", "COUNT", "1"]);
    assert!(first.contains("user\nann\nn\n2"), "{first}");
    // `subscribe chan 1`, then `message chan PAYLOAD` per message.
    let mut lines = Vec::new();
    while lines.len() < 12 {
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(l) => lines.push(l),
            Err(_) => break,
        }
    }
    let published: Vec<String> = lines.iter().skip(3).skip(2).step_by(3).cloned().collect();
    let _ = sub.kill();
    let _ = sub.wait();
    assert_eq!(sorted(&published.join("\n")), ["ann", "ann", "bob"]);
}

/// A `storm run` in the background, its stderr read as it comes.
struct Running {
    child: Child,
    stderr: std::sync::mpsc::Receiver<String>,
}

impl Running {
    fn start(args: &[String], conf: &Path, log: &str) -> Running {
        let mut child = storm()
            .args(args)
            .env("STORM_CONF_DIR", conf)
            .env("STORM_LOG", log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("storm run starts");
        let err = child.stderr.take().expect("stderr piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Running { child, stderr: rx }
    }

    /// SIGINT: the run drains and ends well.
    fn interrupt(mut self) {
        crate::cluster::signal(self.child.id(), "-INT");
        let status = self.child.wait().expect("reaped");
        let said: Vec<String> = self.stderr.try_iter().collect();
        assert!(status.success(), "{status:?}: {}", said.join("\n"));
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

fn run_args(dir: &Path, yaml: &str) -> Vec<String> {
    let file = dir.join("topology.yaml");
    std::fs::write(&file, yaml).expect("writes the topology");
    vec!["run".into(), file.display().to_string()]
}

/// Entries pending in group `g` of stream `s`.
fn pending(server: &Server, s: &str, g: &str) -> u64 {
    let out = server.cli(&["XPENDING", s, g]);
    out.lines()
        .next()
        .and_then(|l| l.parse().ok())
        .unwrap_or(u64::MAX)
}

fn add_entries(server: &Server, stream: &str, from: usize, n: usize) {
    let cmds: String = (from..from + n)
        .map(|i| format!("XADD {stream} * n {i}\n"))
        .collect();
    server.pipe(&cmds);
}

/// 2,000 entries through `chaos` (a fifth failed, one in twenty dropped unacked): every entry
/// reaches the sink, and once it has, none is left pending in the group.
#[test]
fn the_stream_spout_under_chaos_loses_nothing_and_leaves_nothing_pending() {
    let server = Server::start();
    add_entries(&server, "in", 0, 2000);
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = format!(
        "name: streamed
config: {{topology.message.timeout.secs: 2}}
spouts:
  - {{id: in, type: redis, parallelism: 2, args: {{url: \"{u}\", stream: in, group: g, claim_after: 30s, fields: [n, redis_id]}}}}
bolts:
  - {{id: chaos, type: chaos, args: {{fail: 0.2, drop: 0.05, seed: 7}}}}
  - {{id: seen, type: redis, args: {{url: \"{u}\", command: sadd, key: seen, field: \"{{n}}\"}}}}
streams:
  - {{from: in, to: chaos}}
  - {{from: chaos, to: seen}}
",
        u = server.url()
    );
    let run = Running::start(&run_args(dir.path(), &yaml), dir.path(), "warn");
    poll_until(
        "every entry seen",
        Duration::from_secs(120),
        Duration::from_millis(100),
        || (server.cli(&["SCARD", "seen"]) == "2000").then_some(()),
    );
    // Entries added while it runs are read too.
    add_entries(&server, "in", 2000, 100);
    poll_until(
        "nothing pending",
        Duration::from_secs(60),
        Duration::from_millis(100),
        || {
            (server.cli(&["SCARD", "seen"]) == "2100" && pending(&server, "in", "g") == 0)
                .then_some(())
        },
    );
    run.interrupt();
    assert_eq!(pending(&server, "in", "g"), 0);
    let consumers = server.cli(&["XINFO", "CONSUMERS", "in", "g"]);
    assert!(
        consumers.contains("streamed-in-0") && consumers.contains("streamed-in-1"),
        "{consumers}"
    );
}

/// A consumer SIGKILLed with entries pending: a run under another consumer name claims them
/// after `claim_after`, and every entry is processed, none left pending.
#[test]
fn a_dead_consumers_entries_are_claimed() {
    let server = Server::start();
    add_entries(&server, "in", 0, 600);
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = |consumer: &str| {
        format!(
            "name: claimed
config: {{topology.max.spout.pending: 5}}
spouts:
  - {{id: in, type: redis, args: {{url: \"{u}\", stream: in, group: g, consumer: {consumer}, claim_after: 1s, fields: [n]}}}}
bolts:
  - {{id: slow, type: chaos, args: {{delay: 2ms}}}}
  - {{id: seen, type: redis, args: {{url: \"{u}\", command: sadd, key: seen, field: \"{{n}}\"}}}}
streams: [{{from: in, to: slow}}, {{from: slow, to: seen}}]
",
            u = server.url()
        )
    };
    let first = Running::start(&run_args(dir.path(), &yaml("a")), dir.path(), "warn");
    poll_until(
        "a first entry",
        Duration::from_secs(30),
        Duration::from_millis(10),
        || (server.cli(&["SCARD", "seen"]) != "0").then_some(()),
    );
    drop(first); // SIGKILL
    let left = pending(&server, "in", "g");
    assert!(left > 0, "the killed consumer left entries pending");
    let second = Running::start(&run_args(dir.path(), &yaml("b")), dir.path(), "info");
    poll_until(
        "every entry, none pending",
        Duration::from_secs(60),
        Duration::from_millis(100),
        || {
            (server.cli(&["SCARD", "seen"]) == "600" && pending(&server, "in", "g") == 0)
                .then_some(())
        },
    );
    let said: Vec<String> = second.stderr.try_iter().collect();
    assert!(
        said.iter().any(|l| l.contains("claimed")),
        "{}",
        said.join("\n")
    );
    second.interrupt();
}

const WORDS: &[&str] = &["apple", "pear", "fig", "plum", "kiwi", "lime", "date"];

/// `n` random `word<TAB>amount` lines, added into `total` and `per`.
fn lines(
    rng: &mut rand::rngs::StdRng,
    n: usize,
    total: &mut i64,
    per: &mut BTreeMap<String, i64>,
) -> String {
    let mut out = String::new();
    for _ in 0..n {
        let w = WORDS[rng.random_range(0..WORDS.len())];
        let k: i64 = rng.random_range(1..10);
        *total += k;
        *per.entry(w.to_string()).or_insert(0) += k;
        out.push_str(&format!("{w}\t{k}\n"));
    }
    out
}

/// A stateful INCRBY and HINCRBY topology, its input file growing, SIGKILLed at random moments
/// (12 trials: at a random delay, just after a checkpoint committed, or just after a Redis
/// transaction) and restarted on its state dir: the totals in Redis equal the reference.
#[test]
fn stateful_increments_are_exact_through_sigkills() {
    let server = Server::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in.tsv");
    let state = dir.path().join("state");
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let (mut total, mut per) = (0i64, BTreeMap::new());
    let yaml = format!(
        "name: exact
config:
  topology.state.checkpoint.interval.ms: 100
  topology.max.spout.pending: 20
spouts:
  - {{id: in, type: file, args: {{path: in.tsv, format: tsv, columns: [w, k]}}}}
bolts:
  - {{id: total, type: redis, stateful: true, args: {{url: \"{u}\", command: incrby, key: total, value: k}}}}
  - {{id: per, type: redis, stateful: true, parallelism: 2, args: {{url: \"{u}\", command: hincrby, key: per, field: \"{{w}}\", value: k}}}}
streams:
  - {{from: in, to: total}}
  - {{from: in, to: per, grouping: {{type: fields, args: [w]}}}}
",
        u = server.url()
    );
    let mut args = run_args(dir.path(), &yaml);
    args.extend(["--state-dir".into(), state.display().to_string()]);
    let (mut killed, mut rewritten) = (0, 0);
    for trial in 0..12 {
        let n = rng.random_range(500..3000);
        let more = lines(&mut rng, n, &mut total, &mut per);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&input)
            .expect("opens");
        f.write_all(more.as_bytes()).expect("appends");
        drop(f);
        let (was_running, again) = run_and_kill(&args, dir.path(), &mut rng);
        killed += usize::from(was_running);
        rewritten += again;
        eprintln!("trial {trial}: killed while running: {was_running}");
    }
    eprintln!("runs killed while running: {killed}; checkpoints written again: {rewritten}");
    assert!(
        killed >= 6,
        "only {killed} of 12 runs were killed while running"
    );
    // The last run reads the rest to the end.
    let more = lines(&mut rng, 200, &mut total, &mut per);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&input)
        .expect("opens");
    f.write_all(more.as_bytes()).expect("appends");
    drop(f);
    let out = storm()
        .args(&args)
        .env("STORM_CONF_DIR", dir.path())
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.cli(&["GET", "total"]), total.to_string());
    let got: BTreeMap<String, i64> = server
        .cli(&["HGETALL", "per"])
        .lines()
        .collect::<Vec<_>>()
        .chunks(2)
        .map(|c| (c[0].to_string(), c[1].parse().expect("a number")))
        .collect();
    assert_eq!(got, per);
}

/// Start `storm args` and SIGKILL it at a random moment: a random delay after the start, or
/// just after the `skip`-th checkpoint commit or Redis transaction. Whether it was still
/// running then, and how many checkpoints it wrote again from its state.
fn run_and_kill(args: &[String], dir: &Path, rng: &mut rand::rngs::StdRng) -> (bool, usize) {
    let log = "storm::components::redis=debug,storm::runtime::checkpoint=debug";
    let mut run = Running::start(args, dir, log);
    let (kind, skip) = (rng.random_range(0..3), rng.random_range(0..4));
    let delay = Duration::from_millis(rng.random_range(0..300));
    let started = Instant::now();
    let (mut seen, mut rewritten) = (0, 0);
    let deadline = started + Duration::from_secs(60);
    loop {
        assert!(
            Instant::now() < deadline,
            "no moment to kill came within 60 s"
        );
        let line = match run.stderr.recv_timeout(Duration::from_millis(5)) {
            Ok(l) => Some(l),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return (false, rewritten),
        };
        if let Some(l) = &line {
            rewritten += usize::from(l.contains("written again"));
        }
        let hit = match (kind, &line) {
            (0, _) => started.elapsed() >= delay,
            (1, Some(l)) => l.contains("checkpoint committed"),
            (2, Some(l)) => l.contains("redis transaction committed"),
            _ => false,
        };
        seen += usize::from(hit && kind != 0);
        if (kind == 0 && hit) || (kind != 0 && seen > skip) {
            let running = matches!(run.child.try_wait(), Ok(None));
            return (running, rewritten); // dropped: SIGKILL
        }
    }
}

/// A server that does not answer ends the run at start, naming it, its password hidden.
#[test]
fn an_unreachable_server_is_an_error_at_start_without_its_password() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("redis://:hunter2@127.0.0.1:{}", free_port());
    for component in [
        format!("stdin | redis(url=\"{url}\", command=incrby, key=\"c:{{line}}\")"),
        format!("redis(url=\"{url}\", stream=s) | stdout"),
    ] {
        let out = storm()
            .args(["run", "-e", &component])
            .current_dir(dir.path())
            .env("STORM_CONF_DIR", dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("does not answer"), "{stderr}");
        assert!(stderr.contains("redis://:<hidden>@127.0.0.1"), "{stderr}");
        assert!(!stderr.contains("hunter2"), "{stderr}");
    }
}

/// `storm config` shows `redis.url` with its password hidden; the URL from the config key and
/// from `$REDIS_URL` both reach a server that wants the password.
#[test]
fn the_url_comes_from_config_or_environment_and_its_password_is_masked() {
    let server = Server::start_with(&["--requirepass", "hunter2"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("redis://:hunter2@127.0.0.1:{}", server.port);
    let out = storm()
        .args(["config", "-c", &format!("redis.url={url}")])
        .env("STORM_CONF_DIR", dir.path())
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("redis.url") && text.contains(":<hidden>@127.0.0.1"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    let topology = "stdin | redis(command=incrby, key=\"c:{line}\")";
    for (env, conf) in [
        (Some(url.as_str()), None),
        (None, Some(format!("redis.url={url}"))),
    ] {
        let mut cmd = storm();
        cmd.args(["run", "-e", topology])
            .env("STORM_CONF_DIR", dir.path());
        if let Some(u) = env {
            cmd.env("REDIS_URL", u);
        }
        if let Some(c) = &conf {
            cmd.args(["-c", c]);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(b"x\nx\n")
            .expect("writes");
        let out = child.wait_with_output().expect("ends");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let got = Command::new("redis-cli")
        .args([
            "-p",
            &server.port.to_string(),
            "-a",
            "hunter2",
            "--no-auth-warning",
            "GET",
            "c:x",
        ])
        .output()
        .expect("redis-cli");
    assert_eq!(String::from_utf8_lossy(&got.stdout).trim(), "4");
}

/// Mistakes are located errors with a did-you-mean, in YAML and in the DSL.
#[test]
fn arguments_are_checked_at_validate_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = "name: bad
spouts:
  - {id: in, type: stdin, args: {format: csv, columns: [user]}}
bolts:
  - {id: a, type: redis, args: {command: hgett, key: \"u:{user}\", field: x, as: y}}
  - {id: b, type: redis, args: {command: get, key: \"u:{usr}\", as: v}}
  - {id: c, type: redis, args: {command: get, key: \"u:{user}\"}}
  - {id: d, type: redis, args: {command: set, key: k, value: user, stream: s}}
streams: [{from: in, to: a}, {from: in, to: b}, {from: in, to: c}, {from: in, to: d}]
";
    let file = dir.path().join("bad.yaml");
    std::fs::write(&file, yaml).expect("writes");
    let out = storm().arg("validate").arg(&file).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for want in [
        "bad.yaml:5:",
        "unknown command `hgett`: did you mean `hget`?",
        "bad.yaml:6:",
        "does not declare field `usr`",
        "did you mean `user`?",
        "bad.yaml:7:",
        "name its output field with `as`",
        "bad.yaml:8:",
        "`stream` is an argument of a redis spout; this one is a bolt",
    ] {
        assert!(stderr.contains(want), "missing {want:?} in:\n{stderr}");
    }
    let out = storm()
        .args([
            "validate",
            "-e",
            "stdin | redis(command=incrby, key=\"c:{lin}\")",
        ])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("did you mean `line`?"), "{stderr}");
    let out = storm()
        .args([
            "validate",
            "-e",
            "redis(stream=s, fields=[n, redis_id]) | redis(command=xadd, key=t)",
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The server SIGKILLed in the middle of a run and started again: the writes waiting for it are
/// retried with back-off (said on stderr), every tuple is written, and the run ends well.
#[test]
fn a_lost_connection_is_retried_while_tuples_wait() {
    let mut server = Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = format!(
        "name: retried
spouts: [{{id: in, type: stdin}}]
bolts:
  - {{id: slow, type: chaos, args: {{delay: 2ms}}}}
  - {{id: seen, type: redis, args: {{url: \"{}\", command: sadd, key: seen, field: \"{{line}}\"}}}}
streams: [{{from: in, to: slow}}, {{from: slow, to: seen}}]
",
        server.url()
    );
    let file = dir.path().join("topology.yaml");
    std::fs::write(&file, yaml).expect("writes the topology");
    let mut child = storm()
        .arg("run")
        .arg(&file)
        .env("STORM_CONF_DIR", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("storm runs");
    let input: String = (0..1500).map(|i| format!("{i}\n")).collect();
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("writes");
    let err = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    poll_until(
        "the first writes",
        Duration::from_secs(30),
        Duration::from_millis(5),
        || (server.cli(&["SCARD", "seen"]) != "0").then_some(()),
    );
    server.kill();
    let mut said = Vec::new();
    poll_until(
        "a retry",
        Duration::from_secs(30),
        Duration::from_millis(5),
        || {
            said.extend(rx.try_iter());
            said.iter().any(|l| l.contains("retrying in")).then_some(())
        },
    );
    server.restart();
    let status = child.wait().expect("storm ends");
    said.extend(rx.try_iter());
    assert!(status.success(), "{}", said.join("\n"));
    assert_eq!(
        server.cli(&["SCARD", "seen"]),
        "1500",
        "{}",
        said.join("\n")
    );
    assert!(
        !said.iter().any(|l| l.contains("tuple(s) failed")),
        "{}",
        said.join("\n")
    );
}
