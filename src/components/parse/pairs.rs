//! `key=value` lines. `logfmt`: pairs separated by whitespace, values bare or double-quoted with
//! backslash escapes, a bare key meaning `true`. `kv`: pairs separated by `pair_separator`
//! (default: runs of whitespace), key and value by the first `separator` (default `=`), values
//! as written. The named keys are taken, in order; a key that is not there is null, and of keys
//! written twice the last wins.

use crate::tuple::Value;

pub(crate) struct Pairs {
    logfmt: bool,
    separator: String,
    pair_separator: Option<String>,
    keys: Vec<String>,
    found: Vec<Option<Value>>,
}

impl Pairs {
    pub(crate) fn new(
        logfmt: bool,
        separator: String,
        pair_separator: Option<String>,
        keys: Vec<String>,
    ) -> Pairs {
        let found = vec![None; keys.len()];
        Pairs {
            logfmt,
            separator,
            pair_separator,
            keys,
            found,
        }
    }

    pub(crate) fn extract(&mut self, line: &str, out: &mut Vec<Value>) -> Result<(), String> {
        self.found.iter_mut().for_each(|f| *f = None);
        if self.logfmt {
            self.logfmt_pairs(line)?;
        } else {
            self.kv_pairs(line);
        }
        out.extend(
            self.found
                .iter_mut()
                .map(|f| f.take().unwrap_or(Value::Null)),
        );
        Ok(())
    }

    fn set(&mut self, key: &str, value: Value) {
        if let Some(i) = self.keys.iter().position(|k| k == key) {
            self.found[i] = Some(value);
        }
    }

    fn kv_pairs(&mut self, line: &str) {
        let pieces: Vec<&str> = match &self.pair_separator {
            Some(sep) => line.split(sep.as_str()).collect(),
            None => line.split_whitespace().collect(),
        };
        for piece in pieces {
            if let Some((k, v)) = piece.split_once(self.separator.as_str()) {
                let k = k.trim().to_string();
                self.set(&k, Value::str(v));
            }
        }
    }

    fn logfmt_pairs(&mut self, line: &str) -> Result<(), String> {
        let mut rest = line.trim_start();
        while !rest.is_empty() {
            let key_end = rest
                .find(|c: char| c == '=' || c.is_whitespace())
                .unwrap_or(rest.len());
            let key = &rest[..key_end];
            if key.is_empty() {
                return Err(format!("a pair without a key at `{}`", preview(rest)));
            }
            rest = &rest[key_end..];
            let value = match rest.strip_prefix('=') {
                None => Value::Bool(true),
                Some(after) if after.starts_with('"') => {
                    let (v, tail) = quoted(after)?;
                    rest = tail;
                    Value::str(&v)
                }
                Some(after) => {
                    let end = after.find(char::is_whitespace).unwrap_or(after.len());
                    rest = &after[end..];
                    Value::str(&after[..end])
                }
            };
            let key = key.to_string();
            self.set(&key, value);
            rest = rest.trim_start();
        }
        Ok(())
    }
}

/// A double-quoted value at the start of `s`: its text with escapes undone, and what follows.
fn quoted(s: &str) -> Result<(String, &str), String> {
    let mut out = String::new();
    let mut chars = s.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, &s[i + 1..])),
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, e)) => out.push(e),
                None => break,
            },
            c => out.push(c),
        }
    }
    Err(format!("a quoted value is not closed: `{}`", preview(s)))
}

fn preview(s: &str) -> String {
    s.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[&str]) -> Vec<String> {
        k.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn logfmt_quotes_escapes_bare_keys_and_missing() {
        let mut p = Pairs::new(
            true,
            "=".into(),
            None,
            keys(&["level", "msg", "debug", "nope", "n"]),
        );
        let mut out = Vec::new();
        p.extract(
            r#"level=info msg="hello \"you\" there" debug n=3 n=4"#,
            &mut out,
        )
        .expect("parses");
        assert_eq!(
            out,
            vec![
                Value::str("info"),
                Value::str("hello \"you\" there"),
                Value::Bool(true),
                Value::Null,
                Value::str("4"),
            ]
        );
        assert!(p.extract(r#"msg="open"#, &mut Vec::new()).is_err());
    }

    #[test]
    fn kv_with_separators() {
        let mut p = Pairs::new(false, ":".into(), Some(";".into()), keys(&["a", "b"]));
        let mut out = Vec::new();
        p.extract("a:1;junk;b:x:y", &mut out).expect("parses");
        assert_eq!(out, vec![Value::str("1"), Value::str("x:y")]);
    }
}
