//! Socket mode's figures: real TCP signalling sockets on `fixtures/lab/sockets.toml`
//! (sixteen C-LANs of 480 in three regions), each run against a fresh `rasgk serve` in a
//! process of its own, as users run it, with `rasgk storm --sockets` as docs/storms.md gives
//! it. (Run beside the storm in this process, the gatekeeper measured worse than it serves:
//! in one session the TTS phones' time to service was 92–95 ms at the median there against
//! 62–66 ms with `rasgk serve` apart, and the 6,000-phone storm's p99 171–181 ms against
//! 82–95 ms.)
//!
//! ```text
//!   storm     N phones, half TTS: first GRQ to last socket in service          <= 2 s
//!   tts       N/2 TTS phones accepting at once: time to service p99            <= 100 ms
//!   why TTS   setup_ms = 20, N/2 phones all non-TTS, then all TTS: time to service,
//!             establishments rejected busy, most establishments at once per C-LAN
//!   plan      setup_ms = 20: `rasgk plan`'s time to service for the same N/2 TTS phones
//!             at once, and for N/2 non-TTS phones at 1,000 a second (a fifth storm),
//!             against the live figures: p50 and p99 within 25 %
//! ```
//!
//! While each storm runs, a sampler reads `/api/clans` every 20 ms and keeps the most
//! establishments in progress on any one C-LAN (at most `max_setups_per_clan`, 5).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::config;
use crate::plan::{self, Scenario};
use crate::storm::report::Report;
use crate::storm::{self, StormArgs};

/// The topology: sixteen C-LANs of 480 sockets on 127.0.40.x, signalling on port 1720.
const TOPOLOGY: &str = include_str!("../../fixtures/lab/sockets.toml");

/// Where [`TOPOLOGY`] comes from, for its errors.
const ORIGIN: &str = "fixtures/lab/sockets.toml";

/// The gatekeeper's discovery address in [`TOPOLOGY`].
const TARGET: &str = "127.0.40.1:1719";

/// Its admin port in [`TOPOLOGY`].
const ADMIN: &str = "127.0.40.1:7000";

/// One socket-mode storm: what the phones reported and what the sampler saw.
#[derive(Debug, Clone, PartialEq)]
pub struct SocketRun {
    /// Phones in it.
    pub phones: usize,
    /// Of them TTS.
    pub tts: usize,
    /// `setup_ms` of the gatekeeper.
    pub setup_ms: u32,
    /// Phones that registered.
    pub registered: usize,
    /// Phones holding a socket in service at the end.
    pub in_service: usize,
    /// First GRQ to the last socket in service, seconds.
    pub service_s: f64,
    /// Time to service, milliseconds: (p50, p99, max).
    pub time_to_service_ms: (f64, f64, f64),
    /// Non-TTS connections the gatekeeper refused (busy) before service, as the phones
    /// counted them.
    pub rejected: u64,
    /// The most establishments in progress on one C-LAN in any sample.
    pub most_setups: u32,
}

impl SocketRun {
    /// Every phone registered and in service.
    pub fn whole(&self) -> bool {
        self.registered == self.phones && self.in_service == self.phones
    }

    fn from_report(report: &Report, tts: usize, setup_ms: u32, most_setups: u32) -> SocketRun {
        let latency = &report.time_to_service_ms;
        SocketRun {
            phones: report.phones,
            tts,
            setup_ms,
            registered: report.registered,
            in_service: report.phones - report.phones_without_socket,
            service_s: report.service_s.unwrap_or(f64::INFINITY),
            time_to_service_ms: (latency.p50, latency.p99, latency.max),
            rejected: report.connections_rejected,
            most_setups,
        }
    }

    /// One line of the bench's block.
    pub fn line(&self) -> String {
        let (p50, p99, max) = self.time_to_service_ms;
        format!(
            "{} phones ({} TTS), setup_ms {}: {} registered, {} in service; first GRQ to last \
             socket {:.2} s; time to service ms p50 {p50:.1} p99 {p99:.1} max {max:.1}; {} \
             connections rejected busy; at most {} establishments at once on a C-LAN",
            self.phones,
            self.tts,
            self.setup_ms,
            self.registered,
            self.in_service,
            self.service_s,
            self.rejected,
            self.most_setups
        )
    }
}

