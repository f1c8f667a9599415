//! Ten C-LANs of which the 9th and the 10th share an IP (two RAS ports on one address, so one
//! signalling address), in count mode, end to end: phones register on both, and every view —
//! `/api/clans`, `/metrics`, `rasgk status` and the dashboard — shows all ten with their own
//! loads. A per-C-LAN table keyed by the signalling address once lost the last C-LAN of the
//! file from every view.

mod support;

use std::net::SocketAddr;
use std::process::Command;

use rasgk::phone::{Answer, Phone};
use support::browser::{require_chromium, Browser};
use support::server::{http_get, Served, UdpPhone};

const ADMIN: &str = "127.0.64.1:7000";

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn serve() -> Served {
    let mut text = String::from(
        "[gatekeeper]\ndiscovery = \"127.0.64.1:1719\"\nseed = 64\n\
         [admin]\nlisten = \"127.0.64.1:7000\"\n\
         [[region]]\nid = 1\nnetworks = [\"127.1.0.0/16\"]\n",
    );
    for n in 1..=10 {
        let address = match n {
            9 => "127.0.64.19:1719".to_string(),
            10 => "127.0.64.19:1729".to_string(),
            n => format!("127.0.64.{}:1719", 10 + n),
        };
        text.push_str(&format!(
            "[[clan]]\nname = \"c{n}\"\nregion = 1\naddress = \"{address}\"\n"
        ));
    }
    let path = std::env::temp_dir().join(format!("rasgk-shared-ip-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    Served::start(&["--config", path.to_str().unwrap()], addr(ADMIN))
}

#[test]
fn every_clan_shows_in_every_view_when_two_share_an_ip() {
    let served = serve();
    // Phones registering straight at the two C-LANs that share 127.0.64.19: one at c9, two
    // at c10 (a full RRQ may arrive at any C-LAN of the phone's region).
    for (n, clan) in [
        (1u8, "127.0.64.19:1719"),
        (2, "127.0.64.19:1729"),
        (3, "127.0.64.19:1729"),
    ] {
        let mut phone = UdpPhone::bind(Phone::extension(
            6400 + u32::from(n),
            addr(&format!("127.1.64.{n}:1719")),
        ));
        let rrq = phone.phone.rrq();
        match phone.ask(addr(clan), &rrq) {
            Answer::Rcf { .. } => {}
            other => panic!("expected RCF from {clan}, got {other:?}"),
        }
    }
    let want = |name: &str| match name {
        "c9" => 1,
        "c10" => 2,
        _ => 0,
    };

    // /api/clans: all ten, each its own load.
    let clans = served.get_json("/api/clans");
    let clans = clans.as_array().unwrap();
    let names: Vec<&str> = clans.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10"]
    );
    for clan in clans {
        let name = clan["name"].as_str().unwrap();
        assert_eq!(clan["sockets"], want(name), "{name}: {clan}");
    }

    // /metrics: a sample per C-LAN of rasgk_clan_sockets, all ten.
    let (status, text) = http_get(served.admin, "/metrics").unwrap();
    assert_eq!(status, 200);
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("/metrics parses");
    let mut sockets: Vec<(String, f64)> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == "rasgk_clan_sockets")
        .map(|s| {
            let value = match s.value {
                prometheus_parse::Value::Gauge(v) => v,
                ref other => panic!("{other:?}"),
            };
            (s.labels.get("clan").unwrap().to_string(), value)
        })
        .collect();
    sockets.sort_by_key(|(name, _)| name[1..].parse::<u32>().unwrap());
    assert_eq!(sockets.len(), 10, "{sockets:?}");
    for (name, value) in &sockets {
        assert_eq!(*value, f64::from(want(name)), "{name}");
    }

    // rasgk status: a line per C-LAN, the two sharing the IP with their own loads.
    let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(["status", "--admin", ADMIN])
        .output()
        .expect("rasgk status runs");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    for n in 1..=10 {
        let name = format!("c{n}");
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name.as_str()))
            .unwrap_or_else(|| panic!("no line for {name} in\n{table}"));
        let load = format!(" {} +0 ", want(&name));
        assert!(line.contains(&load), "{name}: {line:?}");
    }
    assert!(table.contains("C-LANs 10 (10 in service)"), "{table}");

    // The dashboard: ten C-LAN rows with the same loads.
    let Some(chromium) = require_chromium("every_clan_shows_in_every_view_when_two_share_an_ip")
    else {
        return;
    };
    let mut page = Browser::open(&chromium, &format!("http://{ADMIN}/"));
    page.wait_until(
        "the page to draw its C-LANs with their loads",
        "[...document.querySelectorAll('[data-clan][data-sockets]')].length === 10 && \
         document.querySelector('[data-clan=\"c10\"][data-sockets]').dataset.sockets === '2' && \
         document.querySelector('[data-clan=\"c9\"][data-sockets]').dataset.sockets === '1'",
    );
}
