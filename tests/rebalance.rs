//! Rebalancing in virtual time (docs/rules.md §9.2, `[rebalance]`): the clock moves only from
//! one `poll_timeout()` to the next, and phones do what a phone does with a gatekeeper URQ —
//! answer UCF and send a full RRQ to the first entry of its AGL — at the instant it arrives.
//!
//! Off (the default), a C-LAN back in service stays empty for hours and no timer is armed; on,
//! it refills to within `tolerance` of its class in the time `moves_per_s` needs, never
//! faster, never moving a phone in a call nor one moved within `hold_off_s`; bad `[rebalance]`
//! values are refused naming the file and the key.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rasgk::config;
use rasgk::gatekeeper::events::{Ending, Event};
use rasgk::gatekeeper::{Command, Gatekeeper, Transmit};
use rasgk::phone::{Answer, Phone};

const DISCOVERY: &str = "127.0.0.1:1719";
/// Long enough that no registration runs out while the tests advance hours.
const TTL_S: u64 = 86_400;

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

/// Region 1: a1 and a2 (priority 1), and `a3` (priority 2) when `with_a3`; region 2 (direct):
/// b1 and b2. `rebalance` is the `[rebalance]` table's body, if any; `extra` more sections.
fn topology(rebalance: Option<&str>, with_a3: bool, extra: &str) -> String {
    let rebalance = rebalance.map_or(String::new(), |body| format!("[rebalance]\n{body}\n"));
    let a3 = if with_a3 {
        "[[clan]]\nname = \"a3\"\nregion = 1\naddress = \"127.0.1.3:1719\"\npriority = 2\n"
    } else {
        ""
    };
    format!(
        r#"
        [gatekeeper]
        discovery = "{DISCOVERY}"
        seed = 9
        ttl_s = {TTL_S}
        {rebalance}
        [[region]]
        id = 1
        networks = ["127.1.0.0/16"]
        [[region]]
        id = 2
        networks = ["127.2.0.0/16"]
        [[link]]
        regions = [1, 2]
        kind = "direct"

        [[clan]]
        name = "a1"
        region = 1
        address = "127.0.1.1:1719"
        [[clan]]
        name = "a2"
        region = 1
        address = "127.0.1.2:1719"
        {a3}
        [[clan]]
        name = "b1"
        region = 2
        address = "127.0.2.1:1719"
        [[clan]]
        name = "b2"
        region = 2
        address = "127.0.2.2:1719"
        {extra}
        "#
    )
}

/// One rebalancing move as the events told it, with its virtual time.
#[derive(Debug, Clone)]
struct Move {
    at: Duration,
    alias: String,
    from: String,
    to: String,
}

/// A gatekeeper, its virtual clock, and phones that follow its URQs.
struct Lab {
    gatekeeper: Gatekeeper,
    start: Instant,
    now: Instant,
    phones: Vec<Phone>,
    moves: Vec<Move>,
    /// Every gatekeeper URQ, by the phone's alias, with its time.
    urqs: Vec<(Duration, String)>,
    /// Socket mode: connections the gatekeeper closed.
    closed: usize,
}

impl Lab {
    fn new(toml: &str) -> Lab {
        let config = config::from_toml(toml, "rebalance.toml").unwrap_or_else(|e| panic!("{e}"));
        let start = Instant::now();
        Lab {
            gatekeeper: Gatekeeper::new(config).unwrap(),
            start,
            now: start,
            phones: Vec::new(),
            moves: Vec::new(),
            urqs: Vec::new(),
            closed: 0,
        }
    }

    fn elapsed(&self) -> Duration {
        self.now - self.start
    }

    fn ask(&mut self, local: SocketAddr, phone: usize, datagram: &[u8]) -> Answer {
        let from = self.phones[phone].ras_address;
        let out = self.gatekeeper.handle(self.now, local, from, datagram);
        assert_eq!(out.len(), 1, "one reply expected, got {out:?}");
        let answer = Answer::read(&out[0].payload).unwrap();
        self.phones[phone].learn(&answer);
        answer
    }

