//! Differential tests: everyday jobs over files shaped like public datasets
//! (`tests/fixtures/real/`, written by its `make_fixtures.py`), each answered by storm and by an
//! independent oracle — DuckDB's SQL, or a few lines of Python — and compared row for row.
//!
//! Rows are compared as multisets; numbers compare by value to nine significant digits (a sum of
//! decimals may differ in its last bits with the order of addition), so `4` and `4.0` agree, but a
//! number never equals the text of it: a column read as text where DuckDB reads numbers fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

/// Where an expected answer comes from.
enum Oracle {
    /// A DuckDB query, run in the fixtures folder; its rows.
    Sql(&'static str),
    /// Python that sets `rows` (a list of lists), run in the fixtures folder.
    Rows(&'static str),
    /// Python that sets `lines` (a list of strings): compared with storm's raw output lines.
    Lines(&'static str),
}

/// One job: the fixture fed on stdin (if any), the DSL topology, and its oracle.
struct Job {
    name: &'static str,
    stdin: Option<&'static str>,
    topology: &'static str,
    oracle: Oracle,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real")
}

const JOBS: &[Job] = &[
    Job {
        name: "weather_max_precipitation_is_numeric",
        stdin: Some("weather.csv"),
        topology: "stdin(format=csv, header=true, fields=[date, precipitation, temp_max, temp_min, wind, weather]) \
            | aggregate(ops=[max(precipitation), min(precipitation), count]) | stdout(format=json)",
        oracle: Oracle::Sql(
            "select max(precipitation), min(precipitation), count(*) from read_csv('weather.csv')",
        ),
    },
    Job {
        name: "weather_windy_days_compare_decimals_with_an_integer",
        stdin: Some("weather.csv"),
        topology: "stdin(format=csv, header=true, fields=[date, precipitation, temp_max, temp_min, wind, weather]) | filter(\"wind > 5\") \
            | aggregate(ops=[count]) | stdout(format=json)",
        oracle: Oracle::Sql("select count(*) from read_csv('weather.csv') where wind > 5"),
    },
    Job {
        name: "weather_average_temperature_per_kind",
        stdin: Some("weather.csv"),
        topology: "stdin(format=csv, header=true, fields=[date, precipitation, temp_max, temp_min, wind, weather]) | filter(\"len(weather) > 0\") \
            | aggregate(by=[weather], ops=[avg(temp_max), min(temp_min), count]) \
            | stdout(format=json)",
        oracle: Oracle::Sql(
            "select weather, avg(temp_max), min(temp_min), count(*) from read_csv('weather.csv') \
             where weather is not null group by weather",
        ),
    },
    Job {
        name: "weather_monthly_precipitation_skips_empty_cells",
        stdin: None,
        topology: "file(path=weather.csv, format=csv, header=true, fields=[date, precipitation, temp_max, temp_min, wind, weather]) \
            | map(set={month: substr(date, 1, 7)}) \
            | aggregate(by=[month], ops=[sum(precipitation), max(precipitation), count]) \
            | stdout(format=json)",
        oracle: Oracle::Sql(
            "select strftime(date, '%Y-%m'), sum(precipitation), max(precipitation), count(*) \
             from read_csv('weather.csv') group by 1",
        ),
    },
    Job {
        name: "weather_wind_mixes_integers_and_decimals",
        stdin: Some("weather.csv"),
        topology: "stdin(format=csv, header=true, fields=[date, precipitation, temp_max, temp_min, wind, weather]) \
            | aggregate(ops=[sum(wind), avg(wind), max(wind)]) | stdout(format=json)",
        oracle: Oracle::Sql("select sum(wind), avg(wind), max(wind) from read_csv('weather.csv')"),
    },
    Job {
        name: "stocks_with_bom_and_crlf_per_symbol",
        stdin: Some("stocks.csv"),
        topology: "stdin(format=csv, header=true, fields=[date, symbol, open, high, low, close, volume]) \
            | aggregate(by=[symbol], ops=[max(close), min(low), sum(volume)]) \
            | stdout(format=json)",
        oracle: Oracle::Sql(
            "select symbol, max(close), min(low), sum(volume) from read_csv('stocks.csv') \
             group by symbol",
        ),
    },
    Job {
        name: "stocks_up_days_compare_two_columns",
        stdin: Some("stocks.csv"),
        topology: "stdin(format=csv, header=true, fields=[date, symbol, open, high, low, close, volume]) | filter(\"close > open\") | count(symbol) \
            | stdout(format=json)",
        oracle: Oracle::Sql(
            "select symbol, count(*) from read_csv('stocks.csv') where close > open group by 1",
        ),
    },
    Job {
        name: "stocks_daily_range_ratio_divides_as_floats",
        stdin: Some("stocks.csv"),
        topology: "stdin(format=csv, header=true, fields=[date, symbol, open, high, low, close, volume]) | map(set={r: (high - low) / low}) \
            | aggregate(by=[symbol], ops=[avg(r)]) | stdout(format=json)",
        oracle: Oracle::Sql(
            "select symbol, avg((high - low) / low) from read_csv('stocks.csv') group by 1",
        ),
    },
    Job {
        name: "stocks_integer_over_integer_is_not_truncated",
        stdin: Some("stocks.csv"),
        topology: "stdin(format=csv, header=true, fields=[date, symbol, open, high, low, close, volume]) | map(set={k: volume / 1000}) \
            | aggregate(by=[symbol], ops=[sum(k)]) | stdout(format=json)",
        oracle: Oracle::Sql(
            "select symbol, sum(volume / 1000) from read_csv('stocks.csv') group by 1",
        ),
    },
    Job {
        name: "stocks_count_distinct_days",
        stdin: Some("stocks.csv"),
        topology: "stdin(format=csv, header=true, fields=[date, symbol, open, high, low, close, volume]) \
            | aggregate(ops=[count_distinct(date), count_distinct(symbol)]) | stdout(format=json)",
        oracle: Oracle::Sql(
            "select count(distinct date), count(distinct symbol) from read_csv('stocks.csv')",
        ),
    },
    Job {
        name: "airports_elevation_with_empty_cells_per_type",
        stdin: Some("airports.csv"),
        topology: "stdin(format=csv, header=true, fields=[id, ident, type, name, elevation_ft, iso_country, municipality, zip]) \
            | aggregate(by=[type], ops=[avg(elevation_ft), max(elevation_ft), count]) \
            | stdout(format=json)",
        oracle: Oracle::Sql(
            "select type, avg(elevation_ft), max(elevation_ft), count(*) \
             from read_csv('airports.csv') group by type",
        ),
    },
    Job {
        name: "airports_typed_empty_cell_keeps_its_row",
        stdin: Some("airports.csv"),
        topology: "stdin(format=csv, header=true, fields=[id, ident, type, name, elevation_ft, iso_country, municipality, zip], types={elevation_ft: int}) \
            | count(iso_country) | stdout(format=json)",
        oracle: Oracle::Sql(
            "select iso_country, count(*) from read_csv('airports.csv') group by 1",
        ),
    },
    Job {
        name: "airports_quoted_cells_with_commas_quotes_and_newlines",
        stdin: Some("airports.csv"),
        topology: "stdin(format=csv, header=true, fields=[id, ident, type, name, elevation_ft, iso_country, municipality, zip]) | count(municipality) | stdout(format=json)",
        oracle: Oracle::Sql(
            "select municipality, count(*) from read_csv('airports.csv') group by 1",
        ),
    },
    Job {
        name: "airports_zip_as_text_keeps_leading_zeros",
        stdin: Some("airports.csv"),
        topology: "stdin(format=csv, header=true, fields=[id, ident, type, name, elevation_ft, iso_country, municipality, zip], types={zip: str}) \
            | filter(\"len(zip) > 0\") | count(zip) | stdout(format=json)",
        oracle: Oracle::Sql(
            "select zip, count(*) from read_csv('airports.csv', types={'zip': 'VARCHAR'}) \
             where zip is not null group by 1",
        ),
    },
    Job {
        name: "airports_leading_zero_ids_print_back_as_written",
        stdin: Some("airports.csv"),
        topology: "stdin(format=csv, header=true, fields=[zip]) | count(zip) | stdout",
        oracle: Oracle::Lines(
            "import csv, collections\n\
             c = collections.Counter(r['zip'] for r in csv.DictReader(open('airports.csv')))\n\
             lines = [f'{z}\\t{n}' for z, n in c.items()]",
        ),
    },
    Job {
        name: "cars_json_array_pounds_per_horsepower",
        stdin: Some("cars.json"),
        topology: "stdin(format=json, fields=[Weight_in_lbs, Horsepower]) \
            | map(set={ppp: Weight_in_lbs / Horsepower}) | aggregate(ops=[avg(ppp), sum(ppp)]) \
            | stdout(format=json)",
        oracle: Oracle::Sql(
            "select avg(Weight_in_lbs / Horsepower), sum(Weight_in_lbs / Horsepower) \
             from read_json('cars.json')",
        ),
    },
    Job {
        name: "cars_four_and_four_point_zero_are_one_key",
        stdin: Some("cars.jsonl"),
        topology: "stdin(format=json, fields=[Cylinders]) | count(Cylinders) | stdout(format=json)",
        oracle: Oracle::Sql("select Cylinders, count(*) from read_json('cars.jsonl') group by 1"),
    },
    Job {
        name: "cars_dedupe_treats_mixed_numbers_as_one",
        stdin: Some("cars.jsonl"),
        topology: "stdin(format=json, fields=[Cylinders]) | dedupe(key=[Cylinders]) \
            | aggregate(ops=[count, sum(Cylinders)]) | stdout(format=json)",
        oracle: Oracle::Sql(
            "select count(*), sum(c) from (select distinct Cylinders as c from read_json('cars.jsonl'))",
        ),
    },
    Job {
        name: "cars_concatenated_pretty_json_per_origin",
        stdin: Some("cars_concat.json"),
        topology: "stdin(format=json, fields=[Origin, Miles_per_Gallon]) \
            | aggregate(by=[Origin], ops=[avg(Miles_per_Gallon), max(Miles_per_Gallon), count]) \
            | stdout(format=json)",
        oracle: Oracle::Sql(
            "select Origin, avg(Miles_per_Gallon), max(Miles_per_Gallon), count(*) \
             from read_json('cars.jsonl') group by 1",
        ),
    },
    Job {
        name: "cars_count_distinct_horsepower_across_int_and_float",
        stdin: Some("cars.json"),
        topology: "stdin(format=json, fields=[Horsepower]) \
            | aggregate(ops=[count_distinct(Horsepower), max(Horsepower)]) | stdout(format=json)",
        oracle: Oracle::Sql(
            "select count(distinct Horsepower), max(Horsepower) from read_json('cars.json')",
        ),
    },
    Job {
        name: "dpkg_log_actions",
        stdin: Some("dpkg.log"),
        topology: "stdin(format=regex, pattern='^(?P<day>\\S+) (?P<time>\\S+) (?P<action>\\S+) (?P<pkg>\\S+)') \
            | count(action) | stdout(format=json)",
        oracle: Oracle::Rows(
            "import collections\n\
             c = collections.Counter(l.split()[2] for l in open('dpkg.log'))\n\
             rows = [[a, n] for a, n in c.items()]",
        ),
    },
    Job {
        name: "dpkg_log_installs_per_package",
        stdin: Some("dpkg.log"),
        topology: "stdin(format=regex, pattern='^(?P<day>\\S+) (?P<time>\\S+) (?P<action>\\S+) (?P<pkg>\\S+)') \
            | filter(\"action == 'install' or action == 'upgrade'\") | count(pkg) | stdout(format=json)",
        oracle: Oracle::Rows(
            "import collections\n\
             c = collections.Counter(l.split()[3] for l in open('dpkg.log') \
                 if l.split()[2] in ('install', 'upgrade'))\n\
             rows = [[p, n] for p, n in c.items()]",
        ),
    },
    Job {
        name: "access_log_server_errors_per_path",
        stdin: Some("access.log"),
        topology: "stdin(format=combined, fields=[path, status]) | filter(\"status >= 500\") \
            | count(path) | stdout(format=json)",
        oracle: Oracle::Rows(
            "import collections, re\n\
             pat = re.compile(r'\"GET (\\S+) HTTP/1.1\" (\\d+)')\n\
             c = collections.Counter()\n\
             for l in open('access.log'):\n    \
                 p, s = pat.search(l).groups()\n    \
                 if int(s) >= 500: c[p] += 1\n\
             rows = [[p, n] for p, n in c.items()]",
        ),
    },
    Job {
        name: "access_log_bytes_per_status_skip_dashes",
        stdin: Some("access.log"),
        topology: "stdin(format=combined, fields=[status, bytes]) \
            | aggregate(by=[status], ops=[sum(bytes), max(bytes), count]) | stdout(format=json)",
        oracle: Oracle::Rows(
            "import collections\n\
             agg = {}\n\
             for l in open('access.log'):\n    \
                 s, b = l.split('\" ')[1].split(' ')[:2]\n    \
                 a = agg.setdefault(int(s), [[], 0])\n    \
                 a[1] += 1\n    \
                 if b != '-': a[0].append(int(b))\n\
             rows = [[s, sum(a[0]) if a[0] else None, max(a[0], default=None), a[1]] \
                 for s, a in agg.items()]",
        ),
    },
    Job {
        name: "logfmt_durations_compare_as_numbers",
        stdin: Some("service.logfmt"),
        topology: "stdin(format=logfmt, fields=[service, duration_ms]) \
            | aggregate(by=[service], ops=[max(duration_ms), min(duration_ms), sum(duration_ms)]) \
            | stdout(format=json)",
        oracle: Oracle::Rows(
            "agg = {}\n\
             for l in open('service.logfmt'):\n    \
                 kv = dict(p.split('=', 1) for p in l.split()[:4])\n    \
                 agg.setdefault(kv['service'], []).append(float(kv['duration_ms']))\n\
             rows = [[s, max(v), min(v), sum(v)] for s, v in agg.items()]",
        ),
    },
    Job {
        name: "global_count_over_a_header_only_csv_prints_zero",
        stdin: Some("header_only.csv"),
        topology: "stdin(format=csv, header=true, fields=[date, precipitation, temp_max, temp_min, wind, weather]) | aggregate(ops=[count, sum(wind)]) \
            | stdout(format=json)",
        oracle: Oracle::Rows("rows = [[0, None]]"),
    },
    Job {
        name: "tsv_output_escapes_a_newline_inside_a_cell",
        stdin: Some("airports.csv"),
        topology: "stdin(format=csv, header=true, fields=[id, ident, type, name, elevation_ft, iso_country, municipality, zip], types={id: int}) | filter(\"id == 9999\") \
            | stdout(format=tsv, fields=[id, name])",
        oracle: Oracle::Lines(
            "import csv\n\
             esc = lambda s: s.replace('\\\\', '\\\\\\\\').replace('\\t', '\\\\t')\
                 .replace('\\n', '\\\\n').replace('\\r', '\\\\r')\n\
             lines = [f\"{r['id']}\\t{esc(r['name'])}\" for r in csv.DictReader(open('airports.csv')) \
                 if r['id'] == '9999']",
        ),
    },
];

/// What the oracle said for one job.
#[derive(Debug)]
enum Expected {
    Rows(Vec<Vec<Value>>),
    Lines(Vec<String>),
}

/// Every job's expected answer, computed once by one Python process (DuckDB's import is the
/// slow part) and shared by the tests.
fn oracle() -> &'static BTreeMap<String, Expected> {
    static ANSWERS: OnceLock<BTreeMap<String, Expected>> = OnceLock::new();
    ANSWERS.get_or_init(|| {
        let jobs: Vec<Value> = JOBS
            .iter()
            .map(|job| {
                let (kind, code) = match job.oracle {
                    Oracle::Sql(sql) => ("sql", sql),
                    Oracle::Rows(py) => ("rows", py),
                    Oracle::Lines(py) => ("lines", py),
                };
                serde_json::json!({ "name": job.name, "kind": kind, "code": code })
            })
            .collect();
        let venv = crate::support::venv("duckdb", &["duckdb==2.0.1"], "import duckdb");
        let python = venv.join("bin/python");
        let mut child = Command::new(python)
            .args(["-c", ORACLE_PY])
            .current_dir(fixtures())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the oracle's Python starts");
        let input = serde_json::to_vec(&jobs).expect("jobs serialize");
        std::io::Write::write_all(&mut child.stdin.take().expect("stdin piped"), &input)
            .expect("the oracle reads its jobs");
        let out = child.wait_with_output().expect("the oracle ends");
        assert!(
            out.status.success(),
            "the oracle failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let answers: BTreeMap<String, Value> =
            serde_json::from_slice(&out.stdout).expect("the oracle prints JSON");
        answers
            .into_iter()
            .map(|(name, answer)| {
                let expected = match answer {
                    Value::Object(mut o) if o.contains_key("lines") => Expected::Lines(
                        serde_json::from_value(o.remove("lines").unwrap_or_default())
                            .expect("lines are strings"),
                    ),
                    Value::Object(mut o) => Expected::Rows(
                        serde_json::from_value(o.remove("rows").unwrap_or_default())
                            .expect("rows are lists"),
                    ),
                    other => panic!("the oracle's answer for {name} is {other}"),
                };
                (name, expected)
            })
            .collect()
    })
}

/// Runs each job's SQL or Python in the fixtures folder; prints `{name: {rows|lines: …}}`.
const ORACLE_PY: &str = r#"
import datetime, decimal, json, sys
import duckdb

def plain(v):
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    raise TypeError(repr(v))

answers = {}
for job in json.load(sys.stdin):
  try:
    if job["kind"] == "sql":
        answers[job["name"]] = {"rows": [list(r) for r in duckdb.sql(job["code"]).fetchall()]}
    else:
        scope = {}
        exec(job["code"], scope)
        key = "rows" if job["kind"] == "rows" else "lines"
        answers[job["name"]] = {key: scope[key]}
  except Exception as e:
    sys.exit(f"job {job['name']}: {type(e).__name__}: {e}")
print(json.dumps(answers, default=plain))
"#;

/// A value as compared: numbers by value to nine significant digits, text quoted (so the
/// number 5 and the text "5" differ), null, and nested values as JSON.
fn canonical(v: &Value) -> String {
    match v {
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => format!("{i}"),
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            (None, Some(f)) => format!("{f:.8e}"),
            (None, None) => n.to_string(),
        },
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn canonical_rows(rows: &[Vec<Value>]) -> Vec<String> {
    let mut out: Vec<String> = rows
        .iter()
        .map(|row| row.iter().map(canonical).collect::<Vec<_>>().join(" | "))
        .collect();
    out.sort();
    out
}

fn run_storm(job: &Job) -> String {
    let conf = tempfile::tempdir().expect("tempdir");
    let mut cmd = super::run::storm(conf.path());
    cmd.current_dir(fixtures())
        .args(["run", "-e", job.topology]);
    let input = match job.stdin {
        Some(file) => std::fs::read(fixtures().join(file)).expect("the fixture reads"),
        None => Vec::new(),
    };
    cmd.write_stdin(input);
    let out = cmd.output().expect("storm runs");
    assert!(
        out.status.success(),
        "{}: storm failed ({}):\n{}",
        job.name,
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("storm prints UTF-8")
}

fn check(name: &str) {
    let job = JOBS
        .iter()
        .find(|j| j.name == name)
        .expect("the job is listed");
    let got = run_storm(job);
    match &oracle()[name] {
        Expected::Lines(lines) => {
            let mut want: Vec<&str> = lines.iter().map(String::as_str).collect();
            let mut have: Vec<&str> = got.lines().collect();
            want.sort_unstable();
            have.sort_unstable();
            assert_eq!(have, want, "{name}: storm's lines differ from the oracle's");
        }
        Expected::Rows(rows) => {
            let have: Vec<Vec<Value>> = got
                .lines()
                .map(|line| match serde_json::from_str(line) {
                    Ok(Value::Object(o)) => o.into_iter().map(|(_, v)| v).collect(),
                    _ => panic!("{name}: storm printed a line that is not a JSON object: {line}"),
                })
                .collect();
            assert_eq!(
                canonical_rows(&have),
                canonical_rows(rows),
                "{name}: storm's rows (left) differ from the oracle's (right)"
            );
        }
    }
}

macro_rules! differential {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { check(stringify!($name)); })*

        /// Every listed job has its test and no test names a job that is not listed.
        #[test]
        fn every_job_has_a_test() {
            let tests = [$(stringify!($name)),*];
            let jobs: Vec<&str> = JOBS.iter().map(|j| j.name).collect();
            assert_eq!(tests.len(), jobs.len());
            for job in jobs {
                assert!(tests.contains(&job), "no test runs {job}");
            }
        }
    };
}

differential!(
    weather_max_precipitation_is_numeric,
    weather_windy_days_compare_decimals_with_an_integer,
    weather_average_temperature_per_kind,
    weather_monthly_precipitation_skips_empty_cells,
    weather_wind_mixes_integers_and_decimals,
    stocks_with_bom_and_crlf_per_symbol,
    stocks_up_days_compare_two_columns,
    stocks_daily_range_ratio_divides_as_floats,
    stocks_integer_over_integer_is_not_truncated,
    stocks_count_distinct_days,
    airports_elevation_with_empty_cells_per_type,
    airports_typed_empty_cell_keeps_its_row,
    airports_quoted_cells_with_commas_quotes_and_newlines,
    airports_zip_as_text_keeps_leading_zeros,
    airports_leading_zero_ids_print_back_as_written,
    cars_json_array_pounds_per_horsepower,
    cars_four_and_four_point_zero_are_one_key,
    cars_dedupe_treats_mixed_numbers_as_one,
    cars_concatenated_pretty_json_per_origin,
    cars_count_distinct_horsepower_across_int_and_float,
    dpkg_log_actions,
    dpkg_log_installs_per_package,
    access_log_server_errors_per_path,
    access_log_bytes_per_status_skip_dashes,
    logfmt_durations_compare_as_numbers,
    global_count_over_a_header_only_csv_prints_zero,
    tsv_output_escapes_a_newline_inside_a_cell,
);
