//! Windows of keyed partial aggregates against brute force, in memory and spilling all the
//! time (a budget always past its limit, so every pane goes to disk as it fills).

use super::*;
use crate::components::aggregate::groups;
use crate::components::aggregate::ops::Kind;
use crate::tuple::Value;
use proptest::prelude::*;
use std::path::Path;

/// A budget always past its limit: each new key makes its pane write its entries to disk.
struct Spent;

impl Budget for Spent {
    fn note(&mut self, _: u64) -> bool {
        true
    }
    fn forget(&mut self, _: u64) {}
    fn clear(&mut self) {}
    fn relieved(&self) -> bool {
        false
    }
    fn refusal(&self) -> anyhow::Error {
        anyhow::anyhow!("spent")
    }
    fn limit(&self) -> Option<u64> {
        Some(1)
    }
}

/// Count windows; with `spill_in`, spilling there all the time.
fn windows(spec: WindowSpec, spill_in: Option<&Path>) -> Windows {
    let make = groups::maker(vec![Kind::Count]);
    let Some(dir) = spill_in else {
        return Windows::new(spec, make);
    };
    let make: MakePane = Box::new(move || {
        let mut pane = make();
        pane.set_min_batch(1);
        pane
    });
    let mut w = Windows::new(spec, make);
    let to = SpillTo {
        path: dir.join("count-0.redb"),
        cache: 1 << 20,
    };
    w.bound(Box::new(|| Box::new(Spent)), Some(to));
    w
}

fn count_at(w: &mut Windows, t: i64, key: &str) {
    let key: Values = smallvec::smallvec![Value::str(key)];
    let fresh = || vec![State::new(Kind::Count)];
    w.update(t, &key, fresh, |s| s[0].add(None))
        .expect("counted");
}

/// A closed window as (start, end, key → value rows sorted by key).
type Shown = (i64, i64, Vec<(String, Value)>);

/// The windows `watermark` closes.
fn closed(w: &mut Windows, watermark: i64) -> Vec<Shown> {
    let mut out = Vec::new();
    w.close(watermark, |start, end, rows| {
        let rows: Vec<(Values, Vec<State>)> = match rows {
            Rows::Loose(v) => v,
            Rows::Ordered(it) => it.collect::<anyhow::Result<_>>()?,
        };
        let mut shown: Vec<(String, Value)> = rows
            .iter()
            .map(|(k, s)| (k[0].as_str().unwrap_or_default().to_string(), s[0].value()))
            .collect();
        shown.sort_by(|a, b| a.0.cmp(&b.0));
        out.push((start, end, shown));
        Ok(())
    })
    .expect("closed");
    out
}

