//! Helpers shared by the integration tests that drive real processes.

use std::time::{Duration, Instant};

/// Poll `f` every `every` until it gives a value; fail naming `what` once `wait` is over.
pub(crate) fn poll_until<T>(
    what: &str,
    wait: Duration,
    every: Duration,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + wait;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(every);
    }
}

/// The address a `storm run --ui` child prints on stderr (`ui: http://ADDR/`), read as it
/// comes; stderr keeps being read after it, so the child never blocks on a full pipe. Fails
/// with what the child said if it ends without one.
pub(crate) fn ui_address(child: &mut std::process::Child, wait: Duration) -> String {
    use std::io::{BufRead, BufReader};
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut said = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("ui: http://") {
                let _ = tx.send(Ok(rest.trim_end_matches('/').to_string()));
            } else {
                said += &line;
                said += "\n";
            }
        }
        let _ = tx.send(Err(said));
    });
    match rx
        .recv_timeout(wait)
        .expect("the run prints its UI address")
    {
        Ok(addr) => addr,
        Err(stderr) => panic!("the run ended without serving its UI:\n{stderr}"),
    }
}
