//! Syslog messages into fields: RFC 5424 (`<PRI>1 TIMESTAMP HOST APP PROCID MSGID [SD] MSG`)
//! and RFC 3164, the BSD format (`<PRI>Mmm dd hh:mm:ss HOST TAG[PID]: MSG`). Facility and
//! severity are given by name (`user`, `err`), as Vector's syslog source does; an RFC 3164
//! time, which has no year or zone, is read as UTC in the current year (the year before when
//! that would put it more than a day ahead). Structured data is a map of maps.

use crate::tuple::{Value, Values};
use std::collections::BTreeMap;

/// The fields a syslog message gives, in order.
pub(crate) const FIELDS: &[&str] = &[
    "facility",
    "severity",
    "timestamp",
    "host",
    "app",
    "procid",
    "msgid",
    "structured_data",
    "message",
];

const FACILITIES: &[&str] = &[
    "kern",
    "user",
    "mail",
    "daemon",
    "auth",
    "syslog",
    "lpr",
    "news",
    "uucp",
    "cron",
    "authpriv",
    "ftp",
    "ntp",
    "security",
    "console",
    "solaris-cron",
    "local0",
    "local1",
    "local2",
    "local3",
    "local4",
    "local5",
    "local6",
    "local7",
];

const SEVERITIES: &[&str] = &[
    "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
];

const MONTHS: &[&str] = &[
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A message read into its parts.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Message {
    facility: &'static str,
    severity: &'static str,
    timestamp: Option<String>,
    host: Option<String>,
    app: Option<String>,
    procid: Option<String>,
    msgid: Option<String>,
    structured_data: Option<BTreeMap<String, Value>>,
    message: String,
}

impl Message {
    /// The values of [`FIELDS`].
    pub(crate) fn values(self) -> Values {
        let text = |s: Option<String>| s.map_or(Value::Null, |s| Value::str(&s));
        smallvec::smallvec![
            Value::str(self.facility),
            Value::str(self.severity),
            text(self.timestamp),
            text(self.host),
            text(self.app),
            text(self.procid),
            text(self.msgid),
            self.structured_data
                .map_or(Value::Null, |m| Value::Map(Box::new(m))),
            Value::str(&self.message),
        ]
    }
}

/// Read one message (one frame, without its line end).
pub(crate) fn parse(text: &str) -> Result<Message, String> {
    parse_at(text, now_ymd())
}

/// Today's UTC date, for RFC 3164's year.
fn now_ymd() -> (i16, i8, i8) {
    let now = jiff::tz::Offset::UTC.to_datetime(jiff::Timestamp::now());
    (now.year(), now.month(), now.day())
}

/// [`parse`] with today's date given.
fn parse_at(text: &str, today: (i16, i8, i8)) -> Result<Message, String> {
    let text = text.trim_end_matches(['\r', '\n', '\0']);
    let (pri, rest) = priority(text)?;
    let facility = FACILITIES[usize::from(pri / 8)];
    let severity = SEVERITIES[usize::from(pri % 8)];
    let mut m = match rest.strip_prefix("1 ") {
        Some(rest) => rfc5424(rest)?,
        None => rfc3164(rest, today)?,
    };
    m.facility = facility;
    m.severity = severity;
    Ok(m)
}

/// `<PRI>`: 0 to 191, at most three digits, no leading zero but `<0>`.
fn priority(text: &str) -> Result<(u8, &str), String> {
    let no_pri = || "not a syslog message: it does not start with `<PRI>`".to_string();
    let rest = text.strip_prefix('<').ok_or_else(no_pri)?;
    let end = rest
        .find('>')
        .filter(|e| (1..=3).contains(e))
        .ok_or_else(no_pri)?;
    let digits = &rest[..end];
    let leading_zero = digits.len() > 1 && digits.starts_with('0');
    match digits.parse::<u8>() {
        Ok(p) if p <= 191 && !leading_zero && digits.bytes().all(|b| b.is_ascii_digit()) => {
            Ok((p, &rest[end + 1..]))
        }
        _ => Err(format!("`<{digits}>` is not a syslog priority (0 to 191)")),
    }
}

/// The next space-separated header field, `-` read as none.
fn field<'a>(rest: &mut &'a str, name: &str) -> Result<Option<&'a str>, String> {
    let (value, after) = match rest.split_once(' ') {
        Some(split) => split,
        None if !rest.is_empty() => (*rest, ""),
        None => return Err(format!("RFC 5424 message without its {name}")),
    };
    *rest = after;
    match value {
        "" => Err(format!("RFC 5424 message with an empty {name}")),
        "-" => Ok(None),
        v => Ok(Some(v)),
    }
}

fn rfc5424(mut rest: &str) -> Result<Message, String> {
    let timestamp = field(&mut rest, "timestamp")?;
    if let Some(t) = timestamp {
        if t.parse::<jiff::Timestamp>().is_err() {
            return Err(format!("RFC 5424 timestamp `{t}` is not an RFC 3339 time"));
        }
    }
    let host = field(&mut rest, "hostname")?;
    let app = field(&mut rest, "app-name")?;
    let procid = field(&mut rest, "procid")?;
    let msgid = field(&mut rest, "msgid")?;
    let (structured_data, message) = match rest.strip_prefix('-') {
        Some(after) => (None, after),
        None => {
            let (sd, after) = structured(rest)?;
            (Some(sd), after)
        }
    };
    let message = match message {
        "" => "",
        m => m
            .strip_prefix(' ')
            .ok_or_else(|| "RFC 5424: no space after the structured data".to_string())?,
    };
    let own = |s: Option<&str>| s.map(str::to_string);
    Ok(Message {
        timestamp: own(timestamp),
        host: own(host),
        app: own(app),
        procid: own(procid),
        msgid: own(msgid),
        structured_data,
        message: message
            .strip_prefix('\u{feff}')
            .unwrap_or(message)
            .to_string(),
        ..Message::default()
    })
}

