//! A stateful sink's rows until their checkpoint commits, in two phases as the `kafka` sink
//! holds its records: the rows since the last checkpoint are set aside, under the sink's next
//! number, when a checkpoint saves its state (and saved in it); once that checkpoint
//! committed they are written in one transaction with the number in the marker table. The
//! state is the last number and every checkpoint's rows not yet written.

use crate::tuple::{Value, Values};
use std::collections::VecDeque;

/// One row: the values of the columns, in order.
pub type Row = Values;

/// A checkpoint's rows under the sink's number.
pub type Numbered = (u64, Vec<Row>);

#[derive(Default, Debug)]
pub struct Held {
    /// The rows of the inputs since the last checkpoint was saved.
    pub open: Vec<Row>,
    /// The sink's number of its last saved checkpoint.
    pub saved: u64,
    /// The rows saved with checkpoint `saved` whose marker has not come yet.
    pub pending: Option<Numbered>,
    /// The rows of each checkpoint (its txid, its rows) not yet written, oldest first.
    pub ready: VecDeque<(u64, Numbered)>,
}

impl Held {
    /// A checkpoint's save: the open rows go under the next number; the state to save.
    pub fn save(&mut self) -> Vec<(Value, Option<Value>)> {
        self.saved += 1;
        if let Some(p) = self.pending.take() {
            // Saved without a marker after it: kept with the next checkpoint.
            self.open.splice(0..0, p.1);
        }
        self.pending = Some((self.saved, std::mem::take(&mut self.open)));
        let mut held: Vec<&Numbered> = self.ready.iter().map(|r| &r.1).collect();
        held.extend(self.pending.as_ref());
        vec![
            (Value::str("saved"), Some(Value::Int(self.saved as i64))),
            (Value::str("held"), Some(encode(&held))),
        ]
    }

    /// Checkpoint `txid` is complete for this task: its rows wait for its commit.
    pub fn marker(&mut self, txid: u64) {
        let numbered = match self.pending.take() {
            Some(p) => p,
            None => {
                // No save came before this marker: its rows get the next number.
                self.saved += 1;
                (self.saved, std::mem::take(&mut self.open))
            }
        };
        self.ready.push_back((txid, numbered));
    }

    /// The oldest checkpoint's rows when that checkpoint is committed (`committed`).
    pub fn due(&mut self, committed: u64) -> Option<(u64, Numbered)> {
        let first = self.ready.front().map(|r| r.0)?;
        (first <= committed)
            .then(|| self.ready.pop_front())
            .flatten()
    }

    /// At a clean end: what came after the last marker, under the next number.
    pub fn rest(&mut self) -> Numbered {
        let mut rows = self.pending.take().map(|p| p.1).unwrap_or_default();
        rows.append(&mut self.open);
        (self.saved + 1, rows)
    }

    /// Resume from a saved state: its number, and its checkpoints' rows not yet written.
    pub fn restore(&mut self, entries: &[(Value, Value)]) -> Result<Vec<Numbered>, String> {
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

/// Checkpoints' rows as one value: a list of `[number, [row…]]`.
pub fn encode(held: &[&Numbered]) -> Value {
    Value::list(
        held.iter()
            .map(|(n, rows)| {
                let rows = rows.iter().map(|r| Value::list(r.to_vec())).collect();
                Value::list(vec![Value::Int(*n as i64), Value::list(rows)])
            })
            .collect(),
    )
}

pub fn decode(v: &Value) -> Result<Vec<Numbered>, String> {
    let bad = || "the saved rows of the sink are not readable".to_string();
    let Value::List(items) = v else {
        return Err(bad());
    };
    items
        .iter()
        .map(|item| match item {
            Value::List(pair) => match pair.as_slice() {
                [Value::Int(n), Value::List(rows)] => {
                    let rows = rows
                        .iter()
                        .map(|r| match r {
                            Value::List(values) => Ok(values.iter().cloned().collect()),
                            _ => Err(bad()),
                        })
                        .collect::<Result<_, _>>()?;
                    Ok((u64::try_from(*n).map_err(|_| bad())?, rows))
                }
                _ => Err(bad()),
            },
            _ => Err(bad()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: i64) -> Row {
        [Value::Int(n)].into_iter().collect()
    }

    #[test]
    fn each_checkpoint_holds_its_rows_until_written() {
        let mut h = Held::default();
        h.open.push(row(1));
        let saved = h.save();
        let held = decode(saved[1].1.as_ref().expect("held"));
        assert_eq!(held, Ok(vec![(1, vec![row(1)])]));
        h.marker(7);
        h.open.push(row(2));
        let saved = h.save();
        assert_eq!(saved[0].1, Some(Value::Int(2)));
        let held = decode(saved[1].1.as_ref().expect("held"));
        assert_eq!(held, Ok(vec![(1, vec![row(1)]), (2, vec![row(2)])]));
        h.marker(8);
        assert_eq!(h.due(6), None);
        assert_eq!(h.due(7), Some((7, (1, vec![row(1)]))));
        assert_eq!(h.due(9), Some((8, (2, vec![row(2)]))));
        h.open.push(row(3));
        assert_eq!(h.rest(), (3, vec![row(3)]));
        let mut again = Held::default();
        let entries: Vec<(Value, Value)> = saved
            .into_iter()
            .filter_map(|(k, v)| Some((k, v?)))
            .collect();
        assert_eq!(again.restore(&entries).map(|h| h.len()), Ok(2));
        assert_eq!(again.saved, 2);
    }
}
