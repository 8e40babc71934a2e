//! The `lookup` bolt: enrichment from a table file. The table (a CSV with a header, or JSON
//! lines: chosen by the file's ending, `.csv` or anything else for JSON lines) is loaded at
//! start and loaded again when the file changes; each tuple gets the `select`ed columns of the
//! row whose `key` column equals its `on` field, by text form (a CSV cell `"42"` matches the
//! integer `42`), or nulls when no row matches. A reload that fails keeps the old table.

use super::builtin as b;
use super::{Bolt, BoltCollector, TaskContext};
use crate::model::plan::streams;
use crate::tuple::{Tuple, Value, Values};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

struct Lookup {
    path: PathBuf,
    key: String,
    on: String,
    select: Vec<String>,
    on_at: usize,
    /// Key text → the selected values of its row.
    table: HashMap<String, Values>,
    modified: Option<SystemTime>,
    component: String,
}

impl Lookup {
    fn new(
        args: &serde_json::Map<String, serde_json::Value>,
        base_dir: &Path,
    ) -> anyhow::Result<Lookup> {
        let text = |k: &str| {
            args.get(k)
                .and_then(|v| v.as_str())
                .map(String::from)
                .ok_or_else(|| anyhow::anyhow!("lookup needs `{k}`"))
        };
        let select = args
            .get("select")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Lookup {
            path: base_dir.join(text("path")?),
            key: text("key")?,
            on: text("on")?,
            select,
            on_at: 0,
            table: HashMap::new(),
            modified: None,
            component: "lookup".into(),
        })
    }

    /// Read the table file into key → selected values.
    fn load(&self) -> anyhow::Result<HashMap<String, Values>> {
        let is_csv = self
            .path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
        let text = std::fs::read_to_string(&self.path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", self.path.display()))?;
        let rows: Vec<serde_json::Map<String, serde_json::Value>> = if is_csv {
            let mut r = csv::Reader::from_reader(text.as_bytes());
            let headers = r.headers()?.clone();
            let columns: Vec<&str> = headers.iter().collect();
            self.columns_named(&columns)?;
            r.records()
                .map(|rec| {
                    let rec = rec?;
                    Ok(headers
                        .iter()
                        .zip(rec.iter())
                        .map(|(h, c)| (h.to_string(), serde_json::Value::String(c.to_string())))
                        .collect())
                })
                .collect::<anyhow::Result<_>>()?
        } else {
            text.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| {
                    serde_json::from_str(l)
                        .map_err(|e| anyhow::anyhow!("{}:{}: {e}", self.path.display(), i + 1))
                })
                .collect::<anyhow::Result<_>>()?
        };
        if !is_csv && !rows.is_empty() {
            // JSON rows may each lack a column; one that no row has is a misspelt name.
            let mut seen: Vec<&str> = rows
                .iter()
                .flat_map(|r| r.keys().map(String::as_str))
                .collect();
            seen.sort_unstable();
            seen.dedup();
            self.columns_named(&seen)?;
        }
        let mut table = HashMap::new();
        for row in rows {
            let Some(k) = row.get(&self.key) else {
                anyhow::bail!(
                    "{}: a row has no column `{}`",
                    self.path.display(),
                    self.key
                );
            };
            let selected = self
                .select
                .iter()
                .map(|c| row.get(c).map_or(Value::Null, Value::from_json))
                .collect();
            table.insert(Value::from_json(k).key_text(), selected);
        }
        Ok(table)
    }

    /// The key column and every selected column are among the table's `columns`.
    fn columns_named(&self, columns: &[&str]) -> anyhow::Result<()> {
        let wanted = std::iter::once(&self.key).chain(&self.select);
        for c in wanted {
            if !columns.contains(&c.as_str()) {
                let hint = crate::syntax::suggest::suggest(c, columns.iter().copied())
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default();
                anyhow::bail!(
                    "{}: the table has no column `{c}` (its columns: {}){hint}",
                    self.path.display(),
                    columns.join(", ")
                );
            }
        }
        Ok(())
    }

    fn modified(&self) -> Option<SystemTime> {
        std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok()
    }
}

