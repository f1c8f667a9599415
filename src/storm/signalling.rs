//! The phones' call signalling in socket mode (`rasgk storm --sockets`): the TCP connection
//! that is a registered phone's socket, as a gatekeeper with `sockets = "tcp"` makes it.
//!
//! - A **non-TTS phone** connects, after its RCF, from its own IP to the C-LAN's signalling
//!   address the RCF names (`callSignalAddress`, first entry) — [`connect_until_service`].
//!   A gatekeeper that is busy (at most `max_setups_per_clan` establishments per C-LAN), has
//!   no room or does not know the phone resets the connection at once; the phone counts the
//!   rejection and tries again after a back-off ([`Backoff`]: 50 ms doubling to 2 s, with
//!   jitter), never starting an attempt after the storm's give-up time.
//! - A **TTS phone** waits: the gatekeeper connects from the C-LAN's IP to the phone's own
//!   `callSignalAddress`. Every phone of a storm process shares one [`Listener`] (on the
//!   loopback device, like the phones' UDP port), and one [`Acceptor`] task hands each
//!   connection to its phone by the address it was made to ([`accept_until_service`]).
//!
//! Either way the socket is **in service** when the gatekeeper writes the empty TPKT frame
//! [`SERVICE_FRAME`] (`03 00 00 04`) on it, which it does once the socket's establishment
//! (its `setup_ms`) is over. The phones ask for that frame in their RRQs
//! ([`crate::ras::service_frame`]); a gatekeeper whose RCF does not confirm it writes none,
//! and the socket is then in service once the connection is up. **Time to service** is from
//! the RCF to that frame (or connection), measured once
//! per registration (a socket lost and won back later is not measured again): from when the
//! kernel received the RCF for a TTS phone, from when it acted on it (connecting) for a
//! non-TTS phone, to when the kernel received the frame ([`super::stamp`]), so that the
//! storm's own load counts as little as it can.
//! The phone then holds the connection, reading and ignoring whatever comes, until the
//! gatekeeper closes it (counted; a non-TTS phone connects again, a TTS phone waits for the
//! next connection), the registration ends (a gatekeeper-sent URQ) or the storm does.
//! [`PhoneSocket`] is that life, one task a registration, driven by the phone's
//! [`super::life`].

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use socket2::{Protocol, Socket, Type};
use std::future::Future;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use super::call_signalling::{CallSignalling, Dial, Heard, Out, Placed};
use super::calls::STORM_ENDED;
use super::port;
use crate::config::Family;
use crate::phone_timing::Backoff;

/// The empty TPKT frame that puts a socket in service: what the gatekeeper writes when the
/// socket's establishment completes.
pub const SERVICE_FRAME: [u8; 4] = crate::tpkt::EMPTY;

/// Connections waiting in the TTS phones' listener's queue before the kernel holds further
/// ones back (SYNs unanswered, the gatekeeper's side in SYN-SENT), when the phones are slow
/// to accept (`--accept-delay-ms`).
pub const SLOW_BACKLOG: i32 = 16;

/// The queue when phones accept at once: room for every connect the gatekeeper has in
/// flight, so none waits for a SYN to be sent again.
pub const BACKLOG: i32 = 4096;

/// Finds the empty TPKT frame in what a connection delivers, frame by frame: TPKT frames
/// with content are skipped whole, octets that start no TPKT header one at a time.
#[derive(Debug, Default, Clone)]
pub(super) struct FrameScan {
    header: [u8; 4],
    have: usize,
    skip: usize,
}

impl FrameScan {
    /// Reads `octets`; once the empty frame has come, how many of them it took to reach its
    /// end (what follows is for the socket's [`CallSignalling`]).
    pub fn feed(&mut self, octets: &[u8]) -> Option<usize> {
        let whole = octets.len();
        let mut octets = octets;
        while !octets.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(octets.len());
                self.skip -= n;
                octets = &octets[n..];
                continue;
            }
            self.header[self.have] = octets[0];
            octets = &octets[1..];
            self.have += 1;
            if self.have == 1 && self.header[0] != SERVICE_FRAME[0] {
                self.have = 0;
                continue;
            }
            if self.have < 4 {
                continue;
            }
            self.have = 0;
            if self.header == SERVICE_FRAME {
                return Some(whole - octets.len());
            }
            let length = usize::from(u16::from_be_bytes([self.header[2], self.header[3]]));
            if self.header[1] == 0 && length > 4 {
                self.skip = length - 4;
            }
        }
        None
    }
}

/// A socket in service.
#[derive(Debug)]
pub(super) struct SocketInService {
    pub stream: TcpStream,
    /// When the kernel received its service frame, since the UNIX epoch.
    pub at: Duration,
    /// What came after the service frame in the same read.
    pub early: Vec<u8>,
}

/// Reads `stream` until the empty TPKT frame: `Ok(Some((when the kernel received it, what
/// followed it in the same read)))`, or `Ok(None)` when the connection ended first. When the
/// gatekeeper did not confirm the frame (`told` false) none comes: the socket is in service
/// now, as it is.
async fn service_frame(
    stream: &mut TcpStream,
    told: bool,
) -> io::Result<Option<(Duration, Vec<u8>)>> {
    if !told {
        return Ok(Some((super::wall_clock::wall_time(), Vec::new())));
    }
    let mut scan = FrameScan::default();
    let mut buffer = [0u8; 512];
    loop {
        let (n, at) = super::stamp::read(stream, &mut buffer).await?;
        if n == 0 {
            return Ok(None);
        }
        if let Some(end) = scan.feed(&buffer[..n]) {
            return Ok(Some((at, buffer[end..n].to_vec())));
        }
    }
}

