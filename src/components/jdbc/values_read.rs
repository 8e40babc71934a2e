//! Result columns of the types with no plain Rust counterpart, read from PostgreSQL's binary
//! forms: `numeric` (an integer when it has no fraction, else a float), `timestamp`,
//! `timestamptz` and `date` (ISO text, as the server would print them in UTC), `json`/`jsonb`
//! (the value), `uuid` (its text).

use crate::tuple::Value;
use postgres::types::Type;

type BoxError = Box<dyn std::error::Error + Sync + Send>;

/// The types [`read`] reads.
pub(crate) const READABLE: &[Type] = &[
    Type::NUMERIC,
    Type::TIMESTAMP,
    Type::TIMESTAMPTZ,
    Type::DATE,
    Type::JSON,
    Type::JSONB,
    Type::UUID,
];

/// Microseconds from 1970-01-01 to PostgreSQL's epoch, 2000-01-01.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

pub(crate) fn read(ty: &Type, raw: &[u8]) -> Result<Value, BoxError> {
    match *ty {
        Type::NUMERIC => numeric(raw),
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            let micros = i64::from_be_bytes(raw.try_into()?);
            let t = jiff::Timestamp::from_microsecond(micros.saturating_add(PG_EPOCH_MICROS))?;
            let text = match *ty {
                Type::TIMESTAMPTZ => t.to_string(),
                _ => jiff::tz::Offset::UTC.to_datetime(t).to_string(),
            };
            Ok(Value::str(&text))
        }
        Type::DATE => {
            let days = i32::from_be_bytes(raw.try_into()?);
            let base = jiff::civil::date(2000, 1, 1);
            let d = base.checked_add(jiff::Span::new().days(i64::from(days)))?;
            Ok(Value::str(&d.to_string()))
        }
        Type::JSON | Type::JSONB => {
            let text = match *ty {
                Type::JSONB => raw.get(1..).ok_or("an empty jsonb")?,
                _ => raw,
            };
            let json: serde_json::Value = serde_json::from_slice(text)?;
            Ok(Value::from_json(&json))
        }
        Type::UUID => {
            let b: [u8; 16] = raw.try_into()?;
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            let text = format!(
                "{}-{}-{}-{}-{}",
                &hex[..8],
                &hex[8..12],
                &hex[12..16],
                &hex[16..20],
                &hex[20..]
            );
            Ok(Value::str(&text))
        }
        _ => Err(format!("storm cannot read a {}", ty.name()).into()),
    }
}

/// A `numeric`: base-10000 digits with a weight, a sign and a display scale.
fn numeric(raw: &[u8]) -> Result<Value, BoxError> {
    let word = |i: usize| -> Result<i16, BoxError> {
        let b = raw.get(i * 2..i * 2 + 2).ok_or("a short numeric")?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    };
    let (ndigits, weight, sign, dscale) = (word(0)?, word(1)?, word(2)? as u16, word(3)?);
    match sign {
        0xC000 => return Ok(Value::Float(f64::NAN)),
        0xD000 => return Ok(Value::Float(f64::INFINITY)),
        0xF000 => return Ok(Value::Float(f64::NEG_INFINITY)),
        _ => {}
    }
    let digits: Vec<i16> = (0..ndigits.max(0) as usize)
        .map(|i| word(4 + i))
        .collect::<Result<_, _>>()?;
    let digit = |pos: i32| -> i16 {
        // `pos` counts base-10000 groups, 0 being the units group.
        let at = i32::from(weight) - pos;
        usize::try_from(at)
            .ok()
            .and_then(|a| digits.get(a))
            .copied()
            .unwrap_or(0)
    };
    let mut text = String::new();
    if sign == 0x4000 {
        text.push('-');
    }
    let mut int = String::new();
    for pos in (0..=i32::from(weight).max(0)).rev() {
        match int.is_empty() {
            true => int.push_str(&digit(pos).to_string()),
            false => int.push_str(&format!("{:04}", digit(pos))),
        }
    }
    text.push_str(&int);
    if dscale > 0 {
        let mut frac = String::new();
        let mut pos = -1;
        while frac.len() < dscale as usize {
            frac.push_str(&format!("{:04}", digit(pos)));
            pos -= 1;
        }
        frac.truncate(dscale as usize);
        text.push('.');
        text.push_str(&frac);
        return Ok(Value::Float(text.parse()?));
    }
    Ok(match text.parse::<i64>() {
        Ok(n) => Value::Int(n),
        Err(_) => Value::Float(text.parse()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric_bytes(ndigits: i16, weight: i16, sign: u16, dscale: i16, d: &[i16]) -> Vec<u8> {
        let mut out = Vec::new();
        for w in [ndigits, weight, sign as i16, dscale].iter().chain(d) {
            out.extend_from_slice(&w.to_be_bytes());
        }
        out
    }

    #[test]
    fn numerics_read_as_integers_or_floats() {
        // 12345678 = 1234 5678, weight 1.
        let n = numeric_bytes(2, 1, 0, 0, &[1234, 5678]);
        assert_eq!(numeric(&n).ok(), Some(Value::Int(12_345_678)));
        // -1.5 = 1 . 5000, weight 0, scale 1.
        let n = numeric_bytes(2, 0, 0x4000, 1, &[1, 5000]);
        assert_eq!(numeric(&n).ok(), Some(Value::Float(-1.5)));
        // 0.00012 = 0000 . 0001 2000: digits [1, 2000], weight -1, scale 5.
        let n = numeric_bytes(2, -1, 0, 5, &[1, 2000]);
        assert_eq!(numeric(&n).ok(), Some(Value::Float(0.00012)));
        // 20000 = 2 0000 stored as [2], weight 1.
        let n = numeric_bytes(1, 1, 0, 0, &[2]);
        assert_eq!(numeric(&n).ok(), Some(Value::Int(20_000)));
    }

    #[test]
    fn timestamps_and_dates_read_as_iso_text() {
        let zero = 0i64.to_be_bytes();
        let t = read(&Type::TIMESTAMPTZ, &zero).ok();
        assert_eq!(t, Some(Value::str("2000-01-01T00:00:00Z")));
        let t = read(&Type::TIMESTAMP, &zero).ok();
        assert_eq!(t, Some(Value::str("2000-01-01T00:00:00")));
        let d = read(&Type::DATE, &1i32.to_be_bytes()).ok();
        assert_eq!(d, Some(Value::str("2000-01-02")));
    }
}
