//! `Gatekeeper::snapshot_state`, `Gatekeeper::restore` and `Gatekeeper::reload` in virtual
//! time: what survives a restart, under the same configuration and under a changed one, and
//! what a reload keeps of the running state.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rasgk::config::{self, Config};
use rasgk::gatekeeper::state::State;
use rasgk::gatekeeper::Gatekeeper;
use rasgk::phone::{Answer, Phone};
use rasgk::ras::MessageKind;

const WALL: Duration = Duration::from_secs(1_767_225_600);

const TOML: &str = r#"
[gatekeeper]
discovery = "127.0.52.1:1719"
seed = 3
ttl_s = 300
gcf_hold_s = 30
[[region]]
id = 1
networks = ["127.52.0.0/16"]
[[region]]
id = 2
networks = ["127.53.0.0/16"]
[[link]]
regions = [1, 2]
kind = "direct"
[[clan]]
name = "a"
region = 1
address = "127.0.52.11:1719"
max_sockets = 2
[[clan]]
name = "b"
region = 1
address = "127.0.52.12:1719"
max_sockets = 2
[[clan]]
name = "r2"
region = 2
address = "127.0.52.21:1719"
"#;

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn config(edit: impl FnOnce(&mut Config)) -> Config {
    let mut config = config::from_toml(TOML, "restore.toml").unwrap();
    edit(&mut config);
    config
}

fn ask(gk: &mut Gatekeeper, now: Instant, local: &str, phone: &mut Phone, dg: &[u8]) -> Answer {
    let out = gk.handle(now, addr(local), phone.ras_address, dg);
    assert_eq!(out.len(), 1, "{out:?}");
    let answer = Answer::read(&out[0].payload).unwrap();
    phone.learn(&answer);
    answer
}

/// GRQ then RRQ at the C-LAN named; returns it.
fn register(gk: &mut Gatekeeper, now: Instant, phone: &mut Phone) -> String {
    let grq = phone.grq();
    let Answer::Gcf {
        ras_address: Some(clan),
        ..
    } = ask(gk, now, "127.0.52.1:1719", phone, &grq)
    else {
        panic!("GCF expected")
    };
    let rrq = phone.rrq();
    let answer = ask(gk, now, &clan.to_string(), phone, &rrq);
    assert!(matches!(answer, Answer::Rcf { .. }), "{answer:?}");
    gk.clans()
        .into_iter()
        .find(|c| c.address == clan)
        .unwrap()
        .name
}

fn phone(n: u8) -> Phone {
    Phone::extension(
        4000 + u32::from(n),
        SocketAddr::from(([127, 52, 0, n], 5000)),
    )
}

/// Four phones registered (a, b, a, b), one more with only a GCF; the state at 100 s.
fn saved() -> (State, Vec<Phone>, Instant) {
    let start = Instant::now();
    let mut gk = Gatekeeper::new(config(|_| {})).unwrap();
    gk.set_wall_clock(start, WALL);
    let mut phones: Vec<Phone> = (1..=4).map(phone).collect();
    let clans: Vec<String> = phones
        .iter_mut()
        .map(|p| register(&mut gk, start, p))
        .collect();
    assert_eq!(clans, ["a", "b", "a", "b"]);
    let mut waiting = phone(9);
    let grq = waiting.grq();
    assert!(matches!(
        ask(&mut gk, start, "127.0.52.1:1719", &mut waiting, &grq),
        Answer::Gcf { .. }
    ));
    let later = start + Duration::from_secs(100);
    gk.handle_timeout(later);
    (gk.snapshot_state(later), phones, start)
}

fn loads(gk: &Gatekeeper) -> Vec<(String, u32, u32)> {
    gk.clans()
        .into_iter()
        .map(|c| (c.name, c.sockets, c.reserved))
        .collect()
}

#[test]
fn restore_keeps_registrations_loads_and_the_ttl_left() {
    let (state, mut phones, _) = saved();
    assert_eq!(state.registrations.len(), 4);
    // The reservation made at 0 s expired at 30 s, before the snapshot at 100 s.
    assert!(state.reservations.is_empty());
    // Restarted 50 s later (150 s after the registrations, 150 s of TTL left).
    let now = Instant::now();
    let (mut gk, restored) =
        Gatekeeper::restore(config(|_| {}), &state, now, WALL + Duration::from_secs(150)).unwrap();
    assert_eq!((restored.registrations, restored.expired), (4, 0));
    assert!(restored.dropped.is_empty(), "{:?}", restored.dropped);
    assert_eq!(
        loads(&gk),
        [("a".into(), 2, 0), ("b".into(), 2, 0), ("r2".into(), 0, 0)]
    );
    let views = gk.registrations();
    assert_eq!(views.len(), 4);
    // A keep-alive is accepted with the endpoint id of before.
    let rrq = phones[0].keep_alive().unwrap();
    let answer = ask(&mut gk, now, "127.0.52.11:1719", &mut phones[0], &rrq);
    assert!(
        matches!(&answer, Answer::Rcf { endpoint_id, .. } if endpoint_id == "EP00000001"),
        "{answer:?}"
    );
    // Not refreshed, the others expire at 300 s after registering: 150 s after the restart.
    gk.handle_timeout(now + Duration::from_secs(149));
    assert_eq!(gk.registrations().len(), 4);
    gk.handle_timeout(now + Duration::from_secs(150));
    assert_eq!(
        gk.registrations().len(),
        1,
        "only the refreshed one is left"
    );
    // New registrations continue after the highest restored key.
    let mut newcomer = phone(20);
    register(&mut gk, now + Duration::from_secs(151), &mut newcomer);
    assert_eq!(
        newcomer.endpoint_id.as_ref().map(|id| id.text()).as_deref(),
        Some("EP00000005")
    );
}

