//! The `file` sink's arguments, read and checked (by `storm validate` and at build): `path`,
//! `format`, `field`, `header`, `time`, `rotate`, `compression`, `sync`.

use super::path::Template;
use crate::components::sink_args::{self as a, ArgError, Args};
use crate::components::sink_format::RecordFormat;
use std::time::Duration;

pub(crate) const FORMATS: &[&str] = &["json", "ndjson", "csv", "tsv", "raw"];
pub(crate) const COMPRESSIONS: &[&str] = &["none", "gzip", "zstd"];
const ROTATE_KEYS: &[&str] = &["size", "interval", "records", "inactive"];
const SYNC_KEYS: &[&str] = &["records", "interval", "fsync"];

/// How part files are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    None,
    Gzip,
    Zstd,
}

/// When a part file is closed and the next one opened.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rotate {
    /// Bytes of records (before compression).
    pub(crate) size: Option<u64>,
    /// Time since the part was opened.
    pub(crate) interval: Option<Duration>,
    pub(crate) records: Option<u64>,
    /// Time since the part was last written.
    pub(crate) inactive: Duration,
}

/// When written records are flushed (and fsynced) and their tuples acked (without state).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sync {
    pub(crate) records: u64,
    pub(crate) interval: Duration,
    pub(crate) fsync: bool,
}

/// The sink's arguments, checked.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) path: Template,
    pub(crate) format: RecordFormat,
    pub(crate) raw_field: Option<String>,
    pub(crate) header: bool,
    pub(crate) time_field: Option<String>,
    pub(crate) rotate: Rotate,
    pub(crate) compression: Compression,
    pub(crate) sync: Sync,
}

impl Config {
    pub(crate) fn from_args(args: &Args) -> Result<Config, ArgError> {
        let path = a::text(args, "path")?
            .ok_or_else(|| ArgError::new("path", "the `file` sink needs `path` (a file name, with `{field}` and `%Y-%m-%d` patterns)"))?;
        let path = Template::parse(path).map_err(|e| ArgError::new("path", e))?;
        let format = a::one_of(args, "format", FORMATS)?
            .and_then(RecordFormat::from_name)
            .unwrap_or(RecordFormat::Json);
        let raw_field = a::text(args, "field")?.map(str::to_string);
        if format == RecordFormat::Raw && raw_field.is_none() {
            return Err(ArgError::new(
                "format",
                "`format: raw` needs `field` (the field written as the record)",
            ));
        }
        let header = match args.get("header") {
            None => false,
            Some(serde_json::Value::Bool(b)) => *b,
            Some(v) => {
                return Err(ArgError::new(
                    "header",
                    format!("must be true or false, not {v}"),
                ))
            }
        };
        if header && !matches!(format, RecordFormat::Csv | RecordFormat::Tsv) {
            return Err(ArgError::new("header", "is for `format: csv` or `tsv`"));
        }
        let compression = match a::one_of(args, "compression", COMPRESSIONS)? {
            Some("gzip") => Compression::Gzip,
            Some("zstd") => Compression::Zstd,
            _ => Compression::None,
        };
        Ok(Config {
            path,
            format,
            raw_field,
            header,
            time_field: a::text(args, "time")?.map(str::to_string),
            rotate: rotate(args)?,
            compression,
            sync: sync(args)?,
        })
    }

    #[cfg(test)]
    /// The input fields the arguments name.
    fn fields(&self) -> Vec<String> {
        let mut out: Vec<String> = self.path.fields().iter().map(|s| s.to_string()).collect();
        out.extend(self.raw_field.clone());
        out.extend(self.time_field.clone());
        out
    }
}

fn rotate(args: &Args) -> Result<Rotate, ArgError> {
    let m = a::nested(args, "rotate", ROTATE_KEYS)?;
    Ok(Rotate {
        size: a::size_in(m, "rotate", "size")?,
        interval: a::duration_in(m, "rotate", "interval")?,
        records: a::count_in(m, "rotate", "records")?,
        inactive: a::duration_in(m, "rotate", "inactive")?.unwrap_or(Duration::from_secs(60)),
    })
}

fn sync(args: &Args) -> Result<Sync, ArgError> {
    let m = a::nested(args, "sync", SYNC_KEYS)?;
    let fsync = match m.and_then(|m| m.get("fsync")) {
        None => true,
        Some(serde_json::Value::Bool(b)) => *b,
        Some(v) => {
            return Err(ArgError::new(
                "sync.fsync",
                format!("must be true or false, not {v}"),
            ))
        }
    };
    Ok(Sync {
        records: a::count_in(m, "sync", "records")?.unwrap_or(10_000),
        interval: a::duration_in(m, "sync", "interval")?.unwrap_or(Duration::from_millis(200)),
        fsync,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(j: serde_json::Value) -> Result<Config, ArgError> {
        Config::from_args(j.as_object().expect("an object"))
    }

    #[test]
    fn defaults_and_errors() {
        let c = config(json!({"path": "out/{svc}/%H.jsonl"})).expect("config");
        assert_eq!(c.format, RecordFormat::Json);
        assert_eq!(c.compression, Compression::None);
        assert_eq!(c.fields(), vec!["svc".to_string()]);
        let arg = |j| config(j).err().map(|e| e.arg);
        assert_eq!(arg(json!({})), Some("path".into()));
        assert_eq!(
            arg(json!({"path": "x", "format": "xml"})),
            Some("format".into())
        );
        assert_eq!(
            arg(json!({"path": "x", "rotate": {"size": "big"}})),
            Some("rotate.size".into())
        );
        assert_eq!(
            arg(json!({"path": "x", "rotate": {"recods": 3}})),
            Some("rotate.recods".into())
        );
        assert_eq!(
            arg(json!({"path": "x", "compression": "gz"})),
            Some("compression".into())
        );
        assert_eq!(
            arg(json!({"path": "x", "format": "raw"})),
            Some("format".into())
        );
        let e = config(json!({"path": "x", "compression": "gzp"}))
            .err()
            .map(|e| e.message);
        assert_eq!(
            e,
            Some("is one of none, gzip, zstd, not `gzp` (did you mean `gzip`?)".into())
        );
    }
}
