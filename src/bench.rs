//! `rasgk bench`: rasgk against the UDP echo ceiling, measured in one run with one load
//! client.
//!
//! The ceiling is a minimal responder on the same tokio runtime and the same socket options
//! (`server::sockets::bind_udp`) that answers each request datagram with one of the same
//! size (one `recv_from`, one `send_to`). The client keeps `--concurrency` phones (each on
//! its own loopback address) in a closed loop — send a request, wait for its answer, send
//! the next — so both sides see the same offered load. Workloads: GRQ, full RRQ (a
//! registered phone re-registering) and lightweight RRQ (keep-alive). Every request carries
//! a new sequence number, so rasgk's retransmission cache never answers for the core.
//!
//! The machine is shared, so the two sides are measured in turns: [`ROUNDS`] slices of each
//! per workload, echo and rasgk alternating, `--seconds` in all per side. A change in the
//! machine's load then falls on both alike, and the ratio is steadier than two measurements
//! one after the other. Each side has its own phones, set up once; the side whose turn it
//! is not waits on a channel, costing nothing while the other is measured.
//!
//! The last lines are `ratio WORKLOAD VALUE` for scripts.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;

use crate::config::{self, Config};
use crate::phone::{Answer, Phone};
use crate::server::{self, Server};

/// `rasgk bench` options.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Phones in the closed loop (requests in flight), for each side (1 to 10,000).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub concurrency: usize,
    /// Seconds of measurement per workload and side, in 4 alternating slices (after a
    /// 0.3 s start and 50 ms of warm-up a slice).
    #[arg(long, value_name = "S", default_value_t = 2.0)]
    pub seconds: f64,
}

/// What one phone sends in a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    Grq,
    FullRrq,
    KeepAlive,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Grq => "grq",
            Workload::FullRrq => "rrq_full",
            Workload::KeepAlive => "rrq_light",
        }
    }
}

/// The bench's gatekeeper: the embedded default moved to 127.0.60.x, caps large enough
/// that re-registrations never run out of room.
fn bench_config() -> Config {
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

async fn echo(socket: UdpSocket, stop: Arc<AtomicBool>) {
    let mut buffer = [0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        let Ok(Ok((len, from))) =
            tokio::time::timeout(Duration::from_millis(100), socket.recv_from(&mut buffer)).await
        else {
            continue;
        };
        let _ = socket.send_to(&buffer[..len], from).await;
    }
}

/// Most phones a side: each side's phones take 250 addresses a /24, echo's from
/// 127.1.100.0 and rasgk's from 127.1.180.0, 40 nets each.
pub const MAX_CONCURRENCY: usize = 250 * 40;

/// Slices of each side per workload.
pub const ROUNDS: u32 = 4;

/// Whose turn it is: [`ECHO`] or [`RASGK`] sends; [`STOP`] ends the phones.
const ECHO: u8 = 1;
const RASGK: u8 = 2;
const STOP: u8 = 3;

/// One phone of the closed loop on `side`: prepared (registered when the workload needs
/// it), then request → answer while it is `side`'s turn, counting answers while `counting`
/// names `side`.
async fn phone_loop(
    index: usize,
    workload: Workload,
    target: SocketAddr,
    side: u8,
    mut turn: tokio::sync::watch::Receiver<u8>,
    counting: Arc<AtomicU8>,
    done: Arc<AtomicU64>,
) {
    let echo_mode = side == ECHO;
    // The two sides' phones on their own addresses: 127.1.100+ and 127.1.180+.
    let base_net = if echo_mode { 100 } else { 180 };
    let ip = Ipv4Addr::new(
        127,
        1,
        base_net + (index / 250) as u8,
        1 + (index % 250) as u8,
    );
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

/// Transactions per second of one workload against the echo responder and against rasgk,
/// measured in alternating slices.
async fn measure(
    args: &BenchArgs,
    workload: Workload,
    echo: SocketAddr,
    rasgk: SocketAddr,
) -> (f64, f64) {
    let (turn, watching) = tokio::sync::watch::channel(0u8);
    let counting = Arc::new(AtomicU8::new(0));
    let done = [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))];
    let mut phones = tokio::task::JoinSet::new();
    for (side, target, done) in [(ECHO, echo, &done[0]), (RASGK, rasgk, &done[1])] {
        for index in 0..args.concurrency {
            phones.spawn(phone_loop(
                index,
                workload,
                target,
                side,
                watching.clone(),
                counting.clone(),
                done.clone(),
            ));
        }
    }
    // Time for every phone to bind (and rasgk's to register).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let slice = Duration::from_secs_f64(args.seconds / f64::from(ROUNDS));
    let mut elapsed = [0.0f64; 2];
    for _ in 0..ROUNDS {
        for (i, side) in [ECHO, RASGK].into_iter().enumerate() {
            let _ = turn.send(side);
            // Warm-up: the other side's last answers drain, this side's loop fills.
            tokio::time::sleep(Duration::from_millis(50)).await;
            counting.store(side, Ordering::Relaxed);
            let started = Instant::now();
            tokio::time::sleep(slice).await;
            counting.store(0, Ordering::Relaxed);
            elapsed[i] += started.elapsed().as_secs_f64();
        }
    }
    let _ = turn.send(STOP);
    while phones.join_next().await.is_some() {}
    let rate = |i: usize| done[i].load(Ordering::Relaxed) as f64 / elapsed[i].max(1e-9);
    (rate(0), rate(1))
}

