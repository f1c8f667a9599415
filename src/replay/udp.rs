//! Replay over UDP on loopback: one socket per captured phone, requests sent in capture order
//! to a running gatekeeper, replies matched by sequence number.
//!
//! Each phone's socket is bound to the phone's captured IP when that is a loopback address
//! (127.0.0.0/8, ::1), else to the loopback address of its family, always on a port the kernel picks. Without `pace` a
//! request is sent only once the previous one was answered or gave up, so the order is the
//! capture's and nothing overlaps; with `pace` each request leaves at its captured offset
//! from the first, whether or not earlier ones were answered. A request unanswered after
//! `timeout` is sent again, `retries` times at most. Every wait is bounded: the whole replay
//! gives up after the capture's span (when paced) plus each request's full retry budget.

use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use crate::ras;

use super::outcome::ReplySummary;
use super::plan::Plan;
use super::session::{Prepared, Session};
use super::ReplayError;

/// How a UDP replay runs.
#[derive(Debug, Clone, Copy)]
pub struct UdpOptions {
    /// The gatekeeper's discovery address (the captured discovery address maps to it).
    pub target: SocketAddr,
    /// Keep the captured timing instead of sending as fast as the replies allow.
    pub pace: bool,
    /// How long to wait for a reply before sending again.
    pub timeout: Duration,
    /// How many times to send again.
    pub retries: u32,
}

/// What else came and went on the wire.
#[derive(Debug, Clone, Copy, Default)]
pub struct UdpTraffic {
    /// Requests sent again after a timeout.
    pub retransmissions: usize,
    /// Requests the gatekeeper sent (URQs …); counted, not answered.
    pub gatekeeper_requests: usize,
    /// Replies that came after their request gave up, or answer nothing sent.
    pub late_replies: usize,
    /// Datagrams received that did not decode.
    pub undecodable_replies: usize,
    /// "Port unreachable" reports from the kernel.
    pub refused: usize,
}

struct Pending {
    index: usize,
    prepared: Prepared,
    sent_at: Instant,
    attempts: u32,
}

/// The address a captured phone source replays from: its IP on loopback, else the loopback
/// address of its family (127.0.0.1, or ::1 for an IPv6 phone).
pub fn bind_address(captured: SocketAddr) -> SocketAddr {
    let ip = if captured.ip().is_loopback() {
        captured.ip()
    } else if captured.is_ipv6() {
        IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)
    } else {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    };
    SocketAddr::new(ip, 0)
}

