//! C-LAN faults and configuration reloads on the real `rasgk serve`: a C-LAN taken out of
//! service and back keeps the other registrations; SIGHUP re-reads `--config FILE` — a new
//! C-LAN gets its socket and phones, a changed cap shows, a removed C-LAN's phone gets a URQ,
//! registrations stay — and a bad file is refused with the old configuration kept.
//!
//! A reload that changes `[limits]` applies them without a restart.
//!
//! Addresses: the gatekeeper on 127.0.54.x, phones on 127.54.x.y; for the limits test
//! 127.0.55.x and 127.55.x.y.

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rasgk::phone::{Answer, Phone};
use serde_json::Value;
use support::server::{http_get, http_request, terminate, UdpPhone};

const DISCOVERY: &str = "127.0.54.1:1719";
const ADMIN: &str = "127.0.54.1:7054";
const A: &str = "127.0.54.11:1719";
const B: &str = "127.0.54.12:1719";
const C: &str = "127.0.54.13:1719";
const D: &str = "127.0.54.14:1719";

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

/// The lab: C-LANs `clans` as (name, address, cap, priority) in region 1.
fn config(clans: &[(&str, &str, u32, u8)]) -> String {
    let mut text = format!(
        "[gatekeeper]\ndiscovery = \"{DISCOVERY}\"\nseed = 54\n\
         [[region]]\nid = 1\nnetworks = [\"127.54.0.0/16\"]\n\
         [admin]\nlisten = \"{ADMIN}\"\n"
    );
    for (name, address, cap, priority) in clans {
        text.push_str(&format!(
            "[[clan]]\nname = \"{name}\"\nregion = 1\naddress = \"{address}\"\n\
             max_sockets = {cap}\npriority = {priority}\n"
        ));
    }
    text
}

struct Running {
    child: Child,
    log: PathBuf,
}

impl Running {
    fn start(config: &Path, log: PathBuf) -> Running {
        Running::start_at(config, log, addr(ADMIN))
    }

