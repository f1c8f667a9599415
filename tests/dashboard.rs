//! The admin dashboard (`GET /`) in a real browser: `rasgk serve` on
//! `fixtures/lab/dashboard.toml`, phones registering over UDP, and headless Chromium showing
//! the page. The page's C-LAN bars must show what `/api/clans` says, and follow it — in the
//! same page, without a reload — when more phones register; its events list must show the
//! registrations it was sent (an Avaya phone's with its MAC address); a C-LAN over its
//! `warn_sockets` is marked, and unmarked when its phones leave. With `[rebalance]`, its
//! *Rebalancing* panel counts the moves and shows the last one.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rasgk::phone::{Answer, Phone};
use serde_json::Value;
use support::browser::{require_chromium, Browser, WAIT};
use support::server::{http_get, Served, UdpPhone};

const DISCOVERY: &str = "127.0.12.1:1719";
const ADMIN: &str = "127.0.12.1:7000";

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

/// A phone of `region` (127.R.12.N), extension 6RNNN.
fn phone(region: u8, n: u8) -> UdpPhone {
    let extension = 60_000 + u32::from(region) * 1000 + u32::from(n);
    UdpPhone::bind(Phone::extension(
        extension,
        SocketAddr::from(([127, region, 12, n], 0)),
    ))
}

/// GRQ → GCF → RRQ → RCF; the endpoint identifier.
fn register(p: &mut UdpPhone) -> String {
    match p.register(addr(DISCOVERY)) {
        (_, Some(Answer::Rcf { endpoint_id, .. })) => endpoint_id,
        other => panic!("{} not registered: {other:?}", p.phone.ras_address),
    }
}

/// A C-LAN as the test compares it: (sockets, reserved, max_sockets, in_service).
type Load = (u64, u64, u64, bool);

/// `/api/clans` as name → load.
fn api_loads(served: &Served) -> BTreeMap<String, Load> {
    served
        .get_json("/api/clans")
        .as_array()
        .expect("/api/clans is a list")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                (
                    c["sockets"].as_u64().unwrap(),
                    c["reserved"].as_u64().unwrap(),
                    c["max_sockets"].as_u64().unwrap(),
                    c["in_service"].as_bool().unwrap(),
                ),
            )
        })
        .collect()
}

/// The page's C-LAN elements (their `data-*` test hooks) as name → load.
fn page_loads(page: &mut Browser) -> BTreeMap<String, Load> {
    let rows = page.evaluate(
        "[...document.querySelectorAll('[data-clan]')].map(e => [e.dataset.clan, \
         e.dataset.sockets, e.dataset.reserved, e.dataset.max, e.dataset.inService])",
    );
    let number = |v: &Value| v.as_str().and_then(|s| s.parse::<u64>().ok());
    rows.as_array()
        .expect("a list of C-LAN elements")
        .iter()
        .filter_map(|row| {
            let name = row[0].as_str()?.to_string();
            let load = (
                number(&row[1])?,
                number(&row[2])?,
                number(&row[3])?,
                match row[4].as_str()? {
                    "true" => true,
                    "false" => false,
                    _ => return None,
                },
            );
            Some((name, load))
        })
        .collect()
}

/// `/api/regions` summed per region (`sockets`), or `/api/clans` summed by region while the
/// server has no `/api/regions`.
fn api_region_sockets(served: &Served) -> BTreeMap<String, u64> {
    let mut sums = BTreeMap::new();
    match http_get(served.admin, "/api/regions") {
        Ok((200, body)) => {
            let regions: Value = serde_json::from_str(&body).expect("/api/regions is JSON");
            for r in regions.as_array().expect("/api/regions is a list") {
                sums.insert(r["id"].to_string(), r["sockets"].as_u64().unwrap());
            }
        }
        _ => {
            for c in served.get_json("/api/clans").as_array().unwrap() {
                *sums.entry(c["region"].to_string()).or_insert(0) += c["sockets"].as_u64().unwrap();
            }
        }
    }
    sums
}

fn page_region_sockets(page: &mut Browser) -> BTreeMap<String, u64> {
    let rows = page.evaluate(
        "[...document.querySelectorAll('[data-region]')].map(e => [e.dataset.region, e.dataset.sockets])",
    );
    rows.as_array()
        .expect("a list of region panels")
        .iter()
        .filter_map(|row| Some((row[0].as_str()?.to_string(), row[1].as_str()?.parse().ok()?)))
        .collect()
}

