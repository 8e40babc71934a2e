//! Storm's multilang wire format, pure: every message is UTF-8 JSON followed by a line holding
//! exactly `end`; the messages the parent (ShellBolt / ShellSpout) sends; and the commands a
//! child may send back (`emit`, `ack`, `fail`, `log`, `error`, `metrics`, `sync`, the `pid`
//! answer of the handshake), parsed into types with located, truncated error texts.

use serde_json::{json, Value};
use std::fmt;

/// The line that ends every message.
pub const END: &str = "end";
/// Longest message we accept from a child before calling it a protocol error.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Offending texts quoted in errors are cut to this many characters.
pub const EXCERPT_CHARS: usize = 200;

/// Frame one message: its JSON, a newline, `end`, a newline.
pub fn frame(msg: &Value) -> String {
    let mut text = msg.to_string();
    text.push_str("\nend\n");
    text
}

/// `text` cut to [`EXCERPT_CHARS`] characters (with `…` when cut), for error messages.
pub fn excerpt(text: &str) -> String {
    let mut chars = text.char_indices();
    match chars.nth(EXCERPT_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Gathers lines into messages: lines are joined with `\n` until a line that is exactly `end`
/// (a trailing `\r` is tolerated), so one message may span several lines.
#[derive(Debug, Default)]
pub struct Deframer {
    buf: String,
    started: bool,
}

impl Deframer {
    /// Feed one line without its line ending. Returns the whole message text at `end`.
    pub fn push_line(&mut self, line: &str) -> Option<String> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line == END {
            self.started = false;
            return Some(std::mem::take(&mut self.buf));
        }
        if self.started {
            self.buf.push('\n');
        }
        self.started = true;
        self.buf.push_str(line);
        None
    }

    /// Bytes gathered for the message in progress.
    pub fn pending_len(&self) -> usize {
        self.buf.len()
    }
}

/// What a child may send.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildMessage {
    /// The handshake answer `{"pid": N}`.
    Pid(u32),
    Command(Command),
}

/// A child's command (Storm's `ShellMsg`).
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Emit(Emit),
    Ack { id: String },
    Fail { id: String },
    Log { msg: String, level: LogLevel },
    Error { msg: String },
    Metrics { name: String, params: Value },
    Sync,
}

/// An `emit` command.
#[derive(Debug, Clone, PartialEq)]
pub struct Emit {
    /// `None` means the default stream.
    pub stream: Option<String>,
    pub tuple: Vec<Value>,
    /// Direct emit to this task.
    pub task: Option<u32>,
    /// Bolts: ids of the input tuples this emit is anchored to.
    pub anchors: Vec<String>,
    /// Spouts: the message id that makes the tuple tracked.
    pub id: Option<Value>,
    /// Answer with the receiving task ids (default true; never for direct emits).
    pub need_task_ids: bool,
}

/// Multilang log levels (Storm's `ShellLogHandler`): 0 trace … 4 error, 2 when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl LogLevel {
    fn from_number(n: i64) -> LogLevel {
        match n {
            i64::MIN..=0 => LogLevel::Trace,
            1 => LogLevel::Debug,
            2 => LogLevel::Info,
            3 => LogLevel::Warn,
            _ => LogLevel::Error,
        }
    }
}

/// A message that breaks the protocol; the text quotes the offending message (truncated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    pub problem: String,
    pub text: String,
}

impl ProtocolError {
    pub fn new(problem: impl Into<String>, text: &str) -> ProtocolError {
        ProtocolError {
            problem: problem.into(),
            text: excerpt(text),
        }
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} in message: {}", self.problem, self.text)
    }
}

impl std::error::Error for ProtocolError {}

/// Parse one message text (as returned by [`Deframer::push_line`]).
pub fn parse(text: &str) -> Result<ChildMessage, ProtocolError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| ProtocolError::new(format!("invalid JSON ({e})"), text))?;
    let Value::Object(obj) = &value else {
        return Err(ProtocolError::new("expected a JSON object", text));
    };
    if let Some(pid) = obj.get("pid") {
        return pid
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .map(ChildMessage::Pid)
            .ok_or_else(|| ProtocolError::new("`pid` must be a positive integer", text));
    }
    let command = match obj.get("command") {
        Some(Value::String(c)) => c.as_str(),
        Some(_) => return Err(ProtocolError::new("`command` must be a string", text)),
        None => return Err(ProtocolError::new("no `command` field", text)),
    };
    let field = |name: &str| obj.get(name).filter(|v| !v.is_null());
    let string = |name: &str| -> Result<String, ProtocolError> {
        match field(name) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Ok(other.to_string()),
            None => Err(ProtocolError::new(
                format!("`{command}` needs an `{name}` field"),
                text,
            )),
        }
    };
    let cmd =
        match command {
            "sync" => Command::Sync,
            "ack" => Command::Ack {
                id: id_of(field("id"), command, text)?,
            },
            "fail" => Command::Fail {
                id: id_of(field("id"), command, text)?,
            },
            "log" => Command::Log {
                msg: string("msg")?,
                level: match field("level") {
                    None => LogLevel::Info,
                    Some(v) => LogLevel::from_number(v.as_i64().ok_or_else(|| {
                        ProtocolError::new("`level` must be an integer 0-4", text)
                    })?),
                },
            },
            "error" => Command::Error {
                msg: string("msg")?,
            },
            "metrics" => Command::Metrics {
                name: string("name")?,
                params: field("params").cloned().unwrap_or(Value::Null),
            },
            "emit" => Command::Emit(parse_emit(obj, text)?),
            other => {
                return Err(ProtocolError::new(
                    format!("unknown command `{}`", excerpt(other)),
                    text,
                ))
            }
        };
    Ok(ChildMessage::Command(cmd))
}

