//! Storms that leave nothing behind (docs/storms.md): a storm unregisters its phones when it
//! ends, and when it is interrupted (Ctrl-C); one whose aliases another endpoint holds stops
//! at once and says who holds them; one that leaves its phones registered
//! (`--leave-registered`) lets their time to live run out, and the gatekeeper's log has no
//! word of declined sockets for them. Real `rasgk serve` and `rasgk storm` processes on
//! loopback (`fixtures/lab/routed.toml`: socket mode, routed calls), judged by the
//! gatekeeper's admin port, its log and the operating system's count of connections.

mod support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::lab::{self, os_and_admin, storm, until};
use support::server::Served;

/// `fixtures/lab/routed.toml` moved to 127.0.NET.x, `more` added to `[gatekeeper]`, its log
/// written to `log` when given.
fn serve(net: u8, more: &str, log: Option<&PathBuf>) -> Served {
    let config = lab::moved("routed.toml", 47, net, more);
    let admin: SocketAddr = format!("127.0.{net}.1:7000").parse().unwrap();
    Served::start_logging(
        &["--config", config.to_str().unwrap()],
        admin,
        log.map(PathBuf::as_path),
    )
}

/// What the gatekeeper holds: registrations, places (sockets and reservations) on its
/// C-LANs, and connections (established, being set up, and routed calls' connections), by
/// its admin port.
fn held(served: &Served) -> (usize, u64, u64) {
    let registrations = served.get_json("/api/registrations");
    let clans = served.get_json("/api/clans");
    let sum = |field: &str| -> u64 {
        let clans = clans.as_array().unwrap();
        clans.iter().map(|c| c[field].as_u64().unwrap_or(0)).sum()
    };
    (
        registrations.as_array().unwrap().len(),
        sum("sockets") + sum("reserved"),
        sum("established") + sum("setups") + sum("call_connections"),
    )
}

/// The gatekeeper's resident memory, kB.
fn resident_kb(served: &Served) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", served.child.id())).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// Storms in a row against one gatekeeper, in socket mode with routed calls: every one
/// registers every phone and connects every call, and after each the gatekeeper holds no
/// registration, no place and no connection (by its admin port and by the OS), its memory
/// flat. (The drill is ten storms of 2,000 phones; docs/storms.md has its figures.)
#[test]
fn storms_in_a_row_register_every_phone_and_leave_nothing_behind() {
    const PHONES: u64 = 300;
    let net = 93;
    let served = serve(net, "", None);
    let mut resident = Vec::new();
    for round in 0..3 {
        let child = storm(
            net,
            PHONES as usize,
            "0.3",
            &["--calls-per-s", "60", "--call-s", "1", "--call-total", "60"],
        );
        let report = lab::report(child, Duration::from_secs(120));
        assert_eq!(report["registered"], PHONES, "round {round}");
        assert_eq!(report["unregistered"], PHONES, "round {round}: {report}");
        assert_eq!(report["unregister_failed"], 0);
        assert_eq!(report["rejected"], serde_json::json!({}), "round {round}");
        let calls = &report["routed_calls"];
        assert_eq!(calls["connected"], 60, "round {round}: {calls}");
        until(
            Duration::from_secs(10),
            &format!("round {round}: nothing held"),
            || held(&served) == (0, 0, 0),
        );
        let (os, _) = os_and_admin(&served);
        assert!(
            os.values().all(|&n| n == 0),
            "round {round}: connections the OS still counts on the C-LANs: {os:?}"
        );
        resident.push(resident_kb(&served));
    }
    assert_eq!(served.series("rasgk_tts_declines_total"), 0.0);
    let (first, last) = (resident[0], *resident.last().unwrap());
    assert!(
        last <= first + first / 4,
        "resident memory after each storm, kB: {resident:?}"
    );
}

