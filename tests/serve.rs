//! `rasgk serve` and `rasgk check-config` as a user meets them: no arguments runs the
//! embedded default on loopback and answers a GRQ on 127.0.0.1:1719; a bad file is refused
//! with the file, field and reason in the message; SIGTERM stops it cleanly.

mod support;

use std::net::SocketAddr;
use std::process::Command;

use rasgk::phone::{Answer, Phone};
use support::server::{Served, UdpPhone};

fn rasgk(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(args)
        .output()
        .expect("rasgk runs")
}

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

#[test]
fn serve_without_arguments_runs_the_embedded_default() {
    let mut served = Served::start(&[], addr("127.0.0.1:7000"));
    let mut p = UdpPhone::bind(Phone::extension(
        12_345,
        SocketAddr::from(([127, 1, 0, 5], 0)),
    ));
    let (gcf, rcf) = p.register(addr("127.0.0.1:1719"));
    // A region-1 phone on an empty system: the first priority-1 C-LAN of region 1.
    assert_eq!(
        gcf,
        Answer::Gcf {
            seq: 1,
            ras_address: Some(addr("127.0.1.1:1719"))
        }
    );
    match rcf {
        Some(Answer::Rcf { agl, .. }) => {
            // Home: clan-1a..1c and pe-1; direct: clan-2a/2b; indirect (agl = true): 3a/3b.
            assert_eq!(agl.len(), 8, "{agl:?}");
        }
        other => panic!("RCF expected, got {other:?}"),
    }
    let clans = served.get_json("/api/clans");
    let clans = clans.as_array().unwrap();
    assert_eq!(clans.len(), 8);
    let first = &clans[0];
    for key in [
        "name",
        "region",
        "node",
        "address",
        "priority",
        "max_sockets",
        "sockets",
        "reserved",
        "in_service",
    ] {
        assert!(first.get(key).is_some(), "/api/clans lacks {key}: {first}");
    }
    assert_eq!(first["name"], "clan-1a");
    assert_eq!(first["sockets"], 1);
    assert_eq!(first["max_sockets"], 480);
    let registrations = served.get_json("/api/registrations");
    let entry = &registrations[0];
    for key in [
        "endpoint_id",
        "aliases",
        "ras_address",
        "region",
        "clan",
        "tts",
    ] {
        assert!(
            entry.get(key).is_some(),
            "/api/registrations lacks {key}: {entry}"
        );
    }
    assert_eq!(entry["clan"], "clan-1a");
    assert_eq!(entry["aliases"][0], "12345");
    let status = served.stop();
    assert!(status.success(), "SIGTERM ends rasgk cleanly: {status}");
}

#[test]
fn bad_config_files_are_refused_with_the_field_named() {
    let dir = format!("{}/fixtures/config", env!("CARGO_MANIFEST_DIR"));
    for (file, fragment) in [
        ("bad-clan-unknown-region.toml", "clan[1].region"),
        ("bad-unknown-key.toml", "clan[1].colour"),
        ("bad-clan-max-sockets-zero.toml", "clan[1].max_sockets"),
    ] {
        let path = format!("{dir}/{file}");
        for command in [
            &["serve", "--config", &path][..],
            &["check-config", &path][..],
        ] {
            let out = rasgk(command);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
            assert!(
                stderr.contains(file),
                "{command:?} names the file: {stderr}"
            );
            assert!(
                stderr.contains(fragment),
                "{command:?} names {fragment}: {stderr}"
            );
        }
    }
    let out = rasgk(&["serve", "--config", "/nonexistent/rasgk.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/rasgk.toml"));
}

#[test]
fn the_printed_default_checks_clean() {
    let out = rasgk(&["serve", "--print-default-config"]);
    assert!(out.status.success());
    let path = std::env::temp_dir().join(format!("rasgk-default-{}.toml", std::process::id()));
    std::fs::write(&path, &out.stdout).unwrap();
    let check = rasgk(&["check-config", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(stdout.contains("3 regions"), "{stdout}");
    assert!(stdout.contains("8 C-LANs"), "{stdout}");
}
