//! The `jdbc_lookup` bolt (Storm's `JdbcLookupBolt`): for each tuple, `query` runs with the
//! `params` fields as `$1…`, and the tuple goes on with the `select`ed columns of each row
//! added — one tuple per row, as Storm emits; a tuple with no row is dropped (`missing:
//! drop`, Storm's) or goes on with nulls (`missing: null`). Answers are kept in a bounded
//! cache with a time to live (`cache: {size, ttl}`) keyed by the parameters' values. A query
//! the server cannot be reached for within `retry` fails its tuple (replayed).

use super::args::{self, Args};
use super::pool::{Failure, Pool};
use super::values::{decode, encode, Enc};
use crate::components::{Bolt, BoltCollector, FatalError, Stopping, TaskContext};
use crate::model::plan::streams;
use crate::tuple::{Tuple, Value, Values};
use postgres::types::Type;
use serde_json::Value as Json;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The answers of the last queries: parameters' text → selected rows, each with when it was
/// read; at most `size` of them, none older than `ttl`.
pub(crate) struct Cache {
    entries: lru::LruCache<String, (Instant, Arc<Vec<Values>>)>,
    ttl: Duration,
}

impl Cache {
    fn new(size: NonZeroUsize, ttl: Duration) -> Cache {
        Cache {
            entries: lru::LruCache::new(size),
            ttl,
        }
    }

    fn get(&mut self, key: &str, now: Instant) -> Option<Arc<Vec<Values>>> {
        let (at, rows) = self.entries.get(key)?;
        if now.saturating_duration_since(*at) < self.ttl {
            return Some(rows.clone());
        }
        self.entries.pop(key);
        None
    }

    fn put(&mut self, key: String, rows: Arc<Vec<Values>>, now: Instant) {
        self.entries.put(key, (now, rows));
    }
}

/// `cache: N` (entries, kept 60s) or `cache: {size: N, ttl: 60s}`; none without it.
pub(crate) fn cache_of(a: &Args) -> Result<Option<Cache>, args::Problem> {
    let bad = |m: &str| (Some("cache"), m.to_string());
    let size = |v: &Json| {
        v.as_u64()
            .and_then(|n| NonZeroUsize::new(n as usize))
            .ok_or_else(|| bad("`cache` size must be a whole number ≥ 1"))
    };
    let ttl = Duration::from_secs(60);
    match a.get("cache") {
        None => Ok(None),
        Some(n @ Json::Number(_)) => Ok(Some(Cache::new(size(n)?, ttl))),
        Some(Json::Object(m)) => {
            if let Some(k) = m.keys().find(|k| !matches!(k.as_str(), "size" | "ttl")) {
                return Err(bad(&format!("`cache` takes `size` and `ttl`, not `{k}`")));
            }
            let n = size(m.get("size").ok_or_else(|| bad("`cache` needs `size`"))?)?;
            let ttl = match m.get("ttl") {
                None => ttl,
                Some(v) => crate::config::duration_of(v)
                    .ok_or_else(|| bad("`cache.ttl` must be a duration (`60s`)"))?,
            };
            Ok(Some(Cache::new(n, ttl)))
        }
        Some(_) => Err(bad("`cache` must be a size or `{size, ttl}`")),
    }
}

pub(crate) struct JdbcLookup {
    url: String,
    query: String,
    params: Vec<String>,
    select: Vec<String>,
    keep_missing: bool,
    retry: Duration,
    cache: Option<Cache>,
    label: String,
    param_positions: Vec<usize>,
    param_types: Vec<Type>,
    /// Where each `select`ed column is in the query's result.
    selected: Vec<usize>,
    pool: Option<Arc<Pool>>,
    stopping: Stopping,
    warnings: crate::logging::Throttle,
}

impl JdbcLookup {
    pub(crate) fn new(a: &Args) -> Result<JdbcLookup, String> {
        let m = |p: args::Problem| p.1;
        let query = a
            .get("query")
            .and_then(Json::as_str)
            .ok_or("needs `query` (a SELECT with `$1…` for the `params`)")?
            .to_string();
        let params = args::names(a, "params").map_err(m)?;
        let wanted = args::parameter_count(&query);
        if wanted != params.len() {
            return Err(format!(
                "`query` takes {wanted} parameter(s) ($1…${wanted}) but `params` names {}",
                params.len()
            ));
        }
        let select = args::names(a, "select").map_err(m)?;
        if select.is_empty() {
            return Err(
                "needs `select`: the columns of the query's rows added to the tuple".into(),
            );
        }
        let keep_missing = match a.get("missing").map(Json::as_str) {
            None | Some(Some("drop")) => false,
            Some(Some("null")) => true,
            _ => return Err("`missing` is `drop` (no row: no tuple) or `null`".into()),
        };
        Ok(JdbcLookup {
            url: args::url(a).map_err(m)?.to_string(),
            query,
            params,
            select,
            keep_missing,
            retry: args::retry(a).map_err(m)?,
            cache: cache_of(a).map_err(m)?,
            label: "jdbc_lookup".into(),
            param_positions: Vec::new(),
            param_types: Vec::new(),
            selected: Vec::new(),
            pool: None,
            stopping: Stopping::never(),
            warnings: crate::logging::Throttle::new(Duration::from_secs(10)),
        })
    }