/// Whether an error is the gatekeeper turning a connection away: refused, reset, ended.
fn turned_away(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof
            | io::ErrorKind::TimedOut
    )
}

/// The sockets in service a storm process's phones hold now, shared by them all.
#[derive(Debug, Clone, Default)]
pub(super) struct Gauge(Arc<AtomicU64>);

impl Gauge {
    /// Sockets in service now.
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Counts one socket in service until the guard is dropped.
    fn hold(&self) -> InService {
        self.0.fetch_add(1, Ordering::Relaxed);
        InService(self.0.clone())
    }
}

/// One socket counted in service by the [`Gauge`].
struct InService(Arc<AtomicU64>);

impl Drop for InService {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How a phone's sockets went, over the whole storm.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Record {
    /// RCF to service, for each registration whose socket came into service.
    pub times_to_service: Vec<Duration>,
    /// When a socket of this phone last came into service, since the UNIX epoch.
    pub last_in_service: Option<Duration>,
    /// Connection attempts turned away before service: reset, refused, ended or timed out
    /// (non-TTS phones).
    pub rejected: u64,
    /// Sockets in service the gatekeeper closed (FIN or RST) while the phone was registered.
    pub closed_by_gatekeeper: u64,
    /// Other failures, as the system said them (a descriptor short, an address not bound).
    pub errors: Vec<String>,
    /// The peer of the socket in service when the storm ended: the C-LAN's signalling
    /// address for a non-TTS phone, the C-LAN's IP and the gatekeeper's port for a TTS one.
    pub held_at_end: Option<SocketAddr>,
    /// What its sockets' readers counted of the calls made to the phone.
    pub heard: Heard,
}

impl Record {
    fn add(&mut self, other: Record) {
        self.times_to_service.extend(other.times_to_service);
        self.last_in_service = self.last_in_service.max(other.last_in_service);
        self.rejected += other.rejected;
        self.closed_by_gatekeeper += other.closed_by_gatekeeper;
        self.errors.extend(other.errors);
        self.held_at_end = other.held_at_end.or(self.held_at_end);
        self.heard.add(&other.heard);
    }
}

/// Why [`connect_until_service`] returned no socket.
enum Attempt {
    Service(SocketInService),
    TurnedAway,
    Failed(io::Error),
    GaveUp,
}

/// One connection from `from` (port 0) to `to`, kept until the empty TPKT frame (when `told`
/// it comes) or the end of the connection. A connection not yet established by `give_up` is
/// abandoned; one established waits for its frame however long (the caller stops it).
async fn attempt(from: IpAddr, to: SocketAddr, give_up: Instant, told: bool) -> Attempt {
    let socket = match to {
        SocketAddr::V4(_) => TcpSocket::new_v4(),
        SocketAddr::V6(_) => TcpSocket::new_v6(),
    };
    let bound = socket.and_then(|socket| {
        if from.is_ipv6() {
            super::port::may_send_from_any_address(&socket2::SockRef::from(&socket))?;
        }
        socket.bind(SocketAddr::new(from, 0)).map(|()| socket)
    });
    let socket = match bound {
        Ok(socket) => socket,
        Err(error) => return Attempt::Failed(error),
    };
    super::stamp::ask(&socket);
    let mut stream = match tokio::time::timeout_at(give_up.into(), socket.connect(to)).await {
        Err(_) => return Attempt::GaveUp,
        Ok(Ok(stream)) => stream,
        Ok(Err(error)) if turned_away(&error) => return Attempt::TurnedAway,
        Ok(Err(error)) => return Attempt::Failed(error),
    };
    match service_frame(&mut stream, told).await {
        Ok(Some((at, early))) => Attempt::Service(SocketInService { stream, at, early }),
        Ok(None) => Attempt::TurnedAway,
        Err(error) if turned_away(&error) => Attempt::TurnedAway,
        Err(error) => Attempt::Failed(error),
    }
}

/// A non-TTS phone's way to a socket: connects from its IP `from` to the C-LAN's signalling
/// address `to` until a connection is put in service (`told`: by the service frame),
/// waiting a [`Backoff`] after each rejection (counted in `record`, as other failures are):
/// the socket in service. `None` once `give_up` has passed with no socket: no attempt starts
/// after it.
pub(super) async fn connect_until_service(
    from: IpAddr,
    to: SocketAddr,
    (give_up, told): (Instant, bool),
    rng: &mut ChaCha8Rng,
    record: &mut Record,
) -> Option<SocketInService> {
    let mut backoff = Backoff::default();
    while Instant::now() < give_up {
        match attempt(from, to, give_up, told).await {
            Attempt::Service(socket) => return Some(socket),
            Attempt::TurnedAway => record.rejected += 1,
            // Named by the C-LAN, not the phone, so that phones' failures add up.
            Attempt::Failed(error) => record.errors.push(format!("connecting to {to}: {error}")),
            Attempt::GaveUp => return None,
        }
        let wake = (Instant::now() + backoff.next(rng)).min(give_up);
        tokio::time::sleep_until(wake.into()).await;
    }
    None
}

/// A TTS phone's connections, as the [`Acceptor`] hands them over.
#[derive(Debug)]
pub(super) struct Inbox(UnboundedReceiver<TcpStream>);

