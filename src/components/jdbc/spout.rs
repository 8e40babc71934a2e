//! The `jdbc` spout: reads `table` (or the rows of `query`) incrementally by `column`, a
//! column whose values only increase (a serial id, an insertion time), as Kafka Connect's JDBC
//! source does in its incrementing mode: every `poll` it asks for the rows past the last value
//! it read (`WHERE column > $1 ORDER BY column LIMIT batch`; a `query` says it itself with
//! `$1`), starting after `start`, and emits one tuple of `columns` per row, tracked until
//! acked (a failed one is emitted again, up to `max_retries`). In a checkpointed topology the
//! last value and the rows in flight are its position, so a restarted run goes on exactly from
//! there; without checkpoints a restart reads from `start` again.
//! Rows committed later with a lower value than one already read are not seen.

use super::args::{self, Args};
use super::pool::{Failure, Pool};
use super::values::{decode, encode};
use crate::components::{FatalError, Spout, SpoutCollector, SpoutStatus, TaskContext};
use crate::model::plan::streams;
use crate::tuple::{Value, Values};
use postgres::types::Type;
use serde_json::Value as Json;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) struct JdbcSpout {
    url: String,
    /// The query with the bound (`$1`), and (table, no `start`) the one without it.
    bounded: String,
    unbounded: Option<String>,
    column: String,
    columns: Vec<String>,
    poll: Duration,
    retry: Duration,
    max_retries: Option<u32>,
    label: String,
    pool: Option<Arc<Pool>>,
    /// Where the emitted columns and the position column are in a result row.
    picked: Vec<usize>,
    column_at: usize,
    bound_type: Type,
    /// The position column's value of the last row read, and of the last emitted.
    read_at: Option<Value>,
    emitted_at: Option<Value>,
    buffer: VecDeque<(Values, Value)>,
    next_poll: Instant,
    kept: HashMap<u64, (Values, u32)>,
    next_id: u64,
    failed: VecDeque<u64>,
    lost: u64,
    warnings: crate::logging::Throttle,
}

/// The spout's arguments: (bounded query, unbounded query, column, columns).
type Queries = (String, Option<String>, String, Vec<String>);

/// The queries the spout runs, from `table` or `query`.
pub(crate) fn queries(a: &Args, limit: usize) -> Result<Queries, args::Problem> {
    let column = args::sql_name(a, "column", false)?;
    let columns = args::names(a, "columns")?;
    if columns.is_empty() {
        return Err((
            Some("columns"),
            "needs `columns`: the columns read, the tuple's fields".into(),
        ));
    }
    match (a.get("table"), a.get("query").and_then(Json::as_str)) {
        (Some(_), None) => {
            let table = args::sql_name(a, "table", true)?;
            if let Some(c) = columns.iter().find(|c| !args::is_sql_name(c, false)) {
                return Err((
                    Some("columns"),
                    format!("column `{c}` is not a plain SQL name"),
                ));
            }
            let mut list = columns.join(", ");
            if !columns.contains(&column) {
                list.push_str(&format!(", {column}"));
            }
            let select = format!("SELECT {list} FROM {table}");
            let order = format!("ORDER BY {column} LIMIT {limit}");
            Ok((
                format!("{select} WHERE {column} > $1 {order}"),
                Some(format!("{select} {order}")),
                column,
                columns,
            ))
        }
        (None, Some(q)) => {
            if args::parameter_count(q) != 1 {
                return Err((Some("query"), "`query` must use `$1` (and only it): the last value of `column` read, as in `SELECT … WHERE id > $1 ORDER BY id`".into()));
            }
            if !a.contains_key("start") {
                return Err((
                    Some("start"),
                    "a `query` needs `start`: the value of `column` to read after".into(),
                ));
            }
            Ok((q.to_string(), None, column, columns))
        }
        (Some(_), Some(_)) => Err((Some("query"), "give `table` or `query`, not both".into())),
        (None, None) => Err((None, "needs `table` (with `column`) or `query`".into())),
    }
}

/// Whether storm reads the columns at `picked` of `stmt`'s result; the error says which does
/// not and how to cast it.
pub(crate) fn check_readable(stmt: &postgres::Statement, picked: &[usize]) -> Result<(), String> {
    for &i in picked {
        let c = &stmt.columns()[i];
        let ty = c.type_();
        let plain = [
            Type::BOOL,
            Type::INT2,
            Type::INT4,
            Type::INT8,
            Type::OID,
            Type::FLOAT4,
            Type::FLOAT8,
        ];
        let ok = plain.contains(ty)
            || <String as postgres::types::FromSql>::accepts(ty)
            || super::values_read::READABLE.contains(ty);
        if !ok {
            return Err(format!(
                "column `{}` is a {}, which storm cannot read; cast it in the query (`{}::text`)",
                c.name(),
                ty.name(),
                c.name()
            ));
        }
    }
    Ok(())
}

