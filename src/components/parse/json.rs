//! JSON lines: take the named top-level or dotted fields of one object per line without
//! building the document. serde_json reads the whole line (so it must be well-formed JSON, to
//! the last byte) while only the wanted values are built; everything else is skipped as
//! `IgnoredAny`. Missing fields and paths through non-objects are null; numbers stay numbers
//! (integers as integers); nested values become lists and maps; of a key written twice, the
//! last counts — all as `serde_json::Value` would answer.

use super::json_scan::{self, Node};
use crate::tuple::Value;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

impl Node {
    /// Fill the slots under this node from an already built value.
    fn fill_from(&self, v: &Value, out: &mut [Value]) {
        let Value::Map(m) = v else { return };
        for (k, c) in &self.children {
            if let Some(x) = m.get(k) {
                for &s in &c.slots {
                    out[s] = x.clone();
                }
                c.fill_from(x, out);
            }
        }
    }
}

pub(crate) struct JsonFields {
    root: Node,
    count: usize,
    values: Vec<Value>,
}

impl JsonFields {
    pub(crate) fn new(paths: &[Vec<String>]) -> JsonFields {
        let mut root = Node::default();
        for (i, p) in paths.iter().enumerate() {
            let mut node = &mut root;
            for key in p {
                let at = match node.children.iter().position(|(k, _)| k == key) {
                    Some(at) => at,
                    None => {
                        node.children.push((key.clone(), Node::default()));
                        node.children.len() - 1
                    }
                };
                node = &mut node.children[at].1;
            }
            node.slots.push(i);
        }
        JsonFields {
            root,
            count: paths.len(),
            values: Vec::new(),
        }
    }

    /// The fields of `line` by the fast path alone, appended to `out`; `None` (and `out`
    /// unchanged) when the line needs the general reader.
    pub(crate) fn extract_fast(&mut self, line: &str, out: &mut Vec<Value>) -> Option<()> {
        let start = out.len();
        out.extend(std::iter::repeat_with(|| Value::Null).take(self.count));
        let read = out
            .get_mut(start..)
            .and_then(|slots| json_scan::extract(line, &self.root, slots));
        if read.is_none() {
            out.truncate(start);
        }
        read
    }

    /// The fields of `line`, in order, appended to `out`.
    pub(crate) fn extract(&mut self, line: &str, out: &mut Vec<Value>) -> Result<(), String> {
        match self.extract_fast(line, out) {
            Some(()) => Ok(()),
            None => self.extract_general(line, out),
        }
    }

    /// The fields of `line` by the general reader alone (serde_json), appended to `out`.
    fn extract_general(&mut self, line: &str, out: &mut Vec<Value>) -> Result<(), String> {
        self.values.clear();
        self.values.resize(self.count, Value::Null);
        let mut de = serde_json::Deserializer::from_str(line);
        let seed = Object {
            node: &self.root,
            out: &mut self.values,
            top: true,
        };
        seed.deserialize(&mut de)
            .and_then(|()| de.end())
            .map_err(|e| describe(&e))?;
        out.append(&mut self.values);
        Ok(())
    }
}

/// The JSON fast path's values for `line` (`None`: it leaves the line to the general reader)
/// beside the general reader's, fields `paths`: what the fuzz target compares.
#[doc(hidden)]
pub fn both_readers(
    paths: &[Vec<String>],
    line: &str,
) -> (Option<Vec<Value>>, Result<Vec<Value>, String>) {
    let mut fields = JsonFields::new(paths);
    let mut fast = Vec::new();
    let fast = fields.extract_fast(line, &mut fast).map(|()| fast);
    let mut general = Vec::new();
    let general = fields.extract_general(line, &mut general).map(|()| general);
    (fast, general)
}

fn describe(e: &serde_json::Error) -> String {
    let text = e.to_string();
    if text.starts_with("not a JSON object") {
        return "not a JSON object".into();
    }
    format!("invalid JSON: {text}")
}

