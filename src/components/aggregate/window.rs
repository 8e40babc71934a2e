//! Windows for `aggregate`: tumbling and sliding, by duration (processing time, or event time
//! from a field with a `lag`) or by tuple count. State is kept per pane (the `every` step, or
//! the whole window when tumbling) as partial aggregates, never as tuples, and a window is the
//! merge of its panes when it closes: a one-hour window sliding every minute keeps sixty panes
//! of partial results per key, whatever the input rate. The panes themselves ([`Panes`]) hold
//! whatever a component keeps per pane (`join` keeps the tuples it must join).

use crate::tuple::{Value, Values};
use std::collections::{BTreeMap, HashMap};

/// A window's length or step: milliseconds, or tuples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Measure {
    Millis,
    Count,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WindowSpec {
    pub(crate) measure: Measure,
    pub(crate) size: i64,
    pub(crate) every: i64,
}

impl WindowSpec {
    /// `{tumbling: 1m}`, `{sliding: 5m, every: 1m}`, `{tumbling: 1000}` (tuples).
    fn from_json(v: &serde_json::Value) -> Result<WindowSpec, String> {
        let serde_json::Value::Object(m) = v else {
            return Err("`window` must be `{tumbling: D}` or `{sliding: D, every: E}`".into());
        };
        let (kind, size) = match (m.get("tumbling"), m.get("sliding")) {
            (Some(s), None) => ("tumbling", s),
            (None, Some(s)) => ("sliding", s),
            (Some(_), Some(_)) => {
                return Err("`window` is `tumbling` or `sliding`, not both".into())
            }
            (None, None) => return Err("`window` needs one of `tumbling` or `sliding`".into()),
        };
        if let Some(k) = m
            .keys()
            .find(|k| !["tumbling", "sliding", "every"].contains(&k.as_str()))
        {
            return Err(format!(
                "`window` has no key `{k}` (keys: tumbling, sliding, every)"
            ));
        }
        let (measure, size) = measure_of(size)?;
        let every = match (kind, m.get("every")) {
            ("tumbling", None) => size,
            ("tumbling", Some(_)) => return Err("a tumbling window has no `every`".into()),
            (_, None) => return Err("a sliding window needs `every`".into()),
            (_, Some(e)) => {
                let (m2, every) = measure_of(e)?;
                if m2 != measure {
                    return Err(
                        "`sliding` and `every` must both be durations or both counts".into(),
                    );
                }
                every
            }
        };
        if every > size {
            return Err("`every` must not be longer than the window".into());
        }
        if size % every != 0 {
            return Err("the window must be a whole number of `every` steps".into());
        }
        Ok(WindowSpec {
            measure,
            size,
            every,
        })
    }
}

/// A duration (`1m`, `30s`, `500ms`) in milliseconds, or a count of tuples (an integer).
fn measure_of(v: &serde_json::Value) -> Result<(Measure, i64), String> {
    match v {
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(c) if c >= 1 => Ok((Measure::Count, c)),
            _ => Err("a count window is a whole number of tuples ≥ 1".into()),
        },
        serde_json::Value::String(s) => match humantime::parse_duration(s.trim()) {
            Ok(d) if d.as_millis() >= 1 => Ok((Measure::Millis, d.as_millis() as i64)),
            _ => Err(format!("`{s}` is not a duration (`1m`, `30s`, `500ms`)")),
        },
        _ => Err("a window is a duration (`1m`) or a count of tuples (`1000`)".into()),
    }
}

/// Panes of the `every` step (the whole window when tumbling), each holding `T`, and how far
/// windows have been closed: the bookkeeping every windowed component shares (`aggregate`
/// keeps partial aggregates in a pane, `join` the tuples).
pub(crate) struct Panes<T> {
    spec: WindowSpec,
    panes: BTreeMap<i64, T>,
    /// Every window ending at or before this has been closed (emitted, or passed empty).
    closed_to: i64,
}

impl<T> Panes<T> {
    pub(crate) fn new(spec: WindowSpec) -> Panes<T> {
        Panes {
            spec,
            panes: BTreeMap::new(),
            closed_to: i64::MIN,
        }
    }

    /// Whether every window a tuple at `t` falls into has closed already.
    pub(crate) fn is_late(&self, t: i64) -> bool {
        floor_to(t, self.spec.every).saturating_add(self.spec.size) <= self.closed_to
    }

    /// The start of the pane of `t`.
    pub(crate) fn pane_start(&self, t: i64) -> i64 {
        floor_to(t, self.spec.every)
    }

