//! The TCP transport between workers: frames cross between two `TcpNetwork`s in this process,
//! links wait for late listeners, hostile or unauthenticated connections are closed while good
//! ones keep working, and a whole topology runs split over two networks.

use crossbeam_channel::Receiver;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;
use storm::net::auth::Secret;
use storm::net::outbound::LinkOptions;
use storm::net::Network;
use storm::placement::Placement;
use storm::runtime::message::Message;
use storm::runtime::wire as frame;
use storm::runtime::{self, TcpNetwork};

const WAIT: Duration = Duration::from_secs(10);

/// Loopback, port 0: a worker listening there gets a port of its own.
fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().expect("an address")
}

/// Where `net`'s local worker `w` listens, once it does.
fn bound(net: &TcpNetwork, w: usize) -> SocketAddr {
    net.peers().get(w).expect("worker listens")
}

fn options() -> LinkOptions {
    LinkOptions {
        linger: Duration::from_secs(2),
        handshake_timeout: Duration::from_secs(2),
        ..LinkOptions::default()
    }
}

/// Two networks: worker 0 local to the first, worker 1 to the second, both listening.
struct Pair {
    a: TcpNetwork,
    b: TcpNetwork,
    into_a: Receiver<Vec<u8>>,
    into_b: Receiver<Vec<u8>>,
    addr_b: SocketAddr,
}

fn pair(secret_a: Option<&str>, secret_b: Option<&str>) -> Pair {
    let addrs: BTreeMap<usize, SocketAddr> = [(0, any_port()), (1, any_port())].into();
    let a = TcpNetwork::new(addrs.clone(), [0], secret_a.map(Secret::new)).with_options(options());
    let b = TcpNetwork::new(addrs, [1], secret_b.map(Secret::new)).with_options(options());
    let (tx_a, into_a) = crossbeam_channel::bounded(64);
    let (tx_b, into_b) = crossbeam_channel::bounded(64);
    a.listen(0, tx_a).expect("listen 0");
    b.listen(1, tx_b).expect("listen 1");
    // Each learns where the other listens, as workers do from their heartbeats.
    a.peers().set(1, bound(&b, 1));
    b.peers().set(0, bound(&a, 0));
    let addr_b = bound(&b, 1);
    Pair {
        a,
        b,
        into_a,
        into_b,
        addr_b,
    }
}

fn eos(from: u32, to: u32) -> Vec<u8> {
    let mut buf = Vec::new();
    frame::encode(&Message::Eos { from, to }, &mut buf);
    buf
}

/// Every frame in the buffers received within `WAIT` until `n` frames have arrived.
fn receive(rx: &Receiver<Vec<u8>>, n: usize) -> Vec<Message> {
    let mut got = Vec::new();
    while got.len() < n {
        let Ok(buf) = rx.recv_timeout(WAIT) else {
            break;
        };
        let mut at = 0;
        while at < buf.len() {
            let (f, used) = frame::decode(&buf[at..]).expect("valid").expect("whole");
            got.push(f);
            at += used;
        }
    }
    got
}

/// Whether the server closes a raw connection after it sent `bytes` (reads until EOF or reset).
fn closed_after(addr: SocketAddr, bytes: &[u8]) -> bool {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(WAIT)).expect("timeout");
    let _ = s.write_all(bytes);
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn frames_cross_both_ways_between_two_networks() {
    let p = pair(None, None);
    let ab = p.a.connect(0, 1).expect("link 0→1");
    let ba = p.b.connect(1, 0).expect("link 1→0");
    for i in 0..100 {
        ab.send(eos(i, 7)).expect("send");
    }
    ba.send(eos(9, 3)).expect("send");
    let got = receive(&p.into_b, 100);
    let want: Vec<Message> = (0..100).map(|i| Message::Eos { from: i, to: 7 }).collect();
    assert_eq!(got, want, "in order, none lost");
    assert_eq!(receive(&p.into_a, 1), vec![Message::Eos { from: 9, to: 3 }]);
}

#[test]
fn a_port_zero_listener_reports_the_port_it_bound() {
    let addrs: BTreeMap<usize, SocketAddr> = [(3, "127.0.0.1:0".parse().expect("addr"))].into();
    let net = TcpNetwork::new(addrs, [3], None);
    let (tx, _rx) = crossbeam_channel::bounded(1);
    net.listen(3, tx).expect("listen");
    let bound = net.bound();
    assert_eq!(bound.len(), 1);
    assert_eq!(bound[0].0, 3);
    assert_ne!(bound[0].1.port(), 0);
    // A worker that is not local has no listener here.
    let (tx, _rx) = crossbeam_channel::bounded(1);
    assert!(net.listen(4, tx).is_err());
}

