//! The tokio glue around the protocol core: one UDP socket on the discovery address and one
//! on every C-LAN address (an RRQ is served by the C-LAN it arrived at), optional multicast
//! discovery, the admin HTTP port, in socket mode a TCP listener on every C-LAN's
//! signalling address (`signalling.rs`), and graceful shutdown.
//!
//! ```text
//!   UDP sockets ◀──readiness──▶ state task (owns Gatekeeper): try_recv_from → handle → try_send_to
//!   admin HTTP  ──handlers────▶ mpsc ──▶ state task ──oneshot──▶ JSON   (admin thread)
//!   state task  ──a round's events, one batch──▶ broadcast ──▶ /api/events watchers
//!   TCP tasks   ──events──────▶ mpsc ──▶ state task ──Command──▶ connection tasks
//! ```
//!
//! One task owns the [`Gatekeeper`]; nothing else touches it, so there are no locks. That
//! task also reads the RAS sockets itself: woken when any is readable, it drains each in
//! turn (a bounded batch per socket, so timers and the admin port are never starved) and
//! answers every datagram before reading the next. No channel hop and no second task sit
//! between a request and its reply, which is the same work per datagram as the bench's echo
//! ceiling. `rasgk serve` runs it on one thread (a current-thread runtime): a second
//! worker only woke for the send-buffer room every reply frees. The admin port has a thread
//! of its own (`admin::AdminThread`), so its JSON and its watchers' writes are not RAS's.

mod admin;
pub(crate) mod batch;
mod metrics;
mod reload;
mod signalling;
pub mod state_file;
mod tap;

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use tokio::net::UdpSocket;
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::config::Config;

use crate::gatekeeper::events::Event;
use crate::gatekeeper::{
    CallEntry, ClanView, Gatekeeper, Placement, RebalanceView, RegionView, RegistrationView,
    StartError, Transmit, TrunkView, UnknownClan, UnknownEndpoint,
};
use crate::ras::Alias;

pub use crate::sockets::{bind_udp, raise_open_file_limit};
pub use admin::AdminError;
pub use state_file::{StateFile, StateFileError};

use crate::gatekeeper::state::{Restored, State};

/// Why the server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The configuration cannot run.
    #[error(transparent)]
    Start(#[from] StartError),
    /// A socket cannot be bound.
    #[error("cannot bind the RAS socket {address} ({role}): {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Discovery, a C-LAN's name, or multicast.
        role: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The admin port cannot be bound.
    #[error("cannot bind the admin port {address} ([admin] listen): {source}")]
    Admin {
        /// The address.
        address: SocketAddr,
        /// What the system said.
        source: std::io::Error,
    },
}

/// What the admin port asks the state task (each with where to send the answer).
pub(crate) enum Query {
    Clans(oneshot::Sender<Vec<ClanView>>),
    Regions(oneshot::Sender<Vec<RegionView>>),
    Registrations(oneshot::Sender<Vec<RegistrationView>>),
    Calls(oneshot::Sender<Vec<CallEntry>>),
    Trunks(oneshot::Sender<Vec<TrunkView>>),
    Placement {
        ip: IpAddr,
        aliases: Vec<Alias>,
        reply: oneshot::Sender<Placement>,
    },
    Metrics(oneshot::Sender<metrics::Figures>),
    Rebalance(oneshot::Sender<RebalanceView>),
    SetManyInService {
        clans: Vec<String>,
        in_service: bool,
        reply: oneshot::Sender<Result<Vec<ClanView>, UnknownClan>>,
    },
    SetCap {
        clan: String,
        max_sockets: u32,
        reply: oneshot::Sender<Result<ClanView, UnknownClan>>,
    },
    Unregister {
        endpoint_id: String,
        reply: oneshot::Sender<Result<(), UnknownEndpoint>>,
    },
    RequestInfo {
        endpoint_id: String,
        reply: oneshot::Sender<Result<u16, UnknownEndpoint>>,
    },
    Withhold {
        endpoint_id: String,
        request: crate::ras::MessageKind,
        reply: oneshot::Sender<Result<SocketAddr, UnknownEndpoint>>,
    },
    Alternate {
        endpoint_id: String,
        reply: oneshot::Sender<Result<Option<String>, UnknownEndpoint>>,
    },
    Restart(oneshot::Sender<Result<(), String>>),
}