    /// The starts of every window that holds data and ends at or before `watermark`, oldest
    /// first (all of them when `watermark` is `i64::MAX`: the end of input), now closed. Read
    /// each with [`Panes::window`], then [`Panes::retire`] the panes they no longer need.
    pub(crate) fn due(&mut self, watermark: i64) -> Vec<i64> {
        let mut out = Vec::new();
        if watermark <= self.closed_to {
            return out;
        }
        // Most calls (one per tuple with event time) close nothing: the oldest pane's first
        // open window does not end yet.
        let (size, every) = (self.spec.size, self.spec.every);
        let first_open = match self.closed_to {
            i64::MIN => i64::MIN,
            c => floor_to(c - size, every) + every,
        };
        let oldest = self.panes.range(first_open..).next().map(|(p, _)| *p);
        if oldest.is_none_or(|p| first_open.max(p - size + every).saturating_add(size) > watermark)
        {
            if watermark < i64::MAX {
                self.closed_to = watermark;
            }
            return out;
        }
        // The first window not closed yet: it ends after `closed_to`.
        let mut start = first_open;
        while let Some(pane) = self.panes.range(start..).next().map(|(p, _)| *p) {
            // The earliest window holding that pane (windows holding no pane are skipped).
            start = start.max(pane - size + every);
            if start.saturating_add(size) > watermark {
                break;
            }
            out.push(start);
            start += every;
        }
        self.closed_to = match (watermark, out.last()) {
            // The end of input closes the windows that hold data, no more: a run resumed
            // from the state this leaves goes on with the windows after them.
            (i64::MAX, Some(&last)) => last.saturating_add(size),
            (i64::MAX, None) => self.closed_to,
            _ => watermark,
        };
        out
    }

    /// The panes of the window starting at `start`, oldest first.
    pub(crate) fn window(&self, start: i64) -> impl Iterator<Item = &T> + Clone {
        self.panes
            .range(start..start.saturating_add(self.spec.size))
            .map(|(_, p)| p)
    }

    /// Drop the panes whose every window has closed; returns them, oldest first.
    pub(crate) fn retire(&mut self) -> Vec<(i64, T)> {
        let (size, closed) = (self.spec.size, self.closed_to);
        let done: Vec<i64> = self
            .panes
            .keys()
            .take_while(|p| p.saturating_add(size) <= closed)
            .copied()
            .collect();
        done.into_iter()
            .filter_map(|p| self.panes.remove_entry(&p))
            .collect()
    }

    /// Every window ending at or before this has been closed.
    pub(crate) fn closed_to(&self) -> i64 {
        self.closed_to
    }

    /// Go on from a saved state: windows closed to `closed_to`.
    pub(crate) fn set_closed_to(&mut self, closed_to: i64) {
        self.closed_to = closed_to;
    }

    /// The pane starting at `start`, made by `make` the first time; an error when `start` is
    /// not the start of a pane (a saved pane of another window spec).
    pub(crate) fn pane_at_with(
        &mut self,
        start: i64,
        make: impl FnOnce() -> T,
    ) -> Result<&mut T, String> {
        if floor_to(start, self.spec.every) != start {
            return Err(format!(
                "{start} is not the start of a pane (a multiple of {})",
                self.spec.every
            ));
        }
        Ok(self.panes.entry(start).or_insert_with(make))
    }

    /// The panes of the window starting at `start`, oldest first, to change.
    pub(crate) fn window_mut(&mut self, start: i64) -> impl Iterator<Item = &mut T> {
        self.panes
            .range_mut(start..start.saturating_add(self.spec.size))
            .map(|(_, p)| p)
    }

    #[cfg(test)]
    /// Every pane, oldest first.
    pub(crate) fn all(&self) -> impl Iterator<Item = (&i64, &T)> {
        self.panes.iter()
    }

    /// Every pane, oldest first.
    pub(crate) fn panes_mut(&mut self) -> impl Iterator<Item = (&i64, &mut T)> {
        self.panes.iter_mut()
    }

    /// The pane starting at `start`, if it holds anything.
    pub(crate) fn get_mut(&mut self, start: i64) -> Option<&mut T> {
        self.panes.get_mut(&start)
    }

    pub(crate) fn spec(&self) -> WindowSpec {
        self.spec
    }
}

/// A map by key values, hashed with foldhash (fast on the short strings keys mostly are).
pub(crate) type KeyMap<V> = HashMap<Values, V, foldhash::fast::FixedState>;

