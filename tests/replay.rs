//! `rasgk replay` against `fixtures/replay/storm-20.pcap` (recorded by
//! `examples/record_fixture.rs` on `fixtures/replay/lab.toml`): in-process in virtual time and
//! over loopback UDP against `rasgk serve`, with every C-LAN in service (no differences) and
//! with r3-b out of service (exactly region 3's differences). The shared third-party captures
//! replay in-process without a panic.

mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use rasgk::replay::{self, Difference, Report};
use support::captures;
use support::server::Served;

const R3_A: &str = "127.0.20.31:1719";
const R3_B: &str = "127.0.20.32:1719";

/// The UDP tests bind the same addresses (the capture's C-LANs): one at a time.
static UDP: Mutex<()> = Mutex::new(());

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/replay")
        .join(name)
}

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn capture() -> rasgk::pcap::Capture {
    rasgk::pcap::read_file(fixture("storm-20.pcap")).expect("the fixture reads")
}

fn in_process(out_of_service: &[&str]) -> Report {
    let path = fixture("lab.toml");
    let config = rasgk::config::load(&path).expect("lab.toml loads");
    let names: Vec<String> = out_of_service.iter().map(|s| s.to_string()).collect();
    replay::in_process_report("storm-20.pcap", &capture(), config, "lab.toml", &names)
        .expect("the replay runs")
}

/// What taking r3-b out of service must change, read from the capture alone: region 3
/// (127.3/16) stands alone with room to spare, so its phones' GRQs that were sent to r3-b
/// go to r3-a instead, and every RCF a region-3 phone gets lists only r3-a (AGL 2 → 1).
/// Regions 1 and 2 never see region 3's C-LANs: nothing of theirs changes.
fn expected_with_r3b_out() -> BTreeMap<usize, Vec<Difference>> {
    let plan = replay::plan(&capture());
    let mut expected = BTreeMap::new();
    for request in &plan.requests {
        let phone = plan.phones[request.phone];
        if phone.ip().to_string().starts_with("127.3.") {
            let captured = request
                .captured
                .as_ref()
                .expect("every request was answered");
            if captured.ras_address == Some(addr(R3_B)) {
                expected.insert(
                    request.frame,
                    vec![Difference::RasAddress {
                        captured: Some(addr(R3_B)),
                        replayed: Some(addr(R3_A)),
                    }],
                );
            }
            if let Some(agl) = captured.agl {
                assert_eq!(agl, 2, "frame {}: region 3 has two C-LANs", request.frame);
                expected.insert(
                    request.frame,
                    vec![Difference::AglLength {
                        captured: 2,
                        replayed: 1,
                    }],
                );
            }
        }
    }
    expected
}

#[test]
fn in_process_replay_of_the_fixture_has_no_difference() {
    let report = in_process(&[]);
    assert_eq!(report.counts.requests, 47, "{}", report.text());
    assert_eq!(report.counts.answered, 47, "{}", report.text());
    assert_eq!(report.counts.identical, 47, "{}", report.text());
    assert_eq!(report.counts.different, 0, "{}", report.text());
    assert_eq!(report.counts.unanswered, 0, "{}", report.text());
    assert_eq!(report.phones, 21);
    assert_eq!(report.skipped.undecodable, 0);
    assert!(report.differences.is_empty());
    assert!(!report.has_differences());
    // The same inputs give the same report.
    assert_eq!(report, in_process(&[]));
}

#[test]
fn in_process_replay_with_r3b_out_of_service_differs_only_in_region_3() {
    let report = in_process(&["r3-b"]);
    let got: BTreeMap<usize, Vec<Difference>> = report
        .differences
        .iter()
        .map(|row| (row.frame, row.differences.clone()))
        .collect();
    let expected = expected_with_r3b_out();
    // 3 GCFs named r3-b (frames 21, 53, 77); 8 RCFs went to region-3 phones (6 full
    // registrations, 2 keep-alives).
    let gcfs = expected
        .values()
        .filter(|d| matches!(d[0], Difference::RasAddress { .. }))
        .count();
    assert_eq!((gcfs, expected.len()), (3, 11));
    assert_eq!(got, expected, "{}", report.text());
    assert_eq!(report.counts.different, 11);
    assert_eq!(report.counts.identical, 36);
    assert_eq!(report.counts.unanswered, 0);
    // The keep-alive of 3002, captured at r3-b, followed the phone to r3-a.
    let keep_alive = report
        .differences
        .iter()
        .find(|row| row.peer == addr("127.3.0.6:20006") && row.seq == 3)
        .expect("3002's keep-alive differs in its AGL");
    assert_eq!(keep_alive.sent_to, addr(R3_A));
}

#[test]
fn in_process_replay_names_an_unknown_clan() {
    let config = rasgk::config::load(&fixture("lab.toml")).unwrap();
    let error = replay::in_process_report("x", &capture(), config, "lab.toml", &["r9".into()])
        .expect_err("no C-LAN r9");
    assert_eq!(
        error.to_string(),
        "--out-of-service r9: lab.toml has no C-LAN of that name \
         (C-LANs: r1-a, r1-b, r2-a, r3-a, r3-b)"
    );
}

