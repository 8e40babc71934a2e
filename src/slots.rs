//! A table of values addressed by 64-bit ids: the slot index in the low 32 bits, a tag the
//! caller chooses in the high 32. Finding a value is an index, not a hash look-up; an id whose
//! slot was freed and reused under another tag finds nothing, so late answers are ignored.
//! Slots are reused oldest-freed first, so the table stays as small as the most values ever
//! held at once and is walked nearly in order. Used for a spout's open trees, for the tuples a
//! replaying spout keeps, and for the tuples a shell bolt's child holds.

use std::collections::VecDeque;

#[derive(Debug)]
pub(crate) struct Slots<T> {
    /// (id, value); `None` when the slot is free.
    slots: Vec<(u64, Option<T>)>,
    free: VecDeque<u32>,
    len: usize,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots {
            slots: Vec::new(),
            free: VecDeque::new(),
            len: 0,
        }
    }
}

impl<T> Slots<T> {
    /// Keep `value` under a fresh id whose high half is `tag` (make it non-zero, so no id is 0).
    pub(crate) fn insert(&mut self, tag: u32, value: T) -> u64 {
        let index = match self.free.pop_front() {
            Some(i) => i,
            None => {
                self.slots.push((0, None));
                (self.slots.len() - 1) as u32
            }
        };
        let id = (u64::from(tag) << 32) | u64::from(index);
        self.slots[index as usize] = (id, Some(value));
        self.len += 1;
        id
    }

    pub(crate) fn get(&self, id: u64) -> Option<&T> {
        match self.slots.get(id as u32 as usize) {
            Some((held, value)) if *held == id => value.as_ref(),
            _ => None,
        }
    }

    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        match self.slots.get_mut(id as u32 as usize) {
            Some((held, value)) if *held == id => value.as_mut(),
            _ => None,
        }
    }

    /// Take the value kept under `id`, freeing its slot.
    pub(crate) fn remove(&mut self, id: u64) -> Option<T> {
        self.vacate(id)?.take()
    }

    /// Drop the value kept under `id` where it is, freeing its slot; whether there was one.
    /// (Cheaper than [`Slots::remove`] when the value is not wanted: no copy of it is made.)
    pub(crate) fn delete(&mut self, id: u64) -> bool {
        match self.vacate(id) {
            Some(value) => {
                *value = None;
                true
            }
            None => false,
        }
    }

    /// Free the slot of `id` if it holds a value, and give the value's place to empty.
    fn vacate(&mut self, id: u64) -> Option<&mut Option<T>> {
        let index = id as u32;
        let (held, value) = self.slots.get_mut(index as usize)?;
        if *held != id || value.is_none() {
            return None;
        }
        self.free.push_back(index);
        self.len -= 1;
        Some(value)
    }

    /// Take every value with its id (in slot order), leaving the table empty.
    pub(crate) fn drain(&mut self) -> Vec<(u64, T)> {
        self.free.clear();
        self.len = 0;
        std::mem::take(&mut self.slots)
            .into_iter()
            .filter_map(|(id, v)| v.map(|v| (id, v)))
            .collect()
    }

    /// The ids of the values `pick` selects.
    pub(crate) fn ids_where(&self, mut pick: impl FnMut(&T) -> bool) -> Vec<u64> {
        self.slots
            .iter()
            .filter_map(|(id, v)| v.as_ref().filter(|v| pick(v)).map(|_| *id))
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_drops_in_place_once_and_frees_the_slot() {
        let mut s = Slots::default();
        let a = s.insert(1, String::from("a"));
        let b = s.insert(1, String::from("b"));
        assert!(s.delete(a));
        assert!(!s.delete(a), "deleted twice");
        assert_eq!(s.len(), 1);
        let c = s.insert(2, String::from("c"));
        assert_eq!(c as u32, a as u32, "a's slot is reused");
        assert!(!s.delete(a), "a stale id finds nothing");
        assert_eq!(s.get(c).map(String::as_str), Some("c"));
        assert!(s.delete(b) && s.delete(c));
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn a_reused_slot_ignores_its_old_id() {
        let mut s = Slots::default();
        let a = s.insert(1, "a");
        assert_eq!(s.remove(a), Some("a"));
        assert_eq!(s.remove(a), None, "removed twice");
        let b = s.insert(2, "b");
        assert_eq!(a as u32, b as u32, "the slot is reused");
        assert_eq!(s.get_mut(a), None);
        assert_eq!(s.remove(a), None);
        assert_eq!(s.get_mut(b), Some(&mut "b"));
        assert_eq!(s.ids_where(|v| *v == "b"), vec![b]);
        assert_eq!(s.len(), 1);
        assert_eq!(s.remove(0), None);
        assert_eq!(s.get(b), Some(&"b"));
        assert_eq!(s.get(a), None);
    }

    #[test]
    fn drain_takes_every_value_and_empties_the_table() {
        let mut s = Slots::default();
        let a = s.insert(1, "a");
        let b = s.insert(2, "b");
        let c = s.insert(3, "c");
        s.remove(b);
        assert_eq!(s.drain(), vec![(a, "a"), (c, "c")]);
        assert!(s.is_empty());
        assert_eq!(s.get(a), None);
        let d = s.insert(4, "d");
        assert_eq!(d as u32, 0, "an emptied table starts again at slot 0");
        assert_eq!(s.len(), 1);
    }
}