/// A server with every socket bound, ready to [`run`](Server::run).
pub struct Server {
    gatekeeper: Gatekeeper,
    /// Every RAS socket by its local address (discovery first, then C-LANs); replies leave
    /// from the socket of the address the request arrived at.
    sockets: Sockets,
    /// Sockets to read, with the local address a datagram is reported at (the multicast
    /// socket reports the group).
    readers: Vec<(SocketAddr, Arc<UdpSocket>)>,
    admin: tokio::net::TcpListener,
    admin_address: SocketAddr,
    /// `--state FILE`, when given.
    state_file: Option<StateFile>,
    /// The `--config FILE` SIGHUP reads again, when there is one.
    config_path: Option<std::path::PathBuf>,
    /// Datagrams to send as soon as it runs (URQs of a restore).
    pending: Vec<Transmit>,
    /// Socket mode: a TCP listener on every C-LAN's signalling address.
    listeners: Vec<(SocketAddr, tokio::net::TcpListener)>,
    /// The open-file limit in force, when known (bounds the connections held).
    open_files: Option<u64>,
}

impl Server {
    /// Binds the discovery socket, one socket per C-LAN, the multicast socket when asked
    /// for, and the admin port. Must run inside a tokio runtime.
    pub async fn bind(mut config: Config) -> Result<Server, ServerError> {
        if config.gatekeeper.seed.is_none() {
            let seed = rand::random::<u64>();
            tracing::info!(
                seed,
                "no seed in the configuration: AGL offsets seeded at random"
            );
            config.gatekeeper.seed = Some(seed);
        }
        let mut sockets = Sockets::default();
        let mut readers = Vec::new();
        let mut roles = vec![(config.gatekeeper.discovery, "discovery".to_string())];
        roles.extend(
            config
                .gatekeeper
                .discovery6
                .map(|address| (address, "discovery6".to_string())),
        );
        roles.extend(config.clans.iter().flat_map(|clan| {
            clan.ras_addresses()
                .map(move |address| (address, format!("C-LAN {}", clan.name)))
        }));
        for (address, role) in roles {
            let socket = crate::sockets::bind_udp(address).map_err(|source| ServerError::Bind {
                address,
                role,
                source,
            })?;
            let socket = Arc::new(socket);
            let local = socket.local_addr().unwrap_or(address);
            sockets.insert(local, socket.clone());
            readers.push((local, socket));
        }
        if config.gatekeeper.multicast {
            let group = SocketAddr::from((
                crate::gatekeeper::MULTICAST_GROUP,
                crate::gatekeeper::MULTICAST_PORT,
            ));
            let socket = crate::sockets::bind_multicast(config.gatekeeper.discovery.ip()).map_err(
                |source| ServerError::Bind {
                    address: group,
                    role: "multicast discovery".to_string(),
                    source,
                },
            )?;
            readers.push((group, Arc::new(socket)));
        }
        let mut open_files = None;
        let listeners = if config.gatekeeper.sockets == crate::config::SocketMode::Tcp {
            match crate::sockets::raise_open_file_limit() {
                Ok((soft, hard)) => {
                    tracing::info!(
                        open_files = soft,
                        hard_limit = hard,
                        signalling_connections = soft.saturating_sub(signalling::HEADROOM),
                        "open-file limit raised as far as the hard limit (one descriptor a socket)"
                    );
                    open_files = Some(soft);
                }
                Err(error) => tracing::warn!(%error, "cannot raise the open-file limit"),
            }
            signalling::listen(&config)?
        } else {
            Vec::new()
        };
        let admin_address = config.admin.listen;
        let admin = tokio::net::TcpListener::bind(admin_address)
            .await
            .map_err(|source| ServerError::Admin {
                address: admin_address,
                source,
            })?;
        let admin_address = admin.local_addr().unwrap_or(admin_address);
        let gatekeeper = Gatekeeper::new(config)?;
        Ok(Server {
            gatekeeper,
            sockets,
            readers,
            admin,
            admin_address,
            state_file: None,
            config_path: None,
            pending: Vec::new(),
            listeners,
            open_files,
        })
    }