/// A TTS phone's way to a socket: takes the connections made to it until one is put in
/// service (`told`: by the service frame; otherwise the first one is). One that ends first is
/// dropped, and so is one still waiting for its frame when a newer one comes (the gatekeeper
/// is setting up the newer). Once the acceptor is gone, waits on what it has (for ever when
/// nothing). Returns the socket in service.
pub(super) async fn accept_until_service(inbox: &mut Inbox, told: bool) -> SocketInService {
    /// What happened while waiting for the frame.
    enum Heard {
        Frame(Duration, Vec<u8>),
        Ended,
        Newer(TcpStream),
        AcceptorGone,
    }
    let mut open = true;
    let mut current: Option<TcpStream> = None;
    loop {
        let Some(stream) = current.as_mut() else {
            match inbox.0.recv().await {
                Some(stream) => current = Some(stream),
                None => return std::future::pending().await,
            }
            continue;
        };
        let heard = tokio::select! {
            got = service_frame(stream, told) => match got {
                Ok(Some((at, early))) => Heard::Frame(at, early),
                _ => Heard::Ended,
            },
            newer = inbox.0.recv(), if open => match newer {
                Some(newer) => Heard::Newer(newer),
                None => Heard::AcceptorGone,
            },
        };
        match heard {
            Heard::Frame(at, early) => {
                let stream = current.take().expect("the stream just read");
                return SocketInService { stream, at, early };
            }
            Heard::Ended => current = None,
            Heard::Newer(newer) => current = Some(newer),
            Heard::AcceptorGone => open = false,
        }
    }
}

/// The TCP socket every TTS phone of a storm process takes connections on: any address of
/// the phones' family, a port the system picks, on the loopback device (Linux; elsewhere
/// every interface), a queue of `backlog` ([`BACKLOG`], or [`SLOW_BACKLOG`] for slow
/// phones). Each phone's `callSignalAddress` is its own IP and this port.
pub(super) struct Listener {
    listener: TcpListener,
    port: u16,
}

impl Listener {
    /// Opens the listener for phones of `family`. Must run inside a tokio runtime.
    pub fn open(backlog: i32, family: Family) -> io::Result<Listener> {
        let socket = Socket::new(port::domain(family), Type::STREAM, Some(Protocol::TCP))?;
        #[cfg(any(target_os = "linux", target_os = "android"))]
        socket.bind_device(Some(b"lo"))?;
        if family == Family::V6 {
            socket.set_only_v6(true)?;
        }
        socket.bind(&SocketAddr::new(port::unspecified(family), 0).into())?;
        // Accepted connections inherit it: their frames are stamped on arrival.
        super::stamp::ask(&socket);
        socket.listen(backlog)?;
        socket.set_nonblocking(true)?;
        let listener = TcpListener::from_std(socket.into())?;
        let port = listener.local_addr()?.port();
        Ok(Listener { listener, port })
    }

    /// The port every phone's `callSignalAddress` names.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// An inbox for each of `ips` (the TTS phones'), and the acceptor that fills them.
    pub fn inboxes(self, ips: impl IntoIterator<Item = IpAddr>) -> (Acceptor, Vec<Inbox>) {
        let mut routes = HashMap::new();
        let inboxes = ips
            .into_iter()
            .map(|ip| {
                let (tx, rx) = unbounded_channel();
                routes.insert(ip, tx);
                Inbox(rx)
            })
            .collect();
        let acceptor = Acceptor {
            listener: self.listener,
            routes,
            counts: Arc::default(),
        };
        (acceptor, inboxes)
    }
}

/// What the acceptor did with the connections it took.
#[derive(Debug, Default)]
pub(super) struct Accepted {
    /// Handed to a TTS phone.
    pub handed: AtomicU64,
    /// Closed at once: made to an address that is no TTS phone's (or a phone already gone).
    pub closed: AtomicU64,
}

/// Takes the listener's connections and hands each to the TTS phone whose IP it was made to.
pub(super) struct Acceptor {
    listener: TcpListener,
    routes: HashMap<IpAddr, UnboundedSender<TcpStream>>,
    counts: Arc<Accepted>,
}

impl Acceptor {
    /// Its counts, to read while and after it runs.
    pub fn counts(&self) -> Arc<Accepted> {
        self.counts.clone()
    }

    /// Accepts until the task is aborted, sleeping `delay` before each accept (TTS phones
    /// slow to accept: further connections wait in the backlog). A connection to an address
    /// no TTS phone has is closed.
    pub async fn run(self, delay: Duration) {
        loop {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let stream = match self.listener.accept().await {
                Ok((stream, _)) => stream,
                // Out of descriptors, most likely: the connection waits in the queue.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let route = match stream.local_addr() {
                Ok(local) => self.routes.get(&local.ip()),
                Err(_) => None,
            };
            match route.map(|phone| phone.send(stream)) {
                Some(Ok(())) => self.counts.handed.fetch_add(1, Ordering::Relaxed),
                _ => self.counts.closed.fetch_add(1, Ordering::Relaxed),
            };
        }
    }
}

/// How a phone gets its socket.
#[derive(Debug)]
pub(super) enum Way {
    /// Connects to the C-LAN its RCF names (non-TTS).
    Connect,
    /// Is connected to (TTS).
    Accept(Inbox),
}

/// Why a registration's socket task is stopped; a call still in progress on its socket
/// ends for that reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The storm ends.
    StormEnded,
    /// A gatekeeper-sent URQ ended the registration.
    Unregistered,
    /// A new registration names another C-LAN to connect to.
    Moved,
}

