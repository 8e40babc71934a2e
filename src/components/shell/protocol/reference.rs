//! Reference implementations the tests compare the fast paths with: a line-by-line deframer,
//! and the parent's messages built as `serde_json::Value` trees.

use super::END;
use serde_json::{json, Value};

/// Frame one message: its JSON, a newline, `end`, a newline.
pub(crate) fn frame(msg: &Value) -> String {
    let mut text = msg.to_string();
    text.push_str("\nend\n");
    text
}

/// Gathers lines into messages: lines are joined with `\n` until a line that is exactly `end`
/// (a trailing `\r` is tolerated), so one message may span several lines.
#[derive(Debug, Default)]
pub(crate) struct Deframer {
    buf: String,
    started: bool,
}

impl Deframer {
    /// Feed one line without its line ending. Returns the whole message text at `end`.
    pub(crate) fn push_line(&mut self, line: &str) -> Option<String> {
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
}

/// One input tuple for a bolt (`task` is -1 for system tuples such as ticks).
pub(crate) fn bolt_tuple(
    id: &str,
    comp: &str,
    stream: &str,
    task: i64,
    values: Vec<Value>,
) -> Value {
    json!({ "id": id, "comp": comp, "stream": stream, "task": task, "tuple": values })
}

/// The answer to an emit that needs task ids: a bare JSON list.
pub(crate) fn task_ids(tasks: &[u32]) -> Value {
    Value::Array(tasks.iter().map(|t| Value::from(*t)).collect())
}
