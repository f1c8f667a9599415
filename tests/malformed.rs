//! The malformed corpus through the real UDP server (docs/rules.md §12.1): every truncation and
//! every single-bit flip of every fixture message — one of each message of
//! `tests/support/messages.rs` and every datagram of `fixtures/replay/storm-20.pcap` — plus
//! seeded random splices of two of them and a few oversized datagrams, sent to a `rasgk
//! serve` on 127.0.70.x that already has phones registered.
//!
//! The corpus is split by our own decoder. What it rejects must reach the server's
//! `/metrics` exactly, kind by kind (`rasgk_malformed_total`), with one XRS received for
//! each one counted as answered, and must change nothing: `/api/clans` and
//! `/api/registrations` are the same before and after. What still decodes (a flip that
//! turns one valid message into another) goes to the discovery address from one unregistered
//! source, where nothing can register; the server must answer a good GRQ and RRQ afterwards,
//! keep its registrations, and count none of it as malformed.
//!
//! Sending is paced so the kernel never drops a datagram (which would break the exact
//! counts): after every window of datagrams a probe — a URQ from the unregistered sender,
//! answered with URJ — must come back before the next window leaves. One socket, one order:
//! when the probe's answer arrives, everything before it has been handled.

mod support;

use std::collections::{BTreeMap, HashSet};
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rasgk::gatekeeper::stats::BadDatagram;
use rasgk::gatekeeper::MAX_DATAGRAM;
use rasgk::phone::{Answer, Phone};
use rasgk::ras::{self, MessageKind};
use serde_json::Value;
use support::server::{http_get, Served, UdpPhone};

const NET: u8 = 70;
/// Datagrams sent before each probe.
const WINDOW: usize = 64;
/// Seeded random splices: a prefix of one fixture and a suffix of another.
const SPLICES: usize = 3_000;

fn at(host: u8) -> SocketAddr {
    SocketAddr::from(([127, 0, NET, host], 1719))
}

