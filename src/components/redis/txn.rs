//! Exactly-once writes (`stateful: true`): the writes of the inputs before a checkpoint are
//! set aside when the checkpoint saves the bolt's state, kept in that state, and once the
//! checkpoint committed they go to Redis in one `MULTI`/`EXEC` with a marker key set to the
//! checkpoint's number. A bolt resumed from a checkpoint writes its held writes whose number
//! is above the marker and drops the others, so a crash at any moment neither loses nor
//! doubles an `INCRBY`. (The same two phases as the `kafka` sink's transactions.)

use super::command::{cmd, Words};
use super::conn::{Conn, ConnError};
use crate::tuple::Value;
use std::collections::VecDeque;

/// One checkpoint's writes: its number and commands.
pub type Held = (u64, Vec<Words>);

/// A stateful bolt's writes until their checkpoint commits.
#[derive(Debug, Default)]
pub struct Txn {
    /// The writes of the inputs since the last checkpoint was saved.
    pub open: Vec<Words>,
    /// The number of the last saved checkpoint (what the marker is set to).
    pub saved: u64,
    /// The writes saved with checkpoint `saved` whose marker has not come yet.
    pending: Option<Held>,
    /// The writes of each checkpoint (its txid, its held writes) not yet written, oldest first.
    ready: VecDeque<(u64, Held)>,
    /// The marker key.
    pub marker: String,
}

impl Txn {
    pub fn new(marker: String) -> Txn {
        Txn {
            marker,
            ..Txn::default()
        }
    }

    /// A checkpoint saves the state: the open writes are set aside under the next number;
    /// the state is that number and every checkpoint's writes not yet written.
    pub fn changes(&mut self, out: &mut Vec<(Value, Option<Value>)>) {
        self.saved += 1;
        if let Some(p) = self.pending.take() {
            // Saved without a marker after it: kept with the next checkpoint.
            self.open.splice(0..0, p.1);
        }
        self.pending = Some((self.saved, std::mem::take(&mut self.open)));
        let mut held: Vec<&Held> = self.ready.iter().map(|r| &r.1).collect();
        held.extend(self.pending.as_ref());
        out.push((Value::str("saved"), Some(Value::Int(self.saved as i64))));
        out.push((Value::str("held"), Some(encode(&held))));
    }

    /// The marker of checkpoint `txid` came: its writes are ready once it commits.
    pub fn marker_came(&mut self, txid: u64) {
        let held = match self.pending.take() {
            Some(p) => p,
            None => {
                self.saved += 1;
                (self.saved, std::mem::take(&mut self.open))
            }
        };
        self.ready.push_back((txid, held));
    }

    /// The oldest ready writes whose checkpoint is at or below `committed`.
    pub fn due(&mut self, committed: u64) -> Option<(u64, Held)> {
        let first = self.ready.front()?.0;
        (first <= committed)
            .then(|| self.ready.pop_front())
            .flatten()
    }

    /// The txid of the last checkpoint with ready writes.
    pub fn last_ready(&self) -> Option<u64> {
        self.ready.back().map(|r| r.0)
    }

    /// At a clean end: every write not yet written, under the next number.
    pub fn rest(&mut self) -> Held {
        let mut writes = self.pending.take().map(|p| p.1).unwrap_or_default();
        writes.append(&mut self.open);
        (self.saved + 1, writes)
    }

    /// Read a saved state: the number, and the held writes.
    pub fn restore(&mut self, entries: &[(Value, Value)]) -> Result<Vec<Held>, String> {
        let mut held = Vec::new();
        for (k, v) in entries {
            match (k.as_str(), v) {
                (Some("saved"), Value::Int(n)) => self.saved = u64::try_from(*n).unwrap_or(0),
                (Some("held"), v) => held = decode(v)?,
                _ => {}
            }
        }
        Ok(held)
    }
}

/// The number the marker key holds (0 when it is not set).
pub fn written(conn: &mut Conn, marker: &str) -> Result<u64, ConnError> {
    conn.with_retry("reading the checkpoint marker", |con| {
        redis::cmd("GET").arg(marker).query::<Option<u64>>(con)
    })
    .map(|v| v.unwrap_or(0))
}

/// Write `writes` and set the marker to `number` in one `MULTI`/`EXEC`, unless the marker
/// already says so (a transaction whose answer was lost with the connection).
pub fn write(conn: &mut Conn, marker: &str, (number, writes): &Held) -> Result<(), ConnError> {
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

fn encode(held: &[&Held]) -> Value {
    let words = |w: &Words| Value::list(w.iter().map(|s| Value::str(s)).collect());
    Value::list(
        held.iter()
            .map(|(n, ws)| {
                Value::list(vec![
                    Value::Int(*n as i64),
                    Value::list(ws.iter().map(words).collect()),
                ])
            })
            .collect(),
    )
}

fn decode(v: &Value) -> Result<Vec<Held>, String> {
    let bad = || "the saved Redis writes cannot be read".to_string();
    let Value::List(items) = v else {
        return Err(bad());
    };
    items
        .iter()
        .map(|item| {
            let Value::List(pair) = item else {
                return Err(bad());
            };
            let (Some(Value::Int(n)), Some(Value::List(ws))) = (pair.first(), pair.get(1)) else {
                return Err(bad());
            };
            let writes = ws
                .iter()
                .map(|w| match w {
                    Value::List(words) => words
                        .iter()
                        .map(|s| s.as_str().map(String::from).ok_or_else(bad))
                        .collect(),
                    _ => Err(bad()),
                })
                .collect::<Result<Vec<Words>, String>>()?;
            Ok((*n as u64, writes))
        })
        .collect()
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
        t.open.push(w("a"));
        let mut out = Vec::new();
        t.changes(&mut out);
        t.marker_came(7);
        t.open.push(w("b"));
        let mut out = Vec::new();
        t.changes(&mut out);
        let entries: Vec<(Value, Value)> = out
            .into_iter()
            .map(|(k, v)| (k, v.expect("a value")))
            .collect();
        let mut back = Txn::new("m".into());
        let held = back.restore(&entries).expect("reads");
        assert_eq!(back.saved, 2);
        assert_eq!(held, vec![(1, vec![w("a")]), (2, vec![w("b")])]);
        assert_eq!(t.due(6), None);
        assert_eq!(t.due(7), Some((7, (1, vec![w("a")]))));
    }
}
