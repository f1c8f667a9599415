//! Phones of the exam's own on real sockets: the exam's phone (the [`Partner`] the call
//! steps call with, always there) and, with `--simulate N`, simulated phones to examine when
//! no real endpoint is at hand, or to see what the exam says of each misbehaviour
//! (`--misbehave`). Each is a [`SimulatedPhone`] with a UDP socket for its RAS and a TCP
//! listener for its call signalling at an address of its own, run on a small runtime of its
//! own. Simulated phones are non-TTS (4001…) unless `--tts` (5001…), at 127.1.x.y (region 1
//! of the embedded default); the exam's phone is `--partner-alias` at `--partner-address`.
//!
//! A phone's connections — those it accepts (a TTS phone's socket from the gatekeeper, a
//! call to it) and those it opens to place a call, from its own address — each have a reader
//! task that hands what it reads to the phone; the phone's [`Signal`]s are carried out as
//! they come. What the phones hear of their calls goes to the exam ([`Heard`]); calls are
//! placed on the exam's [`Order`].
//!
//! [`Partner`]: super::engine::Partner

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpSocket, TcpStream, UdpSocket};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::phone::Phone;
use crate::ras::Alias;
use crate::simulated_phone::{CallNote, Connection, Misbehaviour, Signal, SimulatedPhone};

/// The extension of phone `i`: 4001… for non-TTS phones, 5001… for TTS phones (the
/// embedded default's `[[tts]] aliases = ["5*"]` makes 5* TTS).
pub fn extension_of(i: usize, tts: bool) -> u32 {
    let first = if tts { 5001 } else { 4001 };
    first + u32::try_from(i).unwrap_or(u32::MAX - first)
}

/// The most phones one exam simulates (addresses 127.1.0.11 … 127.1.4.10).
pub const MOST: usize = 1000;

/// The address of phone `i`.
pub fn address_of(i: usize) -> IpAddr {
    let n = 10 + i;
    IpAddr::V4(Ipv4Addr::new(127, 1, (n / 250) as u8, (n % 250) as u8 + 1))
}

/// The exam's phone's alias unless `--partner-alias` says otherwise.
pub const PARTNER_ALIAS: &str = "3999";

/// The exam's phone's address unless `--partner-address` says otherwise: in region 1 of the
/// embedded default, beyond every simulated phone's.
pub const PARTNER_ADDRESS: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 1, 255, 250));

/// How long the exam's phone holds a call it answered, and one it placed, before it
/// releases it: the endpoint's DRQ after the release is what the call steps look for.
pub const PARTNER_HOLD: Duration = Duration::from_secs(2);

/// The exam's phone keeps alive at this share of its time to live (4 s of the built-in
/// drill's 20), so that it learns of the drill's restart soon and is registered again
/// before the call steps.
pub const PARTNER_KEEP_ALIVE_SHARE: f64 = 0.2;

/// The calls the exam's phone takes part in at once: two for each of the most endpoints an
/// exam simulates, and room for real ones.
pub const PARTNER_MAX_CALLS: usize = 2 * MOST + 64;

/// How long the exam's phone waits for the endpoint to answer (a desk phone may ring for
/// a person to pick it up; `call-in` waits 30 s in the built-in drill).
pub const PARTNER_CONNECT_WITHIN: Duration = Duration::from_secs(25);

/// One phone to run.
#[derive(Debug, Clone)]
pub struct PhoneSpec {
    /// Its alias (dialled digits).
    pub alias: String,
    /// Its address: its RAS socket's and its call signalling listener's, each on a port the
    /// system picks.
    pub ip: IpAddr,
    /// What it does wrong.
    pub misbehaviours: Vec<Misbehaviour>,
    /// It is the exam's phone: it releases a call it answered after [`PARTNER_HOLD`].
    pub partner: bool,
}

impl PhoneSpec {
    /// The exam's phone.
    pub fn partner(alias: &str, ip: IpAddr) -> PhoneSpec {
        PhoneSpec {
            alias: alias.to_string(),
            ip,
            misbehaviours: Vec::new(),
            partner: true,
        }
    }

    /// Simulated phone `i` of `--simulate`.
    pub fn simulated(i: usize, tts: bool, misbehaviours: &[Misbehaviour]) -> PhoneSpec {
        PhoneSpec {
            alias: extension_of(i, tts).to_string(),
            ip: address_of(i),
            misbehaviours: misbehaviours.to_vec(),
            partner: false,
        }
    }
}

