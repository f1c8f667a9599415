//! Routed calls at scale: `--call-phones` phones (10,000) holding their sockets in
//! `fixtures/lab/calls-10k.toml`, half of them calling the other half through the relay, so
//! that every phone is in one call and half as many calls as phones are up at once.
//!
//! The gatekeeper is `rasgk serve` in a process of its own; the phones are `rasgk storm
//! --sockets --calls-per-s … --call-s … --call-total …` over [`PROCESSES`] processes (each
//! phone's socket is a descriptor on both sides, and a process may hold 20,000 here). The
//! storm places the calls at [`CALLS_PER_S`] a second and holds each [`HOLD_S`] seconds, long
//! enough for the last to be set up while the first are still up. A sampler reads the
//! gatekeeper's `rasgk_calls_active` every 100 ms and keeps the most.
//!
//! *Set-ups a second sustained* is the storm's: Setups written from the first to the last,
//! over that time, every one of them answered.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

use super::sockets::Served;
use crate::storm::report::Report;

/// The topology: three regions of eight C-LANs of 480 on 127.0.58.x.
const TOPOLOGY: &str = include_str!("../../fixtures/lab/calls-10k.toml");

/// Where [`TOPOLOGY`] comes from, for its errors.
const ORIGIN: &str = "fixtures/lab/calls-10k.toml";

/// The gatekeeper's discovery address in [`TOPOLOGY`].
const TARGET: &str = "127.0.58.1:1719";

/// Its admin port in [`TOPOLOGY`].
const ADMIN: &str = "127.0.58.1:7000";

/// Storm processes the phones are spread over.
pub const PROCESSES: usize = 2;

/// Calls placed a second, over the whole storm.
pub const CALLS_PER_S: u32 = 2_500;

/// Seconds each call is held after its Connect.
pub const HOLD_S: u32 = 8;

/// Most phones: the topology's room.
pub const MAX_PHONES: usize = 11_520;

/// What the run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Concurrent {
    /// Phones in the storm.
    pub phones: usize,
    /// Phones registered with a socket in service at the end.
    pub in_service: usize,
    /// Calls asked for (half the phones).
    pub calls: u64,
    /// Calls placed, and connected.
    pub placed: u64,
    pub connected: u64,
    /// Calls that failed, all reasons.
    pub failed: u64,
    /// The most routed calls in progress at once, as the gatekeeper counted them.
    pub peak_active: u64,
    /// Setups written a second, from the first to the last.
    pub setups_per_s: f64,
    /// Setup → Connect as the callers measured it, milliseconds: (p50, p99, max).
    pub setup_to_connect_ms: (f64, f64, f64),
}

impl Concurrent {
    /// Every phone in service and every call connected, all up at once.
    pub fn whole(&self) -> bool {
        self.in_service == self.phones
            && self.connected == self.calls
            && self.failed == 0
            && self.peak_active >= self.calls
    }

    /// One line of the bench's block.
    pub fn line(&self) -> String {
        let (p50, p99, max) = self.setup_to_connect_ms;
        format!(
            "{} phones in {PROCESSES} storm processes, {} in service; {} calls asked, {} placed, \
             {} connected, {} failed; at most {} at once; {:.0} set-ups/s; Setup → Connect p50 \
             {p50:.1} p99 {p99:.1} max {max:.1} ms",
            self.phones,
            self.in_service,
            self.calls,
            self.placed,
            self.connected,
            self.failed,
            self.peak_active,
            self.setups_per_s
        )
    }

    fn of(report: &Report, phones: usize, peak_active: u64) -> Concurrent {
        let calls = report.routed_calls.as_ref();
        let latency = calls.map(|c| &c.setup_to_connect_ms);
        Concurrent {
            phones,
            in_service: report.phones - report.phones_without_socket.min(report.phones),
            calls: (phones / 2) as u64,
            placed: calls.map_or(0, |c| c.counts.placed),
            connected: calls.map_or(0, |c| c.counts.connected),
            failed: calls.map_or(0, |c| c.counts.failed.values().sum()),
            peak_active,
            setups_per_s: calls.map_or(0.0, |c| c.setups_per_s),
            setup_to_connect_ms: latency.map_or((0.0, 0.0, 0.0), |l| (l.p50, l.p99, l.max)),
        }
    }
}

/// Reads `rasgk_calls_active` from `/metrics` every 100 ms while `sampling` holds: the most.
fn most_active(admin: SocketAddr, sampling: &AtomicBool) -> u64 {
    let mut most = 0;
    while sampling.load(Ordering::Relaxed) {
        if let Ok((200, text)) = crate::admin_client::http_get(admin, "/metrics") {
            let active = text
                .lines()
                .find_map(|line| line.strip_prefix("rasgk_calls_active "))
                .and_then(|value| value.trim().parse::<u64>().ok());
            most = most.max(active.unwrap_or(0));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    most
}

/// Runs the storm of `phones` phones placing `phones / 2` calls, against a fresh gatekeeper.
pub async fn run(phones: usize) -> Result<Concurrent, String> {
    let phones = phones.clamp(2, MAX_PHONES);
    config_check()?;
    let admin: SocketAddr = ADMIN.parse().expect("an address");
    let text = TOPOLOGY.to_string();
    let gatekeeper = tokio::task::spawn_blocking(move || Served::start(&text, admin))
        .await
        .map_err(|e| format!("the routed calls' gatekeeper could not start: {e}"))??;
    let count = (phones / 2).to_string();
    let (phones_text, processes) = (phones.to_string(), PROCESSES.to_string());
    let (per_s, hold) = (CALLS_PER_S.to_string(), HOLD_S.to_string());
    let line = [
        "rasgk storm",
        "--sockets",
        "--target",
        TARGET,
        "--admin",
        ADMIN,
        "--phones",
        &phones_text,
        "--tts-share",
        "0.5",
        "--regions",
        "1,2,3",
        "--processes",
        &processes,
        "--calls-per-s",
        &per_s,
        "--call-s",
        &hold,
        "--call-total",
        &count,
    ];
    let args = super::storm::parse_storm_line(&line)
        .map_err(|e| format!("the routed calls' storm options: {e}"))?;
    let outcome = super::sockets::sampled_storm(args, "the routed calls' storm", move |sampling| {
        most_active(admin, sampling)
    })
    .await;
    let _ = tokio::task::spawn_blocking(move || gatekeeper.stop()).await;
    let (report, peak) = outcome?;
    Ok(Concurrent::of(&report, phones, peak))
}

/// The embedded topology reads (a broken fixture is the bench's fault, said as such).
fn config_check() -> Result<(), String> {
    crate::config::from_toml(TOPOLOGY, ORIGIN)
        .map(|_| ())
        .map_err(|e| format!("the bench's own {ORIGIN} is broken: {e}"))
}
