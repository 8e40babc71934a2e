//! Exactly-once writes (`stateful: true`): the writes of the inputs before a checkpoint are
//! set aside when the checkpoint saves the bolt's state, kept in that state, and once the
//! checkpoint committed they go to Redis in one `MULTI`/`EXEC` with a marker key set to the
//! checkpoint's number. A bolt resumed from a checkpoint writes its held writes whose number
//! is above the marker and drops the others, so a crash at any moment neither loses nor
//! doubles an `INCRBY`. (The same two phases as the `kafka` sink's transactions.)

use super::command::{cmd, Words};
use super::conn::{Conn, ConnError};
use crate::components::held::{Held, Item, Numbered};
use crate::tuple::Value;

/// One checkpoint's writes: its number and commands.
pub(crate) type Batch = Numbered<Words>;

impl Item for Words {
    const UNREADABLE: &'static str = "the saved Redis writes cannot be read";
    fn to_value(&self) -> Value {
        Value::list(self.iter().map(|s| Value::str(s)).collect())
    }
    fn from_value(v: &Value) -> Option<Words> {
        match v {
            Value::List(words) => words.iter().map(|s| s.as_str().map(String::from)).collect(),
            _ => None,
        }
    }
}

/// A stateful bolt's writes until their checkpoint commits, and its marker key.
#[derive(Debug)]
pub(crate) struct Txn {
    pub(crate) held: Held<Words>,
    /// The marker key.
    pub(crate) marker: String,
}

impl Txn {
    pub(crate) fn new(marker: String) -> Txn {
        Txn {
            held: Held::default(),
            marker,
        }
    }
}

/// The number the marker key holds (0 when it is not set).
pub(crate) fn written(conn: &mut Conn, marker: &str) -> Result<u64, ConnError> {
    conn.with_retry("reading the checkpoint marker", |con| {
        redis::cmd("GET").arg(marker).query::<Option<u64>>(con)
    })
    .map(|v| v.unwrap_or(0))
}

/// Write `writes` and set the marker to `number` in one `MULTI`/`EXEC`, unless the marker
/// already says so (a transaction whose answer was lost with the connection).
pub(crate) fn write(
    conn: &mut Conn,
    marker: &str,
    (number, writes): &Batch,
) -> Result<(), ConnError> {
    if writes.is_empty() {
        return Ok(());
    }
    conn.with_retry("writing a checkpoint's commands", |con| {
        let at: Option<u64> = redis::cmd("GET").arg(marker).query(con)?;
        if at.is_some_and(|m| m >= *number) {
            return Ok(());
        }
        let mut p = redis::pipe();
        p.atomic();
        for w in writes {
            p.add_command(cmd(w)).ignore();
        }
        p.cmd("SET").arg(marker).arg(*number).ignore();
        p.query::<()>(con)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Words {
        vec!["INCRBY".into(), s.into(), "1".into()]
    }

    #[test]
    fn saved_state_holds_what_is_not_written_and_reads_back() {
        let mut t = Txn::new("m".into());
        t.held.open.push(w("a"));
        t.held.save();
        t.held.marker(7);
        t.held.open.push(w("b"));
        let entries: Vec<(Value, Value)> = t
            .held
            .save()
            .into_iter()
            .map(|(k, v)| (k, v.expect("a value")))
            .collect();
        let mut back = Txn::new("m".into());
        let held = back.held.restore(&entries).expect("reads");
        assert_eq!(back.held.saved, 2);
        assert_eq!(held, vec![(1, vec![w("a")]), (2, vec![w("b")])]);
        assert_eq!(t.held.due(6), None);
        assert_eq!(t.held.due(7), Some((7, (1, vec![w("a")]))));
    }
}
