//! The gatekeeper core in virtual time, for the tests that drive it without sockets: a clock
//! the test moves, requests handed to `Gatekeeper::handle` as a phone sends them, and the
//! reply read back as the phone reads it. Each test adds what it needs with an `impl` of its
//! own.
#![allow(dead_code)] // each test binary uses a different part of this module

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rasgk::config;
use rasgk::gatekeeper::Gatekeeper;
use rasgk::phone::{Answer, Phone};
use rasgk::ras;

/// A gatekeeper and its clock.
pub struct CoreLab {
    pub gatekeeper: Gatekeeper,
    pub start: Instant,
    pub now: Instant,
}

impl CoreLab {
    /// A gatekeeper of the configuration `toml` (named `origin` in its errors).
    pub fn with_config(toml: &str, origin: &str) -> CoreLab {
        let config = config::from_toml(toml, origin).unwrap_or_else(|e| panic!("{e}"));
        let start = Instant::now();
        CoreLab {
            gatekeeper: Gatekeeper::new(config).unwrap(),
            start,
            now: start,
        }
    }

    /// Moves the clock to `ms` after the start and runs what is due.
    pub fn at_ms(&mut self, ms: u64) {
        self.now = self.start + Duration::from_millis(ms);
        let _ = self.gatekeeper.handle_timeout(self.now);
    }

    /// Hands `datagram` from `phone` to the gatekeeper at `local`: its one reply, which the
    /// phone learns from.
    pub fn ask_message(
        &mut self,
        local: SocketAddr,
        phone: &mut Phone,
        datagram: &[u8],
    ) -> ras::RasMessage {
        let out = self
            .gatekeeper
            .handle(self.now, local, phone.ras_address, datagram);
        assert_eq!(out.len(), 1, "one reply expected, got {out:?}");
        let answer = Answer::read(&out[0].payload).unwrap();
        phone.learn(&answer);
        ras::decode(&out[0].payload).unwrap()
    }

    /// [`ask_message`](CoreLab::ask_message), as the phone reads the reply.
    pub fn ask(&mut self, local: SocketAddr, phone: &mut Phone, datagram: &[u8]) -> Answer {
        Answer::from_message(&self.ask_message(local, phone, datagram))
    }

    /// GRQ at `discovery`, RRQ where the GCF says: the RCF's callSignalAddress.
    pub fn register_at(&mut self, discovery: SocketAddr, phone: &mut Phone) -> SocketAddr {
        let grq = phone.grq();
        let clan = match self.ask(discovery, phone, &grq) {
            Answer::Gcf {
                ras_address: Some(clan),
                ..
            } => clan,
            other => panic!("expected GCF, got {other:?}"),
        };
        let rrq = phone.rrq();
        match self.ask(clan, phone, &rrq) {
            Answer::Rcf {
                call_signal_address: Some(address),
                ..
            } => address,
            other => panic!("expected RCF, got {other:?}"),
        }
    }
}
