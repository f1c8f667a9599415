//! The admin port against the gatekeeper's state, over real sockets: `rasgk serve`, phones
//! registering over UDP, and every admin route checked — views, filters, the dry run, the
//! token rule, errors as JSON, server-sent events, `/metrics` read by a Prometheus parser,
//! and RAS still answered while many slow admin connections hang on.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rasgk::phone::{Answer, Phone};
use serde_json::Value;
use support::server::{http_get, Served, UdpPhone};

const TOKEN: &str = "s3cret-admin";

/// A lab on 127.0.N.x: discovery .1, admin .1:7000, region 1 with a, b (cap 5) and region 2
/// with c (cap 5), all on node cm1; phones with extensions 5… are TTS; a SIP trunk on node
/// cm2 for numbers 9…. With `token`, changes need it.
struct Lab {
    served: Served,
    net: u8,
    _dir: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Lab {
    fn start(net: u8, token: bool) -> Lab {
        let dir = std::env::temp_dir().join(format!("rasgk-admin-{}-{net}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let token = if token {
            format!("token = \"{TOKEN}\"")
        } else {
            String::new()
        };
        let config = format!(
            r#"
[gatekeeper]
discovery = "127.0.{net}.1:1719"
seed = 4
[admin]
listen = "127.0.{net}.1:7000"
{token}
[[region]]
id = 1
name = "hq"
networks = ["127.1.0.0/16"]
[[region]]
id = 2
name = "branch"
networks = ["127.2.0.0/16"]
[[link]]
regions = [1, 2]
kind = "direct"
[[clan]]
name = "a"
region = 1
address = "127.0.{net}.11:1719"
max_sockets = 5
[[clan]]
name = "b"
region = 1
address = "127.0.{net}.12:1719"
max_sockets = 5
[[clan]]
name = "c"
region = 2
address = "127.0.{net}.21:1719"
max_sockets = 5
[[tts]]
aliases = ["5*"]
[[node]]
name = "cm1"
id = 1
address = "127.0.{net}.101:1720"
[[node]]
name = "cm2"
id = 2
address = "127.0.{net}.102:1720"
[[trunk]]
name = "sip-pstn"
kind = "sip"
nodes = ["cm2"]
address = "127.0.{net}.200:5060"
[[route_pattern]]
pattern = "9.!"
trunk = "sip-pstn"
"#
        );
        let path = dir.join("admin.toml");
        std::fs::write(&path, config).unwrap();
        let admin = SocketAddr::from(([127, 0, net, 1], 7000));
        let served = Served::start(&["--config", path.to_str().unwrap()], admin);
        Lab {
            served,
            net,
            _dir: TempDir(dir),
        }
    }

    fn discovery(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, self.net, 1], 1719))
    }

    fn register(&self, region: u8, n: u8, extension: u32) -> UdpPhone {
        let mut p = UdpPhone::bind(Phone::extension(
            extension,
            SocketAddr::from(([127, region, self.net, n], 0)),
        ));
        match p.register(self.discovery()) {
            (_, Some(Answer::Rcf { .. })) => p,
            other => panic!("phone {extension}: {other:?}"),
        }
    }

    fn get(&self, path: &str) -> Value {
        self.served.get_json(path)
    }

    /// (status, JSON body) of any request.
    fn request(&self, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, Value) {
        support::server::http_request(self.served.admin, method, path, token, body)
    }
}

