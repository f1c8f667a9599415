//! RAS as it passes, for the admin port's `GET /api/ras`: every datagram the gatekeeper
//! receives on its RAS sockets and every one it sends, decoded and written as `rasgk decode
//! --json` writes a message, while someone watches. Nobody watching costs one check per batch;
//! a watcher costs a decode and a JSON value per datagram, so it is for watching a few
//! endpoints (an exam, a lab), not a storm.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::broadcast;

use crate::gatekeeper::Transmit;

/// Which way a datagram went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// To the gatekeeper.
    In,
    /// From the gatekeeper.
    Out,
}

/// One datagram seen.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Seen {
    /// Milliseconds since the gatekeeper started.
    pub at_ms: f64,
    /// To or from the gatekeeper.
    pub direction: Direction,
    /// The gatekeeper's address it came to or left from (the discovery address, a C-LAN's).
    pub local: SocketAddr,
    /// The endpoint's.
    pub peer: SocketAddr,
    /// The message's short name (`GRQ`, `RCF`, …); `None` for a datagram that does not
    /// decode.
    #[serde(rename = "type")]
    pub kind: Option<&'static str>,
    /// Its `requestSeqNum`.
    pub seq: Option<u16>,
    /// Every field, as `rasgk decode --json` writes a message's (null when it does not
    /// decode).
    pub message: serde_json::Value,
    /// Why it does not decode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The datagram as it went, in hex (what `rasgk decode` reads).
    pub octets: String,
}

/// The sender side of `/api/ras`.
#[derive(Clone)]
pub(super) struct Tap {
    tx: broadcast::Sender<Arc<Seen>>,
    started: Instant,
}

impl Tap {
    /// A tap for a gatekeeper that starts now.
    pub fn new() -> Tap {
        // A watcher that falls behind skips what it missed (Lagged); RAS never waits for it.
        let (tx, _) = broadcast::channel(4096);
        Tap {
            tx,
            started: Instant::now(),
        }
    }

    /// A new watcher.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Seen>> {
        self.tx.subscribe()
    }

    /// Itself while anyone watches (asked once per wake of the state task: counting the
    /// watchers takes a lock).
    pub fn if_watched(&self) -> Option<&Tap> {
        (self.tx.receiver_count() > 0).then_some(self)
    }

    /// A datagram `peer` sent to `local`.
    pub fn received(&self, local: SocketAddr, peer: SocketAddr, datagram: &[u8]) {
        self.seen(Direction::In, local, peer, datagram);
    }

    /// Datagrams about to be sent.
    pub fn sending(&self, out: &[Transmit]) {
        for transmit in out {
            self.seen(
                Direction::Out,
                transmit.local,
                transmit.to,
                &transmit.payload,
            );
        }
    }

    fn seen(&self, direction: Direction, local: SocketAddr, peer: SocketAddr, datagram: &[u8]) {
        let (kind, seq, message, error) = match crate::ras::decode(datagram) {
            Ok(message) => (
                Some(crate::ras::kind(&message).short_name()),
                Some(crate::ras::request_seq_num(&message)),
                crate::ras::to_json(&message),
                None,
            ),
            Err(error) => (None, None, serde_json::Value::Null, Some(error.to_string())),
        };
        let seen = Seen {
            at_ms: self.started.elapsed().as_secs_f64() * 1e3,
            direction,
            local,
            peer,
            kind,
            seq,
            message,
            error,
            octets: datagram.iter().map(|b| format!("{b:02x}")).collect(),
        };
        // No watcher left between the check and the send is not an error.
        let _ = self.tx.send(Arc::new(seen));
    }
}