/// Every socket-mode figure of one bench run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sockets {
    /// The storm of `--socket-phones`, half TTS.
    pub storm: SocketRun,
    /// Half as many phones, all TTS, accepting at once.
    pub tts: SocketRun,
    /// With `setup_ms = 20`: the same phones all non-TTS, then all TTS.
    pub why_tts: [SocketRun; 2],
    /// With `setup_ms = 20`: the planner against the live storms, TTS phones at once and
    /// non-TTS phones at [`PACE`] a second.
    pub agreement: [Agreement; 2],
}

/// Arrivals a second of the non-TTS phones whose time to service the planner must predict:
/// slower than their C-LANs finish establishments (sixteen C-LANs, five at once, 20 ms
/// each), where the planner's evenly spaced phones and the storm's meet the same queue.
pub const PACE: u32 = 1000;

/// How far a planned time to service may be from the live one, as a share of it.
pub const AGREEMENT: f64 = 0.25;

/// The planner's time to service beside a live storm's, for the same phones on the same
/// lab.
#[derive(Debug, Clone, PartialEq)]
pub struct Agreement {
    /// Which phones.
    pub what: String,
    /// The storm's (p50, p99), milliseconds.
    pub live: (f64, f64),
    /// The plan's (p50, p99), milliseconds.
    pub plan: (f64, f64),
}

impl Agreement {
    /// Both figures within [`AGREEMENT`] of the live ones.
    pub fn agrees(&self) -> bool {
        let within = |live: f64, plan: f64| (plan - live).abs() <= AGREEMENT * live;
        within(self.live.0, self.plan.0) && within(self.live.1, self.plan.1)
    }

    /// One line of the bench's block.
    pub fn line(&self) -> String {
        format!(
            "{}: live p50 {:.1} p99 {:.1} ms, planned p50 {:.1} p99 {:.1} ms",
            self.what, self.live.0, self.live.1, self.plan.0, self.plan.1
        )
    }
}

/// `rasgk storm --sockets` with the options docs/performance.md gives for `phones` phones, `tts_share` of
/// them TTS, holding their sockets `hold_s` after the last registration (long enough for
/// every phone to be in service: non-TTS phones turned away busy come back after a
/// back-off of up to 2 s).
pub fn storm_args(
    phones: usize,
    tts_share: f64,
    hold_s: u32,
    rate: Option<u32>,
) -> Result<StormArgs, String> {
    let phones = phones.to_string();
    let share = tts_share.to_string();
    let hold = hold_s.to_string();
    let rate = rate.map(|r| r.to_string());
    let mut line = vec![
        "rasgk storm",
        "--sockets",
        "--target",
        TARGET,
        "--admin",
        ADMIN,
        "--phones",
        &phones,
        "--tts-share",
        &share,
        "--regions",
        "1,2,3",
        "--duration",
        &hold,
    ];
    if let Some(rate) = &rate {
        line.extend(["--rate", rate]);
    }
    super::storm::parse_storm_line(&line).map_err(|e| format!("the socket storm's options: {e}"))
}

/// [`TOPOLOGY`] with `setup_ms`.
fn topology(setup_ms: u32) -> String {
    TOPOLOGY.replace(
        "sockets = \"tcp\"",
        &format!("sockets = \"tcp\"\nsetup_ms = {setup_ms}"),
    )
}

