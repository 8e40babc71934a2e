//! Pages of a task's state as it crosses from nimbus to a worker restoring it or to another
//! nimbus: at most [`PAGE_BYTES`] of rows each (a request is at most 16 MB), each carrying the
//! task's position.

use crate::cluster::protocol::rpc::StatePage;
use crate::state::{packed, RawState};

/// The most bytes of rows one page carries.
pub(super) const PAGE_BYTES: usize = 4 << 20;

/// The rows of `all` from `from`, up to [`PAGE_BYTES`] (at least one), with its position.
pub(super) fn page(all: RawState, from: usize) -> StatePage {
    let total = all.rows.len();
    let mut size = 0;
    let rows: Vec<_> = all
        .rows
        .into_iter()
        .skip(from)
        .take_while(|(k, v)| {
            let fits = size < PAGE_BYTES;
            size += k.len() + v.as_ref().map_or(0, Vec::len) + 8;
            fits
        })
        .collect();
    let end = from.saturating_add(rows.len());
    let raw = RawState {
        rows,
        position: all.position,
    };
    StatePage {
        next: (end < total).then_some(end),
        state: packed::pack(&raw),
    }
}

/// Call `f` with each page of `raw` (at most [`PAGE_BYTES`] of rows, at least one row),
/// packed, in order; every page carries the position.
pub(super) fn for_each_page(
    raw: RawState,
    mut f: impl FnMut(String) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let RawState { rows, position } = raw;
    let mut rows = rows.into_iter().peekable();
    loop {
        let (mut chunk, mut size) = (Vec::new(), 0);
        while let Some(row) = rows.next_if(|_| chunk.is_empty() || size < PAGE_BYTES) {
            size += row.0.len() + row.1.as_ref().map_or(0, Vec::len) + 8;
            chunk.push(row);
        }
        let page = RawState {
            rows: chunk,
            position: position.clone(),
        };
        f(packed::pack(&page))?;
        if rows.peek().is_none() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_cover_every_row_once_in_order() {
        let rows: Vec<_> = (0..40u32)
            .map(|i| (i.to_be_bytes().to_vec(), Some(vec![7; PAGE_BYTES / 9])))
            .collect();
        let all = RawState {
            rows: rows.clone(),
            position: Some(vec![1]),
        };
        let (mut got, mut from, mut pages) = (Vec::new(), Some(0), 0);
        while let Some(f) = from {
            let p = page(all.clone(), f);
            let raw = packed::unpack(&p.state).expect("packed");
            assert_eq!(raw.position, Some(vec![1]));
            got.extend(raw.rows);
            from = p.next;
            pages += 1;
        }
        assert_eq!(got, rows);
        assert!(pages > 1, "{pages}");
        let empty = page(RawState::default(), 0);
        assert_eq!(empty.next, None);

        // The same rows, page after page, each with the position; nothing is one page.
        let mut sent = Vec::new();
        for_each_page(all, |state| {
            sent.push(packed::unpack(&state)?);
            Ok(())
        })
        .expect("paged");
        assert_eq!(sent.len(), pages);
        assert!(sent.iter().all(|p| p.position == Some(vec![1])));
        let rows_sent: Vec<_> = sent.into_iter().flat_map(|p| p.rows).collect();
        assert_eq!(rows_sent, rows);
        let mut none = Vec::new();
        for_each_page(RawState::default(), |state| {
            none.push(packed::unpack(&state)?);
            Ok(())
        })
        .expect("paged");
        assert_eq!(none, vec![RawState::default()]);
    }
}
