//! The echo ceiling: rasgk against minimal UDP responders, measured in one run with one
//! load client that saturates whichever it faces.
//!
//! - **The responders.** The bare echo (`bare_echo`: one thread, `recvmmsg`/`sendmmsg`, no
//!   runtime) and the runtime echo (the same tokio runtime as `rasgk serve`, one thread of
//!   its own, the same socket options and batched reads and sends, `server::batch`) answer
//!   each request with one of the same size. rasgk runs the embedded default topology with
//!   everything on, its event stream watched and its metrics scraped (`watchers`).
//! - **The client** (`ceiling_client`) is a process of its own: `--concurrency` phones a
//!   side, each on its own loopback address, each keeping `--window` requests in flight,
//!   read with `recvmmsg` and sent as UDP GSO sends, every request a new one (so the
//!   retransmission cache answers none; the watchers' last scrape counts them). Workloads:
//!   GRQ, full RRQ (a registered phone re-registering) and lightweight RRQ (keep-alive).
//! - **Saturation, shown.** Around each slice the bench reads from `/proc` the CPU time of
//!   the side's server thread and of the client's process: a saturated server is on a CPU
//!   nearly all the slice while the client has time to spare. The same readings give each
//!   server's user and system time per datagram answered.
//! - **Turns.** The machine is shared, so the sides are measured in turns: [`ROUNDS`] slices
//!   of each per workload, `--seconds` in all per side. Each round's slices make a pair, and
//!   the ratio reported is the median of the pairs' ratios: a change in the machine's load
//!   that falls on one round moves that round's pair, not the figure.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;

use bytes::Bytes;

pub use super::ceiling_client::Workload;
use super::ceiling_client::{Orders, SideOrder};
use super::cpu_time::CpuTime;
use super::watchers::{Watched, Watchers};
use crate::config::{self, Config};
use crate::gatekeeper::Transmit;
use crate::server::{self, batch, batch::Batch};

/// The bench's gatekeeper: the embedded default moved to 127.0.60.x, caps large enough
/// that re-registrations never run out of room.
pub(super) fn bench_config() -> Config {
    let mut config = config::embedded_default();
    config.gatekeeper.discovery = SocketAddr::from(([127, 0, 60, 254], 1719));
    config.admin.listen = SocketAddr::from(([127, 0, 60, 254], 7000));
    config.gatekeeper.seed = Some(1);
    for (i, clan) in config.clans.iter_mut().enumerate() {
        clan.address = SocketAddr::from(([127, 0, 60, 1 + i as u8], 1719));
        clan.max_sockets = 1_000_000;
    }
    config
}

/// The ceiling's gatekeeper: [`bench_config`] with the rate limit on, as a live gatekeeper has
/// it, at a rate no bench phone reaches (each sends a few thousand a second): every datagram
/// pays for its source's bucket, none is dropped. (The memory figure keeps the default's
/// limit, off: a bucket per source is not a registration's cost.)
fn ceiling_config() -> Config {
    let mut config = bench_config();
    config.limits.rate_per_source = Some(RATE_PER_SOURCE);
    config.limits.burst_per_source = RATE_PER_SOURCE;
    config
}

/// The bench gatekeeper's `rate_per_source` (and burst).
const RATE_PER_SOURCE: u32 = 1_000_000;

/// The echo responder: each datagram back to its source, until `stopped` hears. It reads
/// and answers in batches as the gatekeeper does (`server::batch`: `recvmmsg`, then
/// `Batch::send_all` for the batch's replies), so the two differ only in the gatekeeper's
/// work.
async fn echo(socket: UdpSocket, mut stopped: tokio::sync::oneshot::Receiver<()>) {
    let Ok(local) = socket.local_addr() else {
        return;
    };
    let mut batch = Batch::default();
    let mut replies: Vec<Transmit> = Vec::with_capacity(batch::SLOTS);
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            ready = socket.readable() => if ready.is_err() {
                continue;
            },
        }
        if batch.receive(&socket).is_err() {
            continue;
        }
        replies.clear();
        replies.extend(batch.datagrams().map(|(datagram, from)| Transmit {
            local,
            to: from,
            payload: Bytes::copy_from_slice(datagram),
        }));
        batch.send_all(&socket, &replies).await;
    }
}

