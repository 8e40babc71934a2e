//! The tuples a `join` holds: per pane of its window (or for the whole input), each key's
//! tuples of every input in a spill map, so past `topology.state.memory.limit` the coldest keys
//! go to a file under the state dir and come back when the key does. A window is joined key by
//! key in key order: from memory while none of its panes spilled, else as its panes are read
//! back from their files and merged, one key's tuples at a time.

use super::Input;
use crate::components::memory::{value_bytes, KeyBudget};
use crate::components::BoltCollector;
use crate::model::plan::streams;
use crate::state::codec;
use crate::state::spill::merge::{sorted, Merged};
use crate::state::spill::{Layout, SpillMap, SpillTo};
use crate::tuple::{Value, Values};

/// One key's tuples in a pane, per input in the order they came, and about how many bytes
/// they take in memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Held {
    pub(crate) inputs: Vec<Vec<Values>>,
    bytes: u64,
}

/// What a kept tuple costs beyond its values: its vector and the slot it is in.
const TUPLE_OVERHEAD: u64 = 48;

fn tuple_bytes(t: &Values) -> u64 {
    TUPLE_OVERHEAD + t.iter().map(value_bytes).sum::<u64>()
}

impl Held {
    pub(crate) fn new(inputs: usize) -> Held {
        Held {
            inputs: vec![Vec::new(); inputs],
            bytes: 0,
        }
    }

    /// Keep `t` as input `i`'s next tuple: its position.
    pub(crate) fn push(&mut self, i: usize, t: Values) -> usize {
        self.bytes += tuple_bytes(&t);
        let list = &mut self.inputs[i];
        list.push(t);
        list.len() - 1
    }

    /// Put a restored tuple at `pos` of input `i` (positions not restored yet are empty);
    /// an error when `pos` holds one already.
    pub(crate) fn place(&mut self, i: usize, pos: usize, t: Values) -> Result<(), String> {
        let list = &mut self.inputs[i];
        if list.len() <= pos {
            self.bytes += TUPLE_OVERHEAD * (pos + 1 - list.len()) as u64;
            list.resize_with(pos + 1, Values::new);
        }
        if !list[pos].is_empty() {
            return Err(format!("two saved tuples at position {pos}"));
        }
        self.bytes += tuple_bytes(&t) - TUPLE_OVERHEAD;
        list[pos] = t;
        Ok(())
    }

    /// The first input left without a tuple at some position (after a restore), if any.
    pub(crate) fn gap(&self) -> Option<usize> {
        (0..self.inputs.len()).find(|&i| self.inputs[i].iter().any(|t| t.is_empty()))
    }

    /// The tuples of a later pane after these (a window's merge).
    fn append(&mut self, later: Held) {
        self.bytes += later.bytes;
        for (into, more) in self.inputs.iter_mut().zip(later.inputs) {
            into.extend(more);
        }
    }
}

/// A pane's tuples (or the whole input's), by key text.
pub(crate) type Pane = SpillMap<String, Held>;

/// How a key's tuples are written when they spill: the key text (which is also its order:
/// keys are joined in the byte order of their text), then for each input its tuple count and
/// each tuple as its value count and values.
struct Tuples {
    inputs: usize,
}

impl Layout<String, Held> for Tuples {
    fn order(&self, key: &String, out: &mut Vec<u8>) {
        out.extend_from_slice(key.as_bytes());
    }

    fn encode(&self, key: &String, held: &Held, out: &mut Vec<u8>) {
        codec::encode(&Value::str(key), out);
        for list in &held.inputs {
            codec::encode(&Value::Int(list.len() as i64), out);
            for t in list {
                codec::encode(&Value::Int(t.len() as i64), out);
                t.iter().for_each(|v| codec::encode(v, out));
            }
        }
    }

    fn decode(&self, record: &[u8]) -> anyhow::Result<(String, Held)> {
        let mut r = Record {
            bytes: record,
            at: 0,
        };
        let Value::Str(key) = r.value()? else {
            anyhow::bail!("join: a spilled record does not start with its key");
        };
        let mut held = Held::new(self.inputs);
        for i in 0..self.inputs {
            for _ in 0..r.count()? {
                let n = r.count()?;
                let t: Values = (0..n).map(|_| r.value()).collect::<anyhow::Result<_>>()?;
                held.push(i, t);
            }
        }
        anyhow::ensure!(
            r.at == record.len(),
            "join: {} byte(s) left after a spilled record",
            record.len() - r.at
        );
        Ok((key.to_string(), held))
    }

    fn bytes(&self, key: &String) -> u64 {
        key.len() as u64 + 48 + 24 * self.inputs as u64
    }

    fn grows(&self) -> bool {
        true
    }