impl Stop {
    /// What a call cut off by it is counted as.
    fn reason(self) -> &'static str {
        match self {
            Stop::StormEnded => STORM_ENDED,
            Stop::Unregistered => "unregistered",
            Stop::Moved => "socket_lost",
        }
    }
}

/// One registration's socket task: how to stop it, how to reach it, and what it returns.
struct Running {
    stop: oneshot::Sender<Stop>,
    task: JoinHandle<(Record, Way, Option<TcpStream>)>,
    /// The C-LAN signalling address it connects to (non-TTS).
    to: Option<SocketAddr>,
    /// Calls to place on its socket.
    dials: UnboundedSender<Dial>,
    /// The peer of its socket while one is in service.
    serving: watch::Receiver<Option<SocketAddr>>,
}

/// One phone's signalling side over the storm: a task per registration that gets the
/// phone its socket, holds it, answers the calls made to the phone on it and places the
/// phone's own ([`super::call_signalling`]).
pub(super) struct PhoneSocket {
    own: IpAddr,
    /// The way to a socket while no task runs.
    way: Option<Way>,
    gauge: Gauge,
    rng: ChaCha8Rng,
    running: Option<Running>,
    record: Record,
    /// Where the calls the phone placed go when they are over (its life).
    placed: Option<UnboundedSender<Placed>>,
}

impl PhoneSocket {
    /// The signalling side of the phone at `own`; its back-off jitter comes from `rng`.
    pub fn new(own: IpAddr, way: Way, gauge: Gauge, rng: ChaCha8Rng) -> PhoneSocket {
        PhoneSocket {
            own,
            way: Some(way),
            gauge,
            rng,
            running: None,
            record: Record::default(),
            placed: None,
        }
    }

    /// The calls the phone places ([`PhoneSocket::dial`]) go to `placed` when they are over.
    pub fn reporting_calls_to(mut self, placed: UnboundedSender<Placed>) -> PhoneSocket {
        self.placed = Some(placed);
        self
    }

    /// The peer of the socket in service now, if there is one: a non-TTS phone's C-LAN
    /// signalling address, a TTS phone's C-LAN IP and the gatekeeper's port.
    pub fn serving(&self) -> Option<SocketAddr> {
        let running = self.running.as_ref()?;
        *running.serving.borrow()
    }

    /// Whether `address` (an ACF's `destCallSignalAddress`) is the C-LAN holding the socket
    /// in service: its signalling address for a non-TTS phone (the peer it connected to),
    /// its IP for a TTS phone (the gatekeeper connects from the C-LAN's IP and any port).
    pub fn names_its_clan(&self, address: SocketAddr) -> bool {
        let (Some(running), Some(peer)) = (&self.running, self.serving()) else {
            return false;
        };
        match running.to {
            Some(_) => address == peer,
            None => address.ip() == peer.ip(),
        }
    }

    /// Places a call on the socket: whether a socket task took it (none runs between
    /// registrations).
    pub fn dial(&self, dial: Dial) -> bool {
        let running = self.running.as_ref();
        running.is_some_and(|running| running.dials.send(dial).is_ok())
    }

    /// A full RCF came at `at` (when the kernel received it, since the UNIX epoch), naming
    /// `call_signal_address` and confirming the service frame or not (`told`): the phone
    /// gets a socket for this registration (a non-TTS phone already connecting or connected
    /// to that same address keeps at it; a TTS phone keeps waiting or holding).
    pub async fn registered(
        &mut self,
        call_signal_address: Option<SocketAddr>,
        (at, told): (Duration, bool),
        give_up: Instant,
    ) {
        if let Some(running) = &self.running {
            let tts = running.to.is_none();
            if tts || running.to == call_signal_address {
                return;
            }
            self.stop(Stop::Moved).await;
        }
        let Some(way) = self.way.take() else {
            return;
        };
        let to = match (&way, call_signal_address) {
            (Way::Accept(_), _) => None,
            (Way::Connect, Some(to)) => Some(to),
            (Way::Connect, None) => {
                self.record
                    .errors
                    .push("the RCF names no callSignalAddress to connect to".into());
                self.way = Some(way);
                return;
            }
        };
        // A TTS phone's time to service starts when its RCF arrived: the gatekeeper connects
        // then, whatever the phone is doing. A non-TTS phone's starts when it acts on the RCF
        // (now, as it connects): a real phone does within a millisecond, while a storm
        // process's thousands of phones on one thread can leave an RCF waiting 100 ms and
        // more under a burst — the simulator's delay, not the gatekeeper's.
        let rcf_at = match way {
            Way::Accept(_) => at,
            Way::Connect => super::wall_clock::wall_time(),
        };
        let (stop, stopped) = oneshot::channel();
        let (dials, dialled) = unbounded_channel();
        let (serving_tx, serving) = watch::channel(None);
        let life = SocketLife {
            own: self.own,
            to,
            rcf_at,
            told,
            give_up,
            gauge: self.gauge.clone(),
            rng: ChaCha8Rng::from_rng(&mut self.rng),
        };
        let ends = CallEnds {
            dials: dialled,
            placed: self.placed.clone(),
        };
        let task = tokio::spawn(life.run(way, stopped, ends, serving_tx));
        self.running = Some(Running {
            stop,
            task,
            to,
            dials,
            serving,
        });
    }

