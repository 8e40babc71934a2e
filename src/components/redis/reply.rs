//! Stream replies read out of the client's values: the entries of `XREADGROUP` and
//! `XAUTOCLAIM` as (id, field/value pairs).

/// One stream entry: its id, and its fields in order (`None`: deleted since it was read).
pub(crate) type Entry = (String, Option<Vec<(String, String)>>);

fn text(v: &redis::Value) -> Option<String> {
    match v {
        redis::Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        redis::Value::SimpleString(s) => Some(s.clone()),
        redis::Value::Int(i) => Some(i.to_string()),
        redis::Value::Okay => Some("OK".into()),
        _ => None,
    }
}

fn items(v: &redis::Value) -> Option<&[redis::Value]> {
    match v {
        redis::Value::Array(items) => Some(items),
        _ => None,
    }
}

/// `[id, [f, v, f, v…]]` (or `[id, nil]`).
fn entry(v: &redis::Value) -> Option<Entry> {
    let pair = items(v)?;
    let id = text(pair.first()?)?;
    let Some(fv) = pair.get(1).and_then(items) else {
        return Some((id, None));
    };
    let fields = fv
        .chunks(2)
        .filter_map(|c| Some((text(c.first()?)?, text(c.get(1)?)?)))
        .collect();
    Some((id, Some(fields)))
}

fn entries(v: &redis::Value) -> Vec<Entry> {
    items(v)
        .map(|list| list.iter().filter_map(entry).collect())
        .unwrap_or_default()
}

/// The entries of an `XREADGROUP` of one stream (none when it answered nil).
pub(crate) fn read_group(v: &redis::Value) -> Vec<Entry> {
    let Some(streams) = items(v) else {
        return Vec::new();
    };
    streams
        .iter()
        .filter_map(|s| items(s)?.get(1).map(entries))
        .flatten()
        .collect()
}

/// `XAUTOCLAIM`'s answer: the next cursor, and the entries claimed.
pub(crate) fn auto_claim(v: &redis::Value) -> (String, Vec<Entry>) {
    let Some(parts) = items(v) else {
        return ("0-0".into(), Vec::new());
    };
    let cursor = parts.first().and_then(text).unwrap_or_else(|| "0-0".into());
    (cursor, parts.get(1).map(entries).unwrap_or_default())
}