/// A storm whose extensions an earlier storm's phones still hold (they were left
/// registered, and the new phones come from the same IPs with new ports) is refused
/// `duplicateAlias`: each phone stops at that first rejection, the storm ends within 5 s
/// with one line for the reason, naming the holder, and no phone sent more than 3 RRQs.
#[test]
fn a_storm_whose_aliases_are_held_elsewhere_stops_at_once_and_names_the_holder() {
    const PHONES: usize = 40;
    let net = 94;
    let served = serve(net, "", None);
    let first = storm(net, PHONES, "0.3", &["--leave-registered"]);
    let report = lab::report(first, Duration::from_secs(60));
    assert_eq!(report["left_registered"], true);
    assert_eq!(held(&served).0, PHONES);

    let rrqs = || served.series("rasgk_ras_received_total{type=\"RRQ\"}");
    let before = rrqs();
    let began = Instant::now();
    let second = storm(net, PHONES, "0.3", &[]);
    let (status, report) = second.report_and_status(Duration::from_secs(60));
    let took = began.elapsed();
    assert_eq!(status.code(), Some(1), "{report}");
    assert!(took < Duration::from_secs(5), "the storm took {took:?}");
    assert_eq!(report["registered"], 0);
    let refused = &report["refused"]["RRJ duplicateAlias"];
    assert_eq!(refused["phones"], PHONES as u64, "{report}");
    let example = &refused["examples"][0];
    let holder = example["held_by"].as_str().expect("the holder named");
    assert!(holder.starts_with("EP"), "{example}");
    let phone: SocketAddr = example["phone"].as_str().unwrap().parse().unwrap();
    let from: SocketAddr = example["held_from"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        phone.ip(),
        from.ip(),
        "the same IP, another port: {example}"
    );
    assert_ne!(phone, from);
    let advice = refused["advice"].as_str().unwrap();
    for says in [holder, "earlier storm", "--from", "api/registrations/"] {
        assert!(advice.contains(says), "{says:?} in {advice}");
    }
    // The registrations held are the first storm's, untouched.
    assert_eq!(held(&served).0, PHONES);
    let sent = rrqs() - before;
    assert!(
        sent <= 3.0 * PHONES as f64,
        "{sent} RRQs from {PHONES} phones"
    );
}

/// `--leave-registered`: the phones' registrations stay after the storm and expire at their
/// time to live; the TTS sockets the gatekeeper tries to set up again meanwhile fail to
/// connect (the storm's listener is gone) and back off, which the log says once per phone,
/// never as a declined socket.
#[test]
fn phones_left_registered_expire_at_their_ttl_and_no_socket_is_called_declined() {
    const PHONES: usize = 40;
    let net = 95;
    let log = std::env::temp_dir().join(format!("rasgk-leave-{}.log", std::process::id()));
    let served = serve(net, "ttl_s = 6", Some(&log));
    let child = storm(
        net,
        PHONES,
        "0.5",
        &["--leave-registered", "--duration", "2"],
    );
    let report = lab::report(child, Duration::from_secs(60));
    assert_eq!(report["registered"], PHONES as u64);
    assert_eq!(report["unregistered"], 0);
    let ended = Instant::now();
    assert_eq!(held(&served).0, PHONES, "left registered");
    until(Duration::from_secs(20), "the registrations expired", || {
        held(&served) == (0, 0, 0)
    });
    let expired_after = ended.elapsed();
    assert!(
        expired_after >= Duration::from_secs(2),
        "expired after {expired_after:?}: the TTL is 6 s"
    );
    assert_eq!(served.series("rasgk_tts_declines_total"), 0.0);
    drop(served);
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_file(&log).ok();
    assert!(
        !text.contains("declined"),
        "a declined socket in the log:\n{text}"
    );
    let cannot = text.matches("cannot be opened").count();
    assert!(
        cannot <= PHONES / 2,
        "{cannot} lines of unopened sockets for {} TTS phones:\n{text}",
        PHONES / 2
    );
}

/// Ctrl-C (SIGINT) in the middle of a storm: it ends early, its phones unregister and the
/// report says it was interrupted — in one storm process, and in two (the parent ends its
/// children through their standard input).
#[test]
fn ctrl_c_ends_a_storm_early_and_its_phones_unregister() {
    const PHONES: usize = 60;
    let net = 96;
    let served = serve(net, "", None);
    for processes in ["1", "2"] {
        let child = storm(
            net,
            PHONES,
            "0.3",
            &["--duration", "120", "--processes", processes],
        );
        until(Duration::from_secs(30), "every phone registered", || {
            held(&served).0 == PHONES
        });
        let interrupted_at = Instant::now();
        let kill = Command::new("kill")
            .args(["-INT", &child.pid().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let (status, report): (_, Value) = child.report_and_status(Duration::from_secs(30));
        let took = interrupted_at.elapsed();
        assert!(
            status.success(),
            "{processes} processes: {status}: {report}"
        );
        assert!(
            took < Duration::from_secs(10),
            "ended {took:?} after Ctrl-C"
        );
        assert_eq!(report["interrupted"], true);
        assert_eq!(report["unregistered"], PHONES as u64, "{report}");
        until(
            Duration::from_secs(5),
            "nothing held after the interrupted storm",
            || held(&served) == (0, 0, 0),
        );
    }
}