    /// The registration is gone (a gatekeeper-sent URQ answered): the gatekeeper closes the
    /// socket, and so does the phone.
    pub async fn unregistered(&mut self) {
        self.stop(Stop::Unregistered).await;
    }

    /// The storm ends: the phone notes the socket it holds and says how its sockets went.
    /// The socket itself comes back open, for the phone to close once it has unregistered:
    /// a phone that closed its socket first would have a TTS socket set up again for nothing.
    pub async fn end(mut self) -> (Record, Option<TcpStream>) {
        let held = self.stop(Stop::StormEnded).await;
        self.record.held_at_end = held.as_ref().and_then(|s| s.peer_addr().ok());
        (self.record, held)
    }

    /// Stops the running task, if any, for `why`: the socket it held in service, open.
    async fn stop(&mut self, why: Stop) -> Option<TcpStream> {
        let running = self.running.take()?;
        let _ = running.stop.send(why);
        let (record, way, held) = running.task.await.ok()?;
        self.record.add(record);
        self.way = Some(way);
        held
    }
}

/// What one registration's socket task works with.
struct SocketLife {
    own: IpAddr,
    to: Option<SocketAddr>,
    /// Where its time to service starts, since the UNIX epoch (see
    /// [`PhoneSocket::registered`]).
    rcf_at: Duration,
    /// The RCF confirmed the service frame: a socket is in service when it comes.
    told: bool,
    give_up: Instant,
    gauge: Gauge,
    rng: ChaCha8Rng,
}

/// A socket task's ends of the phone's calls: the calls to place, and where the calls
/// placed go when they are over.
struct CallEnds {
    dials: UnboundedReceiver<Dial>,
    placed: Option<UnboundedSender<Placed>>,
}

impl CallEnds {
    /// A call placed is over.
    fn report(&self, placed: Placed) {
        if let Some(to) = &self.placed {
            let _ = to.send(placed);
        }
    }

    /// Runs `work` until it is done or `stop` comes (its sender gone is the storm's end); a
    /// call dialled meanwhile fails `not_in_service`: there is no socket for it.
    async fn without_socket<T>(
        &mut self,
        work: impl Future<Output = T>,
        stop: &mut oneshot::Receiver<Stop>,
    ) -> Result<T, Stop> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                done = &mut work => return Ok(done),
                why = &mut *stop => return Err(why.unwrap_or(Stop::StormEnded)),
                Some(dial) = self.dials.recv() => {
                    self.report(Placed::failed(dial.number, "not_in_service"));
                }
            }
        }
    }
}

/// Why a socket in service stopped serving.
enum Lost {
    /// The gatekeeper closed it (FIN or RST), or it failed.
    Closed,
    /// It sent what is not TPKT: the phone closes it.
    NotTpkt(crate::tpkt::FrameError),
}

/// Writes what the phone has to write, then reports the calls that are over (so that a
/// caller's Release Complete leaves before its DRQ).
async fn flush(stream: &mut TcpStream, out: &mut Out, ends: &CallEnds) -> Result<(), Lost> {
    let mut written = Ok(());
    for frame in out.write.drain(..) {
        if stream.write_all(&frame).await.is_err() {
            written = Err(Lost::Closed);
            break;
        }
    }
    out.write.clear();
    for placed in out.finished.drain(..) {
        ends.report(placed);
    }
    written
}

/// Serves a socket in service until it is lost: reads its frames (`early` first: what came
/// with the service frame), answers Setups, places the calls dialled, releases them when
/// due.
async fn serve(
    stream: &mut TcpStream,
    calls: &mut CallSignalling,
    early: &[u8],
    ends: &mut CallEnds,
) -> Lost {
    let mut out = Out::default();
    let mut lost = calls
        .read(
            early,
            super::wall_clock::wall_time(),
            Instant::now(),
            &mut out,
        )
        .err()
        .map(Lost::NotTpkt);
    let mut buffer = [0u8; 2048];
    loop {
        if let Err(closed) = flush(stream, &mut out, ends).await {
            return lost.unwrap_or(closed);
        }
        if let Some(lost) = lost {
            return lost;
        }
        // With no call placed to time, wake once an hour for nothing.
        let due = calls
            .next_due()
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            read = super::stamp::read(stream, &mut buffer) => match read {
                Ok((0, _)) | Err(_) => lost = Some(Lost::Closed),
                Ok((n, at)) => {
                    let read = calls.read(&buffer[..n], at, Instant::now(), &mut out);
                    lost = read.err().map(Lost::NotTpkt);
                }
            },
            Some(dial) = ends.dials.recv() => {
                let now = Instant::now();
                match calls.dial(dial, now, super::wall_clock::wall_time()) {
                    Ok(setup) => out.write.push(setup),
                    Err(failed) => out.finished.push(failed),
                }
            }
            () = tokio::time::sleep_until(due.into()) => calls.due(Instant::now(), &mut out),
        }
    }
}