impl JdbcSpout {
    pub(crate) fn new(a: &Args) -> Result<JdbcSpout, String> {
        let m = |p: args::Problem| p.1;
        let limit = args::batch(a, 1000).map_err(m)?.rows;
        let (bounded, unbounded, column, columns) = queries(a, limit).map_err(m)?;
        let poll = match a.get("poll") {
            None => Duration::from_secs(1),
            Some(v) => crate::config::duration_of(v).ok_or("`poll` must be a duration (`1s`)")?,
        };
        let start = a.get("start").map(Value::from_json);
        Ok(JdbcSpout {
            url: args::url(a).map_err(m)?.to_string(),
            unbounded: unbounded.filter(|_| start.is_none()),
            bounded,
            column,
            columns,
            poll,
            retry: args::retry(a).map_err(m)?,
            max_retries: crate::components::replay::max_retries(a),
            label: "jdbc".into(),
            pool: None,
            picked: Vec::new(),
            column_at: 0,
            bound_type: Type::INT8,
            read_at: start.clone(),
            emitted_at: start,
            buffer: VecDeque::new(),
            next_poll: Instant::now(),
            kept: HashMap::new(),
            next_id: 0,
            failed: VecDeque::new(),
            lost: 0,
            warnings: crate::logging::Throttle::new(Duration::from_secs(10)),
        })
    }

    /// Connect, prepare the queries, and find the columns in their result.
    fn connect(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        let pool = Pool::for_task(ctx, &self.url, &self.label)?;
        let (bounded, unbounded) = (self.bounded.clone(), self.unbounded.clone());
        let stmt = pool
            .with(Duration::ZERO, &|| true, |conn| {
                if let Some(u) = &unbounded {
                    conn.prepare(u)?;
                }
                conn.prepare(&bounded)
            })
            .map_err(|e| match e {
                Failure::Unreachable(m) => {
                    FatalError(format!("{}: cannot connect: {m}", self.label))
                }
                Failure::Refused(m) => FatalError(format!("{}: cannot read: {m}", self.label)),
            })?;
        let names: Vec<&str> = stmt.columns().iter().map(|c| c.name()).collect();
        let find = |name: &str| {
            names.iter().position(|c| *c == name).ok_or_else(|| {
                FatalError(format!(
                    "{}: the rows read have no column `{name}`; they have: {}",
                    self.label,
                    names.join(", ")
                ))
            })
        };
        self.picked = self
            .columns
            .iter()
            .map(|c| find(c))
            .collect::<Result<_, _>>()?;
        self.column_at = find(&self.column)?;
        let mut all = self.picked.clone();
        all.push(self.column_at);
        check_readable(&stmt, &all).map_err(|e| FatalError(format!("{}: {e}", self.label)))?;
        self.bound_type = stmt.params().first().cloned().unwrap_or(Type::INT8);
        self.pool = Some(pool);
        Ok(())
    }

    /// Read the next rows past `read_at` into the buffer; how many came.
    fn fetch(&mut self) -> anyhow::Result<usize> {
        let pool = self
            .pool
            .clone()
            .ok_or_else(|| anyhow::anyhow!("not connected"))?;
        let bound = match &self.read_at {
            Some(v) => Some(encode(v, &self.bound_type).map_err(|e| {
                FatalError(format!(
                    "{}: the last `{}` read: {e}",
                    self.label, self.column
                ))
            })?),
            None => None,
        };
        let sql = match (&bound, &self.unbounded) {
            (None, Some(u)) => u.clone(),
            _ => self.bounded.clone(),
        };
        let rows = pool.with(self.retry, &|| false, |conn| {
            let stmt = conn.prepare(&sql)?;
            match &bound {
                Some(b) => conn.client.query(&stmt, &[b]),
                None => conn.client.query(&stmt, &[]),
            }
        });
        let rows = match rows {
            Ok(rows) => rows,
            Err(Failure::Unreachable(e)) => {
                if let Some(n) = self.warnings.allow() {
                    tracing::warn!(
                        "{}: {e}; reading again in {:?} ({n} more)",
                        self.label,
                        self.poll
                    );
                }
                return Ok(0);
            }
            Err(Failure::Refused(e)) => {
                return Err(FatalError(format!("{}: cannot read: {e}", self.label)).into())
            }
        };
        for row in &rows {
            let values: Values = self
                .picked
                .iter()
                .map(|&i| decode(row, i))
                .collect::<Result<_, _>>()
                .map_err(|e| FatalError(format!("{}: {e}", self.label)))?;
            let at = decode(row, self.column_at)
                .map_err(|e| FatalError(format!("{}: {e}", self.label)))?;
            if matches!(at, Value::Null) {
                continue;
            }
            self.read_at = Some(at.clone());
            self.buffer.push_back((values, at));
        }
        Ok(rows.len())
    }

