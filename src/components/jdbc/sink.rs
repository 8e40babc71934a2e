//! The `jdbc` sink bolt (Storm's `JdbcInsertBolt`): each tuple is one row of `table`, its
//! `columns` taken from fields, inserted — or upserted with `on_conflict` — in batches of
//! `batch.rows` rows (or what came within `batch.timeout`), one transaction per batch of
//! multi-row `INSERT`s. A tuple is acked once its row committed; a batch the server cannot be
//! reached for within `retry` is failed (its tuples replayed: at least once). A value that
//! does not fit its column drops its tuple with a warning naming the field and the column.
//!
//! With `stateful: true` the rows are held until the checkpoint covering them commits
//! (`held`), then written in one transaction with the sink's number for that checkpoint in the
//! marker table (`commits_table`, default `storm_commits`, one row per topology, component and
//! task); a number already there is skipped, so a restarted run that writes a checkpoint
//! again writes nothing twice: exactly once, also for plain inserts without a key.

use super::args::{self, Batch};
use super::held::{Held, Row};
use super::pool::{Conn, Failure, Pool};
use super::values::{encode, Enc};
use crate::components::{Bolt, BoltCollector, BoltState, FatalError, Stopping, TaskContext};
use crate::tuple::{Tuple, Value};
use postgres::types::Type;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Parameters one statement may carry (PostgreSQL's limit is 65535).
const MAX_PARAMS: usize = 65_535;

pub(crate) struct JdbcSink {
    url: String,
    table: String,
    /// (column, field) pairs.
    columns: Vec<(String, String)>,
    keys: Vec<String>,
    batch: Batch,
    retry: Duration,
    commits_table: String,
    stateful: bool,
    label: String,
    positions: Vec<usize>,
    key_positions: Vec<usize>,
    types: Vec<Type>,
    pool: Option<Arc<Pool>>,
    /// Rows waiting for their batch, with their tuples (not stateful).
    pending: Vec<(Vec<Enc>, Tuple)>,
    first_at: Option<Instant>,
    held: Option<Held>,
    /// The marker row's key: topology, component, task index.
    marker: (String, String, i32),
    stopping: Stopping,
    warnings: crate::logging::Throttle,
}

impl JdbcSink {
    pub(crate) fn new(a: &args::Args, stateful: bool) -> Result<JdbcSink, String> {
        let named = |p: args::Problem| p.1;
        let columns = args::columns(a).map_err(named)?;
        Ok(JdbcSink {
            url: args::url(a).map_err(named)?.to_string(),
            table: args::sql_name(a, "table", true).map_err(named)?,
            keys: args::on_conflict(a, &columns).map_err(named)?,
            columns,
            batch: args::batch(a, 500).map_err(named)?,
            retry: args::retry(a).map_err(named)?,
            commits_table: match a.get("commits_table") {
                None => "storm_commits".into(),
                Some(_) => args::sql_name(a, "commits_table", true).map_err(named)?,
            },
            stateful,
            label: "jdbc".into(),
            positions: Vec::new(),
            key_positions: Vec::new(),
            types: Vec::new(),
            pool: None,
            pending: Vec::new(),
            first_at: None,
            held: None,
            marker: Default::default(),
            stopping: Stopping::never(),
            warnings: crate::logging::Throttle::new(Duration::from_secs(10)),
        })
    }

    /// The `INSERT` of `rows` rows.
    fn insert_sql(&self, rows: usize) -> String {
        let n = self.columns.len();
        let names: Vec<&str> = self.columns.iter().map(|(c, _)| c.as_str()).collect();
        let mut sql = format!("INSERT INTO {} ({}) VALUES ", self.table, names.join(", "));
        for r in 0..rows {
            sql.push_str(if r == 0 { "(" } else { ", (" });
            for c in 0..n {
                if c > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&format!("${}", r * n + c + 1));
            }
            sql.push(')');
        }
        if !self.keys.is_empty() {
            let set: Vec<String> = names
                .iter()
                .filter(|c| !self.keys.iter().any(|k| k == *c))
                .map(|c| format!("{c} = EXCLUDED.{c}"))
                .collect();
            sql.push_str(&format!(" ON CONFLICT ({}) DO ", self.keys.join(", ")));
            match set.is_empty() {
                true => sql.push_str("NOTHING"),
                false => sql.push_str(&format!("UPDATE SET {}", set.join(", "))),
            }
        }
        sql
    }

    /// Rows per statement.
    fn per_statement(&self) -> usize {
        self.batch
            .rows
            .min(MAX_PARAMS / self.columns.len().max(1))
            .max(1)
    }

    /// `values` (the columns' values, in order) encoded; the error names the field and column.
    fn encode_row(&self, values: &[Value]) -> Result<Vec<Enc>, String> {
        values
            .iter()
            .zip(&self.types)
            .zip(&self.columns)
            .map(|((v, ty), (column, field))| {
                encode(v, ty).map_err(|e| {
                    format!(
                        "field `{field}` (column `{column}` of `{}`): {e}",
                        self.table
                    )
                })
            })
            .collect()
    }

    /// The input's column values, or `None` when one does not fit (warned, counted).
    fn row_of(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> Option<(Row, Vec<Enc>)> {
        let row: Row = self
            .positions
            .iter()
            .map(|&at| input.values.get(at).cloned().unwrap_or(Value::Null))
            .collect();
        match self.encode_row(&row) {
            Ok(enc) => Some((row, enc)),
            Err(e) => {
                if let Some(n) = self.warnings.allow() {
                    tracing::warn!("{}: {e}; tuple dropped ({n} more)", self.label);
                }
                out.dropped(1);
                None
            }
        }
    }

    /// The rows with a later row of the same key left out (one statement cannot upsert a
    /// key twice): the last row of each key is the one that stays, as in row-by-row upserts.
    fn last_per_key<'a>(&self, rows: &'a [Vec<Enc>], keys: &[String]) -> Vec<&'a Vec<Enc>> {
        if self.keys.is_empty() {
            return rows.iter().collect();
        }
        let mut last = std::collections::HashMap::new();
        for (i, k) in keys.iter().enumerate() {
            last.insert(k.as_str(), i);
        }
        rows.iter()
            .enumerate()
            .filter(|(i, _)| last.get(keys[*i].as_str()) == Some(i))
            .map(|(_, r)| r)
            .collect()
    }

    /// The key text of each row (for `last_per_key`).
    fn key_texts(&self, rows: &[Vec<Enc>]) -> Vec<String> {
        rows.iter()
            .map(|r| {
                self.key_positions
                    .iter()
                    .map(|&i| format!("{:?}", r[i]))
                    .collect::<Vec<_>>()
                    .join("\u{1f}")
            })
            .collect()
    }

    /// Write `rows` in one transaction, with the marker of checkpoint `number` when given
    /// (skipped, returning false, when the marker table has it already).
    fn write(&self, rows: &[Vec<Enc>], number: Option<u64>) -> Result<bool, Failure> {
        let pool = self
            .pool
            .clone()
            .ok_or(Failure::Refused("not connected".into()))?;
        let keys = self.key_texts(rows);
        let rows = self.last_per_key(rows, &keys);
        let per = self.per_statement();
        let stop = {
            let s = self.stopping.clone();
            move || s.now()
        };
        pool.with(self.retry, &stop, |conn| {
            self.write_on(conn, &rows, per, number)
        })
    }

    fn write_on(
        &self,
        conn: &mut Conn,
        rows: &[&Vec<Enc>],
        per: usize,
        number: Option<u64>,
    ) -> Result<bool, postgres::Error> {
        let full = conn.prepare(&self.insert_sql(per))?;
        let last = match rows.len() % per {
            0 => None,
            n => Some(conn.prepare(&self.insert_sql(n))?),
        };
        let marker_sql = self.marker_sql();
        let mut tx = conn.client.transaction()?;
        let (topology, component, task) = &self.marker;
        let key: [&(dyn postgres::types::ToSql + Sync); 3] = [topology, component, task];
        if let Some(number) = number {
            let lock = &marker_sql[0];
            let at: Option<i64> = tx.query_opt(lock.as_str(), &key)?.map(|r| r.get(0));
            if at.is_some_and(|at| at >= number as i64) {
                return Ok(false);
            }
        }
        let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> = Vec::new();
        for chunk in rows.chunks(per) {
            params.clear();
            params.extend(
                chunk
                    .iter()
                    .flat_map(|r| r.iter().map(|e| e as &(dyn postgres::types::ToSql + Sync))),
            );
            let stmt = if chunk.len() == per {
                &full
            } else {
                last.as_ref().unwrap_or(&full)
            };
            tx.execute(stmt, &params)?;
        }
        if let Some(number) = number {
            let n = number as i64;
            tx.execute(marker_sql[1].as_str(), &[key[0], key[1], key[2], &n])?;
        }
        tx.commit()?;
        Ok(true)
    }

    /// The marker table's statements: lock and read this task's row, set it.
    fn marker_sql(&self) -> [String; 2] {
        let t = &self.commits_table;
        [
            format!("SELECT txid FROM {t} WHERE topology = $1 AND component = $2 AND task = $3 FOR UPDATE"),
            format!(
                "INSERT INTO {t} (topology, component, task, txid) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (topology, component, task) DO UPDATE SET txid = EXCLUDED.txid"
            ),
        ]
    }

    /// Write what waits (not stateful): ack its tuples once committed, fail them when the
    /// server could not be reached (they are replayed).
    fn flush(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.first_at = None;
        let pending = std::mem::take(&mut self.pending);
        let (rows, tuples): (Vec<Vec<Enc>>, Vec<Tuple>) = pending.into_iter().unzip();
        match self.write(&rows, None) {
            Ok(_) => tuples.iter().for_each(|t| out.ack(t)),
            Err(Failure::Unreachable(e)) => {
                let msg = format!(
                    "{}: {} rows not written, replayed: {e}",
                    self.label,
                    rows.len()
                );
                tracing::warn!("{msg}");
                out.report_error(&msg);
                tuples.iter().for_each(|t| out.fail(t));
            }
            Err(Failure::Refused(e)) => return Err(self.refused(rows.len(), &e)),
        }
        Ok(())
    }

    fn refused(&self, rows: usize, e: &str) -> anyhow::Error {
        FatalError(format!(
            "{}: `{}` refused a batch of {rows} row(s): {e}",
            self.label, self.table
        ))
        .into()
    }

    /// Write each committed checkpoint's rows; with `wait`, wait (bounded) for the last one
    /// marked to commit first.
    fn write_committed(&mut self, wait: bool) -> anyhow::Result<()> {
        let Some(last) = self.held.as_ref().and_then(Held::last_ready) else {
            return Ok(());
        };
        if wait && !crate::components::committed::wait_for(last, self.retry) {
            return Err(FatalError(format!(
                "{}: checkpoint {last} did not commit within {}s; its rows are not written",
                self.label,
                self.retry.as_secs()
            ))
            .into());
        }
        let committed = crate::components::committed::last();
        while let Some((txid, (number, rows))) = self.held.as_mut().and_then(|h| h.due(committed)) {
            self.write_numbered(number, &rows)
                .map_err(|e| FatalError(format!("{}: checkpoint {txid}: {e}", self.label)))?;
        }
        Ok(())
    }

    /// Write checkpoint `number`'s rows with its marker (nothing when it is there already).
    fn write_numbered(&self, number: u64, rows: &[Row]) -> Result<(), String> {
        let enc: Vec<Vec<Enc>> = rows
            .iter()
            .map(|r| self.encode_row(r))
            .collect::<Result<_, _>>()?;
        let written = self.write(&enc, Some(number)).map_err(|e| e.to_string())?;
        let what = if written {
            "written"
        } else {
            "there already, skipped"
        };
        tracing::debug!(number, rows = rows.len(), "jdbc checkpoint rows {what}");
        Ok(())
    }

    /// Connect, learn the columns' types, and (stateful) make the marker table.
    fn connect(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        let pool = Pool::for_task(ctx, &self.url, &self.label)?;
        let sql = self.insert_sql(1);
        let marker = self.stateful.then(|| self.create_marker_sql());
        let types = pool
            .with(Duration::ZERO, &|| true, |conn| {
                if let Some(create) = &marker {
                    super::pool::create_table(&mut conn.client, create)?;
                }
                Ok(conn.prepare(&sql)?.params().to_vec())
            })
            .map_err(|e| match e {
                Failure::Unreachable(m) => {
                    FatalError(format!("{}: cannot connect: {m}", self.label))
                }
                Failure::Refused(m) => FatalError(format!(
                    "{}: cannot insert into `{}` at {}: {m}",
                    self.label, self.table, pool.target
                )),
            })?;
        self.types = types;
        self.pool = Some(pool);
        Ok(())
    }

    fn create_marker_sql(&self) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS {} (topology text NOT NULL, component text NOT NULL, \
             task integer NOT NULL, txid bigint NOT NULL, PRIMARY KEY (topology, component, task))",
            self.commits_table
        )
    }
}