    /// Reads `path` again on SIGHUP and runs on it (see [`reload`]).
    pub fn reload_on_sighup(&mut self, path: std::path::PathBuf) {
        self.config_path = Some(path);
    }

    /// Keeps the state in `file` while it runs (and at shutdown), starting from `state`, the
    /// file's contents at start, when there is one. What did not fit the configuration is
    /// logged as a warning, one line each.
    pub fn keep_state(&mut self, file: StateFile, state: Option<&State>) -> Option<Restored> {
        let restored = state.and_then(|state| {
            let wall = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            let config = self.gatekeeper.config().clone();
            // The configuration started once already, so it starts again.
            let (gatekeeper, restored) =
                Gatekeeper::restore(config, state, Instant::now(), wall).ok()?;
            self.gatekeeper = gatekeeper;
            Some(restored)
        });
        if let Some(restored) = &restored {
            tracing::info!(
                path = %file.path.display(),
                registrations = restored.registrations,
                reservations = restored.reservations,
                expired = restored.expired,
                dropped = restored.dropped.len(),
                "state restored"
            );
            for line in &restored.dropped {
                tracing::warn!(path = %file.path.display(), "not restored: {line}");
            }
            self.pending.extend(restored.transmits.iter().cloned());
        }
        self.state_file = Some(file);
        restored
    }

    /// The admin port's address (useful when `[admin] listen` has port 0).
    pub fn admin_address(&self) -> SocketAddr {
        self.admin_address
    }

    /// Serves until `shutdown` completes.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let Server {
            mut gatekeeper,
            sockets,
            readers,
            admin,
            admin_address,
            state_file,
            config_path,
            pending,
            listeners,
            open_files,
        } = self;
        let mut sockets = sockets;
        let mut readers = readers;
        let mut batch = batch::Batch::default();
        // A batch's replies, the vector kept from batch to batch.
        let mut replies = Vec::new();
        // RAS as it passes, for `/api/ras`.
        let tap = tap::Tap::new();
        send_all(&sockets, None, &mut batch, &mut { pending }).await;
        let mut persister = state_file.map(state_file::Persister::new);
        let mut state_tick = tokio::time::interval(
            persister
                .as_ref()
                .map_or(std::time::Duration::from_secs(3600), |p| p.interval()),
        );
        state_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (queries_tx, mut queries) = mpsc::channel::<Query>(256);
        // Events for `/api/events`, a batch per round; a slow watcher lags and skips, it
        // never holds the core.
        let (events, _) = broadcast::channel::<Events>(EVENT_BATCHES);
        let mut tasks = tokio::task::JoinSet::new();
        let mut hangups = hangup_signals();
        let token = gatekeeper.config().admin.token.clone();
        let admin_thread =
            admin::AdminThread::start(admin, queries_tx, (events.clone(), tap.clone()), token);
        if let Err(error) = &admin_thread {
            tracing::error!(%admin_address, %error, "cannot start the admin port's thread");
        }
        let signalling_on = !listeners.is_empty();
        let (mut connections, mut socket_events) =
            signalling::Connections::start(gatekeeper.config(), listeners, open_files, &mut tasks);
        // Sockets of a restored state wait for their phones; TTS set-ups start now.
        connections.execute(&mut gatekeeper);
        tracing::info!(
            discovery = %gatekeeper.config().gatekeeper.discovery,
            discovery6 = ?gatekeeper.config().gatekeeper.discovery6,
            clans = gatekeeper.config().clans.len(),
            admin = %admin_address,
            "rasgk serving"
        );
        tokio::pin!(shutdown);
        loop {
            // Whether connection tasks were given work this round.
            let mut commanded = false;
            let wake = gatekeeper.poll_timeout();
            let timer = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                () = any_readable(&readers) => {
                    watch(&mut gatekeeper, &events);
                    commanded |= serve_ready(
                        &mut gatekeeper,
                        (&readers, &sockets, tap.if_watched()),
                        &mut batch,
                        &mut replies,
                        &mut connections,
                    )
                    .await;
                }
                () = timer => {
                    watch(&mut gatekeeper, &events);
                    let mut out = gatekeeper.handle_timeout(Instant::now());
                    send_all(&sockets, tap.if_watched(), &mut batch, &mut out).await;
                }
                Some(query) = queries.recv() => {
                    watch(&mut gatekeeper, &events);
                    let mut out = answer(&mut gatekeeper, query);
                    send_all(&sockets, tap.if_watched(), &mut batch, &mut out).await;
                }
                Some(event) = socket_events.recv(), if signalling_on => {
                    watch(&mut gatekeeper, &events);
                    connections.handle(&mut gatekeeper, Instant::now(), event);
                }
                Some(()) = hangups.recv() => match &config_path {
                    Some(path) => {
                        tracing::info!(path = %path.display(), "SIGHUP: reloading the configuration");
                        let server = reload::Sockets {
                            sockets: &mut sockets,
                            readers: &mut readers,
                            tap: &tap,
                        };
                        reload::reload(path, &mut gatekeeper, server).await;
                        connections.reconfigure(gatekeeper.config());
                    }
                    None => tracing::warn!(
                        "SIGHUP: nothing to reload (running the embedded default; start with \
                         --config FILE to reload FILE)"
                    ),
                },
                _ = state_tick.tick(), if persister.is_some() => {
                    if let Some(persister) = persister.as_mut() {
                        persister.save(&gatekeeper);
                    }
                }
            }
            // Connection events waiting, up to a bound, whichever branch ran: the RAS branch
            // comes first and under a registration storm is always ready, which would
            // otherwise keep connects and accepts waiting behind every burst of RRQs.
            if signalling_on {
                let now = Instant::now();
                for _ in 0..1024 {
                    match socket_events.try_recv() {
                        Ok(event) => connections.handle(&mut gatekeeper, now, event),
                        Err(_) => break,
                    }
                }
            }
            commanded |= connections.execute(&mut gatekeeper);
            let drained = gatekeeper.drain_events();
            if !drained.is_empty() {
                // No watcher connected is not an error.
                let _ = events.send(drained.into());
            }
            if commanded {
                // On one thread the connection tasks run only when this task yields, and
                // under a storm of RAS it always has a datagram to read: let connects and
                // writes go out now rather than after the storm.
                tokio::task::yield_now().await;
            }
        }
        tasks.abort_all();
        drop(admin_thread);
        if let Some(persister) = persister {
            persister.finish(&gatekeeper).await;
        }
        let stats = gatekeeper.stats();
        tracing::info!(
            registrations = stats.registrations,
            registered_now = gatekeeper.registrations().len(),
            decode_failures = stats.decode_failures,
            "rasgk stopped"
        );
    }
}

