//! `rasgk storm` against `rasgk serve` on loopback: 5,000 phones (half TTS) of three regions
//! all register exactly once, the loads follow the rules, and the report's figures equal the
//! admin port's — also with 10 % simulated loss each way, and spread over three storm
//! processes.

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use support::server::Served;

const PHONES: usize = 5_000;

fn fixture(name: &str) -> String {
    format!("{}/fixtures/lab/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `fixtures/lab/storm.toml` moved to 127.0.NET.x, so storms can run side by side.
fn config_on(net: u8) -> PathBuf {
    let text = std::fs::read_to_string(fixture("storm.toml"))
        .unwrap()
        .replace("127.0.30.", &format!("127.0.{net}."));
    let path = std::env::temp_dir().join(format!("rasgk-storm-{}-{net}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

fn storm(net: u8, loss: f64, report_dir: Option<&PathBuf>) -> Value {
    storm_of(net, PHONES, loss, report_dir, &[])
}

fn storm_of(
    net: u8,
    phones: usize,
    loss: f64,
    report_dir: Option<&PathBuf>,
    more: &[&str],
) -> Value {
    let target = format!("127.0.{net}.1:1719");
    let admin = format!("127.0.{net}.1:7000");
    let phones = phones.to_string();
    let loss = loss.to_string();
    let mut args = vec![
        "storm",
        "--target",
        &target,
        "--admin",
        &admin,
        "--phones",
        &phones,
        "--tts-share",
        "0.5",
        "--regions",
        "1,2,3",
        "--loss",
        &loss,
        "--seed",
        "7",
        "--timeout-ms",
        "500",
        "--retries",
        "4",
        "--give-up-s",
        "120",
        // What the gatekeeper holds is checked against the report after the storm.
        "--leave-registered",
        "--json",
    ];
    let dir;
    if let Some(path) = report_dir {
        dir = path.to_string_lossy().into_owned();
        args.extend(["--report-dir", &dir]);
    }
    args.extend(more);
    let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(&args)
        .output()
        .expect("rasgk storm runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "rasgk storm failed: {stderr}");
    eprintln!("{stderr}");
    serde_json::from_slice(&out.stdout).expect("--json prints one JSON object")
}

/// Everything that must hold after a storm of `PHONES`, checked against the admin port.
fn check(served: &Served, report: &Value) {
    check_phones(served, report, PHONES);
}

/// Everything that must hold after a storm of `phones`, checked against the admin port.
fn check_phones(served: &Served, report: &Value, phones: usize) {
    assert_eq!(report["phones"], phones);
    assert_eq!(report["registered"], phones, "every phone registered");
    assert_eq!(report["clans_source"], "admin");

    let clans = served.get_json("/api/clans");
    let clans = clans.as_array().unwrap();
    let admin_sockets: BTreeMap<String, u64> = clans
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().into(),
                c["sockets"].as_u64().unwrap(),
            )
        })
        .collect();
    let report_sockets: BTreeMap<String, u64> =
        serde_json::from_value(report["clans"].clone()).unwrap();
    assert_eq!(
        report_sockets, admin_sockets,
        "the report's C-LANs are /api/clans"
    );
    assert_eq!(
        admin_sockets.values().sum::<u64>(),
        phones as u64,
        "one socket a phone"
    );
    for clan in clans {
        assert!(clan["sockets"].as_u64() <= clan["max_sockets"].as_u64());
    }
    // Reservations are transient: a GRQ retransmission that waited in an overloaded
    // gatekeeper's queue past the 10 s hold makes a new one, which expires after gcf_hold_s
    // (5 s here) and never becomes a socket.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let clans = served.get_json("/api/clans");
        let reserved: u64 = clans
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["reserved"].as_u64().unwrap())
            .sum();
        if reserved == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{reserved} reservations never expired"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let regions = served.get_json("/api/regions");
    for region in regions.as_array().unwrap() {
        let id = region["id"].to_string();
        assert_eq!(report["regions"][&id], region["sockets"], "region {id}");
    }

    // Exactly once: every alias registered, by one endpoint, under its own identifier.
    let registrations = served.get_json("/api/registrations");
    let registrations = registrations.as_array().unwrap();
    assert_eq!(registrations.len(), phones);
    let ids: BTreeSet<&str> = registrations
        .iter()
        .map(|r| r["endpoint_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), phones);
    let aliases: BTreeSet<u32> = registrations
        .iter()
        .map(|r| r["aliases"][0].as_str().unwrap().parse().unwrap())
        .collect();
    let expected: BTreeSet<u32> = (60_000..60_000 + phones as u32 / 2)
        .chain(50_000..50_000 + phones as u32 / 2)
        .collect();
    assert_eq!(aliases, expected);

    // The rules (docs/rules.md §5.4, §7.1): a non-TTS phone's socket is where its RRQ went,
    // in its home region (there is room everywhere); a TTS phone's socket is an AGL entry of
    // its home or a directly linked region.
    let region_of: HashMap<&str, u64> = clans
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["region"].as_u64().unwrap()))
        .collect();
    let direct: HashMap<u64, Vec<u64>> = [(1, vec![2]), (2, vec![1, 3]), (3, vec![2])].into();
    let mut tts = 0;
    for r in registrations {
        let home = r["region"].as_u64().unwrap();
        let ras: SocketAddr = r["ras_address"].as_str().unwrap().parse().unwrap();
        assert_eq!(
            ras.ip().to_string().split('.').nth(1),
            Some(home.to_string().as_str())
        );
        let clan = r["clan"].as_str().expect("every phone holds a socket");
        let alias = r["aliases"][0].as_str().unwrap();
        assert_eq!(r["tts"], alias.starts_with('5'), "{alias}");
        if r["tts"] == true {
            tts += 1;
            let agl: Vec<&str> = r["agl"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect();
            assert!(
                agl.contains(&clan),
                "{alias}: socket {clan} outside its AGL {agl:?}"
            );
            let there = region_of[clan];
            assert!(
                there == home || direct[&home].contains(&there),
                "{alias}: {clan}"
            );
        } else {
            assert_eq!(r["registered_via"], clan, "{alias}");
            assert_eq!(
                region_of[clan], home,
                "{alias}: non-TTS socket outside its home region"
            );
        }
    }
    assert_eq!(tts, phones / 2);
}

#[test]
fn five_thousand_phones_register_exactly_once() {
    let served = Served::start(
        &["--config", &fixture("storm.toml")],
        "127.0.30.1:7000".parse().unwrap(),
    );
    let dir = std::env::temp_dir().join(format!("rasgk-storm-report-{}", std::process::id()));
    let report = storm(30, 0.0, Some(&dir));
    check(&served, &report);
    assert_eq!(report["rejected"], serde_json::json!({}));
    assert!(report["rate_per_s"].as_f64().unwrap() > 0.0);
    let latency = &report["latency_ms"];
    assert!(latency["p50"].as_f64() <= latency["p99"].as_f64());
    assert!(latency["p99"].as_f64() <= latency["max"].as_f64());
    // --report-dir: the same report as JSON, and the chart.
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(written["clans"], report["clans"]);
    let svg = std::fs::read_to_string(dir.join("load.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<polyline").count(), 7, "one line per C-LAN");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ten_percent_loss_each_way_still_registers_every_phone_once() {
    let config = config_on(31);
    let served = Served::start(
        &["--config", config.to_str().unwrap()],
        "127.0.31.1:7000".parse().unwrap(),
    );
    let report = storm(31, 0.1, None);
    check(&served, &report);
    assert!(report["retransmissions"].as_u64().unwrap() > 0);
    assert!(report["dropped"].as_u64().unwrap() > 0);
    let metrics = support::server::http_get(served.admin, "/metrics")
        .unwrap()
        .1;
    let answered_again: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("rasgk_retransmissions_total "))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(
        answered_again > 0,
        "lost replies were answered from the cache"
    );
    let _ = std::fs::remove_file(config);
}

#[test]
fn a_storm_with_calls_reports_the_per_node_distribution() {
    let served = Served::start(
        &["--config", &fixture("storm-calls.toml")],
        "127.0.32.1:7000".parse().unwrap(),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args([
            "storm",
            "--target",
            "127.0.32.1:1719",
            "--admin",
            "127.0.32.1:7000",
            "--phones",
            "300",
            "--calls",
            "2",
            "--dial",
            "9",
            "--json",
        ])
        .output()
        .expect("rasgk storm runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["registered"], 300);
    assert_eq!(report["calls"], 600);
    assert_eq!(report["calls_refused"], 0);
    let node_of = |address: &str| match address {
        "127.0.32.101:1720" => "cm1",
        "127.0.32.102:1720" => "cm2",
        "127.0.32.103:1720" => "cm3",
        other => panic!("{other} is no node"),
    };
    let seen: BTreeMap<String, u64> = report["calls_per_node"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(address, n)| (node_of(address).to_string(), n.as_u64().unwrap()))
        .collect();
    let reported: BTreeMap<String, u64> =
        serde_json::from_value(report["trunk_calls_per_node"].clone()).unwrap();
    // /api/trunks: calls placed since start per node.
    let trunks = served.get_json("/api/trunks");
    let mut admin: BTreeMap<String, u64> = BTreeMap::new();
    for trunk in trunks.as_array().unwrap() {
        for node in trunk["per_node"].as_array().unwrap() {
            let total = node["total"].as_u64().unwrap();
            if total > 0 {
                *admin
                    .entry(node["node"].as_str().unwrap().to_string())
                    .or_default() += total;
            }
        }
    }
    assert_eq!(
        seen, admin,
        "what the phones were told is what /api/trunks counted"
    );
    assert_eq!(
        reported
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .collect::<BTreeMap<_, _>>(),
        admin
    );
    assert!(
        !seen.contains_key("cm1"),
        "the trunk is not active on cm1: {seen:?}"
    );
    // Half the phones are on c2 (cm2): their 300 calls leave from cm2; the cm1 phones' 300
    // go to cm2 or cm3 at random, so both carry some.
    assert!(seen["cm2"] >= 300, "{seen:?}");
    assert!(seen.get("cm3").copied().unwrap_or(0) > 50, "{seen:?}");
    let active: u64 = trunks
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["active"].as_u64().unwrap())
        .sum();
    assert_eq!(active, 0, "every call ended with DRQ");
}

#[test]
fn three_storm_processes_add_up_to_one_storm() {
    let config = config_on(71);
    let served = Served::start(
        &["--config", config.to_str().unwrap()],
        "127.0.71.1:7000".parse().unwrap(),
    );
    let record = std::env::temp_dir().join(format!("rasgk-storm-{}-71.pcap", std::process::id()));
    let phones = 3_000;
    let report = storm_of(
        71,
        phones,
        0.0,
        None,
        &["--processes", "3", "--record", record.to_str().unwrap()],
    );
    assert_eq!(report["processes"], 3);
    check_phones(&served, &report, phones);
    assert!(report["registration_s"].as_f64().unwrap() > 0.0);
    let latency = &report["latency_ms"];
    assert!(latency["p50"].as_f64() > Some(0.0));
    assert!(latency["p99"].as_f64() <= latency["max"].as_f64());
    // One capture of all three processes: every phone's GRQ and RCF is in it, from every
    // source address once.
    let capture = rasgk::pcap::read_file(&record).unwrap();
    let mut grq_sources = BTreeSet::new();
    let mut rcfs = 0;
    for datagram in &capture.datagrams {
        match rasgk::ras::decode(&datagram.payload).unwrap() {
            rasgk::ras::RasMessage::gatekeeperRequest(_) => {
                grq_sources.insert(datagram.src);
            }
            rasgk::ras::RasMessage::registrationConfirm(_) => rcfs += 1,
            _ => {}
        }
    }
    assert_eq!(grq_sources.len(), phones, "a GRQ from every phone");
    assert!(rcfs >= phones, "{rcfs} RCFs");
    assert!(
        capture.datagrams.windows(2).all(|w| w[0].time <= w[1].time),
        "the capture is in time order"
    );
    let _ = std::fs::remove_file(record);
    let _ = std::fs::remove_file(config);
}

#[test]
fn one_storm_process_holds_more_phones_than_it_may_open_files() {
    // The phones share one port (a socket), so 600 phones need no 600 files: with an
    // open-file limit of 64, soft and hard, one process registers them all.
    let config = config_on(74);
    let served = Served::start(
        &["--config", config.to_str().unwrap()],
        "127.0.74.1:7000".parse().unwrap(),
    );
    let phones = 600;
    let out = Command::new("sh")
        .args([
            "-c",
            &format!(
                "ulimit -Sn 64 && ulimit -Hn 64 && exec {} storm --target 127.0.74.1:1719 \
                 --admin 127.0.74.1:7000 --phones {phones} --tts-share 0.5 --regions 1,2,3 \
                 --leave-registered --json",
                env!("CARGO_BIN_EXE_rasgk")
            ),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("--json prints one object");
    assert_eq!(report["processes"], 1);
    check_phones(&served, &report, phones);
    let _ = std::fs::remove_file(config);
}

/// The security-denied requests /metrics counts, all kinds together.
fn security_denied(served: &Served) -> u64 {
    let metrics = support::server::http_get(served.admin, "/metrics")
        .unwrap()
        .1;
    metrics
        .lines()
        .filter(|l| l.starts_with("rasgk_security_denied_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn a_thousand_phones_with_the_password_register_and_phones_with_another_do_not() {
    // The storm topology with a [[password]] for every extension the storm gives out
    // (TTS 50000…, the others 60000…) and five more (61000…) for the wrong password.
    let config = config_on(33);
    let phones = 1_000u32;
    let mut text = std::fs::read_to_string(&config).unwrap();
    let extensions = (50_000..50_000 + phones / 2)
        .chain(60_000..60_000 + phones / 2)
        .chain(61_000..61_005);
    for extension in extensions {
        text += &format!("\n[[password]]\nalias = \"{extension}\"\nsecret = \"s3cret\"\n");
    }
    std::fs::write(&config, text).unwrap();
    let served = Served::start(
        &["--config", config.to_str().unwrap()],
        "127.0.33.1:7000".parse().unwrap(),
    );
    let report = storm_of(33, phones as usize, 0.0, None, &["--password", "s3cret"]);
    check_phones(&served, &report, phones as usize);
    assert_eq!(report["rejected"], serde_json::json!({}));
    assert_eq!(security_denied(&served), 0, "every token was right");

    // Five phones with another password (their own extensions, so no alias is taken):
    // every RRQ denied, none registered.
    let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args([
            "storm",
            "--target",
            "127.0.33.1:1719",
            "--admin",
            "127.0.33.1:7000",
            "--phones",
            "5",
            "--from",
            "61000",
            "--regions",
            "1",
            "--password",
            "guess",
            "--timeout-ms",
            "200",
            "--retries",
            "1",
            "--give-up-s",
            "2",
            "--json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "not every phone registered: {stderr}"
    );
    let wrong: Value = serde_json::from_slice(&out.stdout).expect("--json prints one object");
    assert_eq!(wrong["registered"], 0, "{stderr}");
    assert!(
        wrong["rejected"]["RRJ securityDenial"].as_u64() >= Some(5),
        "{}",
        wrong["rejected"]
    );
    // A phone turned away with nowhere else to try waits a RAS timer (200 ms) before it
    // asks again, for its 2 s: at most 11 tries each, not one a round trip.
    assert!(
        wrong["rejected"]["RRJ securityDenial"].as_u64() <= Some(5 * 11),
        "{}",
        wrong["rejected"]
    );
    assert!(security_denied(&served) >= 5);
    let registrations = served.get_json("/api/registrations");
    assert_eq!(
        registrations.as_array().map(Vec::len),
        Some(phones as usize),
        "only the thousand"
    );
    let _ = std::fs::remove_file(config);
}

/// The process ids whose parent is `parent`, read from `/proc/*/stat`, with each one's start
/// time (so a reused id is not taken for the same process).
fn children_of(parent: u32) -> Vec<(u32, u64)> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Some((ppid, _, started)) = stat(pid) {
            if ppid == parent {
                children.push((pid, started));
            }
        }
    }
    children
}

/// `(parent, state, start time)` of a process from `/proc/PID/stat`; `None` once it is gone.
fn stat(pid: u32) -> Option<(u32, char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: the fields follow the last `)`.
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    Some((
        fields.get(1)?.parse().ok()?,
        state,
        fields.get(19)?.parse().ok()?,
    ))
}

#[test]
fn killing_a_multi_process_storm_ends_its_children() {
    // A storm of two processes whose parent is killed (by a harness's timeout, say) must not
    // leave its children holding phones until --duration runs out.
    let config = config_on(75);
    let served = Served::start(
        &["--config", config.to_str().unwrap()],
        "127.0.75.1:7000".parse().unwrap(),
    );
    let phones = 200;
    let mut parent = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args([
            "storm",
            "--target",
            "127.0.75.1:1719",
            "--admin",
            "127.0.75.1:7000",
            "--phones",
            &phones.to_string(),
            "--regions",
            "1,2,3",
            "--processes",
            "2",
            "--duration",
            "120",
            "--json",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until both children run and every phone is registered.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let children = loop {
        let children = children_of(parent.id());
        let sockets: u64 = served
            .get_json("/api/clans")
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["sockets"].as_u64().unwrap())
            .sum();
        if children.len() == 2 && sockets == phones as u64 {
            break children;
        }
        assert!(
            parent.try_wait().unwrap().is_none(),
            "the storm ended before it was killed"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "{} children, {sockets} sockets after 60 s",
            children.len()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    parent.kill().unwrap();
    parent.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let running: Vec<u32> = children
            .iter()
            .filter(|(pid, started)| {
                matches!(stat(*pid), Some((_, state, at)) if at == *started && state != 'Z')
            })
            .map(|(pid, _)| *pid)
            .collect();
        if running.is_empty() {
            break;
        }
        if std::time::Instant::now() > deadline {
            for pid in &running {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
            panic!("storm children {running:?} still run 10 s after their parent was killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = std::fs::remove_file(config);
}
