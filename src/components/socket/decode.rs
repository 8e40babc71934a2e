//! Frames into tuple values: the syslog reader, `stdin`'s record readers (a fresh reader per
//! connection, so a CSV header or an open JSON value belongs to its connection), or one `line`
//! per frame; with the source's field (`socket_remote`) where `fields` puts it.

use super::syslog;
use crate::components::http::record::{self, Layout, Read};
use crate::components::parse::spec::Spec;
use crate::components::parse::Parser;
use crate::tuple::{Value, Values};
use std::net::SocketAddr;

/// The peer's address as a field.
const REMOTE_FIELD: &str = "socket_remote";

pub(crate) fn is_source_field(name: &str) -> bool {
    name == REMOTE_FIELD
}

/// What the server hands the spout.
#[derive(Debug)]
pub(crate) enum Item {
    Record(Values),
    /// A frame that could not be read (its text, shortened) and why.
    Bad(String, String),
}

/// How frames are read.
#[derive(Clone)]
pub(crate) enum Kind {
    Lines,
    Records(Spec),
    Syslog,
}

/// What every connection shares.
#[derive(Clone)]
pub(crate) struct Decode {
    pub(crate) kind: Kind,
    pub(crate) layout: Layout,
    pub(crate) max_record: usize,
}

/// One connection's (or datagram's) reading state.
pub(crate) struct Conn {
    parser: Option<Parser>,
    source: Vec<Value>,
}

impl Decode {
    /// The reading state for a connection from `peer`.
    pub(crate) fn conn(&self, peer: SocketAddr) -> Conn {
        let parser = match &self.kind {
            Kind::Records(spec) => Parser::new(spec).ok().map(|mut p| {
                p.set_max_record(self.max_record);
                p
            }),
            _ => None,
        };
        Conn {
            parser,
            source: self.source(peer),
        }
    }

    /// The source fields' values for `peer`.
    fn source(&self, peer: SocketAddr) -> Vec<Value> {
        self.layout
            .source_fields()
            .iter()
            .map(|_| Value::str(&peer.to_string()))
            .collect()
    }

    /// Read one frame into `out`.
    pub(crate) fn frame(&self, conn: &mut Conn, bytes: &[u8], out: &mut Vec<Item>) {
        let text = String::from_utf8_lossy(bytes);
        match &self.kind {
            Kind::Syslog => match syslog::parse(&text) {
                Ok(m) => out.push(Item::Record(self.layout.fill(m.values(), &conn.source))),
                Err(why) => out.push(Item::Bad(shorten(&text), why)),
            },
            Kind::Lines => {
                if !text.trim().is_empty() {
                    let values = smallvec::smallvec![Value::str(&text)];
                    out.push(Item::Record(self.layout.fill(values, &conn.source)));
                }
            }
            Kind::Records(_) => {
                let mut read = Read::default();
                for line in text.split('\n') {
                    record::read_line(conn.parser.as_mut(), line, &mut read);
                }
                self.take(conn, read, out);
            }
        }
    }

    /// The end of a connection (or a datagram): a record left open is an error.
    pub(crate) fn end(&self, conn: &mut Conn, what: &str, out: &mut Vec<Item>) {
        let mut read = Read::default();
        record::read_end(conn.parser.as_mut(), what, &mut read);
        self.take(conn, read, out);
    }

    fn take(&self, conn: &Conn, read: Read, out: &mut Vec<Item>) {
        for r in read.records {
            out.push(Item::Record(self.layout.fill(r, &conn.source)));
        }
        for (text, why) in read.bad {
            out.push(Item::Bad(text, why));
        }
    }
}

/// A frame's text as kept on the `errors` stream: at most 4 KiB.
fn shorten(text: &str) -> String {
    let mut end = text.len().min(4096);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The reader's fields and how frames are read, for the spout's arguments.
pub(crate) fn kind_and_fields(
    args: &serde_json::Map<String, serde_json::Value>,
) -> Result<(Kind, Vec<String>), String> {
    match args.get("format").and_then(|f| f.as_str()) {
        None if !args.contains_key("format") => {
            Ok((Kind::Lines, vec![record::LINE_FIELD.to_string()]))
        }
        Some("syslog") => Ok((
            Kind::Syslog,
            syslog::FIELDS.iter().map(|f| f.to_string()).collect(),
        )),
        _ => {
            let spec = record::reader_spec(args, &is_source_field)?;
            let names = spec.field_names();
            Ok((Kind::Records(spec), names))
        }
    }
}