/// Structured data: one or more `[ID name="value" …]` (values escape `"`, `\` and `]` with
/// `\`). Returns the elements and the text after them.
fn structured(mut text: &str) -> Result<(BTreeMap<String, Value>, &str), String> {
    let bad = |why: &str| format!("RFC 5424 structured data: {why}");
    let mut out = BTreeMap::new();
    if !text.starts_with('[') {
        return Err(bad("neither `-` nor `[`"));
    }
    while let Some(inner) = text.strip_prefix('[') {
        let id_end = inner
            .find([' ', ']'])
            .ok_or_else(|| bad("an element is not closed"))?;
        let id = &inner[..id_end];
        if id.is_empty() {
            return Err(bad("an element without an id"));
        }
        let mut rest = &inner[id_end..];
        let mut params = BTreeMap::new();
        loop {
            if let Some(after) = rest.strip_prefix(']') {
                rest = after;
                break;
            }
            rest = rest
                .strip_prefix(' ')
                .ok_or_else(|| bad("expected a space or `]`"))?;
            let (name, after) = rest
                .split_once("=\"")
                .ok_or_else(|| bad("a parameter is not `name=\"value\"`"))?;
            let (value, after) = quoted(after).ok_or_else(|| bad("a value is not closed"))?;
            params.insert(name.to_string(), Value::str(&value));
            rest = after;
        }
        out.insert(id.to_string(), Value::Map(Box::new(params)));
        text = rest;
    }
    Ok((out, text))
}

/// A value up to its closing quote, unescaped; and the text after the quote.
fn quoted(text: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((value, &text[i + 1..])),
            '\\' => match chars.next() {
                Some((_, e @ ('"' | '\\' | ']'))) => value.push(e),
                Some((_, e)) => {
                    value.push('\\');
                    value.push(e);
                }
                None => return None,
            },
            c => value.push(c),
        }
    }
    None
}

fn rfc3164(rest: &str, today: (i16, i8, i8)) -> Result<Message, String> {
    let (timestamp, rest) = bsd_time(rest, today)?;
    let rest = rest.trim_start_matches(' ');
    // The host, unless the first word is already the tag (`app:` or `app[pid]:`).
    let first = rest.split(' ').next().unwrap_or_default();
    let is_tag = first.ends_with(':') || first.contains('[');
    let (host, rest) = match (is_tag, rest.split_once(' ')) {
        (false, Some((h, after))) if !h.is_empty() => (Some(h.to_string()), after),
        _ => (None, rest),
    };
    let (app, procid, message) = tag(rest);
    Ok(Message {
        timestamp: Some(timestamp),
        host,
        app,
        procid,
        message: message.to_string(),
        ..Message::default()
    })
}

/// `TAG[PID]: MSG` or `TAG: MSG`; a message without a tag is all message.
fn tag(text: &str) -> (Option<String>, Option<String>, &str) {
    let word_end = text.find([':', ' ', '[']).unwrap_or(text.len());
    let name = &text[..word_end];
    let after = &text[word_end..];
    let valid = !name.is_empty() && name.len() <= 48 && !name.contains(['<', '>']);
    if let (true, Some(p)) = (valid, after.strip_prefix('[')) {
        if let Some((pid, msg)) = p.split_once("]:") {
            if !pid.is_empty() && !pid.contains(' ') {
                return (
                    Some(name.into()),
                    Some(pid.into()),
                    msg.trim_start_matches(' '),
                );
            }
        }
    }
    match (valid, after.strip_prefix(':')) {
        (true, Some(msg)) => (Some(name.into()), None, msg.trim_start_matches(' ')),
        _ => (None, None, text),
    }
}

/// `Mmm dd hh:mm:ss` (day padded with a space or a zero) as RFC 3339 UTC, and the rest.
fn bsd_time(text: &str, today: (i16, i8, i8)) -> Result<(String, &str), String> {
    let stamp = text
        .get(..15)
        .filter(|s| s.is_ascii())
        .ok_or_else(|| no_time(text))?;
    let month = MONTHS
        .iter()
        .position(|m| stamp.starts_with(m))
        .ok_or_else(|| no_time(text))?;
    let day: i8 = stamp[4..6]
        .trim_start()
        .parse()
        .map_err(|_| no_time(text))?;
    let b = stamp.as_bytes();
    let clock_ok = b[3] == b' '
        && b[6] == b' '
        && b[9] == b':'
        && b[12] == b':'
        && [7, 8, 10, 11, 13, 14]
            .iter()
            .all(|&i| b[i].is_ascii_digit());
    if !clock_ok || !(1..=31).contains(&day) {
        return Err(no_time(text));
    }
    let month = month as i8 + 1;
    let (year, this_month, this_day) = today;
    // More than a day ahead of today: it was last year (a December message read in January).
    let ahead = (month, day) > (this_month, this_day.saturating_add(1));
    let year = if ahead { year - 1 } else { year };
    let clock = &stamp[7..15];
    Ok((
        format!("{year:04}-{month:02}-{day:02}T{clock}Z"),
        &text[15..],
    ))
}

fn no_time(text: &str) -> String {
    let shown: String = text.chars().take(15).collect();
    format!("RFC 3164 message without a time `Mmm dd hh:mm:ss` (it starts `{shown}`)")
}

#[cfg(test)]
mod tests;