/// Most phones a side: each side's phones take 250 addresses a /24, 40 nets each: the bare
/// echo's from 127.1.60.0, the runtime echo's from 127.1.100.0, rasgk's from 127.1.180.0.
pub const MAX_CONCURRENCY: usize = 250 * 40;

/// Slices of each side per workload. Pairs of slices vary by ±15 % on a shared 2-core
/// machine (where the scheduler puts three busy threads); their median moved by ±0.04
/// from run to run with 8 of them, so there are 16, half a second each at the default
/// `--seconds`.
pub const ROUNDS: u32 = 16;

/// Warm-up before each slice is counted: the other side's last answers drain, this side's
/// loop fills.
const WARM_UP: Duration = Duration::from_millis(50);

/// About how long the load client takes to bind its phones (and register rasgk's) before
/// the first slice; only the progress estimate counts it, the bench waits for the client's
/// `ready`.
const START: Duration = Duration::from_millis(300);

/// Sides of [`ceilings`]: the bare echo, the runtime echo and rasgk.
pub const SIDES: usize = 3;

/// How long measuring `sides` sides for `seconds` each takes, in seconds (for progress).
pub fn duration(sides: usize, seconds: f64) -> f64 {
    let sides = sides as f64;
    START.as_secs_f64() + sides * (seconds + f64::from(ROUNDS) * WARM_UP.as_secs_f64())
}

/// One workload's figures: transactions per second of each side over all its slices, and
/// the ratio rasgk / echo of each round's slices, against the runtime echo and against the
/// bare echo.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    /// The workload.
    pub workload: Workload,
    /// The runtime echo's transactions per second, all slices together.
    pub echo: f64,
    /// rasgk's transactions per second, all slices together.
    pub rasgk: f64,
    /// rasgk / runtime echo of each round, in round order.
    pub pairs: Vec<f64>,
    /// The bare echo's transactions per second (0 when it was not measured).
    pub bare: f64,
    /// rasgk / bare echo of each round.
    pub bare_pairs: Vec<f64>,
    /// What each side did and cost: the bare echo, the runtime echo, rasgk.
    pub loads: Vec<SideLoad>,
}

impl Ceiling {
    /// The median of the rounds' ratios against the runtime echo (0 when no round answered).
    pub fn ratio(&self) -> f64 {
        median(&self.pairs)
    }

    /// The median of the rounds' ratios against the bare echo.
    pub fn bare_ratio(&self) -> f64 {
        median(&self.bare_pairs)
    }

    /// The smallest and the largest of the rounds' ratios against the runtime echo.
    pub fn spread(&self) -> (f64, f64) {
        spread(&self.pairs)
    }

    /// The smallest and the largest of the rounds' ratios against the bare echo.
    pub fn bare_spread(&self) -> (f64, f64) {
        spread(&self.bare_pairs)
    }
}

/// The smallest and the largest of some ratios ((0, 0) for none).
fn spread(pairs: &[f64]) -> (f64, f64) {
    let low = pairs.iter().copied().fold(f64::INFINITY, f64::min);
    let high = pairs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if pairs.is_empty() {
        (0.0, 0.0)
    } else {
        (low, high)
    }
}

/// The median of `values` (the mean of the middle two for an even count; 0 when empty).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// What one side cost and did over its slices of a workload.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SideLoad {
    /// Answers a second, all slices together.
    pub rate: f64,
    /// The server thread's time on a CPU over the slices' wall time.
    pub busy: f64,
    /// The server thread's user time per answer, µs.
    pub user_us: f64,
    /// The server thread's system time per answer, µs.
    pub system_us: f64,
    /// The client process's time on a CPU over the slices' wall time (1.0: one CPU).
    pub client_busy: f64,
    /// Answers of another kind than the side must send.
    pub wrong: u64,
}

/// What sides in turns measured: each side's load over all its slices, and each round's
/// rates.
struct Turns {
    loads: Vec<SideLoad>,
    rounds: Vec<Vec<f64>>,
}

impl Turns {
    /// Side `a` over side `b`, round by round (rounds where `b` answered nothing left out).
    fn ratios(&self, a: usize, b: usize) -> Vec<f64> {
        self.rounds
            .iter()
            .filter(|round| round[b] > 0.0)
            .map(|round| round[a] / round[b])
            .collect()
    }
}

