//! The messages the benchmarks measure, also written by `fuzz/src/bin/seed.rs` as the fuzz
//! target's seed corpus: GRQ, full and lightweight RRQ, GCF, and an RCF with a 16-entry AGL.
//! One file, included by both, so that what is measured and what is fuzzed stay the same.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use rasgk::ras::reply::{
    gatekeeper_confirm, registration_confirm, AlternateGatekeeper, EndpointId, GatekeeperId, Rcf,
};
use rasgk::ras::request::{gatekeeper_request, keep_alive, registration_request, terminal, Rrq};
use rasgk::ras::{Alias, RasMessage};

fn addr(a: u8, b: u8, c: u8, d: u8, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(a, b, c, d)), port)
}

/// The benchmarked messages, by name.
pub fn messages() -> Vec<(&'static str, RasMessage)> {
    let gk = GatekeeperId::new("rasgk").expect("valid gatekeeper id");
    let ep = EndpointId::new("0000000100000001").expect("valid endpoint id");
    let phone_ras = addr(192, 168, 1, 50, 1719);
    let phone_csa = addr(192, 168, 1, 50, 1720);
    let gk_ras = addr(127, 0, 0, 1, 1719);
    let digits = [Alias::dialled_digits("50001").expect("valid digits")];
    let full_aliases = [
        Alias::dialled_digits("50001").expect("valid digits"),
        Alias::h323_id("alice").expect("valid h323-ID"),
    ];
    let agl: Vec<AlternateGatekeeper> = (1..=16u8)
        .map(|i| AlternateGatekeeper {
            ras_address: addr(127, 0, 1, i, 1719),
            gatekeeper_id: None,
            priority: i - 1,
        })
        .collect();

    vec![
        ("grq", gatekeeper_request(1, phone_ras, &digits, None)),
        (
            "rrq_full",
            registration_request(&Rrq {
                request_seq_num: 2,
                call_signal_address: phone_csa,
                ras_address: phone_ras,
                terminal_type: terminal(),
                aliases: &full_aliases,
                gatekeeper_id: Some(&gk),
                time_to_live_s: Some(300),
            }),
        ),
        (
            "rrq_keepalive",
            keep_alive(3, phone_csa, phone_ras, &ep, Some(&gk), Some(300)),
        ),
        ("gcf", gatekeeper_confirm(1, &gk, gk_ras)),
        (
            "rcf_agl16",
            registration_confirm(&Rcf {
                request_seq_num: 2,
                gatekeeper_id: &gk,
                endpoint_id: &ep,
                call_signal_address: &[phone_csa],
                aliases: &digits,
                time_to_live_s: Some(300),
                agl: &agl,
            }),
        ),
    ]
}