/// The start of the step of width `step` that holds `t`.
pub(crate) fn floor_to(t: i64, step: i64) -> i64 {
    t.div_euclid(step) * step
}

/// `window`, the event-time field `time`, and `lag` in ms, as read from the arguments.
type WindowArgs = (Option<WindowSpec>, Option<String>, i64);

/// The windowing arguments `aggregate`, `top` and `join` share: `window`, the event-time field
/// `time`, and how late (ms) a tuple may come, `lag`. An error names the argument.
pub(crate) fn window_args(
    args: &serde_json::Map<String, serde_json::Value>,
) -> Result<WindowArgs, (&'static str, String)> {
    let window = args
        .get("window")
        .map(WindowSpec::from_json)
        .transpose()
        .map_err(|e| ("window", e))?;
    let time = match args.get("time") {
        None => None,
        Some(t) => Some(
            t.as_str()
                .ok_or(("time", "`time` must be a field name".to_string()))?
                .to_string(),
        ),
    };
    let lag = match args.get("lag") {
        None => 0,
        Some(l) => crate::config::duration_of(l)
            .ok_or(("lag", "`lag` must be a duration (`5s`)".to_string()))?
            .as_millis() as i64,
    };
    Ok((window, time, lag))
}

/// The `idle` argument: after this long without a tuple, an input no longer holds the
/// event-time watermark back (Flink's `withIdleness`), so windows close on the others.
pub(crate) fn idle_arg(
    args: &serde_json::Map<String, serde_json::Value>,
    time: Option<&str>,
) -> Result<Option<std::time::Duration>, (&'static str, String)> {
    let Some(v) = args.get("idle") else {
        return Ok(None);
    };
    let d = crate::config::duration_of(v)
        .filter(|d| !d.is_zero())
        .ok_or((
            "idle",
            "`idle` must be a duration above zero (`30s`)".to_string(),
        ))?;
    match time {
        Some(_) => Ok(Some(d)),
        None => Err((
            "idle",
            "`idle` goes with event time: name the `time` field".into(),
        )),
    }
}

/// The lowest latest time of the inputs that are not idle (each heard from within `idle`'s
/// duration by its instant, the present), or of all of them without `idle`. When every input is idle, the lowest of those that sent
/// anything: an input that never sent holds nothing back once it is idle.
pub(crate) fn lowest_active(
    latest: &[i64],
    heard: &[std::time::Instant],
    idle: Option<(std::time::Duration, std::time::Instant)>,
) -> i64 {
    let Some((d, now)) = idle else {
        return latest.iter().copied().min().unwrap_or(i64::MIN);
    };
    let active = |i: &usize| {
        heard
            .get(*i)
            .is_none_or(|h| now.saturating_duration_since(*h) < d)
    };
    let lowest = (0..latest.len()).filter(active).map(|i| latest[i]).min();
    lowest
        .or_else(|| latest.iter().copied().filter(|&t| t > i64::MIN).min())
        .unwrap_or(i64::MIN)
}

/// A time bound as `stdout` shows it: RFC 3339, UTC, milliseconds.
/// Times before 1970 print as such; a bound past what a timestamp can hold (a window that
/// ends after the year 9999) stays the number of milliseconds it is.
pub(crate) fn time_value(ms: i64) -> Value {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => Value::str(&t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()),
        Err(_) => Value::Int(ms),
    }
}

/// An event time: epoch milliseconds, or an RFC 3339 string in UTC.
pub(crate) fn event_time(v: &Value) -> Option<i64> {
    let ms = match v {
        Value::Int(ms) => *ms,
        Value::Float(f) if f.is_finite() => *f as i64,
        Value::Str(s) => utc_millis(s.as_bytes()).or_else(|| offset_millis(s.trim()))?,
        _ => return None,
    };
    // Times a timestamp can print (years -9999 to 9999): beyond them a window's bounds could
    // not be written, and its arithmetic would overflow.
    let range = jiff::Timestamp::MIN.as_millisecond()..=jiff::Timestamp::MAX.as_millisecond();
    range.contains(&ms).then_some(ms)
}

/// [`event_time`] over a run of values, remembering the minute of the last time it read in the
/// common shape `2026-11-02T08:00:00.123Z`: a time in that same minute (times mostly come in
/// order) costs a compare of its first 16 bytes and a reading of its seconds, not a date.
#[derive(Debug, Default, Clone)]
pub(crate) struct EventTimes {
    /// The first 16 bytes (to the minute) of the last such time, and that minute's epoch ms.
    minute: Option<([u8; 16], i64)>,
}