/// Reads an object, keeping the wanted keys (`top`: the line itself, which must be an object).
struct Object<'a> {
    node: &'a Node,
    out: &'a mut [Value],
    top: bool,
}

impl<'de> DeserializeSeed<'de> for Object<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Object<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match self.node.child(&key) {
                Some(child) => map.next_value_seed(Field {
                    node: child,
                    out: &mut *self.out,
                })?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }

    // Inside a document, anything but an object just has no wanted keys.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.top {
            return Err(de::Error::custom("not a JSON object"));
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.scalar()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.scalar()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar()
    }
}

impl Object<'_> {
    fn scalar<E: de::Error>(self) -> Result<(), E> {
        match self.top {
            true => Err(E::custom("not a JSON object")),
            false => Ok(()),
        }
    }
}

/// The value of a wanted key: built when the key itself is wanted, else searched for wanted
/// keys below it.
struct Field<'a> {
    node: &'a Node,
    out: &'a mut [Value],
}

impl<'de> DeserializeSeed<'de> for Field<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        // A key written again replaces what an earlier one gave.
        let mut under = Vec::new();
        self.node.slots(&mut under);
        for s in under {
            self.out[s] = Value::Null;
        }
        match self.node.slots.split_first() {
            Some((&first, rest)) => {
                let v = d.deserialize_any(Build)?;
                self.node.fill_from(&v, self.out);
                for &s in rest {
                    self.out[s] = v.clone();
                }
                self.out[first] = v;
                Ok(())
            }
            None => Object {
                node: self.node,
                out: self.out,
                top: false,
            }
            .deserialize(d),
        }
    }
}

/// Builds one of our values straight from the JSON (no `serde_json::Value` in between).
struct Build;

impl<'de> DeserializeSeed<'de> for Build {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(Build)
    }
}