impl BoltState for JdbcSink {
    fn changes_into(
        &mut self,
        _all: bool,
        sink: &mut crate::components::ChangeSink<'_>,
    ) -> anyhow::Result<()> {
        if let Some(h) = self.held.as_mut() {
            h.save_into(sink)?;
        }
        Ok(())
    }

    /// Resume: the saved checkpoints' rows whose number the marker table does not have are
    /// written now, the others skipped.
    fn restore(&mut self, entries: Vec<(Value, Value)>) -> anyhow::Result<()> {
        let Some(h) = self.held.as_mut() else {
            return Ok(());
        };
        let held = h
            .restore(&entries)
            .map_err(|e| FatalError(format!("{}: {e}", self.label)))?;
        for (number, rows) in held {
            self.write_numbered(number, &rows).map_err(|e| {
                FatalError(format!(
                    "{}: checkpoint rows {number} again: {e}",
                    self.label
                ))
            })?;
        }
        Ok(())
    }
}

impl Bolt for JdbcSink {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.label = format!("{} task {}", ctx.component, ctx.task_id);
        let fields: Vec<&str> = self.columns.iter().map(|(_, f)| f.as_str()).collect();
        self.positions = crate::components::input_positions(ctx, &fields)?;
        self.key_positions = self
            .keys
            .iter()
            .filter_map(|k| self.columns.iter().position(|(c, _)| c == k))
            .collect();
        self.stopping = ctx.stopping.clone();
        self.marker = (
            ctx.topology.name.clone(),
            ctx.component.clone(),
            ctx.task_index as i32,
        );
        self.connect(ctx)?;
        if self.stateful {
            self.held = Some(Held::default());
        }
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            if !self.stateful {
                out.ack(input);
            }
            return Ok(());
        }
        let Some((row, enc)) = self.row_of(input, out) else {
            if !self.stateful {
                out.ack(input);
            }
            return Ok(());
        };
        if let Some(h) = self.held.as_mut() {
            h.open.push(row);
            return Ok(());
        }
        self.pending.push((enc, input.clone()));
        self.first_at.get_or_insert_with(Instant::now);
        if self.pending.len() >= self.batch.rows {
            self.flush(out)?;
        }
        Ok(())
    }

    fn poll(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self
            .first_at
            .is_some_and(|t| t.elapsed() >= self.batch.timeout)
        {
            self.flush(out)?;
        }
        self.write_committed(false)
    }

    fn poll_interval(&self) -> Option<Duration> {
        Some(match self.stateful {
            true => Duration::from_millis(2),
            false => (self.batch.timeout / 2).max(Duration::from_millis(1)),
        })
    }

    fn auto_ack(&self) -> bool {
        false
    }

    fn finish(&mut self, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if self.held.is_some() {
            self.write_committed(true)?;
            // The run ended cleanly: its last checkpoint covers what came after the last marker.
            let rest = self.held.as_mut().map(Held::rest);
            if let Some((number, rows)) = rest.filter(|r| !r.1.is_empty()) {
                self.write_numbered(number, &rows)
                    .map_err(|e| FatalError(format!("{}: at the end: {e}", self.label)))?;
            }
        }
        self.flush(out)
    }
}

impl crate::components::CheckpointParticipant for JdbcSink {
    fn state(&mut self) -> Option<&mut dyn BoltState> {
        match self.held.is_some() {
            true => Some(self),
            false => None,
        }
    }
    fn checkpoint_marker(&mut self, _round: u64, txid: u64) -> anyhow::Result<()> {
        if let Some(h) = self.held.as_mut() {
            h.marker(txid);
        }
        Ok(())
    }
}