    /// A phone of `region`, registered by GRQ and RRQ where the GCF says; its index.
    fn register(&mut self, region: u8, n: u16) -> usize {
        let source = SocketAddr::from(([127, region, (n / 250) as u8, (n % 250 + 1) as u8], 1719));
        self.phones.push(Phone::extension(
            u32::from(region) * 10_000 + u32::from(n),
            source,
        ));
        let phone = self.phones.len() - 1;
        let grq = self.phones[phone].grq();
        let clan = match self.ask(addr(DISCOVERY), phone, &grq) {
            Answer::Gcf {
                ras_address: Some(clan),
                ..
            } => clan,
            other => panic!("GCF expected, got {other:?}"),
        };
        let rrq = self.phones[phone].rrq();
        assert!(matches!(self.ask(clan, phone, &rrq), Answer::Rcf { .. }));
        self.settle();
        phone
    }

    /// Delivers what the gatekeeper sent: each URQ is answered with UCF and a full RRQ to
    /// the first entry of its AGL, at once.
    fn deliver(&mut self, out: Vec<Transmit>) {
        for transmit in out {
            let Ok(Answer::Urq { seq, agl, .. }) = Answer::read(&transmit.payload) else {
                panic!("only URQs are sent unasked here: {transmit:?}");
            };
            let phone = self
                .phones
                .iter()
                .position(|p| p.ras_address == transmit.to)
                .expect("a URQ to one of the phones");
            let alias = self.phones[phone].aliases[0].to_string();
            self.urqs.push((self.elapsed(), alias));
            let ucf = self.phones[phone].ucf(seq);
            let from = self.phones[phone].ras_address;
            assert!(self
                .gatekeeper
                .handle(self.now, transmit.local, from, &ucf)
                .is_empty());
            self.phones[phone].endpoint_id = None;
            let rrq = self.phones[phone].rrq();
            let first = *agl.first().expect("a URQ with somewhere to go");
            match self.ask(first, phone, &rrq) {
                Answer::Rcf { .. } => {}
                other => panic!("RCF at {first} expected, got {other:?}"),
            }
        }
        self.settle();
    }

    /// Takes the events and commands since the last look.
    fn settle(&mut self) {
        let at = self.elapsed();
        for event in self.gatekeeper.drain_events() {
            if let Event::Rebalanced {
                alias, from, to, ..
            } = event
            {
                self.moves.push(Move {
                    at,
                    alias: alias.expect("extension phones have an alias"),
                    from,
                    to,
                });
            }
        }
        self.closed += self
            .gatekeeper
            .take_commands()
            .iter()
            .filter(|c| matches!(c, Command::Close { .. }))
            .count();
    }

    /// Runs every timer due up to `secs` after the start, phones answering as they go; the
    /// clock ends at `secs`. Bounded: at most 100,000 timer runs.
    fn run_until(&mut self, secs: f64) {
        let end = self.start + Duration::from_secs_f64(secs);
        for _ in 0..100_000 {
            match self.gatekeeper.poll_timeout() {
                Some(at) if at <= end => {
                    self.now = self.now.max(at);
                    let out = self.gatekeeper.handle_timeout(self.now);
                    self.deliver(out);
                }
                _ => {
                    self.now = self.now.max(end);
                    return;
                }
            }
        }
        panic!("timers kept firing up to {secs} s");
    }

    fn set_in_service(&mut self, name: &str, in_service: bool) {
        let clan = self.gatekeeper.clan_by_name(name).unwrap();
        let out = self.gatekeeper.set_in_service(self.now, clan, in_service);
        self.deliver(out);
    }

    /// Load (sockets + reservations) of each C-LAN by name.
    fn loads(&self) -> BTreeMap<String, u32> {
        self.gatekeeper
            .clans()
            .into_iter()
            .map(|c| (c.name, c.sockets + c.reserved))
            .collect()
    }
}

/// Moves per whole virtual second since the start.
fn per_second(moves: &[Move]) -> BTreeMap<u64, usize> {
    let mut counts = BTreeMap::new();
    for m in moves {
        *counts.entry(m.at.as_secs()).or_default() += 1;
    }
    counts
}

