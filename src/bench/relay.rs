//! Routed calls' figures: the relay against a minimal frame forwarder, with one load client
//! in one run.
//!
//! ```text
//!   pairs of phones, a closed loop each:  caller ──Setup──▶ ┐          ┌──Setup──▶ callee
//!                                         caller ◀─Alerting, Connect── relay ◀── callee
//!                                         caller ──Release Complete──▶ ┘          └──▶ callee
//!   relay      rasgk (routed, in this process on a thread of its own): phones registered,
//!              sockets in service, each call relayed with its call references mapped
//!   forwarder  the same frames between the same pairs of connections, no gatekeeper
//!              (forwarder.rs: the glue's shape without the core)
//! ```
//!
//! Each pair runs calls one after another: the caller writes a Setup, the callee answers
//! Alerting and Connect, the caller releases. Four messages cross the relay a call.
//! *Setup → Connect* is from the caller's write of the Setup to its read of the Connect. The
//! two sides are measured in turns, [`ROUNDS`] slices each, forwarder then rasgk: the message
//! rate ratio is the median of the rounds' ratios, so a change in the machine's load that
//! falls on one round moves one pair, not the figure; the latencies are over all slices.
//! The calls carry an `endpointIdentifier` and no ARQ goes before them: the relay's own work
//! is what is measured (an ARQ and a DRQ a call are the RAS figures' business).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream, UdpSocket};

use crate::config;
use crate::phone::{Answer, Phone};
use crate::q931::{self, CallReference, MessageType, Release, Setup};
use crate::ras::Alias;

/// Slices of each side.
pub const ROUNDS: u32 = 4;

/// Most pairs (callers on 127.1.45.x–127.1.46.x, callees alike in region 2).
pub const MAX_PAIRS: usize = 500;

/// The relay's gatekeeper: socket mode, routed calls, two regions of two C-LANs on
/// 127.0.56.x.
const TOPOLOGY: &str = r#"
[gatekeeper]
discovery = "127.0.56.1:1719"
sockets = "tcp"
call_signalling = "routed"
seed = 45

[admin]
listen = "127.0.56.1:7000"

[[region]]
id = 1
networks = ["127.1.0.0/16"]

[[region]]
id = 2
networks = ["127.2.0.0/16"]

[[link]]
regions = [1, 2]
kind = "direct"

[[clan]]
name = "relay-1a"
region = 1
address = "127.0.56.11:1719"

[[clan]]
name = "relay-1b"
region = 1
address = "127.0.56.12:1719"

[[clan]]
name = "relay-2a"
region = 2
address = "127.0.56.21:1719"

[[clan]]
name = "relay-2b"
region = 2
address = "127.0.56.22:1719"
"#;

/// Where the forwarder listens.
const FORWARDER: &str = "127.0.57.1:1720";

/// One side's measure.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Side {
    /// Calls completed (Setup to the callee's Release Complete) in each slice, and the
    /// slice's length in seconds.
    pub slices: Vec<(u64, f64)>,
    /// Setup → Connect, milliseconds: (p50, p99, max).
    pub setup_to_connect_ms: (f64, f64, f64),
    /// Calls that failed (a message other than expected, a connection lost).
    pub failed: u64,
}

impl Side {
    /// Calls a second over all slices.
    pub fn calls_per_s(&self) -> f64 {
        let calls: u64 = self.slices.iter().map(|s| s.0).sum();
        let seconds: f64 = self.slices.iter().map(|s| s.1).sum();
        calls as f64 / seconds.max(1e-9)
    }
}

/// The relay against the forwarder.
#[derive(Debug, Clone, PartialEq)]
pub struct Relay {
    /// Pairs of phones (calls in progress at once).
    pub pairs: usize,
    /// The forwarder.
    pub forwarder: Side,
    /// rasgk.
    pub rasgk: Side,
}