/// The peer starts late, and its address is learned only then: the link waits for both.
#[test]
fn a_link_waits_for_a_listener_that_starts_late() {
    let a = TcpNetwork::new([(0, any_port())].into(), [0], None).with_options(options());
    let link = a.connect(0, 1).expect("link");
    link.send(eos(1, 2)).expect("queued while the peer is down");
    // The peer's late start is what this test is about.
    std::thread::sleep(Duration::from_millis(300));
    let b = TcpNetwork::new([(1, any_port())].into(), [1], None);
    let (tx, rx) = crossbeam_channel::bounded(4);
    b.listen(1, tx).expect("listen");
    a.peers().set(1, bound(&b, 1));
    assert_eq!(receive(&rx, 1), vec![Message::Eos { from: 1, to: 2 }]);
}

#[test]
fn a_link_reconnects_when_its_peer_restarts() {
    let a = TcpNetwork::new([(0, any_port())].into(), [0], None).with_options(options());
    let link = a.connect(0, 1).expect("link");
    let first = TcpNetwork::new([(1, any_port())].into(), [1], None);
    let (tx, rx) = crossbeam_channel::bounded(4);
    first.listen(1, tx).expect("listen");
    a.peers().set(1, bound(&first, 1));
    link.send(eos(1, 1)).expect("send");
    assert_eq!(receive(&rx, 1), vec![Message::Eos { from: 1, to: 1 }]);
    drop(first);
    // The peer comes back on another port, which the link learns; frames sent meanwhile may
    // be lost (as with Storm's Netty client), but the link gets through again.
    let second = TcpNetwork::new([(1, any_port())].into(), [1], None);
    let (tx, rx) = crossbeam_channel::bounded(64);
    second.listen(1, tx).expect("listen again");
    a.peers().set(1, bound(&second, 1));
    let mut arrived = None;
    for i in 0..100 {
        link.send(eos(2, i)).expect("send");
        if let Ok(buf) = rx.recv_timeout(Duration::from_millis(100)) {
            arrived = frame::decode(&buf).ok().flatten().map(|(f, _)| f);
            break;
        }
    }
    assert!(
        matches!(arrived, Some(Message::Eos { from: 2, .. })),
        "{arrived:?}"
    );
}

#[test]
fn dropping_a_link_to_a_peer_that_never_came_up_does_not_hang() {
    let a = TcpNetwork::new([(0, any_port())].into(), [0], None).with_options(LinkOptions {
        linger: Duration::from_millis(300),
        ..options()
    });
    let link = a.connect(0, 1).expect("link");
    link.send(eos(1, 2)).expect("queued");
    let t = std::time::Instant::now();
    drop(link);
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
}

#[test]
fn garbage_and_oversized_frames_close_the_connection_not_the_worker() {
    let p = pair(None, None);
    // Kind 3 is no frame kind; the header of an oversized frame is refused before its body.
    assert!(closed_after(p.addr_b, &[0, 0, 0, 1, 3, 0, 0, 0, 0, 0]));
    assert!(closed_after(
        p.addr_b,
        &[0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0]
    ));
    let mut tuples_frame = eos(1, 1);
    tuples_frame[4] = 1; // a tuples frame whose count overruns its payload
    assert!(closed_after(p.addr_b, &tuples_frame));
    assert!(p.into_b.try_recv().is_err(), "nothing bad was handed on");
    let ab = p.a.connect(0, 1).expect("link");
    ab.send(eos(4, 5)).expect("send");
    assert_eq!(receive(&p.into_b, 1), vec![Message::Eos { from: 4, to: 5 }]);
}

#[test]
fn with_a_secret_only_peers_proving_it_are_served() {
    let p = pair(Some("s3cret"), Some("s3cret"));
    // No handshake: a frame sent straight away is refused; so is a peer that says nothing.
    assert!(closed_after(p.addr_b, &eos(1, 1)));
    let silent = std::time::Instant::now();
    assert!(closed_after(p.addr_b, &[]));
    assert!(
        silent.elapsed() >= Duration::from_secs(1),
        "closed at the handshake deadline"
    );
    // The wrong secret: the link never gets through.
    let addrs: BTreeMap<usize, SocketAddr> = [(1, p.addr_b)].into();
    let intruder = TcpNetwork::new(addrs, [2], Some(Secret::new("guess"))).with_options(options());
    let bad = intruder.connect(2, 1).expect("link");
    bad.send(eos(66, 66)).expect("queued");
    // The right secret works, and only its frame arrives.
    let good = p.a.connect(0, 1).expect("link");
    good.send(eos(4, 5)).expect("send");
    assert_eq!(receive(&p.into_b, 1), vec![Message::Eos { from: 4, to: 5 }]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        p.into_b.try_recv().is_err(),
        "the intruder's frame never arrived"
    );
    drop(bad);
}

