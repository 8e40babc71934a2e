//! Connection authentication with the cluster secret: a mutual challenge–response in
//! control frames, before any other frame. The secret never crosses the wire.
//!
//! 1. acceptor → connector: `CHALLENGE` with a 32-byte random nonce `ns`;
//! 2. connector → acceptor: `PROOF` = HMAC-SHA256(secret, "storm-auth-v1 client" ‖ context ‖ ns)
//!    followed by its own 32-byte nonce `nc`;
//! 3. acceptor → connector: `ACCEPTED` = HMAC-SHA256(secret, "storm-auth-v1 server" ‖ context ‖ nc),
//!    proving the acceptor knows the secret too. A bad proof closes the connection.
//!
//! `context` names what the connection is for (`"worker"`, `"nimbus"`, …), so a proof made for
//! one service is not accepted by another. Comparisons are constant-time (`Mac::verify_slice`).
//! Storm's counterpart is its SASL DIGEST-MD5 handshake on Netty worker connections.
//!
//! The acceptor side is sans-IO (`ServerHandshake`) so a mio loop can drive it; `client` and
//! `server` run either side to completion on a blocking stream.

use super::frame::{self, RawFrame, HEADER_LEN};
use crate::config::Config;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use std::io::{Read, Write};

type HmacSha256 = Hmac<Sha256>;

/// Control frame kinds of the handshake.
const KIND_CHALLENGE: u8 = 16;
const KIND_PROOF: u8 = 17;
const KIND_ACCEPTED: u8 = 18;
const NONCE_LEN: usize = 32;
const MAC_LEN: usize = 32;
/// No handshake frame is longer than this: larger headers are refused before any buffering.
pub(crate) const MAX_HANDSHAKE_FRAME: usize = HEADER_LEN + MAC_LEN + NONCE_LEN;

/// The shared cluster secret. Its `Debug` never shows it.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl Secret {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Secret {
        Secret(bytes.into())
    }

    /// `storm.cluster.secret` from the configuration, else `STORM_CLUSTER_SECRET`; an empty
    /// value counts as unset.
    pub(crate) fn from_config(config: &Config) -> Option<Secret> {
        let configured = config
            .get("storm.cluster.secret")
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let value = configured.or_else(|| std::env::var("STORM_CLUSTER_SECRET").ok())?;
        (!value.is_empty()).then(|| Secret(value.into_bytes()))
    }

    fn mac(&self, role: &str, context: &str, nonce: &[u8]) -> HmacSha256 {
        // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
        let mut mac = match HmacSha256::new_from_slice(&self.0) {
            Ok(m) => m,
            Err(_) => unreachable_key(),
        };
        mac.update(b"storm-auth-v1 ");
        mac.update(role.as_bytes());
        mac.update(&(context.len() as u32).to_be_bytes());
        mac.update(context.as_bytes());
        mac.update(nonce);
        mac
    }

    fn prove(&self, role: &str, context: &str, nonce: &[u8]) -> Vec<u8> {
        self.mac(role, context, nonce)
            .finalize()
            .into_bytes()
            .to_vec()
    }

    fn verify(&self, role: &str, context: &str, nonce: &[u8], proof: &[u8]) -> bool {
        self.mac(role, context, nonce).verify_slice(proof).is_ok()
    }
}

/// The loud warning for a service listening beyond loopback without a secret.
pub(crate) fn warn_if_exposed(
    what: &str,
    addr: std::net::SocketAddr,
    secret: Option<&Secret>,
) -> bool {
    let exposed = secret.is_none() && !addr.ip().is_loopback();
    if exposed {
        tracing::warn!(
            "{what} listens on {addr}, beyond loopback, without storm.cluster.secret: any host \
             that reaches it is trusted; set storm.cluster.secret or STORM_CLUSTER_SECRET"
        );
    }
    exposed
}

#[cold]
fn unreachable_key() -> ! {
    // Documented by the hmac crate: HMAC takes keys of any length.
    unreachable!("HMAC-SHA256 accepts keys of any length")
}