/// The load client's process (`ceiling_client`), told what to do over its standard input.
struct Client {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Client {
    /// Starts `rasgk bench --ceiling-client` with `orders`; once it says its phones are
    /// ready.
    fn start(orders: &Orders) -> Result<Client, String> {
        use std::io::Write as _;
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find this program to start the load client: {e}"))?;
        let mut child = std::process::Command::new(&exe)
            .args(["bench", "--ceiling-client"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the load client {}: {e}", exe.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the load client's standard streams are not pipes".into());
        };
        let mut client = Client {
            child,
            stdin,
            stdout: std::io::BufReader::new(stdout),
        };
        let json = serde_json::to_string(orders).map_err(|e| e.to_string())?;
        let told = writeln!(client.stdin, "{json}").and_then(|()| client.stdin.flush());
        match (told, client.line()) {
            (Ok(()), Ok(line)) if line == "ready" => Ok(client),
            _ => Err(client.failure()),
        }
    }

    /// Its next line of answer.
    fn line(&mut self) -> Result<String, String> {
        use std::io::BufRead as _;
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) | Err(_) => Err("the load client ended".into()),
            Ok(_) => Ok(line.trim_end().to_string()),
        }
    }

    /// Tells it `order`; its answer.
    fn ask(&mut self, order: &str) -> Result<String, String> {
        use std::io::Write as _;
        writeln!(self.stdin, "{order}")
            .and_then(|()| self.stdin.flush())
            .map_err(|_| self.failure())?;
        self.line().map_err(|_| self.failure())
    }

    /// Loads side `number` (from 1; 0: none).
    fn turn(&mut self, number: usize) -> Result<(), String> {
        match self.ask(&format!("turn {number}"))?.as_str() {
            "ok" => Ok(()),
            other => Err(format!("the load client answered {other:?}")),
        }
    }

    /// Answers and wrong answers of each of `sides` sides so far.
    fn count(&mut self, sides: usize) -> Result<Vec<(u64, u64)>, String> {
        let line = self.ask("count")?;
        let numbers: Option<Vec<u64>> = line
            .strip_prefix("count")
            .map(|counts| counts.split_whitespace().map(|n| n.parse().ok()).collect())
            .unwrap_or_default();
        match numbers {
            Some(numbers) if numbers.len() == 2 * sides => {
                Ok(numbers.chunks_exact(2).map(|c| (c[0], c[1])).collect())
            }
            _ => Err(format!(
                "the load client answered {line:?}, not the counts of {sides} sides"
            )),
        }
    }

    /// Why it failed: what it said on standard error, once it has ended.
    fn failure(&mut self) -> String {
        use std::io::Read as _;
        let _ = self.child.kill();
        let mut said = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _ = stderr.read_to_string(&mut said);
        }
        let _ = self.child.wait();
        match said.trim() {
            "" => "the load client ended without saying why".into(),
            said => said.to_string(),
        }
    }

    /// Ends it.
    fn end(mut self) {
        use std::io::Write as _;
        let _ = writeln!(self.stdin, "end");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // A bench that stopped halfway leaves no client behind.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One workload against each of `sides` in turn (each with its server thread's id),
/// [`ROUNDS`] rounds of a slice each, from one load client in a process of its own.
fn measure_turns(
    args: &CeilingArgs,
    workload: Workload,
    sides: &[(SideOrder, i32)],
) -> Result<Turns, String> {
    let orders = Orders {
        workload,
        sides: sides.iter().map(|&(side, _)| side).collect(),
        sources: args.concurrency,
        window: args.window,
    };
    let mut client = Client::start(&orders)?;
    let client_pid = client.child.id();
    // The servers on the first CPU, the client on the last: the same for every side, and
    // neither chases the other across CPUs. (A machine of one CPU pins nothing.)
    let cpus = super::affinity::available();
    if cpus > 1 {
        for &(_, tid) in sides {
            super::affinity::pin(tid, 0)
                .map_err(|e| format!("cannot keep a server's thread on CPU 0: {e}"))?;
        }
        super::affinity::pin_process(client_pid, cpus - 1)
            .map_err(|e| format!("cannot keep the load client on CPU {}: {e}", cpus - 1))?;
    }
    let ticks = super::cpu_time::ticks_per_second();
    let slice = Duration::from_secs_f64(args.seconds / f64::from(ROUNDS));
    // Per side: answers, wrong answers, wall seconds, server CPU, client CPU.
    let mut totals =
        vec![(0u64, 0u64, 0.0f64, CpuTime::default(), CpuTime::default()); sides.len()];
    let mut rounds = Vec::new();
    let cpu = |tid: i32| {
        CpuTime::of_thread(tid).map_err(|e| format!("cannot read thread {tid}'s CPU time: {e}"))
    };
    let client_cpu = || {
        CpuTime::of_process(client_pid)
            .map_err(|e| format!("cannot read the load client's CPU time: {e}"))
    };
    for _ in 0..ROUNDS {
        let mut rates = vec![0.0f64; sides.len()];
        for (i, &(_, tid)) in sides.iter().enumerate() {
            client.turn(i + 1)?;
            std::thread::sleep(WARM_UP);
            let (before, server_before, client_before) =
                (client.count(sides.len())?, cpu(tid)?, client_cpu()?);
            let started = Instant::now();
            std::thread::sleep(slice);
            let seconds = started.elapsed().as_secs_f64();
            let (after, server_after, client_after) =
                (client.count(sides.len())?, cpu(tid)?, client_cpu()?);
            let answers = after[i].0.saturating_sub(before[i].0);
            let total = &mut totals[i];
            total.0 += answers;
            total.1 += after[i].1.saturating_sub(before[i].1);
            total.2 += seconds;
            total.3.add(server_after.since(server_before));
            total.4.add(client_after.since(client_before));
            rates[i] = answers as f64 / seconds.max(1e-9);
        }
        rounds.push(rates);
    }
    client.turn(0)?;
    client.end();
    let loads = totals
        .iter()
        .map(|&(answers, wrong, seconds, server, client)| {
            let per_answer =
                |ticks_spent: u64| ticks_spent as f64 / ticks * 1e6 / (answers.max(1) as f64);
            SideLoad {
                rate: answers as f64 / seconds.max(1e-9),
                busy: server.run_ns as f64 / 1e9 / seconds.max(1e-9),
                user_us: per_answer(server.user_ticks),
                system_us: per_answer(server.system_ticks),
                client_busy: client.run_ns as f64 / 1e9 / seconds.max(1e-9),
                wrong,
            }
        })
        .collect();
    Ok(Turns { loads, rounds })
}

/// Runs [`measure_turns`] off the runtime (it sleeps and waits on the client's pipes).
async fn turns_of(
    args: &CeilingArgs,
    workload: Workload,
    sides: Vec<(SideOrder, i32)>,
) -> Result<Turns, String> {
    let args = *args;
    tokio::task::spawn_blocking(move || measure_turns(&args, workload, &sides))
        .await
        .map_err(|e| format!("the ceiling's measurement failed: {e}"))?
}

/// GRQ over IPv6 against GRQ over IPv4: the same gatekeeper, its phones of either family in
/// turns (docs/rules.md §17).
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyRatio {
    /// GRQs a second over IPv4, all slices together.
    pub ipv4: f64,
    /// GRQs a second over IPv6.
    pub ipv6: f64,
    /// IPv6 / IPv4 of each round.
    pub pairs: Vec<f64>,
}

impl FamilyRatio {
    /// The median of the rounds' ratios.
    pub fn ratio(&self) -> f64 {
        median(&self.pairs)
    }
}

/// The IPv6 discovery address of [`bench_config`]: its phones GRQ there from ::1.
const DISCOVERY6: &str = "[::1]:21719";

/// What the ceiling measurement takes from `rasgk bench`'s options.
#[derive(Debug, Clone, Copy)]
pub struct CeilingArgs {
    /// Phones (sources) a side.
    pub concurrency: usize,
    /// Requests each phone keeps in flight.
    pub window: usize,
    /// Seconds of measurement per workload and side.
    pub seconds: f64,
}

/// Every workload against the echoes and rasgk, and what the gatekeeper's watchers saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ceilings {
    /// Each workload's figures, in [`Workload::ALL`]'s order.
    pub workloads: Vec<Ceiling>,
    /// What the event stream and the scrapes saw of rasgk meanwhile.
    pub watched: Watched,
}

