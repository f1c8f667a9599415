//! Socket mode's glue: the TCP listeners on every C-LAN's signalling address, one task per
//! connection, and the TTS connects (started by the state task itself, a task waiting only
//! for those still in progress). It owns the file descriptors and decides nothing: every
//! event goes to the state task, which asks the core ([`Gatekeeper::accept`] and friends)
//! and carries out the [`Command`]s that come back.
//!
//! ```text
//!   listener task ──Accepted(stream)──▶ ┐
//!   connection task ──Read / Closed───▶ ├─ mpsc ─▶ state task ─▶ Gatekeeper
//!   connect task ──Connected / Failed─▶ ┘              │
//!   connection task ◀──Order (Send / Close)────────────┘  (Command)
//! ```
//!
//! Out of file descriptors, a listener cannot even accept to refuse: it keeps one
//! descriptor in reserve (`/dev/null`), gives it up to accept and reset the waiting
//! connection, counts it, and takes the reserve back — so the backlog drains, the refusals
//! are counted, and RAS (whose sockets are already open) goes on.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use socket2::{Domain, Protocol, SockRef, Socket, TcpKeepalive, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::config::Config;
use crate::gatekeeper::{Closing, Command, ConnectionId, Gatekeeper, Refusal};
use crate::tpkt;

/// Connections the listener's kernel queue holds before the gatekeeper accepts them.
const BACKLOG: i32 = 1024;

/// Events queued for the state task before connection tasks wait (they then stop reading,
/// so a phone that floods its socket is slowed by TCP, not buffered here).
const EVENTS_QUEUED: usize = 8192;

/// Descriptors kept free of signalling connections: RAS, the admin port, state files and
/// the runtime need some even when phones would take every one.
pub(crate) const HEADROOM: u64 = 64;

/// Octets one read takes from a socket.
const READ_OCTETS: usize = 1024;

/// What the tasks tell the state task.
#[derive(Debug)]
pub(crate) enum SocketEvent {
    /// A listener accepted a connection.
    Accepted {
        local: SocketAddr,
        from: SocketAddr,
        stream: TcpStream,
    },
    /// A listener had to refuse one (out of file descriptors).
    Refused(Refusal),
    /// A TTS connect completed.
    Connected(ConnectionId),
    /// A TTS connect was refused or failed.
    ConnectFailed(ConnectionId),
    /// Octets read, as TPKT made them out, with the payloads of the frames that ended in
    /// them (routed calls only; otherwise none are kept).
    Read(
        ConnectionId,
        Result<tpkt::Read, tpkt::FrameError>,
        Vec<Bytes>,
    ),
    /// The phone's side closed it, or it failed.
    Closed(ConnectionId, Closing),
}

/// What the state task tells a connection task.
#[derive(Debug)]
enum Order {
    Send(Bytes),
    Close { reset: bool },
}

/// Per connection settings.
#[derive(Debug, Clone, Copy)]
struct Settings {
    max_frame: u16,
    keepalive: Duration,
    /// Keep the frames' payloads for the core (routed calls read them).
    frames: bool,
}

impl Settings {
    fn of(config: &Config) -> Settings {
        Settings {
            max_frame: config.limits.max_frame_octets,
            keepalive: config.gatekeeper.keepalive,
            frames: config.gatekeeper.sockets == crate::config::SocketMode::Tcp
                && config.gatekeeper.call_signalling == crate::config::CallSignalling::Routed,
        }
    }
}

/// A connection accepted or connected in this round of the state task, not yet handed to
/// its task: what the core sends on it meanwhile — the empty frame that puts a socket in
/// service, when its establishment takes no time — is written here at once.
struct Fresh {
    stream: TcpStream,
    inbox: mpsc::UnboundedReceiver<Order>,
}

/// The state task's side: a handle per live connection.
pub(crate) struct Connections {
    orders: HashMap<ConnectionId, mpsc::UnboundedSender<Order>>,
    /// Connections of this round, handed to their tasks at the end of [`Connections::execute`].
    fresh: HashMap<ConnectionId, Fresh>,
    events: mpsc::Sender<SocketEvent>,
    settings: Settings,
    /// The most connections held at once: the open-file limit less [`HEADROOM`]. Past it a
    /// connection is refused (`descriptors`) before the process runs out.
    max_connections: usize,
}