/// Tells the core whether an `/api/events` client is connected right now: events are built
/// only while someone can see them.
fn watch(gatekeeper: &mut Gatekeeper, events: &broadcast::Sender<Events>) {
    gatekeeper.set_events_watched(events.receiver_count() > 0);
}

/// Answers an admin query; changes may have datagrams to send (URQs).
fn answer(gatekeeper: &mut Gatekeeper, query: Query) -> Vec<Transmit> {
    // A dropped receiver means the HTTP client went away; nothing to do.
    let now = Instant::now();
    let view = |gatekeeper: &Gatekeeper, clan: usize| gatekeeper.clans().swap_remove(clan);
    match query {
        Query::Clans(reply) => {
            let _ = reply.send(gatekeeper.clans());
        }
        Query::Regions(reply) => {
            let _ = reply.send(gatekeeper.regions());
        }
        Query::Registrations(reply) => {
            let _ = reply.send(gatekeeper.registrations());
        }
        Query::Calls(reply) => {
            let _ = reply.send(gatekeeper.call_entries(Instant::now()));
        }
        Query::Trunks(reply) => {
            let _ = reply.send(gatekeeper.trunks());
        }
        Query::Placement { ip, aliases, reply } => {
            let _ = reply.send(gatekeeper.placement(ip, &aliases));
        }
        Query::Metrics(reply) => {
            let _ = reply.send(metrics::Figures::of(gatekeeper));
        }
        Query::Rebalance(reply) => {
            let _ = reply.send(gatekeeper.rebalance());
        }
        Query::SetManyInService {
            clans,
            in_service,
            reply,
        } => {
            let found: Result<Vec<usize>, UnknownClan> = clans
                .iter()
                .map(|name| gatekeeper.clan_by_name(name))
                .collect();
            match found {
                Ok(idxs) => {
                    let out = gatekeeper.set_many_in_service(now, &idxs, in_service);
                    let views = gatekeeper.clans();
                    let _ = reply.send(Ok(idxs.iter().map(|&i| views[i].clone()).collect()));
                    return out;
                }
                Err(error) => {
                    let _ = reply.send(Err(error));
                }
            }
        }
        Query::SetCap {
            clan,
            max_sockets,
            reply,
        } => {
            let result = gatekeeper.clan_by_name(&clan).map(|idx| {
                gatekeeper.set_cap(idx, max_sockets);
                view(gatekeeper, idx)
            });
            let _ = reply.send(result);
        }
        Query::Unregister { endpoint_id, reply } => {
            match gatekeeper.unregister_endpoint(now, &endpoint_id) {
                Ok(out) => {
                    let _ = reply.send(Ok(()));
                    return out;
                }
                Err(error) => {
                    let _ = reply.send(Err(error));
                }
            }
        }
        Query::Withhold {
            endpoint_id,
            request,
            reply,
        } => {
            let _ = reply.send(gatekeeper.withhold(&endpoint_id, request));
        }
        Query::Alternate { endpoint_id, reply } => {
            let _ = reply.send(gatekeeper.refer_to_alternate(&endpoint_id));
        }
        Query::Restart(reply) => {
            let _ = reply.send(gatekeeper.restart().map_err(|e| e.to_string()));
        }
        Query::RequestInfo { endpoint_id, reply } => {
            match gatekeeper.request_info(now, &endpoint_id) {
                Ok((seq, out)) => {
                    let _ = reply.send(Ok(seq));
                    return out;
                }
                Err(error) => {
                    let _ = reply.send(Err(error));
                }
            }
        }
    }
    Vec::new()
}

