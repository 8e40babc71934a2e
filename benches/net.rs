//! Throughput of one loopback TCP link between two `TcpNetwork`s (transfer-thread buffers in,
//! whole-frame buffers out of the peer's receive channel), against a plain loopback socket copy
//! of the same bytes. Run: `cargo bench --bench net`.

use crossbeam_channel::Receiver;
use divan::counter::{BytesCount, ItemsCount};
use divan::Bencher;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use storm::net::Network;
use storm::runtime::message::Message;
use storm::runtime::wire as frame;
use storm::runtime::TcpNetwork;
use storm::tuple::{Tuple, Value};

fn main() {
    divan::main();
}

/// Buffers per iteration, each about 1 MiB of frames of 8 word-count tuples (as the transfer
/// thread batches them).
const BUFFERS: usize = 16;

fn workload() -> (Vec<u8>, u64) {
    let mut buf = Vec::new();
    let mut frames = 0;
    while buf.len() < 1 << 20 {
        let tuples = (0..8)
            .map(|i| Tuple {
                values: smallvec::smallvec![Value::str("jackson"), Value::Int(i)],
                source_task: 3,
                stream: 0,
                anchors: Default::default(),
            })
            .collect();
        frame::encode(&Message::Tuples { task: 7, tuples }, &mut buf);
        frames += 1;
    }
    (buf, frames)
}

/// Loopback, port 0: the listener gets a port of its own.
fn any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

#[divan::bench(sample_count = 20)]
fn tcp_link(bencher: Bencher) {
    let (buf, frames) = workload();
    let addrs: BTreeMap<usize, SocketAddr> = [(0, any_port()), (1, any_port())].into();
    let a = TcpNetwork::new(addrs.clone(), [0], None);
    let b = TcpNetwork::new(addrs, [1], None);
    let (tx, rx) = crossbeam_channel::bounded(64);
    b.listen(1, tx).unwrap_or_else(|e| panic!("{e}"));
    let bound = b
        .peers()
        .get(1)
        .unwrap_or_else(|| panic!("worker 1 listens"));
    a.peers().set(1, bound);
    let link = a.connect(0, 1).unwrap_or_else(|e| panic!("{e}"));
    let total = buf.len() * BUFFERS;
    let drain = |rx: &Receiver<Vec<u8>>| {
        let mut got = 0;
        while got < total {
            got += rx.recv().map(|b| b.len()).unwrap_or(total);
        }
    };
    bencher
        .counter(BytesCount::new(total))
        .counter(ItemsCount::new(frames as usize * BUFFERS))
        .bench_local(|| {
            for _ in 0..BUFFERS {
                link.send(buf.clone()).unwrap_or_else(|e| panic!("{e}"));
            }
            drain(&rx);
        });
}

#[divan::bench(sample_count = 20)]
fn plain_socket_copy(bencher: Bencher) {
    let (buf, frames) = workload();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let total = buf.len() * BUFFERS;
    let (done_tx, done) = crossbeam_channel::bounded::<()>(1);
    let reader = std::thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        let mut chunk = vec![0u8; 64 << 10];
        let mut got = 0;
        loop {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => got += n,
            }
            while got >= total {
                got -= total;
                if done_tx.send(()).is_err() {
                    return;
                }
            }
        }
    });
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
    bencher
        .counter(BytesCount::new(total))
        .counter(ItemsCount::new(frames as usize * BUFFERS))
        .bench_local(|| {
            for _ in 0..BUFFERS {
                s.write_all(&buf.clone()).unwrap_or_else(|e| panic!("{e}"));
            }
            let _ = done.recv();
        });
    drop(s);
    let _ = reader.join();
}