/// Binds a listener on every C-LAN's signalling address (socket mode only).
pub(crate) fn listen(
    config: &Config,
) -> Result<Vec<(SocketAddr, TcpListener)>, super::ServerError> {
    config
        .clans
        .iter()
        .flat_map(|clan| clan.signal_addresses().map(move |address| (clan, address)))
        .map(|(clan, address)| {
            let listener = bind_listener(address).map_err(|source| super::ServerError::Bind {
                address,
                role: format!("C-LAN {} call signalling (TCP)", clan.name),
                source,
            })?;
            let local = listener.local_addr().unwrap_or(address);
            Ok((local, listener))
        })
        .collect()
}

fn bind_listener(address: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(
        Domain::for_address(address),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&address.into())?;
    socket.listen(BACKLOG)?;
    TcpListener::from_std(socket.into())
}

impl Connections {
    /// Starts a task per listener; returns the state task's side and where events arrive.
    pub fn start(
        config: &Config,
        listeners: Vec<(SocketAddr, TcpListener)>,
        open_files: Option<u64>,
        tasks: &mut tokio::task::JoinSet<()>,
    ) -> (Connections, mpsc::Receiver<SocketEvent>) {
        let (events, receiver) = mpsc::channel(EVENTS_QUEUED);
        let reserve: Reserve =
            std::sync::Arc::new(std::sync::Mutex::new(std::fs::File::open("/dev/null").ok()));
        for (local, listener) in listeners {
            tasks.spawn(accept_loop(
                local,
                listener,
                events.clone(),
                reserve.clone(),
            ));
        }
        let settings = Settings::of(config);
        let max_connections = open_files.map_or(usize::MAX, |limit| {
            usize::try_from(limit.saturating_sub(HEADROOM)).unwrap_or(usize::MAX)
        });
        let connections = Connections {
            orders: HashMap::new(),
            fresh: HashMap::new(),
            events,
            settings,
            max_connections,
        };
        (connections, receiver)
    }

    /// A reloaded configuration's `[limits] max_frame_octets` and `keepalive_s`: for
    /// connections accepted or opened from now on (one already open keeps the bounds it
    /// started with).
    pub fn reconfigure(&mut self, config: &Config) {
        self.settings = Settings::of(config);
    }

    /// Hands one event to the core.
    pub fn handle(&mut self, gatekeeper: &mut Gatekeeper, now: Instant, event: SocketEvent) {
        match event {
            SocketEvent::Accepted { stream, .. } if self.orders.len() >= self.max_connections => {
                reset(stream);
                gatekeeper.refused(Refusal::Descriptors);
            }
            SocketEvent::Accepted {
                local,
                from,
                stream,
            } => match gatekeeper.accept(now, local, from) {
                Ok(id) => self.hold(id, stream),
                Err(_) => reset(stream),
            },
            SocketEvent::Refused(reason) => gatekeeper.refused(reason),
            SocketEvent::Connected(id) => gatekeeper.connected(now, id),
            SocketEvent::ConnectFailed(id) => {
                self.orders.remove(&id);
                gatekeeper.connect_failed(now, id);
            }
            SocketEvent::Read(id, read, frames) => {
                // The frames that ended before anything went wrong first, then the count
                // (or the bad frame, which closes the connection).
                for frame in frames {
                    gatekeeper.frame(now, id, &frame);
                }
                gatekeeper.received(now, id, read);
            }
            SocketEvent::Closed(id, how) => {
                self.orders.remove(&id);
                gatekeeper.closed(now, id, how);
            }
        }
    }

    /// Carries out what the core asked for, then hands this round's connections to their
    /// tasks; whether there was anything to do (then the connection tasks have work, and
    /// the state task should let them run).
    pub fn execute(&mut self, gatekeeper: &mut Gatekeeper) -> bool {
        let mut any = !self.fresh.is_empty();
        // A connect refused for want of descriptors makes the core ask for the next one at
        // once: carry that out too (each round takes the phone to a C-LAN it has not
        // tried, so the rounds are few).
        loop {
            let commands = gatekeeper.take_commands();
            if commands.is_empty() {
                break;
            }
            any = true;
            self.carry_out(gatekeeper, commands);
        }
        for (id, Fresh { stream, inbox }) in self.fresh.drain() {
            tokio::spawn(drive(id, stream, inbox, self.events.clone(), self.settings));
        }
        any
    }