#[test]
fn sliding_windows_merge_their_panes_in_memory_and_spilled() {
    let spec = WindowSpec {
        measure: Measure::Millis,
        size: 30,
        every: 10,
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    for spill in [None, Some(dir.path())] {
        let mut w = windows(spec, spill);
        for (t, k) in [
            (0, "a"),
            (5, "a"),
            (12, "a"),
            (12, "b"),
            (25, "a"),
            (41, "a"),
        ] {
            count_at(&mut w, t, k);
        }
        let a = |n: i64| vec![("a".to_string(), Value::Int(n))];
        let ab = |n: i64| {
            vec![
                ("a".to_string(), Value::Int(n)),
                ("b".to_string(), Value::Int(1)),
            ]
        };
        assert_eq!(
            closed(&mut w, i64::MAX),
            vec![
                (-20, 10, a(2)),
                (-10, 20, ab(3)),
                (0, 30, ab(4)),
                (10, 40, ab(2)),
                (20, 50, a(2)),
                (30, 60, a(1)),
                (40, 70, a(1)),
            ],
            "spilling: {}",
            spill.is_some()
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("the dir").count(),
        0,
        "retired panes leave no spill file"
    );
}

#[test]
fn a_spilled_window_is_read_back_in_key_order() {
    let spec = WindowSpec {
        measure: Measure::Millis,
        size: 10,
        every: 10,
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut w = windows(spec, Some(dir.path()));
    for k in ["c", "a", "b", "a"] {
        count_at(&mut w, 1, k);
    }
    let mut keys = Vec::new();
    w.close(i64::MAX, |_, _, rows| {
        let Rows::Ordered(it) = rows else {
            anyhow::bail!("a spilled window should be read back from disk");
        };
        for row in it {
            let (k, s) = row?;
            keys.push((k[0].as_str().unwrap_or_default().to_string(), s[0].value()));
        }
        Ok(())
    })
    .expect("closed");
    let want = [("a", 2), ("b", 1), ("c", 1)].map(|(k, n)| (k.to_string(), Value::Int(n)));
    assert_eq!(keys, want);
}

#[test]
fn tumbling_windows_close_with_the_watermark_and_late_tuples_are_seen() {
    let spec = WindowSpec {
        measure: Measure::Millis,
        size: 10,
        every: 10,
    };
    let mut w = windows(spec, None);
    count_at(&mut w, 3, "a");
    count_at(&mut w, 14, "b");
    let first = closed(&mut w, 10);
    assert_eq!(first.len(), 1);
    assert_eq!((first[0].0, first[0].1), (0, 10));
    assert!(w.is_late(9));
    assert!(!w.is_late(10));
    assert_eq!(closed(&mut w, 19).len(), 0);
    assert_eq!(closed(&mut w, i64::MAX).len(), 1);
}

/// Events whose times are out of order by at most `lag`, so none is late.
fn within_lag() -> impl Strategy<Value = (Vec<(i64, u8)>, i64, i64, i64)> {
    (1i64..6, 1i64..5, 0i64..40)
        .prop_flat_map(|(steps, every, lag)| {
            let ev = proptest::collection::vec((0i64..60, 0u8..3, 0i64..=lag), 0..60);
            (ev, Just(every * steps), Just(every), Just(lag))
        })
        .prop_map(|(raw, size, every, lag)| {
            // A rising clock, each event up to `lag` behind it.
            let mut clock = 0;
            let events = raw
                .into_iter()
                .map(|(step, key, behind)| {
                    clock += step;
                    ((clock - behind).max(0), key)
                })
                .collect();
            (events, size, every, lag)
        })
}

proptest! {
    /// Windowed counts per key, closed as the watermark passes and at the end, equal a
    /// brute-force count over every window that holds an event.
    #[test]
    fn windowed_counts_equal_brute_force((events, size, every, lag) in within_lag(), spill in any::<bool>()) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut w = windows(WindowSpec { measure: Measure::Millis, size, every }, spill.then_some(dir.path()));
        let mut got: Vec<(i64, String, Value)> = Vec::new();
        let mut max_t = i64::MIN;
        for &(t, key) in &events {
            prop_assert!(!w.is_late(t), "t={t} late with lag {lag}");
            count_at(&mut w, t, &key.to_string());
            max_t = max_t.max(t);
            for (start, _, rows) in closed(&mut w, max_t - lag) {
                got.extend(rows.into_iter().map(|(k, v)| (start, k, v)));
            }
        }
        for (start, _, rows) in closed(&mut w, i64::MAX) {
            got.extend(rows.into_iter().map(|(k, v)| (start, k, v)));
        }
        got.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let mut want: Vec<(i64, String, Value)> = Vec::new();
        if let (Some(lo), Some(hi)) = (events.iter().map(|e| e.0).min(), events.iter().map(|e| e.0).max()) {
            let mut start = lo.div_euclid(every) * every - size + every;
            while start <= hi {
                for key in 0u8..3 {
                    let n = events.iter().filter(|(t, k)| *k == key && *t >= start && *t < start + size).count();
                    if n > 0 {
                        want.push((start, key.to_string(), Value::Int(n as i64)));
                    }
                }
                start += every;
            }
        }
        prop_assert_eq!(got, want);
    }
}