/// Sends datagrams, each from the socket of its local address: runs of the same local
/// address in one batch ([`batch::send`]), and what that could not send one by one,
/// waiting for room and logging what fails. `out` is left empty.
async fn send_all(
    sockets: &Sockets,
    tap: Option<&tap::Tap>,
    batch: &mut batch::Batch,
    out: &mut Vec<Transmit>,
) {
    if let Some(tap) = tap {
        tap.sending(out);
    }
    for transmit in out.iter_mut() {
        // An IPv4 phone of a dual-stack IPv6 socket is addressed as ::ffff:a.b.c.d.
        if let (SocketAddr::V6(_), SocketAddr::V4(to)) = (transmit.local, transmit.to) {
            let mapped = std::net::IpAddr::V6(to.ip().to_ipv6_mapped());
            transmit.to = SocketAddr::new(mapped, to.port());
        }
    }
    let mut rest = &out[..];
    while let Some(first) = rest.first() {
        let run = rest.iter().take_while(|t| t.local == first.local).count();
        let (group, tail) = rest.split_at(run);
        rest = tail;
        let Some(socket) = sockets.get(&first.local) else {
            tracing::error!(local = %first.local, "no socket for a reply's local address");
            continue;
        };
        batch.send_all(socket, group).await;
    }
    out.clear();
}

/// A round's events, handed to the admin port's thread in one send.
pub(crate) type Events = Arc<[Event]>;

/// Rounds of events `/api/events` keeps for a watcher that has not read them yet. A round
/// holds at most [`crate::gatekeeper::events::MAX_QUEUED`] events, so this bounds what a
/// slow watcher can hold in memory (a round is usually far smaller).
const EVENT_BATCHES: usize = 64;

/// Every RAS socket by its local address: looked up for every batch of replies, with the
/// configuration's addresses as keys, so a fixed foldhash rather than SipHash.
pub(crate) type Sockets = HashMap<SocketAddr, Arc<UdpSocket>, foldhash::fast::FixedState>;

/// A RAS socket to read, with the local address its datagrams are reported at.
type Reader = (SocketAddr, Arc<UdpSocket>);