impl Relay {
    /// rasgk's message rate over the forwarder's: the median of the rounds' ratios.
    pub fn ratio(&self) -> f64 {
        let mut ratios: Vec<f64> = self
            .rasgk
            .slices
            .iter()
            .zip(&self.forwarder.slices)
            .map(|(r, f)| (r.0 as f64 / r.1) / (f.0 as f64 / f.1).max(1e-9))
            .collect();
        ratios.sort_by(f64::total_cmp);
        match ratios.len() {
            0 => 0.0,
            n if n % 2 == 1 => ratios[n / 2],
            n => (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0,
        }
    }

    /// What the relay adds to the forwarder's Setup → Connect at the 99th percentile,
    /// milliseconds.
    pub fn added_p99_ms(&self) -> f64 {
        self.rasgk.setup_to_connect_ms.1 - self.forwarder.setup_to_connect_ms.1
    }

    /// Every call of both sides completed.
    pub fn whole(&self) -> bool {
        self.rasgk.failed == 0 && self.forwarder.failed == 0
    }
}

/// One pair's two connections and who they are.
struct Pair {
    caller: TcpStream,
    callee: TcpStream,
    caller_phone: Phone,
    caller_extension: u32,
    callee_extension: u32,
    /// Calls made, for call references and identifiers.
    made: u32,
    index: usize,
}

/// The address of pair `index`'s phone in `region` (1: callers, 2: callees).
fn phone_ip(region: u8, index: usize) -> std::net::IpAddr {
    std::net::IpAddr::from([
        127,
        region,
        45 + (index / 250) as u8,
        1 + (index % 250) as u8,
    ])
}

/// Registers a phone (GRQ, RRQ where the GCF says): the phone, and the RCF's
/// callSignalAddress.
async fn register(mut phone: Phone, discovery: SocketAddr) -> Result<(Phone, SocketAddr), String> {
    let socket = UdpSocket::bind(phone.ras_address)
        .await
        .map_err(|e| format!("relay bench: cannot bind {}: {e}", phone.ras_address))?;
    let ask = |to: SocketAddr, datagram: Vec<u8>| {
        let socket = &socket;
        async move {
            socket
                .send_to(&datagram, to)
                .await
                .map_err(|e| format!("relay bench: sending to {to}: {e}"))?;
            let mut buffer = [0u8; 4096];
            let (n, _) =
                tokio::time::timeout(Duration::from_secs(3), socket.recv_from(&mut buffer))
                    .await
                    .map_err(|_| format!("relay bench: no answer from {to}"))?
                    .map_err(|e| format!("relay bench: reading: {e}"))?;
            Answer::read(&buffer[..n]).map_err(|e| format!("relay bench: {e}"))
        }
    };
    let grq = phone.grq();
    let clan = match ask(discovery, grq).await? {
        Answer::Gcf {
            ras_address: Some(clan),
            ..
        } => clan,
        other => return Err(format!("relay bench: GRQ answered {other:?}")),
    };
    let rrq = phone.rrq();
    let answer = ask(clan, rrq).await?;
    phone.learn(&answer);
    match answer {
        Answer::Rcf {
            call_signal_address: Some(signal),
            ..
        } => Ok((phone, signal)),
        other => Err(format!("relay bench: RRQ answered {other:?}")),
    }
}

/// A TCP connection from `from` (any port) to `to`, Nagle off.
async fn connect(from: std::net::IpAddr, to: SocketAddr) -> Result<TcpStream, String> {
    let socket = TcpSocket::new_v4().map_err(|e| format!("relay bench: socket: {e}"))?;
    socket
        .bind(SocketAddr::new(from, 0))
        .map_err(|e| format!("relay bench: bind {from}: {e}"))?;
    let stream = socket
        .connect(to)
        .await
        .map_err(|e| format!("relay bench: connect {from} → {to}: {e}"))?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// The next frame's payload (empty frames skipped), within 5 s.
async fn next_message(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    loop {
        let mut header = [0u8; 4];
        tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut header))
            .await
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
        let len = usize::from(u16::from_be_bytes([header[2], header[3]]));
        if header[0] != 3 || len < 4 {
            return Err(std::io::Error::from(std::io::ErrorKind::InvalidData));
        }
        let mut payload = vec![0u8; len - 4];
        stream.read_exact(&mut payload).await?;
        if !payload.is_empty() {
            return Ok(payload);
        }
    }
}

/// The type and call reference of a payload.
fn kind_of(payload: &[u8]) -> Option<(MessageType, CallReference)> {
    q931::Message::parse(payload)
        .ok()
        .map(|m| (m.message_type, m.call_reference))
}

async fn write(stream: &mut TcpStream, payload: &[u8]) -> std::io::Result<()> {
    let frame = crate::tpkt::frame(payload)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    stream.write_all(&frame).await
}

