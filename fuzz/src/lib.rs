//! What the `handle` target does, shared with the seed writer (which runs on stable Rust):
//! an input is a script of steps, each one datagram from one of a few hundred sources to one
//! of the gatekeeper's addresses after some time has passed, or an administrator taking a
//! C-LAN out of (or back into) service. After every step the invariants that must hold
//! whatever peers send are checked cheaply.
//!
//! A step is 4 header octets and a payload:
//!
//! ```text
//!   source  local  advance  length   payload (length octets, fewer at the end of the input)
//! ```
//!
//! `source` picks 127.R.0.N:500P (R 1–3 are the default's regions, 4 is unmapped), `local`
//! the discovery address or a C-LAN (with the high bit and no payload: toggle that C-LAN's
//! service), `advance` moves the clock by that many 50 ms, running the timers due.
//!
//! The `relay` target's scripts (routed calls over socket mode's connections) are in
//! [`relay`].

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rasgk::config::{self, Config};
use rasgk::gatekeeper::Gatekeeper;

pub mod relay;

/// One step of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Which source (see the module doc).
    pub source: u8,
    /// Which local address; high bit with no payload: toggle a C-LAN's service.
    pub local: u8,
    /// Clock advance before the step, in 50 ms.
    pub advance: u8,
    /// The datagram.
    pub payload: Vec<u8>,
}

/// The embedded default with small limits, so that a short script reaches every cap: room
/// for three phones per C-LAN, a rate limit, and tiny tables. Parsed once: reading the TOML
/// would cost more than most scripts.
pub fn config() -> Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(small_limits).clone()
}

fn small_limits() -> Config {
    let mut config = config::embedded_default();
    for clan in &mut config.clans {
        clan.max_sockets = 3;
    }
    config.gatekeeper.gcf_hold_s = 2;
    config.gatekeeper.ttl_s = 20;
    config.limits.rate_per_source = Some(20);
    config.limits.burst_per_source = 6;
    config.limits.max_sources = 16;
    config.limits.max_reservations = 5;
    config.limits.max_cached_replies = 24;
    config.limits.reflection_ratio = 2;
    config
}

/// The source address a step's `source` octet names.
pub fn source(octet: u8) -> SocketAddr {
    SocketAddr::from((
        [127, 1 + octet % 4, 0, 1 + (octet / 4) % 16],
        5000 + u16::from(octet / 64),
    ))
}

/// The frames of a script, as both targets' scripts (`handle`'s and the relay's) are
/// written: three header octets, a length octet, then that many octets of payload (a short
/// last payload is taken as it is).
pub fn frames(mut data: &[u8]) -> Vec<([u8; 3], &[u8])> {
    let mut frames = Vec::new();
    while let [x, y, z, length, rest @ ..] = data {
        let length = usize::from(*length).min(rest.len());
        frames.push(([*x, *y, *z], &rest[..length]));
        data = &rest[length..];
    }
    frames
}

/// A script of `frames` (payloads longer than 255 octets are cut).
pub fn write_frames<'a>(frames: impl IntoIterator<Item = ([u8; 3], &'a [u8])>) -> Vec<u8> {
    let mut data = Vec::new();
    for (header, payload) in frames {
        let payload = &payload[..payload.len().min(255)];
        data.extend(header);
        data.push(payload.len() as u8);
        data.extend_from_slice(payload);
    }
    data
}

/// The steps of an input (a short last payload is taken as it is).
pub fn parse(data: &[u8]) -> Vec<Step> {
    frames(data)
        .into_iter()
        .map(|([source, local, advance], payload)| Step {
            source,
            local,
            advance,
            payload: payload.to_vec(),
        })
        .collect()
}

/// The input of some steps (payloads longer than 255 octets are cut).
pub fn write(steps: &[Step]) -> Vec<u8> {
    write_frames(
        steps
            .iter()
            .map(|s| ([s.source, s.local, s.advance], s.payload.as_slice())),
    )
}

/// Runs a script against a fresh gatekeeper, checking the invariants after every step;
/// panics (a finding) when one breaks.
pub fn run(data: &[u8]) {
    let config = config();
    let limits = config.limits;
    let mut gatekeeper = Gatekeeper::new(config).expect("the fuzz configuration starts");
    let locals = gatekeeper.local_addresses();
    let clans = locals.len() - 1;
    let start = Instant::now();
    let mut now = start;
    for step in parse(data) {
        now += Duration::from_millis(50 * u64::from(step.advance));
        let mut out = Vec::new();
        if gatekeeper.poll_timeout().is_some_and(|due| due <= now) {
            out.extend(gatekeeper.handle_timeout(now));
        }
        let registered_before = gatekeeper.counts().registrations;
        if step.local & 0x80 != 0 && step.payload.is_empty() {
            let clan = usize::from(step.local & 0x7f) % clans;
            let in_service = gatekeeper.clans()[clan].in_service;
            out.extend(gatekeeper.set_in_service(now, clan, !in_service));
        } else {
            let local = locals[usize::from(step.local) % locals.len()];
            let replies = gatekeeper.handle(now, local, source(step.source), &step.payload);
            // Reflection: with nobody registered before or after, no reply may exceed the
            // bound (with registrations, the source's own state decides, not checked here).
            if registered_before == 0 && gatekeeper.counts().registrations == 0 {
                for reply in &replies {
                    assert!(
                        reply.payload.len() <= limits.reflection_ratio * step.payload.len(),
                        "a {}-octet reply to a {}-octet request from an unregistered source",
                        reply.payload.len(),
                        step.payload.len()
                    );
                }
            }
            out.extend(replies);
        }
        for transmit in &out {
            assert!(
                locals.contains(&transmit.local),
                "sent from {}",
                transmit.local
            );
            if let Err(error) = rasgk::ras::decode(&transmit.payload) {
                panic!("the gatekeeper sent what does not decode: {error}");
            }
        }
        let counts = gatekeeper.counts();
        assert!(counts.reservations <= limits.max_reservations, "{counts:?}");
        assert!(
            counts.cached_replies <= limits.max_cached_replies,
            "{counts:?}"
        );
        assert!(
            counts.rate_limit_sources <= limits.max_sources,
            "{counts:?}"
        );
        assert!(
            counts.timers <= counts.reservations + counts.registrations + counts.pending_urqs,
            "a deadline without its state: {counts:?}"
        );
        for clan in gatekeeper.clans() {
            assert!(
                clan.sockets + clan.reserved <= clan.max_sockets || !clan.in_service,
                "{} over its cap: {} sockets + {} reserved > {}",
                clan.name,
                clan.sockets,
                clan.reserved,
                clan.max_sockets
            );
        }
    }
}
