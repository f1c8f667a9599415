//! One replay in progress, whatever carries it: where each request goes, how it is rewritten
//! for the gatekeeper being replayed against, and what came back.
//!
//! A phone follows its gatekeeper, not the capture: when the replayed GCF names another C-LAN
//! than the captured one, the phone's later requests to the captured C-LAN go to the new one.
//! Identifiers the captured gatekeeper handed out are replaced by those the replayed one
//! handed out: a lightweight RRQ, URQ, ARQ, DRQ, BRQ or IRR carrying the endpointIdentifier
//! of the captured RCF carries the replayed RCF's instead, and likewise the
//! gatekeeperIdentifier. A phone's own RAS address in GRQ, RRQ and IRR becomes the address
//! the replay sends it from.

use std::net::SocketAddr;

use crate::ras::{self, asn, RasMessage};

use super::outcome::{compare, Difference, ReplySummary};
use super::plan::{is_discovery, Plan};

/// What the replay learnt about one phone from the replies so far.
#[derive(Debug, Clone)]
struct PhoneState {
    /// Where its requests leave from in the replay.
    local: SocketAddr,
    /// Captured → replayed endpointIdentifier.
    endpoint_ids: Vec<(asn::EndpointIdentifier, asn::EndpointIdentifier)>,
    /// Captured → replayed gatekeeperIdentifier.
    gatekeeper_ids: Vec<(asn::GatekeeperIdentifier, asn::GatekeeperIdentifier)>,
    /// Captured C-LAN → the one the replayed GCF named instead.
    redirects: Vec<(SocketAddr, SocketAddr)>,
}

/// What happened to one request.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Where it was sent.
    pub sent_to: SocketAddr,
    /// Whether it had to be rewritten (and re-encoded).
    pub rewritten: bool,
    /// Times it was sent (1 + retransmissions).
    pub attempts: u32,
    /// The replayed reply.
    pub replayed: Option<ReplySummary>,
    /// How it differs from the captured one.
    pub differences: Vec<Difference>,
}

/// A replay in progress.
pub struct Session<'a> {
    /// The plan being replayed.
    pub plan: &'a Plan,
    discovery: SocketAddr,
    loopback_only: bool,
    phones: Vec<PhoneState>,
    /// Per request, once it is done.
    pub outcomes: Vec<Option<Outcome>>,
    /// Requests whose captured gatekeeper address was not loopback and that were sent to the
    /// discovery address instead (UDP replays only).
    pub retargeted: usize,
    /// Rewritten requests that would not encode (sent as captured).
    pub encode_failures: usize,
}

/// The next request to send: where to, and its octets.
pub struct Prepared {
    /// Destination.
    pub to: SocketAddr,
    /// Octets.
    pub payload: Vec<u8>,
    /// Whether they differ from the captured ones.
    pub rewritten: bool,
}

