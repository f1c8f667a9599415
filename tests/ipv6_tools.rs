//! The tools with IPv6 (docs/rules.md §17): a capture of IPv6 phones registering — made here
//! by the core itself, phones on ::1 — is read by `rasgk decode` with its IPv6 addresses, and
//! replayed by `rasgk replay` in-process and over UDP against `rasgk serve` on ::1 without a
//! difference; the admin views and `rasgk status` show the C-LANs' IPv6 addresses.

mod support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use rasgk::pcap::{Datagram, PcapWriter};
use rasgk::phone::{Answer, Phone};
use support::core::CoreLab;
use support::server::Served;

/// IPv6 on ::1, the one IPv6 address loopback has: the IPv6 discovery address on RAS's other
/// port (1718), an IPv6-only C-LAN on 1719, beside a dual-stack C-LAN whose IPv6 address is
/// ::1 too on another port, and an IPv4-only one.
const LAB: &str = r#"
[gatekeeper]
discovery = "127.0.65.1:1719"
discovery6 = "[::1]:1718"
seed = 65

[admin]
listen = "127.0.65.1:7000"

[[region]]
id = 1
networks = ["127.65.0.0/16", "::1/128"]

[[clan]]
name = "v4"
region = 1
address = "127.0.65.11:1719"

[[clan]]
name = "v6"
region = 1
address6 = "[::1]:1719"

[[clan]]
name = "dual"
region = 1
address = "127.0.65.13:1719"
address6 = "[::1]:31721"
priority = 2
"#;

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rasgk-ipv6-tools-{}-{name}", std::process::id()))
}

/// Four IPv6 phones on ::1 registering through the core (GRQ at the IPv6 discovery
/// address, RRQ where the GCF says), every datagram both ways written to a pcap.
fn capture() -> PathBuf {
    let mut lab = CoreLab::with_config(LAB, "ipv6-tools.toml");
    let mut datagrams = Vec::new();
    let mut time = Duration::from_secs(1_767_225_600);
    let mut exchange =
        |lab: &mut CoreLab, phone: &mut Phone, to: SocketAddr, request: Vec<u8>| -> Answer {
            time += Duration::from_millis(10);
            datagrams.push(Datagram {
                frame: 0,
                time,
                src: phone.ras_address,
                dst: to,
                payload: request.clone(),
            });
            let out = lab
                .gatekeeper
                .handle(lab.now, to, phone.ras_address, &request);
            assert_eq!(out.len(), 1);
            datagrams.push(Datagram {
                frame: 0,
                time: time + Duration::from_millis(1),
                src: out[0].local,
                dst: out[0].to,
                payload: out[0].payload.to_vec(),
            });
            let answer = Answer::read(&out[0].payload).unwrap();
            phone.learn(&answer);
            answer
        };
    for n in 1..=4u16 {
        let mut phone = Phone::extension(
            6500 + u32::from(n),
            SocketAddr::new("::1".parse().unwrap(), 41_000 + n),
        );
        let grq = phone.grq();
        let clan = match exchange(&mut lab, &mut phone, addr("[::1]:1718"), grq) {
            Answer::Gcf {
                ras_address: Some(clan),
                ..
            } => clan,
            other => panic!("expected GCF, got {other:?}"),
        };
        assert!(clan.is_ipv6(), "{clan}");
        let rrq = phone.rrq();
        assert!(matches!(
            exchange(&mut lab, &mut phone, clan, rrq),
            Answer::Rcf { .. }
        ));
    }
    let path = temp("capture.pcap");
    let mut writer = PcapWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    for datagram in &datagrams {
        writer.write(datagram).unwrap();
    }
    writer.flush().unwrap();
    path
}

fn rasgk(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(args)
        .output()
        .expect("rasgk runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn an_ipv6_capture_decodes_and_replays_in_process_and_over_udp_without_a_difference() {
    let pcap = capture();
    let pcap_text = pcap.to_str().unwrap();

    // decode: sixteen messages, every address IPv6.
    // (The GCFs name [::1]:1719, the IPv6-only C-LAN, the best class.)
    let (code, stdout, stderr) = rasgk(&["decode", "--json", pcap_text]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines.len(), 16, "{stdout}");
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(&types[..4], ["GRQ", "GCF", "RRQ", "RCF"]);
    assert!(stdout.contains("ip6Address"), "{stdout}");
    assert!(
        !stdout.contains("\"ipAddress\""),
        "an IPv4 address sent: {stdout}"
    );

    // replay in-process on the same lab: nothing differs.
    let lab = temp("lab.toml");
    std::fs::write(&lab, LAB).unwrap();
    let (code, stdout, stderr) = rasgk(&[
        "replay",
        pcap_text,
        "--config",
        lab.to_str().unwrap(),
        "--strict",
        "--json",
    ]);
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["counts"]["requests"], 8, "{stdout}");
    assert_eq!(report["counts"]["identical"], 8, "{stdout}");
    assert_eq!(report["differences"], serde_json::json!([]));

    // replay over UDP against rasgk serve on the same lab, the phones on ::1.
    let served = Served::start(
        &["--config", lab.to_str().unwrap()],
        addr("127.0.65.1:7000"),
    );
    let (code, stdout, stderr) = rasgk(&[
        "replay",
        pcap_text,
        "--target",
        "[::1]:1718",
        "--strict",
        "--json",
        "--timeout-ms",
        "500",
    ]);
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["counts"]["identical"], 8, "{stdout}");
    assert_eq!(report["counts"]["unanswered"], 0, "{stdout}");
    assert_eq!(report["differences"], serde_json::json!([]));
    let registrations = served.get_json("/api/registrations");
    let registrations = registrations.as_array().unwrap();
    assert_eq!(registrations.len(), 4);
    assert!(registrations
        .iter()
        .all(|r| r["ras_address"].as_str().unwrap().starts_with("[::1]:")));

    // The admin views and rasgk status name the C-LANs' addresses as configured.
    let clans = served.get_json("/api/clans");
    assert_eq!(clans[0]["address"], "127.0.65.11:1719");
    assert!(clans[0].get("address6").is_none(), "{clans}");
    assert_eq!(clans[1]["address"], "[::1]:1719");
    assert_eq!(clans[2]["address"], "127.0.65.13:1719");
    assert_eq!(clans[2]["address6"], "[::1]:31721");
    // Every IPv6 phone on the IPv6-only C-LAN (priority 1), none on the IPv4 one.
    assert_eq!(clans[1]["sockets"], 4, "{clans}");
    assert_eq!(clans[0]["sockets"], 0, "{clans}");
    let (code, table, _) = rasgk(&["status", "--admin", "127.0.65.1:7000"]);
    assert_eq!(code, 0);
    assert!(table.contains("[::1]:1719"), "{table}");
    let _ = std::fs::remove_file(&pcap);
    let _ = std::fs::remove_file(&lab);
}
