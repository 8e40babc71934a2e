//! The server in-process, with a handler that echoes: bodies whole, `100 Continue`, a request
//! too slow to arrive, and room made at the connection bound.

use super::*;
use std::io::{Read, Write};
use std::net::TcpStream;

/// Answers with the method, the target and the body it got.
struct Echo;

impl Handler for Echo {
    fn handle(&self, request: Request) -> Response {
        let text = format!(
            "{} {} {}",
            request.method,
            request.target,
            String::from_utf8_lossy(&request.body)
        );
        Response {
            status: 200,
            content_type: "text/plain".into(),
            body: Body::Full(text.into_bytes()),
            headers: Vec::new(),
        }
    }
}

fn serve(limits: Limits) -> Server {
    start("http-test", "127.0.0.1:0", limits, Arc::new(Echo)).expect("listen")
}

fn exchange(server: &Server, raw: &[u8]) -> String {
    let mut s = TcpStream::connect(server.addr).expect("connect");
    s.write_all(raw).expect("send");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
fn a_body_is_handed_over_whole() {
    let server = serve(Limits::default());
    let out = exchange(
        &server,
        b"POST /x?y=1 HTTP/1.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
    );
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.ends_with("POST /x?y=1 hello"), "{out}");
}

#[test]
fn a_client_that_expects_100_continue_gets_it_then_the_answer() {
    let server = serve(Limits::default());
    let mut s = TcpStream::connect(server.addr).expect("connect");
    s.write_all(b"POST / HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n")
        .expect("send the head");
    let mut first = [0u8; 25];
    s.read_exact(&mut first).expect("read 100 Continue");
    assert_eq!(&first, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(b"ok").expect("send the body");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.ends_with("POST / ok"), "{out}");
}

#[test]
fn a_request_that_does_not_arrive_in_time_is_answered_408() {
    let server = serve(Limits {
        read_timeout: Duration::from_millis(200),
        ..Limits::default()
    });
    let out = exchange(&server, b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
    assert!(out.starts_with("HTTP/1.1 408 "), "{out}");
}

#[test]
fn at_the_connection_bound_an_idle_connection_makes_room() {
    let server = serve(Limits {
        max_connections: 2,
        ..Limits::default()
    });
    let idle: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(server.addr).expect("connect"))
        .collect();
    let out = exchange(&server, b"GET /third HTTP/1.0\r\n\r\n");
    assert!(out.ends_with("GET /third "), "{out}");
    drop(idle);
}
