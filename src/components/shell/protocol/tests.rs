//! Tests of the multilang wire format, most of them differential: the fast paths against
//! the reference implementations.

use super::parse::{parse_general, parse_typed};
use super::reference::*;
use super::write::*;
use super::*;
use crate::tuple::Value as TupleValue;
use serde_json::{json, Value};

fn deframe(input: &str) -> Vec<String> {
    let mut d = Deframer::default();
    input.lines().filter_map(|l| d.push_line(l)).collect()
}

#[test]
fn messages_may_span_lines_and_end_at_end() {
    let msgs = deframe("{\"command\":\n\"sync\"}\nend\r\n{\"pid\": 7}\nend\n");
    assert_eq!(msgs, vec!["{\"command\":\n\"sync\"}", "{\"pid\": 7}"]);
    assert_eq!(parse(&msgs[0]), Ok(ChildMessage::Command(Command::Sync)));
    assert_eq!(parse(&msgs[1]), Ok(ChildMessage::Pid(7)));
}

#[test]
fn frame_appends_end_line() {
    assert_eq!(frame(&task_ids(&[3, 4])), "[3,4]\nend\n");
}

/// Storm's JsonSerializer takes `"anchors": "ID"` as a list of one id.
#[test]
fn a_bare_string_anchor_is_one_anchor() {
    for text in [
        r#"{"command":"emit","tuple":["a"],"anchors":"17"}"#,
        r#"{"command": "emit", "tuple": ["a"], "anchors": "17"}"#,
    ] {
        let m = parse(text);
        let Ok(ChildMessage::Command(Command::Emit(e))) = m else {
            panic!("not an emit: {m:?}");
        };
        assert_eq!(e.anchors.as_slice(), ["17"]);
    }
    assert!(parse(r#"{"command":"emit","tuple":["a"],"anchors":{"id":1}}"#).is_err());
}

#[test]
fn emit_defaults_and_fields() {
    let m = parse(r#"{"command":"emit","tuple":["a",1],"anchors":["5",6]}"#);
    let Ok(ChildMessage::Command(Command::Emit(e))) = m else {
        panic!("not an emit: {m:?}");
    };
    assert_eq!(e.stream, None);
    assert_eq!(e.anchors.as_slice(), ["5", "6"]);
    assert!(e.need_task_ids);
    assert_eq!(e.task, None);
    let m = parse(
        r#"{"command":"emit","tuple":[],"stream":"s","task":4,"id":{"k":1},"need_task_ids":false}"#,
    );
    let Ok(ChildMessage::Command(Command::Emit(e))) = m else {
        panic!("not an emit: {m:?}");
    };
    assert_eq!(e.stream.as_deref(), Some("s"));
    assert_eq!(e.task, Some(4));
    assert_eq!(e.id, Some(TupleValue::from_json(&json!({"k": 1}))));
    assert!(!e.need_task_ids);
}

#[test]
fn log_levels_default_to_info() {
    let m = parse(r#"{"command":"log","msg":"hi"}"#);
    assert_eq!(
        m,
        Ok(ChildMessage::Command(Command::Log {
            msg: "hi".into(),
            level: LogLevel::Info
        }))
    );
    let m = parse(r#"{"command":"log","msg":"x","level":4}"#);
    assert!(matches!(
        m,
        Ok(ChildMessage::Command(Command::Log {
            level: LogLevel::Error,
            ..
        }))
    ));
}

#[test]
fn errors_name_the_problem_and_quote_the_text() {
    let err = |t: &str| parse(t).err().map(|e| e.to_string()).unwrap_or_default();
    let stray = err("{not json");
    assert!(
        stray.starts_with(r#"the child wrote "{not json" to its stdout, which is not a protocol message: invalid JSON ("#),
        "{stray}"
    );
    assert!(
        stray.contains("write only protocol messages to stdout"),
        "{stray}"
    );
    // A print before a message: the line named is the printed one.
    let printed = parse("debug: a\n{\"command\": \"sync\"}").err();
    assert_eq!(
        printed.and_then(|e| e.stray_line),
        Some("debug: a".to_string())
    );
    assert_eq!(err("[1]"), "expected a JSON object in message: [1]");
    assert_eq!(
        parse(r#"{"command":"jump","far":true}"#),
        Ok(ChildMessage::Command(Command::Unknown {
            name: "jump".into()
        }))
    );
    assert_eq!(
        err(r#"{"command":"emit","tuple":"x"}"#),
        r#"`tuple` must be a list in message: {"command":"emit","tuple":"x"}"#
    );
    assert_eq!(
        err(r#"{"command":"ack"}"#),
        r#"`ack` needs an `id` field in message: {"command":"ack"}"#
    );
    let long = format!("{{\"command\":7,\"x\":\"{}\"}}", "x".repeat(500));
    assert!(err(&long).chars().count() < 2 * EXCERPT_CHARS + 80);
}

#[test]
fn excerpt_cuts_on_char_boundaries() {
    let s = "é".repeat(300);
    let e = excerpt(&s);
    assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
    assert!(e.ends_with('…'));
    assert_eq!(excerpt("short"), "short");
}

#[test]
fn parent_messages_have_storm_shapes() {
    assert_eq!(
        heartbeat("9").to_string(),
        r#"{"id":"9","comp":null,"stream":"__heartbeat","task":-1,"tuple":[]}"#
    );
    assert_eq!(
        SpoutCommand::Ack(json!(12)).to_json().to_string(),
        r#"{"command":"ack","id":12}"#
    );
    assert_eq!(
        SpoutCommand::Next.to_json().to_string(),
        r#"{"command":"next"}"#
    );
}

#[test]
fn common_commands_take_the_typed_path() {
    for text in [
        r#"{"command": "emit", "tuple": ["a", 1, 2.5, null, true, [1], {"k": "v"}], "anchors": ["5"]}"#,
        r#"{"command": "emit", "tuple": [], "stream": "s\n", "task": 4, "need_task_ids": false}"#,
        r#"{"command": "emit", "tuple": [1], "id": {"x": [1, 2]}, "extra": 7}"#,
        r#"{"command": "ack", "id": "17"}"#,
        r#"{"command":"ack","id":"17"}"#,
        r#"{"command": "fail", "id": "18"}"#,
        r#"{"command":"fail","id":"18"}"#,
        r#"{"command": "fail", "id": 18}"#,
        r#"{"command": "sync"}"#,
        r#"{"command": "log", "msg": "line 1\nline 2", "level": 3}"#,
        r#"{"command": "error", "msg": "Traceback ..."}"#,
        r#"{"command": "metrics", "name": "m", "params": {"a": 1}}"#,
    ] {
        let typed = parse_typed(text);
        assert!(typed.is_some(), "not typed: {text}");
        assert_eq!(typed.map(Ok), Some(parse_general(text)), "{text}");
    }
    // The handshake answer, and anything odd, is the general parser's.
    for text in [
        r#"{"pid": 12}"#,
        r#"{"pid": null, "command": "sync"}"#,
        r#"{"command": "ack", "id": 1.5}"#,
        r#"{"command": "ack", "id": null}"#,
        r#"{"command": "emit", "tuple": null}"#,
        r#"{"command": "log", "msg": 5}"#,
        r#"{"command": "sync", "command": "ack"}"#,
        r#"{"command": "ack", "id": 18446744073709551615}"#,
        r#"{"command": "ack", "id": "1\"}"#,
        r#"{"command": "ack", "id": "1", "id": "2"}"#,
    ] {
        assert_eq!(parse_typed(text), None, "{text}");
    }
}

#[test]
fn task_id_answers_and_tuples_are_written_as_json_would_be() {
    for tasks in [&[][..], &[3], &[3, 4, 4000000000]] {
        let mut buf = Vec::new();
        write_task_ids(&mut buf, tasks);
        assert_eq!(String::from_utf8_lossy(&buf), frame(&task_ids(tasks)));
    }
    let mut buf = Vec::new();
    let values = [TupleValue::str("a \"b\"\n"), TupleValue::Float(f64::NAN)];
    write_bolt_tuple(&mut buf, 17, "split", "default", -1, &values);
    assert_eq!(
        String::from_utf8_lossy(&buf),
        "{\"id\":\"17\",\"comp\":\"split\",\"stream\":\"default\",\"task\":-1,\"tuple\":[\"a \\\"b\\\"\\n\",null]}\nend\n"
    );
}

/// Everything the framer hands out when `input` arrives cut at `cuts`, then ends.
fn framed(input: &[u8], cuts: &[usize]) -> Vec<Result<String, String>> {
    let mut f = Framer::default();
    let mut out = Vec::new();
    let mut at = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.push(input.len());
    for cut in cuts {
        let chunk = &input[at..cut.max(at)];
        at = cut.max(at);
        let spare = f.spare();
        spare[..chunk.len()].copy_from_slice(chunk);
        f.filled(chunk.len());
        while let Some(m) = f.next_message(false) {
            out.push(match m {
                Framed::Message(t) => Ok(t.to_string()),
                Framed::Error(e) => Err(e.to_string()),
            });
        }
    }
    while let Some(m) = f.next_message(true) {
        out.push(match m {
            Framed::Message(t) => Ok(t.to_string()),
            Framed::Error(e) => Err(e.to_string()),
        });
    }
    out
}

#[test]
fn framer_reports_invalid_utf8_by_line_and_goes_on() {
    let out = framed(b"{\"a\":\n\xff\xfe\n1}\nend\n", &[3, 9]);
    assert_eq!(
        out,
        vec![
            Err("invalid UTF-8 in message: \u{fffd}\u{fffd}".to_string()),
            Ok("{\"a\":\n1}".to_string())
        ]
    );
}

fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-z\"\\\\\n\u{e9}]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map("[a-z]{0,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest::proptest! {
    /// The typed fast path never disagrees with the general parser: same message, or it
    /// leaves the message to it.
    #[test]
    fn typed_parsing_agrees_with_the_general_parser(
        command in proptest::prop_oneof![
            proptest::strategy::Just(Value::Null),
            proptest::strategy::Strategy::prop_map(
                "emit|ack|fail|sync|log|error|metrics|jump",
                Value::from,
            ),
            json_value(),
        ],
        fields in proptest::collection::vec(
            ("id|stream|tuple|task|anchors|need_task_ids|msg|level|name|params|pid|x", json_value()),
            0..5,
        ),
    ) {
        let mut obj = serde_json::Map::new();
        if !command.is_null() {
            obj.insert("command".into(), command);
        }
        for (k, v) in fields {
            obj.insert(k, v);
        }
        let text = Value::Object(obj).to_string();
        if let Some(typed) = parse_typed(&text) {
            proptest::prop_assert_eq!(Ok(typed), parse_general(&text));
        }
    }

    #[test]
    fn tuples_are_written_as_through_json(
        values in proptest::collection::vec(json_value(), 0..4),
        id in proptest::prelude::any::<u64>(),
        task in proptest::prelude::any::<i64>(),
        comp in "[a-z\"\u{e9}]{0,5}",
    ) {
        let ours: Vec<TupleValue> = values.iter().map(TupleValue::from_json).collect();
        let mut buf = Vec::new();
        write_bolt_tuple(&mut buf, id, &comp, "default", task, &ours);
        let json = frame(&bolt_tuple(
            &id.to_string(),
            &comp,
            "default",
            task,
            ours.iter().map(TupleValue::to_json).collect(),
        ));
        proptest::prop_assert_eq!(String::from_utf8_lossy(&buf), json);
    }

    /// Cut anywhere, the framer hands out what the line deframer does.
    #[test]
    fn framer_agrees_with_the_line_deframer(
        lines in proptest::collection::vec("end|end\r|\\{\\}|a\r?|b|", 0..12),
        cuts in proptest::collection::vec(proptest::prelude::any::<usize>(), 0..6),
        newline_at_end in proptest::prelude::any::<bool>(),
    ) {
        let mut input = lines.join("\n");
        if newline_at_end {
            input.push('\n');
        }
        let ours = framed(input.as_bytes(), &cuts);
        let theirs: Vec<Result<String, String>> = deframe(&input).into_iter().map(Ok).collect();
        proptest::prop_assert_eq!(ours, theirs);
    }

    #[test]
    fn framing_round_trips_any_json_string(s in ".*") {
        let msg = json!({"command": "log", "msg": s});
        let mut d = Deframer::default();
        let framed = frame(&msg);
        let out: Vec<String> = framed.lines().filter_map(|l| d.push_line(l)).collect();
        proptest::prop_assert_eq!(out.len(), 1);
        let back: Value = serde_json::from_str(&out[0]).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
        proptest::prop_assert_eq!(back, msg);
    }
}