impl<'a> Session<'a> {
    /// A replay of `plan` against a gatekeeper whose discovery address is `discovery`;
    /// `locals[i]` is where phone `i` sends from. With `loopback_only`, a request the capture
    /// sent to a gatekeeper address off loopback goes to `discovery` instead.
    pub fn new(
        plan: &'a Plan,
        discovery: SocketAddr,
        locals: &[SocketAddr],
        loopback_only: bool,
    ) -> Session<'a> {
        Session {
            plan,
            discovery,
            loopback_only,
            phones: locals
                .iter()
                .map(|&local| PhoneState {
                    local,
                    endpoint_ids: Vec::new(),
                    gatekeeper_ids: Vec::new(),
                    redirects: Vec::new(),
                })
                .collect(),
            outcomes: vec![None; plan.requests.len()],
            retargeted: 0,
            encode_failures: 0,
        }
    }

    /// Where phone `phone` sends from.
    pub fn local(&self, phone: usize) -> SocketAddr {
        self.phones[phone].local
    }

    /// Request `index`, addressed and rewritten for the replayed gatekeeper.
    pub fn prepare(&mut self, index: usize) -> Prepared {
        let request = &self.plan.requests[index];
        let state = &self.phones[request.phone];
        let to = if let Some(&(_, to)) = state.redirects.iter().find(|(c, _)| *c == request.dst) {
            to
        } else if is_discovery(self.plan, request.dst) {
            self.discovery
        } else if self.loopback_only && !request.dst.ip().is_loopback() {
            self.retargeted += 1;
            self.discovery
        } else {
            request.dst
        };
        let captured_src = self.plan.phones[request.phone];
        let mut message = request.message.clone();
        if !rewrite(&mut message, state, captured_src) {
            return Prepared {
                to,
                payload: request.payload.clone(),
                rewritten: false,
            };
        }
        match ras::encode(&message) {
            Ok(payload) => Prepared {
                to,
                payload,
                rewritten: true,
            },
            Err(_) => {
                self.encode_failures += 1;
                Prepared {
                    to,
                    payload: request.payload.clone(),
                    rewritten: false,
                }
            }
        }
    }

    /// Records request `index`'s reply (or its absence) and learns from it.
    pub fn complete(
        &mut self,
        index: usize,
        prepared: &Prepared,
        attempts: u32,
        replayed: Option<ReplySummary>,
    ) {
        let request = &self.plan.requests[index];
        let captured = request.captured.as_ref();
        let state = &mut self.phones[request.phone];
        if let (Some(c), Some(r)) = (captured, replayed.as_ref()) {
            if let (Some(c), Some(r)) = (&c.endpoint_id, &r.endpoint_id) {
                state.endpoint_ids.retain(|(old, _)| old != c);
                state.endpoint_ids.push((c.clone(), r.clone()));
            }
            if let (Some(c), Some(r)) = (&c.gatekeeper_id, &r.gatekeeper_id) {
                state.gatekeeper_ids.retain(|(old, _)| old != c);
                state.gatekeeper_ids.push((c.clone(), r.clone()));
            }
            if let (Some(c), Some(r)) = (c.ras_address, r.ras_address) {
                state.redirects.retain(|(old, _)| *old != c);
                if c != r {
                    state.redirects.push((c, r));
                }
            }
        }
        let differences = compare(captured, replayed.as_ref());
        self.outcomes[index] = Some(Outcome {
            sent_to: prepared.to,
            rewritten: prepared.rewritten,
            attempts,
            replayed,
            differences,
        });
    }
}

/// Replaces captured identifiers and the phone's captured RAS address; true when anything
/// changed.
fn rewrite(message: &mut RasMessage, state: &PhoneState, captured_src: SocketAddr) -> bool {
    let mut changed = false;
    let mut endpoint = |id: &mut asn::EndpointIdentifier| {
        if let Some((_, new)) = state.endpoint_ids.iter().find(|(old, _)| old == id) {
            if new != id {
                *id = new.clone();
                changed = true;
            }
        }
    };
    match message {
        RasMessage::registrationRequest(m) => {
            m.endpoint_identifier.iter_mut().for_each(&mut endpoint)
        }
        RasMessage::unregistrationRequest(m) => {
            m.endpoint_identifier.iter_mut().for_each(&mut endpoint);
        }
        RasMessage::admissionRequest(m) => endpoint(&mut m.endpoint_identifier),
        RasMessage::disengageRequest(m) => endpoint(&mut m.endpoint_identifier),
        RasMessage::bandwidthRequest(m) => endpoint(&mut m.endpoint_identifier),
        RasMessage::infoRequestResponse(m) => endpoint(&mut m.endpoint_identifier),
        _ => {}
    }
    let mut gatekeeper = |id: &mut Option<asn::GatekeeperIdentifier>| {
        let Some(id) = id else { return };
        if let Some((_, new)) = state.gatekeeper_ids.iter().find(|(old, _)| old == id) {
            if new != id {
                *id = new.clone();
                changed = true;
            }
        }
    };
    match message {
        RasMessage::gatekeeperRequest(m) => gatekeeper(&mut m.gatekeeper_identifier),
        RasMessage::registrationRequest(m) => gatekeeper(&mut m.gatekeeper_identifier),
        RasMessage::unregistrationRequest(m) => gatekeeper(&mut m.gatekeeper_identifier),
        RasMessage::admissionRequest(m) => gatekeeper(&mut m.gatekeeper_identifier),
        RasMessage::disengageRequest(m) => gatekeeper(&mut m.gatekeeper_identifier),
        RasMessage::bandwidthRequest(m) => gatekeeper(&mut m.gatekeeper_identifier),
        _ => {}
    }
    if state.local != captured_src {
        let mut own = |address: &mut asn::TransportAddress| {
            if ras::socket_addr(address) == Some(captured_src) {
                *address = ras::transport_address(state.local);
                changed = true;
            }
        };
        match message {
            RasMessage::gatekeeperRequest(m) => own(&mut m.ras_address),
            RasMessage::registrationRequest(m) => m.ras_address.iter_mut().for_each(&mut own),
            RasMessage::infoRequestResponse(m) => own(&mut m.ras_address),
            _ => {}
        }
    }
    changed
}