/// Runs one storm against a fresh gatekeeper of [`TOPOLOGY`] with `setup_ms`, the phones
/// arriving at `rate` a second (all at once without).
async fn run_one(
    phones: usize,
    tts_share: f64,
    setup_ms: u32,
    rate: Option<u32>,
) -> Result<SocketRun, String> {
    let text = topology(setup_ms);
    let config = config::from_toml(&text, ORIGIN).map_err(|e| e.to_string())?;
    let admin: SocketAddr = config.admin.listen;
    let gatekeeper = tokio::task::spawn_blocking(move || Served::start(&text, admin))
        .await
        .map_err(|e| format!("the socket storm's gatekeeper could not start: {e}"))??;
    // With establishments that take time, rejected phones need more than one back-off.
    let hold_s = if setup_ms == 0 { 2 } else { 5 };
    let args = storm_args(phones, tts_share, hold_s, rate)?;
    let tts = (phones as f64 * tts_share).floor() as usize;
    let outcome = sampled_storm(args, "the socket storm", move |sampling| {
        most_setups(admin, sampling)
    })
    .await;
    let _ = tokio::task::spawn_blocking(move || gatekeeper.stop()).await;
    let (report, most) = outcome?;
    Ok(SocketRun::from_report(&report, tts, setup_ms, most))
}

/// Runs a storm as `rasgk storm` runs it (its one-thread runtime, on a thread of its own)
/// while `sample` runs on another until the storm is over (it is told through the flag it is
/// handed): the storm's report, and what `sample` returned. `what` names the storm in errors.
pub(super) async fn sampled_storm<T: Send + 'static>(
    args: StormArgs,
    what: &'static str,
    sample: impl FnOnce(&AtomicBool) -> T + Send + 'static,
) -> Result<(Report, T), String> {
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        tokio::task::spawn_blocking(move || sample(&sampling))
    };
    let report = tokio::task::spawn_blocking(move || {
        storm::runtime()
            .map_err(|e| format!("cannot start the storm's runtime: {e}"))?
            .block_on(storm::storm_spread(&args))
            .map_err(|e| format!("{what} could not run: {e}"))
    })
    .await
    .map_err(|e| format!("{what} could not run: {e}"));
    sampling.store(false, Ordering::Relaxed);
    let sampled = sampler
        .await
        .map_err(|e| format!("{what}'s sampler failed: {e}"))?;
    Ok((report??, sampled))
}

/// `rasgk serve --config FILE` (this very binary) in a child process, its configuration and
/// log in files of the system's temporary folder that go with it.
pub(super) struct Served {
    child: std::process::Child,
    config: std::path::PathBuf,
    log: std::path::PathBuf,
}

impl Served {
    /// How long the gatekeeper may take to answer on its admin port.
    const START: std::time::Duration = std::time::Duration::from_secs(10);
    /// How long it may take to stop after SIGTERM before it is killed.
    const STOP: std::time::Duration = std::time::Duration::from_secs(5);