#[test]
fn a_full_receive_channel_holds_the_sender_back() {
    let addrs: BTreeMap<usize, SocketAddr> = [(0, any_port()), (1, any_port())].into();
    let a = TcpNetwork::new(addrs.clone(), [0], None).with_options(options());
    let b = TcpNetwork::new(addrs, [1], None);
    let (tx, rx) = crossbeam_channel::bounded(1);
    b.listen(1, tx).expect("listen");
    a.peers().set(1, bound(&b, 1));
    let link = a.connect(0, 1).expect("link");
    // 1 MiB control frames: nobody reads `rx`, so the sender must block long before 256 MiB.
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = sent.clone();
    let sender = std::thread::spawn(move || {
        let mut big = Vec::new();
        frame::encode(
            &Message::Control {
                kind: 20,
                body: vec![0; 1 << 20],
            },
            &mut big,
        );
        for _ in 0..256 {
            if link.send(big.clone()).is_err() {
                break;
            }
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        link
    });
    // Held back: no frame more gets through in a quarter of a second.
    let mut before = usize::MAX;
    let stalled_at = crate::support::poll_until(
        "the sender to be held back",
        Duration::from_secs(60),
        Duration::from_millis(250),
        || {
            let now = sent.load(std::sync::atomic::Ordering::SeqCst);
            let stalled = (now == before).then_some(now);
            before = now;
            stalled
        },
    );
    assert!(
        stalled_at < 128,
        "sender was not held back: {stalled_at} MiB sent"
    );
    // Draining lets it finish.
    let mut frames = 0;
    while frames < 256 {
        let buf = rx.recv_timeout(WAIT).expect("more frames");
        let mut at = 0;
        while at < buf.len() {
            let (_, used) = frame::decode(&buf[at..]).expect("valid").expect("whole");
            at += used;
            frames += 1;
        }
    }
    drop(sender.join().expect("sender"));
}

#[test]
fn a_topology_runs_split_over_two_networks() {
    // Every tuple crosses the network whole: the count is not given sums.
    let opts = storm::topology::LoadOptions {
        overrides: vec!["topology.partial.aggregation=false".into()],
        filter: None,
    };
    let loaded = storm::topology::load_file(
        std::path::Path::new("tests/fixtures/net/generate-count.yaml"),
        &opts,
    )
    .expect("fixture loads");
    let topology = Arc::new(loaded.topology);
    let plan = storm::model::plan::Plan::new(&topology);
    let placement = Placement::round_robin(&plan, 2);
    let addrs: BTreeMap<usize, SocketAddr> = [(0, any_port()), (1, any_port())].into();
    let net0 = TcpNetwork::new(addrs.clone(), [0], None).with_options(options());
    let net1 = TcpNetwork::new(addrs, [1], None).with_options(options());
    let run0 = runtime::start(topology.clone(), &placement, &[0], &net0).expect("worker 0");
    let run1 = runtime::start(topology, &placement, &[1], &net1).expect("worker 1");
    // Each started listening on a port of its own; its links wait until they learn the other's.
    net0.peers().set(1, bound(&net1, 1));
    net1.peers().set(0, bound(&net0, 0));
    let w1 = std::thread::spawn(move || run1.wait());
    let r0 = run0.wait().expect("worker 0 ran");
    let r1 = w1.join().expect("joined").expect("worker 1 ran");
    let figure = |id: &str, f: fn(&runtime::metrics::ComponentReport) -> u64| -> u64 {
        [&r0, &r1]
            .iter()
            .flat_map(|r| r.components.iter())
            .filter(|c| c.id == id)
            .map(f)
            .sum()
    };
    assert_eq!(figure("gen", |c| c.emitted), 20_000);
    assert_eq!(figure("count", |c| c.executed), 20_000);
    assert_eq!(figure("count", |c| c.emitted), 3, "one total per word");
    assert_eq!(figure("sink", |c| c.executed), 3);
    assert_eq!(figure("gen", |c| c.acked), 20_000, "every tree completed");
    assert_eq!(r0.lost + r1.lost, 0);
    // Both workers did part of the work, so tuples crossed the network.
    for r in [&r0, &r1] {
        assert!(r
            .components
            .iter()
            .any(|c| c.id == "count" && c.executed > 0));
    }
}
