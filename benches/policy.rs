//! Core time per GRQ as the number of C-LANs grows (64, 1,024, 10,000): the whole
//! `Gatekeeper::handle` path — decode, GCF choice, reservation, encode — with 1,000 phones
//! sending GRQs in turn (each new GRQ replaces its phone's reservation, so the state stays
//! the same size). The ratio of the largest to the smallest is what the scale target reads.

use std::time::Instant;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

use rasgk::bench::scale::{Bed, CLAN_COUNTS};

fn grq_per_clan_count(c: &mut Criterion) {
    let mut group = c.benchmark_group("core GRQ");
    for clans in CLAN_COUNTS {
        let mut bed = Bed::new(clans).unwrap();
        let now = Instant::now();
        group.bench_with_input(BenchmarkId::from_parameter(clans), &clans, |b, _| {
            b.iter(|| bed.grq(now))
        });
    }
    group.finish();
}

criterion_group!(benches, grq_per_clan_count);
criterion_main!(benches);