    /// Holds a connection just accepted or connected until the end of the round.
    fn hold(&mut self, id: ConnectionId, stream: TcpStream) {
        let (orders, inbox) = mpsc::unbounded_channel();
        self.orders.insert(id, orders);
        self.fresh.insert(id, Fresh { stream, inbox });
    }

    /// Sends `payload` on a connection: written at once when the connection is of this
    /// round and its send buffer takes it whole (a fresh socket's always does), otherwise
    /// (what is left of it) through its task, which writes what it is given in order.
    ///
    /// The write is the system call itself (`send`, non-blocking): tokio's `try_write`
    /// answers "would block" without trying until the runtime's poller has seen the new
    /// socket writable, and that waited a round of the state task — under a storm of RRQs,
    /// a TTS phone's frame went out 100 ms and more after its handshake.
    fn send(&mut self, id: ConnectionId, payload: Bytes) {
        let rest = match self.fresh.get(&id) {
            Some(fresh) => match SockRef::from(&fresh.stream).send(&payload) {
                Ok(written) if written == payload.len() => return,
                Ok(written) => payload.slice(written..),
                // The task's own write finds out what went wrong, and reports it.
                Err(_) => payload,
            },
            None => payload,
        };
        if let Some(orders) = self.orders.get(&id) {
            // A task that already ended has reported (or will report) its end.
            let _ = orders.send(Order::Send(rest));
        }
    }

    fn carry_out(&mut self, gatekeeper: &mut Gatekeeper, commands: Vec<Command>) {
        for command in commands {
            match command {
                Command::Connect { id, .. } if self.orders.len() >= self.max_connections => {
                    // No descriptor to spare: the attempt fails and the phone's set-up moves
                    // on (and backs off), as when the connect itself fails.
                    gatekeeper.refused(Refusal::Descriptors);
                    gatekeeper.connect_failed(Instant::now(), id);
                }
                Command::Connect { id, from, to } => {
                    self.connect(gatekeeper, id, SocketAddr::new(from, 0), to);
                }
                Command::Send { id, payload } => self.send(id, payload),
                Command::Close { id, reset: rst } => {
                    if let Some(fresh) = self.fresh.remove(&id) {
                        self.orders.remove(&id);
                        if rst {
                            reset(fresh.stream);
                        }
                    } else if let Some(orders) = self.orders.remove(&id) {
                        let _ = orders.send(Order::Close { reset: rst });
                    }
                }
            }
        }
    }
}

impl Connections {
    /// Starts a TTS connect from `from` (the C-LAN's IP) to `to` (the phone) here, in the
    /// state task: a connect is one non-blocking system call. When the handshake is already
    /// over on its return — on loopback and on a fast LAN it is — the core hears at once,
    /// within the same round of commands, and the C-LAN's establishment slot goes to the
    /// next set-up without a trip through the runtime; a refusal is likewise told at once.
    /// Only a connect still in progress gets a task that waits for it.
    fn connect(
        &mut self,
        gatekeeper: &mut Gatekeeper,
        id: ConnectionId,
        from: SocketAddr,
        to: SocketAddr,
    ) {
        match start_connect(from, to) {
            Ok(Connecting::Established(stream)) => {
                self.hold(id, stream);
                gatekeeper.connected(Instant::now(), id);
            }
            Ok(Connecting::InProgress(stream)) => {
                let (orders, inbox) = mpsc::unbounded_channel();
                self.orders.insert(id, orders);
                let events = self.events.clone();
                tokio::spawn(connect(id, stream, inbox, events, self.settings));
            }
            Err(error) => {
                // The socket is already gone: the core may give the slot on at once.
                tracing::debug!(connection = %id, %from, %to, %error, "connect failed");
                gatekeeper.connect_failed(Instant::now(), id);
            }
        }
    }
}