/// Completes when any RAS socket has a datagram waiting (or a receive error to report).
fn any_readable(readers: &[(SocketAddr, Arc<UdpSocket>)]) -> impl Future<Output = ()> + '_ {
    std::future::poll_fn(move |cx| {
        // Every socket is polled, so each registers the task's waker; any ready one wakes it.
        let mut ready = false;
        for (_, socket) in readers {
            ready |= socket.poll_recv_ready(cx).is_ready();
        }
        if ready {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
}

/// Rounds of [`serve_ready`]: how often it goes over the RAS sockets before the state task
/// looks at its other work again.
const READ_ROUNDS: usize = 16;

/// Reads the datagrams waiting on every socket (a batch each, see [`batch`]) and answers
/// each batch with one batch of replies; a receive error is logged and that socket read
/// once more. The connects a batch's RCFs ask for (TTS) are made right after its replies
/// go out, not after every socket's batch: a TTS phone's time to service starts at its
/// RCF. Whether connection tasks were given work.
///
/// It goes over the sockets again while a round read anything, up to [`READ_ROUNDS`]
/// rounds: a socket that had nothing left was marked not ready by its read and costs no
/// system call in the next round, where going back to the `select!` between rounds asked
/// every socket for readiness again (a lock and a waker each), a tenth of the task's own
/// time under load.
async fn serve_ready(
    gatekeeper: &mut Gatekeeper,
    (readers, sockets, tap): (&[Reader], &Sockets, Option<&tap::Tap>),
    batch: &mut batch::Batch,
    out: &mut Vec<Transmit>,
    connections: &mut signalling::Connections,
) -> bool {
    let mut commanded = false;
    for _ in 0..READ_ROUNDS {
        let mut read_any = false;
        for reader in readers {
            if serve_socket(gatekeeper, reader, (sockets, tap), batch, out).await {
                read_any = true;
                commanded |= connections.execute(gatekeeper);
            }
        }
        if !read_any {
            break;
        }
    }
    commanded
}

/// One batch of [`serve_ready`]: the datagrams waiting on one socket, answered. Whether
/// there were any.
async fn serve_socket(
    gatekeeper: &mut Gatekeeper,
    (local, socket): &Reader,
    (sockets, tap): (&Sockets, Option<&tap::Tap>),
    batch: &mut batch::Batch,
    out: &mut Vec<Transmit>,
) -> bool {
    // ICMP port unreachable from an earlier send shows up as a receive error on Linux:
    // the phone went away. Nothing to read in it; the datagrams behind it are read next.
    let mut read = false;
    for _ in 0..2 {
        match batch.receive(socket) {
            Ok(_) => {
                read = true;
                break;
            }
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(error) => tracing::debug!(%local, %error, "receive error"),
        }
    }
    if !read {
        return false;
    }
    // A dual-stack IPv6 socket reports IPv4 phones as ::ffff:a.b.c.d; the core (network map,
    // registrations) sees them as the IPv4 addresses they are.
    let canonical = |from: SocketAddr| SocketAddr::new(from.ip().to_canonical(), from.port());
    // The batch's retransmission-cache lines are fetched together, then each is there when
    // its request is answered.
    for (datagram, from) in batch.datagrams() {
        gatekeeper.prefetch(*local, canonical(from), datagram);
    }
    if let Some(tap) = tap {
        for (datagram, from) in batch.datagrams() {
            tap.received(*local, canonical(from), datagram);
        }
    }
    let now = Instant::now();
    for (datagram, from) in batch.datagrams() {
        gatekeeper.handle_into(now, *local, canonical(from), datagram, out);
    }
    send_all(sockets, tap, batch, out).await;
    true
}

/// SIGHUPs, one `()` each; none where there are no such signals. Once this listens, a
/// SIGHUP no longer ends the process.
fn hangup_signals() -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel(1);
    #[cfg(unix)]
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(mut signal) => {
            tokio::spawn(async move {
                while signal.recv().await.is_some() {
                    // A reload already waiting covers this one too.
                    let _ = tx.try_send(());
                }
            });
        }
        Err(error) => tracing::warn!(%error, "cannot listen for SIGHUP: no reloads"),
    }
    #[cfg(not(unix))]
    drop(tx);
    rx
}

/// The runtime the gatekeeper runs on: one thread. The state is one task's, and a second
/// worker would sit in `epoll_wait` to be woken by every reply sent (each frees send-buffer
/// room, an EPOLLOUT edge), for nothing: under a 40,000-phone storm that took a third of the
/// gatekeeper's CPU. The admin port's thread runs on one of these too.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// Completes on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C: shutting down"),
        () = terminate => tracing::info!("SIGTERM: shutting down"),
    }
}
