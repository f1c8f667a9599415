//! Encode and decode times of the RAS messages a gatekeeper sees and sends most.
//!
//! `cargo bench --bench ras` (about a minute: 1 s warm-up and 3 s measurement per case).
//! Each message is measured twice: `encode/<name>` (with `encode_into` and a reused buffer)
//! and `decode/<name>`; throughput is the encoded length.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rasgk::ras::{decode, encode, encode_into};

#[path = "support/messages.rs"]
mod messages;
use messages::messages;

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
