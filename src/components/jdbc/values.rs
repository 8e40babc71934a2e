//! Tuple values to and from PostgreSQL: a parameter is encoded for the type the server gives
//! it (booleans, integers, floats and text in binary, checked here so a mismatch names the
//! field and the column; any other type — numeric, timestamp, date, uuid, json… — as text the
//! server parses), and a result column is read back by its type.

use crate::tuple::Value;
use bytes::BytesMut;
use postgres::types::{Format, IsNull, ToSql, Type};
use std::error::Error;

type BoxError = Box<dyn Error + Sync + Send>;

/// A parameter, encoded for its type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Enc {
    Null,
    Bool(bool),
    I16(i16),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    /// A text column's value (binary format: the bytes of the text).
    Text(String),
    /// Any other type's value as its text form, parsed by the server.
    AsText(String),
}

impl ToSql for Enc {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match self {
            Enc::Null => Ok(IsNull::Yes),
            Enc::Bool(b) => b.to_sql(ty, out),
            Enc::I16(n) => n.to_sql(ty, out),
            Enc::I32(n) => n.to_sql(ty, out),
            Enc::I64(n) => n.to_sql(ty, out),
            Enc::F32(n) => n.to_sql(ty, out),
            Enc::F64(n) => n.to_sql(ty, out),
            Enc::Text(s) | Enc::AsText(s) => {
                out.extend_from_slice(s.as_bytes());
                Ok(IsNull::No)
            }
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        match self {
            Enc::AsText(_) => Format::Text,
            _ => Format::Binary,
        }
    }

    postgres::types::to_sql_checked!();
}

/// What a value is, for messages.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Int(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Str(_) => "a string",
        Value::List(_) => "a list",
        Value::Map(_) => "a map",
    }
}

/// `v` encoded for a parameter of type `ty`; the error says what did not fit.
pub(crate) fn encode(v: &Value, ty: &Type) -> Result<Enc, String> {
    let whole = |v: &Value| -> Option<i64> {
        match v {
            Value::Int(n) => Some(*n),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Some(*f as i64),
            _ => None,
        }
    };
    let range = |what: &str| format!("{} does not fit in {what}", v.plain_text());
    let mismatch = || format!("{} is {}, not {}", shown(v), kind_of(v), type_name(ty));
    Ok(match *ty {
        _ if matches!(v, Value::Null) => Enc::Null,
        Type::BOOL => match v {
            Value::Bool(b) => Enc::Bool(*b),
            Value::Str(s) if matches!(s.as_str(), "true" | "false") => Enc::Bool(s == "true"),
            _ => return Err(mismatch()),
        },
        Type::INT2 => {
            let n = whole(v).ok_or_else(mismatch)?;
            Enc::I16(i16::try_from(n).map_err(|_| range("a smallint"))?)
        }
        Type::INT4 => {
            let n = whole(v).ok_or_else(mismatch)?;
            Enc::I32(i32::try_from(n).map_err(|_| range("an integer"))?)
        }
        Type::INT8 => Enc::I64(whole(v).ok_or_else(mismatch)?),
        Type::FLOAT4 => Enc::F32(v.as_f64().filter(|_| is_number(v)).ok_or_else(mismatch)? as f32),
        Type::FLOAT8 => Enc::F64(v.as_f64().filter(|_| is_number(v)).ok_or_else(mismatch)?),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            Enc::Text(text_of(v))
        }
        Type::NUMERIC if !is_number(v) && !matches!(v, Value::Str(_)) => return Err(mismatch()),
        Type::TIMESTAMP | Type::TIMESTAMPTZ => match v {
            // Whole numbers are milliseconds since the epoch, as storm's time fields are.
            Value::Int(ms) => {
                Enc::AsText(timestamp_of_millis(*ms).ok_or_else(|| range("a timestamp"))?)
            }
            Value::Str(s) => Enc::AsText(s.to_string()),
            _ => return Err(mismatch()),
        },
        _ => Enc::AsText(text_of(v)),
    })
}

/// A type's name as SQL writes it, with an article: `an integer`, `a timestamp`.
fn type_name(ty: &Type) -> String {
    let name = match *ty {
        Type::BOOL => "boolean",
        Type::INT2 => "smallint",
        Type::INT4 => "integer",
        Type::INT8 => "bigint",
        Type::FLOAT4 => "real",
        Type::FLOAT8 => "double precision",
        _ => ty.name(),
    };
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

fn is_number(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Float(_))
}

