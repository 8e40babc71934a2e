//! Every recipe of docs/cookbook.md, run exactly as written (the DSL line through `sh`, the YAML
//! as a file) on generated data, each output compared with an answer computed here without storm.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};

/// One generated event.
struct Event {
    level: &'static str,
    service: String,
    endpoint: String,
    status: u32,
    latency_ms: f64,
    user: u32,
    msg: String,
    ip: String,
    method: &'static str,
}

fn events(n: usize) -> Vec<Event> {
    let mut s: u64 = 7;
    let mut next = move |m: u64| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 33) % m
    };
    let msgs = [
        "ok",
        "cache miss, retry",
        "said \"no\"",
        "two\nlines",
        "é ünïcode",
    ];
    let latencies = [0.5, 1.25, 3.0, 7.75, 120.5];
    (0..n)
        .map(|_| {
            let r = next(100);
            let level = if r < 5 {
                "error"
            } else if r < 15 {
                "warn"
            } else {
                "info"
            };
            let status = match (level, next(4)) {
                ("error", k) => 500 + k as u32,
                (_, 0) => 404,
                (_, 1) => 301,
                _ => 200,
            };
            let user = next(40) as u32;
            Event {
                level,
                service: format!("svc-{:02}", next(7)),
                endpoint: format!("/api/v1/{}", ["users", "orders", "pay"][next(3) as usize]),
                status,
                latency_ms: latencies[next(latencies.len() as u64) as usize],
                user,
                msg: msgs[next(msgs.len() as u64) as usize].to_string(),
                ip: format!("10.0.{}.{}", user % 3, user),
                method: ["GET", "POST"][next(2) as usize],
            }
        })
        .collect()
}

/// The time of the i-th event: 2026-11-02T08:00:00Z plus 97 ms each (over several minutes).
fn event_ms(i: usize) -> i64 {
    1_793_606_400_000 + i as i64 * 97
}

fn rfc3339(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
    humantime::format_rfc3339_millis(t).to_string()
}

/// A time as an access log writes it (whole seconds): `02/Nov/2026:08:01:07 +0000`.
fn access_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000) - 1_793_606_400; // since 2026-11-02T08:00:00Z
    format!(
        "02/Nov/2026:{:02}:{:02}:{:02} +0000",
        8 + secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// The path of the i-th event's access log line.
fn access_path(e: &Event) -> String {
    format!("{}?u={}", e.endpoint, e.user)
}

/// The team of a user in `users.csv`: users below 30 have one.
fn team_of(user: u32) -> Option<&'static str> {
    (user < 30).then(|| ["red", "green", "blue"][(user % 3) as usize])
}

fn write_inputs(dir: &Path, evs: &[Event]) {
    let mut jsonl = String::new();
    let mut access = String::new();
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record(["level", "service", "endpoint", "status", "user", "msg"])
        .expect("csv");
    for (i, e) in evs.iter().enumerate() {
        let obj = serde_json::json!({"ts": rfc3339(event_ms(i)), "level": e.level, "service": e.service, "endpoint": e.endpoint,
            "status": e.status, "latency_ms": e.latency_ms, "user": e.user, "msg": e.msg});
        jsonl += &format!("{obj}\n");
        w.write_record([
            e.level,
            &e.service,
            &e.endpoint,
            &e.status.to_string(),
            &e.user.to_string(),
            &e.msg,
        ])
        .expect("csv");
        access += &format!(
            "{} - - [{}] \"{} {}?u={} HTTP/1.1\" {} {} \"-\" \"agent\"\n",
            e.ip,
            access_time(event_ms(i)),
            e.method,
            e.endpoint,
            e.user,
            e.status,
            i
        );
        if i % 500 == 0 {
            access += "garbage that is no access log line\n";
        }
    }
    let array: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let pretty = serde_json::to_string_pretty(&array).expect("json");
    std::fs::write(dir.join("app.json"), pretty).expect("write");
    std::fs::write(dir.join("app.jsonl"), jsonl).expect("write");
    std::fs::write(dir.join("events.csv"), w.into_inner().expect("csv")).expect("write");
    // The same log split over two files of a folder, for a glob.
    let lines: Vec<&str> = access.split_inclusive('\n').collect();
    let (first, second) = lines.split_at(lines.len() / 2);
    std::fs::create_dir_all(dir.join("app")).expect("mkdir");
    std::fs::write(dir.join("app/access-1.log"), first.concat()).expect("write");
    std::fs::write(dir.join("app/access-2.log"), second.concat()).expect("write");
    std::fs::write(dir.join("access.log"), access).expect("write");
    std::fs::write(dir.join("book.txt"), book()).expect("write");
    let users: String = (0..30u32)
        .map(|u| format!("{u},{}\n", team_of(u).unwrap_or_default()))
        .collect();
    std::fs::write(dir.join("users.csv"), format!("id,team\n{users}")).expect("write");
    std::fs::write(
        dir.join("upper.py"),
        "import storm\n\nclass Upper(storm.BasicBolt):\n    def process(self, tup):\n        storm.emit([tup.values[0].upper()])\n\nUpper().run()\n",
    )
    .expect("write");
    let adapter = dir.join("multilang/python");
    std::fs::create_dir_all(&adapter).expect("mkdir");
    std::fs::copy("multilang/python/storm.py", adapter.join("storm.py")).expect("copy adapter");
}

