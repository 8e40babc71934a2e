//! Bounded recursion for our recursive-descent parsers (filter expressions, DSL values): each
//! keeps a per-thread depth counter, raised for as long as a [`Level`] lives.

use std::cell::Cell;
use std::thread::LocalKey;

/// One level of nesting, released on drop.
pub(crate) struct Level(&'static LocalKey<Cell<usize>>);

impl Level {
    /// Go one level deeper on `depth`; `None` (and nothing held) past `max` levels.
    pub(crate) fn enter(depth: &'static LocalKey<Cell<usize>>, max: usize) -> Option<Level> {
        let now = depth.with(|d| {
            d.set(d.get() + 1);
            d.get()
        });
        let level = Level(depth);
        (now <= max).then_some(level)
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        self.0.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static DEPTH: Cell<usize> = const { Cell::new(0) };
    }

    #[test]
    fn levels_are_released_and_bounded() {
        let a = Level::enter(&DEPTH, 2).expect("first level");
        let b = Level::enter(&DEPTH, 2).expect("second level");
        assert!(Level::enter(&DEPTH, 2).is_none());
        assert_eq!(DEPTH.with(Cell::get), 2, "a refused level holds nothing");
        drop((a, b));
        assert_eq!(DEPTH.with(Cell::get), 0);
    }
}
