//! `rasgk serve --state FILE` across a crash: 10,000 phones register, the gatekeeper is killed
//! with SIGKILL (no clean shutdown, so only the periodic write counts), started again with the
//! same state file, and every phone's lightweight RRQ is accepted with the C-LAN loads as
//! they were.
//!
//! Addresses: the gatekeeper on 127.0.51.x (fixtures/lab/restart.toml), phones on 127.51.x.y.

mod support;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rasgk::phone::{Answer, Phone};
use tokio::net::UdpSocket;
use tokio::sync::Semaphore;

const PHONES: usize = 10_000;
/// Requests in flight at once: a bounded window, like a real registration wave.
const WINDOW: usize = 200;
const DISCOVERY: &str = "127.0.51.1:1719";
const ADMIN: &str = "127.0.51.1:7051";

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

/// `rasgk serve --config restart.toml --state FILE`, its log (state-file lines) to `log`.
fn start(state: &Path, log: &Path) -> Child {
    start_with(state, log, &[])
}

fn start_with(state: &Path, log: &Path, extra: &[&str]) -> Child {
    let config = format!("{}/fixtures/lab/restart.toml", env!("CARGO_MANIFEST_DIR"));
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(["serve", "--config", &config, "--state"])
        .arg(state)
        .args(["--state-interval", "1"])
        .args(extra)
        .env(
            "RASGK_LOG",
            "warn,rasgk::server=info,rasgk::server::state_file=debug",
        )
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("rasgk starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while support::server::http_get(addr(ADMIN), "/api/clans").is_err() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("rasgk serve exited early with {status}");
        }
        assert!(Instant::now() < deadline, "rasgk serve did not come up");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// (name, sockets, reserved) of every C-LAN.
fn loads() -> Vec<(String, u64, u64)> {
    let (status, body) = support::server::http_get(addr(ADMIN), "/api/clans").unwrap();
    assert_eq!(status, 200, "{body}");
    let clans: serde_json::Value = serde_json::from_str(&body).unwrap();
    clans
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["sockets"].as_u64().unwrap(),
                c["reserved"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Sends a request and waits for the answer with its sequence number, sending again after
/// each 500 ms of silence (6 attempts).
async fn ask(socket: &UdpSocket, to: SocketAddr, datagram: &[u8]) -> Answer {
    let seq = rasgk::ras::peek_request_seq_num(datagram).unwrap();
    let mut buffer = [0u8; 4096];
    for _ in 0..6 {
        socket.send_to(datagram, to).await.unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
        while let Ok(Ok((len, _))) =
            tokio::time::timeout_at(deadline, socket.recv_from(&mut buffer)).await
        {
            if let Ok(answer) = Answer::read(&buffer[..len]) {
                if answer.seq() == seq {
                    return answer;
                }
            }
        }
    }
    panic!(
        "{}: no answer from {to} to seq {seq}",
        socket.local_addr().unwrap()
    );
}

/// One phone on its own socket, and the C-LAN it registered at.
struct Registered {
    phone: Phone,
    socket: UdpSocket,
    clan: SocketAddr,
}

async fn register(n: usize) -> Registered {
    let ip = [127, 51, (n / 250) as u8, (n % 250 + 1) as u8];
    let socket = UdpSocket::bind(SocketAddr::from((ip, 0))).await.unwrap();
    let mut phone = Phone::extension(100_000 + n as u32, socket.local_addr().unwrap());
    let grq = phone.grq();
    let clan = match ask(&socket, addr(DISCOVERY), &grq).await {
        Answer::Gcf {
            ras_address: Some(clan),
            ..
        } => clan,
        other => panic!("phone {n}: GCF expected, got {other:?}"),
    };
    let rrq = phone.rrq();
    let rcf = ask(&socket, clan, &rrq).await;
    assert!(matches!(rcf, Answer::Rcf { .. }), "phone {n}: {rcf:?}");
    phone.learn(&rcf);
    Registered {
        phone,
        socket,
        clan,
    }
}

async fn keep_alive(mut registered: Registered) -> (Registered, Answer) {
    let rrq = registered.phone.keep_alive().expect("registered");
    let answer = ask(&registered.socket, registered.clan, &rrq).await;
    (registered, answer)
}

/// Runs `f` on every item with at most WINDOW at once.
async fn windowed<T, R, F, Fut>(items: Vec<T>, f: F) -> Vec<R>
where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(T) -> Fut + Copy + Send + 'static,
    Fut: std::future::Future<Output = R> + Send,
{
    let permits = Arc::new(Semaphore::new(WINDOW));
    let mut tasks = Vec::with_capacity(items.len());
    for item in items {
        let permits = permits.clone();
        tasks.push(tokio::spawn(async move {
            let _permit = permits.acquire_owned().await.unwrap();
            f(item).await
        }));
    }
    let mut out = Vec::with_capacity(tasks.len());
    for task in tasks {
        out.push(task.await.unwrap());
    }
    out
}

/// Registrations in the state file, once it parses.
fn saved_registrations(state: &Path) -> Option<usize> {
    let text = std::fs::read(state).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&text).ok()?;
    value["registrations"].as_array().map(Vec::len)
}

/// The (ms, bytes) of the state-file writes logged with `registrations` registrations.
fn writes_logged(log: &Path, registrations: usize) -> Vec<(f64, u64)> {
    let raw = std::fs::read_to_string(log).unwrap_or_default();
    // Without colour codes, should the log have them.
    let mut text = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|c| c.is_ascii_alphabetic());
        } else {
            text.push(c);
        }
    }
    let field = |line: &str, key: &str| {
        let rest = &line[line.find(&format!(" {key}="))? + key.len() + 2..];
        rest.split_whitespace().next().map(str::to_string)
    };
    text.lines()
        .filter(|l| l.contains("state file written"))
        .filter(|l| field(l, "registrations").as_deref() == Some(&registrations.to_string()))
        .filter_map(|l| {
            Some((
                field(l, "ms")?.parse().ok()?,
                field(l, "bytes")?.parse().ok()?,
            ))
        })
        .collect()
}

