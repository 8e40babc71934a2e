//! One request head read from the bytes a client sent: httparse reads the syntax, and this
//! module applies the server's rules on top: the head's size and header count, one way of
//! framing the body (a single Content-Length), and that length within the limit — all decided
//! before a byte of the body is read or any room for it is taken.

use super::Limits;

/// A request head that passed every rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) method: String,
    /// The request target as sent (`/path?query`).
    pub(crate) target: String,
    /// Header names and values in the order sent (values decoded lossily as UTF-8).
    pub(crate) headers: Vec<(String, String)>,
    /// The body's length from Content-Length (0 without one), at most the limit.
    pub(crate) body_len: usize,
    /// The connection ends after the answer (HTTP/1.0, or `Connection: close`).
    pub(crate) close: bool,
    /// The client waits for `100 Continue` before it sends the body.
    pub(crate) expect_continue: bool,
}

/// What the bytes read so far hold.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// Not a whole head yet: read more.
    Partial,
    /// A whole head, and how many bytes of the buffer it took.
    Done(Head, usize),
}

/// A request refused before it is answered: the status and why. The connection ends after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) status: u16,
    pub(crate) message: String,
}

fn refuse(status: u16, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        message: message.into(),
    }
}

/// Read a head from the start of `buf`.
pub(crate) fn parse(buf: &[u8], limits: &Limits) -> Result<Parsed, Refusal> {
    let mut slots = vec![httparse::EMPTY_HEADER; limits.max_headers];
    let mut req = httparse::Request::new(&mut slots);
    let too_big = || {
        refuse(
            431,
            format!("the request head is over {} bytes", limits.max_head),
        )
    };
    let used = match req.parse(buf) {
        Ok(httparse::Status::Partial) if buf.len() >= limits.max_head => return Err(too_big()),
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        Ok(httparse::Status::Complete(n)) if n > limits.max_head => return Err(too_big()),
        Ok(httparse::Status::Complete(n)) => n,
        Err(httparse::Error::TooManyHeaders) => {
            return Err(refuse(
                431,
                format!("the request has over {} header lines", limits.max_headers),
            ))
        }
        Err(e) => return Err(refuse(400, format!("malformed request head: {e}"))),
    };
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            let value = String::from_utf8_lossy(h.value).trim().to_string();
            (h.name.to_string(), value)
        })
        .collect();
    let body_len = body_length(&headers, limits)?;
    let has = |name: &str, token: &str| {
        headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    let http10 = req.version == Some(0);
    let close = has("Connection", "close") || (http10 && !has("Connection", "keep-alive"));
    let head = Head {
        method: req.method.unwrap_or_default().to_string(),
        target: req.path.unwrap_or_default().to_string(),
        expect_continue: has("Expect", "100-continue"),
        headers,
        body_len,
        close,
    };
    Ok(Parsed::Done(head, used))
}

/// The body's length: one Content-Length of plain digits within the limit, or none. A
/// Transfer-Encoding is refused (with a Content-Length it is a framing two readers could
/// disagree on; alone, this server does not read chunked bodies).
fn body_length(headers: &[(String, String)], limits: &Limits) -> Result<usize, Refusal> {
    let named = |name: &'static str| {
        headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let lengths: Vec<&str> = named("Content-Length").collect();
    let coded = named("Transfer-Encoding").next().is_some();
    if coded && !lengths.is_empty() {
        return Err(refuse(
            400,
            "the request has both Content-Length and Transfer-Encoding",
        ));
    }
    if coded {
        return Err(refuse(
            411,
            "send the body with a Content-Length (chunked bodies are not read here)",
        ));
    }
    let value = match lengths.as_slice() {
        [] => return Ok(0),
        [one] => *one,
        _ => return Err(refuse(400, "the request has more than one Content-Length")),
    };
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refuse(
            400,
            format!("Content-Length `{value}` is not a number of bytes"),
        ));
    }
    let too_large = || {
        refuse(
            413,
            format!(
                "the body ({value} bytes) is over the limit of {} bytes",
                limits.max_body
            ),
        )
    };
    // Digits only: the only way to fail is a number past u64, which is over any limit too.
    let n = value.parse::<u64>().map_err(|_| too_large())?;
    match usize::try_from(n) {
        Ok(n) if n <= limits.max_body => Ok(n),
        _ => Err(too_large()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Result<Parsed, Refusal> {
        parse(text.as_bytes(), &Limits::default())
    }

    fn status(text: &str) -> u16 {
        match head(text) {
            Err(r) => r.status,
            Ok(p) => panic!("accepted: {p:?}"),
        }
    }

    #[test]
    fn a_plain_request_is_read_with_its_length_and_keep_alive() {
        let text = "POST /a?b=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
        let Ok(Parsed::Done(h, used)) = head(text) else {
            panic!("not read");
        };
        assert_eq!((h.method.as_str(), h.target.as_str()), ("POST", "/a?b=1"));
        assert_eq!((h.body_len, h.close, used), (5, false, text.len() - 5));
        assert_eq!(head("GET / HTTP/1.1\r\nHost: x\r\n"), Ok(Parsed::Partial));
        let Ok(Parsed::Done(h, _)) = head("GET / HTTP/1.0\r\n\r\n") else {
            panic!("not read");
        };
        assert!(h.close, "HTTP/1.0 ends the connection");
    }

    #[test]
    fn framing_that_two_readers_could_disagree_on_is_refused() {
        let both = "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(status(both), 400);
        let two = "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n";
        assert_eq!(status(two), 400);
        assert_eq!(
            status("POST / HTTP/1.1\r\nContent-Length: 3, 4\r\n\r\n"),
            400
        );
        assert_eq!(status("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
        assert_eq!(status("POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n"), 400);
        assert_eq!(
            status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            411
        );
    }

    #[test]
    fn lengths_past_the_limit_or_past_u64_are_too_large() {
        for n in [
            "65537",
            "99999999999999",
            "18446744073709551615",
            "99999999999999999999999999",
        ] {
            assert_eq!(
                status(&format!("POST / HTTP/1.1\r\nContent-Length: {n}\r\n\r\n")),
                413,
                "{n}"
            );
        }
    }

    #[test]
    fn heads_too_long_or_with_too_many_lines_are_refused() {
        let long = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
        assert_eq!(status(&long), 431);
        let unfinished = format!("GET / HTTP/1.1\r\nX: {}", "a".repeat(20_000));
        assert_eq!(status(&unfinished), 431);
        let many: String = (0..65).map(|i| format!("X-{i}: 1\r\n")).collect();
        assert_eq!(status(&format!("GET / HTTP/1.1\r\n{many}\r\n")), 431);
        let enough: String = (0..64).map(|i| format!("X-{i}: 1\r\n")).collect();
        assert!(head(&format!("GET / HTTP/1.1\r\n{enough}\r\n")).is_ok());
    }

    #[test]
    fn garbage_is_a_bad_request() {
        assert_eq!(status("\x01\x02 nonsense\r\n\r\n"), 400);
    }
}
