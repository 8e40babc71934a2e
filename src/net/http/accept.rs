//! Accepting connections within bounds: each accepted connection takes a slot; past
//! `max_connections`, or when the process is out of file descriptors, the connection that has
//! waited longest for a request is told to close, and accepting backs off instead of failing.

use super::conn::{self, Shared};
use super::slots::Slots;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// Whether an accept error means the process (or system) has no file descriptor left.
fn out_of_descriptors(e: &std::io::Error) -> bool {
    // EMFILE (24) and ENFILE (23) on Linux and the BSDs.
    matches!(e.raw_os_error(), Some(23 | 24))
}

/// Accept and serve connections until `stop` fires (or its sender is dropped).
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let slots = Arc::new(Slots::default());
    let mut backoff = Duration::from_millis(10);
    let mut warned: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => return,
            r = listener.accept() => r,
        };
        match accepted {
            Ok((stream, peer)) => {
                backoff = Duration::from_millis(10);
                if slots.count() >= shared.limits.max_connections && !slots.shed_one() {
                    // Every open connection is answering: this one waits for none of them.
                    conn::turn_away(stream);
                    continue;
                }
                let slot = slots.take();
                tokio::spawn(conn::serve(stream, peer, shared.clone(), slot));
            }
            Err(e) => {
                let starved = out_of_descriptors(&e);
                if starved {
                    slots.shed_one();
                }
                if warned.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                    tracing::warn!(
                        "http: cannot accept a connection ({e}); {}",
                        match starved {
                            true => "closing the longest-idle one and retrying",
                            false => "retrying",
                        }
                    );
                    warned = Some(Instant::now());
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}
