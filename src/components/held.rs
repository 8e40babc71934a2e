//! A stateful sink's output until the checkpoint covering it commits, in two phases (as the
//! `kafka` sink holds its records): what came since the last checkpoint is set aside, under
//! the sink's next number, when a checkpoint saves its state (and saved in it); once that
//! checkpoint committed the sink writes it in one transaction together with the number, in
//! a marker the sink keeps where it writes. The state is the last number and every
//! checkpoint's output not yet written. `jdbc` holds rows, `redis` commands.

use crate::tuple::Value;
use std::collections::VecDeque;

/// What a sink holds, and how it is saved in a checkpoint.
pub(crate) trait Item: Sized {
    /// The error when saved items cannot be read back.
    const UNREADABLE: &'static str;
    fn to_value(&self) -> Value;
    fn from_value(v: &Value) -> Option<Self>;
}

/// A checkpoint's items under the sink's number.
pub(crate) type Numbered<T> = (u64, Vec<T>);

#[derive(Debug)]
pub(crate) struct Held<T> {
    /// The items of the inputs since the last checkpoint was saved.
    pub(crate) open: Vec<T>,
    /// The sink's number of its last saved checkpoint.
    pub(crate) saved: u64,
    /// The items saved with checkpoint `saved` whose marker has not come yet.
    pending: Option<Numbered<T>>,
    /// The items of each checkpoint (its txid, its items) not yet written, oldest first.
    ready: VecDeque<(u64, Numbered<T>)>,
}

impl<T> Default for Held<T> {
    fn default() -> Held<T> {
        Held {
            open: Vec::new(),
            saved: 0,
            pending: None,
            ready: VecDeque::new(),
        }
    }
}

impl<T: Item> Held<T> {
    /// [`Held::save`], its entries handed to a checkpoint's `sink`.
    pub(crate) fn save_into(
        &mut self,
        sink: &mut crate::components::ChangeSink<'_>,
    ) -> anyhow::Result<()> {
        self.save()
            .iter()
            .try_for_each(|(k, v)| sink(k, v.as_ref()))
    }

    /// A checkpoint's save: the open items go under the next number; the state to save.
    pub(crate) fn save(&mut self) -> Vec<(Value, Option<Value>)> {
        self.saved += 1;
        if let Some(p) = self.pending.take() {
            // Saved without a marker after it: kept with the next checkpoint.
            self.open.splice(0..0, p.1);
        }
        self.pending = Some((self.saved, std::mem::take(&mut self.open)));
        let mut held: Vec<&Numbered<T>> = self.ready.iter().map(|r| &r.1).collect();
        held.extend(self.pending.as_ref());
        vec![
            (Value::str("saved"), Some(Value::Int(self.saved as i64))),
            (Value::str("held"), Some(encode(&held))),
        ]
    }

    /// Checkpoint `txid` is complete for this task: its items wait for its commit.
    pub(crate) fn marker(&mut self, txid: u64) {
        let numbered = match self.pending.take() {
            Some(p) => p,
            None => {
                // No save came before this marker: its items get the next number.
                self.saved += 1;
                (self.saved, std::mem::take(&mut self.open))
            }
        };
        self.ready.push_back((txid, numbered));
    }

    /// The oldest checkpoint's items when that checkpoint is committed (`committed`).
    pub(crate) fn due(&mut self, committed: u64) -> Option<(u64, Numbered<T>)> {
        let first = self.ready.front().map(|r| r.0)?;
        (first <= committed)
            .then(|| self.ready.pop_front())
            .flatten()
    }

    /// The txid of the last checkpoint with items waiting for its commit.
    pub(crate) fn last_ready(&self) -> Option<u64> {
        self.ready.back().map(|r| r.0)
    }

    #[cfg(test)]
    /// The checkpoints waiting for their commit, oldest first: (txid, the sink's number).
    pub(crate) fn ready(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ready.iter().map(|(txid, (n, _))| (*txid, *n))
    }

    /// At a clean end: what came after the last marker, under the next number.
    pub(crate) fn rest(&mut self) -> Numbered<T> {
        let mut items = self.pending.take().map(|p| p.1).unwrap_or_default();
        items.append(&mut self.open);
        (self.saved + 1, items)
    }

    /// Resume from a saved state: its number, and its checkpoints' items not yet written.
    pub(crate) fn restore(
        &mut self,
        entries: &[(Value, Value)],
    ) -> Result<Vec<Numbered<T>>, String> {
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

/// Checkpoints' items as one value: a list of `[number, [item…]]`.
pub(crate) fn encode<T: Item>(held: &[&Numbered<T>]) -> Value {
    let one = |(n, items): &&Numbered<T>| {
        let items = items.iter().map(Item::to_value).collect();
        Value::list(vec![Value::Int(*n as i64), Value::list(items)])
    };
    Value::list(held.iter().map(one).collect())
}

/// The checkpoints' items [`encode`] wrote; an error is the item's [`Item::UNREADABLE`].
pub(crate) fn decode<T: Item>(v: &Value) -> Result<Vec<Numbered<T>>, String> {
    let bad = || T::UNREADABLE.to_string();
    let Value::List(checkpoints) = v else {
        return Err(bad());
    };
    let one = |c: &Value| {
        let Value::List(pair) = c else {
            return Err(bad());
        };
        let [Value::Int(n), Value::List(items)] = pair.as_slice() else {
            return Err(bad());
        };
        let items = items
            .iter()
            .map(|i| T::from_value(i).ok_or_else(bad))
            .collect::<Result<_, _>>()?;
        Ok((u64::try_from(*n).map_err(|_| bad())?, items))
    };
    checkpoints.iter().map(one).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Item for i64 {
        const UNREADABLE: &'static str = "unreadable";
        fn to_value(&self) -> Value {
            Value::Int(*self)
        }
        fn from_value(v: &Value) -> Option<i64> {
            match v {
                Value::Int(i) => Some(*i),
                _ => None,
            }
        }
    }

    #[test]
    fn each_checkpoint_holds_its_items_until_written() {
        let mut h: Held<i64> = Held::default();
        h.open.push(1);
        let saved = h.save();
        let held = decode::<i64>(saved[1].1.as_ref().expect("held"));
        assert_eq!(held, Ok(vec![(1, vec![1])]));
        h.marker(7);
        h.open.push(2);
        let saved = h.save();
        assert_eq!(saved[0].1, Some(Value::Int(2)));
        let held = decode::<i64>(saved[1].1.as_ref().expect("held"));
        assert_eq!(held, Ok(vec![(1, vec![1]), (2, vec![2])]));
        h.marker(8);
        assert_eq!(h.last_ready(), Some(8));
        assert_eq!(h.due(6), None);
        assert_eq!(h.due(7), Some((7, (1, vec![1]))));
        assert_eq!(h.due(9), Some((8, (2, vec![2]))));
        h.open.push(3);
        assert_eq!(h.rest(), (3, vec![3]));
        let mut again: Held<i64> = Held::default();
        let entries: Vec<(Value, Value)> = saved
            .into_iter()
            .filter_map(|(k, v)| Some((k, v?)))
            .collect();
        assert_eq!(again.restore(&entries).map(|h| h.len()), Ok(2));
        assert_eq!(again.saved, 2);
        assert_eq!(
            decode::<i64>(&Value::list(vec![Value::str("x")])),
            Err("unreadable".to_string())
        );
    }
}
