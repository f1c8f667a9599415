//! Core time per GRQ as the number of C-LANs grows (64, 1,024, 10,000): the whole
//! `Gatekeeper::handle` path — decode, GCF choice, reservation, encode — with 1,000 phones
//! sending GRQs in turn (each new GRQ replaces its phone's reservation, so the state stays
//! the same size). The ratio of the largest to the smallest is what the scale target reads.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Instant;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

use rasgk::config::{self, Clan, ClanKind, Link, LinkKind, Region};
use rasgk::gatekeeper::Gatekeeper;
use rasgk::phone::Phone;

/// `clans` C-LANs over 16 regions in a chain of direct links, every cap large.
fn topology(clans: usize) -> config::Config {
    let mut config = config::embedded_default();
    config.regions = (1..=16u16)
        .map(|id| Region {
            id,
            name: format!("r{id}"),
            networks: vec![format!("127.{id}.0.0/16").parse().unwrap()],
        })
        .collect();
    config.links = (1..16u16)
        .map(|id| Link {
            near: id,
            far: id + 1,
            kind: LinkKind::Direct,
            agl: true,
            symmetric: true,
        })
        .collect();
    config.tts.clear();
    config.clans = (0..clans)
        .map(|i| Clan {
            name: format!("clan-{i}"),
            region: 1 + (i % 16) as u16,
            address: SocketAddr::from(([127, 0, 100 + (i / 250) as u8, 1 + (i % 250) as u8], 1719)),
            priority: 1 + (i % 3) as u8,
            max_sockets: 1_000_000,
            in_service: true,
            kind: ClanKind::Clan,
            node: "cm1".into(),
        })
        .collect();
    config
}

fn grq_per_clan_count(c: &mut Criterion) {
    let mut group = c.benchmark_group("core GRQ");
    for clans in [64usize, 1024, 10_000] {
        let config = topology(clans);
        let discovery = config.gatekeeper.discovery;
        let mut gatekeeper = Gatekeeper::new(config).unwrap();
        let mut phones: Vec<Phone> = (0..1000u32)
            .map(|i| {
                let ip = Ipv4Addr::new(127, 1 + (i % 16) as u8, 1, 1 + (i / 16) as u8);
                Phone::extension(60_000 + i, SocketAddr::from((ip, 5000)))
            })
            .collect();
        let now = Instant::now();
        let mut next = 0;
        group.bench_with_input(BenchmarkId::from_parameter(clans), &clans, |b, _| {
            b.iter(|| {
                let phone = &mut phones[next % 1000];
                next += 1;
                let grq = phone.grq();
                gatekeeper.handle(now, discovery, phone.ras_address, &grq)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, grq_per_clan_count);
criterion_main!(benches);
