//! The `http` sink's senders: `concurrency` threads, each sending one batch at a time through
//! a shared keep-alive agent (ureq), retrying with exponential back-off and jitter on 5xx,
//! 429, 408 and connection errors (waiting what `Retry-After` says when the server says it),
//! and reporting each batch's outcome to the bolt, which it wakes.

use super::args::Retry;
use crate::components::Waker;
use crossbeam_channel::{Receiver, Sender};
use rand::Rng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The longest `Retry-After` obeyed as it is.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// One request to make.
pub(crate) struct Job {
    pub(crate) id: u64,
    /// The idempotency key, the same on every attempt.
    pub(crate) key: String,
    pub(crate) body: Vec<u8>,
}

/// What became of a batch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// A 2xx answer.
    Delivered,
    /// A 4xx (other than 408 and 429): the batch will not be taken as it is.
    Rejected { status: u16, reason: String },
    /// Retries exhausted (or the run is stopping).
    GaveUp(String),
}

/// What every request carries.
pub(crate) struct Target {
    pub(crate) url: String,
    pub(crate) shown_url: String,
    pub(crate) method: String,
    pub(crate) content_type: &'static str,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) idempotency_header: String,
    pub(crate) retry: Retry,
    pub(crate) timeout: Duration,
}

/// The sender threads; dropping the job channel ends them.
pub(crate) struct Pool {
    jobs: Option<Sender<Job>>,
    pub(crate) results: Receiver<(u64, Outcome)>,
    threads: Vec<std::thread::JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

impl Pool {
    pub(crate) fn start(
        target: Target,
        concurrency: usize,
        waker: Waker,
        name: &str,
    ) -> std::io::Result<Pool> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(target.timeout))
            .max_idle_connections_per_host(concurrency.max(1))
            .user_agent(format!("storm/{}", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let (jobs_tx, jobs_rx) = crossbeam_channel::unbounded::<Job>();
        let (res_tx, res_rx) = crossbeam_channel::unbounded();
        let target = Arc::new(target);
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for i in 0..concurrency {
            let (agent, target, jobs, results, waker, stop) = (
                agent.clone(),
                target.clone(),
                jobs_rx.clone(),
                res_tx.clone(),
                waker.clone(),
                stop.clone(),
            );
            let t = std::thread::Builder::new()
                .name(format!("{name}-http-{i}"))
                .spawn(move || {
                    for job in jobs {
                        let outcome = deliver(&agent, &target, &job, &stop);
                        let _ = results.send((job.id, outcome));
                        waker.wake();
                    }
                })?;
            threads.push(t);
        }
        Ok(Pool {
            jobs: Some(jobs_tx),
            results: res_rx,
            threads,
            stop,
        })
    }

    pub(crate) fn send(&self, job: Job) {
        if let Some(j) = &self.jobs {
            let _ = j.send(job);
        }
    }

    /// Stop retrying (the batches still out give up) and end the threads.
    pub(crate) fn shut(&mut self, abandon: bool) {
        if abandon {
            self.stop.store(true, Ordering::SeqCst);
        }
        self.jobs = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Send `job` until it is taken, refused, or out of attempts.
fn deliver(agent: &ureq::Agent, t: &Target, job: &Job, stop: &AtomicBool) -> Outcome {
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let (why, retry_after) = match attempt_once(agent, t, job) {
            Ok(outcome) => return outcome,
            Err(retry) => retry,
        };
        if attempt >= t.retry.attempts || stop.load(Ordering::SeqCst) {
            return Outcome::GaveUp(format!("{} after {attempt} attempt(s): {why}", t.shown_url));
        }
        let wait = retry_after.unwrap_or_else(|| backoff(&t.retry, attempt));
        tracing::debug!(key = %job.key, attempt, ?wait, "http sink: retrying: {why}");
        sleep_unless_stopped(wait, stop);
    }
}

/// One attempt: an outcome, or why to retry and how long the server asked to wait.
fn attempt_once(
    agent: &ureq::Agent,
    t: &Target,
    job: &Job,
) -> Result<Outcome, (String, Option<Duration>)> {
    let mut req = ureq::http::Request::builder()
        .method(t.method.as_str())
        .uri(t.url.as_str())
        .header("Content-Type", t.content_type)
        .header(t.idempotency_header.as_str(), job.key.as_str());
    for (k, v) in &t.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let req = req
        .body(&job.body[..])
        .map_err(|e| (format!("a bad request: {e}"), None))?;
    let mut resp = match agent.run(req) {
        Ok(r) => r,
        Err(e) => return Err((e.to_string(), None)),
    };
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    // Read the answer whole so the connection is kept for the next request.
    let text = resp
        .body_mut()
        .with_config()
        .limit(64 * 1024)
        .read_to_string()
        .unwrap_or_default();
    match status {
        200..=299 => Ok(Outcome::Delivered),
        408 | 429 | 500..=599 => Err((format!("HTTP {status}"), retry_after)),
        _ => Ok(Outcome::Rejected {
            status,
            reason: format!("HTTP {status}: {}", snippet(&text)),
        }),
    }
}

/// The first line of an answer, short.
fn snippet(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    line.chars().take(200).collect()
}

/// `Retry-After`: seconds, or an HTTP date.
fn parse_retry_after(v: &str) -> Option<Duration> {
    let v = v.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER));
    }
    let when = jiff::fmt::rfc2822::parse(v).ok()?.timestamp();
    let wait = when.duration_since(jiff::Timestamp::now());
    let wait = Duration::try_from(wait).unwrap_or(Duration::ZERO);
    Some(wait.min(MAX_RETRY_AFTER))
}

/// The wait before attempt `attempt + 1`: `initial` doubled each time up to `max`, a random
/// half of it taken off (jitter, so senders that failed together do not retry together).
fn backoff(r: &Retry, attempt: u32) -> Duration {
    let exp = r
        .initial
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
    let full = exp.min(r.max);
    let half = full / 2;
    half + full
        .saturating_sub(half)
        .mul_f64(rand::rng().random::<f64>())
}

fn sleep_unless_stopped(wait: Duration, stop: &AtomicBool) {
    let deadline = std::time::Instant::now() + wait;
    while !stop.load(Ordering::SeqCst) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_bounds() {
        let r = Retry {
            attempts: 10,
            initial: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        for attempt in 1..12 {
            let full = Duration::from_millis(100 * (1u64 << (attempt - 1).min(20))).min(r.max);
            let d = backoff(&r, attempt);
            assert!(d >= full / 2 && d <= full, "{attempt}: {d:?}");
        }
    }

    #[test]
    fn retry_after_in_seconds_or_a_date() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("99999"), Some(MAX_RETRY_AFTER));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }
}