/// Closes a stream with RST (linger 0): a refusal the phone sees at once.
fn reset(stream: TcpStream) {
    let _ = SockRef::from(&stream).set_linger(Some(Duration::ZERO));
    drop(stream);
}

/// Is this accept error a lack of file descriptors (of the process or the system)?
fn out_of_descriptors(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// The descriptor held in reserve for refusing connections when none is left, shared by
/// every listener (each one more held would be one phone fewer served).
type Reserve = std::sync::Arc<std::sync::Mutex<Option<std::fs::File>>>;

/// Accepts connections on one listener until the server stops.
async fn accept_loop(
    local: SocketAddr,
    listener: TcpListener,
    events: mpsc::Sender<SocketEvent>,
    reserve: Reserve,
) {
    loop {
        match listener.accept().await {
            Ok((stream, from)) => {
                let from = SocketAddr::new(from.ip().to_canonical(), from.port());
                let event = SocketEvent::Accepted {
                    local,
                    from,
                    stream,
                };
                if events.send(event).await.is_err() {
                    return;
                }
            }
            Err(error) if out_of_descriptors(&error) => {
                // Give up the reserve to accept and reset the connection that waits, so
                // the backlog drains and the phone hears at once; then take it back.
                let spare = reserve.lock().map(|mut r| r.take()).unwrap_or(None);
                let mut refused = false;
                if spare.is_some() {
                    drop(spare);
                    if let Ok((stream, _)) = listener.accept().await {
                        reset(stream);
                        refused = true;
                    }
                }
                if let Ok(mut held) = reserve.lock() {
                    if held.is_none() {
                        *held = std::fs::File::open("/dev/null").ok();
                    }
                }
                if refused {
                    if events
                        .send(SocketEvent::Refused(Refusal::Descriptors))
                        .await
                        .is_err()
                    {
                        return;
                    }
                } else {
                    // No reserve to refuse with: the connection waits in the backlog until
                    // a descriptor frees up.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            Err(error) => {
                // ECONNABORTED and the like: that connection is gone, the listener is not.
                tracing::debug!(%local, %error, "accept failed");
            }
        }
    }
}

/// Turns TCP keep-alive on: probes after `keepalive` of silence, as often again, three
/// unanswered close the socket (reported as [`Closing::KeepAlive`]).
fn keep_alive(stream: &TcpStream, keepalive: Duration) {
    let settings = TcpKeepalive::new()
        .with_time(keepalive)
        .with_interval(keepalive);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let settings = settings.with_retries(3);
    let _ = SockRef::from(stream).set_tcp_keepalive(&settings);
}

/// Where a connect stands when the system call returns.
enum Connecting {
    /// The handshake is over.
    Established(TcpStream),
    /// SYN sent, no answer yet.
    InProgress(TcpStream),
}

/// Opens a socket on `from` and starts its connect to `to`; an error is a connect that
/// failed at once (no descriptor, refused).
fn start_connect(from: SocketAddr, to: SocketAddr) -> io::Result<Connecting> {
    let socket = open_from(from)?;
    match socket.connect(&to.into()) {
        Ok(()) => {}
        Err(error) if error.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(error) => return Err(error),
    }
    if let Some(error) = socket.take_error()? {
        return Err(error);
    }
    // A peer name exists once the handshake is over (not in SYN-SENT).
    let established = socket.peer_addr().is_ok();
    let stream = TcpStream::from_std(std::net::TcpStream::from(socket))?;
    Ok(if established {
        Connecting::Established(stream)
    } else {
        Connecting::InProgress(stream)
    })
}

/// A TTS connect still in progress: waits for its outcome (or the core giving up on it),
/// tells the state task, then lives as a connection.
async fn connect(
    id: ConnectionId,
    stream: TcpStream,
    mut inbox: mpsc::UnboundedReceiver<Order>,
    events: mpsc::Sender<SocketEvent>,
    settings: Settings,
) {
    let outcome = tokio::select! {
        outcome = handshake(&stream) => outcome,
        // The core gave up on it (timeout, unregistration).
        _ = inbox.recv() => Err(io::Error::from(io::ErrorKind::Interrupted)),
    };
    match outcome {
        Ok(()) => {
            if events.send(SocketEvent::Connected(id)).await.is_ok() {
                drive(id, stream, inbox, events, settings).await;
            }
        }
        Err(error) => {
            tracing::debug!(connection = %id, %error, "connect failed or given up");
            // The socket is gone before the core hears so: the core holds the C-LAN's
            // establishment slot until then.
            drop(stream);
            let _ = events.send(SocketEvent::ConnectFailed(id)).await;
        }
    }
}

/// Completes when the handshake of a connect in progress is over, or failed.
async fn handshake(stream: &TcpStream) -> io::Result<()> {
    loop {
        stream.writable().await?;
        if let Some(error) = stream.take_error()? {
            return Err(error);
        }
        // Readiness can be spurious: still in SYN-SENT, clear it and wait again.
        let established = stream.try_io(tokio::io::Interest::WRITABLE, || {
            stream.peer_addr().map(|_| ()).map_err(|error| {
                if error.kind() == io::ErrorKind::NotConnected {
                    io::ErrorKind::WouldBlock.into()
                } else {
                    error
                }
            })
        });
        match established {
            Ok(()) => return Ok(()),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
            Err(error) => return Err(error),
        }
    }
}

/// A TCP socket bound to `from` (port 0), its port chosen only at connect time
/// (`IP_BIND_ADDRESS_NO_PORT`), so thousands of connects from one C-LAN IP to different
/// phones can share ports.
fn open_from(from: SocketAddr) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(from), Type::STREAM, Some(Protocol::TCP))?;
    #[cfg(target_os = "linux")]
    bind_address_no_port(&socket);
    socket.set_nonblocking(true)?;
    socket.bind(&from.into())?;
    Ok(socket)
}