impl SocketLife {
    /// Gets a socket into service, serves it, and gets another when the gatekeeper closes
    /// it, until stopped (or the stop's sender is gone). Returns what happened, the way
    /// back, and the socket in service at the stop, still open. `serving` says the peer of
    /// the socket in service while there is one.
    async fn run(
        mut self,
        mut way: Way,
        mut stop: oneshot::Receiver<Stop>,
        mut ends: CallEnds,
        serving: watch::Sender<Option<SocketAddr>>,
    ) -> (Record, Way, Option<TcpStream>) {
        let mut record = Record::default();
        let mut measured = false;
        loop {
            let got = ends
                .without_socket(self.obtain(&mut way, &mut record), &mut stop)
                .await;
            let socket = match got {
                Ok(Some(socket)) => socket,
                Ok(None) => {
                    // Given up: no socket for this registration.
                    let never = std::future::pending::<()>();
                    let _ = ends.without_socket(never, &mut stop).await;
                    return (record, way, None);
                }
                Err(_) => return (record, way, None),
            };
            let SocketInService {
                mut stream,
                at,
                early,
            } = socket;
            if !measured {
                record.times_to_service.push(at.saturating_sub(self.rcf_at));
                measured = true;
            }
            record.last_in_service = Some(at);
            let peer = stream.peer_addr().ok();
            let in_service = self.gauge.hold();
            serving.send_replace(peer);
            let mut calls = CallSignalling::default();
            let lost = tokio::select! {
                lost = serve(&mut stream, &mut calls, &early, &mut ends) => Ok(lost),
                why = &mut stop => Err(why.unwrap_or(Stop::StormEnded)),
            };
            serving.send_replace(None);
            drop(in_service);
            let reason = match &lost {
                Ok(_) => "socket_lost",
                Err(why) => why.reason(),
            };
            for placed in calls.end(reason) {
                ends.report(placed);
            }
            record.heard.add(&calls.heard);
            match lost {
                Err(_) => return (record, way, Some(stream)),
                Ok(Lost::Closed) => record.closed_by_gatekeeper += 1,
                Ok(Lost::NotTpkt(error)) => record
                    .errors
                    .push(format!("closed a socket that sent no TPKT ({error})")),
            }
            drop(stream);
            if let Way::Connect = way {
                let wait = Backoff::default().next(&mut self.rng);
                let waited = ends.without_socket(tokio::time::sleep(wait), &mut stop);
                if waited.await.is_err() {
                    return (record, way, None);
                }
            }
        }
    }