    /// `rasgk serve --config config` with its admin port at `admin`.
    fn start_at(config: &Path, log: PathBuf, admin: SocketAddr) -> Running {
        let stderr = std::fs::File::create(&log).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rasgk"))
            .args(["serve", "--config"])
            .arg(config)
            .env("RASGK_LOG", "info")
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("rasgk starts");
        let deadline = Instant::now() + Duration::from_secs(20);
        while http_get(admin, "/api/clans").is_err() {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("rasgk serve exited early with {status}");
            }
            assert!(Instant::now() < deadline, "rasgk serve did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
        Running { child, log }
    }

    fn sighup(&self) {
        // SAFETY: kill(2) with a child's pid and a signal number has no memory effects.
        let result = unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGHUP) };
        assert_eq!(result, 0, "kill -HUP");
    }

    fn log_has(&self, fragments: &[&str]) -> bool {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        log.lines()
            .any(|line| fragments.iter().all(|f| line.contains(f)))
    }

    /// Waits (at most 10 s) until `count` log lines contain `fragment`.
    fn wait_for_log_lines(&self, fragment: &str, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let seen = || {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            log.lines().filter(|line| line.contains(fragment)).count()
        };
        while seen() < count {
            assert!(
                Instant::now() < deadline,
                "fewer than {count} log lines with {fragment:?}:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits (at most 10 s) for a log line with every fragment.
    fn wait_for_log(&self, fragments: &[&str]) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.log_has(fragments) {
            assert!(
                Instant::now() < deadline,
                "no log line with {fragments:?}:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        terminate(&mut self.child);
    }
}

fn get(path: &str) -> Value {
    let (status, body) = http_get(addr(ADMIN), path).unwrap();
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// (name, sockets, max_sockets, in_service) of every C-LAN.
fn clans() -> Vec<(String, u64, u64, bool)> {
    get("/api/clans")
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["sockets"].as_u64().unwrap(),
                c["max_sockets"].as_u64().unwrap(),
                c["in_service"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn endpoint_ids() -> Vec<String> {
    let mut ids: Vec<String> = get("/api/registrations")
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["endpoint_id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

fn phone(n: u8) -> UdpPhone {
    UdpPhone::bind(Phone::extension(
        5400 + u32::from(n),
        SocketAddr::from(([127, 54, 0, n], 0)),
    ))
}

/// GRQ + RRQ; the C-LAN it registered at.
fn register(p: &mut UdpPhone) -> SocketAddr {
    match p.register(addr(DISCOVERY)) {
        (
            Answer::Gcf {
                ras_address: Some(clan),
                ..
            },
            Some(Answer::Rcf { .. }),
        ) => clan,
        other => panic!(
            "{}: GCF and RCF expected, got {other:?}",
            p.phone.ras_address
        ),
    }
}

fn keep_alive(p: &mut UdpPhone, at: SocketAddr) -> Answer {
    let rrq = p.phone.keep_alive().expect("registered");
    p.ask(at, &rrq)
}

/// The URQ a phone receives (at most 5 s), answered with UCF; (from, AGL).
fn urq(p: &mut UdpPhone) -> (SocketAddr, Vec<SocketAddr>) {
    p.socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buffer = [0u8; 4096];
    let (len, from) = p.socket.recv_from(&mut buffer).expect("a URQ");
    p.socket
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    match Answer::read(&buffer[..len]).unwrap() {
        Answer::Urq { seq, agl, .. } => {
            let ucf = p.phone.ucf(seq);
            p.socket.send_to(&ucf, from).unwrap();
            p.phone.endpoint_id = None;
            (from, agl)
        }
        other => panic!("URQ expected, got {other:?}"),
    }
}

#[test]
fn out_of_service_and_back_then_a_sighup_reload_keeps_registrations() {
    let dir = std::env::temp_dir().join(format!("rasgk-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("lab.toml");
    std::fs::write(
        &file,
        config(&[("a", A, 3, 1), ("b", B, 3, 1), ("d", D, 3, 2)]),
    )
    .unwrap();
    let served = Running::start(&file, dir.join("rasgk.log"));

    let mut phones: Vec<UdpPhone> = (1..=4).map(phone).collect();
    let at: Vec<SocketAddr> = phones.iter_mut().map(register).collect();
    assert_eq!(at, [addr(A), addr(B), addr(A), addr(B)]);
    // One phone straight at d (priority 2: a GCF would not name it).
    let mut on_d = phone(9);
    let rrq = on_d.phone.rrq();
    assert!(matches!(on_d.ask(addr(D), &rrq), Answer::Rcf { .. }));

    // b out of service: its two phones get URQs; back in service: nobody else moved.
    let out = r#"{"in_service": false}"#;
    let (code, body) = http_request(addr(ADMIN), "POST", "/api/clans/b/service", None, out);
    assert_eq!(code, 200, "{body}");
    for p in [1, 3] {
        let (from, agl) = urq(&mut phones[p]);
        assert_eq!(from, addr(B));
        assert!(!agl.contains(&addr(B)), "{agl:?}");
    }
    let back = r#"{"in_service": true}"#;
    let (code, body) = http_request(addr(ADMIN), "POST", "/api/clans/b/service", None, back);
    assert_eq!(code, 200, "{body}");
    assert_eq!(endpoint_ids().len(), 3, "a's two and d's one survive");
    for p in [0, 2] {
        assert!(matches!(
            keep_alive(&mut phones[p], addr(A)),
            Answer::Rcf { .. }
        ));
    }
    // The two come back; b (empty again) is the least loaded.
    for p in [1, 3] {
        assert_eq!(register(&mut phones[p]), addr(B));
    }
    let before = endpoint_ids();
    assert_eq!(before.len(), 5);

    // The new file: c added, b's cap 3 → 5, d removed.
    std::fs::write(
        &file,
        config(&[("a", A, 3, 1), ("b", B, 5, 1), ("c", C, 4, 1)]),
    )
    .unwrap();
    served.sighup();
    served.wait_for_log(&["configuration reloaded"]);
    assert_eq!(
        clans(),
        [
            ("a".to_string(), 2, 3, true),
            ("b".to_string(), 2, 5, true),
            ("c".to_string(), 0, 4, true),
        ]
    );
    // d's phone was told to register again, from d's address, with an AGL without d.
    let (from, agl) = urq(&mut on_d);
    assert_eq!(from, addr(D));
    assert!(agl.contains(&addr(C)) && !agl.contains(&addr(D)), "{agl:?}");
    let after = endpoint_ids();
    assert_eq!(after.len(), 4);
    assert!(after.iter().all(|id| before.contains(id)), "{after:?}");
    for (p, clan) in phones.iter_mut().zip([A, B, A, B]) {
        assert!(
            matches!(keep_alive(p, addr(clan)), Answer::Rcf { .. }),
            "{}",
            p.phone.ras_address
        );
    }
    // A new phone (and d's, registering again) goes to c, the least loaded; c answers RAS.
    assert_eq!(register(&mut on_d), addr(C));
    let mut newcomer = phone(10);
    assert_eq!(register(&mut newcomer), addr(C));
    assert_eq!(clans()[2].1, 2);
    // d's socket is closed: its address can be bound again.
    drop(std::net::UdpSocket::bind(addr(D)).expect("d's address is free"));

    // A bad file: refused, the file and field logged, the running configuration kept.
    let bad = config(&[("a", A, 3, 1), ("b", B, 5, 1), ("c", C, 4, 1)]).replace(
        "region = 1\naddress = \"127.0.54.13",
        "region = 9\naddress = \"127.0.54.13",
    );
    std::fs::write(&file, bad).unwrap();
    served.sighup();
    served.wait_for_log(&["reload refused", "lab.toml", "clan[2].region"]);
    assert_eq!(clans().len(), 3);
    assert_eq!(endpoint_ids().len(), 6);
    assert!(matches!(
        keep_alive(&mut newcomer, addr(C)),
        Answer::Rcf { .. }
    ));
    drop(served);
    std::fs::remove_dir_all(&dir).ok();
}

/// The limits test's gatekeeper: one C-LAN, and `limits` as its `[limits]` table.
fn limits_lab(limits: &str) -> String {
    format!(
        "[gatekeeper]\ndiscovery = \"127.0.55.1:1719\"\nseed = 55\n\
         [[region]]\nid = 1\nnetworks = [\"127.55.0.0/16\"]\n\
         [admin]\nlisten = \"127.0.55.1:7055\"\n\
         [[clan]]\nname = \"l\"\nregion = 1\naddress = \"127.0.55.11:1719\"\n\
         [limits]\n{limits}\n"
    )
}

/// Sends `n` GRQs from one phone's socket back to back; how many GCFs came back.
fn grq_burst(p: &mut UdpPhone, n: usize) -> usize {
    let discovery = addr("127.0.55.1:1719");
    for _ in 0..n {
        let grq = p.phone.grq();
        p.socket.send_to(&grq, discovery).unwrap();
    }
    let mut buffer = [0u8; 2048];
    let mut answered = 0;
    // Until 500 ms of silence (the socket's read timeout).
    while let Ok((len, _)) = p.socket.recv_from(&mut buffer) {
        if matches!(Answer::read(&buffer[..len]), Ok(Answer::Gcf { .. })) {
            answered += 1;
        }
    }
    answered
}

/// One sample of `/metrics` (the first line starting with `name`), as a number.
fn metric(name: &str) -> f64 {
    let (status, body) = http_get(addr("127.0.55.1:7055"), "/metrics").unwrap();
    assert_eq!(status, 200);
    body.lines()
        .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
}

#[test]
fn a_sighup_reload_applies_new_limits_without_a_restart() {
    let dir = std::env::temp_dir().join(format!("rasgk-reload-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("limits.toml");
    std::fs::write(&file, limits_lab("")).unwrap();
    let served = Running::start_at(&file, dir.join("rasgk.log"), addr("127.0.55.1:7055"));
    let pid = served.child.id();
    let mut p = UdpPhone::bind(Phone::extension(
        5500,
        SocketAddr::from(([127, 55, 0, 1], 0)),
    ));

    // No rate limit: a burst of 8 GRQs from one source is answered in full.
    assert_eq!(grq_burst(&mut p, 8), 8);
    assert_eq!(metric("rasgk_limit{limit=\"rate_per_source\"}"), 0.0);
    assert!(
        metric("rasgk_cached_replies ") >= 8.0,
        "the 8 GCFs are cached"
    );

    // The file now limits each source to 1 a second with a burst of 2, and shorter frames.
    let limited = "rate_per_source = 1\nburst_per_source = 2\nmax_frame_octets = 4096\n\
                   max_cached_replies = 3";
    std::fs::write(&file, limits_lab(limited)).unwrap();
    served.sighup();
    served.wait_for_log_lines("configuration reloaded", 1);
    assert_eq!(metric("rasgk_limit{limit=\"rate_per_source\"}"), 1.0);
    assert_eq!(metric("rasgk_limit{limit=\"burst_per_source\"}"), 2.0);
    assert_eq!(metric("rasgk_limit{limit=\"max_frame_octets\"}"), 4096.0);
    assert_eq!(metric("rasgk_limit{limit=\"max_cached_replies\"}"), 3.0);
    // The 8 cached GCFs are cut to the new bound at once.
    assert!(metric("rasgk_cached_replies ") <= 3.0);
    // The same burst: the bucket's 2 (and at most one more refilled while they went out).
    let answered = grq_burst(&mut p, 8);
    assert!((2..=3).contains(&answered), "{answered} of 8 answered");
    assert!(metric("rasgk_rate_limited_total") >= 5.0);

    // The limits taken out again: the whole burst is answered, still the same process.
    std::fs::write(&file, limits_lab("")).unwrap();
    served.sighup();
    served.wait_for_log_lines("configuration reloaded", 2);
    assert_eq!(grq_burst(&mut p, 8), 8);
    assert_eq!(metric("rasgk_limit{limit=\"rate_per_source\"}"), 0.0);
    assert_eq!(served.child.id(), pid);
    drop(served);
    std::fs::remove_dir_all(&dir).ok();
}