#[test]
fn a_restart_after_the_ttl_restores_nothing_and_says_so() {
    let (state, _, _) = saved();
    let (gk, restored) = Gatekeeper::restore(
        config(|_| {}),
        &state,
        Instant::now(),
        WALL + Duration::from_secs(301),
    )
    .unwrap();
    assert_eq!((restored.registrations, restored.expired), (0, 4));
    assert!(gk.registrations().is_empty());
}

#[test]
fn what_does_not_fit_a_changed_configuration_is_dropped_with_the_reason() {
    let (state, _, _) = saved();
    // C-LAN b is gone, a is out of service.
    let changed = config(|c| {
        c.clans.retain(|clan| clan.name != "b");
        c.clans[0].in_service = false;
    });
    let (gk, restored) = Gatekeeper::restore(
        changed,
        &state,
        Instant::now(),
        WALL + Duration::from_secs(100),
    )
    .unwrap();
    assert_eq!(restored.dropped.len(), 2, "{:?}", restored.dropped);
    for line in &restored.dropped {
        assert!(
            line.contains("C-LAN \"b\" is not in the configuration"),
            "{line}"
        );
        assert!(line.starts_with("registration EP0000000"), "{line}");
    }
    // The two on a, now out of service, were restored and unregistered with a URQ each.
    assert_eq!(restored.registrations, 2);
    let urqs: Vec<_> = restored
        .transmits
        .iter()
        .filter(|t| {
            rasgk::ras::decode(&t.payload).map(|m| rasgk::ras::kind(&m)) == Ok(MessageKind::Urq)
        })
        .collect();
    assert_eq!(urqs.len(), 2);
    assert!(urqs.iter().all(|t| t.local == addr("127.0.52.11:1719")));
    assert!(gk.registrations().is_empty());
    assert_eq!(loads(&gk), [("a".into(), 0, 0), ("r2".into(), 0, 0)]);
}

#[test]
fn the_state_is_plain_json_that_reads_back_the_same() {
    let (state, _, _) = saved();
    let text = serde_json::to_string(&state).unwrap();
    let back: State = serde_json::from_str(&text).unwrap();
    assert_eq!(back, state);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["version"], 1);
    assert_eq!(value["registrations"][0]["socket"], "a");
    assert_eq!(
        value["registrations"][0]["aliases"][0],
        serde_json::json!({"kind": "dialled-digits", "value": "4001"})
    );
}

#[test]
fn a_reload_keeps_admin_changes_the_file_did_not_touch() {
    let now = Instant::now();
    let mut gk = Gatekeeper::new(config(|_| {})).unwrap();
    let mut p = phone(1);
    assert_eq!(register(&mut gk, now, &mut p), "a");
    let b = gk.clan_by_name("b").unwrap();
    let a = gk.clan_by_name("a").unwrap();
    assert!(gk.set_in_service(now, b, false).is_empty());
    gk.set_cap(a, 1);
    // The same file again: the administrator's changes stay.
    let reloaded = gk.reload(now, config(|_| {})).unwrap();
    assert_eq!(reloaded.registrations, 1);
    assert!(reloaded.transmits.is_empty());
    let view = |gk: &Gatekeeper, name: &str| {
        let c = gk.clans().into_iter().find(|c| c.name == name).unwrap();
        (c.sockets, c.max_sockets, c.in_service)
    };
    assert_eq!(view(&gk, "a"), (1, 1, true));
    assert_eq!(view(&gk, "b"), (0, 2, false));
    // A file that changes a's cap: the file's cap; b stays out of service.
    gk.reload(now, config(|c| c.clans[0].max_sockets = 5))
        .unwrap();
    assert_eq!(view(&gk, "a"), (1, 5, true));
    assert_eq!(view(&gk, "b"), (0, 2, false));
    // The endpoint and its keep-alive are untouched; counters go on.
    let rrq = p.keep_alive().unwrap();
    assert!(matches!(
        ask(&mut gk, now, "127.0.52.11:1719", &mut p, &rrq),
        Answer::Rcf { .. }
    ));
    assert_eq!(gk.stats().registrations, 1);
    assert_eq!(gk.stats().keep_alives, 1);
}

#[test]
fn a_reload_the_core_cannot_run_changes_nothing() {
    let now = Instant::now();
    let mut gk = Gatekeeper::new(config(|_| {})).unwrap();
    let mut p = phone(1);
    register(&mut gk, now, &mut p);
    let error = gk
        .reload(now, config(|c| c.gatekeeper.gatekeeper_id = String::new()))
        .expect_err("no gatekeeper id");
    assert!(error.to_string().contains("gatekeeper_id"), "{error}");
    assert_eq!(gk.registrations().len(), 1);
    assert_eq!(gk.config().gatekeeper.gatekeeper_id, "rasgk");
}