/// Measures every workload against the bare echo, the runtime echo and rasgk, all three in
/// this process, each on a thread of its own (the runtime echo and rasgk with a one-thread
/// runtime, as `rasgk serve` runs): the bare echo on 127.0.61.2, the runtime echo on
/// 127.0.61.1, rasgk (the embedded default topology) on 127.0.60.x, with its event stream
/// watched and its metrics scraped. The load client is a process of its own.
pub async fn ceilings(
    args: &CeilingArgs,
    mut progress: impl FnMut(Workload),
) -> Result<Ceilings, String> {
    let echo_address = SocketAddr::from(([127, 0, 61, 1], 1719));
    let echo_responder = super::Serving::on_own_thread("rasgk-echo", move |stopped| async move {
        let socket = server::bind_udp(echo_address)
            .map_err(|e| format!("cannot bind the echo responder on {echo_address}: {e}"))?;
        Ok(echo(socket, stopped))
    })
    .await?;
    let bare_address = SocketAddr::from(([127, 0, 61, 2], 1719));
    let bare = super::bare_echo::BareEcho::start(bare_address)?;
    let config = ceiling_config();
    let (discovery, admin) = (config.gatekeeper.discovery, config.admin.listen);
    let gatekeeper = super::Serving::start(config, "the bench's gatekeeper").await?;
    let watchers = Watchers::start(admin)?;
    let side = |target, net, echo| SideOrder {
        target,
        ipv6: false,
        net,
        echo,
    };
    let sides = vec![
        (side(bare_address, 60, true), bare.tid),
        (side(echo_address, 100, true), echo_responder.tid),
        (side(discovery, 180, false), gatekeeper.tid),
    ];
    let mut workloads = Vec::new();
    for workload in Workload::ALL {
        progress(workload);
        let turns = turns_of(args, workload, sides.clone()).await?;
        workloads.push(Ceiling {
            workload,
            echo: turns.loads[1].rate,
            rasgk: turns.loads[2].rate,
            pairs: turns.ratios(2, 1),
            bare: turns.loads[0].rate,
            bare_pairs: turns.ratios(2, 0),
            loads: turns.loads,
        });
    }
    let watched = watchers.stop()?;
    gatekeeper.stop().await;
    echo_responder.stop().await;
    bare.stop();
    Ok(Ceilings { workloads, watched })
}

