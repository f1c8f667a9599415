//! Memory: resident bytes per registration, read from the process's resident set size
//! around registering many phones in an in-process core (no sockets).

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use crate::phone::{Answer, Phone};

use super::ceiling::bench_config;

/// Resident memory of this process, bytes (Linux `/proc/self/statm`; 0 elsewhere).
fn resident_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|text| text.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Resident bytes per registration, and how many registered: `count` phones registered in
/// an in-process core (no sockets), measured once the retransmission cache has let go of
/// their replies.
pub fn per_registration(count: usize) -> (f64, usize) {
    let mut config = bench_config();
    config.gatekeeper.ttl_s = 3600;
    let Ok(mut gatekeeper) = crate::gatekeeper::Gatekeeper::new(config.clone()) else {
        return (0.0, 0);
    };
    let discovery = config.gatekeeper.discovery;
    let start = Instant::now();
    let before = resident_bytes();
    for index in 0..count {
        let region = 1 + (index % 3) as u8;
        let j = index / 3;
        let ip = Ipv4Addr::new(127, region, (j / 250 % 250) as u8 + 1, (j % 250) as u8 + 1);
        let port = 10_000 + (j / 62_500) as u16;
        let mut phone = Phone::extension(100_000 + index as u32, SocketAddr::from((ip, port)));
        let grq = phone.grq();
        let out = gatekeeper.handle(start, discovery, phone.ras_address, &grq);
        let Some(Ok(Answer::Gcf {
            ras_address: Some(clan),
            ..
        })) = out.first().map(|t| Answer::read(&t.payload))
        else {
            continue;
        };
        let rrq = phone.rrq();
        let _ = gatekeeper.handle(start, clan, phone.ras_address, &rrq);
        if index % 1024 == 0 {
            drop(gatekeeper.drain_events());
        }
    }
    drop(gatekeeper.drain_events());
    let _ = gatekeeper.handle_timeout(start + Duration::from_secs(11));
    let after = resident_bytes();
    let registered = gatekeeper.counts().registrations;
    let bytes = after.saturating_sub(before) as f64 / registered.max(1) as f64;
    (bytes, registered)
}