fn config() -> PathBuf {
    let text = format!(
        r#"
[gatekeeper]
discovery = "127.0.{NET}.1:1719"
seed = 70
[admin]
listen = "127.0.{NET}.1:7000"
[[region]]
id = 1
networks = ["127.1.0.0/16"]
[[clan]]
name = "a"
region = 1
address = "127.0.{NET}.11:1719"
max_sockets = 20
[[clan]]
name = "b"
region = 1
address = "127.0.{NET}.12:1719"
max_sockets = 20
"#
    );
    let path = std::env::temp_dir().join(format!("rasgk-malformed-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

/// The fixture messages: each of `support::messages`, and every datagram of storm-20.pcap.
fn fixtures() -> Vec<Vec<u8>> {
    let mut fixtures: Vec<Vec<u8>> = support::messages::all()
        .iter()
        .map(|(name, _, message)| {
            ras::encode(message).unwrap_or_else(|e| panic!("{name} encodes: {e}"))
        })
        .collect();
    let storm = format!(
        "{}/fixtures/replay/storm-20.pcap",
        env!("CARGO_MANIFEST_DIR")
    );
    let capture = rasgk::pcap::read_file(storm).expect("storm-20.pcap reads");
    fixtures.extend(capture.datagrams.into_iter().map(|d| d.payload));
    fixtures
}

/// Every truncation and single-bit flip of every fixture, the splices and some oversized
/// datagrams, each distinct datagram once, in a fixed order.
fn corpus(fixtures: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut seen = HashSet::new();
    let mut corpus = Vec::new();
    let mut add = |datagram: Vec<u8>| {
        if seen.insert(datagram.clone()) {
            corpus.push(datagram);
        }
    };
    for fixture in fixtures {
        for len in 0..fixture.len() {
            add(fixture[..len].to_vec());
        }
        for bit in 0..fixture.len() * 8 {
            let mut flipped = fixture.clone();
            flipped[bit / 8] ^= 0x80 >> (bit % 8);
            add(flipped);
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(70);
    for _ in 0..SPLICES {
        let a = &fixtures[rng.random_range(0..fixtures.len())];
        let b = &fixtures[rng.random_range(0..fixtures.len())];
        let cut_a = rng.random_range(0..=a.len());
        let cut_b = rng.random_range(0..=b.len());
        add([&a[..cut_a], &b[cut_b..]].concat());
    }
    for len in [MAX_DATAGRAM + 1, 9_000, 60_000] {
        let mut big = fixtures[0].clone();
        big.resize(len, 0x55);
        add(big);
    }
    corpus
}

/// What our decoder says of a datagram: `None` when it decodes, else its kind and whether
/// the sequence number can be read (XRS possible).
fn classify(datagram: &[u8]) -> Option<(BadDatagram, bool)> {
    if datagram.len() > MAX_DATAGRAM {
        return Some((BadDatagram::Oversized, false));
    }
    let error = ras::decode(datagram).err()?;
    Some((
        BadDatagram::of(&error),
        ras::peek_request_seq_num(datagram).is_some(),
    ))
}

/// The unregistered sender: its socket and its probes.
struct Sender {
    socket: UdpSocket,
    phone: Phone,
    /// XRS datagrams received.
    xrs: u64,
    /// Other answers received (not probes).
    others: BTreeMap<String, u64>,
}

impl Sender {
    fn bind() -> Sender {
        let socket = UdpSocket::bind(SocketAddr::from(([127, 9, NET, 1], 0))).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let phone = Phone::extension(69_999, socket.local_addr().unwrap());
        Sender {
            socket,
            phone,
            xrs: 0,
            others: BTreeMap::new(),
        }
    }

    /// Sends `datagrams` to `to` a window at a time, each window followed by a probe that
    /// must be answered before the next leaves; counts the answers.
    fn send_paced(&mut self, to: SocketAddr, datagrams: &[&[u8]]) {
        for window in datagrams.chunks(WINDOW) {
            for datagram in window {
                self.socket.send_to(datagram, to).expect("send");
            }
            self.probe(to);
        }
    }

    fn probe(&mut self, to: SocketAddr) {
        let urq = self.phone.urq();
        let seq = self.phone.last_seq();
        self.socket.send_to(&urq, to).expect("send the probe");
        let mut buffer = [0u8; 65_536];
        loop {
            let (len, _) = self
                .socket
                .recv_from(&mut buffer)
                .unwrap_or_else(|e| panic!("probe {seq} not answered: {e}"));
            let message = ras::decode(&buffer[..len]).expect("the server's answers decode");
            let kind = ras::kind(&message);
            if kind == MessageKind::Urj && ras::request_seq_num(&message) == seq {
                return;
            }
            if kind == MessageKind::Xrs {
                self.xrs += 1;
            } else {
                *self.others.entry(kind.to_string()).or_default() += 1;
            }
        }
    }
}

/// `/metrics` as (name, labels) → value.
fn metrics(served: &Served) -> BTreeMap<(String, String), f64> {
    let (status, text) = http_get(served.admin, "/metrics").expect("/metrics answers");
    assert_eq!(status, 200);
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("/metrics parses");
    scrape
        .samples
        .into_iter()
        .filter_map(|sample| {
            let value = match sample.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) => v,
                _ => return None,
            };
            let mut labels: Vec<String> = sample
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            labels.sort();
            Some(((sample.metric, labels.join(",")), value))
        })
        .collect()
}

fn malformed(metrics: &BTreeMap<(String, String), f64>, kind: BadDatagram, answer: &str) -> u64 {
    let key = (
        "rasgk_malformed_total".to_string(),
        format!("answer={answer},kind={}", kind.name()),
    );
    *metrics
        .get(&key)
        .unwrap_or_else(|| panic!("no sample {key:?}")) as u64
}

fn counter(metrics: &BTreeMap<(String, String), f64>, name: &str) -> u64 {
    *metrics
        .get(&(name.to_string(), String::new()))
        .unwrap_or_else(|| panic!("no sample {name}")) as u64
}

/// The state a bad datagram must not change.
fn state(served: &Served) -> (Value, Value) {
    (
        served.get_json("/api/clans"),
        served.get_json("/api/registrations"),
    )
}

#[test]
fn the_malformed_corpus_is_counted_by_kind_and_changes_nothing() {
    let started = Instant::now();
    let config = config();
    let served = Served::start(
        &["--config", config.to_str().unwrap()],
        SocketAddr::from(([127, 0, NET, 1], 7000)),
    );
    let phones: Vec<UdpPhone> = (1..=3u8)
        .map(|n| {
            let mut phone = UdpPhone::bind(Phone::extension(
                70_000 + u32::from(n),
                SocketAddr::from(([127, 1, NET, n], 0)),
            ));
            let (_, rcf) = phone.register(at(1));
            assert!(matches!(rcf, Some(Answer::Rcf { .. })), "{rcf:?}");
            phone
        })
        .collect();

    let fixtures = fixtures();
    let corpus = corpus(&fixtures);
    let mut rejected: Vec<&[u8]> = Vec::new();
    let mut decodes: Vec<&[u8]> = Vec::new();
    // kind → (answerable, not answerable)
    let mut expected: BTreeMap<BadDatagram, (u64, u64)> = BTreeMap::new();
    for datagram in &corpus {
        match classify(datagram) {
            Some((kind, answerable)) => {
                let entry = expected.entry(kind).or_default();
                if answerable {
                    entry.0 += 1;
                } else {
                    entry.1 += 1;
                }
                rejected.push(datagram);
            }
            None => decodes.push(datagram),
        }
    }
    eprintln!(
        "{} fixtures, {} distinct datagrams: {} rejected {expected:?}, {} still decode; built in {:.1?}",
        fixtures.len(),
        corpus.len(),
        rejected.len(),
        decodes.len(),
        started.elapsed()
    );
    for kind in BadDatagram::ALL {
        assert!(
            expected.get(&kind).is_some_and(|&(a, d)| a + d > 0),
            "the corpus has no {kind:?} datagram"
        );
    }

    // Part 1: what our decoder rejects, to the discovery address and to a C-LAN.
    let before = state(&served);
    let mut sender = Sender::bind();
    let sending = Instant::now();
    let (to_discovery, to_clan) = rejected.split_at(rejected.len() / 2);
    sender.send_paced(at(1), to_discovery);
    sender.send_paced(at(11), to_clan);
    eprintln!(
        "{} rejected datagrams sent in {:.1?}",
        rejected.len(),
        sending.elapsed()
    );
    let after = metrics(&served);
    assert_eq!(state(&served), before, "bad datagrams changed the state");
    assert!(sender.others.is_empty(), "not XRS: {:?}", sender.others);
    let mut answered = 0;
    let mut unanswered_answerable = 0;
    for (&kind, &(answerable, not_answerable)) in &expected {
        let (xrs, dropped) = (
            malformed(&after, kind, "xrs"),
            malformed(&after, kind, "dropped"),
        );
        assert_eq!(
            xrs + dropped,
            answerable + not_answerable,
            "{kind:?}: counted {xrs} + {dropped}, sent {answerable} + {not_answerable}"
        );
        assert!(xrs <= answerable, "{kind:?}: {xrs} XRS for {answerable}");
        answered += xrs;
        unanswered_answerable += answerable - xrs;
    }
    assert_eq!(
        counter(&after, "rasgk_decode_failures_total"),
        rejected.len() as u64
    );
    assert_eq!(answered, sender.xrs, "XRS counted = XRS received");
    // An answerable datagram goes unanswered only when its XRS would break the reflection
    // bound (3 × a request of a few octets).
    assert_eq!(
        counter(&after, "rasgk_reflection_dropped_total"),
        unanswered_answerable
    );
    assert_eq!(counter(&after, "rasgk_rate_limited_total"), 0);
    eprintln!(
        "{answered} answered with XRS, {unanswered_answerable} XRS held back by the reflection bound"
    );

    // Part 2: what still decodes, from the unregistered sender to the discovery address.
    sender.send_paced(at(1), &decodes);
    let later = metrics(&served);
    for kind in BadDatagram::ALL {
        for answer in ["xrs", "dropped"] {
            assert_eq!(
                malformed(&later, kind, answer),
                malformed(&after, kind, answer),
                "a datagram our decoder reads was counted malformed ({kind:?}, {answer})"
            );
        }
    }
    assert_eq!(
        state(&served).1,
        before.1,
        "nothing registers at the discovery address"
    );

    // The server still serves: a new phone registers, the old ones keep alive.
    let mut fresh = UdpPhone::bind(Phone::extension(
        70_100,
        SocketAddr::from(([127, 1, NET, 100], 0)),
    ));
    let (gcf, rcf) = fresh.register(at(1));
    assert!(matches!(gcf, Answer::Gcf { .. }), "{gcf:?}");
    assert!(matches!(rcf, Some(Answer::Rcf { .. })), "{rcf:?}");
    for mut phone in phones {
        // A keep-alive is taken wherever it arrives.
        let keep_alive = phone.phone.keep_alive().expect("registered");
        let answer = phone.ask(at(12), &keep_alive);
        assert!(matches!(answer, Answer::Rcf { .. }), "{answer:?}");
    }
    assert_eq!(
        served
            .get_json("/api/registrations")
            .as_array()
            .unwrap()
            .len(),
        4
    );
    eprintln!(
        "{} datagrams in all, {:.1?} with the server's start",
        corpus.len(),
        started.elapsed()
    );
    let _ = std::fs::remove_file(config);
}
