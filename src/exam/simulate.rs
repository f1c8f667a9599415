//! `rasgk exam --simulate N`: simulated phones to examine when no real endpoint is at hand,
//! or to see what the exam says of each misbehaviour (`--misbehave`). Each phone is a
//! [`SimulatedPhone`] on a UDP socket of its own at 127.1.x.y (region 1 of the embedded
//! default), run on a small runtime of its own. Phones are non-TTS (4001…) unless `--tts`
//! (5001…); a TTS phone takes the sockets the gatekeeper opens to its call signalling
//! address, and keeps them, or closes them at once when it declines TTS.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, UdpSocket};

use crate::phone::Phone;
use crate::simulated_phone::{Misbehaviour, SimulatedPhone};

/// The extension of phone `i`: 4001… for non-TTS phones, 5001… for TTS phones (the
/// embedded default's `[[tts]] aliases = ["5*"]` makes 5* TTS).
pub fn extension_of(i: usize, tts: bool) -> u32 {
    let first = if tts { 5001 } else { 4001 };
    first + u32::try_from(i).unwrap_or(u32::MAX - first)
}

/// The most phones one exam simulates (addresses 127.1.0.10 … 127.1.3.241).
pub const MOST: usize = 1000;

/// The address of phone `i`.
pub fn address_of(i: usize) -> IpAddr {
    let n = 10 + i;
    IpAddr::V4(Ipv4Addr::new(127, 1, (n / 250) as u8, (n % 250) as u8 + 1))
}

/// Phones running until `stop` turns true.
pub struct Simulation {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Simulation {
    /// Starts `count` phones (at most [`MOST`]; TTS ones with `tts`) looking for their
    /// gatekeeper at `discovery`, each misbehaving so; why they cannot start.
    pub fn start(
        count: usize,
        tts: bool,
        discovery: SocketAddr,
        misbehaviours: &[Misbehaviour],
    ) -> std::io::Result<Simulation> {
        let stop = Arc::new(AtomicBool::new(false));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // Bind every socket first, so that a phone that cannot start says so at once.
        let mut bound = Vec::with_capacity(count);
        for i in 0..count.min(MOST) {
            let ip = address_of(i);
            let (udp, tcp) = runtime.block_on(async {
                let udp = UdpSocket::bind(SocketAddr::new(ip, 0)).await?;
                let tcp = TcpListener::bind(SocketAddr::new(ip, 0)).await?;
                Ok::<_, std::io::Error>((udp, tcp))
            })?;
            bound.push((udp, tcp));
        }
        let misbehaviours = misbehaviours.to_vec();
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("simulated-phones".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let mut tasks = Vec::new();
                    for (i, (udp, tcp)) in bound.into_iter().enumerate() {
                        let extension = extension_of(i, tts);
                        let misbehaviours = misbehaviours.clone();
                        let flag = flag.clone();
                        tasks.push(tokio::spawn(async move {
                            let _ =
                                live_phone(extension, udp, tcp, discovery, &misbehaviours, flag)
                                    .await;
                        }));
                    }
                    for task in tasks {
                        let _ = task.await;
                    }
                });
            })?;
        Ok(Simulation {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops every phone (they send nothing more; their registrations lapse or go with the
    /// gatekeeper).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn live_phone(
    extension: u32,
    udp: UdpSocket,
    tcp: TcpListener,
    discovery: SocketAddr,
    misbehaviours: &[Misbehaviour],
    stop: Arc<AtomicBool>,
) -> std::io::Result<()> {
    let ras_address = udp.local_addr()?;
    let mut phone = Phone::extension(extension, ras_address);
    phone.call_signal_address = tcp.local_addr()?;
    let mut sim = SimulatedPhone::new(phone, discovery, misbehaviours);
    let start = tokio::time::Instant::now();
    let std_start = std::time::Instant::now();
    let now = |at: tokio::time::Instant| std_start + (at - start);
    let mut held = Vec::new();
    let mut buf = vec![0u8; 2048];
    for out in sim.start(now(tokio::time::Instant::now())) {
        let _ = udp.send_to(&out.datagram, out.to).await;
    }
    while !stop.load(Ordering::Relaxed) {
        let wake = sim
            .deadline()
            .map(|d| start + (d - std_start))
            .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_millis(200))
            .min(tokio::time::Instant::now() + Duration::from_millis(200));
        let out = tokio::select! {
            received = udp.recv_from(&mut buf) => {
                let (n, from) = received?;
                sim.receive(now(tokio::time::Instant::now()), from, &buf[..n])
            }
            accepted = tcp.accept() => {
                if let Ok((stream, _)) = accepted {
                    // A TTS phone keeps the gatekeeper's socket, or declines it by closing it.
                    if sim.keeps_tts_socket() {
                        held.push(stream);
                    }
                }
                Vec::new()
            }
            () = tokio::time::sleep_until(wake) => sim.tick(now(tokio::time::Instant::now())),
        };
        for out in out {
            let _ = udp.send_to(&out.datagram, out.to).await;
        }
    }
    Ok(())
}
