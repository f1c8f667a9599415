//! The echo ceiling: rasgk against a minimal UDP responder, measured in one run with one
//! load client.
//!
//! The ceiling is a minimal responder on the same tokio runtime as `rasgk serve` (one thread
//! of its own), the same socket options (`server::sockets::bind_udp`) and the same batched
//! reads and sends (`server::batch`) that answers each request datagram with one of the
//! same size. The client keeps `--concurrency` phones (each on its own loopback address) in
//! a closed loop — send a request, wait for its answer, send the next — so both sides see
//! the same offered load. Workloads: GRQ, full RRQ (a
//! registered phone re-registering) and lightweight RRQ (keep-alive). Every request carries
//! a new sequence number, so rasgk's retransmission cache never answers for the core.
//!
//! The machine is shared, so the two sides are measured in turns: [`ROUNDS`] slices of each
//! per workload, echo then rasgk, `--seconds` in all per side. Each round's two slices make
//! a pair, and the ratio reported is the median of the pairs' ratios: a change in the
//! machine's load that falls on one round moves that round's pair, not the figure. Each side
//! has its own phones, set up once; the side whose turn it is not waits on a channel,
//! costing nothing while the other is measured.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;

use bytes::Bytes;

use crate::config::{self, Config};
use crate::gatekeeper::Transmit;
use crate::phone::{Answer, Phone};
use crate::server::{self, batch, batch::Batch};

/// What one phone sends in a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    Grq,
    FullRrq,
    KeepAlive,
}

impl Workload {
    /// Every workload, in the order measured.
    pub const ALL: [Workload; 3] = [Workload::Grq, Workload::FullRrq, Workload::KeepAlive];

    /// Its name in the block and the `ratio` lines.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Grq => "grq",
            Workload::FullRrq => "rrq_full",
            Workload::KeepAlive => "rrq_light",
        }
    }
}

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

/// Time before the first slice, for every phone to bind (and rasgk's to register).
const START: Duration = Duration::from_millis(300);

/// Sides of [`ceilings`]: the bare echo, the runtime echo and rasgk.
pub const SIDES: usize = 3;

/// How long measuring `sides` sides for `seconds` each takes, in seconds (for progress).
pub fn duration(sides: usize, seconds: f64) -> f64 {
    let sides = sides as f64;
    START.as_secs_f64() + sides * (seconds + f64::from(ROUNDS) * WARM_UP.as_secs_f64())
}

/// Ends the phones (no side has this number).
const STOP: u8 = u8::MAX;

/// One side of a measurement: whom its phones ask, from where, and whether they are an
/// echo's (which registers nobody).
#[derive(Debug, Clone, Copy)]
struct Side {
    /// The target (discovery address).
    target: SocketAddr,
    /// Its phones use IPv6 (each its own port of ::1).
    ipv6: bool,
    /// Its phones' IPv4 addresses start at 127.1.NET.1.
    net: u8,
    /// An echo: its phones register nothing, and keep-alives carry a made-up identifier.
    echo: bool,
}

