//! Sending a closed window of an `aggregate` or `top`: each key's row in key order (read back
//! in that order when the window spilled to disk), or the `n` best keys ranked.

use super::keyed::Rows;
use super::{groups, rank, ranking, sort_by_key_text, State};
use crate::components::BoltCollector;
use crate::model::plan::streams;
use crate::tuple::{Value, Values};

/// A window being sent: its bounds, and how a partial ranking names it.
pub(crate) struct Closed {
    /// Start and end, in the window's measure.
    pub(crate) span: (i64, i64),
    /// Start and end as the rows show them (times or tuple counts).
    pub(crate) bounds: [Value; 2],
    /// The watermark that closed it.
    pub(crate) watermark: i64,
    /// A partial ranking (one task of a `top` of several): candidates, not ranked rows.
    pub(crate) partial: bool,
}

impl Closed {
    /// One row per key: the key values, the window's bounds, each op's value.
    pub(crate) fn send_rows(
        &self,
        rows: Rows<'_>,
        out: &mut dyn BoltCollector,
    ) -> anyhow::Result<()> {
        match rows {
            Rows::Loose(mut rows) => {
                sort_by_key_text(&mut rows, |r| &r.0);
                for (key, states) in rows {
                    out.send(streams::DEFAULT, &[], self.row(&key, &states));
                }
            }
            Rows::Ordered(rows) => {
                for row in rows {
                    let (key, states) = row?;
                    out.send(streams::DEFAULT, &[], self.row(&key, &states));
                }
            }
        }
        Ok(())
    }

    fn row(&self, key: &Values, states: &[State]) -> Values {
        key.iter()
            .cloned()
            .chain(self.bounds.iter().cloned())
            .chain(states.iter().map(State::value))
            .collect()
    }

    /// The `n` keys with the highest scores (the first op), ranked from 1.
    pub(crate) fn send_ranked(
        &self,
        rows: Rows<'_>,
        n: usize,
        out: &mut dyn BoltCollector,
    ) -> anyhow::Result<()> {
        let ranked = match rows {
            Rows::Loose(mut rows) => {
                sort_by_key_text(&mut rows, |r| &r.0);
                rank(rows.iter().map(|(k, s)| (k, s[0].value())), n)
            }
            Rows::Ordered(rows) => {
                let mut best = groups::Best::default();
                for row in rows {
                    let (key, states) = row?;
                    best.offer(key, states[0].value(), n);
                }
                best.ranked()
            }
        };
        for ranked in ranked {
            let row = match self.partial {
                true => ranking::candidate(self.watermark, Some(self.span), ranked),
                false => self.bounds.iter().cloned().chain(ranked).collect(),
            };
            out.send(streams::DEFAULT, &[], row);
        }
        Ok(())
    }
}
