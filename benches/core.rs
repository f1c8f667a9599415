//! Core time per request of the three `rasgk bench` workloads — GRQ, full RRQ (a registered
//! phone re-registering) and lightweight RRQ (keep-alive) — through the whole
//! `Gatekeeper::handle` path (decode, policy, state, encode), with no sockets. Requests are
//! encoded before the measurement, each with a new sequence number, so neither the client's
//! encoding nor the retransmission cache is in the figure. Read beside `rasgk bench`: the
//! server's overhead over the echo ceiling is this time plus the glue's.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};

use rasgk::config;
use rasgk::gatekeeper::Gatekeeper;
use rasgk::phone::{Answer, Phone};

const PHONES: u32 = 1_000;
/// Requests prepared per phone: enough that criterion's iterations never run out.
const ROUNDS: usize = 400;

struct Bed {
    gatekeeper: Gatekeeper,
    discovery: SocketAddr,
    phones: Vec<(Phone, SocketAddr)>,
    start: Instant,
}

fn bed() -> Bed {
    let mut config = config::embedded_default();
    for clan in &mut config.clans {
        clan.max_sockets = 1_000_000;
    }
    config.gatekeeper.ttl_s = 3600;
    let discovery = config.gatekeeper.discovery;
    let mut gatekeeper = Gatekeeper::new(config).unwrap();
    // As `rasgk serve` runs it with no `/api/events` client: no events built.
    gatekeeper.set_events_watched(false);
    let start = Instant::now();
    let phones = (0..PHONES)
        .map(|i| {
            let ip = Ipv4Addr::new(127, 1 + (i % 3) as u8, 7, 1 + (i / 3 % 250) as u8);
            let mut phone =
                Phone::extension(70_000 + i, SocketAddr::from((ip, 5000 + (i / 750) as u16)));
            let grq = phone.grq();
            let out = gatekeeper.handle(start, discovery, phone.ras_address, &grq);
            let Ok(Answer::Gcf {
                ras_address: Some(clan),
                ..
            }) = Answer::read(&out[0].payload)
            else {
                panic!("no GCF for phone {i}");
            };
            let rrq = phone.rrq();
            let out = gatekeeper.handle(start, clan, phone.ras_address, &rrq);
            phone.learn(&Answer::read(&out[0].payload).unwrap());
            (phone, clan)
        })
        .collect();
    Bed {
        gatekeeper,
        discovery,
        phones,
        start,
    }
}

fn workloads(c: &mut Criterion) {
    let mut group = c.benchmark_group("core request");
    let mut bed = bed();
    type Make = fn(&mut Phone) -> Vec<u8>;
    let cases: [(&str, Make, bool); 3] = [
        ("grq", |p| p.grq(), true),
        ("rrq_full", |p| p.rrq(), false),
        ("rrq_light", |p| p.keep_alive().unwrap(), false),
    ];
    for (name, make, to_discovery) in cases {
        let mut requests = Vec::with_capacity(PHONES as usize * ROUNDS);
        for _ in 0..ROUNDS {
            for (phone, clan) in &mut bed.phones {
                let to = if to_discovery { bed.discovery } else { *clan };
                requests.push((to, phone.ras_address, make(phone)));
            }
        }
        let mut next = 0;
        // Time moves forward a microsecond a request, so the retransmission cache ages out
        // as it would under load.
        group.bench_function(name, |b| {
            b.iter(|| {
                let (to, from, datagram) = &requests[next % requests.len()];
                next += 1;
                let now = bed.start + std::time::Duration::from_micros(next as u64);
                bed.gatekeeper.handle(now, *to, *from, datagram)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, workloads);
criterion_main!(benches);