/// The most moves in any window of `window` (half-open, starting at a move).
fn most_in_window(moves: &[Move], window: Duration) -> usize {
    moves
        .iter()
        .map(|first| {
            moves
                .iter()
                .filter(|m| m.at >= first.at && m.at < first.at + window)
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// 200 region-1 phones (a1 and a2 share them) and 40 of region 2; a1 out of service at 60 s,
/// its phones registering where their URQ's AGL leads (a2 or the priority-2 a3), and back in
/// service at 120 s.
fn crowd_after_a_fault(lab: &mut Lab) {
    for n in 0..200 {
        lab.register(1, n);
    }
    for n in 0..40 {
        lab.register(2, n);
    }
    let loads = lab.loads();
    assert_eq!((loads["a1"], loads["a2"], loads["a3"]), (100, 100, 0));
    lab.run_until(60.0);
    lab.set_in_service("a1", false);
    let loads = lab.loads();
    assert_eq!(loads["a1"], 0);
    assert_eq!(loads["a2"] + loads["a3"], 200);
    assert!(loads["a2"] > 140, "most phones to a2: {loads:?}");
    lab.run_until(120.0);
    lab.set_in_service("a1", true);
}

#[test]
fn off_a_clan_back_in_service_stays_empty_for_hours_and_no_timer_runs() {
    let mut lab = Lab::new(&topology(None, true, ""));
    crowd_after_a_fault(&mut lab);
    let after_fault = lab.loads();
    lab.run_until(120.0 + 6.0 * 3600.0);
    assert!(
        lab.urqs.len() <= 100,
        "only the fault's URQs: {}",
        lab.urqs.len()
    );
    assert!(lab.moves.is_empty());
    assert_eq!(lab.loads(), after_fault, "nobody moved in six hours");
    assert_eq!(lab.loads()["a1"], 0);
    // Nothing left to time but the registrations' own expiry, hours away.
    let next = lab.gatekeeper.poll_timeout().expect("registrations expire");
    assert!(
        next - lab.now > Duration::from_secs(10 * 3600),
        "a timer {:?} from now",
        next - lab.now
    );
    assert!(!lab.gatekeeper.rebalance().enabled);
    assert_eq!(lab.gatekeeper.rebalance().moves, 0);
}

/// On: a1 refills until a2 is within `tolerance` of it, one move every 1/`moves_per_s`;
/// a3 (priority 2) and region 2 are other classes and keep their phones.
fn refills_at_the_rate(moves_per_s: f64, tolerance: u32) {
    let body = format!("tolerance = {tolerance}\nmoves_per_s = {moves_per_s}\n");
    let mut lab = Lab::new(&topology(Some(&body), true, ""));
    crowd_after_a_fault(&mut lab);
    assert!(lab.moves.is_empty(), "balanced until the fault: no move");
    let before = lab.loads();
    let heavy = before["a2"];
    let needed = (heavy - tolerance).div_ceil(2) as usize;
    let interval = 1.0 / moves_per_s;
    let least = (needed - 1) as f64 * interval;
    lab.run_until(120.0 + least + 60.0);
    let after = lab.loads();
    assert!(after["a2"] <= after["a1"] + tolerance, "{after:?}");
    assert_eq!(
        lab.moves.len(),
        needed,
        "just enough moves: {before:?} → {after:?}"
    );
    assert_eq!(after["a1"] as usize, needed);
    assert_eq!(after["a2"] as usize, heavy as usize - needed);
    for class in ["a3", "b1", "b2"] {
        assert_eq!(after[class], before[class], "{class} is another class");
    }
    assert!(lab.moves.iter().all(|m| m.from == "a2" && m.to == "a1"));
    // The time the rate needs, and not much more.
    let first = lab.moves[0].at.as_secs_f64();
    let last = lab.moves[needed - 1].at.as_secs_f64();
    assert!(
        (first - 120.0).abs() < 1e-6,
        "the first move at once: {first}"
    );
    assert!(last - 120.0 >= least - 1e-6, "too fast: {last} s");
    assert!(last - 120.0 <= least + 1.0, "too slow: {last} s");
    // Never more than moves_per_s in a second (fractional rates: in 1/rate seconds, one).
    if moves_per_s >= 1.0 {
        let worst = per_second(&lab.moves).into_values().max().unwrap();
        assert!(worst as f64 <= moves_per_s, "{worst} moves in one second");
        assert!(most_in_window(&lab.moves, Duration::from_secs(1)) as f64 <= moves_per_s);
    } else {
        let window = Duration::from_secs_f64(interval);
        assert_eq!(most_in_window(&lab.moves, window), 1);
    }
    // Balanced: no check stays armed.
    let next = lab.gatekeeper.poll_timeout().expect("registrations expire");
    assert!(
        next - lab.now > Duration::from_secs(3600),
        "{:?}",
        next - lab.now
    );
    let view = lab.gatekeeper.rebalance();
    assert!(view.enabled);
    assert_eq!(view.moves as usize, needed);
    assert_eq!(view.moves_from.get("a2").copied(), Some(needed as u64));
    assert_eq!(view.last_move.map(|m| m.to), Some("a1".into()));
}

#[test]
fn on_a_clan_back_in_service_refills_to_the_tolerance_at_the_rate() {
    refills_at_the_rate(5.0, 4);
}

#[test]
fn a_fractional_rate_spaces_the_moves() {
    refills_at_the_rate(0.5, 40);
}

/// Routing for trunk calls: phones dial 9 and digits.
const CALLS: &str = r#"
    [[node]]
    name = "cm1"
    id = 1
    address = "127.0.100.1:1720"
    [[trunk]]
    name = "pstn"
    kind = "sip"
    run_on_all_nodes = true
    address = "127.0.200.1:5060"
    [[route_pattern]]
    pattern = "9.!"
    trunk = "pstn"
"#;

#[test]
fn a_phone_in_a_call_is_never_moved() {
    let body = "tolerance = 1\nmoves_per_s = 10\n";
    let mut lab = Lab::new(&topology(Some(body), false, CALLS));
    lab.set_in_service("a1", false);
    let phones: Vec<usize> = (0..20).map(|n| lab.register(1, n)).collect();
    assert_eq!(lab.loads()["a2"], 20);
    let a2 = addr("127.0.1.2:1719");
    let call_id = |phone: usize| {
        let mut id = [0u8; 16];
        id[15] = phone as u8 + 1;
        id
    };
    for &phone in &phones {
        let arq = lab.phones[phone].arq("9555", call_id(phone)).unwrap();
        assert!(matches!(lab.ask(a2, phone, &arq), Answer::Acf { .. }));
    }
    assert_eq!(lab.gatekeeper.calls().len(), 20);
    lab.run_until(10.0);
    lab.set_in_service("a1", true);
    lab.run_until(3610.0);
    assert!(lab.moves.is_empty(), "every phone is in a call");
    assert_eq!(lab.loads()["a1"], 0);
    // Five hang up: those five move, nobody else.
    let free: Vec<usize> = phones[..5].to_vec();
    for &phone in &free {
        let drq = lab.phones[phone].drq(call_id(phone)).unwrap();
        assert!(matches!(lab.ask(a2, phone, &drq), Answer::Other { .. }));
    }
    lab.run_until(3620.0);
    let moved: Vec<&str> = lab.moves.iter().map(|m| m.alias.as_str()).collect();
    let free_aliases: Vec<String> = free
        .iter()
        .map(|&p| lab.phones[p].aliases[0].to_string())
        .collect();
    assert_eq!(moved.len(), 5, "{moved:?}");
    assert!(moved
        .iter()
        .all(|alias| free_aliases.iter().any(|f| f == alias)));
    assert_eq!(
        lab.gatekeeper.calls().len(),
        15,
        "no call was ended by a move"
    );
    assert_eq!((lab.loads()["a1"], lab.loads()["a2"]), (5, 15));
}

#[test]
fn a_phone_moved_is_not_moved_again_within_the_hold_off() {
    let body = "tolerance = 1\nmoves_per_s = 10\nhold_off_s = 600\n";
    let mut lab = Lab::new(&topology(Some(body), false, ""));
    lab.set_in_service("a1", false);
    for n in 0..10 {
        lab.register(1, n);
    }
    // Three faults of a1, 100 s apart; each time its phones go back to a2.
    for round in 0..3u32 {
        let back = f64::from(100 + 200 * round);
        lab.run_until(back);
        lab.set_in_service("a1", true);
        lab.run_until(back + 100.0);
        if round < 2 {
            assert_eq!(lab.loads()["a1"], 5, "round {round}: {:?}", lab.loads());
            lab.set_in_service("a1", false);
            assert_eq!(lab.loads()["a2"], 10);
        }
    }
    // Rounds one and two moved ten different phones; in round three every phone was held off
    // until the first of round one ran out, 600 s after it moved.
    assert_eq!(lab.moves.len(), 10, "{:?}", lab.moves);
    assert_eq!(lab.loads()["a1"], 0, "round three waits");
    lab.run_until(699.0);
    assert_eq!(lab.moves.len(), 10);
    lab.run_until(800.0);
    assert_eq!(
        lab.moves.len(),
        15,
        "round one's phones move again once free"
    );
    let resumed = lab.moves[10].at.as_secs_f64();
    assert!(
        (resumed - 700.0).abs() < 1e-6,
        "at the first hold-off's end: {resumed}"
    );
    let mut last: HashMap<&str, Duration> = HashMap::new();
    for m in &lab.moves {
        if let Some(&before) = last.get(m.alias.as_str()) {
            assert!(
                m.at - before >= Duration::from_secs(600),
                "{} moved at {before:?} and {:?}",
                m.alias,
                m.at
            );
        }
        last.insert(&m.alias, m.at);
    }
    assert_eq!(last.len(), 10, "every phone moved, five of them twice");
    assert_eq!(lab.loads()["a1"], 5);
}

#[test]
fn socket_mode_moves_close_the_phones_sockets() {
    let body = "tolerance = 2\nmoves_per_s = 4\n";
    let toml = topology(Some(body), false, "")
        .replace("[gatekeeper]\n", "[gatekeeper]\nsockets = \"tcp\"\n");
    let mut lab = Lab::new(&toml);
    lab.set_in_service("a1", false);
    for n in 0..12 {
        lab.register(1, n);
    }
    // Each phone connects from its IP to a2's signalling address and is established.
    let a2_signal = addr("127.0.1.2:1720");
    for phone in 0..12 {
        let from = SocketAddr::new(lab.phones[phone].ras_address.ip(), 40_000);
        lab.gatekeeper.accept(lab.now, a2_signal, from).unwrap();
    }
    lab.settle();
    lab.run_until(5.0);
    assert_eq!(lab.gatekeeper.clans()[1].established, 12);
    lab.set_in_service("a1", true);
    lab.run_until(30.0);
    // (12 − 2) / 2 = 5 moves, each closing the moved phone's socket on a2.
    assert_eq!(lab.moves.len(), 5);
    assert_eq!(lab.closed, 5);
    let clans = lab.gatekeeper.clans();
    assert_eq!((clans[0].sockets, clans[1].sockets), (5, 7));
    assert_eq!(clans[1].established, 7);
    let events_ok = lab
        .moves
        .windows(2)
        .all(|w| w[1].at - w[0].at >= Duration::from_millis(250));
    assert!(events_ok, "4 moves a second at most: {:?}", lab.moves);
}

#[test]
fn unregistered_events_name_rebalancing() {
    let body = "tolerance = 1\nmoves_per_s = 1\n";
    let mut lab = Lab::new(&topology(Some(body), false, ""));
    lab.set_in_service("a1", false);
    for n in 0..3 {
        lab.register(1, n);
    }
    lab.set_in_service("a1", true);
    let out = lab.gatekeeper.handle_timeout(lab.now);
    assert_eq!(out.len(), 1, "one move at once");
    let events = lab.gatekeeper.drain_events();
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Unregistered {
            reason: Ending::Rebalanced,
            ..
        }
    )));
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Rebalanced { from, to, .. } if from == "a2" && to == "a1"
    )));
}

