//! The phones of one storm process: give each its line on the process's port (all before
//! the first GRQ, so a multi-process storm can start every process at one instant), live
//! their lives as one task each, and add up how it went ([`Tally`]). With `--sockets` the
//! process also opens the TTS phones' listener, names it in every phone's
//! `callSignalAddress`, and samples the sockets its phones hold in service every 100 ms.
//! With `--calls-per-s` it waits, once its phones have registered, until they are in
//! service (at most [`SERVICE_WAIT`]), hears from its [`Conductor`] when the storm's calls
//! start, and hands each of its phones the calls of the schedule that are theirs
//! ([`calls::place`]).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::sync::mpsc::unbounded_channel;
use tokio::sync::watch;

use super::calls::{self, Finished, Schedule, SERVICE_WAIT};
use super::life::{Caller, Life, Plan};
use super::port::{self, Line, Port, Router};
use super::signalling::{self, Acceptor, Gauge, Listener, PhoneSocket, Way};
use super::tally::Tally;
use super::wall_clock::wall_time;
use super::{Share, StormArgs, StormError};
use crate::phone::Phone;
use crate::roster;

/// Whoever runs a storm process's phones (the storm itself, or a parent storm): hears how
/// they go, says when the routed calls start, and holds the phones at the end.
pub(super) trait Conductor {
    /// What the hold gives back.
    type Held;

    /// `n` of the process's phones have registered so far.
    fn registered(&mut self, n: usize);

    /// The process's phones are in service, or the wait for them is over: when the routed
    /// calls start, since the UNIX epoch (one instant for every process of the storm);
    /// `None` when no calls are to be placed after all (no phone of the storm registered, or
    /// it is ending).
    async fn in_service(&mut self) -> Option<Duration>;

    /// `n` of the process's routed calls are over so far.
    fn calls_over(&mut self, n: u64);

    /// Every phone registered or gave up, `--duration` passed and the calls are over (or the
    /// storm was interrupted): runs while the phones are still there (to read the final
    /// load).
    async fn hold(&mut self) -> Self::Held;

    /// Turns `true` when the storm must end early (Ctrl-C, or a parent storm's early `end`):
    /// the phones then stop where they are, unregister and report.
    fn interruption(&self) -> watch::Receiver<bool>;
}