    /// Connect, prepare the query, and find the `select`ed columns among its result's.
    fn connect(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        let pool = Pool::for_task(ctx, &self.url, &self.label)?;
        let query = self.query.clone();
        let stmt = pool
            .with(Duration::ZERO, &|| true, |conn| conn.prepare(&query))
            .map_err(|e| match e {
                Failure::Unreachable(m) => {
                    FatalError(format!("{}: cannot connect: {m}", self.label))
                }
                Failure::Refused(m) => FatalError(format!("{}: `query`: {m}", self.label)),
            })?;
        let columns: Vec<&str> = stmt.columns().iter().map(|c| c.name()).collect();
        self.selected = self
            .select
            .iter()
            .map(|s| {
                columns.iter().position(|c| c == s).ok_or_else(|| {
                    FatalError(format!(
                        "{}: `select` names `{s}`, which the query does not return; it returns: {}",
                        self.label,
                        columns.join(", ")
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        super::spout::check_readable(&stmt, &self.selected)
            .map_err(|e| FatalError(format!("{}: {e}", self.label)))?;
        self.param_types = stmt.params().to_vec();
        self.pool = Some(pool);
        Ok(())
    }

    /// The selected rows for `params`, from the cache or the server.
    fn rows(&mut self, params: &[Enc], key: String) -> Result<Arc<Vec<Values>>, Failure> {
        let now = Instant::now();
        if let Some(rows) = self.cache.as_mut().and_then(|c| c.get(&key, now)) {
            return Ok(rows);
        }
        let pool = self
            .pool
            .clone()
            .ok_or(Failure::Refused("not connected".into()))?;
        let stop = {
            let s = self.stopping.clone();
            move || s.now()
        };
        let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
            params.iter().map(|p| p as _).collect();
        let (query, selected) = (&self.query, &self.selected);
        let rows = pool.with(self.retry, &stop, |conn| {
            let stmt = conn.prepare(query)?;
            conn.client.query(&stmt, &refs)
        })?;
        let rows: Vec<Values> = rows
            .iter()
            .map(|r| selected.iter().map(|&i| decode(r, i)).collect())
            .collect::<Result<_, _>>()
            .map_err(Failure::Refused)?;
        let rows = Arc::new(rows);
        if let Some(c) = self.cache.as_mut() {
            c.put(key, rows.clone(), now);
        }
        Ok(rows)
    }

    /// The parameters of `input`, encoded, and their cache key.
    fn params_of(&self, input: &Tuple) -> Result<(Vec<Enc>, String), String> {
        let mut key = String::new();
        let mut params = Vec::with_capacity(self.param_positions.len());
        for (i, &at) in self.param_positions.iter().enumerate() {
            let v = input.values.get(at).cloned().unwrap_or(Value::Null);
            key.push_str(&v.key_text());
            key.push('\u{1f}');
            let ty = self.param_types.get(i).unwrap_or(&Type::TEXT);
            let enc = encode(&v, ty)
                .map_err(|e| format!("field `{}` (parameter ${}): {e}", self.params[i], i + 1))?;
            params.push(enc);
        }
        Ok((params, key))
    }
}

impl Bolt for JdbcLookup {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.label = format!("{} task {}", ctx.component, ctx.task_id);
        self.param_positions = crate::components::input_positions(ctx, &self.params)?;
        self.stopping = ctx.stopping.clone();
        self.connect(ctx)
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            out.ack(input);
            return Ok(());
        }
        let (params, key) = match self.params_of(input) {
            Ok(p) => p,
            Err(e) => {
                if let Some(n) = self.warnings.allow() {
                    tracing::warn!("{}: {e}; tuple dropped ({n} more)", self.label);
                }
                out.dropped(1);
                out.ack(input);
                return Ok(());
            }
        };
        let rows = match self.rows(&params, key) {
            Ok(rows) => rows,
            Err(Failure::Unreachable(e)) => {
                let msg = format!(
                    "{}: a lookup failed, its tuple is replayed: {e}",
                    self.label
                );
                tracing::warn!("{msg}");
                out.report_error(&msg);
                out.fail(input);
                return Ok(());
            }
            Err(Failure::Refused(e)) => {
                return Err(FatalError(format!("{}: the query failed: {e}", self.label)).into())
            }
        };
        for row in rows.iter() {
            let mut values = input.values.clone();
            values.extend(row.iter().cloned());
            out.send(streams::DEFAULT, &[input], values);
        }
        if rows.is_empty() && self.keep_missing {
            let mut values = input.values.clone();
            values.extend(self.select.iter().map(|_| Value::Null));
            out.send(streams::DEFAULT, &[input], values);
        }
        out.ack(input);
        Ok(())
    }

    fn auto_ack(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_is_bounded_and_forgets_after_its_ttl() {
        let size = NonZeroUsize::new(2).expect("2 > 0");
        let mut c = Cache::new(size, Duration::from_secs(10));
        let t0 = Instant::now();
        let rows = |n: i64| Arc::new(vec![Values::from_elem(Value::Int(n), 1)]);
        c.put("a".into(), rows(1), t0);
        c.put("b".into(), rows(2), t0);
        assert_eq!(c.get("a", t0), Some(rows(1)));
        c.put("c".into(), rows(3), t0);
        // `b` was the least recently used of the two.
        assert_eq!(c.get("b", t0), None);
        assert_eq!(c.get("a", t0 + Duration::from_secs(9)), Some(rows(1)));
        assert_eq!(c.get("a", t0 + Duration::from_secs(10)), None);
    }

    #[test]
    fn params_must_match_the_query() {
        let a = serde_json::json!({
            "url": "postgresql://u@h/db", "query": "select n from t where a = $1 and b = $2",
            "params": ["a"], "select": ["n"]
        });
        let e = JdbcLookup::new(a.as_object().expect("object")).err();
        assert!(e.is_some_and(|e| e.contains("takes 2 parameter(s)")));
        let c = serde_json::json!({"cache": {"size": 0}});
        assert!(cache_of(c.as_object().expect("object")).is_err());
    }
}
