//! Apache/nginx combined log lines, read by a scanner instead of the regex it is defined by
//! ([`super::spec::COMBINED_PATTERN`]): the same answers (a proptest holds the two together) at
//! several times the speed, since access logs are large. Fields: ip ident user time method path
//! protocol status bytes referer agent; `status` and `bytes` stay text here and become integers
//! through the spec's types.

use crate::tuple::Value;

/// The fields of `line` (those at `keep`, or all), appended to `out`; an error when it is not
/// a combined log line.
pub(crate) fn extract(
    line: &str,
    keep: Option<&[usize]>,
    out: &mut Vec<Value>,
) -> Result<(), String> {
    let fields = scan(line).ok_or_else(|| "does not match the pattern".to_string())?;
    let value = |f: &Option<&str>| f.map_or(Value::Null, Value::str);
    match keep {
        Some(keep) => out.extend(keep.iter().map(|&i| value(&fields[i]))),
        None => out.extend(fields.iter().map(value)),
    }
    Ok(())
}

/// A cursor over the line's bytes.
struct Cursor<'a> {
    s: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.at..]
    }

    /// Text up to (not including) the next `byte`, which is then skipped.
    fn until(&mut self, byte: u8) -> Option<&'a str> {
        let rest = self.rest();
        let i = memchr::memchr(byte, rest.as_bytes())?;
        self.at += i + 1;
        Some(&rest[..i])
    }

    /// A run of non-space characters (`\S+`), then one space.
    fn token(&mut self) -> Option<&'a str> {
        let t = self.until(b' ')?;
        (!t.is_empty() && !t.contains(char::is_whitespace)).then_some(t)
    }

    fn eat(&mut self, text: &str) -> Option<()> {
        self.rest().starts_with(text).then(|| self.at += text.len())
    }

    /// A double-quoted text where `\x` escapes a character (kept as written).
    fn quoted(&mut self) -> Option<&'a str> {
        self.eat("\"")?;
        let bytes = self.rest().as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'"' => {
                    let text = &self.rest()[..i];
                    self.at += i + 1;
                    return Some(text);
                }
                _ => i += 1,
            }
        }
        None
    }
}

/// The eleven fields, or `None` when the line is not in the combined format.
fn scan(line: &str) -> Option<[Option<&str>; 11]> {
    let mut c = Cursor { s: line, at: 0 };
    let ip = c.token()?;
    let ident = c.token()?;
    let user = c.token()?;
    c.eat("[")?;
    let time = c.until(b']')?;
    c.eat(" \"")?;
    // The request: method, path, protocol (which may hold spaces, not quotes).
    let method = c.token()?;
    let path = c.token()?;
    let protocol = c.until(b'"')?;
    c.eat(" ")?;
    let status = c
        .rest()
        .get(..3)
        .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))?;
    c.at += 3;
    c.eat(" ")?;
    let rest = c.rest();
    let bytes_len = if rest.starts_with('-') {
        1
    } else {
        rest.bytes().take_while(u8::is_ascii_digit).count()
    };
    if bytes_len == 0 {
        return None;
    }
    let bytes = &rest[..bytes_len];
    c.at += bytes_len;
    let (referer, agent) = if c.rest().starts_with(" \"") {
        c.eat(" ")?;
        let referer = c.quoted()?;
        c.eat(" ")?;
        let agent = c.quoted()?;
        (Some(referer), Some(agent))
    } else {
        (None, None)
    };
    if !c.rest().chars().all(char::is_whitespace) {
        return None;
    }
    if [ip, ident, user, method, path].iter().any(|t| t.is_empty()) || protocol.contains('"') {
        return None;
    }
    Some([
        Some(ip),
        Some(ident),
        Some(user),
        Some(time),
        Some(method),
        Some(path),
        Some(protocol),
        Some(status),
        Some(bytes),
        referer,
        agent,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the defining regex says of a line.
    fn by_regex(line: &str) -> Option<Vec<Option<String>>> {
        let re = regex::Regex::new(super::super::spec::COMBINED_PATTERN).expect("valid");
        let caps = re.captures(line)?;
        Some(
            (1..=11)
                .map(|i| caps.get(i).map(|m| m.as_str().to_string()))
                .collect(),
        )
    }

    fn by_scanner(line: &str) -> Option<Vec<Option<String>>> {
        scan(line).map(|f| f.iter().map(|x| x.map(str::to_string)).collect())
    }

    #[test]
    fn a_typical_line() {
        let line = r#"10.0.1.7 - frank [02/Nov/2026:08:00:00 +0000] "GET /a?u=7 HTTP/1.1" 200 2841 "-" "Mozilla/5.0 (x) \"q\"""#;
        assert_eq!(by_scanner(line), by_regex(line));
        assert!(by_scanner(line).is_some());
        assert!(scan("garbage").is_none());
        assert!(scan(r#"1.2.3.4 - - [t] "GET / HTTP/1.0" 20 1"#).is_none());
    }

    proptest! {
        /// Lines built from pieces that are sometimes right and sometimes not: the scanner and
        /// the regex agree on every one.
        #[test]
        fn the_scanner_agrees_with_the_regex(
            ip in "[0-9.]{1,7}|",
            user in "-|[a-z]{1,4}| ",
            time in "[0-9A-Za-z/: +]{0,12}",
            request in "[A-Z]{1,4} /[a-z?=&]{0,6} HTTP/1\\.[01]|[A-Z]{1,3}|[A-Z]{2} /x",
            status in "[0-9]{2,4}",
            bytes in "[0-9]{1,5}|-|",
            tail in "| \"[-a-z\\\\\"]{0,5}\" \"[ A-Za-z()\\\\\"]{0,8}\"| \"x\"|  ",
        ) {
            let line = format!("{ip} - {user} [{time}] \"{request}\" {status} {bytes}{tail}");
            prop_assert_eq!(by_scanner(&line), by_regex(&line), "{}", line);
        }
    }
}