impl EventTimes {
    /// What [`event_time`] gives `v`.
    #[inline]
    pub(crate) fn read(&mut self, v: &Value) -> Option<i64> {
        let Value::Str(s) = v else {
            return event_time(v);
        };
        let b = s.as_bytes();
        if let (Some((minute, at)), Some(head)) = (&self.minute, b.get(..16)) {
            if head == minute {
                if let Some(into) = millis_into_minute(b) {
                    return Some(at + into);
                }
            }
        }
        let ms = event_time(v)?;
        let fast = utc_millis(b) == Some(ms);
        if let (true, Some(into), Some(head)) = (fast, millis_into_minute(b), b.get(..16)) {
            let mut minute = [0u8; 16];
            minute.copy_from_slice(head);
            self.minute = Some((minute, ms - into));
        }
        Some(ms)
    }
}

/// The milliseconds past its minute of a time in the shape [`utc_millis`] reads (`:SS` or
/// `:SS.mmm` then `Z` after the minute), checked as it checks them.
#[inline]
fn millis_into_minute(b: &[u8]) -> Option<i64> {
    let digit = |i: usize| -> Option<i64> {
        let c = *b.get(i)?;
        c.is_ascii_digit().then(|| i64::from(c - b'0'))
    };
    let millis = match b.len() {
        20 if b[19] == b'Z' => 0,
        24 if b[19] == b'.' && b[23] == b'Z' => digit(20)? * 100 + digit(21)? * 10 + digit(22)?,
        _ => return None,
    };
    let sec = digit(17)? * 10 + digit(18)?;
    (b[16] == b':' && sec <= 59).then_some(sec * 1000 + millis)
}

/// Any other RFC 3339 time: with an offset (`+02:00`, `-05:00`, `z`) it is read as that
/// offset says; without one (`2026-11-02 08:00:05`), as UTC.
fn offset_millis(s: &str) -> Option<i64> {
    if let Ok(t) = s.parse::<jiff::Timestamp>() {
        return Some(t.as_millisecond());
    }
    // No offset after the time of day: UTC. (An offset the parser refused is not ignored.)
    let time_of_day = s.get(11..)?;
    if time_of_day.contains(['+', '-', 'Z', 'z']) {
        return None;
    }
    let t = humantime::parse_rfc3339_weak(s).ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as i64)
}

