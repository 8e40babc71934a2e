//! The syslog reader on the RFCs' own examples, on what util-linux `logger` sends, on
//! malformed messages, and on arbitrary text (never a panic; what it reads back is what was
//! written).

use super::*;
use proptest::prelude::*;

const TODAY: (i16, i8, i8) = (2026, 12, 3);

fn read(text: &str) -> Message {
    parse_at(text, TODAY).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn rfc5424_examples_read_into_fields() {
    let m = read("<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - BOM'su root' failed for lonvick on /dev/pts/8");
    assert_eq!((m.facility, m.severity), ("auth", "crit"));
    assert_eq!(m.timestamp.as_deref(), Some("2003-10-11T22:14:15.003Z"));
    assert_eq!(m.host.as_deref(), Some("mymachine.example.com"));
    assert_eq!((m.app.as_deref(), m.procid.as_deref()), (Some("su"), None));
    assert_eq!(m.msgid.as_deref(), Some("ID47"));
    assert_eq!(m.structured_data, None);
    assert!(m.message.starts_with("BOM'su root'"));
    let m = read(
        r#"<165>1 2003-10-11T22:14:15.003-07:00 host evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"] An application event"#,
    );
    assert_eq!((m.facility, m.severity), ("local4", "notice"));
    let sd = m.structured_data.expect("structured data");
    let Some(Value::Map(first)) = sd.get("exampleSDID@32473") else {
        panic!("{sd:?}");
    };
    assert_eq!(first.get("eventSource"), Some(&Value::str("Application")));
    assert_eq!(sd.len(), 2);
    assert_eq!(m.message, "An application event");
    let m = read(r#"<13>1 - - - - - [a x="q\"]\\"]"#);
    assert_eq!((m.timestamp, m.host, m.message.as_str()), (None, None, ""));
    let sd = m.structured_data.expect("sd");
    assert_eq!(
        sd.get("a"),
        Some(&Value::Map(Box::new(BTreeMap::from([(
            "x".to_string(),
            Value::str("q\"]\\")
        )]))))
    );
}

#[test]
fn rfc3164_as_logger_and_others_send_it() {
    let m = read("<13>Dec  3 11:05:38 box alice: hello there");
    assert_eq!((m.facility, m.severity), ("user", "notice"));
    assert_eq!(m.timestamp.as_deref(), Some("2026-12-03T11:05:38Z"));
    assert_eq!(m.host.as_deref(), Some("box"));
    assert_eq!(m.app.as_deref(), Some("alice"));
    assert_eq!(m.message, "hello there");
    let m = read("<30>Oct 11 22:14:15 mymachine sshd[4123]: Accepted key");
    assert_eq!((m.facility, m.severity), ("daemon", "info"));
    assert_eq!(
        (m.app.as_deref(), m.procid.as_deref()),
        (Some("sshd"), Some("4123"))
    );
    // No host: the first word is the tag.
    let m = read("<13>Dec 25 01:02:03 cron[9]: ran");
    assert_eq!((m.host, m.app.as_deref()), (None, Some("cron")));
    // A time ahead of today by more than a day is last year's.
    assert_eq!(m.timestamp.as_deref(), Some("2025-12-25T01:02:03Z"));
    let m = read("<13>Dec 04 00:00:00 h just text");
    assert_eq!((m.app, m.message.as_str()), (None, "just text"));
    assert_eq!(m.timestamp.as_deref(), Some("2026-12-04T00:00:00Z"));
}

#[test]
fn malformed_messages_are_errors_that_say_why() {
    for (text, says) in [
        ("hello", "<PRI>"),
        ("<>1 - - - - - -", "<PRI>"),
        ("<192>1 - - - - - -", "priority"),
        ("<013>1 - - - - - -", "priority"),
        ("<13>1 yesterday h a p m -", "RFC 3339"),
        ("<13>1 - h a p m [x", "structured data"),
        ("<13>1 - h a p m [x y=\"1]", "structured data"),
        ("<13>1 - h a p m -msg", "no space"),
        ("<13>1 - h a", "procid"),
        ("<13>Foo  3 11:05:38 h a: m", "RFC 3164"),
        ("<13>Dec 99 11:05:38 h a: m", "RFC 3164"),
        ("<13>Dec  3 11-05-38 h a: m", "RFC 3164"),
        ("<13>Dé  3 11:05:38 h a: m", "RFC 3164"),
    ] {
        let err = parse_at(text, TODAY)
            .err()
            .unwrap_or_else(|| panic!("{text} read"));
        assert!(err.contains(says), "{text}: {err}");
    }
}

#[test]
fn values_follow_the_fields() {
    let values = read("<13>1 - h a p m - x").values();
    assert_eq!(values.len(), FIELDS.len());
    assert_eq!(values[0], Value::str("user"));
    assert_eq!(values[8], Value::str("x"));
}

proptest! {
    #[test]
    fn any_text_is_read_or_refused_without_a_panic(text in "\\PC{0,80}") {
        let _ = parse_at(&text, TODAY);
        let _ = parse_at(&format!("<13>{text}"), TODAY);
        let _ = parse_at(&format!("<13>1 {text}"), TODAY);
    }

    #[test]
    fn rfc5424_fields_read_back_as_written(
        pri in 0u8..192,
        host in "[a-z][a-z0-9.-]{0,20}",
        app in "[a-z][a-z0-9]{0,10}",
        procid in "[0-9]{1,6}",
        value in "[ -~]{0,20}",
        message in "[ -~]{0,40}",
    ) {
        let escaped = value.replace('\\', "\\\\").replace('"', "\\\"").replace(']', "\\]");
        let text = format!("<{pri}>1 2026-01-02T03:04:05Z {host} {app} {procid} - [id k=\"{escaped}\"] {message}");
        let m = parse_at(&text, TODAY).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(m.facility, FACILITIES[usize::from(pri / 8)]);
        prop_assert_eq!(m.severity, SEVERITIES[usize::from(pri % 8)]);
        prop_assert_eq!(m.host, Some(host));
        prop_assert_eq!(m.app, Some(app));
        prop_assert_eq!(m.procid, Some(procid));
        let sd = m.structured_data.unwrap_or_default();
        let want = Value::Map(Box::new(BTreeMap::from([("k".to_string(), Value::str(&value))])));
        prop_assert_eq!(sd.get("id"), Some(&want));
        prop_assert_eq!(m.message, message);
    }
}