/// Waits (at most [`WAIT`]) until the page shows what the admin port says, C-LANs and
/// regions; returns what it showed.
fn wait_for_match(page: &mut Browser, served: &Served, when: &str) -> BTreeMap<String, Load> {
    let deadline = Instant::now() + WAIT;
    loop {
        let api = api_loads(served);
        let shown = page_loads(page);
        let regions_api = api_region_sockets(served);
        let regions_shown = page_region_sockets(page);
        if shown == api && regions_shown == regions_api {
            return shown;
        }
        if Instant::now() > deadline {
            panic!(
                "{when}: after {WAIT:?} the page still differs from the admin port\n\
                 C-LANs, /api/clans: {api:?}\nC-LANs, page:       {shown:?}\n\
                 regions, admin port: {regions_api:?}\nregions, page:       {regions_shown:?}\n\
                 chromium stderr:\n{}",
                page.stderr()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn refreshes(page: &mut Browser) -> u64 {
    let text = page.evaluate("document.getElementById('refreshes').textContent");
    text.as_str()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("#refreshes is not a number: {text}"))
}

#[test]
fn the_dashboard_follows_the_clans_without_a_reload() {
    let Some(chromium) = require_chromium("the_dashboard_follows_the_clans_without_a_reload")
    else {
        return;
    };
    let started = Instant::now();
    let config = format!("{}/fixtures/lab/dashboard.toml", env!("CARGO_MANIFEST_DIR"));
    let served = Served::start(&["--config", &config], addr(ADMIN));

    // Before the page opens: three phones of region 1 (d1-a, d1-b, d1-a).
    let mut phones: Vec<UdpPhone> = (1..=3).map(|n| phone(1, n)).collect();
    for p in &mut phones {
        register(p);
    }

    let mut page = Browser::open(&chromium, &format!("http://{ADMIN}/"));
    page.wait_until(
        "the page to draw its C-LANs",
        "document.querySelectorAll('[data-clan]').length === 5",
    );
    let before = wait_for_match(&mut page, &served, "first load");
    assert_eq!(before["d1-a"], (2, 0, 4, true), "{before:?}");
    assert_eq!(before["d1-b"], (1, 0, 4, true), "{before:?}");
    assert_eq!(before["d2-b"], (0, 0, 4, false), "{before:?}");
    // A mark on the page's window: a reload would lose it.
    page.evaluate("window.rasgkTestMark = 'same page'; true");
    let refreshes_before = refreshes(&mut page);

    // Now five more of region 1 (filling d1-a and d1-b), one more (the priority-2 PE), two of
    // region 2 (d2-a), and a GCF without an RRQ in region 2 (a reservation on d2-a).
    let mut later_ids = BTreeSet::new();
    for n in 4..=9 {
        let mut p = phone(1, n);
        later_ids.insert(register(&mut p));
        phones.push(p);
    }
    let mut last_id = String::new();
    for n in 1..=2 {
        let mut p = phone(2, n);
        if n == 2 {
            // An Avaya phone: the dashboard names it, with its MAC address.
            p.phone.avaya = Some(rasgk::ras::avaya::Mac([0, 0, 0x5e, 0, 0x53, 0x02]));
        }
        last_id = register(&mut p);
        later_ids.insert(last_id.clone());
        phones.push(p);
    }
    let mut holder = phone(2, 3);
    let grq = holder.phone.grq();
    let gcf = holder.ask(addr(DISCOVERY), &grq);
    assert!(matches!(gcf, Answer::Gcf { .. }), "{gcf:?}");

    let after = wait_for_match(&mut page, &served, "after more registrations");
    assert_eq!(after["d1-a"], (4, 0, 4, true), "{after:?}");
    assert_eq!(after["d1-b"], (4, 0, 4, true), "{after:?}");
    assert_eq!(after["d1-pe"], (1, 0, 2, true), "{after:?}");
    assert_eq!(after["d2-a"], (2, 1, 4, true), "{after:?}");
    assert_eq!(after["d2-b"], (0, 0, 4, false), "{after:?}");
    assert_eq!(
        page.evaluate("window.rasgkTestMark"),
        Value::from("same page"),
        "the page was reloaded"
    );
    assert!(
        refreshes(&mut page) > refreshes_before,
        "#refreshes did not count up"
    );

    // The trunk panel shows the fixture's trunk, no call in progress.
    page.wait_until(
        "the trunk panel to list sip-pstn",
        "(() => { const row = document.querySelector('[data-trunk=\"sip-pstn\"]'); \
         return row !== null && row.dataset.active === '0'; })()",
    );

    // Every registration after the page opened is in its events list, newest first.
    let ids_js = serde_json::to_string(&later_ids).unwrap();
    page.wait_until(
        "the events list to show the later registrations",
        &format!(
            "(() => {{ const shown = new Set([...document.querySelectorAll(\
             '#events [data-type=\"registered\"]')].map(e => e.dataset.endpoint)); \
             return {ids_js}.every(id => shown.has(id)); }})()"
        ),
    );
    let newest = page
        .evaluate("document.querySelector('#events [data-type=\"registered\"]').dataset.endpoint");
    assert_eq!(
        newest,
        Value::from(last_id.clone()),
        "the newest registration is not first"
    );
    let said = page
        .evaluate("document.querySelector('#events [data-type=\"registered\"] .what').textContent");
    assert!(
        said.as_str()
            .is_some_and(|text| text.ends_with(", Avaya 00:00:5e:00:53:02")),
        "the Avaya phone's event: {said}"
    );
    let registrations = served.get_json("/api/registrations");
    let avaya: Vec<(&str, &str)> = registrations
        .as_array()
        .expect("/api/registrations is a list")
        .iter()
        .filter(|r| r["avaya"] == Value::Bool(true))
        .map(|r| {
            (
                r["endpoint_id"].as_str().unwrap(),
                r["mac"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(avaya, [(last_id.as_str(), "00:00:5e:00:53:02")]);
    assert_eq!(
        page.evaluate("document.getElementById('status').dataset.state"),
        Value::from("live"),
    );

    // d1-a warns at 3 sockets (the fixture): it has 4, so the page marks it — badge, bar
    // colour and the threshold's mark at 3/4 of its bar — and no other C-LAN; the warning
    // is in the events list, and /metrics has the threshold and the count.
    let warned = |page: &mut Browser| {
        page.evaluate(
            "[...document.querySelectorAll('.clan')].filter(e => e.dataset.warning === 'true' \
             && e.classList.contains('warning') && !e.querySelector('.badge.warn').hidden)\
             .map(e => e.dataset.clan)",
        )
    };
    page.wait_until(
        "d1-a to be marked over its warn_sockets",
        "document.querySelector('[data-clan=\"d1-a\"]').dataset.warning === 'true'",
    );
    assert_eq!(warned(&mut page), serde_json::json!(["d1-a"]));
    assert_eq!(
        page.evaluate(
            "(() => { const m = document.querySelector('[data-clan=\"d1-a\"] .bar .threshold'); \
             return [m.hidden, m.style.left, \
             document.querySelector('[data-clan=\"d1-b\"] .bar .threshold').hidden]; })()"
        ),
        serde_json::json!([false, "75%", true]),
        "the threshold's mark on d1-a's bar only"
    );
    page.wait_until(
        "the events list to show d1-a's warning",
        "[...document.querySelectorAll('#events [data-type=\"clan_warning\"]')]\
         .some(e => e.dataset.clan === 'd1-a' && e.textContent.includes('warning (warn_sockets 3)'))",
    );
    let (_, metrics) = http_get(served.admin, "/metrics").expect("/metrics answers");
    let line = |prefix: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in /metrics"))
            .to_string()
    };
    assert!(line("rasgk_clan_warn_sockets{clan=\"d1-a\"").ends_with(" 3"));
    assert!(!metrics.contains("rasgk_clan_warn_sockets{clan=\"d1-b\""));
    assert_eq!(line("rasgk_clans_warning "), "rasgk_clans_warning 1");

    // Three of d1-a's four phones leave: at 1 socket (below 3 less the hysteresis of 1) the
    // warning clears, on the page too.
    let on_d1a: BTreeSet<String> = served
        .get_json("/api/registrations?clan=d1-a")
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["endpoint_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(on_d1a.len(), 4);
    let mut left = 0;
    for p in phones.iter_mut() {
        let id = p.phone.endpoint_id.as_ref().map(|id| id.text());
        if left == 3 || !id.is_some_and(|id| on_d1a.contains(&id)) {
            continue;
        }
        let urq = p.phone.urq();
        let answer = p.ask(addr("127.0.12.11:1719"), &urq);
        assert!(matches!(answer, Answer::Ucf { .. }), "{answer:?}");
        left += 1;
    }
    assert_eq!(left, 3);
    page.wait_until(
        "d1-a's warning to clear on the page",
        "document.querySelector('[data-clan=\"d1-a\"]').dataset.warning === 'false'",
    );
    assert_eq!(warned(&mut page), serde_json::json!([]));
    page.wait_until(
        "the events list to show d1-a's warning cleared",
        "[...document.querySelectorAll('#events [data-type=\"clan_warning\"]')]\
         .some(e => e.textContent.includes('back to 1 sockets: warning cleared'))",
    );
    let (_, metrics) = http_get(served.admin, "/metrics").expect("/metrics answers");
    assert!(metrics.contains("\nrasgk_clans_warning 0\n"));
    eprintln!("dashboard test: {:?} in all", started.elapsed());
}

/// `[rebalance]` on the page: three phones moved off a crowded C-LAN are counted in the
/// *Rebalancing* panel (with the last move) and listed as `rebalanced` events, as
/// `/api/rebalance` and `/metrics` count them. On 127.0.80.2.
#[test]
fn the_dashboard_shows_rebalancing_moves() {
    let Some(chromium) = require_chromium("the_dashboard_shows_rebalancing_moves") else {
        return;
    };
    // gcf_hold_s is long, so the places held for the moved phones (which do not answer
    // their URQ here) stay counted and the moves stop at three.
    let config = r#"
        [gatekeeper]
        discovery = "127.0.80.2:1719"
        seed = 80
        gcf_hold_s = 600
        [admin]
        listen = "127.0.80.2:7000"
        [rebalance]
        tolerance = 1
        moves_per_s = 20
        [[region]]
        id = 1
        networks = ["127.1.0.0/16"]
        [[clan]]
        name = "m-a"
        region = 1
        address = "127.0.80.21:1719"
        in_service = false
        [[clan]]
        name = "m-b"
        region = 1
        address = "127.0.80.22:1719"
    "#;
    let path = std::env::temp_dir().join(format!("rasgk-dashboard-{}.toml", std::process::id()));
    std::fs::write(&path, config).unwrap();
    let admin = addr("127.0.80.2:7000");
    let served = Served::start(&["--config", path.to_str().unwrap()], admin);
    let mut phones: Vec<UdpPhone> = (1..=6)
        .map(|n| {
            UdpPhone::bind(Phone::extension(
                61_000 + u32::from(n),
                SocketAddr::from(([127, 1, 80, n], 0)),
            ))
        })
        .collect();
    for p in &mut phones {
        match p.register(addr("127.0.80.2:1719")) {
            (_, Some(Answer::Rcf { .. })) => {}
            other => panic!("not registered: {other:?}"),
        }
    }
    let mut page = Browser::open(&chromium, &format!("http://{admin}/"));
    page.wait_until(
        "the page to draw its C-LANs",
        "document.querySelectorAll('[data-clan]').length === 2",
    );
    page.wait_until(
        "the panel to say rebalancing is on",
        "document.getElementById('rebalance').dataset.enabled === 'true' && \
         document.getElementById('rebalance-state').textContent.includes('tolerance 1')",
    );
    // m-a back in service: m-b's 6 against 0 moves three phones (6 → 3, 3 held for them).
    let (status, _) = support::server::http_request(
        admin,
        "POST",
        "/api/clans/m-a/service",
        None,
        r#"{"in_service": true}"#,
    );
    assert_eq!(status, 200);
    page.wait_until(
        "the panel to count three moves",
        "document.getElementById('rebalance').dataset.moves === '3'",
    );
    page.wait_until(
        "the last move on the panel",
        "document.getElementById('rebalance-last').textContent.includes('m-b → m-a')",
    );
    page.wait_until(
        "three rebalanced events",
        "document.querySelectorAll('#events [data-type=\"rebalanced\"]').length === 3 && \
         [...document.querySelectorAll('#events [data-type=\"rebalanced\"]')]\
         .every(e => e.textContent.includes('moved off m-b towards m-a'))",
    );
    let view = served.get_json("/api/rebalance");
    assert_eq!(view["moves"], 3, "{view}");
    let (_, metrics) = http_get(admin, "/metrics").expect("/metrics answers");
    assert!(
        metrics.contains("\nrasgk_rebalance_moves_total{clan=\"m-b\"} 3\n"),
        "{metrics}"
    );
    assert!(metrics.contains("\nrasgk_rebalance_enabled 1\n"));
    let _ = std::fs::remove_file(&path);
}