/// Reads the callee's side until a message of `kind`.
async fn expect(stream: &mut TcpStream, kind: MessageType) -> std::io::Result<CallReference> {
    loop {
        let payload = next_message(stream).await?;
        match kind_of(&payload) {
            Some((got, crv)) if got == kind => return Ok(crv),
            Some((MessageType::ReleaseComplete, _)) => {
                return Err(std::io::Error::other("released"))
            }
            Some(_) => continue,
            None => return Err(std::io::Error::from(std::io::ErrorKind::InvalidData)),
        }
    }
}

/// One call of a pair: Setup → Alerting, Connect → Release Complete. Setup → Connect.
async fn call(pair: &mut Pair) -> std::io::Result<Duration> {
    pair.made += 1;
    let crv = (pair.made % 0x7FFF + 1) as u16;
    let mut call_id = [0u8; 16];
    call_id[..8].copy_from_slice(&(pair.index as u64).to_be_bytes());
    call_id[8..12].copy_from_slice(&pair.made.to_be_bytes());
    call_id[6] = 0x40 | (call_id[6] & 0x0F);
    let source = [Alias::DialledDigits(pair.caller_extension.to_string())];
    let destination = [Alias::DialledDigits(pair.callee_extension.to_string())];
    let setup = q931::setup(&Setup {
        call_reference: CallReference::from_originator(crv),
        call_identifier: call_id,
        conference_id: call_id,
        source: &source,
        destination: &destination,
        display: None,
        endpoint_identifier: pair.caller_phone.endpoint_id.as_ref(),
    })
    .map_err(std::io::Error::other)?;
    let start = Instant::now();
    write(&mut pair.caller, &setup).await?;
    let callee_crv = expect(&mut pair.callee, MessageType::Setup).await?;
    let answer = callee_crv.reversed();
    write(&mut pair.callee, &q931::alerting(answer, call_id)).await?;
    write(&mut pair.callee, &q931::connect(answer, call_id, call_id)).await?;
    expect(&mut pair.caller, MessageType::Connect).await?;
    let took = start.elapsed();
    let release = q931::release_complete(
        CallReference::from_originator(crv),
        Some(call_id),
        Release::NormalClearing,
    );
    write(&mut pair.caller, &release).await?;
    expect(&mut pair.callee, MessageType::ReleaseComplete).await?;
    Ok(took)
}

/// One slice: every pair calls until `until`. The pairs back, calls completed, failures,
/// and the Setup → Connect times.
async fn slice(pairs: Vec<Pair>, until: Instant) -> (Vec<Pair>, u64, u64, Vec<Duration>) {
    let tasks: Vec<_> = pairs
        .into_iter()
        .map(|mut pair| {
            tokio::spawn(async move {
                let (mut done, mut failed, mut times) = (0u64, 0u64, Vec::new());
                while Instant::now() < until {
                    match call(&mut pair).await {
                        Ok(took) => {
                            done += 1;
                            times.push(took);
                        }
                        Err(_) => {
                            failed += 1;
                            break;
                        }
                    }
                }
                (pair, done, failed, times)
            })
        })
        .collect();
    let mut back = Vec::new();
    let (mut done, mut failed, mut times) = (0, 0, Vec::new());
    for task in tasks {
        if let Ok((pair, d, f, t)) = task.await {
            back.push(pair);
            done += d;
            failed += f;
            times.extend(t);
        }
    }
    (back, done, failed, times)
}

/// (p50, p99, max) of `times`, milliseconds.
fn percentiles(times: &mut [Duration]) -> (f64, f64, f64) {
    times.sort_unstable();
    let at = |q: f64| {
        if times.is_empty() {
            return 0.0;
        }
        let i = ((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1;
        times[i].as_secs_f64() * 1e3
    };
    (at(0.5), at(0.99), at(1.0))
}

/// The pairs of the rasgk side: callers in region 1, callees in region 2, registered and
/// their sockets in service.
async fn rasgk_pairs(count: usize) -> Result<Vec<Pair>, String> {
    let discovery: SocketAddr = "127.0.56.1:1719".parse().expect("an address");
    let mut pairs = Vec::with_capacity(count);
    for index in 0..count {
        let caller_extension = 71_000 + index as u32;
        let callee_extension = 72_000 + index as u32;
        let mut caller =
            Phone::extension(caller_extension, SocketAddr::new(phone_ip(1, index), 1719));
        let mut callee =
            Phone::extension(callee_extension, SocketAddr::new(phone_ip(2, index), 1719));
        // rasgk's own phones: they ask to be told when their sockets are in service.
        caller.service_frame = true;
        callee.service_frame = true;
        let (caller_phone, caller_signal) = register(caller, discovery).await?;
        let (_, callee_signal) = register(callee, discovery).await?;
        let mut caller = connect(phone_ip(1, index), caller_signal).await?;
        let mut callee = connect(phone_ip(2, index), callee_signal).await?;
        for (stream, who) in [(&mut caller, "caller"), (&mut callee, "callee")] {
            // The service frame puts the socket in service.
            let mut frame = [0u8; 4];
            tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut frame))
                .await
                .map_err(|_| format!("relay bench: {who} {index}: no service frame"))?
                .map_err(|e| format!("relay bench: {who} {index}: {e}"))?;
        }
        pairs.push(Pair {
            caller,
            callee,
            caller_phone,
            caller_extension,
            callee_extension,
            made: 0,
            index,
        });
    }
    Ok(pairs)
}