    /// Starts it with the configuration `text`, and waits until `admin` answers.
    pub(super) fn start(text: &str, admin: SocketAddr) -> Result<Served, String> {
        let folder = std::env::temp_dir();
        let stem = format!("rasgk-bench-serve-{}", std::process::id());
        let config = folder.join(format!("{stem}.toml"));
        let log = folder.join(format!("{stem}.log"));
        std::fs::write(&config, text)
            .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find the rasgk binary to serve with: {e}"))?;
        let stderr = std::fs::File::create(&log)
            .map_err(|e| format!("cannot write {}: {e}", log.display()))?;
        let child = std::process::Command::new(exe)
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start rasgk serve: {e}"))?;
        let mut served = Served { child, config, log };
        let started = std::time::Instant::now();
        loop {
            if crate::admin_client::fetch_clans(admin).is_ok() {
                return Ok(served);
            }
            let ended = served.child.try_wait().ok().flatten();
            if ended.is_some() || started.elapsed() > Served::START {
                let said = std::fs::read_to_string(&served.log).unwrap_or_default();
                return Err(format!(
                    "rasgk serve for the bench did not answer on {admin} ({}): {}",
                    ended.map_or("still starting after 10 s".to_string(), |s| s.to_string()),
                    said.trim()
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// SIGTERM, and waits for it to end (killing it after [`Served::STOP`]).
    pub(super) fn stop(mut self) {
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill(2) on our own child's pid, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let asked = std::time::Instant::now();
        while asked.elapsed() < Served::STOP {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // A no-op when it has ended; the bench never leaves a gatekeeper behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.config);
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Reads `/api/clans` every 20 ms while `sampling` holds: the most establishments in
/// progress on one C-LAN.
fn most_setups(admin: SocketAddr, sampling: &AtomicBool) -> u32 {
    let mut most = 0;
    while sampling.load(Ordering::Relaxed) {
        if let Ok(clans) = crate::admin_client::fetch_clans(admin) {
            most = clans.iter().map(|c| c.setups).max().unwrap_or(0).max(most);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    most
}

/// Every socket-mode figure for a storm of `phones`.
pub async fn run(phones: usize) -> Result<Sockets, String> {
    let half = phones / 2;
    eprintln!("rasgk bench: a socket-mode storm of {phones} phones, half TTS ({ORIGIN})");
    let storm = run_one(phones, 0.5, 0, None).await?;
    eprintln!("rasgk bench: {half} TTS phones accepting at once");
    let tts = run_one(half, 1.0, 0, None).await?;
    eprintln!("rasgk bench: setup_ms = 20, {half} phones all non-TTS, then all TTS");
    let other = run_one(half, 0.0, 20, None).await?;
    let all_tts = run_one(half, 1.0, 20, None).await?;
    eprintln!(
        "rasgk bench: setup_ms = 20, {half} non-TTS phones at {PACE} a second, and the plans"
    );
    let paced = run_one(half, 0.0, 20, Some(PACE)).await?;
    let agreement = [
        Agreement {
            what: format!("{half} TTS phones at once"),
            live: (all_tts.time_to_service_ms.0, all_tts.time_to_service_ms.1),
            plan: planned_service(half, true, None)?,
        },
        Agreement {
            what: format!("{half} non-TTS phones at {PACE} a second"),
            live: (paced.time_to_service_ms.0, paced.time_to_service_ms.1),
            plan: planned_service(half, false, Some(PACE))?,
        },
    ];
    Ok(Sockets {
        storm,
        tts,
        why_tts: [other, all_tts],
        agreement,
    })
}

/// `rasgk plan` of the storm's `phones` (all TTS or none, three regions, arriving at
/// `rate` a second or at once) on [`TOPOLOGY`] with `setup_ms = 20`, 50 µs a hop as on
/// loopback: the planned time to service (p50, p99) in milliseconds.
fn planned_service(phones: usize, tts: bool, rate: Option<u32>) -> Result<(f64, f64), String> {
    let share = if tts { 1 } else { 0 };
    let mut text = format!(
        "duration_s = 60\nseed = 40\nlatency_ms = 0.05\n\n[[group]]\nname = \"storm\"\n\
         regions = [1, 2, 3]\ncount = {phones}\ntts_share = {share}\n"
    );
    if let Some(rate) = rate {
        text += &format!("rate_per_s = {rate}\n");
    }
    let origin = "the bench's time-to-service scenario";
    let scenario =
        Scenario::from_toml(&text, origin, std::path::Path::new(".")).map_err(|e| e.to_string())?;
    let config = config::from_toml(&topology(20), ORIGIN).map_err(|e| e.to_string())?;
    let planned = plan::plan(&scenario, config, ORIGIN, |_| {}).map_err(|e| e.to_string())?;
    let service = &planned.report.time_to_service;
    let kind = if tts { &service.tts } else { &service.non_tts };
    Ok((kind.p50_ms, kind.p99_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_topology_holds_the_storm_and_listens() {
        let config = config::from_toml(TOPOLOGY, ORIGIN).unwrap();
        assert_eq!(config.gatekeeper.sockets, crate::config::SocketMode::Tcp);
        assert_eq!(config.gatekeeper.discovery, TARGET.parse().unwrap());
        assert_eq!(config.admin.listen, ADMIN.parse().unwrap());
        let room: u64 = config.clans.iter().map(|c| u64::from(c.max_sockets)).sum();
        assert!(room >= 6_000, "room for 6,000 phones: {room}");
        let args = storm_args(6_000, 0.5, 2, None).unwrap();
        assert!(args.sockets);
        assert_eq!(args.regions, [1, 2, 3]);
    }
}
