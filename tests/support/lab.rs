//! Socket mode's outside judges, shared by the tests that run `rasgk serve` with a lab of
//! `fixtures/lab/` against `rasgk storm --sockets`: the lab moved to addresses of a test's
//! own, the C-LANs as the admin port shows them, the OS's count of connections beside the
//! admin port's, and a storm child's report.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::server::Served;
use super::tcp::{self, ESTABLISHED};

/// `fixtures/lab/<name>`, its addresses 127.0.FROM.x moved to 127.0.TO.x (so tests run side
/// by side) and `more` added to `[gatekeeper]` after its `sockets = "tcp"`, written to a
/// file of the system's temporary folder.
pub fn moved(name: &str, from: u8, to: u8, more: &str) -> PathBuf {
    let fixture = format!("{}/fixtures/lab/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&fixture)
        .unwrap_or_else(|e| panic!("{fixture}: {e}"))
        .replace(&format!("127.0.{from}."), &format!("127.0.{to}."))
        .replace("sockets = \"tcp\"", &format!("sockets = \"tcp\"\n{more}"));
    let stem = name.trim_end_matches(".toml");
    let path = std::env::temp_dir().join(format!("rasgk-{stem}-{}-{to}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

/// A `rasgk storm` running in the background, its standard output and error read as they
/// come (a long storm's `--json` report is larger than a pipe holds: unread, it would stop
/// the storm before its end).
pub struct StormChild {
    child: Child,
    /// What reads each of its pipes, until the report takes it.
    readers: Option<[std::thread::JoinHandle<Vec<u8>>; 2]>,
}

impl StormChild {
    /// Starts `rasgk ARGS`.
    pub fn spawn(args: &[&str]) -> StormChild {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rasgk"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rasgk storm starts");
        let drain = |mut pipe: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut octets = Vec::new();
                let _ = pipe.read_to_end(&mut octets);
                octets
            })
        };
        let stdout = drain(Box::new(child.stdout.take().expect("piped")));
        let stderr = drain(Box::new(child.stderr.take().expect("piped")));
        StormChild {
            child,
            readers: Some([stdout, stderr]),
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Has it ended?
    pub fn ended(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Its exit status and report, once it ends (at most `within`; killed then).
    pub fn report_and_status(mut self, within: Duration) -> (ExitStatus, Value) {
        let deadline = Instant::now() + within;
        while !self.ended() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the storm did not end within {within:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let status = self.child.wait().unwrap();
        let [stdout, stderr] = self
            .readers
            .take()
            .expect("read once")
            .map(|reader| reader.join().expect("its pipe read to the end"));
        let stderr = String::from_utf8_lossy(&stderr);
        eprintln!("{stderr}");
        let report = serde_json::from_slice(&stdout)
            .unwrap_or_else(|e| panic!("--json prints one JSON object ({e}): {stderr}"));
        (status, report)
    }
}

impl Drop for StormChild {
    fn drop(&mut self) {
        // A test that failed midway leaves no storm behind.
        if !self.ended() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `rasgk storm --sockets` against the gatekeeper on 127.0.NET.1, phones of regions 1, 2
/// and 3, in the background.
pub fn storm(net: u8, phones: usize, tts_share: &str, more: &[&str]) -> StormChild {
    let target = format!("127.0.{net}.1:1719");
    let admin = format!("127.0.{net}.1:7000");
    storm_against(&target, &admin, phones, tts_share, "1,2,3", more)
}

/// `rasgk storm --sockets` of `phones` phones of `regions` against the discovery address
/// `target`, reading the admin port at `admin`, its report as JSON, in the background.
pub fn storm_against(
    target: &str,
    admin: &str,
    phones: usize,
    tts_share: &str,
    regions: &str,
    more: &[&str],
) -> StormChild {
    let phones = phones.to_string();
    let mut args = vec![
        "storm",
        "--sockets",
        "--target",
        target,
        "--admin",
        admin,
        "--phones",
        &phones,
        "--tts-share",
        tts_share,
        "--regions",
        regions,
        "--timeout-ms",
        "500",
        "--retries",
        "4",
        "--give-up-s",
        "120",
        "--json",
    ];
    args.extend(more);
    StormChild::spawn(&args)
}

/// The storm's report, once it ends (at most `within`) with exit status 0.
pub fn report(storm: StormChild, within: Duration) -> Value {
    let (status, report) = storm.report_and_status(within);
    assert!(status.success(), "rasgk storm failed ({status}): {report}");
    report
}

/// (name, IP, established, places, setups, cap) of every C-LAN (the IP of its `address`).
pub fn clans(served: &Served) -> Vec<(String, IpAddr, u64, u64, u64, u64)> {
    served
        .get_json("/api/clans")
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let address: SocketAddr = c["address"].as_str().unwrap().parse().unwrap();
            (
                c["name"].as_str().unwrap().to_string(),
                address.ip(),
                c["established"].as_u64().unwrap(),
                c["sockets"].as_u64().unwrap(),
                c["setups"].as_u64().unwrap(),
                c["max_sockets"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The sockets a storm's report says its phones held (`sockets_held`, by signalling
/// address), by the name `name_of` gives each address's C-LAN, leaving out C-LANs with none.
pub fn held_by_clan(report: &Value, name_of: impl Fn(&str) -> String) -> BTreeMap<String, u64> {
    let held: BTreeMap<String, u64> = serde_json::from_value(report["sockets_held"].clone())
        .expect("sockets_held is a map of counts");
    let mut by_clan = BTreeMap::new();
    for (address, n) in held {
        *by_clan.entry(name_of(&address)).or_default() += n;
    }
    nonzero(&by_clan)
}

/// `counts` without the entries at 0.
pub fn nonzero(counts: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    counts
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, &n)| (k.clone(), n))
        .collect()
}

/// Established connections on every C-LAN, as the admin port counts them.
pub fn established_total(served: &Served) -> u64 {
    clans(served).iter().map(|c| c.2).sum()
}

/// The established connections the OS shows on each C-LAN's IP, and the admin port's
/// `established`, read when they agree with themselves (the admin port read before and
/// after the OS gives the same figures).
pub fn os_and_admin(served: &Served) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    for _ in 0..50 {
        let before = clans(served);
        let ips: Vec<IpAddr> = before.iter().map(|c| c.1).collect();
        let os = tcp::count_by_local_ip_steady(&ips, ESTABLISHED);
        let after = clans(served);
        if before == after {
            let admin = after.iter().map(|c| (c.0.clone(), c.2)).collect();
            let os = after
                .iter()
                .map(|c| (c.0.clone(), os[&c.1] as u64))
                .collect();
            return (os, admin);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the admin port's figures never held still");
}

/// Polls until `check` holds (at most `within`), panicking with `what`.
pub fn until(within: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "{what} (waited {within:?})");
        std::thread::sleep(Duration::from_millis(50));
    }
}
