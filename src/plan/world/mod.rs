//! The plan's world in virtual time: the real gatekeeper core, the network between it and
//! the simulated phones (a one-way delay, seeded loss of datagrams), the signalling
//! connections the core opens, accepts and closes (no sockets: the connection events the
//! glue would report are fed to the core at the times they would happen), the timeline's
//! events, and the sampler. One queue of jobs ordered by virtual time, then by the order
//! they were made, so a run is the same every time.
//!
//! How the simulated phones behave is in `phones`, their routed calls in
//! `calls`: both are `impl World` blocks of their own.

mod calls;
mod phones;

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::scenario::{Event, Scenario, ScenarioError};
use super::tally::{ClanTrace, EventTrace, Tally};
use crate::config::{Config, SocketMode};
use crate::gatekeeper::{Closing, Command, ConnectionId, Gatekeeper, Transmit};
use crate::phone::Phone;
use calls::Calls;
use phones::{SimPhone, Socket};

/// The hasher of the world's tables: looked up at every datagram, and never iterated in an
/// order that reaches the report.
type Fast = foldhash::fast::FixedState;

/// Virtual time: microseconds since the plan's start.
pub(super) type Micros = u64;

/// The empty TPKT frame a C-LAN writes when a socket is in service.
const SERVICE_FRAME: [u8; 4] = [3, 0, 0, 4];

/// Every phone's RAS port (each phone has an IP of its own).
const PHONE_RAS_PORT: u16 = 1719;

/// The source port of a non-TTS phone's connection.
const PHONE_TCP_PORT: u16 = 40_000;

/// Something to do at a virtual time.
pub(super) enum What {
    /// A phone arrives: its first GRQ.
    Arrive(u32),
    /// One of a phone's timers, valid while its generation is the phone's.
    Timer(u32, PhoneTimer, u32),
    /// A datagram reaches the gatekeeper at `local`.
    ToGatekeeper {
        local: SocketAddr,
        phone: u32,
        datagram: Rc<[u8]>,
    },
    /// A datagram from the gatekeeper's `from` reaches a phone.
    ToPhone { phone: u32, datagram: bytes::Bytes },
    /// A non-TTS phone's connection request reaches the C-LAN's listener.
    Syn { phone: u32, generation: u32 },
    /// The C-LAN reset that connection: the phone hears of it.
    Reset { phone: u32, generation: u32 },
    /// A TTS connect of the gatekeeper completed (or failed).
    Connected {
        epoch: u32,
        id: ConnectionId,
        ok: bool,
    },
    /// The service frame reaches the phone.
    Frame {
        epoch: u32,
        id: ConnectionId,
        phone: u32,
    },
    /// The gatekeeper's close of a connection reaches the phone.
    Closed {
        epoch: u32,
        id: ConnectionId,
        phone: u32,
    },
    /// A frame of the gatekeeper's other than the service frame (Q.931 of a routed call)
    /// reaches the phone.
    Signal {
        epoch: u32,
        id: ConnectionId,
        phone: u32,
        framed: bytes::Bytes,
    },
    /// A phone's frame reaches the gatekeeper's end of a connection; `releases` is the
    /// routed call its Release Complete ends.
    Written {
        epoch: u32,
        id: ConnectionId,
        framed: bytes::Bytes,
        releases: Option<Box<[u8; 16]>>,
    },
    /// The gatekeeper's timers are due (when this is the time armed last).
    GatekeeperTimer(Micros),
    /// An event of the timeline.
    Scenario(usize),
    /// Sample the loads.
    Sample,
}

/// A phone's timers: each kind has its own generation, so re-arming one drops the old.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PhoneTimer {
    /// The outstanding request's RAS timer.
    Request = 0,
    /// Wait over after a reject: start again.
    Retry = 1,
    /// Time for a keep-alive.
    KeepAlive = 2,
    /// A non-TTS phone's next connection attempt.
    Connect = 3,
    /// Time for a call, or to end the one in progress.
    Call = 4,
}