/// A call a phone is told to place.
#[derive(Debug, Clone)]
pub struct Order {
    /// The number to dial.
    pub dial: String,
    /// The call's `callIdentifier`.
    pub call_id: [u8; 16],
}

/// What a phone heard of a call: which phone (its alias), and the note.
pub type Heard = Box<dyn Fn(&str, CallNote) + Send + Sync>;

/// A phone running: its addresses.
#[derive(Debug, Clone, Copy)]
pub struct Running {
    /// Its RAS address.
    pub ras_address: SocketAddr,
    /// Its call signalling address.
    pub call_signal_address: SocketAddr,
}

/// Phones running until stopped.
pub struct Simulation {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    orders: HashMap<String, UnboundedSender<Order>>,
    /// Each phone's addresses, by alias.
    pub running: HashMap<String, Running>,
}

impl Simulation {
    /// Starts `phones` (at most [`MOST`] + 1) looking for their gatekeeper at `discovery`;
    /// what they hear of their calls goes to `heard`. Why they cannot start: a socket that
    /// does not bind.
    pub fn start(
        phones: Vec<PhoneSpec>,
        discovery: SocketAddr,
        heard: Heard,
    ) -> std::io::Result<Simulation> {
        // Each phone holds a UDP socket, a listener and its calls' connections.
        let _ = crate::sockets::raise_open_file_limit();
        let stop = Arc::new(AtomicBool::new(false));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // Bind every socket first, so that a phone that cannot start says so at once.
        let mut bound = Vec::with_capacity(phones.len());
        let mut running = HashMap::new();
        let mut orders = HashMap::new();
        for spec in phones.into_iter().take(MOST + 1) {
            let (udp, tcp) = runtime.block_on(async {
                let udp = UdpSocket::bind(SocketAddr::new(spec.ip, 0)).await?;
                let tcp = TcpListener::bind(SocketAddr::new(spec.ip, 0)).await?;
                Ok::<_, std::io::Error>((udp, tcp))
            })?;
            running.insert(
                spec.alias.clone(),
                Running {
                    ras_address: udp.local_addr()?,
                    call_signal_address: tcp.local_addr()?,
                },
            );
            let (tx, rx) = unbounded_channel();
            orders.insert(spec.alias.clone(), tx);
            bound.push((spec, udp, tcp, rx));
        }
        let heard = Arc::new(heard);
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("exam-phones".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let mut tasks = Vec::new();
                    for (spec, udp, tcp, rx) in bound {
                        let (flag, heard) = (flag.clone(), heard.clone());
                        tasks.push(tokio::spawn(async move {
                            let _ = LivePhone::new(spec, udp, tcp, discovery, rx)
                                .run(flag, &**heard)
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
            orders,
            running,
        })
    }

    /// Tells the phone of `alias` to place a call; `false` when no phone of the exam's has
    /// that alias.
    pub fn order(&self, alias: &str, order: Order) -> bool {
        self.orders
            .get(alias)
            .is_some_and(|tx| tx.send(order).is_ok())
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

/// What a connection's reader or opener hands its phone.
enum Wire {
    Opened(Connection, TcpStream),
    NotOpened(Connection, String),
    Read(Connection, Vec<u8>),
    Closed(Connection),
}

/// One phone and its sockets.
struct LivePhone {
    sim: SimulatedPhone,
    alias: String,
    udp: UdpSocket,
    tcp: TcpListener,
    orders: UnboundedReceiver<Order>,
    writers: HashMap<Connection, OwnedWriteHalf>,
    wires: (UnboundedSender<Wire>, UnboundedReceiver<Wire>),
    start: tokio::time::Instant,
    std_start: std::time::Instant,
}

impl LivePhone {
    fn new(
        spec: PhoneSpec,
        udp: UdpSocket,
        tcp: TcpListener,
        discovery: SocketAddr,
        orders: UnboundedReceiver<Order>,
    ) -> LivePhone {
        let ras_address = udp.local_addr().unwrap_or(SocketAddr::new(spec.ip, 0));
        let aliases: Vec<Alias> = Alias::dialled_digits(&spec.alias)
            .or_else(|_| Alias::h323_id(&spec.alias))
            .into_iter()
            .collect();
        let mut phone = Phone::new(aliases, ras_address);
        phone.call_signal_address = tcp.local_addr().unwrap_or(SocketAddr::new(spec.ip, 0));
        let mut sim = SimulatedPhone::new(phone, discovery, &spec.misbehaviours);
        if spec.partner {
            sim.hold = PARTNER_HOLD;
            sim.answered_hold = Some(PARTNER_HOLD);
            sim.connect_within = PARTNER_CONNECT_WITHIN;
            sim.keep_alive_share = PARTNER_KEEP_ALIVE_SHARE;
            // Every endpoint examined may call it and be called by it at once.
            sim.max_calls = PARTNER_MAX_CALLS;
        }
        LivePhone {
            sim,
            alias: spec.alias,
            udp,
            tcp,
            orders,
            writers: HashMap::new(),
            wires: unbounded_channel(),
            start: tokio::time::Instant::now(),
            std_start: std::time::Instant::now(),
        }
    }

    fn now(&self) -> std::time::Instant {
        self.std_start + (tokio::time::Instant::now() - self.start)
    }

    async fn run(
        mut self,
        stop: Arc<AtomicBool>,
        heard: &(dyn Fn(&str, CallNote) + Sync),
    ) -> std::io::Result<()> {
        let mut buf = vec![0u8; 2048];
        let out = self.sim.start(self.now());
        self.send_all(out).await;
        while !stop.load(Ordering::Relaxed) {
            let soon = tokio::time::Instant::now() + Duration::from_millis(200);
            let wake = self
                .sim
                .deadline()
                .map(|d| self.start + d.saturating_duration_since(self.std_start))
                .unwrap_or(soon)
                .min(soon);
            let now = self.now();
            let out = tokio::select! {
                received = self.udp.recv_from(&mut buf) => {
                    let (n, from) = received?;
                    self.sim.receive(now, from, &buf[..n])
                }
                accepted = self.tcp.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let connection = self.sim.accepted(now, peer);
                        self.attach(connection, stream);
                        Vec::new()
                    }
                    Err(_) => Vec::new(),
                },
                Some(wire) = self.wires.1.recv() => match wire {
                    Wire::Opened(connection, stream) => {
                        self.attach(connection, stream);
                        self.sim.connected(now, connection)
                    }
                    Wire::NotOpened(connection, why) => self.sim.connect_failed(now, connection, &why),
                    Wire::Read(connection, octets) => self.sim.read(now, connection, &octets),
                    Wire::Closed(connection) => {
                        self.writers.remove(&connection);
                        self.sim.closed(now, connection)
                    }
                },
                Some(order) = self.orders.recv() => self.sim.dial(now, &order.dial, order.call_id),
                () = tokio::time::sleep_until(wake) => self.sim.tick(now),
            };
            self.send_all(out).await;
            self.signal().await;
            for note in self.sim.notes() {
                heard(&self.alias, note);
            }
        }
        Ok(())
    }

    async fn send_all(&self, out: Vec<crate::simulated_phone::Outgoing>) {
        for out in out {
            let _ = self.udp.send_to(&out.datagram, out.to).await;
        }
    }

    /// A connection open: its writer kept, its reader run.
    fn attach(&mut self, connection: Connection, stream: TcpStream) {
        let (mut read, write) = stream.into_split();
        self.writers.insert(connection, write);
        let tx = self.wires.0.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            loop {
                match read.read(&mut buf).await {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(Wire::Closed(connection));
                        return;
                    }
                    Ok(n) => {
                        if tx.send(Wire::Read(connection, buf[..n].to_vec())).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }

    /// Carries out what the phone asks of its TCP.
    async fn signal(&mut self) {
        for signal in self.sim.signals() {
            match signal {
                Signal::Connect { connection, to } => {
                    let tx = self.wires.0.clone();
                    let from = SocketAddr::new(self.sim.phone.call_signal_address.ip(), 0);
                    tokio::spawn(async move {
                        let wire = match open(from, to).await {
                            Ok(stream) => Wire::Opened(connection, stream),
                            Err(e) => Wire::NotOpened(connection, e.to_string()),
                        };
                        let _ = tx.send(wire);
                    });
                }
                Signal::Send { connection, frame } => {
                    if let Some(writer) = self.writers.get_mut(&connection) {
                        if writer.write_all(&frame).await.is_err() {
                            self.writers.remove(&connection);
                        }
                    }
                }
                Signal::Close { connection } => {
                    if let Some(mut writer) = self.writers.remove(&connection) {
                        let _ = writer.shutdown().await;
                    }
                }
            }
        }
    }
}

/// A connection from the phone's own address (the gatekeeper tells phones apart by it) to
/// `to`, given up after 5 s.
async fn open(from: SocketAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = match to {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    if from.is_ipv4() == to.is_ipv4() {
        socket.bind(from)?;
    }
    tokio::time::timeout(Duration::from_secs(5), socket.connect(to))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer within 5 s"))?
}