impl<'de> Visitor<'de> for Build {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Int(i))
    }
    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        Ok(i64::try_from(u).map_or(Value::Float(u as f64), Value::Int))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Float(f))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::str(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(Build)? {
            items.push(v);
        }
        Ok(Value::List(Box::new(items)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut m = BTreeMap::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(Build)?;
            m.insert(k, v);
        }
        Ok(Value::Map(Box::new(m)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(fields: &[&str], line: &str) -> Result<Vec<Value>, String> {
        let paths: Vec<Vec<String>> = fields
            .iter()
            .map(|f| f.split('.').map(str::to_string).collect())
            .collect();
        let mut out = Vec::new();
        JsonFields::new(&paths).extract(line, &mut out)?;
        Ok(out)
    }

    #[test]
    fn fields_paths_types_and_missing() {
        let got = take(
            &["level", "req.path", "n", "x", "tags", "f", "ok", "none", "big"],
            r#"{"level":"error","req":{"path":"/a\"b","m":1},"n":-3,"x":1.0,"tags":[1,"é"],"f":2.5e3,"ok":true,"none":null,"big":18446744073709551615}"#,
        )
        .expect("parses");
        assert_eq!(got[0], Value::str("error"));
        assert_eq!(got[1], Value::str("/a\"b"));
        assert_eq!(got[2], Value::Int(-3));
        assert_eq!(got[3], Value::Float(1.0));
        assert_eq!(got[4], Value::from_json(&serde_json::json!([1, "é"])));
        assert_eq!(got[5], Value::Float(2500.0));
        assert_eq!(got[6], Value::Bool(true));
        assert_eq!(got[7], Value::Null);
        assert_eq!(got[8], Value::Float(18446744073709551615.0));
        // Missing, and a path through a non-object.
        let got = take(&["nope", "level.x"], r#"{"level":"x"}"#).expect("parses");
        assert_eq!(got, vec![Value::Null, Value::Null]);
    }

    #[test]
    fn escapes_and_unicode() {
        let got = take(&["m"], r#"{"m":"tab\there \u00e9 \ud83d\ude00 \\"}"#).expect("parses");
        assert_eq!(got[0], Value::str("tab\there é 😀 \\"));
    }

    #[test]
    fn broken_lines_are_errors() {
        for line in [
            "",
            "not json",
            r#"{"a":1"#,
            r#"{"a":}"#,
            r#"[1,2]"#,
            r#"{"a":1} trailing"#,
            r#"{"a":"unterminated}"#,
        ] {
            assert!(take(&["a"], line).is_err(), "{line:?} must be an error");
        }
    }

    #[test]
    fn duplicate_keys_take_the_last_as_serde_json_does() {
        let got = take(&["a"], r#"{"a":1,"a":2}"#).expect("parses");
        assert_eq!(got, vec![Value::Int(2)]);
    }

    use proptest::prelude::*;

    /// Random JSON with keys from a small set, so paths often hit, nested up to three levels.
    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            (-1e12f64..1e12).prop_map(serde_json::Value::from),
            "[a-z\\\"\u{e9}\u{1F600}\n ]{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                proptest::collection::btree_map("[abc]", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// What serde_json's own tree says a path holds.
    fn reference(doc: &serde_json::Value, path: &[String]) -> Value {
        let mut at = doc;
        for key in path {
            match at.get(key) {
                Some(next) if at.is_object() => at = next,
                _ => return Value::Null,
            }
        }
        Value::from_json(at)
    }

    /// A JSON value written as text: keys may repeat, numbers are odd (`-0`, `1e400`, beyond
    /// i64), strings hold every kind of escape, spaces are sprinkled.
    fn json_text_value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            any::<i64>().prop_map(|i| i.to_string()),
            (-1e12f64..1e12).prop_map(|f| f.to_string()),
            prop_oneof![
                Just("-0"),
                Just("-0.0"),
                Just("1e400"),
                Just("1E+2"),
                Just("0.5e-3"),
                Just("18446744073709551616"),
                Just("123456789012345678901234567890"),
            ]
            .prop_map(str::to_string),
            "[a-z\"\u{e9}\u{1F600}\n ]{0,8}".prop_map(|s| serde_json::Value::from(s).to_string()),
            prop_oneof![
                Just(r#""a\/b\b\f\r\t""#),
                Just(r#""\u00e9x""#),
                Just(r#""\ud800""#),
                Just(r#""\ud83d\ude00""#),
                Just(r#""\\\"""#),
            ]
            .prop_map(str::to_string),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            let spaced = (
                inner.clone(),
                prop_oneof![Just(""), Just(" "), Just("\t\n ")],
            )
                .prop_map(|(v, ws)| format!("{ws}{v}{ws}"));
            prop_oneof![
                proptest::collection::vec(spaced.clone(), 0..4)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                proptest::collection::vec(("[abc]", spaced), 0..4).prop_map(|members| {
                    let members: Vec<String> = members
                        .iter()
                        .map(|(k, v)| format!("\"{k}\":{v}"))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    /// A line: one object of such values.
    fn json_text() -> impl Strategy<Value = String> {
        proptest::collection::vec(("[abc]", json_text_value()), 0..5).prop_map(|members| {
            let members: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("\"{k}\" : {v}"))
                .collect();
            format!(" {{{}}}", members.join(","))
        })
    }

    /// The fast path answers only what the general reader answers, and where serde_json's own
    /// tree reads the line, both give what it holds at each path.
    fn agree(line: &str, paths: &[Vec<String>]) -> Result<(), TestCaseError> {
        let mut fields = JsonFields::new(paths);
        let mut fast = Vec::new();
        let answered = fields.extract_fast(line, &mut fast).is_some();
        let mut general = Vec::new();
        let read = fields.extract_general(line, &mut general);
        if answered {
            prop_assert_eq!(&read, &Ok(()), "{}", line);
            prop_assert_eq!(&fast, &general, "{}", line);
        }
        if let Ok(tree) = serde_json::from_str::<serde_json::Value>(line) {
            if !tree.is_object() {
                prop_assert_eq!(&read, &Err("not a JSON object".to_string()), "{}", line);
                return Ok(());
            }
            let expected: Vec<Value> = paths.iter().map(|p| reference(&tree, p)).collect();
            prop_assert_eq!(&general, &expected, "{}", line);
        }
        Ok(())
    }

    #[test]
    fn the_fast_path_reads_nested_lines_repeated_keys_and_escapes() {
        let paths: Vec<Vec<String>> = [vec!["a"], vec!["b", "c"], vec!["d"]]
            .iter()
            .map(|p| p.iter().map(|s| s.to_string()).collect())
            .collect();
        for (line, want) in [
            (
                r#"{"x":{"y":[1,{"z":"\u00e9"}]},"a":"q\"uo\\te\n","b":{"c":2.5,"c":3},"d":1e400}"#,
                None,
            ),
            (
                r#"{"x":{"y":[1,{"z":"\u00e9"}]},"a":"q\"uo\\te\n","b":{"c":2.5,"c":3},"d":1}"#,
                Some(vec![
                    Value::str("q\"uo\\te\n"),
                    Value::Int(3),
                    Value::Int(1),
                ]),
            ),
            (
                r#"{"b":{"c":1},"b":[1],"a":true,"skip":1e400,"a":null,"d":"x"}"#,
                Some(vec![Value::Null, Value::Null, Value::str("x")]),
            ),
        ] {
            let mut fields = JsonFields::new(&paths);
            let mut out = Vec::new();
            let got = fields.extract_fast(line, &mut out).map(|()| out);
            assert_eq!(got, want, "{line}");
            agree(line, &paths).expect("the readers agree");
        }
    }

    proptest! {
        #[test]
        fn extraction_equals_serde_json(
            doc in proptest::collection::btree_map("[abc]", json_value(), 0..5),
            paths in proptest::collection::vec(proptest::collection::vec("[abc]", 1..4), 1..5),
        ) {
            let doc = serde_json::Value::Object(doc.into_iter().collect());
            let line = doc.to_string();
            let mut out = Vec::new();
            JsonFields::new(&paths).extract(&line, &mut out).expect("valid JSON parses");
            // serde_json's answer for the same text (its float parsing included).
            let read: serde_json::Value = serde_json::from_str(&line).expect("serde_json reads it");
            let expected: Vec<Value> = paths.iter().map(|p| reference(&read, p)).collect();
            prop_assert_eq!(out, expected);
        }

        /// On lines written as text (keys repeated, odd numbers and escapes, spaces) and then
        /// damaged at random (a byte replaced, dropped or doubled), the fast path answers only
        /// what the general reader answers; and both give serde_json's values where its own
        /// tree reads the line.
        #[test]
        fn the_fast_path_agrees_with_the_general_reader(
            line in json_text(),
            at in 0usize..400,
            byte in prop_oneof![Just(b'"'), Just(b'\\'), Just(b','), Just(b'}'), Just(b']'), Just(b'{'), Just(b':'), Just(b'0'), Just(b'.'), Just(b' '), Just(b'e'), Just(b'-'), Just(b'u'), Just(b'\x01'), Just(b'\t')],
            how in 0u8..4,
            paths in proptest::collection::vec(proptest::collection::vec("[abc]", 1..4), 1..4),
        ) {
            let mut line = line.into_bytes();
            let at = at % line.len();
            match how {
                0 => line[at] = byte,
                1 => { line.remove(at); }
                2 => line.insert(at, line[at]),
                _ => {}
            }
            let Ok(line) = String::from_utf8(line) else { return Ok(()) };
            agree(&line, &paths)?;
        }

        #[test]
        fn broken_json_is_never_a_value(doc in proptest::collection::btree_map("[abc]", json_value(), 1..4), cut in 1usize..40) {
            let line = serde_json::Value::Object(doc.into_iter().collect()).to_string();
            let cut = cut.min(line.len() - 1);
            if let Some(prefix) = line.get(..cut) {
                let mut out = Vec::new();
                prop_assert!(JsonFields::new(&[vec!["a".to_string()]]).extract(prefix, &mut out).is_err());
            }
        }
    }
}
