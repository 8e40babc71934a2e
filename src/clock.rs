//! Time as a task or daemon sees it: the machine's clocks in a run, a clock moved by hand in
//! tests, so what waits on time (processing-time windows, idle inputs, rollovers, timeouts) can
//! be tested without sleeping.

#[cfg(test)]
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A source of the monotonic instant and the wall-clock time. Cloning shares it: advancing a
/// manual clock moves every clone.
#[derive(Clone, Debug)]
pub struct Clock(Source);

#[derive(Clone, Debug)]
enum Source {
    /// The machine's clocks.
    System,
    /// Times that move only when `advance` is called (unit tests only).
    #[cfg(test)]
    Manual(Arc<Mutex<Frozen>>),
}

/// The longest a thread waits by a manual clock before it looks at the clock again.
#[cfg(test)]
const MANUAL_WAIT: Duration = Duration::from_millis(5);

/// Where a manual clock stands.
#[cfg(test)]
#[derive(Clone, Copy, Debug)]
struct Frozen {
    instant: Instant,
    wall: SystemTime,
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::system()
    }
}

impl Clock {
    /// The machine's clocks (what a run uses).
    pub fn system() -> Clock {
        Clock(Source::System)
    }

    /// A clock that starts at the machine's present time and stands still until
    /// [`Clock::advance`] moves it.
    #[cfg(test)]
    pub(crate) fn manual() -> Clock {
        let now = Frozen {
            instant: Instant::now(),
            wall: SystemTime::now(),
        };
        Clock(Source::Manual(Arc::new(Mutex::new(now))))
    }

    /// A manual clock standing at `millis` after the Unix epoch.
    #[cfg(test)]
    pub(crate) fn manual_at(millis: i64) -> Clock {
        let clock = Clock::manual();
        if let Source::Manual(at) = &clock.0 {
            let wall = UNIX_EPOCH + Duration::from_millis(millis.max(0) as u64);
            at.lock().unwrap_or_else(|e| e.into_inner()).wall = wall;
        }
        clock
    }

    /// The monotonic instant (for intervals and deadlines).
    pub(crate) fn now(&self) -> Instant {
        match &self.0 {
            Source::System => Instant::now(),
            #[cfg(test)]
            Source::Manual(at) => at.lock().unwrap_or_else(|e| e.into_inner()).instant,
        }
    }

    /// Milliseconds since the Unix epoch by the wall clock (0 before it): for times shown or
    /// stored, and processing-time windows.
    pub(crate) fn epoch_millis(&self) -> i64 {
        self.wall()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }

    /// Seconds since the Unix epoch by the wall clock (0 before it): Storm's `time_secs`.
    pub(crate) fn epoch_secs(&self) -> u64 {
        self.epoch_millis().max(0) as u64 / 1000
    }

    /// The wall-clock time (for file ages and times stored).
    pub(crate) fn wall(&self) -> SystemTime {
        match &self.0 {
            Source::System => SystemTime::now(),
            #[cfg(test)]
            Source::Manual(at) => at.lock().unwrap_or_else(|e| e.into_inner()).wall,
        }
    }

    /// How long since `earlier` by this clock (zero if `earlier` is later).
    pub(crate) fn since(&self, earlier: Instant) -> Duration {
        self.now().saturating_duration_since(earlier)
    }

    /// How long a thread should wait for `deadline` by this clock: the time left, or on a
    /// manual clock at most `MANUAL_WAIT` (5 ms), so a waiting thread sees the clock moved soon
    /// after a test moves it.
    pub(crate) fn wait_for(&self, deadline: Instant) -> Duration {
        let left = deadline.saturating_duration_since(self.now());
        match &self.0 {
            Source::System => left,
            #[cfg(test)]
            Source::Manual(_) => left.min(MANUAL_WAIT),
        }
    }

    /// Move a manual clock (both its instant and its wall time) forward by `by`. The machine's
    /// clocks cannot be moved: false there.
    #[cfg(test)]
    pub(crate) fn advance(&self, by: Duration) -> bool {
        match &self.0 {
            Source::System => false,
            Source::Manual(at) => {
                let mut at = at.lock().unwrap_or_else(|e| e.into_inner());
                at.instant += by;
                at.wall += by;
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_stands_still_until_advanced_and_clones_move_together() {
        let clock = Clock::manual_at(60_000);
        let copy = clock.clone();
        let (start, wall) = (clock.now(), clock.epoch_millis());
        assert_eq!(wall, 60_000);
        assert_eq!(clock.now(), start);
        assert!(copy.advance(Duration::from_millis(1500)));
        assert_eq!(clock.since(start), Duration::from_millis(1500));
        assert_eq!(clock.epoch_millis(), 61_500);
    }

    #[test]
    fn waits_by_a_manual_clock_are_short_and_end_once_it_passes_the_deadline() {
        let clock = Clock::manual();
        let deadline = clock.now() + Duration::from_secs(30);
        assert_eq!(clock.wait_for(deadline), MANUAL_WAIT);
        clock.advance(Duration::from_secs(30));
        assert_eq!(clock.wait_for(deadline), Duration::ZERO);
        let system = Clock::system();
        assert!(system.wait_for(system.now() + Duration::from_secs(30)) > Duration::from_secs(29));
    }

    #[test]
    fn the_system_clock_moves_by_itself_and_refuses_to_be_moved() {
        let clock = Clock::system();
        assert!(!clock.advance(Duration::from_secs(1)));
        let start = clock.now();
        std::thread::sleep(Duration::from_millis(2));
        assert!(clock.since(start) >= Duration::from_millis(2));
        assert!(clock.epoch_millis() > 1_700_000_000_000);
    }
}
