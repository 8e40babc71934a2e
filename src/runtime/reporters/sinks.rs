//! Where a reading goes: Graphite's plaintext protocol, one CSV file per metric (as
//! Dropwizard's CsvReporter writes them), or a block of text on stderr.

use super::sample::{Figure, Kind};
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a Graphite connection or write may take before the reading is given up.
const NET_TIMEOUT: Duration = Duration::from_secs(5);

/// A Graphite server, connected on first use and again after a failure.
pub(crate) struct Graphite {
    addr: String,
    prefix: Option<String>,
    conn: Option<TcpStream>,
}

impl Graphite {
    pub(crate) fn new(host: &str, port: u16, prefix: Option<String>) -> Graphite {
        Graphite {
            addr: format!("{host}:{port}"),
            prefix,
            conn: None,
        }
    }

    /// Send one reading: `name value unix-seconds` per line.
    pub(crate) fn send(&mut self, figures: &[Figure], unix_secs: u64) -> anyhow::Result<()> {
        let mut text = String::new();
        for f in figures {
            let name = match &self.prefix {
                Some(p) => format!("{p}.{}", f.name),
                None => f.name.clone(),
            };
            text.push_str(&format!("{name} {} {unix_secs}\n", f.value));
        }
        let conn = match &mut self.conn {
            Some(c) => c,
            None => self.conn.insert(self.connect()?),
        };
        let sent = conn.write_all(text.as_bytes()).and_then(|()| conn.flush());
        if let Err(e) = sent {
            self.conn = None;
            anyhow::bail!("graphite {}: {e}", self.addr);
        }
        Ok(())
    }

    fn connect(&self) -> anyhow::Result<TcpStream> {
        use std::net::ToSocketAddrs;
        let addr = self
            .addr
            .to_socket_addrs()
            .map_err(|e| anyhow::anyhow!("graphite {}: {e}", self.addr))?
            .next()
            .ok_or_else(|| anyhow::anyhow!("graphite {}: no address", self.addr))?;
        let conn = TcpStream::connect_timeout(&addr, NET_TIMEOUT)
            .map_err(|e| anyhow::anyhow!("graphite {}: {e}", self.addr))?;
        conn.set_write_timeout(Some(NET_TIMEOUT))?;
        Ok(conn)
    }
}

/// Append one row per figure to `DIR/NAME.csv`, writing the header when the file is new:
/// `t,count` for counters, `t,value` for gauges.
pub(crate) fn csv(dir: &Path, figures: &[Figure], unix_secs: u64) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("csv reporter {}: {e}", dir.display()))?;
    for f in figures {
        let path: PathBuf = dir.join(format!("{}.csv", f.name));
        let new = !path.exists();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| anyhow::anyhow!("csv reporter {}: {e}", path.display()))?;
        let mut row = String::new();
        if new {
            row.push_str(match f.kind {
                Kind::Counter => "t,count\n",
                Kind::Gauge => "t,value\n",
            });
        }
        row.push_str(&format!("{unix_secs},{}\n", f.value));
        file.write_all(row.as_bytes())
            .map_err(|e| anyhow::anyhow!("csv reporter {}: {e}", path.display()))?;
    }
    Ok(())
}

/// A block on stderr: a dated header, then the counters and the gauges, one per line.
pub(crate) fn console(figures: &[Figure], unix_secs: u64) {
    let mut text = format!("-- metrics at {unix_secs} (unix seconds) --\n");
    for (kind, title) in [(Kind::Counter, "counters"), (Kind::Gauge, "gauges")] {
        let mut of_kind = figures.iter().filter(|f| f.kind == kind).peekable();
        if of_kind.peek().is_some() {
            text.push_str(&format!("{title}:\n"));
        }
        for f in of_kind {
            text.push_str(&format!("  {} = {}\n", f.name, f.value));
        }
    }
    crate::stderr_print!("{text}");
}