/// The pairs of the forwarder side: each caller's connection, then its callee's (the
/// forwarder pairs them in that order).
async fn forwarder_pairs(count: usize) -> Result<Vec<Pair>, String> {
    let to: SocketAddr = FORWARDER.parse().expect("an address");
    let mut pairs = Vec::with_capacity(count);
    for index in 0..count {
        let caller = connect(phone_ip(1, index), to).await?;
        // The accept of the first before the second connects keeps the forwarder's order.
        tokio::time::sleep(Duration::from_millis(1)).await;
        let callee = connect(phone_ip(2, index), to).await?;
        tokio::time::sleep(Duration::from_millis(1)).await;
        let mut caller_phone = Phone::extension(
            71_000 + index as u32,
            SocketAddr::new(phone_ip(1, index), 1719),
        );
        caller_phone.endpoint_id = crate::ras::reply::EndpointId::new("EP00000001").ok();
        pairs.push(Pair {
            caller,
            callee,
            caller_phone,
            caller_extension: 71_000 + index as u32,
            callee_extension: 72_000 + index as u32,
            made: 0,
            index,
        });
    }
    Ok(pairs)
}

/// Measures both sides with `pairs` pairs for `seconds` a side, in [`ROUNDS`] slices.
pub async fn run(pairs: usize, seconds: f64) -> Result<Relay, String> {
    let pairs = pairs.clamp(1, MAX_PAIRS);
    let config = config::from_toml(TOPOLOGY, "the relay bench's topology")
        .map_err(|e| format!("relay bench: {e}"))?;
    let gatekeeper = super::Serving::start(config, "the relay bench's gatekeeper").await?;
    let listener = std::net::TcpListener::bind(FORWARDER)
        .map_err(|e| format!("relay bench: cannot bind the forwarder on {FORWARDER}: {e}"))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("relay bench: {e}"))?;
    let forwarder = super::Serving::on_own_thread("rasgk-forwarder", move |stopped| async move {
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|e| format!("relay bench: the forwarder's listener: {e}"))?;
        Ok(super::forwarder::forward(listener, stopped))
    })
    .await?;
    let outcome = measure(pairs, seconds).await;
    forwarder.stop().await;
    gatekeeper.stop().await;
    outcome
}

async fn measure(pairs: usize, seconds: f64) -> Result<Relay, String> {
    let mut relayed = rasgk_pairs(pairs).await?;
    let mut forwarded = forwarder_pairs(pairs).await?;
    let per_slice = Duration::from_secs_f64(seconds.max(0.1) / f64::from(ROUNDS));
    let mut relay = Relay {
        pairs,
        forwarder: Side::default(),
        rasgk: Side::default(),
    };
    let (mut forwarder_times, mut rasgk_times) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let (back, done, failed, times) = slice(forwarded, start + per_slice).await;
        relay
            .forwarder
            .slices
            .push((done, start.elapsed().as_secs_f64()));
        relay.forwarder.failed += failed;
        forwarder_times.extend(times);
        forwarded = back;
        let start = Instant::now();
        let (back, done, failed, times) = slice(relayed, start + per_slice).await;
        relay
            .rasgk
            .slices
            .push((done, start.elapsed().as_secs_f64()));
        relay.rasgk.failed += failed;
        rasgk_times.extend(times);
        relayed = back;
    }
    relay.forwarder.setup_to_connect_ms = percentiles(&mut forwarder_times);
    relay.rasgk.setup_to_connect_ms = percentiles(&mut rasgk_times);
    Ok(relay)
}
