//! Live progress on stderr (indicatif), drawn only when stderr is a terminal or
//! `--progress always`: tuples emitted per second for each spout, and bytes read of the file
//! size for `file` spouts.

use crate::runtime::metrics::TaskStats;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

pub(crate) struct Progress {
    bar: ProgressBar,
    started: Instant,
    /// Not a terminal (`--progress always` into a file or pipe): a plain line every second.
    plain: Option<std::sync::Mutex<Instant>>,
}

impl Progress {
    pub(crate) fn new() -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        let plain = (!std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .then(|| std::sync::Mutex::new(Instant::now()));
        crate::logging::status_line_drawn(plain.is_none());
        Progress {
            bar,
            started: Instant::now(),
            plain,
        }
    }

    /// Redraw from the live counters of every spout task.
    pub(crate) fn update(&self, stats: &BTreeMap<u32, (String, Arc<TaskStats>)>) {
        let mut per: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
        for (component, s) in stats.values() {
            let total = s.progress_total.load(Ordering::Relaxed);
            let e = per.entry(component.as_str()).or_default();
            if s.is_spout.load(Ordering::Relaxed) {
                e.0 += s.emitted();
                e.1 += s.progress_done.load(Ordering::Relaxed);
                e.2 += total;
            }
        }
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let parts: Vec<String> = per
            .iter()
            .filter(|(_, (n, _, _))| *n > 0)
            .map(|(c, (n, done, total))| {
                let mut s = format!("{c}: {n} tuples ({:.0}/s)", *n as f64 / secs);
                if *total > 0 {
                    s += &format!(
                        ", {} of {}",
                        indicatif::HumanBytes(*done),
                        indicatif::HumanBytes(*total)
                    );
                }
                s
            })
            .collect();
        if let Some(last) = &self.plain {
            let mut last = match last.lock() {
                Ok(l) => l,
                Err(p) => p.into_inner(),
            };
            if last.elapsed().as_secs_f64() >= 1.0 && !parts.is_empty() {
                *last = Instant::now();
                crate::stderr_println!("progress {:.0}s: {}", secs, parts.join("  "));
            }
            return;
        }
        self.bar.set_message(parts.join("  "));
        self.bar.tick();
    }

    pub(crate) fn finish(self) {
        self.bar.finish_and_clear();
        crate::logging::status_line_drawn(false);
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}