/// `rasgk replay ARGS`: (exit code, stdout, stderr).
fn rasgk_replay(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .arg("replay")
        .args(args)
        .output()
        .expect("rasgk runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn udp_replay_json(strict_code: i32) -> serde_json::Value {
    let file = fixture("storm-20.pcap");
    let (code, stdout, stderr) = rasgk_replay(&[
        file.to_str().unwrap(),
        "--target",
        "127.0.20.1:1719",
        "--strict",
        "--json",
        "--timeout-ms",
        "500",
    ]);
    assert_eq!(code, strict_code, "stdout: {stdout}\nstderr: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn udp_replay_against_a_fresh_gatekeeper_has_no_difference() {
    let _one_at_a_time = UDP.lock().unwrap_or_else(|e| e.into_inner());
    let served = Served::start(
        &["--config", fixture("lab.toml").to_str().unwrap()],
        addr("127.0.20.1:7000"),
    );
    let report = udp_replay_json(0);
    let counts = &report["counts"];
    assert_eq!(counts["requests"], 47, "{report}");
    assert_eq!(counts["identical"], 47, "{report}");
    assert_eq!(counts["different"], 0, "{report}");
    assert_eq!(counts["unanswered"], 0, "{report}");
    assert_eq!(report["differences"], serde_json::json!([]));
    // The phones' RAS addresses changed port, so the RRQs were rewritten; nothing was sent
    // off loopback.
    assert!(report["traffic"]["rewritten"].as_u64().unwrap() > 0);
    assert_eq!(report["traffic"]["retargeted"], 0);
    // The gatekeeper holds what the capture left: 19 registrations (20 minus the URQ).
    assert_eq!(
        served
            .get_json("/api/registrations")
            .as_array()
            .unwrap()
            .len(),
        19
    );
}

#[test]
fn udp_replay_against_a_gatekeeper_without_r3b_lists_region_3s_differences() {
    let _one_at_a_time = UDP.lock().unwrap_or_else(|e| e.into_inner());
    let text = std::fs::read_to_string(fixture("lab.toml")).unwrap();
    let r3b = "address = \"127.0.20.32:1719\"\n";
    assert!(text.contains(r3b));
    let variant = text.replace(r3b, &format!("{r3b}in_service = false\n"));
    let path =
        std::env::temp_dir().join(format!("rasgk-replay-r3b-out-{}.toml", std::process::id()));
    std::fs::write(&path, variant).unwrap();
    let _served = Served::start(
        &["--config", path.to_str().unwrap()],
        addr("127.0.20.1:7000"),
    );
    let report = udp_replay_json(1);
    let _ = std::fs::remove_file(&path);
    let got: BTreeMap<usize, serde_json::Value> = report["differences"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|row| {
            (
                row["frame"].as_u64().unwrap() as usize,
                row["differences"].clone(),
            )
        })
        .collect();
    let expected: BTreeMap<usize, serde_json::Value> = expected_with_r3b_out()
        .into_iter()
        .map(|(frame, d)| (frame, serde_json::to_value(d).unwrap()))
        .collect();
    assert_eq!(got, expected, "{report}");
    assert_eq!(report["counts"]["different"], 11);
    assert_eq!(report["counts"]["unanswered"], 0);
}

#[test]
fn unreadable_capture_and_silent_target_exit_2() {
    // Its RRQs go to the capture's C-LAN addresses, which the UDP tests serve on.
    let _one_at_a_time = UDP.lock().unwrap_or_else(|e| e.into_inner());
    let (code, _, stderr) = rasgk_replay(&["/nonexistent/x.pcap", "--in-process"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("/nonexistent/x.pcap"), "{stderr}");
    // Nothing listens on 127.0.21.1, nor (with the lock held) on the fixture's C-LANs.
    let file = fixture("storm-20.pcap");
    let (code, _, stderr) = rasgk_replay(&[
        file.to_str().unwrap(),
        "--target",
        "127.0.21.1:1719",
        "--timeout-ms",
        "1",
        "--retries",
        "0",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("no reply from the gatekeeper at 127.0.21.1:1719"),
        "{stderr}"
    );
}

#[test]
fn shared_captures_replay_in_process_without_a_panic() {
    let Some(dir) = captures::dir("shared_captures_replay_in_process_without_a_panic") else {
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .pcap in {}", dir.display());
    for file in files {
        let capture = rasgk::pcap::read_file(&file).expect("a shared capture reads");
        let report = replay::in_process_report(
            &file.display().to_string(),
            &capture,
            rasgk::config::embedded_default(),
            "default.toml",
            &[],
        )
        .expect("in-process replay runs");
        let c = &report.counts;
        eprintln!(
            "{}: {} requests, {} answered, {} identical, {} different, {} unanswered; {} undecodable",
            file.display(),
            c.requests,
            c.answered,
            c.identical,
            c.different,
            c.unanswered,
            report.skipped.undecodable
        );
        assert!(c.requests > 0, "{}", report.text());
        assert_eq!(c.answered + c.unanswered, c.requests);
        assert_eq!(c.identical + c.different, c.requests);
    }
}
