//! The planner agrees with the live system (issue 22): 3,000 phones of three regions, 30 %
//! of them TTS, arriving at 200 a second, register through a real `rasgk serve` (socket
//! mode, on 127.0.81.x) with `rasgk storm --sockets`; the established sockets of every C-LAN
//! that `/api/clans` shows once they are all in service equal the final load `rasgk plan`
//! gives for the same phones on the same lab (fixtures/plan/agree.toml,
//! fixtures/plan/agree-arrival.toml). Then, the phones still up, clan-1a is taken out of
//! service: where its 480 phones go (every C-LAN's established sockets once they are all
//! back) equals the plan of the same phones with that event
//! (fixtures/plan/agree-failure.toml).
//!
//! On arrival phones spill across priority classes and regions, TTS phones' sockets
//! included. The storm's rate leaves each registration done, nearly always, before the
//! next phone's GRQ, so the gatekeeper sees the RRQs in the planner's order and its seeded
//! AGL draws match.
//!
//! The C-LAN taken out is one whose phones' destinations do not depend on the order their
//! RRQs arrive in: all of clan-1a's phones are of region 1 and re-register at clan-1c, the
//! one home C-LAN with room, until it is full, then at clan-3c. A C-LAN whose phones have
//! two C-LANs of one priority class to go to (clan-2a's: clan-1c and clan-3c) gives a split
//! that varies by a phone or two from run to run: `rasgk serve` reads each C-LAN's RAS
//! socket in batches, so the re-registrations reach the core interleaved otherwise than
//! the planner's (all in the order of the URQs), and each TTS phone's socket goes to the
//! entry least loaded at its RCF. About 20 s.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::server::{http_request, terminate, Served};

const PHONES: u64 = 3000;
const RATE: &str = "200";
const LAB: &str = "fixtures/plan/agree.toml";
const ARRIVAL: &str = "fixtures/plan/agree-arrival.toml";
const FAILURE: &str = "fixtures/plan/agree-failure.toml";
/// The C-LAN taken out of service (as in fixtures/plan/agree-failure.toml).
const OUT: &str = "clan-1a";
const ADMIN: &str = "127.0.81.1:7000";

/// Established sockets by C-LAN name.
type Loads = BTreeMap<String, u64>;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `rasgk plan --config LAB SCENARIO --json`: each C-LAN's final sockets; every phone must
/// be in service at the end.
fn planned(scenario: &str) -> Loads {
    let output = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .current_dir(root())
        .args(["plan", "--config", LAB, scenario, "--json"])
        .output()
        .expect("rasgk plan runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "rasgk plan {scenario}: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("rasgk plan {scenario} --json: {e}"));
    assert_eq!(report["in_service"], PHONES, "{scenario}: {stderr}");
    report["clans"]
        .as_array()
        .expect("clans in the plan")
        .iter()
        .map(|c| {
            let name = c["name"].as_str().expect("a C-LAN's name").to_string();
            (name, c["final_sockets"].as_u64().expect("final_sockets"))
        })
        .collect()
}

/// `/api/clans`: established sockets by C-LAN, and whether every place is an established
/// socket (nothing reserved, queued or being set up).
fn live(served: &Served) -> (Loads, bool) {
    let clans = served.get_json("/api/clans");
    let mut loads = Loads::new();
    let mut settled = true;
    for clan in clans.as_array().expect("an array of C-LANs") {
        let established = clan["established"].as_u64().expect("established");
        settled &= clan["sockets"].as_u64() == Some(established)
            && clan["reserved"].as_u64() == Some(0)
            && clan["setups"].as_u64() == Some(0)
            && clan["queued"].as_u64() == Some(0);
        let name = clan["name"].as_str().expect("a C-LAN's name").to_string();
        loads.insert(name, established);
    }
    (loads, settled)
}

/// A `rasgk storm` child, killed when dropped; its standard error goes to `log`.
struct Storm {
    child: Child,
    log: PathBuf,
}

impl Storm {
    /// The storm of fixtures/plan/agree-arrival.toml's phones, holding them `hold_s`
    /// seconds after the last one registered.
    fn start(log: PathBuf, hold_s: u32) -> Storm {
        let child = Command::new(env!("CARGO_BIN_EXE_rasgk"))
            .args(["storm", "--sockets", "--target", "127.0.81.1:1719"])
            .args(["--admin", ADMIN, "--phones", &PHONES.to_string()])
            .args(["--regions", "1,2,3", "--tts-share", "0.3", "--rate", RATE])
            .args(["--from", "60000", "--tts-from", "50000"])
            .args(["--duration", &hold_s.to_string(), "--json"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("the storm's log"))
            .spawn()
            .expect("rasgk storm starts");
        Storm { child, log }
    }

    /// Panics, with what it said, when the storm has ended already.
    fn still_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            let said = std::fs::read_to_string(&self.log).unwrap_or_default();
            panic!("rasgk storm ended early with {status}:\n{said}");
        }
    }
}