impl Bolt for Lookup {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.component = ctx.component.clone();
        self.on_at = super::input_positions(ctx, std::slice::from_ref(&self.on))?[0];
        self.modified = self.modified();
        self.table = self.load()?;
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            return Ok(());
        }
        let key = input
            .values
            .get(self.on_at)
            .map(Value::key_text)
            .unwrap_or_default();
        let mut values = input.values.clone();
        match self.table.get(&key) {
            Some(row) => values.extend(row.iter().cloned()),
            None => values.extend(self.select.iter().map(|_| Value::Null)),
        }
        out.send(streams::DEFAULT, &[input], values);
        Ok(())
    }

    /// Load the table again when its file changed.
    fn poll(&mut self, _out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        let now = self.modified();
        if now.is_some() && now != self.modified {
            self.modified = now;
            match self.load() {
                Ok(t) => {
                    tracing::info!(
                        "{}: reloaded {} ({} rows)",
                        self.component,
                        self.path.display(),
                        t.len()
                    );
                    self.table = t;
                }
                Err(e) => tracing::warn!("{}: keeping the old table: {e:#}", self.component),
            }
        }
        Ok(())
    }

    fn poll_interval(&self) -> Option<Duration> {
        Some(Duration::from_millis(500))
    }
}

/// The `lookup` built-in.
pub(crate) struct LookupType;

impl b::Builtin for LookupType {
    fn name(&self) -> &'static str {
        "lookup"
    }
    fn summary(&self) -> &'static str {
        "bolt: adds columns of the row of a table file (`path`) whose `key` equals `on`"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        use b::ArgShape as A;
        vec![
            b::arg("path", A::Text),
            b::arg("key", A::Text),
            b::arg("on", A::Text),
            b::arg("select", A::Fields),
        ]
    }
    fn field_args(&self) -> &'static [&'static str] {
        &["on"]
    }
    fn output_fields(&self, c: &crate::model::Component, input: Option<&[String]>) -> b::Fields {
        let mut fields = input?.to_vec();
        fields.extend(b::strings(c.args.get("select")).unwrap_or_default());
        Some(Some(fields))
    }
    /// The input fields, then the looked-up columns (text of unknown kind, or null).
    fn field_types(&self, cx: &b::TypeCx) -> Option<Vec<crate::expr::Type>> {
        let mut t = cx.input?.1.to_vec();
        t.resize(cx.fields.len(), crate::expr::Type::Any);
        Some(t)
    }
    fn check(&self, w: &mut b::Written) {
        check_table(w)
    }
    fn bolt(
        &self,
        c: &crate::model::Component,
        base: &std::path::Path,
    ) -> anyhow::Result<Box<dyn Bolt>> {
        Ok(Box::new(Lookup::new(&c.args, base)?))
    }
}

/// A `lookup` needs its table, its key column and the input field it matches; a table file
/// that is not there yet is a warning (it is read when the run starts).
fn check_table(w: &mut b::Written) {
    let at = w.at_type();
    for k in ["path", "key", "on"] {
        if w.arg(k).is_none() {
            w.error(format!("`lookup` needs `{k}`"), at).help =
                Some("e.g. `lookup(path=users.csv, key=id, on=user, select=[name, team])`".into());
        }
    }
    let Some(p) = w.arg("path") else { return };
    let Some(text) = p.value.as_str() else { return };
    let file = w.base_dir.join(text);
    if !file.is_file() {
        let d = crate::syntax::diag::Diagnostic::warning(
            format!(
                "the table `{}` is not there (yet): it is read when the run starts",
                file.display()
            ),
            p.span,
        );
        w.diags.push(d);
    }
}