/// A value in a message: strings quoted, long ones cut.
fn shown(v: &Value) -> String {
    let text = v.plain_text();
    let cut: String = text.chars().take(40).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    match v {
        Value::Str(_) => format!("{cut:?}{more}"),
        _ => format!("{cut}{more}"),
    }
}

/// The text form a server parses: JSON for lists and maps, `Infinity` for infinite floats.
fn text_of(v: &Value) -> String {
    match v {
        Value::List(_) | Value::Map(_) => v.to_json().to_string(),
        Value::Float(f) if f.is_infinite() => {
            if *f > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
        }
        other => other.plain_text(),
    }
}

fn timestamp_of_millis(ms: i64) -> Option<String> {
    let t = jiff::Timestamp::from_millisecond(ms).ok()?;
    Some(t.to_string())
}

/// Column `i` of `row` as a value; the error names the column and its type.
pub(crate) fn decode(row: &postgres::Row, i: usize) -> Result<Value, String> {
    let column = &row.columns()[i];
    let ty = column.type_();
    let get = |r: Result<Option<Value>, postgres::Error>| -> Result<Value, String> {
        r.map(|v| v.unwrap_or(Value::Null)).map_err(|e| {
            format!(
                "column `{}` ({}) cannot be read: {e}",
                column.name(),
                ty.name()
            )
        })
    };
    match *ty {
        Type::BOOL => get(row
            .try_get::<_, Option<bool>>(i)
            .map(|v| v.map(Value::Bool))),
        Type::INT2 => get(row
            .try_get::<_, Option<i16>>(i)
            .map(|v| v.map(|n| Value::Int(n.into())))),
        Type::INT4 => get(row
            .try_get::<_, Option<i32>>(i)
            .map(|v| v.map(|n| Value::Int(n.into())))),
        Type::INT8 => get(row.try_get::<_, Option<i64>>(i).map(|v| v.map(Value::Int))),
        Type::OID => get(row
            .try_get::<_, Option<u32>>(i)
            .map(|v| v.map(|n| Value::Int(n.into())))),
        Type::FLOAT4 => get(row
            .try_get::<_, Option<f32>>(i)
            .map(|v| v.map(|f| Value::Float(f.into())))),
        Type::FLOAT8 => get(row
            .try_get::<_, Option<f64>>(i)
            .map(|v| v.map(Value::Float))),
        _ if <String as postgres::types::FromSql>::accepts(ty) => get(row
            .try_get::<_, Option<String>>(i)
            .map(|v| v.map(|s| Value::str(&s)))),
        _ => get(row.try_get::<_, Option<Raw>>(i).map(|v| v.map(|r| r.0))),
    }
}

/// A column of another type, from its binary form: numeric, timestamps, date, json, uuid.
struct Raw(Value);

impl<'a> postgres::types::FromSql<'a> for Raw {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Raw, BoxError> {
        super::values_read::read(ty, raw).map(Raw)
    }

    fn accepts(ty: &Type) -> bool {
        super::values_read::READABLE.contains(ty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_encoded_for_their_column_or_refused() {
        assert_eq!(encode(&Value::Int(7), &Type::INT4), Ok(Enc::I32(7)));
        assert_eq!(encode(&Value::Float(7.0), &Type::INT8), Ok(Enc::I64(7)));
        assert_eq!(encode(&Value::Int(2), &Type::FLOAT8), Ok(Enc::F64(2.0)));
        assert_eq!(encode(&Value::Null, &Type::INT4), Ok(Enc::Null));
        assert_eq!(
            encode(&Value::Int(3), &Type::TEXT),
            Ok(Enc::Text("3".into()))
        );
        assert_eq!(
            encode(&Value::str("1.50"), &Type::NUMERIC),
            Ok(Enc::AsText("1.50".into()))
        );
        let e = encode(&Value::str("abc"), &Type::INT4);
        assert_eq!(e, Err("\"abc\" is a string, not an integer".into()));
        assert!(encode(&Value::Int(1 << 40), &Type::INT4).is_err());
        assert!(encode(&Value::Float(1.5), &Type::INT8).is_err());
        assert_eq!(
            encode(&Value::Int(0), &Type::TIMESTAMPTZ),
            Ok(Enc::AsText("1970-01-01T00:00:00Z".into()))
        );
    }
}