#[test]
fn ten_thousand_registrations_survive_sigkill_with_state() {
    let started = Instant::now();
    let dir: PathBuf = std::env::temp_dir().join(format!("rasgk-restart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("state.json");
    let log = dir.join("rasgk.log");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let mut first = start(&state, &log);
    let phones = runtime.block_on(windowed((0..PHONES).collect(), register));
    let registered_in = started.elapsed();
    let before = loads();
    let sockets: u64 = before.iter().map(|(_, sockets, _)| sockets).sum();
    assert_eq!(sockets, PHONES as u64, "{before:?}");
    // Past one write interval: until the file holds every registration (at most 20 s).
    let deadline = Instant::now() + Duration::from_secs(20);
    while saved_registrations(&state) != Some(PHONES) {
        assert!(
            Instant::now() < deadline,
            "the state file never held {PHONES} registrations"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    first.kill().unwrap(); // SIGKILL: no shutdown write
    first.wait().unwrap();
    let size = std::fs::metadata(&state).unwrap().len();

    let mut second = start(&state, &log);
    let after_restart = loads();
    assert_eq!(after_restart, before, "loads after the restart");
    let answers = runtime.block_on(windowed(phones, keep_alive));
    let mut ids = HashSet::new();
    for (registered, answer) in &answers {
        match answer {
            Answer::Rcf { endpoint_id, .. } => {
                assert_eq!(
                    Some(endpoint_id.as_str()),
                    registered
                        .phone
                        .endpoint_id
                        .as_ref()
                        .map(|id| id.text())
                        .as_deref(),
                    "{}: the same endpoint id",
                    registered.phone.ras_address
                );
                ids.insert(endpoint_id.clone());
            }
            other => panic!(
                "{}: RCF to the lightweight RRQ expected, got {other:?}",
                registered.phone.ras_address
            ),
        }
    }
    assert_eq!(ids.len(), PHONES);
    assert_eq!(loads(), before, "loads after every keep-alive");
    // A new phone gets an endpoint id no restored phone has.
    let (_, newcomer) = runtime.block_on(async { keep_alive(register(PHONES).await).await });
    match newcomer {
        Answer::Rcf { endpoint_id, .. } => {
            assert!(
                !ids.contains(&endpoint_id),
                "{endpoint_id} handed out twice"
            )
        }
        other => panic!("{other:?}"),
    }
    support::server::terminate(&mut second);

    let writes = writes_logged(&log, PHONES);
    assert!(
        !writes.is_empty(),
        "no state write of {PHONES} registrations logged"
    );
    let fastest = writes.iter().map(|w| w.0).fold(f64::INFINITY, f64::min);
    eprintln!(
        "restart: {PHONES} phones registered in {:.1} s; state file {size} bytes; \
         {} writes of {PHONES} registrations logged, {fastest:.1} ms the fastest \
         (serialise + write + fsync + rename, debug build); whole test {:.1} s",
        registered_in.as_secs_f64(),
        writes.len(),
        started.elapsed().as_secs_f64()
    );
    drop(answers);

    // A damaged file with --discard-bad-state: an empty start, the file kept as .bad.
    std::fs::write(&state, b"{\"version\": 1, \"regis").unwrap();
    let mut third = start_with(&state, &log, &["--discard-bad-state"]);
    assert!(loads()
        .iter()
        .all(|(_, sockets, reserved)| sockets + reserved == 0));
    assert!(dir.join("state.json.bad").exists());
    support::server::terminate(&mut third);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_damaged_state_file_stops_rasgk_before_it_binds_anything() {
    let dir = std::env::temp_dir().join(format!("rasgk-restart-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("state.json");
    std::fs::write(&state, b"not json").unwrap();
    let config = format!("{}/fixtures/lab/restart.toml", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(["serve", "--config", &config, "--state"])
        .arg(&state)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&state.display().to_string()), "{stderr}");
    assert!(stderr.contains("not a rasgk state file"), "{stderr}");
    assert!(stderr.contains("--discard-bad-state"), "{stderr}");
    assert_eq!(
        std::fs::read(&state).unwrap(),
        b"not json",
        "left as it was"
    );
    std::fs::remove_dir_all(&dir).ok();
}