struct Job {
    at: Micros,
    order: u64,
    what: What,
}

impl PartialEq for Job {
    fn eq(&self, other: &Job) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}
impl Eq for Job {}
impl PartialOrd for Job {
    fn partial_cmp(&self, other: &Job) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Job {
    fn cmp(&self, other: &Job) -> Ordering {
        // Reversed: the heap's top is the earliest job, first made first.
        (other.at, other.order).cmp(&(self.at, self.order))
    }
}

/// What stops a plan from running.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The configuration cannot run.
    #[error("{0}")]
    Config(String),
    /// The scenario does not fit the lab (an event names a C-LAN the configuration in force
    /// then does not have, phones the lab would not place as the scenario says, a reload
    /// that does not load): `FILE: FIELD: REASON`, as the scenario's own checks.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

/// The world.
pub(super) struct World<'s> {
    pub scenario: &'s Scenario,
    /// The configuration in force (after reloads), in socket mode.
    config: Config,
    /// The configuration of each reload event, by event index.
    reloads: HashMap<usize, Config>,
    pub gk: Gatekeeper,
    base: Instant,
    pub now: Micros,
    end: Micros,
    /// Jobs at any time.
    queue: BinaryHeap<Job>,
    /// Jobs made a fixed delay after their making (a datagram's latency, the RAS timer, a
    /// keep-alive's half TTL, the sampler's period), one queue per delay: made in time
    /// order, they come due in time order, so a queue does what the heap would at a
    /// fraction of its cost. Jobs are taken by (time, order) across all of them.
    lanes: Vec<(Micros, VecDeque<Job>)>,
    order: u64,
    pub phones: Vec<SimPhone>,
    /// Each phone's timer generations, by [`PhoneTimer`]: apart from the phones, so that
    /// the timers that went void (most of them: a request's timer once it is answered) are
    /// told from the live ones without reaching into the phone.
    generations: Vec<[u32; 5]>,
    by_ip: HashMap<IpAddr, u32, Fast>,
    /// No two phones share an IP: a reply to a phone's own address is that phone's, found
    /// without `by_ip`.
    distinct_ips: bool,
    /// The gatekeeper's connections and their phones (this life of the gatekeeper).
    connections: HashMap<ConnectionId, u32, Fast>,
    /// The gatekeeper's life: a restart starts a new one, and what was under way for the
    /// old one is dropped.
    pub epoch: u32,
    /// Where the gatekeeper takes datagrams now.
    locals: HashSet<SocketAddr, Fast>,
    net: ChaCha8Rng,
    pub latency: Micros,
    pub discovery: SocketAddr,
    pub tally: Tally,
    /// The C-LAN traces of the running configuration's C-LANs, in its order.
    pub(super) trace_of: Vec<usize>,
    /// The last event of the timeline that has happened.
    pub current_event: Option<usize>,
    /// The gatekeeper's timer job queued soonest.
    gatekeeper_timer: Option<Micros>,
    /// Called with the virtual time now and then, for a progress display.
    progress: Option<Box<dyn FnMut(f64) + 's>>,
    /// The routed calls the phones placed.
    pub(super) calls: Calls,
}

/// Virtual seconds as microseconds.
pub(super) fn micros(seconds: f64) -> Micros {
    (seconds * 1e6).round() as Micros
}

/// Microseconds as virtual seconds.
pub(super) fn seconds(at: Micros) -> f64 {
    at as f64 / 1e6
}