/// The common shape of an event time, `2026-11-02T08:00:00.123Z` (milliseconds optional), read
/// straight into epoch milliseconds; `None` for anything else, which the general parser reads.
fn utc_millis(b: &[u8]) -> Option<i64> {
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        b.get(r)?.iter().try_fold(0i64, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0'))
        })
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    let shaped = at(4, b'-') && at(7, b'-') && at(10, b'T') && at(13, b':') && at(16, b':');
    let millis = match b.len() {
        20 if at(19, b'Z') => 0,
        24 if at(19, b'.') && at(23, b'Z') => digits(20..23)?,
        _ => return None,
    };
    if !shaped {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (h, m, sec) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 59 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(((days * 24 + h) * 60 + m) * 60_000 + sec * 1000 + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An input not heard from within `idle` (by the `now` given) stops holding the
    /// watermark back; one heard from in time still does.
    #[test]
    fn an_input_silent_for_longer_than_idle_stops_holding_the_watermark() {
        let t0 = std::time::Instant::now();
        let at = |s: u64| t0 + std::time::Duration::from_secs(s);
        let idle = |now| Some((std::time::Duration::from_secs(3), now));
        let (latest, heard) = ([100, 50], [at(5), at(0)]);
        assert_eq!(lowest_active(&latest, &heard, idle(at(2))), 50);
        assert_eq!(lowest_active(&latest, &heard, idle(at(3))), 100);
        assert_eq!(lowest_active(&latest, &heard, None), 50);
        // Every input idle: the lowest of those that sent anything.
        let latest = [i64::MIN, 70];
        assert_eq!(lowest_active(&latest, &heard, idle(at(60))), 70);
    }

    #[test]
    fn specs() {
        let w = WindowSpec::from_json(&serde_json::json!({"sliding": "5m", "every": "1m"}))
            .expect("ok");
        assert_eq!(
            (w.measure, w.size, w.every),
            (Measure::Millis, 300_000, 60_000)
        );
        let w = WindowSpec::from_json(&serde_json::json!({"tumbling": 100})).expect("ok");
        assert_eq!((w.measure, w.size, w.every), (Measure::Count, 100, 100));
        assert!(WindowSpec::from_json(&serde_json::json!({"sliding": "5m"})).is_err());
        assert!(WindowSpec::from_json(&serde_json::json!({"sliding": "5m", "every": 3})).is_err());
        assert!(
            WindowSpec::from_json(&serde_json::json!({"tumbling": "1m", "evry": "1s"})).is_err()
        );
    }

    use proptest::prelude::*;

    proptest! {
        /// The fast reading of `...T..:..:..(.mmm)Z` agrees with the general RFC 3339 parser.
        #[test]
        fn fast_event_times_equal_the_general_parser(ms in 0i64..7_258_118_400_000, whole in any::<bool>()) {
            let ms = if whole { ms / 1000 * 1000 } else { ms };
            let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
            let text = if whole {
                humantime::format_rfc3339_seconds(t).to_string()
            } else {
                humantime::format_rfc3339_millis(t).to_string()
            };
            prop_assert_eq!(utc_millis(text.as_bytes()), Some(ms));
            prop_assert_eq!(event_time(&Value::str(&text)), Some(ms));
        }
    }

    proptest! {
        /// Read one after the other, times in and out of the same minute, in the fast shape or
        /// cut, with bad seconds or another zone, read as [`event_time`] reads each alone.
        #[test]
        fn a_run_of_times_reads_as_each_time_alone(
            steps in proptest::collection::vec((0i64..200_000, 0u8..8), 1..40),
        ) {
            let mut times = EventTimes::default();
            let mut ms = 1_793_606_400_000i64;
            for (step, shape) in steps {
                ms += step;
                let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
                let text = humantime::format_rfc3339_millis(t).to_string();
                let text = match shape {
                    0 => humantime::format_rfc3339_seconds(t).to_string(),
                    1 => text.replace(":", ":6").chars().take(24).collect(),
                    2 => text.replace('Z', "+01:00"),
                    3 => text[..23].to_string(),
                    4 => format!("{}x{}", &text[..17], &text[18..]),
                    _ => text,
                };
                let v = Value::str(&text);
                prop_assert_eq!(times.read(&v), event_time(&v), "{}", text);
            }
            prop_assert_eq!(times.read(&Value::Int(5)), Some(5));
        }
    }

    #[test]
    fn other_time_shapes_go_to_the_general_parser() {
        assert_eq!(utc_millis(b"2026-11-02T08:00:00+01:00"), None);
        assert_eq!(utc_millis(b"2026-13-02T08:00:00Z"), None);
        assert_eq!(
            event_time(&Value::str("2026-11-02T08:00:00.5Z")),
            Some(1_793_606_400_500)
        );
        assert_eq!(event_time(&Value::str("yesterday")), None);
    }

    /// An offset moves the time to UTC, with or without a fraction; lower-case `t` and `z`
    /// are RFC 3339 too; a time without an offset is UTC.
    #[test]
    fn offsets_are_applied() {
        let at_8 = 1_793_606_405_000; // 2026-11-02T08:00:05Z
        for text in [
            "2026-11-02T10:00:05.000+02:00",
            "2026-11-02T10:00:05+02:00",
            "2026-11-02T03:00:05-05:00",
            "2026-11-02T08:30:05+00:30",
            "2026-11-02T08:00:05.000-00:00",
            "2026-11-02t08:00:05z",
            "2026-11-02 08:00:05",
        ] {
            assert_eq!(event_time(&Value::str(text)), Some(at_8), "{text}");
        }
        assert_eq!(event_time(&Value::str("2026-11-02T08:00:05+99:00")), None);
    }

    /// Times a timestamp cannot print are not event times (their windows could not be
    /// written), and the i64 limits never reach the window arithmetic.
    #[test]
    fn bounds_print_before_1970_and_never_fail() {
        assert_eq!(time_value(-500), Value::str("1969-12-31T23:59:59.500Z"));
        assert_eq!(
            time_value(1_793_606_405_000),
            Value::str("2026-11-02T08:00:05.000Z")
        );
        assert_eq!(time_value(i64::MAX), Value::Int(i64::MAX));
    }

    #[test]
    fn event_times_stay_within_printable_years() {
        assert_eq!(event_time(&Value::Int(-500)), Some(-500));
        assert_eq!(event_time(&Value::Int(253_402_299_000_000)), None);
        assert_eq!(event_time(&Value::Int(i64::MAX)), None);
        assert_eq!(event_time(&Value::Int(i64::MIN)), None);
        assert_eq!(event_time(&Value::Float(1e300)), None);
    }
}