    fn emit(&mut self, values: Values, retries: u32, out: &mut dyn SpoutCollector) {
        self.next_id += 1;
        self.kept.insert(self.next_id, (values.clone(), retries));
        out.send(
            streams::DEFAULT,
            values,
            Some(Value::Int(self.next_id as i64)),
        );
    }
}

fn id_of(msg_id: &Value) -> Option<u64> {
    match msg_id {
        Value::Int(n) => u64::try_from(*n).ok(),
        _ => None,
    }
}

impl Spout for JdbcSpout {
    fn open(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.label = format!("{} task {}", ctx.component, ctx.task_id);
        if ctx.task_index > 0 {
            anyhow::bail!(
                "{}: a `jdbc` spout reads with one task (parallelism 1)",
                self.label
            );
        }
        self.connect(ctx)
    }

    fn next_tuple(&mut self, out: &mut dyn SpoutCollector) -> anyhow::Result<SpoutStatus> {
        while let Some(id) = self.failed.pop_front() {
            if let Some((values, retries)) = self.kept.remove(&id) {
                self.emit(values, retries + 1, out);
                return Ok(SpoutStatus::Busy);
            }
        }
        if let Some((values, at)) = self.buffer.pop_front() {
            self.emitted_at = Some(at);
            self.emit(values, 0, out);
            return Ok(SpoutStatus::Busy);
        }
        if Instant::now() < self.next_poll {
            return Ok(SpoutStatus::Idle);
        }
        if self.fetch()? == 0 {
            self.next_poll = Instant::now() + self.poll;
            return Ok(SpoutStatus::Idle);
        }
        Ok(SpoutStatus::Busy)
    }

    fn ack(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        if let Some(id) = id_of(&msg_id) {
            self.kept.remove(&id);
        }
        Ok(())
    }

    fn fail(&mut self, msg_id: Value, _out: &mut dyn SpoutCollector) -> anyhow::Result<()> {
        let Some(id) = id_of(&msg_id) else {
            return Ok(());
        };
        let Some((_, retries)) = self.kept.get(&id) else {
            return Ok(());
        };
        if self.max_retries.is_some_and(|m| *retries >= m) {
            self.kept.remove(&id);
            self.lost += 1;
            return Ok(());
        }
        self.failed.push_back(id);
        Ok(())
    }

    fn lost(&self) -> u64 {
        self.lost
    }

    /// `{at: the last value emitted, kept: [the rows in flight]}`.
    fn position(&mut self) -> Option<Value> {
        let mut kept: Vec<(&u64, &(Values, u32))> = self.kept.iter().collect();
        kept.sort_by_key(|(id, _)| **id);
        let kept = kept
            .into_iter()
            .map(|(_, (v, _))| Value::list(v.to_vec()))
            .collect();
        let mut map = std::collections::BTreeMap::new();
        map.insert(
            "at".to_string(),
            self.emitted_at.clone().unwrap_or(Value::Null),
        );
        map.insert("kept".to_string(), Value::list(kept));
        Some(Value::Map(Box::new(map)))
    }

    fn restore(&mut self, position: Value) -> anyhow::Result<()> {
        let Value::Map(map) = position else {
            anyhow::bail!("{}: the position is not of a `jdbc` spout", self.label);
        };
        let at = map.get("at").cloned().filter(|v| !matches!(v, Value::Null));
        if at.is_some() {
            self.unbounded = None;
        }
        self.read_at = at.clone();
        self.emitted_at = at;
        self.buffer.clear();
        if let Some(Value::List(kept)) = map.get("kept") {
            for row in kept.iter() {
                let Value::List(values) = row else { continue };
                self.emit_later(values.iter().cloned().collect());
            }
        }
        Ok(())
    }
}

impl JdbcSpout {
    /// A restored row in flight: emitted again first.
    fn emit_later(&mut self, values: Values) {
        self.next_id += 1;
        self.kept.insert(self.next_id, (values, 0));
        self.failed.push_back(self.next_id);
    }
}
