//! Rebalancing (docs/rules.md §9.2) in a real `rasgk serve` on 127.0.80.x, with 300 phones of
//! a `rasgk storm` that stay registered and follow gatekeeper URQs: a C-LAN taken out of
//! service and brought back stays empty while `[rebalance]` is off (Avaya's behaviour);
//! after a SIGHUP that adds `[rebalance]`, it refills to within `tolerance` of the other,
//! never faster than `moves_per_s`, as `/api/clans` and `/metrics` show. About 15 s.

mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::rate;
use support::server::{http_request, terminate, Served};

const PHONES: u64 = 300;
const TOLERANCE: u64 = 10;
const MOVES_PER_S: f64 = 40.0;

fn config(rebalance: bool) -> String {
    let table = if rebalance {
        format!(
            "[rebalance]\ntolerance = {TOLERANCE}\nmoves_per_s = {MOVES_PER_S}\nhold_off_s = 600\n"
        )
    } else {
        String::new()
    };
    format!(
        r#"
[gatekeeper]
discovery = "127.0.80.1:1719"
seed = 80
gcf_hold_s = 5

[admin]
listen = "127.0.80.1:7000"

{table}
[[region]]
id = 1
networks = ["127.1.0.0/16"]

[[clan]]
name = "r-a"
region = 1
address = "127.0.80.11:1719"
max_sockets = 1000

[[clan]]
name = "r-b"
region = 1
address = "127.0.80.12:1719"
max_sockets = 1000
"#
    )
}

/// (sockets, load = sockets + reservations) of r-a and r-b.
fn clans(served: &Served) -> [(u64, u64); 2] {
    let clans = served.get_json("/api/clans");
    let of = |name: &str| {
        let clan = clans
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("{name} in /api/clans"));
        let sockets = clan["sockets"].as_u64().unwrap();
        (sockets, sockets + clan["reserved"].as_u64().unwrap())
    };
    [of("r-a"), of("r-b")]
}

/// Polls `done` every 50 ms until it holds; panics with `what` after `limit`.
fn wait_for(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    for _ in 0..10_000 {
        if done() {
            return;
        }
        assert!(Instant::now() < deadline, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("gave up polling for {what}");
}

fn set_service(served: &Served, in_service: bool) {
    let body = format!("{{\"in_service\": {in_service}}}");
    let (status, _) = http_request(served.admin, "POST", "/api/clans/r-a/service", None, &body);
    assert_eq!(status, 200);
}

/// The storm: 300 region-1 phones that stay registered (up to 40 s) and follow URQs.
fn storm(log: &PathBuf) -> Child {
    Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args([
            "storm",
            "--target",
            "127.0.80.1:1719",
            "--admin",
            "127.0.80.1:7000",
            "--phones",
            &PHONES.to_string(),
            "--regions",
            "1",
            "--timeout-ms",
            "500",
            "--retries",
            "4",
            "--duration",
            "40",
            "--json",
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("rasgk storm starts")
}

#[test]
fn a_clan_back_in_service_refills_only_with_rebalancing_and_at_its_rate() {
    let dir = std::env::temp_dir();
    let path = dir.join(format!("rasgk-rebalance-{}.toml", std::process::id()));
    let log = dir.join(format!("rasgk-rebalance-storm-{}.log", std::process::id()));
    std::fs::write(&path, config(false)).unwrap();
    let served = Served::start(
        &["--config", path.to_str().unwrap()],
        "127.0.80.1:7000".parse().unwrap(),
    );
    let mut phones = storm(&log);
    let storm_log = || std::fs::read_to_string(&log).unwrap_or_default();

    wait_for(Duration::from_secs(20), "every phone registered", || {
        clans(&served).iter().map(|c| c.0).sum::<u64>() == PHONES
    });
    assert!(
        clans(&served).iter().all(|c| c.0 >= PHONES / 2 - 5),
        "GCF shares them: {:?}",
        clans(&served)
    );

    // r-a out: its phones register at r-b, the one other C-LAN of their AGL.
    set_service(&served, false);
    wait_for(Duration::from_secs(15), "r-a's phones on r-b", || {
        clans(&served) == [(0, 0), (PHONES, PHONES)]
    });

    // Back in service, rebalancing off: nothing moves.
    set_service(&served, true);
    let quiet = Instant::now() + Duration::from_secs(3);
    while Instant::now() < quiet {
        assert_eq!(clans(&served)[0], (0, 0), "nobody goes to r-a");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(served.metric("rasgk_rebalance_moves_total"), 0.0);
    assert_eq!(served.metric("rasgk_rebalance_enabled"), 0.0);

    // SIGHUP with [rebalance]: r-a refills, one phone every 1/40 s at most.
    std::fs::write(&path, config(true)).unwrap();
    let hup = Instant::now();
    let status = Command::new("kill")
        .args(["-HUP", &served.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // (start of the read, end of the read, moves counted)
    let mut samples: Vec<rate::Read> = Vec::new();
    let deadline = hup + Duration::from_secs(20);
    loop {
        let start = Instant::now();
        let moves = served.metric("rasgk_rebalance_moves_total");
        let [(_, a), (_, b)] = clans(&served);
        samples.push((start, Instant::now(), moves));
        if moves > 0.0 && b.abs_diff(a) <= TOLERANCE && a + b == PHONES {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "r-a not refilled in 20 s: r-a {a}, r-b {b}, {moves} moves\n{}",
            storm_log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let converged = hup.elapsed();
    assert_eq!(served.metric("rasgk_rebalance_enabled"), 1.0);
    let moves = served.metric("rasgk_rebalance_moves_total");
    let needed = (PHONES - TOLERANCE).div_ceil(2) as f64;
    assert!(moves >= needed, "{moves} moves, {needed} needed");
    assert!(moves <= needed + 5.0, "{moves} moves, {needed} needed");
    // The rate: between any two reads, at most MOVES_PER_S a second (and one more for a
    // move on the edge); the first move comes after the SIGHUP.
    rate::assert_never_faster(&samples, hup, MOVES_PER_S);
    eprintln!(
        "rebalancing: {moves} moves ({needed} needed) {converged:?} after the SIGHUP, {} reads",
        samples.len()
    );
    // And not much slower than the rate allows.
    let least = Duration::from_secs_f64((needed - 1.0) / MOVES_PER_S);
    assert!(converged >= least, "{converged:?} < {least:?}");
    assert!(
        converged <= least + Duration::from_secs(8),
        "{converged:?} for {needed} moves"
    );
    let view = served.get_json("/api/rebalance");
    assert_eq!(view["enabled"], true);
    assert_eq!(view["last_move"]["from"], "r-b");
    assert_eq!(view["last_move"]["to"], "r-a");
    assert_eq!(view["moves_from"]["r-b"].as_f64(), Some(moves));

    terminate(&mut phones);
    drop(served);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&log);
}
