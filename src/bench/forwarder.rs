//! The relay's ceiling: a minimal TCP frame forwarder, written the way the gatekeeper's
//! socket glue is (`server::signalling`), without the gatekeeper.
//!
//! ```text
//!   listener ──accepted──▶ state task (pairs the 1st and 2nd connection, the 3rd and 4th, …)
//!   connection task ──frames (TPKT payloads)──▶ state task ──Send(frame)──▶ the peer's task
//! ```
//!
//! Each connection has a task that reads through a [`tpkt::Assembler`] and hands whole
//! frames to one state task over a bounded channel, and writes what the state task orders,
//! as the gatekeeper's connection tasks do; the state task writes each frame, framed anew,
//! to the connection paired with the one it came on. It reads nothing of what the frames
//! say: what the gatekeeper does beyond it — Q.931 and the UUIE read, the call found, the
//! call reference rewritten — is what the relay bench measures.

use std::collections::HashMap;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

use crate::tpkt;

/// Events queued for the state task (as the gatekeeper's glue queues them).
const EVENTS_QUEUED: usize = 8192;

/// Octets one read takes (as the gatekeeper's glue reads).
const READ_OCTETS: usize = 1024;

/// The longest frame taken (`[limits] max_frame_octets`' default).
const MAX_FRAME: u16 = 16_384;

/// What a connection task tells the state task.
enum Event {
    Frames(u64, Vec<Bytes>),
    Closed(u64),
}

/// Forwards frames between paired connections accepted on `listener` until `stopped` hears.
pub(super) async fn forward(listener: TcpListener, mut stopped: oneshot::Receiver<()>) {
    let (events, mut inbox) = mpsc::channel(EVENTS_QUEUED);
    let mut orders: HashMap<u64, mpsc::UnboundedSender<Bytes>> = HashMap::new();
    let mut peers: HashMap<u64, u64> = HashMap::new();
    let mut waiting: Option<u64> = None;
    let mut next = 0u64;
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                next += 1;
                let id = next;
                let (order, orders_in) = mpsc::unbounded_channel();
                orders.insert(id, order);
                match waiting.take() {
                    Some(first) => {
                        peers.insert(first, id);
                        peers.insert(id, first);
                    }
                    None => waiting = Some(id),
                }
                tokio::spawn(drive(id, stream, orders_in, events.clone()));
            }
            Some(event) = inbox.recv() => match event {
                Event::Frames(id, frames) => {
                    let Some(order) = peers.get(&id).and_then(|peer| orders.get(peer)) else {
                        continue;
                    };
                    for frame in frames {
                        if let Ok(framed) = tpkt::frame(&frame) {
                            let _ = order.send(framed);
                        }
                    }
                }
                Event::Closed(id) => {
                    orders.remove(&id);
                    if let Some(peer) = peers.remove(&id) {
                        peers.remove(&peer);
                    }
                }
            },
        }
    }
}

/// One connection: reads frames and reports them, writes what it is ordered to.
async fn drive(
    id: u64,
    mut stream: TcpStream,
    mut orders: mpsc::UnboundedReceiver<Bytes>,
    events: mpsc::Sender<Event>,
) {
    let _ = stream.set_nodelay(true);
    let mut reader = tpkt::Assembler::new(MAX_FRAME);
    let mut buffer = [0u8; READ_OCTETS];
    loop {
        tokio::select! {
            order = orders.recv() => match order {
                Some(frame) => {
                    if stream.write_all(&frame).await.is_err() {
                        break;
                    }
                }
                None => return,
            },
            read = stream.read(&mut buffer) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut frames = Vec::new();
                    if reader.read(&buffer[..n], &mut frames).is_err() {
                        break;
                    }
                    if !frames.is_empty() && events.send(Event::Frames(id, frames)).await.is_err() {
                        return;
                    }
                }
            },
        }
    }
    let _ = events.send(Event::Closed(id)).await;
}
