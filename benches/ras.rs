//! Encode and decode times of the RAS messages a gatekeeper sees and sends most.
//!
//! `cargo bench --bench ras` (about a minute: 1 s warm-up and 3 s measurement per case).
//! Each message is measured twice: `encode/<name>` (with `encode_into` and a reused buffer)
//! and `decode/<name>`; throughput is the encoded length.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rasgk::ras::reply::{
    gatekeeper_confirm, registration_confirm, AlternateGatekeeper, EndpointId, GatekeeperId, Rcf,
};
use rasgk::ras::request::{gatekeeper_request, keep_alive, registration_request, terminal, Rrq};
use rasgk::ras::{decode, encode, encode_into, Alias, RasMessage};

fn addr(a: u8, b: u8, c: u8, d: u8, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(a, b, c, d)), port)
}

/// The benchmarked messages, by name.
fn messages() -> Vec<(&'static str, RasMessage)> {
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

fn ras(c: &mut Criterion) {
    let messages = messages();
    let encoded: Vec<(&str, Vec<u8>)> = messages
        .iter()
        .map(|(name, message)| (*name, encode(message).expect("benchmark message encodes")))
        .collect();
    for (name, bytes) in &encoded {
        println!("{name}: {} bytes", bytes.len());
    }

    let mut group = c.benchmark_group("encode");
    let mut buffer = Vec::with_capacity(512);
    for ((name, message), (_, bytes)) in messages.iter().zip(&encoded) {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(*name, |b| {
            b.iter(|| {
                encode_into(black_box(message), &mut buffer).expect("encodes");
                black_box(buffer.len())
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("decode");
    for (name, bytes) in &encoded {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(*name, |b| {
            b.iter(|| decode(black_box(bytes)).expect("decodes"))
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = ras
}
criterion_main!(benches);
