//! One tuple as Redis commands: the lookup it asks (`GET`, `HGET`, `HMGET`, `SISMEMBER`), or
//! the writes it makes (`SET`…`PUBLISH`, then `PEXPIRE` with a `ttl`), each as its words.

use super::spec::{Command, Spec};
use super::template::Template;
use crate::tuple::Value;

/// A command as its words (`["HINCRBY", "h", "f", "1"]`).
pub(crate) type Words = Vec<String>;

/// A spec bound to its input's fields.
pub(crate) struct Bound {
    spec: Spec,
    /// Where each `value` field is in the input.
    value_at: Vec<usize>,
    /// The input's field names (`xadd` and `publish` of the whole tuple).
    names: Vec<String>,
}

impl Bound {
    /// Bind `spec` to an input with fields `inputs`; an error names a missing field.
    pub(crate) fn new(mut spec: Spec, inputs: &[String]) -> Result<Bound, String> {
        spec.key.bind(inputs)?;
        for f in &mut spec.fields {
            f.bind(inputs)?;
        }
        let value_at = spec
            .value
            .iter()
            .map(|v| {
                inputs
                    .iter()
                    .position(|f| f == v)
                    .ok_or_else(|| format!("the input has no field `{v}`"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Bound {
            spec,
            value_at,
            names: inputs.to_vec(),
        })
    }

    fn render_all(ts: &[Template], values: &[Value]) -> Vec<String> {
        ts.iter().map(|t| t.render(values)).collect()
    }

    /// The lookup for a tuple.
    pub(crate) fn read(&self, values: &[Value]) -> Words {
        let s = &self.spec;
        let mut words = vec![s.command.name().to_ascii_uppercase(), s.key.render(values)];
        words.extend(Self::render_all(&s.fields, values));
        words
    }

    /// The `value` field's text (`None` when it is null or absent).
    fn value_text(&self, values: &[Value]) -> Option<String> {
        let v = values.get(*self.value_at.first()?)?;
        (!matches!(v, Value::Null)).then(|| v.plain_text())
    }

    /// An increment: the `value` field as an integer (1 without `value`).
    fn int_increment(&self, values: &[Value]) -> Result<String, String> {
        let Some(&at) = self.value_at.first() else {
            return Ok("1".into());
        };
        match values.get(at) {
            Some(Value::Int(i)) => Ok(i.to_string()),
            Some(Value::Float(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                Ok((*f as i64).to_string())
            }
            Some(Value::Str(s)) if s.trim().parse::<i64>().is_ok() => Ok(s.trim().to_string()),
            other => Err(format!(
                "`{}` is no integer: {}",
                self.spec.value[0],
                other.map_or("missing".into(), |v| v.plain_text())
            )),
        }
    }

    fn float_increment(&self, values: &[Value]) -> Result<String, String> {
        let Some(&at) = self.value_at.first() else {
            return Ok("1".into());
        };
        match values.get(at).and_then(Value::as_f64) {
            Some(f) if f.is_finite() => Ok(f.to_string()),
            _ => Err(format!("`{}` is no number", self.spec.value[0])),
        }
    }

    /// The tuple's fields as a JSON object (`publish` without `value`).
    fn json(&self, values: &[Value]) -> String {
        let obj: serde_json::Map<String, serde_json::Value> = self
            .names
            .iter()
            .zip(values.iter())
            .map(|(n, v)| (n.clone(), v.to_json()))
            .collect();
        serde_json::Value::Object(obj).to_string()
    }

    /// The writes for a tuple, or why it cannot be written (a value that is no number).
    pub(crate) fn writes(&self, values: &[Value]) -> Result<Vec<Words>, String> {
        let s = &self.spec;
        let key = s.key.render(values);
        let field = || {
            s.fields
                .first()
                .map(|f| f.render(values))
                .unwrap_or_default()
        };
        let value = || {
            self.value_text(values)
                .ok_or_else(|| format!("`{}` is null", s.value.first().map_or("", |v| v)))
        };
        let name = s.command.name().to_ascii_uppercase();
        let cmd = match s.command {
            Command::Set => {
                let mut w = vec![name, key.clone(), value()?];
                if let Some(ttl) = s.ttl {
                    w.extend(["PX".to_string(), ttl.as_millis().to_string()]);
                }
                return Ok(vec![w]);
            }
            Command::Hset => vec![name, key.clone(), field(), value()?],
            Command::Incrby => vec![name, key.clone(), self.int_increment(values)?],
            Command::Hincrby => vec![name, key.clone(), field(), self.int_increment(values)?],
            Command::Zincrby => vec![name, key.clone(), self.float_increment(values)?, field()],
            Command::Sadd => vec![name, key.clone(), field()],
            Command::Xadd => self.xadd(key.clone(), values),
            Command::Publish => vec![
                name,
                key.clone(),
                match self.value_at.is_empty() {
                    true => self.json(values),
                    false => value()?,
                },
            ],
            Command::Get | Command::Hget | Command::Hmget | Command::Sismember => {
                return Err(format!("`{}` is a lookup", s.command.name()))
            }
        };
        let expire = s
            .ttl
            .map(|ttl| vec!["PEXPIRE".to_string(), key, ttl.as_millis().to_string()]);
        Ok(std::iter::once(cmd).chain(expire).collect())
    }

    /// `XADD key * f v …`: the `value` fields, or every field of the tuple.
    fn xadd(&self, key: String, values: &[Value]) -> Words {
        let mut w = vec!["XADD".to_string(), key, "*".to_string()];
        let pick: Vec<usize> = match self.value_at.is_empty() {
            true => (0..self.names.len()).collect(),
            false => self.value_at.clone(),
        };
        for at in pick {
            w.push(self.names.get(at).cloned().unwrap_or_default());
            w.push(values.get(at).map(Value::plain_text).unwrap_or_default());
        }
        w
    }
}

/// A command to send, from its words.
pub(crate) fn cmd(words: &[String]) -> redis::Cmd {
    let mut c = redis::cmd(words.first().map_or("PING", String::as_str));
    for w in &words[1.min(words.len())..] {
        c.arg(w.as_str());
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(j: serde_json::Value, inputs: &[&str]) -> Bound {
        let spec = Spec::from_args(j.as_object().expect("object")).expect("a spec");
        let inputs: Vec<String> = inputs.iter().map(|s| s.to_string()).collect();
        Bound::new(spec, &inputs).expect("binds")
    }

    #[test]
    fn writes_are_words() {
        let b = bound(
            serde_json::json!({"command": "hincrby", "key": "c:{s}", "field": "{w}", "value": "n", "ttl": 60}),
            &["s", "w", "n"],
        );
        let got = b
            .writes(&[Value::str("api"), Value::str("GET"), Value::Int(3)])
            .expect("writes");
        assert_eq!(
            got,
            vec![
                vec!["HINCRBY", "c:api", "GET", "3"]
                    .into_iter()
                    .map(String::from)
                    .collect::<Vec<_>>(),
                vec!["PEXPIRE", "c:api", "60000"]
                    .into_iter()
                    .map(String::from)
                    .collect(),
            ]
        );
        let bad = b.writes(&[Value::str("api"), Value::str("GET"), Value::str("x")]);
        assert!(bad.is_err());
        let x = bound(
            serde_json::json!({"command": "xadd", "key": "s"}),
            &["a", "b"],
        );
        let got = x.writes(&[Value::Int(1), Value::str("z")]).expect("writes");
        assert_eq!(got[0], ["XADD", "s", "*", "a", "1", "b", "z"]);
        let r = bound(
            serde_json::json!({"command": "hmget", "key": "u:{u}", "field": ["a", "b"], "as": ["x", "y"]}),
            &["u"],
        );
        assert_eq!(r.read(&[Value::str("7")]), ["HMGET", "u:7", "a", "b"]);
    }
}