fn sockets_of(clans: &Value) -> BTreeMap<String, u64> {
    clans
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["sockets"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn views_and_filters_match_the_registrations() {
    let lab = Lab::start(13, false);
    // The dry run first: it must say exactly what then happens, and change nothing.
    let dry = lab.get("/api/placement?ip=127.1.13.1&alias=60001");
    assert_eq!(lab.get("/api/clans"), lab.get("/api/clans"));
    assert_eq!(dry["region"], 1);
    assert_eq!(dry["tts"], false);
    let first = lab.register(1, 1, 60_001);
    let registrations = lab.get("/api/registrations");
    assert_eq!(registrations[0]["clan"], dry["gcf"]);
    assert_eq!(registrations[0]["agl"], dry["agl"]);
    let tts_dry = lab.get("/api/placement?ip=127.2.13.9&alias=50009");
    assert_eq!(tts_dry["tts"], true);
    assert_eq!(tts_dry["region"], 2);

    let mut phones = vec![first];
    phones.push(lab.register(1, 2, 60_002));
    phones.push(lab.register(1, 3, 50_003)); // TTS
    phones.push(lab.register(2, 4, 60_004));
    phones.push(lab.register(2, 5, 50_005)); // TTS
    let clans = lab.get("/api/clans");
    let sockets = sockets_of(&clans);
    assert_eq!(sockets.values().sum::<u64>(), 5);
    assert_eq!(lab.get("/api/clans/c")["sockets"], sockets["c"]);

    let regions = lab.get("/api/regions");
    assert_eq!(regions[0]["clans"], serde_json::json!(["a", "b"]));
    assert_eq!(regions[0]["sockets"], sockets["a"] + sockets["b"]);
    assert_eq!(regions[1]["sockets"], sockets["c"]);
    assert_eq!(regions[0]["home_phones"], 3);
    assert_eq!(regions[1]["home_phones"], 2);
    assert_eq!(regions[0]["direct"], serde_json::json!([2]));

    let count = |query: &str| {
        lab.get(&format!("/api/registrations{query}"))
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(count(""), 5);
    assert_eq!(count("?region=1"), 3);
    assert_eq!(count("?region=2&tts=true"), 1);
    assert_eq!(count("?tts=false"), 3);
    assert_eq!(count("?alias=5*"), 2);
    assert_eq!(count("?alias=60001"), 1);
    assert_eq!(count("?clan=a") as u64, sockets["a"]);
    assert_eq!(count("?region=3"), 0);

    // `rasgk status` shows the same numbers.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(["status", "--admin", &lab.served.admin.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    for (clan, count) in &sockets {
        let line = table
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{clan} ")))
            .unwrap_or_else(|| panic!("no line for {clan}: {table}"));
        assert!(line.contains(&format!(" {count} +0   / 5 ")), "{line}");
    }
    assert!(table.contains("region 1 hq  sockets"), "{table}");
    assert!(
        table.contains(&format!(
            "total  sockets {}/15",
            sockets.values().sum::<u64>()
        )),
        "{table}"
    );

    for (path, status) in [
        ("/api/registrations?region=x", 400),
        ("/api/registrations?tts=maybe", 400),
        ("/api/registrations?colour=red", 400),
        ("/api/registrations?clan=zz", 404),
        ("/api/clans/zz", 404),
        ("/api/placement", 400),
        ("/api/placement?ip=300.1.1.1", 400),
        ("/api/nothing", 404),
    ] {
        let (code, body) = lab.request("GET", path, None, "");
        assert_eq!(code, status, "GET {path}: {body}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "GET {path}: {body}"
        );
    }
    drop(phones);
}

#[test]
fn changes_need_the_token_and_do_what_they_say() {
    let lab = Lab::start(14, true);
    let on_a = lab.register(1, 1, 60_001);
    assert_eq!(lab.get("/api/registrations")[0]["clan"], "a");
    let service = "/api/clans/a/service";
    let out = r#"{"in_service": false}"#;
    let (code, body) = lab.request("POST", service, None, out);
    assert_eq!(code, 401, "{body}");
    let (code, body) = lab.request("POST", service, Some("wrong"), out);
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        lab.get("/api/clans/a")["in_service"],
        true,
        "refused changes change nothing"
    );
    for (path, body) in [
        (service, "{}"),
        (service, "not json"),
        ("/api/clans/a/cap", r#"{"max_sockets": 0}"#),
        ("/api/clans/a/cap", r#"{"max_sockets": -3}"#),
    ] {
        let (code, reply) = lab.request("POST", path, Some(TOKEN), body);
        assert_eq!(code, 400, "POST {path} {body}: {reply}");
        assert!(reply["error"].is_string());
    }
    let (code, _) = lab.request("POST", "/api/clans/zz/service", Some(TOKEN), out);
    assert_eq!(code, 404);

    // Out of service: the phone on it gets a URQ over UDP, and its socket is gone.
    let (code, clan) = lab.request("POST", service, Some(TOKEN), out);
    assert_eq!(code, 200);
    assert_eq!(clan["in_service"], false);
    assert_eq!(clan["sockets"], 0);
    let mut buffer = [0u8; 2048];
    let (len, from) = on_a.socket.recv_from(&mut buffer).expect("a URQ");
    assert_eq!(from, SocketAddr::from(([127, 0, 14, 11], 1719)));
    match Answer::read(&buffer[..len]).unwrap() {
        Answer::Urq { seq, agl, .. } => {
            assert!(
                !agl.is_empty() && !agl.contains(&from),
                "new AGL without a: {agl:?}"
            );
            let ucf = on_a.phone.ucf(seq);
            on_a.socket.send_to(&ucf, from).unwrap();
        }
        other => panic!("URQ expected, got {other:?}"),
    }
    assert_eq!(lab.get("/api/registrations").as_array().unwrap().len(), 0);

    let (code, clan) = lab.request(
        "POST",
        "/api/clans/b/cap",
        Some(TOKEN),
        r#"{"max_sockets": 1}"#,
    );
    assert_eq!(code, 200, "{clan}");
    assert_eq!(clan["max_sockets"], 1);
    let mut second = lab.register(1, 2, 60_002);
    let id = lab.get("/api/registrations")[0]["endpoint_id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/api/registrations/{id}");
    assert_eq!(lab.request("DELETE", &path, None, "").0, 401);
    let (code, body) = lab.request("DELETE", &path, Some(TOKEN), "");
    assert_eq!(code, 200, "{body}");
    assert!(
        second.socket.recv_from(&mut buffer).is_ok(),
        "the endpoint gets its URQ"
    );
    assert_eq!(lab.request("DELETE", &path, Some(TOKEN), "").0, 404);
    second.phone.endpoint_id = None;
}

#[test]
fn events_stream_what_happens() {
    let lab = Lab::start(15, false);
    let mut stream = TcpStream::connect(lab.served.admin).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    // Headers first.
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        if line.to_ascii_lowercase().starts_with("content-type") {
            assert!(line.contains("text/event-stream"), "{line}");
        }
    }
    let _phone = lab.register(2, 1, 50_001);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    while Instant::now() < deadline && !seen.iter().any(|e: &Value| e["type"] == "registered") {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        // Chunked framing lines and keep-alives are not data lines.
        if let Some(data) = line.trim().strip_prefix("data:") {
            seen.push(serde_json::from_str(data.trim()).unwrap());
        }
    }
    let registered = seen
        .iter()
        .find(|e| e["type"] == "registered")
        .unwrap_or_else(|| panic!("no registered event: {seen:?}"));
    assert_eq!(registered["aliases"], serde_json::json!(["50001"]));
    assert_eq!(registered["region"], 2);
    assert_eq!(registered["tts"], true);
    assert_eq!(registered["clan"], "c");
}

#[test]
fn metrics_parse_and_match_the_state() {
    let lab = Lab::start(16, false);
    let _phones: Vec<UdpPhone> = (1..=4)
        .map(|n| lab.register(1, n, 60_000 + u32::from(n)))
        .collect();
    let (status, text) = http_get(lab.served.admin, "/metrics").unwrap();
    assert_eq!(status, 200);
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let value = |name: &str, label: Option<(&str, &str)>| -> f64 {
        let sample = scrape
            .samples
            .iter()
            .find(|s| s.metric == name && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
            .unwrap_or_else(|| panic!("no sample {name} {label:?}"));
        match &sample.value {
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) => *v,
            other => panic!("{name}: {other:?}"),
        }
    };
    let sockets = sockets_of(&lab.get("/api/clans"));
    for (clan, count) in &sockets {
        assert_eq!(
            value("rasgk_clan_sockets", Some(("clan", clan))),
            *count as f64
        );
        assert_eq!(value("rasgk_clan_max_sockets", Some(("clan", clan))), 5.0);
    }
    assert_eq!(
        value("rasgk_ras_received_total", Some(("type", "GRQ"))),
        4.0
    );
    assert_eq!(value("rasgk_ras_sent_total", Some(("type", "RCF"))), 4.0);
    assert_eq!(value("rasgk_registrations", None), 4.0);
    assert_eq!(value("rasgk_decode_failures_total", None), 0.0);
    let histogram = scrape
        .samples
        .iter()
        .find(|s| s.metric == "rasgk_registration_latency_seconds")
        .expect("the latency histogram");
    match &histogram.value {
        prometheus_parse::Value::Histogram(buckets) => {
            let inf = buckets.iter().find(|b| b.less_than.is_infinite()).unwrap();
            assert_eq!(inf.count, 4.0, "every registration used its reservation");
        }
        other => panic!("histogram expected, got {other:?}"),
    }
    // Every line is a comment or `name{labels} value`.
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (_, number) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        assert!(number.parse::<f64>().is_ok(), "not a sample line: {line}");
    }
    // A datagram that does not decode is counted.
    let junk = std::net::UdpSocket::bind("127.1.16.99:0").unwrap();
    junk.send_to(b"\xff\x00junk", lab.discovery()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, text) = http_get(lab.served.admin, "/metrics").unwrap();
        if text.lines().any(|l| l == "rasgk_decode_failures_total 1") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the decode failure was not counted"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn slow_admin_connections_never_hold_up_ras() {
    let lab = Lab::start(17, false);
    // 200 connections that send half a request and stall, and 20 that subscribe to the
    // events and never read them.
    let mut stalled = Vec::new();
    for i in 0..220 {
        let mut stream = TcpStream::connect(lab.served.admin).unwrap();
        if i < 200 {
            stream
                .write_all(b"GET /api/registrations HTTP/1.1\r\nHost: x\r\n")
                .unwrap();
        } else {
            stream
                .write_all(b"GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
        }
        stalled.push(stream);
    }
    let started = Instant::now();
    // 15 phones fill the three caps of 5; 45 more GRQs are answered GRJ.
    let phones: Vec<UdpPhone> = (1..=15)
        .map(|n| lab.register(if n % 2 == 0 { 1 } else { 2 }, n, 60_000 + u32::from(n)))
        .collect();
    for n in 16..=60u8 {
        let mut p = UdpPhone::bind(Phone::extension(
            60_000 + u32::from(n),
            SocketAddr::from(([127, 1, 17, n], 0)),
        ));
        let grq = p.phone.grq();
        match p.ask(lab.discovery(), &grq) {
            Answer::Grj { reason, .. } => assert_eq!(reason, "resourceUnavailable"),
            other => panic!("GRJ expected, got {other:?}"),
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "60 RAS exchanges took {:?} with stalled admin connections",
        started.elapsed()
    );
    // The admin port itself still answers, and agrees.
    let registrations = lab.get("/api/registrations");
    assert_eq!(registrations.as_array().unwrap().len(), phones.len());
    drop(stalled);
}

#[test]
fn calls_and_trunks_show_where_trunk_calls_leave() {
    use rasgk::ras::request::{self, Arq, Call};
    use rasgk::ras::{self, Alias, MessageKind};
    let lab = Lab::start(18, false);
    let mut p = UdpPhone::bind(Phone::extension(
        60_001,
        SocketAddr::from(([127, 1, 18, 1], 0)),
    ));
    let clan = match p.register(lab.discovery()) {
        (
            Answer::Gcf {
                ras_address: Some(clan),
                ..
            },
            Some(Answer::Rcf { .. }),
        ) => clan,
        other => panic!("{other:?}"),
    };
    let call = Call {
        call_reference_value: 7,
        conference_id: [7; 16],
        call_id: [0xab; 16],
    };
    let seq = p.phone.next_seq();
    let endpoint_id = p.phone.endpoint_id.clone().unwrap();
    let arq = ras::encode(&request::admission_request(&Arq {
        request_seq_num: seq,
        endpoint_id: &endpoint_id,
        destination: &[Alias::dialled_digits("95551234").unwrap()],
        source: &p.phone.aliases.clone(),
        call,
        band_width: 1280,
        answer_call: false,
    }))
    .unwrap();
    match p.ask(clan, &arq) {
        Answer::Acf { dest, .. } => {
            let cm2 = SocketAddr::from(([127, 0, lab.net, 102], 1720));
            assert_eq!(dest, Some(cm2), "the call leaves from cm2's address");
        }
        other => panic!("ACF expected, got {other:?}"),
    }
    let calls = lab.get("/api/calls");
    assert_eq!(calls.as_array().map(Vec::len), Some(1), "{calls}");
    let only = &calls[0];
    assert_eq!(only["trunk"], "sip-pstn");
    assert_eq!(only["phone_node"], "cm1");
    assert_eq!(only["node"], "cm2");
    assert_eq!(only["hops"], 1);
    assert_eq!(only["call_id"], "ab".repeat(16));
    let trunks = lab.get("/api/trunks");
    let trunk = &trunks[0];
    assert_eq!(trunk["name"], "sip-pstn");
    assert_eq!(trunk["kind"], "sip");
    assert_eq!(trunk["active"], 1);
    assert_eq!(trunk["per_node"][1]["node"], "cm2");
    assert_eq!(trunk["per_node"][1]["total"], 1);
    let (_, text) = http_get(lab.served.admin, "/metrics").unwrap();
    assert!(
        text.lines()
            .any(|l| l == "rasgk_trunk_calls{trunk=\"sip-pstn\",node=\"cm2\"} 1"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l == "rasgk_call_hops_total 1"),
        "{text}"
    );
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();

    let seq = p.phone.next_seq();
    let drq = ras::encode(&request::disengage_request(seq, &endpoint_id, call)).unwrap();
    match p.ask(clan, &drq) {
        Answer::Other {
            kind: MessageKind::Dcf,
            ..
        } => {}
        other => panic!("DCF expected, got {other:?}"),
    }
    assert_eq!(lab.get("/api/calls").as_array().map(Vec::len), Some(0));
    assert_eq!(lab.get("/api/trunks")[0]["active"], 0);
}

/// `POST /api/registrations/{id}/irq`: the gatekeeper sends the endpoint an IRQ from its
/// C-LAN; the IRR the phone answers with is counted (`rasgk_irq_answered_total`) and shows
/// as an `info_response` event. An unknown endpoint is 404, and with a token the route wants
/// it.
#[test]
fn an_irq_on_the_admin_port_reaches_the_endpoint_and_its_irr_is_counted() {
    let lab = Lab::start(19, true);
    let phone = lab.register(1, 1, 60_001);
    let id = lab.get("/api/registrations")[0]["endpoint_id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/api/registrations/{id}/irq");
    assert_eq!(lab.request("POST", &path, None, "").0, 401);
    let (code, body) = lab.request("POST", &path, Some(TOKEN), "");
    assert_eq!(code, 200, "{body}");
    let seq = body["seq"].as_u64().unwrap() as u16;
    let mut buffer = [0u8; 2048];
    let (len, from) = phone.socket.recv_from(&mut buffer).expect("an IRQ");
    assert_eq!(Answer::read(&buffer[..len]).unwrap(), Answer::Irq { seq });
    let irr = phone.phone.irr(seq).unwrap();
    phone.socket.send_to(&irr, from).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while lab.served.metric("rasgk_irq_answered_total") < 1.0 {
        assert!(Instant::now() < deadline, "the IRR was never counted");
        std::thread::sleep(Duration::from_millis(20));
    }
    let unknown = "/api/registrations/EP0000BEEF/irq";
    assert_eq!(lab.request("POST", unknown, Some(TOKEN), "").0, 404);
}

/// Reads a server-sent event stream's data lines as JSON until `done` holds (at most 10 s).
fn sse_until(reader: &mut BufReader<TcpStream>, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    let mut line = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && !done(&seen) {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        if let Some(data) = line.trim().strip_prefix("data:") {
            seen.push(serde_json::from_str(data.trim()).unwrap());
        }
    }
    seen
}

/// `GET /api/ras?peer=PREFIX` streams every RAS message to and from the peers of the prefix
/// as it passes, decoded (`type`, `seq`, `message`), with its direction and the gatekeeper's
/// address; a phone outside the prefix is not shown, and a bad prefix is a 400.
#[test]
fn the_ras_stream_shows_a_peers_messages_both_ways() {
    let lab = Lab::start(22, false);
    assert_eq!(
        lab.request("GET", "/api/ras?peer=nonsense", None, "").0,
        400
    );
    let mut stream = TcpStream::connect(lab.served.admin).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET /api/ras?peer=127.1.22.0/24 HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 0 && !line.trim().is_empty() {
        line.clear();
    }
    let _outside = lab.register(2, 1, 60_002);
    let phone = lab.register(1, 1, 60_001);
    let seen = sse_until(&mut reader, |seen| seen.iter().any(|s| s["type"] == "RCF"));
    let kinds: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| {
            (
                s["direction"].as_str().unwrap(),
                s["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [("in", "GRQ"), ("out", "GCF"), ("in", "RRQ"), ("out", "RCF")],
        "{seen:?}"
    );
    let own = phone.phone.ras_address.to_string();
    assert!(seen.iter().all(|s| s["peer"] == own.as_str()), "{seen:?}");
    assert_eq!(seen[0]["local"], "127.0.22.1:1719", "the GRQ to discovery");
    assert_eq!(seen[2]["seq"], seen[3]["seq"]);
    assert_eq!(seen[3]["local"], seen[2]["local"], "the RCF from the C-LAN");
    assert!(seen[3]["at_ms"].as_f64().unwrap() >= seen[2]["at_ms"].as_f64().unwrap());
    assert_eq!(
        seen[3]["message"]["registrationConfirm"]["endpointIdentifier"],
        "EP00000002"
    );
}

/// The exam's drills on the admin port: `withhold` (a request kind by its short name) and
/// `alternate` answer what they armed, want the token, refuse a bad body (400) and an
/// unknown endpoint (404).
#[test]
fn drills_withhold_and_alternate_are_armed_on_the_admin_port() {
    let lab = Lab::start(23, true);
    let phone = lab.register(1, 1, 60_001);
    let id = lab.get("/api/registrations")[0]["endpoint_id"]
        .as_str()
        .unwrap()
        .to_string();
    let withhold = format!("/api/registrations/{id}/withhold");
    let rrq = r#"{"request": "RRQ"}"#;
    assert_eq!(lab.request("POST", &withhold, None, rrq).0, 401);
    let (code, body) = lab.request("POST", &withhold, Some(TOKEN), r#"{"request": "RCF"}"#);
    assert_eq!(code, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("RCF"), "{body}");
    let (code, body) = lab.request("POST", &withhold, Some(TOKEN), rrq);
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["request"], "RRQ");
    assert_eq!(body["peer"], phone.phone.ras_address.to_string());
    let (code, body) = lab.request(
        "POST",
        &format!("/api/registrations/{id}/alternate"),
        Some(TOKEN),
        "",
    );
    assert_eq!(code, 200, "{body}");
    assert!(body["alternate"].as_str().is_some(), "{body}");
    let unknown = "/api/registrations/EP0000BEEF/alternate";
    assert_eq!(lab.request("POST", unknown, Some(TOKEN), "").0, 404);
}

/// `POST /api/restart`: the gatekeeper loses its state — no registration left — and an
/// endpoint's next keep-alive gets RRJ fullRegistrationRequired; it wants the token.
#[test]
fn the_restart_drill_drops_every_registration_and_a_keep_alive_is_refused() {
    let lab = Lab::start(24, true);
    let mut phone = lab.register(1, 1, 60_002);
    assert_eq!(lab.get("/api/registrations").as_array().unwrap().len(), 1);
    assert_eq!(lab.request("POST", "/api/restart", None, "").0, 401);
    let (code, body) = lab.request("POST", "/api/restart", Some(TOKEN), "");
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["restarted"], true);
    assert!(lab.get("/api/registrations").as_array().unwrap().is_empty());
    let clan = phone.transcript.last().unwrap().src;
    let keep_alive = phone.phone.keep_alive().unwrap();
    match phone.ask(clan, &keep_alive) {
        Answer::Rrj { reason, .. } => assert_eq!(reason, "fullRegistrationRequired"),
        other => panic!("{other:?}"),
    }
}

/// `POST /api/clans/service`: several C-LANs out of service at one instant, and back; an
/// unknown name changes nothing (404).
#[test]
fn several_clans_go_out_of_service_at_one_instant() {
    let lab = Lab::start(25, true);
    let body = r#"{"clans": ["a", "b"], "in_service": false}"#;
    assert_eq!(lab.request("POST", "/api/clans/service", None, body).0, 401);
    let (code, views) = lab.request("POST", "/api/clans/service", Some(TOKEN), body);
    assert_eq!(code, 200, "{views}");
    assert_eq!(views.as_array().unwrap().len(), 2);
    for name in ["a", "b"] {
        assert_eq!(
            lab.get(&format!("/api/clans/{name}"))["in_service"],
            false,
            "{name}"
        );
    }
    let unknown = r#"{"clans": ["c", "nope"], "in_service": false}"#;
    assert_eq!(
        lab.request("POST", "/api/clans/service", Some(TOKEN), unknown)
            .0,
        404
    );
    assert_eq!(lab.get("/api/clans/c")["in_service"], true);
    let back = r#"{"clans": ["a", "b"], "in_service": true}"#;
    assert_eq!(
        lab.request("POST", "/api/clans/service", Some(TOKEN), back)
            .0,
        200
    );
    assert_eq!(lab.get("/api/clans/a")["in_service"], true);
}
