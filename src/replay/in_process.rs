//! Replay against the gatekeeper core in virtual time: no sockets, no clock. The capture's
//! timestamps drive `now` (from an arbitrary start instant, never backwards), the core's
//! timers run as that time passes, and each request's reply is whatever
//! [`Gatekeeper::handle`] returns to the phone with the request's sequence number. The same
//! capture and configuration always give the same report.

use std::time::{Duration, Instant};

use crate::gatekeeper::Gatekeeper;
use crate::ras;

use super::outcome::ReplySummary;
use super::plan::Plan;
use super::session::Session;

/// At most this many timer rounds between two requests (each round moves to a later
/// deadline, so this only bounds a core that keeps asking for the same instant).
const MAX_TIMER_ROUNDS: usize = 1_000_000;

/// What the core sent besides the replies.
#[derive(Debug, Clone, Copy, Default)]
pub struct CoreTraffic {
    /// Gatekeeper-sent requests (URQs) and anything else that answered no replayed request.
    pub unsolicited: usize,
}

/// Replays `plan` into `gatekeeper`, its first datagram at `start`.
pub fn replay<'a>(
    plan: &'a Plan,
    gatekeeper: &mut Gatekeeper,
    start: Instant,
) -> (Session<'a>, CoreTraffic) {
    let discovery = gatekeeper.config().gatekeeper.discovery;
    let mut session = Session::new(plan, discovery, &plan.phones, false);
    let mut traffic = CoreTraffic::default();
    let first = plan.requests.first().map(|r| r.time).unwrap_or_default();
    let mut now = start;
    for index in 0..plan.requests.len() {
        let request = &plan.requests[index];
        let at = start + request.time.saturating_sub(first);
        now = now.max(at);
        traffic.unsolicited += run_timers(gatekeeper, now);
        let prepared = session.prepare(index);
        let from = session.local(request.phone);
        let mut reply = None;
        for transmit in gatekeeper.handle(now, prepared.to, from, &prepared.payload) {
            let answer = ras::decode(&transmit.payload).ok().filter(|m| {
                transmit.to == from
                    && !ras::kind(m).is_request()
                    && ras::request_seq_num(m) == request.seq
            });
            match answer {
                Some(message) if reply.is_none() => reply = Some(ReplySummary::of(&message)),
                _ => traffic.unsolicited += 1,
            }
        }
        session.complete(index, &prepared, 1, reply);
    }
    // The timers due within the last request's second still run (URQ retries and the like
    // are counted, not answered).
    traffic.unsolicited += run_timers(gatekeeper, now + Duration::from_millis(1));
    (session, traffic)
}

/// Runs every core timer due by `now`, oldest first; returns how many datagrams it sent.
fn run_timers(gatekeeper: &mut Gatekeeper, now: Instant) -> usize {
    let mut sent = 0;
    let mut last = None;
    for _ in 0..MAX_TIMER_ROUNDS {
        let Some(due) = gatekeeper.poll_timeout() else {
            break;
        };
        if due > now || last.is_some_and(|last| due <= last) {
            break;
        }
        sent += gatekeeper.handle_timeout(due).len();
        last = Some(due);
    }
    sent + gatekeeper.handle_timeout(now).len()
}