/// Why a handshake failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AuthError {
    #[error("the peer did not prove the cluster secret")]
    BadProof,
    #[error("unexpected handshake message: {0}")]
    Protocol(&'static str),
    #[error("handshake I/O: {0}")]
    Io(#[from] std::io::Error),
}

fn nonce() -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    rand::rng().fill_bytes(&mut n);
    n
}

fn control(kind: u8, body: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    frame::encode_raw(
        &RawFrame {
            kind,
            dest: 0,
            body,
        },
        &mut out,
    );
    out
}

/// The acceptor's side, sans-IO: send [`ServerHandshake::challenge`], feed the connector's first
/// frame to [`ServerHandshake::answer`], send back what it returns.
pub(crate) struct ServerHandshake {
    secret: Secret,
    context: String,
    nonce: [u8; NONCE_LEN],
}

impl ServerHandshake {
    pub(crate) fn new(secret: Secret, context: &str) -> ServerHandshake {
        ServerHandshake {
            secret,
            context: context.to_string(),
            nonce: nonce(),
        }
    }

    /// The encoded challenge frame to send first.
    pub(crate) fn challenge(&self) -> Vec<u8> {
        control(KIND_CHALLENGE, self.nonce.to_vec())
    }

    /// Check the connector's proof; on success, the encoded frame proving our side.
    pub(crate) fn answer(&self, reply: &RawFrame) -> Result<Vec<u8>, AuthError> {
        let RawFrame {
            kind: KIND_PROOF,
            body,
            ..
        } = reply
        else {
            return Err(AuthError::Protocol(
                "expected a proof of the cluster secret",
            ));
        };
        if body.len() != MAC_LEN + NONCE_LEN {
            return Err(AuthError::Protocol("proof of the wrong length"));
        }
        let (proof, their_nonce) = body.split_at(MAC_LEN);
        if !self
            .secret
            .verify("client", &self.context, &self.nonce, proof)
        {
            return Err(AuthError::BadProof);
        }
        Ok(control(
            KIND_ACCEPTED,
            self.secret.prove("server", &self.context, their_nonce),
        ))
    }
}

/// Read one handshake frame from a blocking stream, refusing anything longer than a handshake.
fn read_small_frame(stream: &mut impl Read) -> Result<RawFrame, AuthError> {
    let mut buf = vec![0u8; HEADER_LEN];
    stream.read_exact(&mut buf)?;
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if HEADER_LEN + len > MAX_HANDSHAKE_FRAME {
        return Err(AuthError::Protocol("handshake frame too long"));
    }
    buf.resize(HEADER_LEN + len, 0);
    stream.read_exact(&mut buf[HEADER_LEN..])?;
    match frame::decode_raw(&buf) {
        Ok(Some((f, _))) => Ok(f),
        _ => Err(AuthError::Protocol("undecodable handshake frame")),
    }
}

/// The connector's side on a blocking stream: answer the challenge, then check the acceptor's
/// proof. Set a read timeout on the stream first so a silent peer cannot hold it forever.
pub(crate) fn client<S: Read + Write>(
    stream: &mut S,
    secret: &Secret,
    context: &str,
) -> Result<(), AuthError> {
    let RawFrame {
        kind: KIND_CHALLENGE,
        body: their_nonce,
        ..
    } = read_small_frame(stream)?
    else {
        return Err(AuthError::Protocol("expected a challenge"));
    };
    if their_nonce.len() != NONCE_LEN {
        return Err(AuthError::Protocol("challenge of the wrong length"));
    }
    let ours = nonce();
    let mut body = secret.prove("client", context, &their_nonce);
    body.extend_from_slice(&ours);
    stream.write_all(&control(KIND_PROOF, body))?;
    stream.flush()?;
    match read_small_frame(stream)? {
        RawFrame {
            kind: KIND_ACCEPTED,
            body,
            ..
        } if secret.verify("server", context, &ours, &body) => Ok(()),
        RawFrame {
            kind: KIND_ACCEPTED,
            ..
        } => Err(AuthError::BadProof),
        _ => Err(AuthError::Protocol("expected the acceptor's proof")),
    }
}