/// Completes once `interrupted` turns true; never when its sender is gone without it.
async fn interrupted(mut interrupted: watch::Receiver<bool>) {
    if interrupted.wait_for(|yes| *yes).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// One phone ready to start.
struct Ready {
    /// Its place in the whole storm.
    index: usize,
    phone: Phone,
    tts: bool,
    line: Line,
    /// How it gets its socket (socket mode).
    way: Option<Way>,
}

/// This process's phones with their lines, not started.
pub(super) struct Bound {
    /// Which of the storm's phones they are.
    share: Share,
    phones: Vec<Ready>,
    /// What feeds the lines.
    router: Router,
    /// What feeds the TTS phones' inboxes (socket mode).
    acceptor: Option<Acceptor>,
}

impl Bound {
    /// How many phones.
    pub fn len(&self) -> usize {
        self.phones.len()
    }
}

/// Opens this process's port and gives each of `share`'s phones its line.
pub(super) async fn bind(args: &StormArgs, share: Share) -> Result<Bound, StormError> {
    let mut ips = Vec::with_capacity(share.size(args.phones));
    let mut phones = Vec::with_capacity(share.size(args.phones));
    for (index, (ip, phone, tts)) in args.phones().into_iter().enumerate() {
        if share.holds(index) {
            ips.push(ip);
            phones.push((index, phone, tts));
        }
    }
    if args.ipv6 {
        // One address of each region: its first phone's.
        let mut seen = std::collections::BTreeSet::new();
        let firsts: Vec<IpAddr> = phones
            .iter()
            .zip(&ips)
            .filter(|((index, ..), _)| seen.insert(roster::of_region(&args.regions, *index).0))
            .map(|(_, &ip)| ip)
            .collect();
        port::check_local(&firsts)
            .await
            .map_err(|(address, reason)| StormError::NotLocal { address, reason })?;
    }
    let port = Port::open(args.family()).map_err(StormError::Port)?;
    let (router, lines) = port.lines(ips);
    let (acceptor, mut ways, signal_port) = if args.sockets {
        let backlog = if args.accept_delay_ms > 0 {
            signalling::SLOW_BACKLOG
        } else {
            signalling::BACKLOG
        };
        let listener = Listener::open(backlog, args.family()).map_err(StormError::Listener)?;
        let signal_port = listener.port();
        let tts_ips = phones.iter().zip(&lines).filter(|((_, _, tts), _)| *tts);
        let (acceptor, inboxes) = listener.inboxes(tts_ips.map(|(_, line)| line.local_addr().ip()));
        (Some(acceptor), inboxes.into_iter(), Some(signal_port))
    } else {
        (None, Vec::new().into_iter(), None)
    };
    let phones = phones
        .into_iter()
        .zip(lines)
        .map(|((index, mut phone, tts), line)| {
            phone.ras_address = line.local_addr();
            let way = signal_port.map(|port| {
                // Every phone names the listener, so RRQs are alike; only TTS phones take
                // connections there.
                phone.call_signal_address = SocketAddr::new(line.local_addr().ip(), port);
                match tts.then(|| ways.next()).flatten() {
                    Some(inbox) => Way::Accept(inbox),
                    None => Way::Connect,
                }
            });
            Ready {
                index,
                phone,
                tts,
                line,
                way,
            }
        })
        .collect();
    Ok(Bound {
        share,
        phones,
        router,
        acceptor,
    })
}

/// Samples `gauge` every 100 ms from `started` on, one slot each 100 ms (a slot the runtime
/// was too busy to sample repeats the one before), until aborted.
fn sample_in_service(
    gauge: Gauge,
    started: Instant,
) -> (tokio::task::JoinHandle<()>, Arc<Mutex<Vec<u64>>>) {
    let slots = Arc::new(Mutex::new(Vec::new()));
    let sampler = {
        let slots = slots.clone();
        tokio::spawn(async move {
            let every = Duration::from_millis(100);
            loop {
                let slot = (started.elapsed().as_millis() / every.as_millis()) as usize;
                if let Ok(mut slots) = slots.lock() {
                    if slots.len() > slot {
                        slots[slot] = gauge.now();
                    } else {
                        let last = slots.last().copied().unwrap_or(0);
                        slots.resize(slot, last);
                        slots.push(gauge.now());
                    }
                }
                let next = started + every * (slot as u32 + 1);
                tokio::time::sleep_until(next.into()).await;
            }
        })
    };
    (sampler, slots)
}

/// Starts every phone now; the `conductor` hears the running count of registered phones.
/// Once every phone has registered or given up, the routed calls (`--calls-per-s`) are
/// placed and over, and `--duration` has passed, the conductor's hold runs while the phones
/// are still there (to read the final load); then the phones end (unregistering unless
/// `--leave-registered`), and `--record` is written. The conductor's interruption cuts any of
/// these waits short.
pub(super) async fn live<C: Conductor>(
    args: &StormArgs,
    bound: Bound,
    conductor: &mut C,
) -> Result<(Tally, C::Held), StormError> {
    let started = Instant::now();
    let started_wall = wall_time();
    let record = args
        .record
        .as_ref()
        .map(|_| Arc::new(Mutex::new(Vec::new())));
    let plan = Arc::new(Plan {
        target: args.target,
        timeout: Duration::from_millis(args.timeout_ms),
        retries: args.retries,
        loss: args.loss,
        give_up: started + Duration::from_secs_f64(args.give_up_s),
        try_for: Duration::from_secs_f64(args.give_up_s),
        unregister: !args.leave_registered,
        record: record.clone(),
        calls: args.calls,
        dial: args.dial.clone(),
        hold: Duration::from_millis(args.hold_ms),
        call_hold: Schedule::of(args).map_or(Duration::ZERO, |schedule| schedule.hold),
        pregranted: args.pregranted,
    });
    let schedule = Schedule::of(args);
    let finished = Arc::new(Finished::default());
    let mut orders = HashMap::new();
    let count = bound.len();
    let share = bound.share;
    let (end_tx, end_rx) = tokio::sync::watch::channel(None);
    let (registered_tx, mut registered_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = tokio::task::JoinSet::new();
    let router = tokio::spawn(bound.router.run());
    let accepted = bound.acceptor.as_ref().map(Acceptor::counts);
    let accept_delay = Duration::from_millis(args.accept_delay_ms);
    // Phones that accept at once take every connection waiting, not a runtime budget's
    // worth per turn: under the storm's own RAS the acceptor would otherwise wait a turn
    // over every phone between budgets, and the phones' time to service would measure the
    // storm, not the gatekeeper. The backlog running dry ends each turn.
    let acceptor = bound.acceptor.map(|acceptor| {
        if accept_delay.is_zero() {
            tokio::spawn(tokio::task::unconstrained(acceptor.run(accept_delay)))
        } else {
            tokio::spawn(acceptor.run(accept_delay))
        }
    });
    let gauge = Gauge::default();
    let sampler = args
        .sockets
        .then(|| sample_in_service(gauge.clone(), started));
    for ready in bound.phones {
        let Ready {
            index,
            phone,
            tts,
            line,
            way,
        } = ready;
        let gauge = gauge.clone();
        let plan = plan.clone();
        let end = end_rx.clone();
        let registered = registered_tx.clone();
        // Arrival and loss follow the phone's place in the whole storm, so they do not
        // depend on how many processes share it.
        let arrival = args
            .rate
            .map(|rate| Duration::from_secs_f64(index as f64 / rate))
            .unwrap_or_default();
        let seed = args.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let ordered = schedule.as_ref().map(|_| {
            let (order, ordered) = unbounded_channel();
            orders.insert(index, order);
            ordered
        });
        let finished = finished.clone();
        tasks.spawn(async move {
            if !arrival.is_zero() {
                tokio::time::sleep(arrival).await;
            }
            let own = phone.ras_address.ip();
            let mut life = Life::new(phone, line, seed, &plan, end);
            if let Some(way) = way {
                // The back-off's jitter comes from the phone's own generator.
                let rng = ChaCha8Rng::from_rng(&mut life.rng);
                let mut socket = PhoneSocket::new(own, way, gauge, rng);
                if let Some(ordered) = ordered {
                    let (placed, over) = unbounded_channel();
                    socket = socket.reporting_calls_to(placed);
                    life.caller = Some(Caller::new(ordered, over, finished));
                }
                life.socket = Some(socket);
            }
            let outcome = life.live(registered).await;
            (index, tts, outcome)
        });
    }
    drop(registered_tx);
    let stop = conductor.interruption();
    let (mut heard, mut ok) = (0, 0);
    while heard < count && !*stop.borrow() {
        let yes = tokio::select! {
            yes = registered_rx.recv() => yes,
            () = interrupted(stop.clone()) => break,
        };
        let Some(yes) = yes else {
            break;
        };
        heard += 1;
        if yes {
            ok += 1;
            conductor.registered(ok);
        }
    }
    if *stop.borrow() {
        // Phones still registering stop now.
        let _ = end_tx.send(Some(Instant::now()));
    }
    let registered_at = Instant::now();
    let mut undelivered = 0;
    if let Some(schedule) = schedule.as_ref().filter(|_| !*stop.borrow()) {
        let waited = registered_at + SERVICE_WAIT;
        while (gauge.now() as usize) < ok && Instant::now() < waited {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if let Some(start_wall) = conductor.in_service().await {
            let start = Instant::now() + start_wall.saturating_sub(wall_time());
            let settle = calls::settle_within(plan.timeout, plan.retries, schedule.hold);
            let over = |n| conductor.calls_over(n);
            let placing = calls::place(schedule, share, start, &orders, &finished, settle, over);
            tokio::select! {
                left = placing => undelivered = left,
                () = interrupted(stop.clone()) => {}
            }
        }
    }
    // A process none of whose phones registered holds nothing for --duration.
    let duration = if ok == 0 { 0.0 } else { args.duration };
    let until = registered_at + Duration::from_secs_f64(duration);
    tokio::select! {
        () = tokio::time::sleep_until(until.into()) => {}
        () = interrupted(stop.clone()) => {}
    }
    let held = conductor.hold().await;
    // The TTS phones' listener closes before their sockets do: a socket the gatekeeper sets
    // up again meanwhile is refused (a failed connect), not taken and dropped.
    if let Some(acceptor) = &acceptor {
        acceptor.abort();
    }
    let _ = end_tx.send(Some(Instant::now()));
    let mut outcomes = Vec::with_capacity(count);
    while let Some(joined) = tasks.join_next().await {
        if let Ok(outcome) = joined {
            outcomes.push(outcome);
        }
    }
    router.abort();
    if let Some(acceptor) = acceptor {
        acceptor.abort();
    }
    let in_service = match sampler {
        Some((sampler, slots)) => {
            sampler.abort();
            slots.lock().map(|s| s.clone()).unwrap_or_default()
        }
        None => Vec::new(),
    };
    outcomes.sort_by_key(|(index, ..)| *index);
    let outcomes: Vec<_> = outcomes
        .into_iter()
        .map(|(_, tts, outcome)| (tts, outcome))
        .collect();
    if let (Some(path), Some(record)) = (&args.record, record) {
        let datagrams = record.lock().map(|r| r.clone()).unwrap_or_default();
        write_record(path, datagrams)?;
    }
    let mut tally = Tally::of(&outcomes, started, started_wall);
    tally.routed_calls.undelivered(undelivered);
    tally.sockets_in_service_per_100ms = in_service;
    if let Some(accepted) = accepted {
        tally.tts_connections_accepted = accepted.handed.load(Ordering::Relaxed);
        tally.tts_connections_closed = accepted.closed.load(Ordering::Relaxed);
    }
    Ok((tally, held))
}

/// Writes datagrams into a pcap at `path`, in time order.
pub(super) fn write_record(
    path: &std::path::Path,
    mut datagrams: Vec<crate::pcap::Datagram>,
) -> Result<(), StormError> {
    datagrams.sort_by_key(|d| d.time);
    crate::pcap::write_file(path, &datagrams).map_err(|source| StormError::Write {
        path: path.to_owned(),
        source,
    })
}
