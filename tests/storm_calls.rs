//! Routed calls between storm phones, end to end on loopback (docs/rules.md §8.7): `rasgk
//! serve` with `fixtures/lab/routed.toml` against `rasgk storm --sockets --calls-per-s`. The
//! gatekeeper's admin port (`/api/calls`, `/api/clans`, `/api/registrations`, `/metrics`)
//! and the OS's count of TCP connections (`/proc/net/tcp`) judge the storm's report.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::lab::{self, clans, os_and_admin, report, storm, until};
use support::server::Served;

/// `fixtures/lab/routed.toml` moved to 127.0.NET.x (47 is its own).
fn serve(net: u8) -> Served {
    let config = lab::moved("routed.toml", 47, net, "");
    let admin: SocketAddr = format!("127.0.{net}.1:7000").parse().unwrap();
    Served::start(&["--config", config.to_str().unwrap()], admin)
}

/// Every registration's socket C-LAN by `endpoint_id`, once all `phones` have registered
/// with their sockets established (at most `within`).
fn socket_clans(served: &Served, phones: usize, within: Duration) -> BTreeMap<String, String> {
    let mut clans = BTreeMap::new();
    until(
        within,
        "every phone registered, its socket established",
        || {
            let registrations = served.get_json("/api/registrations");
            let registrations = registrations.as_array().unwrap();
            clans = registrations
                .iter()
                .filter(|r| r["socket"] == "established")
                .map(|r| {
                    let id = r["endpoint_id"].as_str().unwrap().to_string();
                    (id, r["clan"].as_str().unwrap_or_default().to_string())
                })
                .collect();
            registrations.len() == phones && clans.len() == phones
        },
    );
    clans
}

/// The routed calls `/api/calls` lists now.
fn routed_calls(served: &Served) -> Vec<Value> {
    let calls = served.get_json("/api/calls");
    let calls = calls.as_array().unwrap();
    calls
        .iter()
        .filter(|c| c["kind"] == "routed")
        .cloned()
        .collect()
}