/// Resident memory of this process, bytes (Linux `/proc/self/statm`; 0 elsewhere).
fn resident_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|text| text.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Resident bytes per registration: `count` phones registered in an in-process core (no
/// sockets), measured once the retransmission cache has let go of their replies.
pub fn memory_per_registration(count: usize) -> f64 {
    let mut config = bench_config();
    config.gatekeeper.ttl_s = 3600;
    let Ok(mut gatekeeper) = crate::gatekeeper::Gatekeeper::new(config.clone()) else {
        return 0.0;
    };
    let discovery = config.gatekeeper.discovery;
    let start = Instant::now();
    let before = resident_bytes();
    for index in 0..count {
        let region = 1 + (index % 3) as u8;
        let j = index / 3;
        let ip = Ipv4Addr::new(127, region, (j / 250 % 250) as u8 + 1, (j % 250) as u8 + 1);
        let port = 10_000 + (j / 62_500) as u16;
        let mut phone = Phone::extension(100_000 + index as u32, SocketAddr::from((ip, port)));
        let grq = phone.grq();
        let out = gatekeeper.handle(start, discovery, phone.ras_address, &grq);
        let Some(Ok(Answer::Gcf {
            ras_address: Some(clan),
            ..
        })) = out.first().map(|t| Answer::read(&t.payload))
        else {
            continue;
        };
        let rrq = phone.rrq();
        let _ = gatekeeper.handle(start, clan, phone.ras_address, &rrq);
        if index % 1024 == 0 {
            drop(gatekeeper.drain_events());
        }
    }
    drop(gatekeeper.drain_events());
    let _ = gatekeeper.handle_timeout(start + Duration::from_secs(11));
    let after = resident_bytes();
    let registered = gatekeeper.counts().registrations.max(1);
    after.saturating_sub(before) as f64 / registered as f64
}

/// Runs the bench and prints its block of figures.
pub async fn bench(args: &BenchArgs) -> Result<Vec<(&'static str, f64, f64)>, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let echo_address = SocketAddr::from(([127, 0, 61, 1], 1719));
    let echo_socket = server::bind_udp(echo_address)
        .map_err(|e| format!("cannot bind the echo responder on {echo_address}: {e}"))?;
    let echo_task = tokio::spawn(echo(echo_socket, stop.clone()));
    let config = bench_config();
    let discovery = config.gatekeeper.discovery;
    let server = Server::bind(config)
        .await
        .map_err(|e| format!("cannot start the bench's gatekeeper: {e}"))?;
    let (stop_server, stopped) = tokio::sync::oneshot::channel::<()>();
    let gatekeeper = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    let mut figures = Vec::new();
    for workload in [Workload::Grq, Workload::FullRrq, Workload::KeepAlive] {
        let (ceiling, rasgk) = measure(args, workload, echo_address, discovery).await;
        figures.push((workload.name(), ceiling, rasgk));
    }
    stop.store(true, Ordering::Relaxed);
    let _ = stop_server.send(());
    let _ = gatekeeper.await;
    let _ = echo_task.await;
    Ok(figures)
}

/// `rasgk bench`.
pub fn run(args: BenchArgs) -> ExitCode {
    let seconds_ok = args.seconds.is_finite() && args.seconds > 0.0;
    if args.concurrency == 0 || args.concurrency > MAX_CONCURRENCY || !seconds_ok {
        eprintln!(
            "rasgk bench: --concurrency must be 1 to {MAX_CONCURRENCY} and --seconds above 0"
        );
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("rasgk bench: cannot start the runtime: {error}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(bench(&args)) {
        Ok(figures) => {
            println!(
                "rasgk bench: {} phones in a closed loop, {} s per workload and side in {ROUNDS} alternating slices, loopback, one run",
                args.concurrency, args.seconds
            );
            println!(
                "{:<10} {:>14} {:>14} {:>8}",
                "workload", "echo tx/s", "rasgk tx/s", "ratio"
            );
            for (name, ceiling, rasgk) in &figures {
                let ratio = if *ceiling > 0.0 { rasgk / ceiling } else { 0.0 };
                println!("{name:<10} {ceiling:>14.0} {rasgk:>14.0} {ratio:>8.2}");
            }
            let bytes = memory_per_registration(100_000);
            println!("memory: {bytes:.0} resident bytes per registration at 100,000 registrations");
            for (name, ceiling, rasgk) in &figures {
                let ratio = if *ceiling > 0.0 { rasgk / ceiling } else { 0.0 };
                println!("ratio {name} {ratio:.2}");
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("rasgk bench: {error}");
            ExitCode::from(2)
        }
    }
}
