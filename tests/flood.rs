//! A flood on loopback (docs/rules.md §12): one source sends 100,000 GRQs as fast as it can
//! while `rasgk storm` registers 1,000 well-behaved phones against a `rasgk serve` on
//! 127.0.71.x with `[limits]` set. Every phone must register once; the flooder gets no more
//! answers than its token bucket allows; and the core's tables — cached replies,
//! reservations, the rate limit's sources, deadlines — stay under their caps in every
//! `/metrics` sample taken while it runs. The caps are set below what the storm alone would
//! use, so each one is reached.

mod support;

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rasgk::phone::Phone;
use support::server::{http_get, Served};

const NET: u8 = 71;
const PHONES: usize = 1_000;
const FLOOD: usize = 100_000;
const RATE: u64 = 20;
const BURST: u64 = 40;
const MAX_SOURCES: u64 = 512;
const MAX_RESERVATIONS: u64 = 64;
const MAX_CACHED_REPLIES: u64 = 1_024;

fn config() -> PathBuf {
    let clans: String = [(1, 11), (1, 12), (2, 21), (3, 31)]
        .iter()
        .map(|(region, host)| {
            format!(
                "[[clan]]\nname = \"c{host}\"\nregion = {region}\n\
                 address = \"127.0.{NET}.{host}:1719\"\nmax_sockets = 500\n"
            )
        })
        .collect();
    let text = format!(
        r#"
[gatekeeper]
discovery = "127.0.{NET}.1:1719"
seed = 71
gcf_hold_s = 5
[admin]
listen = "127.0.{NET}.1:7000"
[limits]
rate_per_source = {RATE}
burst_per_source = {BURST}
max_sources = {MAX_SOURCES}
max_reservations = {MAX_RESERVATIONS}
max_cached_replies = {MAX_CACHED_REPLIES}
[[region]]
id = 1
networks = ["127.1.0.0/16"]
[[region]]
id = 2
networks = ["127.2.0.0/16"]
[[region]]
id = 3
networks = ["127.3.0.0/16"]
[[link]]
regions = [1, 2]
kind = "direct"
[[link]]
regions = [2, 3]
kind = "direct"
{clans}"#
    );
    let path = std::env::temp_dir().join(format!("rasgk-flood-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

/// The gauges and counters of `/metrics` without labels.
fn scalars(admin: SocketAddr) -> BTreeMap<String, u64> {
    let (_, text) = http_get(admin, "/metrics").expect("/metrics answers");
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("/metrics parses");
    scrape
        .samples
        .into_iter()
        .filter(|s| s.labels.is_empty())
        .filter_map(|s| match s.value {
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) => {
                Some((s.metric, v as u64))
            }
            _ => None,
        })
        .collect()
}

/// The flooder: 100,000 GRQs (encoded beforehand) from one socket as fast as `send_to`
/// goes, and a reader counting what comes back. Returns (seconds it took, answers).
fn flood(socket: UdpSocket, grqs: &[Vec<u8>], target: SocketAddr) -> (f64, u64) {
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let reader = socket.try_clone().unwrap();
    let answers = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let counting = {
        let (answers, done) = (answers.clone(), done.clone());
        std::thread::spawn(move || {
            let mut buffer = [0u8; 2048];
            loop {
                match reader.recv_from(&mut buffer) {
                    Ok(_) => {
                        answers.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) if done.load(Ordering::Relaxed) => return,
                    Err(_) => {}
                }
            }
        })
    };
    let start = Instant::now();
    for grq in grqs {
        // A full socket buffer is the kernel dropping the flood; keep going.
        let _ = socket.send_to(grq, target);
    }
    let took = start.elapsed().as_secs_f64();
    // Answers still on their way get a moment; the reader stops after 200 ms of quiet.
    std::thread::sleep(Duration::from_millis(500));
    done.store(true, Ordering::Relaxed);
    counting.join().unwrap();
    (took, answers.load(Ordering::Relaxed))
}

#[test]
fn a_grq_flood_from_one_source_does_not_keep_1000_phones_from_registering() {
    let started = Instant::now();
    let config = config();
    let admin = SocketAddr::from(([127, 0, NET, 1], 7000));
    let target = SocketAddr::from(([127, 0, NET, 1], 1719));
    let served = Served::start(&["--config", config.to_str().unwrap()], admin);

    // Samples /metrics every 50 ms: the largest value of every table seen.
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        std::thread::spawn(move || {
            let mut largest: BTreeMap<String, u64> = BTreeMap::new();
            let mut samples = 0;
            while sampling.load(Ordering::Relaxed) {
                let now = scalars(admin);
                for name in [
                    "rasgk_cached_replies",
                    "rasgk_reservations",
                    "rasgk_rate_limit_sources",
                    "rasgk_timers",
                    "rasgk_registrations",
                    "rasgk_pending_urqs",
                ] {
                    let value = now[name];
                    let entry = largest.entry(name.to_string()).or_default();
                    *entry = (*entry).max(value);
                }
                // A deadline per reservation, registration and unanswered URQ, never more.
                assert!(
                    now["rasgk_timers"]
                        <= now["rasgk_reservations"]
                            + now["rasgk_registrations"]
                            + now["rasgk_pending_urqs"],
                    "{now:?}"
                );
                samples += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            (largest, samples)
        })
    };

    let flooder = UdpSocket::bind(SocketAddr::from(([127, 9, NET, 1], 0))).unwrap();
    let mut phone = Phone::extension(79_999, flooder.local_addr().unwrap());
    let grqs: Vec<Vec<u8>> = (0..FLOOD).map(|_| phone.grq()).collect();

    // The storm, as its own process; the flood starts once its first phone has registered.
    let target_text = target.to_string();
    let admin_text = admin.to_string();
    let phones = PHONES.to_string();
    let storm = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args([
            "storm",
            "--target",
            &target_text,
            "--admin",
            &admin_text,
            "--phones",
            &phones,
            "--regions",
            "1,2,3",
            "--timeout-ms",
            "500",
            "--retries",
            "4",
            "--give-up-s",
            "60",
            // Its registrations are read back after it.
            "--leave-registered",
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rasgk storm starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while scalars(admin)
        .get("rasgk_registrations")
        .copied()
        .unwrap_or(0)
        == 0
    {
        assert!(Instant::now() < deadline, "the storm never began");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (flood_s, flood_answers) = flood(flooder, &grqs, target);
    let out = storm.wait_with_output().expect("rasgk storm ends");
    sampling.store(false, Ordering::Relaxed);
    let (largest, samples) = sampler.join().expect("the sampler never failed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert!(out.status.success(), "rasgk storm failed: {stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("--json prints one JSON object");

    // Every well-behaved phone registered, once.
    assert_eq!(report["registered"], PHONES, "every phone registered");
    let registrations = served.get_json("/api/registrations");
    assert_eq!(registrations.as_array().unwrap().len(), PHONES);

    // The flooder got what its bucket allows: the burst, then RATE a second.
    let end = scalars(admin);
    let allowed = BURST + RATE * (flood_s.ceil() as u64 + 1);
    assert!(
        flood_answers <= allowed,
        "the flooder got {flood_answers} answers in {flood_s:.2} s (at most {allowed})"
    );
    assert!(end["rasgk_rate_limited_total"] > 0);
    assert!(
        end["rasgk_rate_limited_total"] + flood_answers <= FLOOD as u64,
        "{end:?}"
    );

    // Bounded: every table under its cap in every sample, and each cap reached.
    eprintln!(
        "flood: {FLOOD} GRQs in {flood_s:.2} s, {flood_answers} answered, {} dropped unread \
         by the rate limit (the rest the kernel dropped); largest in {samples} samples: \
         {largest:?}; forgotten sources {}, reservations dropped {}, cached replies evicted {}; \
         {:.1?} in all",
        end["rasgk_rate_limited_total"],
        end["rasgk_rate_limit_sources_forgotten_total"],
        end["rasgk_reservations_dropped_total"],
        end["rasgk_cached_replies_evicted_total"],
        started.elapsed()
    );
    assert!(samples >= 3, "{samples} samples");
    assert!(largest["rasgk_cached_replies"] <= MAX_CACHED_REPLIES);
    assert!(largest["rasgk_reservations"] <= MAX_RESERVATIONS);
    assert!(largest["rasgk_rate_limit_sources"] <= MAX_SOURCES);
    assert!(end["rasgk_rate_limit_sources_forgotten_total"] > 0);
    assert!(end["rasgk_cached_replies_evicted_total"] > 0);
    assert!(end["rasgk_reservations_dropped_total"] > 0);
    let _ = std::fs::remove_file(config);
}