/// The issue's acceptance test: 2,000 phones (half TTS, three regions, in three storm
/// processes, so a callee is mostly in another process than its caller) place 1,000 routed
/// calls at 100 a second, each held 3 s.
#[test]
fn a_thousand_routed_calls_between_two_thousand_phones_connect_on_the_clans_of_their_sockets() {
    const PHONES: usize = 2_000;
    const CALLS: u64 = 1_000;
    let net = 47;
    let mut served = serve(net);
    let began = Instant::now();
    let mut child = storm(
        net,
        PHONES,
        "0.5",
        &[
            "--calls-per-s",
            "100",
            "--call-s",
            "3",
            "--call-total",
            "1000",
            "--processes",
            "3",
            // The phones stay this long after the last registration, past the calls' end
            // (some 14 s later), so that their sockets can be counted with no call left.
            "--duration",
            "22",
        ],
    );
    let socket_clan = socket_clans(&served, PHONES, Duration::from_secs(60));
    let registered_after = began.elapsed();

    // While the calls go on, every sample: no C-LAN over its cap; each leg of each call on
    // the C-LAN of its phone's socket. At the peak: the OS's connections on the C-LANs are
    // the admin port's, a socket a phone (no connection beyond them). After the last call:
    // the same, and the gatekeeper counted every call connected.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = BTreeSet::new();
    let (mut samples, mut legs, mut peak, mut counted_at_peak) = (0, 0, 0, 0);
    let mut counted_after = false;
    while !child.ended() {
        assert!(Instant::now() < deadline, "the storm did not end");
        samples += 1;
        for (name, _, established, places, _, cap) in clans(&served) {
            assert!(places <= cap, "{name}: {places} places over its cap {cap}");
            assert!(
                established <= cap,
                "{name}: {established} over its cap {cap}"
            );
        }
        let calls = routed_calls(&served);
        for call in &calls {
            for (leg, party) in [("caller_leg", "caller"), ("callee_leg", "callee")] {
                let phone = call[party].as_str().unwrap();
                assert_eq!(
                    call[leg]["clan"].as_str(),
                    socket_clan.get(phone).map(String::as_str),
                    "{leg} of {call}: the C-LAN of {phone}'s socket"
                );
                legs += 1;
            }
            seen.insert(call["call_id"].as_str().unwrap().to_string());
        }
        peak = peak.max(calls.len());
        if calls.len() >= 200 && counted_at_peak < 3 {
            let (os, admin) = os_and_admin(&served);
            assert_eq!(os, admin, "with {} calls up", calls.len());
            assert_eq!(admin.values().sum::<u64>(), PHONES as u64);
            counted_at_peak += 1;
        }
        let all_over = seen.len() as u64 == CALLS && calls.is_empty();
        if all_over && !counted_after {
            let (os, admin) = os_and_admin(&served);
            assert_eq!(os, admin, "after the last call");
            assert_eq!(admin.values().sum::<u64>(), PHONES as u64);
            counted_after = true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let report = report(child, Duration::from_secs(10));
    eprintln!(
        "{samples} samples, {legs} legs checked, {} calls seen, at most {peak} at once; \
         registered after {registered_after:?}, all over after {:?}",
        seen.len(),
        began.elapsed()
    );
    assert_eq!(
        seen.len() as u64,
        CALLS,
        "every call was seen in /api/calls"
    );
    assert!(
        counted_at_peak > 0,
        "never 200 calls at once (at most {peak})"
    );
    assert!(
        counted_after,
        "the sockets were never counted after the calls"
    );

    let calls = &report["routed_calls"];
    assert_eq!(calls["placed"], CALLS, "{calls}");
    assert_eq!(calls["connected"], CALLS, "{calls}");
    assert_eq!(calls["failed"], serde_json::json!({}), "{calls}");
    assert_eq!(calls["answered"], CALLS);
    assert_eq!(calls["in_progress_at_end"], 0);
    assert_eq!(calls["in_progress_at_end_admin"], 0);
    assert_eq!(served.series("rasgk_calls_connected_total"), CALLS as f64);
    // The report's sockets are the gatekeeper's: every phone held its socket in service in
    // every 100-ms slot from the first Setup to the last call's end, and at the end.
    assert_eq!(report["phones_without_socket"], 0);
    let held: u64 = report["sockets_held"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(held, PHONES as u64);
    let (from, to) = (
        calls["started_s"].as_f64().unwrap(),
        calls["ended_s"].as_f64().unwrap(),
    );
    let during: Vec<u64> = report["in_service"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| (from..=to).contains(&s["t"].as_f64().unwrap()))
        .map(|s| s["sockets"].as_u64().unwrap())
        .collect();
    assert!(during.len() >= 100, "{from} s to {to} s: {during:?}");
    assert!(during.iter().all(|&n| n == PHONES as u64), "{during:?}");
    // The peaks per C-LAN come from the admin port's samples: every C-LAN carried calls,
    // and their sum is at least the most calls seen at once (a call has one or two legs).
    let peaks: BTreeMap<String, u64> =
        serde_json::from_value(calls["peak_calls_per_clan"].clone()).unwrap();
    assert_eq!(peaks.len(), 16, "{peaks:?}");
    assert!(peaks.values().all(|&n| n > 0), "{peaks:?}");
    let p50 = calls["setup_to_connect_ms"]["p50"].as_f64().unwrap();
    let p99 = calls["setup_to_connect_ms"]["p99"].as_f64().unwrap();
    assert!(p50 > 0.0 && p50 <= p99, "{calls}");
    eprintln!(
        "{} Setups/s; Setup → Connect ms {}; peaks {peaks:?}",
        calls["setups_per_s"], calls["setup_to_connect_ms"]
    );
    served.stop();
}

/// Calls to a number nobody registered fail by what the gatekeeper answers: its Release
/// Complete with cause 20 (subscriber absent) to a Setup sent without ARQ, its ARJ to an
/// ARQ.
#[test]
fn calls_to_a_number_nobody_registered_fail_by_the_gatekeepers_answer() {
    let net = 48;
    let mut served = serve(net);
    let calls_to_nobody = [
        "--calls-per-s",
        "20",
        "--call-total",
        "10",
        "--call-to",
        "99999",
        "--unregister",
    ];
    let mut pregranted = calls_to_nobody.to_vec();
    pregranted.push("--pregranted");
    let child = storm(net, 20, "0.5", &pregranted);
    let (status, report) = child.report_and_status(Duration::from_secs(60));
    assert_eq!(status.code(), Some(1), "calls failed: exit status 1");
    assert_eq!(report["registered"], 20);
    let calls = &report["routed_calls"];
    assert_eq!(calls["placed"], 10, "{calls}");
    assert_eq!(calls["setups"], 10, "{calls}");
    assert_eq!(calls["connected"], 0, "{calls}");
    assert_eq!(
        calls["failed"],
        serde_json::json!({"cause_20": 10}),
        "{calls}"
    );
    let ended = r#"rasgk_calls_ended_total{reason="called_party_not_registered"}"#;
    assert_eq!(served.series(ended), 10.0);

    let child = storm(net, 20, "0.5", &calls_to_nobody);
    let (status, report) = child.report_and_status(Duration::from_secs(60));
    assert_eq!(status.code(), Some(1));
    let calls = &report["routed_calls"];
    assert_eq!(calls["setups"], 0, "refused before any Setup: {calls}");
    assert_eq!(
        calls["failed"],
        serde_json::json!({"arj_calledPartyNotRegistered": 10}),
        "{calls}"
    );
    assert_eq!(report["rejected"]["ARJ calledPartyNotRegistered"], 10);
    assert_eq!(
        served.series(ended),
        10.0,
        "no Setup reached the gatekeeper"
    );
    served.stop();
}

/// Routed calls need the phones' sockets: the storm refuses `--calls-per-s` without
/// `--sockets`, and the options that go with it without `--calls-per-s`, saying what to add.
#[test]
fn routed_call_options_without_what_they_need_are_refused_with_what_to_add() {
    for (line, says) in [
        ("--calls-per-s 5 --call-total 10", "add --sockets"),
        (
            "--sockets --call-s 3",
            "--call-s is for routed calls: add --calls-per-s",
        ),
        (
            "--sockets --calls-per-s 5",
            "give --call-total N, or --duration S",
        ),
        (
            "--sockets --calls-per-s 5 --call-total 3 --phones 1",
            "--phones 2 or more",
        ),
        (
            "--sockets --calls-per-s 5 --call-total 3 --call-to 12a",
            "must be dialled digits",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
            .arg("storm")
            .args(line.split_whitespace())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{line}: {stderr}");
        assert!(stderr.contains(says), "{line}: {stderr}");
    }
}