/// One phone of the closed loop on side `side` (numbered from 1): prepared (registered
/// when the workload needs it), then request → answer while it is `side`'s turn, counting
/// answers while `counting` names `side`.
async fn phone_loop(
    index: usize,
    workload: Workload,
    (side, number): (Side, u8),
    mut turn: tokio::sync::watch::Receiver<u8>,
    counting: Arc<AtomicU8>,
    done: Arc<AtomicU64>,
) {
    let (target, ipv6, echo_mode, base_net) = (side.target, side.ipv6, side.echo, side.net);
    let side = number;
    // Each side's phones on their own addresses; over IPv6, each its own port of ::1 (the
    // one IPv6 address loopback has).
    let ip: std::net::IpAddr = if ipv6 {
        std::net::Ipv6Addr::LOCALHOST.into()
    } else {
        Ipv4Addr::new(
            127,
            1,
            base_net + (index / 250) as u8,
            1 + (index % 250) as u8,
        )
        .into()
    };
    let Ok(socket) = UdpSocket::bind((ip, 0)).await else {
        return;
    };
    let Ok(local) = socket.local_addr() else {
        return;
    };
    // Each workload its own extensions: a phone of one workload must not hold an alias
    // another workload's phone registers (that would be RRJ duplicateAlias).
    let base = match workload {
        Workload::Grq => 100_000,
        Workload::FullRrq => 200_000,
        Workload::KeepAlive => 300_000,
    };
    let mut phone = Phone::extension(base + index as u32, local);
    if echo_mode {
        // The echo responder registers nobody: a keep-alive carries a made-up identifier.
        phone.endpoint_id = crate::ras::reply::EndpointId::new("EP00000001").ok();
    }
    let mut buffer = [0u8; 2048];
    let mut clan = target;
    // Register first (against rasgk) so RRQs have a C-LAN and keep-alives an endpoint id.
    if !echo_mode && workload != Workload::Grq {
        let grq = phone.grq();
        let _ = socket.send_to(&grq, target).await;
        if let Ok(Ok((len, _))) =
            tokio::time::timeout(Duration::from_secs(2), socket.recv_from(&mut buffer)).await
        {
            if let Ok(Answer::Gcf {
                ras_address: Some(at),
                ..
            }) = Answer::read(&buffer[..len])
            {
                clan = at;
            }
        }
        let rrq = phone.rrq();
        let _ = socket.send_to(&rrq, clan).await;
        if let Ok(Ok((len, _))) =
            tokio::time::timeout(Duration::from_secs(2), socket.recv_from(&mut buffer)).await
        {
            if let Ok(answer) = Answer::read(&buffer[..len]) {
                phone.learn(&answer);
            }
        }
    }
    loop {
        // Wait (without cost) for this side's turn, or the end.
        let Ok(now) = turn.wait_for(|&t| t == side || t == STOP).await.map(|t| *t) else {
            return;
        };
        if now == STOP {
            return;
        }
        let (datagram, to) = match workload {
            Workload::Grq => (phone.grq(), target),
            Workload::FullRrq => (phone.rrq(), clan),
            Workload::KeepAlive => match phone.keep_alive() {
                Some(rrq) => (rrq, clan),
                None => return,
            },
        };
        if socket.send_to(&datagram, to).await.is_err() {
            continue;
        }
        // A lost datagram costs one 200 ms timeout, then the loop goes on.
        if let Ok(Ok(_)) =
            tokio::time::timeout(Duration::from_millis(200), socket.recv_from(&mut buffer)).await
        {
            if counting.load(Ordering::Relaxed) == side {
                done.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
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

/// What sides in turns measured: each side's rate over all its slices, and each round's
/// rates.
struct Turns {
    rates: Vec<f64>,
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

/// One workload against each of `sides` in turn, [`ROUNDS`] rounds of a slice each, the
/// same client (`--concurrency` phones a side, each side's phones waiting without cost while
/// another side is measured).
async fn measure_turns(args: &CeilingArgs, workload: Workload, sides: &[Side]) -> Turns {
    let (turn, watching) = tokio::sync::watch::channel(0u8);
    let counting = Arc::new(AtomicU8::new(0));
    let done: Vec<Arc<AtomicU64>> = sides.iter().map(|_| Arc::default()).collect();
    let mut phones = tokio::task::JoinSet::new();
    for (i, &side) in sides.iter().enumerate() {
        for index in 0..args.concurrency {
            phones.spawn(phone_loop(
                index,
                workload,
                (side, i as u8 + 1),
                watching.clone(),
                counting.clone(),
                done[i].clone(),
            ));
        }
    }
    tokio::time::sleep(START).await;
    let slice = Duration::from_secs_f64(args.seconds / f64::from(ROUNDS));
    let mut totals = vec![(0u64, 0.0f64); sides.len()];
    let mut rounds = Vec::new();
    for _ in 0..ROUNDS {
        let mut rates = vec![0.0f64; sides.len()];
        for i in 0..sides.len() {
            let number = i as u8 + 1;
            let _ = turn.send(number);
            tokio::time::sleep(WARM_UP).await;
            let before = done[i].load(Ordering::Relaxed);
            counting.store(number, Ordering::Relaxed);
            let started = Instant::now();
            tokio::time::sleep(slice).await;
            counting.store(0, Ordering::Relaxed);
            let seconds = started.elapsed().as_secs_f64();
            let answered = done[i].load(Ordering::Relaxed) - before;
            totals[i].0 += answered;
            totals[i].1 += seconds;
            rates[i] = answered as f64 / seconds.max(1e-9);
        }
        rounds.push(rates);
    }
    let _ = turn.send(STOP);
    while phones.join_next().await.is_some() {}
    Turns {
        rates: totals
            .iter()
            .map(|&(answered, seconds)| answered as f64 / seconds.max(1e-9))
            .collect(),
        rounds,
    }
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
    /// Phones a side in the closed loop.
    pub concurrency: usize,
    /// Seconds of measurement per workload and side.
    pub seconds: f64,
}

/// Measures every workload against the echo responder and rasgk, both in this process, each
/// on a thread of its own with a one-thread runtime (as `rasgk serve` runs): echo on
/// 127.0.61.1, rasgk (the embedded default topology) on 127.0.60.x. The load client runs on
/// the caller's runtime.
pub async fn ceilings(
    args: &CeilingArgs,
    mut progress: impl FnMut(Workload),
) -> Result<Vec<Ceiling>, String> {
    let echo_address = SocketAddr::from(([127, 0, 61, 1], 1719));
    let echo_responder = super::Serving::on_own_thread("rasgk-echo", move |stopped| async move {
        let socket = server::bind_udp(echo_address)
            .map_err(|e| format!("cannot bind the echo responder on {echo_address}: {e}"))?;
        Ok(echo(socket, stopped))
    })
    .await?;
    let bare_address = SocketAddr::from(([127, 0, 61, 2], 1719));
    let bare = super::bare_echo::BareEcho::start(bare_address)?;
    let config = bench_config();
    let discovery = config.gatekeeper.discovery;
    let gatekeeper = super::Serving::start(config, "the bench's gatekeeper").await?;
    let sides: [Side; SIDES] = [
        Side {
            target: bare_address,
            ipv6: false,
            net: 60,
            echo: true,
        },
        Side {
            target: echo_address,
            ipv6: false,
            net: 100,
            echo: true,
        },
        Side {
            target: discovery,
            ipv6: false,
            net: 180,
            echo: false,
        },
    ];
    let mut figures = Vec::new();
    for workload in Workload::ALL {
        progress(workload);
        let turns = measure_turns(args, workload, &sides).await;
        figures.push(Ceiling {
            workload,
            echo: turns.rates[1],
            rasgk: turns.rates[2],
            pairs: turns.ratios(2, 1),
            bare: turns.rates[0],
            bare_pairs: turns.ratios(2, 0),
        });
    }
    gatekeeper.stop().await;
    echo_responder.stop().await;
    bare.stop();
    Ok(figures)
}

/// GRQ over IPv6 against GRQ over IPv4 on the bench's gatekeeper, with dual-stack C-LANs (an
/// IPv6 address on ::1 each) and a second discovery address on ::1: `--concurrency` phones of
/// each family in a closed loop, in alternating slices as [`ceilings`] measures.
pub async fn grq_families(args: &CeilingArgs) -> Result<FamilyRatio, String> {
    let mut config = bench_config();
    let discovery6: SocketAddr = DISCOVERY6.parse().expect("an address");
    config.gatekeeper.discovery6 = Some(discovery6);
    for (i, clan) in config.clans.iter_mut().enumerate() {
        clan.address6 = Some(SocketAddr::new(discovery6.ip(), 21_720 + i as u16));
    }
    let discovery = config.gatekeeper.discovery;
    let gatekeeper = super::Serving::start(config, "the bench's dual-stack gatekeeper").await?;
    let side = |target, ipv6, net| Side {
        target,
        ipv6,
        net,
        echo: false,
    };
    let sides = [side(discovery, false, 180), side(discovery6, true, 180)];
    let turns = measure_turns(args, Workload::Grq, &sides).await;
    gatekeeper.stop().await;
    Ok(FamilyRatio {
        ipv4: turns.rates[0],
        ipv6: turns.rates[1],
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
        };
        assert!((ceiling.ratio() - 0.825).abs() < 1e-12);
        assert_eq!(ceiling.spread(), (0.2, 0.95));
        assert!((ceiling.bare_ratio() - 0.72).abs() < 1e-12);
        assert_eq!(ceiling.bare_spread(), (0.7, 0.75));
    }
}