impl<'s> World<'s> {
    /// The world at virtual time 0: every phone waiting for its arrival, every event and
    /// sample queued. The scenario has been checked against `config` and `reloads`
    /// ([`super::check`]).
    pub fn new(
        scenario: &'s Scenario,
        mut config: Config,
        reloads: HashMap<usize, Config>,
    ) -> Result<World<'s>, PlanError> {
        prepare(&mut config, scenario.seed);
        let mut reloads = reloads;
        for reloaded in reloads.values_mut() {
            prepare(reloaded, scenario.seed);
        }
        let mut gk =
            Gatekeeper::new(config.clone()).map_err(|e| PlanError::Config(e.to_string()))?;
        gk.set_events_watched(config.rebalance.is_some());
        let discovery = config.gatekeeper.discovery;
        let mut world = World {
            scenario,
            config,
            reloads,
            gk,
            base: Instant::now(),
            now: 0,
            end: micros(scenario.duration_s),
            queue: BinaryHeap::new(),
            lanes: Vec::new(),
            order: 0,
            phones: Vec::with_capacity(scenario.phones()),
            generations: vec![[0; 5]; scenario.phones()],
            by_ip: HashMap::with_capacity_and_hasher(scenario.phones(), Fast::default()),
            distinct_ips: true,
            connections: HashMap::default(),
            epoch: 0,
            locals: HashSet::default(),
            net: ChaCha8Rng::seed_from_u64(scenario.seed),
            latency: micros(scenario.latency_ms / 1000.0),
            discovery,
            tally: Tally::default(),
            trace_of: Vec::new(),
            current_event: None,
            gatekeeper_timer: None,
            progress: None,
            calls: Calls::default(),
        };
        world.configured();
        let mut delays = vec![
            world.latency,
            2 * world.latency,
            scenario.timeout_ms * 1000,
            micros(scenario.sample_s),
        ];
        let granted = world.config.gatekeeper.ttl_s;
        for group in &scenario.groups {
            let ttl = group.ttl_s.map_or(granted, |asked| asked.clamp(1, granted));
            delays.push(u64::from(ttl) * 500_000);
        }
        delays.sort_unstable();
        delays.dedup();
        world.lanes = delays.into_iter().map(|d| (d, VecDeque::new())).collect();
        world.tally.events = scenario
            .events
            .iter()
            .map(|e| EventTrace {
                at_s: e.at_s,
                label: e.event.label(),
                ..EventTrace::default()
            })
            .collect();
        for (g, group) in scenario.groups.iter().enumerate() {
            for n in 0..group.count {
                let ip = group.address(n);
                let tts = group.is_tts(n);
                let extension = group.extension(n);
                let mut phone =
                    Phone::extension(extension, SocketAddr::new(IpAddr::V4(ip), PHONE_RAS_PORT));
                phone.time_to_live_s = group.ttl_s;
                // In socket mode the planned phones are rasgk's own: they ask to be told when
                // their socket is in service (docs/rules.md §8.4).
                phone.service_frame = world.config.gatekeeper.sockets == SocketMode::Tcp;
                let index = world.phones.len() as u32;
                let seed = scenario.seed ^ (u64::from(index) << 20) ^ 0x5eed;
                world
                    .phones
                    .push(SimPhone::new(phone, g as u16, tts, extension, seed));
                if world.by_ip.insert(IpAddr::V4(ip), index).is_some() {
                    world.distinct_ips = false;
                }
                world.at(micros(group.arrives_at(n)), What::Arrive(index));
            }
        }
        for (i, event) in scenario.events.iter().enumerate() {
            world.at(micros(event.at_s), What::Scenario(i));
        }
        world.at(0, What::Sample);
        Ok(world)
    }

    /// Has `progress` called with the virtual seconds reached, about every virtual minute.
    pub fn on_progress(&mut self, progress: impl FnMut(f64) + 's) {
        self.progress = Some(Box::new(progress));
    }

    /// The virtual instant the core sees.
    pub fn instant(&self) -> Instant {
        self.base + Duration::from_micros(self.now)
    }

    /// Queues a job.
    pub fn at(&mut self, at: Micros, what: What) {
        self.order += 1;
        let job = Job {
            at,
            order: self.order,
            what,
        };
        let delay = at.wrapping_sub(self.now);
        match self.lanes.iter_mut().find(|(d, _)| *d == delay) {
            Some((_, lane)) if at >= self.now => lane.push_back(job),
            _ => self.queue.push(job),
        }
    }

    /// The next job: the earliest, first made first, of the heap and the lanes.
    fn next_job(&mut self) -> Option<Job> {
        let key = |job: &Job| (job.at, job.order);
        let mut best = self.queue.peek().map(key);
        let mut from = None;
        for (i, (_, lane)) in self.lanes.iter().enumerate() {
            if let Some(front) = lane.front().map(key) {
                if best.is_none_or(|b| front < b) {
                    best = Some(front);
                    from = Some(i);
                }
            }
        }
        match from {
            Some(i) => self.lanes[i].1.pop_front(),
            None => self.queue.pop(),
        }
    }

    /// Arms one of a phone's timers, replacing the one of its kind armed before.
    pub fn arm(&mut self, phone: u32, timer: PhoneTimer, at: Micros) {
        let generation = self.bump(phone, timer);
        self.at(at, What::Timer(phone, timer, generation));
    }

    /// Disarms one of a phone's timers.
    pub fn disarm(&mut self, phone: u32, timer: PhoneTimer) {
        self.bump(phone, timer);
    }

    /// Moves a phone's timer kind to its next generation: what was armed before is void.
    fn bump(&mut self, phone: u32, timer: PhoneTimer) -> u32 {
        let generation = &mut self.generations[phone as usize][timer as usize];
        *generation = generation.wrapping_add(1);
        *generation
    }

    /// A phone's timer kind's generation.
    pub fn generation(&self, phone: u32, timer: PhoneTimer) -> u32 {
        self.generations[phone as usize][timer as usize]
    }

    /// Runs to the scenario's end.
    pub fn run(&mut self) {
        let mut next_progress = 0;
        while let Some(job) = self.next_job() {
            if job.at > self.end {
                break;
            }
            self.now = job.at;
            if self.now >= next_progress {
                next_progress = self.now + 60_000_000;
                if let Some(progress) = &mut self.progress {
                    progress(seconds(self.now));
                }
            }
            self.step(job.what);
        }
        self.now = self.end;
        self.sample();
    }

    fn step(&mut self, what: What) {
        match what {
            What::Arrive(phone) => self.arrive(phone),
            What::Timer(phone, timer, generation) => {
                if self.generation(phone, timer) == generation {
                    self.timer(phone, timer);
                }
            }
            What::ToGatekeeper {
                local,
                phone,
                datagram,
            } => {
                if self.locals.contains(&local) {
                    let from = self.phones[phone as usize].phone.ras_address;
                    let now = self.instant();
                    let out = self.gk.handle(now, local, from, &datagram);
                    self.after_request(out, phone);
                }
            }
            What::ToPhone { phone, datagram } => self.heard(phone, &datagram),
            What::Syn { phone, generation } => self.syn(phone, generation),
            What::Reset { phone, generation } => self.reset(phone, generation),
            What::Connected { epoch, id, ok } => {
                if epoch == self.epoch {
                    let now = self.instant();
                    if ok {
                        if let Some(&phone) = self.connections.get(&id) {
                            if let Socket::Open(own) = self.phones[phone as usize].socket {
                                // Its own connection, accepted while the gatekeeper's for a
                                // routed call was on its way: it keeps one, and closes that.
                                self.connections.remove(&own);
                                self.calls.closed(own);
                                self.gk.closed(now, own, Closing::Fin);
                            }
                            self.phones[phone as usize].socket = Socket::Open(id);
                        }
                        self.gk.connected(now, id);
                    } else {
                        self.connections.remove(&id);
                        self.gk.connect_failed(now, id);
                    }
                    self.after_gatekeeper(Vec::new());
                }
            }
            What::Frame { epoch, id, phone } => {
                if epoch == self.epoch {
                    self.in_service(phone, id);
                }
            }
            What::Closed { epoch, id, phone } => {
                if epoch == self.epoch {
                    self.socket_closed(phone, id);
                }
            }
            What::Signal {
                epoch,
                id,
                phone,
                framed,
            } => {
                if epoch == self.epoch {
                    self.signal(phone, id, &framed);
                }
            }
            What::Written {
                epoch,
                id,
                framed,
                releases,
            } => self.written(epoch, id, &framed, releases),
            What::GatekeeperTimer(at) => {
                // Armed again for an earlier time since: that job ran, or will.
                if self.gatekeeper_timer != Some(at) {
                    return;
                }
                self.gatekeeper_timer = None;
                let now = self.instant();
                let out = self.gk.handle_timeout(now);
                self.after_gatekeeper(out);
            }
            What::Scenario(index) => self.event(index),
            What::Sample => {
                self.sample();
                let next = self.now + micros(self.scenario.sample_s);
                self.at(next, What::Sample);
            }
        }
    }

    /// Sends a phone's datagram to the gatekeeper's `local` address (lost at random).
    pub fn send_to_gatekeeper(&mut self, phone: u32, local: SocketAddr, datagram: Rc<[u8]>) {
        self.tally.datagrams += 1;
        if self.lost() {
            return;
        }
        let at = self.now + self.latency;
        self.at(
            at,
            What::ToGatekeeper {
                local,
                phone,
                datagram,
            },
        );
    }

    fn lost(&mut self) -> bool {
        if self.scenario.loss > 0.0 && self.net.random::<f64>() < self.scenario.loss {
            self.tally.datagrams_lost += 1;
            true
        } else {
            false
        }
    }

    /// What the gatekeeper sent, and the connection commands it left: datagrams first, so
    /// that a URQ reaches its phone before the close of its socket does.
    pub fn after_gatekeeper(&mut self, out: Vec<Transmit>) {
        self.after(out, None);
    }

    /// [`after_gatekeeper`](World::after_gatekeeper) a request of `sender`: its reply, nearly
    /// always all that was sent, goes back to it.
    fn after_request(&mut self, out: Vec<Transmit>, sender: u32) {
        self.after(out, Some(sender));
    }

    fn after(&mut self, out: Vec<Transmit>, sender: Option<u32>) {
        self.note_moves();
        let at = self.now + self.latency;
        let sender = sender
            .filter(|_| self.distinct_ips)
            .map(|phone| (self.phones[phone as usize].phone.ras_address.ip(), phone));
        for transmit in out {
            self.tally.datagrams += 1;
            let to = transmit.to.ip();
            let phone = match sender {
                Some((ip, phone)) if ip == to => phone,
                _ => match self.by_ip.get(&to) {
                    Some(&phone) => phone,
                    None => continue,
                },
            };
            if self.lost() {
                continue;
            }
            self.at(
                at,
                What::ToPhone {
                    phone,
                    datagram: transmit.payload,
                },
            );
        }
        for command in self.gk.take_commands() {
            match command {
                Command::Connect { id, from, to } => match self.by_ip.get(&to.ip()) {
                    Some(&phone) => {
                        self.connections.insert(id, phone);
                        self.calls.opened(id, from);
                        let epoch = self.epoch;
                        self.at(
                            self.now + 2 * self.latency,
                            What::Connected {
                                epoch,
                                id,
                                ok: true,
                            },
                        );
                    }
                    None => {
                        let epoch = self.epoch;
                        self.at(
                            at,
                            What::Connected {
                                epoch,
                                id,
                                ok: false,
                            },
                        );
                    }
                },
                Command::Send { id, payload } => {
                    if let Some(&phone) = self.connections.get(&id) {
                        let epoch = self.epoch;
                        if payload.as_ref() == SERVICE_FRAME {
                            self.at(at, What::Frame { epoch, id, phone });
                        } else {
                            let framed = payload;
                            let signal = What::Signal {
                                epoch,
                                id,
                                phone,
                                framed,
                            };
                            self.at(at, signal);
                        }
                    }
                }
                Command::Close { id, .. } => {
                    self.calls.closed(id);
                    if let Some(phone) = self.connections.remove(&id) {
                        let epoch = self.epoch;
                        self.at(at, What::Closed { epoch, id, phone });
                    }
                }
            }
        }
        self.arm_gatekeeper();
    }

    /// Keeps the rebalancing moves of the events (watched only while rebalancing is on).
    fn note_moves(&mut self) {
        if self.config.rebalance.is_none() {
            return;
        }
        for event in self.gk.drain_events() {
            if let crate::gatekeeper::events::Event::Rebalanced { from, .. } = event {
                self.tally.moves.push((self.now, from));
            }
        }
    }

    fn arm_gatekeeper(&mut self) {
        let Some(at) = self.gk.poll_timeout() else {
            return;
        };
        // Rounded up: a deadline between two microseconds is due at the later one (rounded
        // down, the core would find nothing due yet, and the timer would come back at the
        // same instant for ever).
        let at = at
            .saturating_duration_since(self.base)
            .as_nanos()
            .div_ceil(1000) as Micros;
        let at = at.max(self.now);
        if self.gatekeeper_timer.is_none_or(|armed| at < armed) {
            self.gatekeeper_timer = Some(at);
            self.at(at, What::GatekeeperTimer(at));
        }
    }

    /// A non-TTS phone's connection request at its C-LAN's listener.
    fn syn(&mut self, phone: u32, generation: u32) {
        let p = &self.phones[phone as usize];
        if self.generation(phone, PhoneTimer::Connect) != generation
            || !matches!(p.socket, Socket::Connecting)
        {
            return;
        }
        let Some(local) = p.call_signal_address else {
            return;
        };
        let from = SocketAddr::new(p.phone.ras_address.ip(), PHONE_TCP_PORT);
        let now = self.instant();
        match self.gk.accept(now, local, from) {
            Ok(id) => {
                self.connections.insert(id, phone);
                self.calls.accepted(id, local);
                self.phones[phone as usize].socket = Socket::Open(id);
                self.after_gatekeeper(Vec::new());
            }
            Err(_) => {
                let at = self.now + self.latency;
                self.at(at, What::Reset { phone, generation });
            }
        }
    }

    /// Samples the established sockets of every C-LAN.
    fn sample(&mut self) {
        let at = seconds(self.now);
        let established = self.gk.clan_sockets().map(|(_, established)| established);
        self.tally.sample(at, &self.trace_of, established);
        self.sample_calls();
    }

    /// Is connection `id` one of the gatekeeper's (this life's)?
    pub(super) fn has_connection(&self, id: ConnectionId) -> bool {
        self.connections.contains_key(&id)
    }

    /// The running configuration changed (start, reload): C-LAN traces for new C-LANs,
    /// 0 for removed ones, and where the gatekeeper takes datagrams.
    fn configured(&mut self) {
        let at = seconds(self.now);
        let mut index = Vec::with_capacity(self.config.clans.len());
        for clan in &self.config.clans {
            let trace = match self.tally.clans.iter().position(|t| t.name == clan.name) {
                Some(trace) => trace,
                None => {
                    self.tally.clans.push(ClanTrace {
                        name: clan.name.clone(),
                        ..ClanTrace::default()
                    });
                    self.tally.clans.len() - 1
                }
            };
            let t = &mut self.tally.clans[trace];
            t.region = clan.region;
            t.priority = clan.priority;
            t.cap = clan.max_sockets;
            index.push(trace);
        }
        for trace in 0..self.tally.clans.len() {
            if !index.contains(&trace) {
                self.tally.gone(at, trace);
            }
        }
        self.trace_of = index;
        self.locals = self.gk.local_addresses().into_iter().collect();
        let signal = self.config.clans.iter().map(|clan| clan.signal_address());
        self.calls.configured(signal, &self.trace_of);
        self.tally.routed.relayed |= self.gk.routed();
    }

    /// An event of the timeline happens.
    fn event(&mut self, index: usize) {
        let calls_before = self.calls_before_event(index);
        self.act(index);
        self.calls_after_event(index, calls_before);
    }

    /// What event `index` does.
    fn act(&mut self, index: usize) {
        self.current_event = Some(index);
        let now = self.instant();
        let event = self.scenario.events[index].event.clone();
        tracing::debug!(at_s = seconds(self.now), event = %event.label(), "plan event");
        match event {
            Event::OutOfService(name) | Event::InService(name) => {
                let in_service = matches!(self.scenario.events[index].event, Event::InService(_));
                let clan = self.gk.clan_by_name(&name).expect("checked before the run");
                let out = self.gk.set_in_service(now, clan, in_service);
                self.after_gatekeeper(out);
            }
            Event::Cap { clan, max_sockets } => {
                let clan = self.gk.clan_by_name(&clan).expect("checked before the run");
                self.gk.set_cap(clan, max_sockets);
                if let Some(trace) = self.trace_of.get(clan).copied() {
                    self.tally.clans[trace].cap = max_sockets;
                }
                self.after_gatekeeper(Vec::new());
            }
            Event::Restart => self.restart(),
            Event::Reload(_) => {
                let config = self.reloads[&index].clone();
                match self.gk.reload(now, config.clone()) {
                    Ok(reloaded) => {
                        self.note_moves();
                        self.gk.set_events_watched(config.rebalance.is_some());
                        self.config = config;
                        self.configured();
                        self.after_gatekeeper(reloaded.transmits);
                    }
                    Err(error) => {
                        tracing::warn!(%error, "the plan's reload was refused");
                    }
                }
            }
        }
    }

    /// The gatekeeper restarts: a new core on the configuration in force, every
    /// registration and connection lost; each phone with a socket sees it reset.
    fn restart(&mut self) {
        for (reason, count) in &self.gk.socket_stats().refused {
            *self
                .tally
                .refused
                .entry(reason.name().to_string())
                .or_default() += count;
        }
        self.note_moves();
        let counts = self.routed_counts();
        self.tally.routed.earlier = counts;
        self.calls.restarted();
        self.gk = Gatekeeper::new(self.config.clone()).expect("it started on this configuration");
        self.gk.set_events_watched(self.config.rebalance.is_some());
        self.epoch += 1;
        self.gatekeeper_timer = None;
        let connections: Vec<(ConnectionId, u32)> = {
            let mut all: Vec<_> = self.connections.drain().collect();
            all.sort_unstable();
            all
        };
        let epoch = self.epoch;
        let at = self.now + self.latency;
        for (id, phone) in connections {
            self.at(at, What::Closed { epoch, id, phone });
        }
        // Connections still being made to the old gatekeeper fail too.
        for phone in 0..self.phones.len() as u32 {
            if matches!(self.phones[phone as usize].socket, Socket::Connecting) {
                let generation = self.generation(phone, PhoneTimer::Connect);
                self.at(at, What::Reset { phone, generation });
            }
        }
        self.locals = self.gk.local_addresses().into_iter().collect();
    }

    /// Connections the gatekeeper refused so far, by reason, over all its lives.
    pub fn refused(&self) -> std::collections::BTreeMap<String, u64> {
        let mut refused = self.tally.refused.clone();
        for (reason, count) in &self.gk.socket_stats().refused {
            *refused.entry(reason.name().to_string()).or_default() += count;
        }
        refused
    }
}

/// A configuration as the plan runs it: socket mode (so that establishments, their limit
/// and time to service are modelled; the loads are those of count mode), seeded by the
/// scenario when it has no seed of its own.
///
/// Count mode lets two C-LANs share an IP (two RAS ports), and so a signalling address, which
/// socket mode cannot tell apart: such a C-LAN is modelled with a signalling port of its own
/// (the next free one above its own on that IP), so that every C-LAN of the lab takes its
/// phones' sockets.
fn prepare(config: &mut Config, seed: u64) {
    config.gatekeeper.sockets = SocketMode::Tcp;
    if config.gatekeeper.seed.is_none() {
        config.gatekeeper.seed = Some(seed);
    }
    let mut taken = std::collections::HashSet::new();
    for clan in &mut config.clans {
        while clan
            .signal_addresses()
            .any(|address| taken.contains(&address))
        {
            clan.signal_port = clan.signal_port.wrapping_add(1).max(1);
        }
        taken.extend(clan.signal_addresses());
    }
}