#[test]
fn bad_rebalance_values_are_refused_naming_file_and_key() {
    for (body, key, says) in [
        (
            "tolerance = 0\nmoves_per_s = 1",
            "rebalance.tolerance",
            "at least",
        ),
        (
            "tolerance = 2\nmoves_per_s = 0",
            "rebalance.moves_per_s",
            "more than 0",
        ),
        (
            "tolerance = 2\nmoves_per_s = -2",
            "rebalance.moves_per_s",
            "more than 0",
        ),
        (
            "tolerance = 2\nmoves_per_s = 1\nhold_off_s = -5",
            "rebalance.hold_off_s",
            "0 to",
        ),
        ("moves_per_s = 1", "rebalance.tolerance", "missing"),
        ("tolerance = 2", "rebalance.moves_per_s", "missing"),
        (
            "tolerance = 2\nmoves_per_s = 1\nrate = 3",
            "rebalance.rate",
            "unknown",
        ),
        (
            "tolerance = 2.5\nmoves_per_s = 1",
            "rebalance.tolerance",
            "invalid type",
        ),
    ] {
        let toml = topology(Some(body), false, "");
        let error = config::from_toml(&toml, "lab.toml").expect_err(body);
        let text = error.to_string();
        assert!(text.starts_with("lab.toml: "), "{body}: {text}");
        assert_eq!(error.field, key, "{body}: {text}");
        assert!(text.contains(says), "{body}: {text}");
    }
    // `enabled = false` keeps the table and switches it off.
    let off = topology(
        Some("enabled = false\ntolerance = 2\nmoves_per_s = 1"),
        false,
        "",
    );
    assert_eq!(config::from_toml(&off, "lab.toml").unwrap().rebalance, None);
}
