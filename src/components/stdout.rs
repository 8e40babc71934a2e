//! The `stdout` bolt: each tuple as its values joined by TAB, one line per tuple, through one
//! process-wide buffered writer; flushed when the executor goes idle and at the end. A closed
//! standard output stops the run quietly (SPEC §1).

use super::{Bolt, BoltCollector, Tuple};
use std::io::Write;
use std::sync::{Mutex, OnceLock};

/// The one writer all `stdout` tasks share.
fn writer() -> &'static Mutex<std::io::BufWriter<std::io::Stdout>> {
    static W: OnceLock<Mutex<std::io::BufWriter<std::io::Stdout>>> = OnceLock::new();
    W.get_or_init(|| {
        Mutex::new(std::io::BufWriter::with_capacity(
            1 << 16,
            std::io::stdout(),
        ))
    })
}

/// Standard output was closed by the reader (`| head`): end quietly, as a shell filter should.
fn closed_output() -> ! {
    crate::logging::clear_status_line();
    std::process::exit(0)
}

#[derive(Default)]
pub struct Stdout {
    line: String,
    pending: String,
}

impl Stdout {
    fn write_pending(&mut self, flush: bool) {
        if self.pending.is_empty() && !flush {
            return;
        }
        let mut w = match writer().lock() {
            Ok(w) => w,
            Err(p) => p.into_inner(),
        };
        let res =
            w.write_all(self.pending.as_bytes())
                .and_then(|()| if flush { w.flush() } else { Ok(()) });
        self.pending.clear();
        if let Err(e) = res {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                closed_output();
            }
            tracing::error!("stdout: {e}");
        }
    }
}

impl Bolt for Stdout {
    fn execute(&mut self, input: &Tuple, _out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            return Ok(());
        }
        self.line.clear();
        for (i, v) in input.values.iter().enumerate() {
            if i > 0 {
                self.line.push('\t');
            }
            v.write_plain(&mut self.line);
        }
        self.line.push('\n');
        self.pending.push_str(&self.line);
        if self.pending.len() >= 1 << 16 {
            self.write_pending(false);
        }
        Ok(())
    }

    fn poll(&mut self, _out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.write_pending(true);
        Ok(())
    }

    fn finish(&mut self, _out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        self.write_pending(true);
        Ok(())
    }

    fn cleanup(&mut self) {
        self.write_pending(true);
    }
}
