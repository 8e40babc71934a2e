//! Spill maps read in key order at once: each map's entries sorted by order bytes (read back
//! from its file when it spilled, else its memory sorted), merged so that each key comes once
//! with its values combined over the maps — how a window of several panes is closed.

use super::{Entry, SpillMap};
use std::hash::Hash;

/// One map's entries in key order.
type Sorted<'a, K, V> =
    std::iter::Peekable<Box<dyn Iterator<Item = anyhow::Result<Entry<K, V>>> + 'a>>;

/// `map`'s entries in key order: read back from its file when it spilled, else its memory
/// sorted here (another map of the merge spilled).
pub(crate) fn sorted<K, V>(map: &mut SpillMap<K, V>) -> anyhow::Result<Sorted<'_, K, V>>
where
    K: Hash + Eq + Clone + 'static,
    V: Clone + 'static,
{
    if map.spilled() {
        // (`sorted` is `None` only while nothing spilled.)
        let rows: Box<dyn Iterator<Item = _>> = match map.sorted()? {
            Some(rows) => Box::new(rows),
            None => Box::new(std::iter::empty()),
        };
        return Ok(rows.peekable());
    }
    let mut rows: Vec<Entry<K, V>> = map
        .hot()
        .map(|(k, v)| {
            let mut order = Vec::new();
            map.order_of(k, &mut order);
            (order, k.clone(), v.clone())
        })
        .collect();
    rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let rows: Box<dyn Iterator<Item = _>> = Box::new(rows.into_iter().map(Ok));
    Ok(rows.peekable())
}

/// Maps read in key order at once: each key once, the values of the later sources merged
/// into the first one's by `merge`, in the order of the sources.
pub(crate) struct Merged<'a, K, V> {
    sources: Vec<Sorted<'a, K, V>>,
    merge: fn(&mut V, V),
}

impl<'a, K, V> Merged<'a, K, V> {
    pub(crate) fn new(sources: Vec<Sorted<'a, K, V>>, merge: fn(&mut V, V)) -> Merged<'a, K, V> {
        Merged { sources, merge }
    }

    /// The least order bytes at the head of any source; an error read there is taken out.
    fn least(&mut self) -> Option<anyhow::Result<Vec<u8>>> {
        let mut least: Option<&Vec<u8>> = None;
        for s in self.sources.iter_mut() {
            match s.peek() {
                Some(Ok((order, _, _))) if least.is_none_or(|l| order < l) => least = Some(order),
                Some(Ok(_)) => {}
                Some(Err(_)) => return s.next().map(|r| r.map(|(o, _, _)| o)),
                None => {}
            }
        }
        least.cloned().map(Ok)
    }
}

impl<K, V> Iterator for Merged<'_, K, V> {
    type Item = anyhow::Result<(K, V)>;

    fn next(&mut self) -> Option<Self::Item> {
        let least = match self.least()? {
            Ok(l) => l,
            Err(e) => return Some(Err(e)),
        };
        let mut row: Option<(K, V)> = None;
        for s in self.sources.iter_mut() {
            if !matches!(s.peek(), Some(Ok((order, _, _))) if *order == least) {
                continue;
            }
            let Some(Ok((_, key, value))) = s.next() else {
                continue;
            };
            match row.as_mut() {
                Some((_, into)) => (self.merge)(into, value),
                None => row = Some((key, value)),
            }
        }
        row.map(Ok)
    }
}
