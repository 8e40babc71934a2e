//! How a client command retries nimbus through an election: Storm's `storm.nimbus.retry.*`
//! keys give the number of extra rounds over `nimbus.seeds` and the back-off between them
//! (doubled after each round, up to the ceiling).

use crate::config::Config;
use std::time::Duration;

/// Extra rounds over the nimbus addresses when none leads, and the waits between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retry {
    /// Rounds after the first (0: one round only).
    pub(crate) times: u32,
    /// The wait before the first retry.
    interval: Duration,
    /// The longest wait between two rounds.
    ceiling: Duration,
}

/// Defaults that bound a command's retries to about 25 seconds, past a fail-over with the
/// default 20 s ZooKeeper session timeout (Storm's own defaults, 5 rounds from 2 s up to 60 s,
/// would hold a command for a minute).
const DEFAULT_TIMES: u64 = 5;
const DEFAULT_INTERVAL_MS: u64 = 1000;
const DEFAULT_CEILING_MS: u64 = 10_000;

impl Retry {
    /// One round only: what daemons use (they have their own loops).
    pub(crate) const NONE: Retry = Retry {
        times: 0,
        interval: Duration::ZERO,
        ceiling: Duration::ZERO,
    };

    /// The retries `config` asks for; a key set to anything but a whole number is an error.
    pub(crate) fn from_config(config: &Config) -> anyhow::Result<Retry> {
        let times = whole(config, "storm.nimbus.retry.times", DEFAULT_TIMES)?;
        let interval = whole(
            config,
            "storm.nimbus.retry.interval.millis",
            DEFAULT_INTERVAL_MS,
        )?;
        let ceiling = whole(
            config,
            "storm.nimbus.retry.intervalceiling.millis",
            DEFAULT_CEILING_MS,
        )?;
        Ok(Retry {
            times: u32::try_from(times)
                .map_err(|_| anyhow::anyhow!("storm.nimbus.retry.times: {times} is too large"))?,
            interval: Duration::from_millis(interval),
            ceiling: Duration::from_millis(ceiling.max(interval)),
        })
    }

    /// These retries, with rounds added until their waits add up to at least `total` (what
    /// a long-lived client waits for a leader to be elected again, however few rounds a
    /// one-off command makes).
    pub(crate) fn at_least(mut self, total: Duration) -> Retry {
        if self.interval.is_zero() {
            self.interval = Duration::from_millis(DEFAULT_INTERVAL_MS);
            self.ceiling = self.ceiling.max(self.interval);
        }
        let (mut waited, mut wait, mut rounds) = (Duration::ZERO, None, 0u32);
        while waited < total && rounds < u32::MAX {
            let next = self.next_wait(wait);
            waited += next;
            wait = Some(next);
            rounds += 1;
        }
        self.times = self.times.max(rounds);
        self
    }

    /// The wait after a round that waited `previous` (the first wait is `interval`).
    pub(crate) fn next_wait(&self, previous: Option<Duration>) -> Duration {
        match previous {
            None => self.interval,
            Some(p) => p.saturating_mul(2).min(self.ceiling),
        }
    }
}

/// A whole-number key, `default` when unset.
fn whole(config: &Config, key: &str, default: u64) -> anyhow::Result<u64> {
    match config.get(key) {
        None | Some(serde_json::Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| anyhow::anyhow!("{key}: expected a whole number, got {v}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_ceiling() {
        let r = Retry {
            times: 5,
            interval: Duration::from_millis(500),
            ceiling: Duration::from_millis(1500),
        };
        let first = r.next_wait(None);
        let second = r.next_wait(Some(first));
        let third = r.next_wait(Some(second));
        assert_eq!(
            [first, second, third],
            [500, 1000, 1500].map(Duration::from_millis)
        );
    }

    #[test]
    fn at_least_adds_rounds_until_the_waits_cover_the_total() {
        let few = Retry {
            times: 1,
            interval: Duration::from_millis(100),
            ceiling: Duration::from_secs(2),
        };
        let long = few.at_least(Duration::from_secs(10));
        // 0.1 + 0.2 + 0.4 + 0.8 + 1.6 + 2 + 2 + 2 + 2 = 11.1 s after 9 rounds.
        assert_eq!(long.times, 9);
        assert_eq!(Retry::NONE.at_least(Duration::from_secs(3)).times, 3);
        let many = Retry { times: 50, ..few };
        assert_eq!(many.at_least(Duration::from_secs(1)).times, 50);
    }
}
