//! The lookup cache: the last answers by key, at most `cache` of them (least recently used
//! go first), each kept for `ttl` (then asked again), so a hot key costs no round trip.

use crate::tuple::Value;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

/// What a lookup answered: the values it adds, and whether it found something.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    pub(crate) values: Vec<Value>,
    pub(crate) hit: bool,
}

pub(crate) struct Cache {
    entries: Option<lru::LruCache<String, (Instant, Answer)>>,
    ttl: Duration,
    hits: u64,
    misses: u64,
}

impl Cache {
    /// A cache of `bound` answers (0: none) kept `ttl` each.
    pub(crate) fn new(bound: usize, ttl: Duration) -> Cache {
        Cache {
            entries: NonZeroUsize::new(bound).map(lru::LruCache::new),
            ttl,
            hits: 0,
            misses: 0,
        }
    }

    /// The answer for `key` if one younger than the ttl is kept.
    pub(crate) fn get(&mut self, key: &str, now: Instant) -> Option<Answer> {
        let entries = self.entries.as_mut()?;
        let fresh = match entries.get(key) {
            Some((at, a)) if now.duration_since(*at) < self.ttl => Some(a.clone()),
            Some(_) => {
                entries.pop(key);
                None
            }
            None => None,
        };
        match fresh {
            Some(_) => self.hits += 1,
            None => self.misses += 1,
        }
        fresh
    }

    pub(crate) fn put(&mut self, key: String, answer: Answer, now: Instant) {
        if let Some(entries) = self.entries.as_mut() {
            entries.put(key, (now, answer));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(s: &str) -> Answer {
        Answer {
            values: vec![Value::str(s)],
            hit: true,
        }
    }

    #[test]
    fn answers_are_bounded_and_expire() {
        let mut c = Cache::new(2, Duration::from_secs(10));
        let t0 = Instant::now();
        c.put("a".into(), answer("1"), t0);
        c.put("b".into(), answer("2"), t0);
        c.put("c".into(), answer("3"), t0);
        assert_eq!(c.get("a", t0), None, "the least recently used went");
        assert_eq!(c.get("c", t0), Some(answer("3")));
        assert_eq!(c.get("c", t0 + Duration::from_secs(11)), None, "expired");
        let mut none = Cache::new(0, Duration::from_secs(10));
        none.put("a".into(), answer("1"), t0);
        assert_eq!(none.get("a", t0), None);
    }
}