fn id_of(v: Option<&Value>, command: &str, text: &str) -> Result<String, ProtocolError> {
    match v {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(_) => Err(ProtocolError::new(
            format!("`{command}` id must be a string or a number"),
            text,
        )),
        None => Err(ProtocolError::new(
            format!("`{command}` needs an `id` field"),
            text,
        )),
    }
}

fn parse_emit(obj: &serde_json::Map<String, Value>, text: &str) -> Result<Emit, ProtocolError> {
    let field = |name: &str| obj.get(name).filter(|v| !v.is_null());
    let tuple = match field("tuple") {
        Some(Value::Array(values)) => values.clone(),
        Some(_) => return Err(ProtocolError::new("`tuple` must be a list", text)),
        None => return Err(ProtocolError::new("`emit` needs a `tuple` field", text)),
    };
    let stream = match field("stream") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(ProtocolError::new("`stream` must be a string", text)),
        None => None,
    };
    let task = match field("task") {
        Some(v) => Some(
            v.as_u64()
                .and_then(|t| u32::try_from(t).ok())
                .ok_or_else(|| ProtocolError::new("`task` must be a task id", text))?,
        ),
        None => None,
    };
    let anchors = match field("anchors") {
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|a| id_of(Some(a), "emit", text))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(ProtocolError::new("`anchors` must be a list of ids", text)),
        None => Vec::new(),
    };
    let need_task_ids = match field("need_task_ids") {
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(ProtocolError::new(
                "`need_task_ids` must be a boolean",
                text,
            ))
        }
        None => true,
    };
    Ok(Emit {
        stream,
        tuple,
        task,
        anchors,
        id: field("id").cloned(),
        need_task_ids,
    })
}

/// The handshake: where to write the pid file, the configuration and the topology context.
pub fn handshake(pid_dir: &str, conf: Value, context: Value) -> Value {
    json!({ "pidDir": pid_dir, "conf": conf, "context": context })
}

/// One input tuple for a bolt (`task` is -1 for system tuples such as ticks).
pub fn bolt_tuple(id: &str, comp: &str, stream: &str, task: i64, values: Vec<Value>) -> Value {
    json!({ "id": id, "comp": comp, "stream": stream, "task": task, "tuple": values })
}

/// The heartbeat tuple a bolt child must answer with `sync`.
pub fn heartbeat(id: &str) -> Value {
    json!({ "id": id, "comp": null, "stream": "__heartbeat", "task": -1, "tuple": [] })
}

/// A command to a spout child; each is answered by a turn ending in `sync`.
#[derive(Debug, Clone, PartialEq)]
pub enum SpoutCommand {
    Next,
    Ack(Value),
    Fail(Value),
    Activate,
    Deactivate,
}

impl SpoutCommand {
    pub fn name(&self) -> &'static str {
        match self {
            SpoutCommand::Next => "next",
            SpoutCommand::Ack(_) => "ack",
            SpoutCommand::Fail(_) => "fail",
            SpoutCommand::Activate => "activate",
            SpoutCommand::Deactivate => "deactivate",
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            SpoutCommand::Ack(id) | SpoutCommand::Fail(id) => {
                json!({ "command": self.name(), "id": id })
            }
            _ => json!({ "command": self.name() }),
        }
    }
}

/// The answer to an emit that needs task ids: a bare JSON list.
pub fn task_ids(tasks: &[u32]) -> Value {
    Value::Array(tasks.iter().map(|t| Value::from(*t)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn emit_defaults_and_fields() {
        let m = parse(r#"{"command":"emit","tuple":["a",1],"anchors":["5",6]}"#);
        let Ok(ChildMessage::Command(Command::Emit(e))) = m else {
            panic!("not an emit: {m:?}");
        };
        assert_eq!(e.stream, None);
        assert_eq!(e.anchors, vec!["5", "6"]);
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
        assert_eq!(e.id, Some(json!({"k": 1})));
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
        assert!(err("{not json").starts_with("invalid JSON"));
        assert_eq!(err("[1]"), "expected a JSON object in message: [1]");
        assert_eq!(
            err(r#"{"command":"jump"}"#),
            r#"unknown command `jump` in message: {"command":"jump"}"#
        );
        assert_eq!(
            err(r#"{"command":"emit","tuple":"x"}"#),
            r#"`tuple` must be a list in message: {"command":"emit","tuple":"x"}"#
        );
        assert_eq!(
            err(r#"{"command":"ack"}"#),
            r#"`ack` needs an `id` field in message: {"command":"ack"}"#
        );
        let long = format!("{{\"command\":\"{}\"}}", "x".repeat(500));
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

    proptest::proptest! {
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
}