    fn value_bytes(&self, held: &Held) -> u64 {
        held.bytes
    }
}

/// Values read one after another from a spilled record.
struct Record<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Record<'_> {
    fn value(&mut self) -> anyhow::Result<Value> {
        let rest = self.bytes.get(self.at..).unwrap_or_default();
        let (v, used) = codec::decode(rest)
            .map_err(|e| anyhow::anyhow!("join: a spilled record at byte {}: {e}", self.at))?;
        self.at += used;
        Ok(v)
    }

    /// A count, no more than the bytes left could hold.
    fn count(&mut self) -> anyhow::Result<usize> {
        match self.value()? {
            Value::Int(n) if n >= 0 && (n as usize) <= self.bytes.len() - self.at => Ok(n as usize),
            other => anyhow::bail!("join: a spilled record has {other:?} for a count"),
        }
    }
}

/// An empty pane of `inputs` inputs, counted against a fresh share of `budget` and spilling
/// beside `spill` (its file named after `suffix`).
pub(crate) fn new_pane(
    inputs: usize,
    budget: &KeyBudget,
    spill: &Option<SpillTo>,
    suffix: &str,
) -> Pane {
    let mut pane = SpillMap::new(Box::new(Tuples { inputs }));
    let to = spill.clone().map(|s| s.with_suffix(suffix));
    pane.bound(Box::new(budget.fresh()), to);
    pane
}

/// How joined rows are made: each input's selected fields (output index, field index) and
/// kind, and the output's width.
pub(crate) struct Shape<'a> {
    pub(crate) picks: &'a [Vec<(usize, usize)>],
    pub(crate) inputs: &'a [Input],
    pub(crate) width: usize,
}

impl Shape<'_> {
    /// Join the tuples of `panes` (oldest first) key by key in key order, and emit the rows.
    /// Fails when a spilled pane cannot be read.
    pub(crate) fn join<'p>(
        &self,
        panes: impl Iterator<Item = &'p mut Pane>,
        out: &mut dyn BoltCollector,
    ) -> anyhow::Result<()> {
        let mut panes: Vec<&mut Pane> = panes.collect();
        if !panes.iter().any(|p| p.spilled()) {
            self.join_hot(&panes, out);
            return Ok(());
        }
        let mut sources = Vec::new();
        for pane in panes.iter_mut() {
            sources.push(sorted(pane)?);
        }
        for row in Merged::new(sources, Held::append) {
            let (_, held) = row?;
            let tuples: Vec<Vec<&Values>> =
                held.inputs.iter().map(|l| l.iter().collect()).collect();
            self.emit_key(&tuples, out);
        }
        Ok(())
    }

    /// [`Shape::join`] of panes held in memory.
    fn join_hot(&self, panes: &[&mut Pane], out: &mut dyn BoltCollector) {
        let mut keys: Vec<&String> = panes
            .iter()
            .flat_map(|p| p.hot())
            .filter(|(_, h)| !h.inputs[0].is_empty())
            .map(|(k, _)| k)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        for key in keys {
            let mut tuples: Vec<Vec<&Values>> = vec![Vec::new(); self.inputs.len()];
            for held in panes.iter().filter_map(|p| p.get_hot(key)) {
                for (into, list) in tuples.iter_mut().zip(&held.inputs) {
                    into.extend(list.iter());
                }
            }
            self.emit_key(&tuples, out);
        }
    }

    /// The rows of one key: input 0's tuples widened input by input (`tuples[i]`: input `i`'s
    /// tuples with the key, in the order they came).
    fn emit_key(&self, tuples: &[Vec<&Values>], out: &mut dyn BoltCollector) {
        let blank: Values = smallvec::smallvec![Value::Null; self.width];
        let mut partial: Vec<Values> = tuples[0]
            .iter()
            .map(|t| self.fill(&blank, 0, Some(t)))
            .collect();
        for (i, matches) in tuples.iter().enumerate().skip(1) {
            partial = match (matches.is_empty(), self.inputs[i].left) {
                (false, _) => partial
                    .iter()
                    .flat_map(|p| matches.iter().map(|t| self.fill(p, i, Some(t))))
                    .collect(),
                (true, true) => partial.iter().map(|p| self.fill(p, i, None)).collect(),
                (true, false) => Vec::new(),
            };
        }
        for row in partial {
            out.send(streams::DEFAULT, &[], row);
        }
    }

    /// `row` with input `i`'s selected fields taken from `tuple` (null without one).
    fn fill(&self, row: &Values, i: usize, tuple: Option<&Values>) -> Values {
        let mut row = row.clone();
        for &(out_at, field_at) in &self.picks[i] {
            row[out_at] = tuple
                .and_then(|t| t.get(field_at).cloned())
                .unwrap_or(Value::Null);
        }
        row
    }
}