impl Drop for Storm {
    fn drop(&mut self) {
        terminate(&mut self.child);
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Polls `/api/clans` every 200 ms until every phone has its socket established and the
/// loads have not changed for a second (`extra` holds too); panics after `limit`.
fn settled(
    served: &Served,
    storm: &mut Storm,
    limit: Duration,
    what: &str,
    extra: impl Fn(&Loads) -> bool,
) -> Loads {
    let deadline = Instant::now() + limit;
    let mut last: Option<Loads> = None;
    let mut same = 0;
    for _ in 0..1_000 {
        storm.still_running();
        let (loads, all_established) = live(served);
        let done = all_established && loads.values().sum::<u64>() == PHONES && extra(&loads);
        if done && last.as_ref() == Some(&loads) {
            same += 1;
            if same >= 5 {
                return loads;
            }
        } else {
            same = 0;
        }
        assert!(
            Instant::now() < deadline,
            "waited {limit:?} for {what}; /api/clans shows {loads:?}"
        );
        last = Some(loads);
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("gave up polling for {what}");
}

/// Both sides, one line per C-LAN, the differing ones marked.
fn table(live: &Loads, plan: &Loads) -> String {
    let mut text = format!("{:<10} {:>6} {:>6}\n", "C-LAN", "live", "plan");
    let names: std::collections::BTreeSet<&String> = live.keys().chain(plan.keys()).collect();
    for name in names {
        let (l, p) = (live.get(name), plan.get(name));
        let show = |v: Option<&u64>| v.map_or("-".to_string(), u64::to_string);
        let mark = if l == p { "" } else { "  <- differs" };
        text += &format!("{name:<10} {:>6} {:>6}{mark}\n", show(l), show(p));
    }
    text
}

#[test]
fn the_planned_loads_are_the_live_ones_on_arrival_and_after_a_clan_failure() {
    let started = Instant::now();
    // 3,000 TCP connections in each of serve and storm (each raises its soft limit to the
    // hard one), plus their own files.
    let (_, hard) =
        rasgk::server::raise_open_file_limit().expect("the open-file limit can be read");
    assert!(
        hard >= PHONES + 1000,
        "the open-file hard limit {hard} leaves no room for {PHONES} sockets a process"
    );

    let plan_arrival = planned(ARRIVAL);
    let plan_failure = planned(FAILURE);
    assert_eq!(plan_failure[OUT], 0, "the plan empties {OUT}");
    assert_ne!(
        plan_arrival, plan_failure,
        "{OUT}'s phones move somewhere in the plan"
    );

    let served = Served::start(
        &["--config", root().join(LAB).to_str().expect("a UTF-8 path")],
        ADMIN.parse().expect("the admin address"),
    );
    let log =
        std::env::temp_dir().join(format!("rasgk-plan-live-storm-{}.log", std::process::id()));
    // 15 s of arrivals, then held up to 40 s more: longer than the test needs them.
    let mut storm = Storm::start(log, 40);

    let arrived = settled(
        &served,
        &mut storm,
        Duration::from_secs(35),
        "every phone in service",
        |_| true,
    );
    let arrival_at = started.elapsed();

    let body = r#"{"in_service": false}"#;
    let path = format!("/api/clans/{OUT}/service");
    let (status, answer) = http_request(served.admin, "POST", &path, None, body);
    assert_eq!(status, 200, "POST {path}: {answer}");
    let failed = settled(
        &served,
        &mut storm,
        Duration::from_secs(15),
        &format!("{OUT}'s phones in service elsewhere"),
        |loads| loads.get(OUT) == Some(&0),
    );

    let arrival_table = table(&arrived, &plan_arrival);
    let failure_table = table(&failed, &plan_failure);
    eprintln!(
        "on arrival ({:.1} s):\n{arrival_table}with {OUT} out of service ({:.1} s):\n\
         {failure_table}",
        arrival_at.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        arrived == plan_arrival && failed == plan_failure,
        "the live loads differ from the planned ones\non arrival:\n{arrival_table}\
         with {OUT} out of service:\n{failure_table}"
    );
}