/// GRQ over IPv6 against GRQ over IPv4 on the bench's gatekeeper, with dual-stack C-LANs (an
/// IPv6 address on ::1 each) and a second discovery address on ::1: `--concurrency` phones of
/// each family, in alternating slices as [`ceilings`] measures.
pub async fn grq_families(args: &CeilingArgs) -> Result<FamilyRatio, String> {
    let mut config = ceiling_config();
    let discovery6: SocketAddr = DISCOVERY6.parse().expect("an address");
    config.gatekeeper.discovery6 = Some(discovery6);
    for (i, clan) in config.clans.iter_mut().enumerate() {
        clan.address6 = Some(SocketAddr::new(discovery6.ip(), 21_720 + i as u16));
    }
    let discovery = config.gatekeeper.discovery;
    let gatekeeper = super::Serving::start(config, "the bench's dual-stack gatekeeper").await?;
    let side = |target, ipv6| SideOrder {
        target,
        ipv6,
        net: 180,
        echo: false,
    };
    let sides = vec![
        (side(discovery, false), gatekeeper.tid),
        (side(discovery6, true), gatekeeper.tid),
    ];
    let turns = turns_of(args, Workload::Grq, sides).await;
    gatekeeper.stop().await;
    let turns = turns?;
    Ok(FamilyRatio {
        ipv4: turns.loads[0].rate,
        ipv6: turns.loads[1].rate,
        pairs: turns.ratios(1, 0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_value_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[0.7]), 0.7);
        assert_eq!(median(&[0.9, 0.1, 0.5]), 0.5);
        assert!((median(&[0.9, 0.1, 0.5, 0.7]) - 0.6).abs() < 1e-12);
        assert_eq!(median(&[f64::NAN, 0.4]), 0.4, "a NaN is left out");
    }

    #[test]
    fn the_ratio_is_the_median_of_the_pairs_and_the_spread_their_range() {
        let ceiling = Ceiling {
            workload: Workload::Grq,
            echo: 100.0,
            rasgk: 80.0,
            pairs: vec![0.8, 0.95, 0.2, 0.85],
            bare: 110.0,
            bare_pairs: vec![0.7, 0.75, 0.72],
            loads: Vec::new(),
        };
        assert!((ceiling.ratio() - 0.825).abs() < 1e-12);
        assert_eq!(ceiling.spread(), (0.2, 0.95));
        assert!((ceiling.bare_ratio() - 0.72).abs() < 1e-12);
        assert_eq!(ceiling.bare_spread(), (0.7, 0.75));
    }
}