fn book() -> String {
    let words = ["the", "storm", "bolt", "spout", "a", "tuple", "of", "words"];
    (0..400)
        .map(|i| {
            (0..(i % 9))
                .map(|j| words[(i * 7 + j * 3) % words.len()])
                .collect::<Vec<_>>()
                .join(if i % 5 == 0 { "  " } else { " " })
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The recipes of the page: id → (sh command, YAML).
fn recipes() -> BTreeMap<String, (String, String)> {
    let doc = std::fs::read_to_string("docs/cookbook.md").expect("docs/cookbook.md");
    let block_after = |marker: &str| -> Option<String> {
        let at = doc.find(marker)?;
        let rest = &doc[at..];
        let open = rest.find("```")?;
        let body = &rest[open..];
        let start = body.find('\n')? + 1;
        let end = body[start..].find("```")?;
        Some(body[start..start + end].to_string())
    };
    let mut out = BTreeMap::new();
    for line in doc.lines() {
        let Some(id) = line
            .strip_prefix("<!-- recipe: ")
            .and_then(|l| l.strip_suffix(" -->"))
        else {
            continue;
        };
        let sh = block_after(line).expect("a sh block after the marker");
        let yaml = block_after(&format!("<!-- recipe-yaml: {id} -->")).expect("its YAML");
        out.insert(id.to_string(), (sh.trim_end().to_string(), yaml));
    }
    out
}

fn sh(dir: &Path, command: &str) -> (String, String) {
    let bin = assert_cmd::cargo::cargo_bin("storm");
    let path = format!(
        "{}:{}",
        bin.parent().expect("bin dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("PATH", path)
        .env("STORM_CONF_DIR", dir)
        .env("XDG_STATE_HOME", dir)
        .env_remove("STORM_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("sh runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{command}: {stderr}");
    (String::from_utf8(out.stdout).expect("utf-8 output"), stderr)
}

fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(str::to_string).collect();
    v.sort();
    v
}

fn counted<K: Ord>(keys: impl Iterator<Item = K>) -> BTreeMap<K, u64> {
    let mut m = BTreeMap::new();
    for k in keys {
        *m.entry(k).or_insert(0) += 1;
    }
    m
}

fn tsv<K: std::fmt::Display>(m: &BTreeMap<K, u64>) -> Vec<String> {
    let mut v: Vec<String> = m.iter().map(|(k, n)| format!("{k}\t{n}")).collect();
    v.sort();
    v
}

/// The expected output of a recipe (its sh form, with any `| sort | head` applied), and
/// whether line order matters.
fn expected(id: &str, evs: &[Event]) -> (Vec<String>, bool) {
    let errors = evs.iter().filter(|e| e.level == "error");
    match id {
        "word-count" => (
            tsv(&counted(book().split_whitespace().map(str::to_string))),
            false,
        ),
        "status-codes" => (tsv(&counted(evs.iter().map(|e| e.status))), false),
        "top-ips" => {
            let mut by: Vec<(u64, String)> = counted(evs.iter().map(|e| e.ip.clone()))
                .into_iter()
                .map(|(ip, n)| (n, ip))
                .collect();
            by.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            (
                by.iter()
                    .take(10)
                    .map(|(n, ip)| format!("{n}\t{ip}"))
                    .collect(),
                true,
            )
        }
        "errors-per-service" | "live-errors" | "exact-errors" | "json-array" => {
            (tsv(&counted(errors.map(|e| e.service.clone()))), false)
        }
        "server-errors" => {
            let m = counted(
                evs.iter()
                    .filter(|e| e.status >= 500)
                    .map(|e| e.endpoint.clone()),
            );
            let mut v: Vec<String> = m
                .iter()
                .map(|(k, n)| serde_json::json!({"endpoint": k, "count": n}).to_string())
                .collect();
            v.sort();
            (v, false)
        }
        "distinct-users" => {
            let users: BTreeSet<u32> = evs.iter().map(|e| e.user).collect();
            (
                sorted_lines(&users.iter().map(|u| format!("{u}\n")).collect::<String>()),
                false,
            )
        }
        "csv-numbers" => {
            let mut per: BTreeMap<&str, (u64, u32)> = BTreeMap::new();
            for e in evs.iter().filter(|e| e.status >= 500) {
                let (n, max) = per.entry(&e.endpoint).or_insert((0, 0));
                *n += 1;
                *max = (*max).max(e.user);
            }
            let mut v: Vec<String> = per
                .iter()
                .map(|(k, (n, max))| format!("{k}\t{n}\t{max}"))
                .collect();
            v.sort();
            (v, false)
        }
        "regex-fields" => {
            let keys = evs
                .iter()
                .map(|e| format!("{}\t{}", e.method, e.status / 100));
            (tsv(&counted(keys)), false)
        }
        "latency-per-endpoint" => {
            let mut per: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
            for e in evs {
                per.entry(&e.endpoint).or_default().push(e.latency_ms);
            }
            let mut v: Vec<String> = per
                .iter()
                .map(|(k, l)| {
                    let sum: f64 = l.iter().sum();
                    let max = l.iter().cloned().fold(f64::MIN, f64::max);
                    format!("{k}\t{}\t{sum}\t{}\t{max}", l.len(), sum / l.len() as f64)
                })
                .collect();
            v.sort();
            (v, false)
        }
        "per-minute" => {
            let mut per: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
            for (i, e) in evs.iter().enumerate() {
                per.entry(event_ms(i) / 60_000 * 60_000)
                    .or_default()
                    .push(e.latency_ms);
            }
            let v = per
                .iter()
                .map(|(start, l)| {
                    let sum: f64 = l.iter().sum();
                    let max = l.iter().cloned().fold(f64::MIN, f64::max);
                    format!(
                        "{}\t{}\t{}\t{}\t{max}",
                        rfc3339(*start),
                        rfc3339(start + 60_000),
                        l.len(),
                        sum / l.len() as f64
                    )
                })
                .collect();
            (v, true)
        }
        "sliding-top" => {
            let mut per: BTreeMap<i64, BTreeMap<&str, u64>> = BTreeMap::new();
            for (i, e) in evs.iter().enumerate() {
                let t = event_ms(i);
                let mut s = t / 60_000 * 60_000;
                while s > t - 300_000 {
                    *per.entry(s).or_default().entry(&e.endpoint).or_default() += 1;
                    s -= 60_000;
                }
            }
            let mut v = Vec::new();
            for (s, counts) in &per {
                let mut ranked: Vec<(&&str, &u64)> = counts.iter().collect();
                ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
                for (i, (k, n)) in ranked.iter().take(3).enumerate() {
                    v.push(format!(
                        "{}\t{}\t{}\t{k}\t{n}",
                        rfc3339(*s),
                        rfc3339(s + 300_000),
                        i + 1
                    ));
                }
            }
            (v, true)
        }
        "access-per-minute" => {
            let per = counted((0..evs.len()).map(|i| event_ms(i) / 60_000 * 60_000));
            let v = per
                .iter()
                .map(|(s, n)| format!("{}\t{}\t{n}", rfc3339(*s), rfc3339(s + 60_000)))
                .collect();
            (v, true)
        }
        "sliding-top-paths" => {
            let mut per: BTreeMap<i64, BTreeMap<String, u64>> = BTreeMap::new();
            for (i, e) in evs.iter().enumerate() {
                // The log keeps whole seconds.
                let t = event_ms(i) / 1000 * 1000;
                let mut s = t / 60_000 * 60_000;
                while s > t - 300_000 {
                    *per.entry(s).or_default().entry(access_path(e)).or_default() += 1;
                    s -= 60_000;
                }
            }
            let mut v = Vec::new();
            for (s, counts) in &per {
                let mut ranked: Vec<(&String, &u64)> = counts.iter().collect();
                ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
                for (i, (k, n)) in ranked.iter().take(10).enumerate() {
                    v.push(format!(
                        "{}\t{}\t{}\t{k}\t{n}",
                        rfc3339(*s),
                        rfc3339(s + 300_000),
                        i + 1
                    ));
                }
            }
            v.sort();
            (v, false)
        }
        "enrich" => (
            tsv(&counted(
                evs.iter()
                    .map(|e| team_of(e.user).unwrap_or("").to_string()),
            )),
            false,
        ),
        "join-users" => {
            let keys = evs
                .iter()
                .filter_map(|e| team_of(e.user).map(|t| format!("{t}\t{}", e.status)));
            (tsv(&counted(keys)), false)
        }
        "dedupe" => {
            let mut seen = BTreeSet::new();
            (
                book()
                    .lines()
                    .filter(|l| seen.insert(l.to_string()))
                    .map(str::to_string)
                    .collect(),
                true,
            )
        }
        "python-step" => (book().lines().map(str::to_uppercase).collect(), true),
        other => panic!("no oracle for recipe `{other}`"),
    }
}

/// CSV output read back with the csv crate: the kept columns of every event, in order.
fn check_csv(out: &str, evs: &[Event]) {
    let mut r = csv::Reader::from_reader(out.as_bytes());
    let header: Vec<String> = r
        .headers()
        .expect("header")
        .iter()
        .map(str::to_string)
        .collect();
    assert_eq!(header, ["service", "msg"]);
    let got: Vec<(String, String)> = r
        .records()
        .map(|rec| {
            let rec = rec.expect("valid CSV");
            (rec[0].to_string(), rec[1].to_string())
        })
        .collect();
    let want: Vec<(String, String)> = evs
        .iter()
        .map(|e| (e.service.clone(), e.msg.clone()))
        .collect();
    assert_eq!(got, want);
}

/// `emit=update`: per key, the totals 1, 2, … n in order, n being the true total.
/// Updates of a count: each key's last total is the true one, and it went up one at a time.
fn last_totals(out: &str) -> BTreeMap<String, u64> {
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for line in out.lines() {
        let (k, n) = line.split_once('\t').expect("key<TAB>count");
        let n: u64 = n.parse().expect("a count");
        let last = seen.entry(k.to_string()).or_insert(0);
        assert_eq!(n, *last + 1, "{k}: {n} after {last}");
        *last = n;
    }
    seen
}

fn check_updates(out: &str, evs: &[Event]) {
    let seen = last_totals(out);
    let want = counted(
        evs.iter()
            .filter(|e| e.level == "error")
            .map(|e| e.service.clone()),
    );
    assert_eq!(seen, want);
}

/// Percentiles from a sketch: each within 2% of the value at its rank (the rank's floor or
/// ceiling, as the sketch may land on either side of two equal neighbours).
fn check_percentiles(out: &str, evs: &[Event]) {
    let mut per: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for (i, e) in evs.iter().enumerate() {
        let start = event_ms(i) / 60_000 * 60_000;
        per.entry((e.endpoint.clone(), rfc3339(start)))
            .or_default()
            .push(e.latency_ms);
    }
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), per.len(), "{out}");
    for line in lines {
        let f: Vec<&str> = line.split('\t').collect();
        let mut values = per[&(f[0].to_string(), f[1].to_string())].clone();
        values.sort_by(f64::total_cmp);
        for (q, got) in [(0.5, f[3]), (0.99, f[4])] {
            let got: f64 = got.parse().expect("a number");
            let rank = q * (values.len() - 1) as f64;
            let near = [values[rank.floor() as usize], values[rank.ceil() as usize]];
            assert!(
                near.iter().any(|v| (got - v).abs() <= v * 0.02),
                "{line}: p{q} {got} not near {near:?}"
            );
        }
    }
}

fn check(id: &str, out: &str, evs: &[Event], via_yaml: bool) {
    match id {
        "percentiles" => return check_percentiles(out, evs),
        "csv-columns" => return check_csv(out, evs),
        "live-errors" => return check_updates(out, evs),
        "live-status" | "live-status-glob" => {
            let want = counted(evs.iter().map(|e| e.status.to_string()));
            return assert_eq!(last_totals(out), want, "{id}");
        }
        _ => {}
    }
    let (want, ordered) = expected(id, evs);
    if via_yaml && id == "top-ips" {
        // The YAML has no `| sort | head`: every address with its count.
        let m = counted(evs.iter().map(|e| e.ip.clone()));
        let mut all: Vec<String> = m.iter().map(|(ip, n)| format!("{n}\t{ip}")).collect();
        all.sort();
        assert_eq!(sorted_lines(out), all, "{id} (yaml)");
        return;
    }
    let got = if ordered {
        out.lines().map(str::to_string).collect()
    } else {
        sorted_lines(out)
    };
    assert_eq!(got, want, "{id}");
}

/// The file a recipe reads (`< FILE`, or `tail -f FILE`).
fn input_of(command: &str) -> &str {
    command
        .split_once("< ")
        .or_else(|| command.split_once("tail -f "))
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .expect("the recipe names its input")
}

#[test]
fn every_cookbook_recipe_gives_the_right_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let evs = events(3000);
    write_inputs(dir.path(), &evs);
    let all = recipes();
    assert!(all.len() >= 10, "only {} recipes", all.len());
    for (id, (command, yaml)) in &all {
        // `tail -f` never ends: here it starts at the first line and ends after a while, so the
        // run finishes and the whole file is the oracle.
        let runnable = command.replace("tail -f", "timeout 3 tail -n +1 -f");
        let (out, _) = sh(dir.path(), &runnable);
        check(id, &out, &evs, false);
        let file = format!("{id}.yaml");
        std::fs::write(dir.path().join(&file), yaml).expect("write yaml");
        let env = if id == "python-step" {
            "PYTHONPATH=multilang/python "
        } else {
            ""
        };
        let (out, _) = sh(
            dir.path(),
            &match command.contains("follow=true") {
                // A followed file names itself and runs until stopped.
                true => format!("storm run {file} --duration 3s"),
                false => format!("{env}storm run {file} < {}", input_of(command)),
            },
        );
        check(id, &out, &evs, true);
    }
}

#[test]
fn unreadable_lines_are_dropped_counted_or_sent_to_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_inputs(dir.path(), &events(1000));
    // Dropped and counted: the summary says how many.
    let (out, stderr) = sh(
        dir.path(),
        "storm run --summary -e 'stdin(format=combined) | count(status) | stdout' < access.log",
    );
    let total: u64 = out
        .lines()
        .filter_map(|l| l.split('\t').nth(1)?.parse::<u64>().ok())
        .sum();
    assert_eq!(total, 1000);
    assert!(stderr.contains("dropped 2 input(s)"), "{stderr}");
    assert!(
        stderr.contains("garbage that is no access log line"),
        "warned: {stderr}"
    );
    // With an errors stream: each bad line and why.
    let (out, _) = sh(
        dir.path(),
        "storm run -e 's = stdin(format=combined) | discard\ns | [stream=errors] stdout' < access.log",
    );
    assert_eq!(
        out,
        "garbage that is no access log line\tdoes not match the pattern\n".repeat(2)
    );
}

/// The PostgreSQL recipe, run as written against a server the test starts (`localhost:5432`
/// replaced by its port): the table holds each service's error count per minute, computed here.
#[test]
fn the_cookbook_postgres_recipe_upserts_errors_per_service_and_minute() {
    let doc = std::fs::read_to_string("docs/cookbook.md").expect("docs/cookbook.md");
    let at = doc
        .find("<!-- postgres-recipe: errors-per-minute -->")
        .expect("the recipe's marker");
    let block = &doc[at..];
    let start = block.find("```sh\n").expect("its sh block") + "```sh\n".len();
    let end = start + block[start..].find("```").expect("its end");
    let sql_at = doc[..at].rfind("```sql\n").expect("the table's SQL") + "```sql\n".len();
    let sql_end = sql_at + doc[sql_at..].find("```").expect("its end");
    let pg = super::postgres::Pg::start();
    pg.psql(&doc[sql_at..sql_end]);
    let command = block[start..end]
        .trim()
        .replace("localhost:5432", &format!("127.0.0.1:{}", pg.port));
    let dir = tempfile::tempdir().expect("tempdir");
    let mut expected = BTreeMap::new();
    let mut lines = String::new();
    for i in 0..900 {
        let (minute, second) = (i * 2 / 60, i * 2 % 60);
        let level = if i % 3 == 0 { "error" } else { "info" };
        let service = format!("svc-{}", i % 4);
        if level == "error" {
            let window = format!("2026-11-02 08:{minute:02}:00+00");
            *expected
                .entry(format!("{service}\t{window}"))
                .or_insert(0u64) += 1;
        }
        lines.push_str(&format!(
            "{{\"ts\": \"2026-11-02T08:{minute:02}:{second:02}Z\", \"level\": \"{level}\", \"service\": \"{service}\"}}\n"
        ));
    }
    std::fs::write(dir.path().join("app.jsonl"), lines).expect("writes the events");
    let bin = assert_cmd::cargo::cargo_bin("storm");
    let path = format!(
        "{}:{}",
        bin.parent().expect("bin dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(dir.path())
        .env("PATH", path)
        .env("STORM_CONF_DIR", dir.path())
        .env("XDG_STATE_HOME", dir.path())
        .env("PGPASSWORD", super::postgres::PASSWORD)
        .env_remove("STORM_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("sh runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{command}: {stderr}");
    let got = pg.rows("select service, window_start, count from errors_per_minute order by 1, 2");
    let want: Vec<String> = expected.iter().map(|(k, n)| format!("{k}\t{n}")).collect();
    assert_eq!(got, want);
    assert!(!stderr.contains(super::postgres::PASSWORD));
}

/// The hourly-files recipe (a `file` sink, so its output is files, not standard output): run
/// as written, every event is in exactly one published file, the one of its service and hour.
#[test]
fn the_hourly_files_recipe_publishes_each_event_once() {
    let doc = std::fs::read_to_string("docs/cookbook.md").expect("docs/cookbook.md");
    let at = doc
        .find("<!-- file-recipe: hourly-files -->")
        .expect("the recipe's marker");
    let block = &doc[at..];
    let start = block.find("```sh\n").expect("its sh block") + "```sh\n".len();
    let end = start + block[start..].find("```").expect("its end");
    let dir = tempfile::tempdir().expect("tempdir");
    let evs = events(3000);
    write_inputs(dir.path(), &evs);
    sh(dir.path(), block[start..end].trim());
    let mut expected: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, e) in evs.iter().enumerate() {
        let ts = rfc3339(event_ms(i));
        let file = format!("out/{}/{}/{}.jsonl", e.service, &ts[..10], &ts[11..13]);
        let record =
            serde_json::json!({"ts": ts, "level": e.level, "service": e.service, "msg": e.msg});
        expected.entry(file).or_default().push(record.to_string());
    }
    for (file, lines) in &expected {
        let text = std::fs::read_to_string(dir.path().join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let got: Vec<&str> = text.lines().collect();
        assert_eq!(got, *lines, "{file}");
    }
    let published = std::fs::read_dir(dir.path().join("out"))
        .expect("out")
        .count();
    assert_eq!(
        published,
        7 + 1,
        "one directory per service, and the staging dir"
    );
}

/// The text of the first `sh` block after `marker` in docs/cookbook.md, and of the next one.
fn sh_blocks_after(marker: &str) -> (String, String) {
    let doc = std::fs::read_to_string("docs/cookbook.md").expect("docs/cookbook.md");
    let at = doc.find(marker).expect("the recipe's marker");
    let mut blocks = doc[at..]
        .split("```sh\n")
        .skip(1)
        .map(|b| b.split("```").next().expect("a block").trim().to_string());
    let first = blocks.next().expect("its sh block");
    (first, blocks.next().expect("a second sh block"))
}

/// The hourly-files recipe fed over HTTP, run as written (listening on a free loopback port):
/// the recipe's curl line posts the first events, a client posts the rest in keyed requests;
/// the run is SIGKILLed half way and started again, and one answered request is sent again.
/// Every event is in exactly one published file, the one of its service and hour.
#[test]
fn the_http_hourly_files_recipe_publishes_each_posted_event_once() {
    let (command, curl) = sh_blocks_after("<!-- http-recipe: hourly-files -->");
    let prefix = "storm run --state-dir hourly-state -e '";
    let topology = command
        .strip_prefix(prefix)
        .and_then(|t| t.strip_suffix('\''))
        .expect("the recipe runs one -e topology with a state dir");
    let topology = topology.replace("\":8080\"", "\"127.0.0.1:0\"");
    let dir = tempfile::tempdir().expect("tempdir");
    let evs = events(2000);
    let lines: Vec<String> = evs
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let ts = rfc3339(event_ms(i));
            serde_json::json!({"ts": ts, "level": e.level, "service": e.service, "msg": e.msg})
                .to_string()
        })
        .collect();
    std::fs::write(
        dir.path().join("events.jsonl"),
        lines[..100].join("\n") + "\n",
    )
    .expect("writes");
    // Each acknowledged POST waits for a checkpoint: every 100 ms here, not the default 1 s.
    let args = |t: &str| -> Vec<String> {
        [
            "run",
            "--state-dir",
            "hourly-state",
            "-e",
            t,
            "-c",
            "topology.state.checkpoint.interval.ms=100",
        ]
        .map(String::from)
        .to_vec()
    };
    let run = super::http_spout::Run::start(&args(&topology), dir.path(), &[], 1);
    let addr = run.addr().to_string();
    let curl = curl.replace("localhost:8080", &addr);
    let (out, _) = sh(dir.path(), &curl);
    assert!(out.contains("\"accepted\":100"), "{curl}: {out}");
    let requests: Vec<String> = lines[100..]
        .chunks(100)
        .enumerate()
        .map(|(k, c)| {
            let key = format!("batch-{k:04}x");
            super::http_spout::request(&key, &(c.join("\n") + "\n"), &[("Idempotency-Key", &key)])
        })
        .collect();
    let post = |rs: &[String]| super::http_spout::client(&addr, "/events", &["until-ok", "2"], rs);
    post(&requests[..9]);
    drop(run);
    let run = super::http_spout::Run::start(
        &args(&topology.replace("127.0.0.1:0", &addr)),
        dir.path(),
        &[],
        1,
    );
    post(&requests[8..]);
    run.interrupt();
    let mut expected: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, e) in evs.iter().enumerate() {
        let ts = rfc3339(event_ms(i));
        let file = format!("out/{}/{}/{}.jsonl", e.service, &ts[..10], &ts[11..13]);
        expected.entry(file).or_default().push(lines[i].clone());
    }
    for (file, want) in &expected {
        let text = std::fs::read_to_string(dir.path().join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut got: Vec<&str> = text.lines().collect();
        let mut want: Vec<&str> = want.iter().map(String::as_str).collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{file}");
    }
}

/// The cookbook's syslog recipe, run as written (listening on a free loopback port instead of
/// `:5514`): RFC 5424 and RFC 3164 messages of three hosts over three minutes, sent over TCP;
/// the counts per minute, host and severity equal the ones computed here.
#[test]
fn the_cookbook_syslog_recipe_counts_severities_per_host_and_minute() {
    use std::io::Write as _;
    let doc = std::fs::read_to_string("docs/cookbook.md").expect("docs/cookbook.md");
    let at = doc
        .find("<!-- socket-recipe: syslog-severities -->")
        .expect("the recipe's marker");
    let block = &doc[at..];
    let start = block.find("```sh\n").expect("its sh block") + "```sh\n".len();
    let end = start + block[start..].find("```").expect("its end");
    let command = block[start..end].trim();
    let topology = command
        .split_once("-e '")
        .and_then(|(_, rest)| rest.rsplit_once('\''))
        .map(|(t, _)| t.replace(":5514", "127.0.0.1:0"))
        .expect("the recipe's topology in -e '…'");
    let dir = tempfile::tempdir().expect("tempdir");
    let run =
        super::http_spout::Run::start(&["run".into(), "-e".into(), topology], dir.path(), &[], 1);
    let severities = ["err", "warning", "info"];
    // RFC 3164 times have no year: the spout takes this one (the year before if 2 November is
    // ahead of today); the RFC 5424 ones say the same year, so the events stay in time order.
    let now = jiff::tz::Offset::UTC.to_datetime(jiff::Timestamp::now());
    let ahead = (11, 2) > (now.month(), now.day().saturating_add(1));
    let year = now.year() - i16::from(ahead);
    let mut expected: BTreeMap<(String, String, String), u64> = BTreeMap::new();
    let mut text = String::new();
    for i in 0..540u32 {
        let (minute, second) = (i / 180, i / 3 % 60);
        let host = format!("web-{}", i % 3);
        let sev = (i * 7 / 3) as usize % severities.len();
        let pri = 16 * 8 + [3, 4, 6][sev];
        text += &match i % 2 {
            0 => format!(
                "<{pri}>1 {year}-11-02T08:{minute:02}:{second:02}Z {host} app - - - event {i}\n"
            ),
            _ => format!("<{pri}>Nov  2 08:{minute:02}:{second:02} {host} app[7]: event {i}\n"),
        };
        let window = format!("08:{minute:02}");
        *expected
            .entry((window, host, severities[sev].to_string()))
            .or_insert(0) += 1;
    }
    let mut s = std::net::TcpStream::connect(run.addr()).expect("connects");
    s.write_all(text.as_bytes()).expect("sends");
    drop(s);
    // The first two minutes close as later events come; Ctrl-C writes the last one.
    run.wait_lines(2);
    let (lines, _) = run.finish();
    let mut got: BTreeMap<(String, String, String), u64> = BTreeMap::new();
    for line in &lines {
        let f: Vec<&str> = line.split('\t').collect();
        let window = f
            .iter()
            .find_map(|c| c.split_once("T08:").map(|(_, t)| format!("08:{}", &t[..2])))
            .unwrap_or_else(|| panic!("no window start in {line}"));
        let host = f.iter().find(|c| c.starts_with("web-")).expect("a host");
        let sev = f
            .iter()
            .find(|c| severities.contains(c))
            .expect("a severity");
        let n: u64 = f.last().and_then(|c| c.parse().ok()).expect("a count");
        *got.entry((window, host.to_string(), sev.to_string()))
            .or_insert(0) += n;
    }
    assert_eq!(got, expected, "{lines:?}");
}

/// The Redis recipe, run as written against a `redis-server` of the test (its URL for
/// `localhost:6379`): every event of a user not in the blocklist, with the user's hash fields.
#[test]
fn the_redis_recipe_enriches_events_and_drops_blocked_users() {
    let doc = std::fs::read_to_string("docs/cookbook.md").expect("docs/cookbook.md");
    let at = doc
        .find("<!-- redis-recipe: enrich-blocklist -->")
        .expect("the recipe's marker");
    let block = &doc[at..];
    let start = block.find("```sh\n").expect("its sh block") + "```sh\n".len();
    let end = start + block[start..].find("```").expect("its end");
    let server = crate::redis::Server::start();
    server.pipe(
        "HSET user:ann country fr plan gold\nHSET user:bob country de plan free\n\
         HSET user:cid country us\nSADD blocklist bob\n",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let users = ["ann", "bob", "cid", "dan"];
    let mut events = String::new();
    let mut want = Vec::new();
    for i in 0..400 {
        let user = users[i % 4];
        events.push_str(&format!(
            "{{\"user\": \"{user}\", \"page\": \"/p{}\"}}\n",
            i % 7
        ));
        let extra = match user {
            "ann" => "fr\tgold",
            "cid" => "us\t",
            "dan" => "\t",
            _ => continue,
        };
        want.push(format!("{user}\t/p{}\t{extra}", i % 7));
    }
    std::fs::write(dir.path().join("events.jsonl"), events).expect("writes");
    let command = block[start..end]
        .trim()
        .replace("localhost:6379", &format!("127.0.0.1:{}", server.port));
    let (out, _) = sh(dir.path(), &command);
    want.sort();
    assert_eq!(sorted_lines(&out), want);
}