    /// A socket in service, by the phone's way; `None` when a non-TTS phone gave up.
    async fn obtain(&mut self, way: &mut Way, record: &mut Record) -> Option<SocketInService> {
        match (way, self.to) {
            (Way::Accept(inbox), _) => Some(accept_until_service(inbox, self.told).await),
            (Way::Connect, Some(to)) => {
                let until = (self.give_up, self.told);
                connect_until_service(self.own, to, until, &mut self.rng, record).await
            }
            (Way::Connect, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use tokio::io::AsyncReadExt;

    /// Bounds every wait of these tests.
    const WAIT: Duration = Duration::from_secs(10);

    /// The phone's RCF, naming `clan`, came now; it gives up after [`WAIT`].
    async fn registered_now(phone: &mut PhoneSocket, clan: Option<SocketAddr>) {
        let now = crate::storm::wall_clock::wall_time();
        phone
            .registered(clan, (now, true), Instant::now() + WAIT)
            .await;
    }

    #[test]
    fn the_backoff_doubles_from_50_ms_to_2_s_with_jitter_within_half() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut backoff = Backoff::default();
        let waits: Vec<Duration> = (0..9).map(|_| backoff.next(&mut rng)).collect();
        let bases = [50, 100, 200, 400, 800, 1600, 2000, 2000, 2000];
        for (wait, base) in waits.iter().zip(bases) {
            let base = Duration::from_millis(base);
            assert!(*wait >= base / 2 && *wait <= base, "{wait:?} for {base:?}");
        }
        let mut again = Backoff::default();
        let mut same = ChaCha8Rng::seed_from_u64(7);
        assert_eq!(
            again.next(&mut same),
            waits[0],
            "the seed decides the jitter"
        );
    }

    #[test]
    fn the_scan_finds_the_empty_frame_after_frames_with_content_and_across_reads() {
        let mut scan = FrameScan::default();
        assert_eq!(scan.feed(&[3, 0, 0, 7, 0xAA, 0xBB]), None);
        assert_eq!(
            scan.feed(&[0xCC, 3, 0]),
            None,
            "the 7-octet frame, then half a header"
        );
        assert_eq!(
            scan.feed(&[0, 4, 9, 9]),
            Some(2),
            "the empty frame, read in two parts; what follows is left"
        );
        let mut scan = FrameScan::default();
        assert_eq!(
            scan.feed(&[3, 0, 0, 5, 3, 0, 0, 4]),
            None,
            "03 00 00 04 as content"
        );
        assert_eq!(
            scan.feed(&[0x42, 3, 0, 0, 4]),
            Some(5),
            "a stray octet, then the frame"
        );
    }

    /// A fake gatekeeper's C-LAN for the tests: resets the first connection from each phone
    /// IP, and on the next writes the empty TPKT frame after `setup` and holds the connection.
    async fn fake_clan(
        listener: TcpListener,
        setup: Duration,
        held: tokio::sync::mpsc::UnboundedSender<TcpStream>,
    ) {
        let mut seen = std::collections::HashSet::new();
        loop {
            let Ok((stream, from)) = listener.accept().await else {
                return;
            };
            if seen.insert(from.ip()) {
                // Busy: reset at once, as the sixth set-up on a C-LAN is.
                let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
                drop(stream);
                continue;
            }
            let held = held.clone();
            tokio::spawn(async move {
                let mut stream = stream;
                tokio::time::sleep(setup).await;
                let _ = stream.write_all(&SERVICE_FRAME).await;
                let _ = held.send(stream);
            });
        }
    }

    #[tokio::test]
    async fn a_phone_reset_once_tries_again_and_measures_the_time_to_service() {
        let listener = TcpListener::bind("127.0.9.1:0").await.unwrap();
        let clan = listener.local_addr().unwrap();
        let (held_tx, mut held) = unbounded_channel();
        let setup = Duration::from_millis(30);
        let gatekeeper = tokio::spawn(fake_clan(listener, setup, held_tx));

        let gauge = Gauge::default();
        let own = IpAddr::from([127, 9, 1, 1]);
        let rng = ChaCha8Rng::seed_from_u64(1);
        let mut phone = PhoneSocket::new(own, Way::Connect, gauge.clone(), rng);
        registered_now(&mut phone, Some(clan)).await;
        let gatekeeper_side = tokio::time::timeout(WAIT, held.recv())
            .await
            .expect("the phone connects again")
            .unwrap();
        assert_eq!(
            gatekeeper_side.peer_addr().unwrap().ip(),
            own,
            "from its own IP"
        );
        let deadline = Instant::now() + WAIT;
        while gauge.now() == 0 {
            assert!(
                Instant::now() < deadline,
                "the socket never came into service"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (record, _) = phone.end().await;
        assert_eq!(gauge.now(), 0, "ended: no longer in service");
        assert_eq!(record.rejected, 1, "{record:?}");
        assert_eq!(record.closed_by_gatekeeper, 0);
        assert!(record.errors.is_empty(), "{:?}", record.errors);
        assert_eq!(record.held_at_end, Some(clan));
        let [time] = record.times_to_service[..] else {
            panic!("one time to service: {record:?}");
        };
        // The reset, a back-off of 25 to 50 ms, the set-up: at least the back-off's half and
        // the set-up, and well under the bound.
        assert!(
            time >= setup + crate::phone_timing::FIRST_BACKOFF / 2,
            "{time:?}"
        );
        assert!(time < WAIT, "{time:?}");
        gatekeeper.abort();
    }

    #[tokio::test]
    async fn a_socket_the_gatekeeper_closes_is_counted_and_won_back() {
        let listener = TcpListener::bind("127.0.9.2:0").await.unwrap();
        let clan = listener.local_addr().unwrap();
        let (held_tx, mut held) = unbounded_channel();
        let gatekeeper = tokio::spawn(fake_clan(listener, Duration::ZERO, held_tx));
        let gauge = Gauge::default();
        let rng = ChaCha8Rng::seed_from_u64(2);
        let own = IpAddr::from([127, 9, 2, 1]);
        let mut phone = PhoneSocket::new(own, Way::Connect, gauge.clone(), rng);
        registered_now(&mut phone, Some(clan)).await;
        let first = tokio::time::timeout(WAIT, held.recv()).await.unwrap();
        drop(first); // the gatekeeper closes the socket in service
        let second = tokio::time::timeout(WAIT, held.recv()).await.unwrap();
        assert!(second.is_some(), "the phone connected again");
        let deadline = Instant::now() + WAIT;
        while gauge.now() == 0 {
            assert!(Instant::now() < deadline, "never back in service");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (record, _) = phone.end().await;
        assert_eq!(record.closed_by_gatekeeper, 1, "{record:?}");
        assert_eq!(
            record.rejected, 1,
            "only the very first connection was reset"
        );
        assert_eq!(
            record.times_to_service.len(),
            1,
            "measured once a registration"
        );
        gatekeeper.abort();
    }

    #[tokio::test]
    async fn no_attempt_starts_after_the_give_up_time() {
        // Nothing listens: every connection is refused.
        let nowhere = {
            let socket = std::net::TcpListener::bind("127.0.9.3:0").unwrap();
            socket.local_addr().unwrap()
        };
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut record = Record::default();
        let started = Instant::now();
        let give_up = started + Duration::from_millis(300);
        let got = tokio::time::timeout(
            WAIT,
            connect_until_service(
                IpAddr::from([127, 9, 3, 1]),
                nowhere,
                (give_up, true),
                &mut rng,
                &mut record,
            ),
        )
        .await
        .expect("bounded by the give-up time");
        assert!(got.is_none());
        // 50, 100, 200 ms bases: 3 to 6 attempts fit in 300 ms, however the jitter falls.
        assert!((3..=8).contains(&record.rejected), "{record:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test]
    async fn the_listener_hands_each_connection_to_the_phone_of_its_address() {
        let listener = Listener::open(SLOW_BACKLOG, Family::V4).unwrap();
        let port = listener.port();
        let ips: Vec<Ipv4Addr> = (1..=3).map(|i| Ipv4Addr::new(127, 9, 4, i)).collect();
        let (acceptor, mut inboxes) = listener.inboxes(ips.iter().map(|&ip| IpAddr::V4(ip)));
        let counts = acceptor.counts();
        let accepting = tokio::spawn(acceptor.run(Duration::ZERO));
        let clan = IpAddr::from([127, 0, 9, 4]);
        let connect = |to: Ipv4Addr| async move {
            let socket = TcpSocket::new_v4().unwrap();
            socket.bind(SocketAddr::new(clan, 0)).unwrap();
            socket.connect(SocketAddr::from((to, port))).await.unwrap()
        };
        // To the phones in reverse order, and once to an address no phone has.
        let mut gatekeeper_sides = Vec::new();
        for ip in ips.iter().rev() {
            gatekeeper_sides.push(connect(*ip).await);
        }
        let made: Vec<SocketAddr> = gatekeeper_sides
            .iter()
            .map(|s| s.local_addr().unwrap())
            .collect();
        let mut stranger = connect(Ipv4Addr::new(127, 9, 4, 9)).await;
        let mut octet = [0u8; 1];
        let closed = tokio::time::timeout(WAIT, stranger.read(&mut octet))
            .await
            .unwrap();
        assert!(matches!(closed, Ok(0) | Err(_)), "closed: {closed:?}");
        for (ip, inbox) in ips.iter().zip(&mut inboxes) {
            let stream = tokio::time::timeout(WAIT, inbox.0.recv())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(stream.local_addr().unwrap(), SocketAddr::from((*ip, port)));
            assert!(
                made.contains(&stream.peer_addr().unwrap()),
                "from the C-LAN's IP"
            );
            assert_eq!(stream.peer_addr().unwrap().ip(), clan);
            assert!(inbox.0.try_recv().is_err(), "one connection each");
        }
        assert_eq!(counts.handed.load(Ordering::Relaxed), 3);
        assert_eq!(counts.closed.load(Ordering::Relaxed), 1);
        accepting.abort();
    }

    #[tokio::test]
    async fn a_tts_phone_is_in_service_on_the_frame_and_measures_from_its_rcf() {
        let listener = Listener::open(SLOW_BACKLOG, Family::V4).unwrap();
        let port = listener.port();
        let ip = Ipv4Addr::new(127, 9, 5, 1);
        let (acceptor, mut inboxes) = listener.inboxes([IpAddr::V4(ip)]);
        let accepting = tokio::spawn(acceptor.run(Duration::ZERO));
        let gauge = Gauge::default();
        let rng = ChaCha8Rng::seed_from_u64(5);
        let inbox = inboxes.pop().unwrap();
        let mut phone = PhoneSocket::new(IpAddr::V4(ip), Way::Accept(inbox), gauge.clone(), rng);
        registered_now(&mut phone, None).await;
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind("127.0.9.5:0".parse().unwrap()).unwrap();
        let mut gatekeeper_side = socket.connect(SocketAddr::from((ip, port))).await.unwrap();
        let setup = Duration::from_millis(40);
        tokio::time::sleep(setup).await;
        gatekeeper_side.write_all(&SERVICE_FRAME).await.unwrap();
        let deadline = Instant::now() + WAIT;
        while gauge.now() == 0 {
            assert!(Instant::now() < deadline, "never in service");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (record, _) = phone.end().await;
        assert_eq!(
            record.held_at_end,
            Some(gatekeeper_side.local_addr().unwrap())
        );
        let [time] = record.times_to_service[..] else {
            panic!("{record:?}");
        };
        assert!(time >= setup && time < WAIT, "{time:?}");
        accepting.abort();
    }

    #[tokio::test]
    async fn a_tts_phone_takes_a_newer_connection_over_one_still_waiting_for_its_frame() {
        let listener = TcpListener::bind("127.0.9.7:0").await.unwrap();
        let at = listener.local_addr().unwrap();
        let pair = || async {
            let gatekeeper_side = TcpStream::connect(at).await.unwrap();
            let (phone_side, _) = listener.accept().await.unwrap();
            (gatekeeper_side, phone_side)
        };
        let (mut older, older_phone) = pair().await;
        let (mut newer, newer_phone) = pair().await;
        let (tx, rx) = unbounded_channel();
        let mut inbox = Inbox(rx);
        tx.send(older_phone).unwrap();
        let waiting = tokio::spawn(async move { accept_until_service(&mut inbox, true).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        tx.send(newer_phone).unwrap();
        newer.write_all(&SERVICE_FRAME).await.unwrap();
        let held = tokio::time::timeout(WAIT, waiting).await.unwrap().unwrap();
        assert_eq!(
            held.stream.peer_addr().unwrap(),
            newer.local_addr().unwrap()
        );
        let mut octet = [0u8; 1];
        let dropped = tokio::time::timeout(WAIT, older.read(&mut octet))
            .await
            .unwrap();
        assert!(matches!(dropped, Ok(0) | Err(_)), "the older one is closed");
    }

    #[tokio::test]
    async fn a_slow_acceptor_takes_each_connection_a_delay_after_the_last() {
        let listener = Listener::open(SLOW_BACKLOG, Family::V4).unwrap();
        let port = listener.port();
        let ips: Vec<Ipv4Addr> = (1..=4).map(|i| Ipv4Addr::new(127, 9, 6, i)).collect();
        let (acceptor, mut inboxes) = listener.inboxes(ips.iter().map(|&ip| IpAddr::V4(ip)));
        let delay = Duration::from_millis(60);
        let started = Instant::now();
        let accepting = tokio::spawn(acceptor.run(delay));
        // Every connection is established by the kernel at once (the backlog holds them).
        let mut sides = Vec::new();
        for ip in &ips {
            let connect = TcpStream::connect(SocketAddr::from((*ip, port)));
            sides.push(tokio::time::timeout(WAIT, connect).await.unwrap().unwrap());
        }
        for inbox in &mut inboxes {
            tokio::time::timeout(WAIT, inbox.0.recv())
                .await
                .unwrap()
                .unwrap();
        }
        let took = started.elapsed();
        // A sleep before each of 4 accepts: at least 3 delays, loosely (timers may be late,
        // never early).
        assert!(took >= delay * 3, "{took:?}");
        assert!(took < WAIT, "{took:?}");
        accepting.abort();
    }
}