/// The acceptor's side on a blocking stream (nimbus, supervisors): challenge, check, prove.
pub(crate) fn server<S: Read + Write>(
    stream: &mut S,
    secret: &Secret,
    context: &str,
) -> Result<(), AuthError> {
    let hs = ServerHandshake::new(secret.clone(), context);
    stream.write_all(&hs.challenge())?;
    stream.flush()?;
    let reply = read_small_frame(stream)?;
    let accepted = hs.answer(&reply)?;
    stream.write_all(&accepted)?;
    stream.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn pair(server_secret: &str, client_secret: &str) -> (Result<(), String>, Result<(), String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let s = Secret::new(server_secret);
        let srv = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            server(&mut conn, &s, "worker").map_err(|e| e.to_string())
        });
        let mut conn = TcpStream::connect(addr).unwrap();
        let c = client(&mut conn, &Secret::new(client_secret), "worker").map_err(|e| e.to_string());
        drop(conn);
        (srv.join().unwrap(), c)
    }

    #[test]
    fn only_a_non_loopback_address_without_a_secret_is_exposed() {
        let lo: std::net::SocketAddr = "127.0.0.1:1".parse().unwrap();
        let any: std::net::SocketAddr = "0.0.0.0:1".parse().unwrap();
        assert!(!warn_if_exposed("t", lo, None));
        assert!(warn_if_exposed("t", any, None));
        assert!(!warn_if_exposed("t", any, Some(&Secret::new("k"))));
    }

    #[test]
    fn the_configured_secret_is_used_and_an_empty_one_is_none() {
        let mut config = Config::default();
        config.set(
            "storm.cluster.secret",
            serde_json::json!("from-config"),
            crate::config::Origin::CommandLine,
        );
        let s = Secret::from_config(&config).expect("set in the configuration");
        assert_eq!(s.0, b"from-config");
        config.set(
            "storm.cluster.secret",
            serde_json::json!(""),
            crate::config::Origin::CommandLine,
        );
        // Empty configured value: falls back to the environment, which may or may not be set.
        let env = std::env::var("STORM_CLUSTER_SECRET").unwrap_or_default();
        assert_eq!(Secret::from_config(&config).is_some(), !env.is_empty());
    }

    #[test]
    fn same_secret_authenticates_both_ways() {
        assert_eq!(pair("s3cret", "s3cret"), (Ok(()), Ok(())));
    }

    #[test]
    fn wrong_secret_is_refused() {
        let (srv, cli) = pair("s3cret", "guess");
        assert_eq!(srv, Err("the peer did not prove the cluster secret".into()));
        assert!(cli.is_err());
    }

    #[test]
    fn a_proof_for_another_context_is_refused() {
        let s = Secret::new("k");
        let hs = ServerHandshake::new(s.clone(), "nimbus");
        let mut body = s.prove("client", "worker", &hs.nonce);
        body.extend_from_slice(&[0; NONCE_LEN]);
        let got = hs.answer(&RawFrame {
            kind: KIND_PROOF,
            dest: 0,
            body,
        });
        assert!(matches!(got, Err(AuthError::BadProof)));
    }

    #[test]
    fn the_secret_never_appears_on_the_wire() {
        let s = Secret::new("very-secret-value");
        let hs = ServerHandshake::new(s.clone(), "worker");
        let mut body = s.prove("client", "worker", &hs.nonce);
        body.extend_from_slice(&[7; NONCE_LEN]);
        let proof = control(KIND_PROOF, body.clone());
        let accepted = hs
            .answer(&RawFrame {
                kind: KIND_PROOF,
                dest: 0,
                body,
            })
            .unwrap();
        for bytes in [hs.challenge(), proof, accepted] {
            assert!(!bytes
                .windows(b"very-secret-value".len())
                .any(|w| w == b"very-secret-value"));
        }
        assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
    }
}