/// Replays `plan` over UDP.
pub fn replay<'a>(
    plan: &'a Plan,
    options: &UdpOptions,
) -> Result<(Session<'a>, UdpTraffic), ReplayError> {
    if !options.target.ip().is_loopback() {
        return Err(ReplayError::TargetNotLoopback(options.target));
    }
    let mut sockets = Vec::with_capacity(plan.phones.len());
    for &phone in &plan.phones {
        let address = bind_address(phone);
        let socket = UdpSocket::bind(address).map_err(|source| ReplayError::Bind {
            address,
            phone,
            source,
        })?;
        socket
            .set_nonblocking(true)
            .map_err(|source| ReplayError::Bind {
                address,
                phone,
                source,
            })?;
        sockets.push(socket);
    }
    let locals: Vec<SocketAddr> = sockets
        .iter()
        .zip(&plan.phones)
        .map(|(s, &phone)| s.local_addr().unwrap_or_else(|_| bind_address(phone)))
        .collect();
    let mut session = Session::new(plan, options.target, &locals, true);
    let mut traffic = UdpTraffic::default();

    let attempts_allowed = 1 + options.retries;
    let per_request = options.timeout * attempts_allowed;
    let first = plan.requests.first().map(|r| r.time).unwrap_or_default();
    let span = plan
        .requests
        .last()
        .map(|r| r.time.saturating_sub(first))
        .unwrap_or_default();
    let started = Instant::now();
    let budget = if options.pace { span } else { Duration::ZERO }
        + per_request * u32::try_from(plan.requests.len()).unwrap_or(u32::MAX)
        + Duration::from_secs(2);
    let give_up = started + budget;

    let mut next = 0;
    let mut pending: Vec<Pending> = Vec::new();
    let mut answered = 0usize;
    let mut buffer = [0u8; 65_536];
    loop {
        let now = Instant::now();
        if now > give_up {
            break;
        }
        // Send what is due.
        while next < plan.requests.len() {
            let due = if options.pace {
                now >= started + plan.requests[next].time.saturating_sub(first)
            } else {
                pending.is_empty()
            };
            if !due {
                break;
            }
            let prepared = session.prepare(next);
            let socket = &sockets[plan.requests[next].phone];
            send(socket, &prepared)?;
            pending.push(Pending {
                index: next,
                prepared,
                sent_at: now,
                attempts: 1,
            });
            next += 1;
        }
        // Receive what came.
        let mut received = false;
        for (phone, socket) in sockets.iter().enumerate() {
            for _ in 0..256 {
                match socket.recv_from(&mut buffer) {
                    Ok((len, _peer)) => {
                        received = true;
                        let Ok(message) = ras::decode(&buffer[..len]) else {
                            traffic.undecodable_replies += 1;
                            continue;
                        };
                        let kind = ras::kind(&message);
                        if kind.is_request() {
                            traffic.gatekeeper_requests += 1;
                            continue;
                        }
                        let seq = ras::request_seq_num(&message);
                        let found = pending.iter().position(|p| {
                            let request = &plan.requests[p.index];
                            request.phone == phone && request.seq == seq
                        });
                        match found {
                            Some(position) => {
                                let done = pending.remove(position);
                                answered += 1;
                                session.complete(
                                    done.index,
                                    &done.prepared,
                                    done.attempts,
                                    Some(ReplySummary::of(&message)),
                                );
                            }
                            None => traffic.late_replies += 1,
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                        traffic.refused += 1;
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        // Send again, or give up, what timed out.
        let now = Instant::now();
        let mut position = 0;
        while position < pending.len() {
            let p = &mut pending[position];
            if now.duration_since(p.sent_at) < options.timeout {
                position += 1;
                continue;
            }
            if p.attempts < attempts_allowed {
                send(&sockets[plan.requests[p.index].phone], &p.prepared)?;
                p.attempts += 1;
                p.sent_at = now;
                traffic.retransmissions += 1;
                position += 1;
            } else {
                let done = pending.remove(position);
                session.complete(done.index, &done.prepared, done.attempts, None);
            }
        }
        if next == plan.requests.len() && pending.is_empty() {
            break;
        }
        if !received {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    // Out of time: what is still pending or unsent is unanswered.
    for done in pending.drain(..) {
        session.complete(done.index, &done.prepared, done.attempts, None);
    }
    for index in next..plan.requests.len() {
        let prepared = session.prepare(index);
        session.complete(index, &prepared, 0, None);
    }
    if answered == 0 && !plan.requests.is_empty() {
        return Err(ReplayError::Unreachable {
            target: options.target,
            requests: plan.requests.len(),
            refused: traffic.refused,
        });
    }
    Ok((session, traffic))
}

fn send(socket: &UdpSocket, prepared: &Prepared) -> Result<(), ReplayError> {
    for _ in 0..100 {
        match socket.send_to(&prepared.payload, prepared.to) {
            Ok(_) => return Ok(()),
            // A refusal of an earlier datagram can surface here; the send itself went out
            // only if it is retried.
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::Interrupted | ErrorKind::ConnectionRefused
                ) =>
            {
                std::thread::sleep(Duration::from_micros(100));
            }
            Err(source) => {
                return Err(ReplayError::Send {
                    to: prepared.to,
                    source,
                })
            }
        }
    }
    Err(ReplayError::Send {
        to: prepared.to,
        source: std::io::Error::new(ErrorKind::WouldBlock, "the socket stayed busy"),
    })
}