/// `IP_BIND_ADDRESS_NO_PORT`, best effort: without it each connect holds a port of the
/// C-LAN's IP from bind on, which only matters past some 28,000 connects per C-LAN.
#[cfg(target_os = "linux")]
fn bind_address_no_port(socket: &Socket) {
    crate::sockets::set_int_option(socket, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1);
}

/// One connection's life: reads what the phone sends through a TPKT reader and reports it,
/// writes what the core sends, and ends on the core's Close (reporting nothing) or when the
/// phone's side ends it (reporting how).
async fn drive(
    id: ConnectionId,
    mut stream: TcpStream,
    mut inbox: mpsc::UnboundedReceiver<Order>,
    events: mpsc::Sender<SocketEvent>,
    settings: Settings,
) {
    keep_alive(&stream, settings.keepalive);
    // Nagle off, as H.323 stacks have it (H323Plus: "we have disabled the Nagle TCP delay
    // algorithm"): a relayed Alerting and the Connect behind it must not wait for an ACK.
    let _ = stream.set_nodelay(true);
    let mut reader = tpkt::Assembler::new(settings.max_frame);
    let mut buffer = [0u8; READ_OCTETS];
    // After a bad frame nothing more is read; the core's Close follows.
    let mut reading = true;
    let ended = loop {
        tokio::select! {
            order = inbox.recv() => match order {
                Some(Order::Send(payload)) => {
                    if let Err(error) = stream.write_all(&payload).await {
                        break Some(closing_of(&error));
                    }
                }
                Some(Order::Close { reset: true }) => {
                    reset(stream);
                    return;
                }
                Some(Order::Close { reset: false }) | None => return,
            },
            read = stream.read(&mut buffer), if reading => match read {
                Ok(0) => break Some(Closing::Fin),
                Ok(n) => {
                    let mut frames = Vec::new();
                    let read = reader.read(&buffer[..n], &mut frames);
                    if !settings.frames {
                        frames.clear();
                    }
                    reading = read.is_ok();
                    if events.send(SocketEvent::Read(id, read, frames)).await.is_err() {
                        return;
                    }
                }
                Err(error) => break Some(closing_of(&error)),
            },
        }
    };
    if let Some(how) = ended {
        let _ = events.send(SocketEvent::Closed(id, how)).await;
    }
}

/// How a read or write error ended a socket.
fn closing_of(error: &io::Error) -> Closing {
    if error.raw_os_error() == Some(libc::ETIMEDOUT) {
        Closing::KeepAlive
    } else {
        Closing::Reset
    }
}
