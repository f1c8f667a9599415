//! An exam in virtual time: the gatekeeper core, simulated phones (some misbehaving) and the
//! exam's engine, joined by a network without delay. The engine's actions go to the core as
//! the admin port hands them over; what passes between phones and core is what the engine
//! sees. Minutes of drill run in milliseconds.
#![allow(dead_code)] // each test binary uses a different part of this module

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rasgk::config::{self, Config};
use rasgk::exam::drill::Drill;
use rasgk::exam::engine::{Action, Engine, Happening, Outcome, Partner, Topology};
use rasgk::exam::report::EndpointReport;
use rasgk::exam::selector::Selector;
use rasgk::exam::sighting::{Direction, Sighting};
use rasgk::gatekeeper::ConnectionId;
use rasgk::gatekeeper::{Closing, Command, Gatekeeper};
use rasgk::phone::Phone;
use rasgk::ras::MessageKind;
use rasgk::simulated_phone::{Connection, Misbehaviour, Outgoing, Signal, SimulatedPhone};

/// The exam's own phone in the world: its alias and addresses.
pub const PARTNER_ALIAS: &str = "3999";
const PARTNER_RAS: &str = "127.1.255.250:1719";

/// One end of a connection in the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum End {
    Phone(usize, Connection),
    Gatekeeper(ConnectionId),
}

/// A datagram on its way: from, to, octets.
type Flight = (SocketAddr, SocketAddr, Vec<u8>);

/// The world.
pub struct ExamWorld {
    pub config: Config,
    pub gatekeeper: Gatekeeper,
    pub phones: Vec<SimulatedPhone>,
    pub engine: Engine,
    start: Instant,
    now: Instant,
    /// Phones that have not started yet: when they start.
    starts: Vec<Option<Instant>>,
    by_address: HashMap<SocketAddr, usize>,
    /// Connections: each end's other end.
    links: HashMap<End, End>,
    /// The exam's phone's index among the phones, once it is there.
    partner: Option<usize>,
    pub actions: Vec<Action>,
    /// Every action the engine asked for, in order.
    pub actions_done: Vec<Action>,
    /// Phones that vanish (send and answer nothing more) from this instant on.
    vanish_at: Vec<Option<Instant>>,
}

impl ExamWorld {
    /// The embedded default topology with the drill's time to live (`sockets`: socket
    /// mode, TTS for the aliases 59xx).
    pub fn new(drill: Drill, sockets: bool) -> ExamWorld {
        let mut toml =
            config::DEFAULT_TOML.replace("ttl_s = 300", &format!("ttl_s = {}", drill.ttl_s));
        assert!(toml.contains(&format!("ttl_s = {}", drill.ttl_s)));
        if sockets {
            toml = toml.replace("sockets = \"count\"", "sockets = \"tcp\"");
            toml.push_str("\n[[tts]]\naliases = [\"59*\"]\ntts = true\n");
        }
        let config = config::from_toml(&toml, "exam-world").unwrap_or_else(|e| panic!("{e}"));
        let topology = Topology::of(&config);
        let partner_ras: SocketAddr = PARTNER_RAS.parse().unwrap();
        let partner = Partner {
            alias: PARTNER_ALIAS.to_string(),
            call_signal_address: SocketAddr::new(partner_ras.ip(), partner_ras.port() + 1),
        };
        let engine = Engine::new(drill, topology, vec![Selector::parse("*").unwrap()], false)
            .with_partner(partner, 7);
        let mut gatekeeper = Gatekeeper::new(config.clone()).unwrap();
        gatekeeper.set_events_watched(true);
        let start = Instant::now();
        ExamWorld {
            config,
            gatekeeper,
            phones: Vec::new(),
            engine,
            start,
            now: start,
            starts: Vec::new(),
            by_address: HashMap::new(),
            links: HashMap::new(),
            partner: None,
            actions: Vec::new(),
            actions_done: Vec::new(),
            vanish_at: Vec::new(),
        }
    }

    /// A phone of extension `extension` at `address`, misbehaving so, starting `after`.
    pub fn phone(
        &mut self,
        extension: u32,
        address: &str,
        misbehaviours: &[Misbehaviour],
        after: Duration,
    ) {
        let address: SocketAddr = address.parse().unwrap();
        let mut phone = Phone::extension(extension, address);
        phone.call_signal_address = SocketAddr::new(address.ip(), address.port() + 1);
        let discovery = self.config.gatekeeper.discovery;
        self.by_address.insert(address, self.phones.len());
        self.phones
            .push(SimulatedPhone::new(phone, discovery, misbehaviours));
        self.starts.push(Some(self.start + after));
        self.vanish_at.push(None);
    }

    /// Phone `i` vanishes `after` the start: it sends and answers nothing more.
    pub fn vanish(&mut self, i: usize, after: Duration) {
        self.vanish_at[i] = Some(self.start + after);
    }

    fn vanished(&self, i: usize) -> bool {
        self.vanish_at[i].is_some_and(|at| at <= self.now)
    }

    fn at(&self) -> Duration {
        self.now - self.start
    }

    /// The exam's phone, as `rasgk exam` runs it: it answers and releases after 2 s.
    fn add_partner(&mut self) {
        if self.partner.is_some() {
            return;
        }
        let address: SocketAddr = PARTNER_RAS.parse().unwrap();
        let mut phone = Phone::extension(PARTNER_ALIAS.parse().unwrap(), address);
        phone.call_signal_address = SocketAddr::new(address.ip(), address.port() + 1);
        let mut sim = SimulatedPhone::new(phone, self.config.gatekeeper.discovery, &[]);
        sim.hold = Duration::from_secs(2);
        sim.answered_hold = Some(Duration::from_secs(2));
        sim.connect_within = Duration::from_secs(25);
        sim.keep_alive_share = 0.2;
        self.partner = Some(self.phones.len());
        self.by_address.insert(address, self.phones.len());
        self.phones.push(sim);
        self.starts.push(Some(self.start));
        self.vanish_at.push(None);
    }

    /// Runs until the exam has finished, or `limit` of virtual time has passed.
    pub fn run(&mut self, limit: Duration) -> Vec<EndpointReport> {
        self.add_partner();
        let mut wait_over = false;
        loop {
            let next = self.next_deadline();
            let Some(next) = next else { break };
            if next - self.start > limit {
                break;
            }
            self.now = self.now.max(next);
            let mut flights: VecDeque<Flight> = VecDeque::new();
            for i in 0..self.phones.len() {
                if self.starts[i].is_some_and(|at| at <= self.now) {
                    self.starts[i] = None;
                    let out = self.phones[i].start(self.now);
                    flights.extend(self.outputs(i, out));
                }
                if self.vanished(i) {
                    continue;
                }
                if self.phones[i].deadline().is_some_and(|at| at <= self.now) {
                    let out = self.phones[i].tick(self.now);
                    flights.extend(self.outputs(i, out));
                }
            }
            if self
                .gatekeeper
                .poll_timeout()
                .is_some_and(|at| at <= self.now)
            {
                let out = self.gatekeeper.handle_timeout(self.now);
                flights.extend(out.into_iter().map(|t| (t.local, t.to, t.payload.to_vec())));
            }
            flights.extend(self.connections_and_events());
            let actions = std::mem::take(&mut self.actions);
            flights.extend(self.act(actions));
            self.carry(flights);
            if !wait_over && self.at() >= Duration::from_secs(30) {
                wait_over = true;
                self.engine.stop_joining();
            }
            let actions = self.engine.tick(self.at());
            self.apply(actions);
            if self.engine.finished() {
                break;
            }
        }
        let actions = self.engine.end("the test's time ran out");
        self.apply(actions);
        self.engine.reports()
    }

    fn next_deadline(&self) -> Option<Instant> {
        let mut all: Vec<Instant> = Vec::new();
        all.extend(self.starts.iter().flatten().copied());
        all.extend(
            (0..self.phones.len())
                .filter(|&i| !self.vanished(i))
                .filter_map(|i| self.phones[i].deadline()),
        );
        all.extend(self.gatekeeper.poll_timeout());
        all.extend(self.engine.deadline().map(|d| self.start + d));
        // A heartbeat, so that the engine's steps that wait on nothing in particular
        // (the first keep-alive window) still move on.
        all.push(self.now + Duration::from_millis(250));
        // What is due now has run: the next thing is later.
        all.into_iter().filter(|&at| at > self.now).min()
    }

    fn sent_by(&self, i: usize, out: Vec<Outgoing>) -> Vec<Flight> {
        let from = self.phones[i].phone.ras_address;
        out.into_iter().map(|o| (from, o.to, o.datagram)).collect()
    }

    /// What phone `i` sent, and what its call signalling did: connections opened, frames
    /// carried to the other end, closed — and what those caused, until it settles.
    fn outputs(&mut self, i: usize, out: Vec<Outgoing>) -> Vec<Flight> {
        let mut flights = self.sent_by(i, out);
        let mut queue = vec![i];
        let now = self.now;
        while let Some(i) = queue.pop() {
            for signal in self.phones[i].signals() {
                match signal {
                    Signal::Connect { connection, to } => {
                        let callee = self
                            .phones
                            .iter()
                            .position(|p| p.phone.call_signal_address == to)
                            .filter(|&j| !self.vanished(j));
                        let out = match callee {
                            Some(j) => {
                                let from = SocketAddr::new(
                                    self.phones[i].phone.call_signal_address.ip(),
                                    40000 + connection.0 as u16,
                                );
                                let accepted = self.phones[j].accepted(now, from);
                                self.link(End::Phone(i, connection), End::Phone(j, accepted));
                                self.phones[i].connected(now, connection)
                            }
                            None => self.phones[i].connect_failed(now, connection, "refused"),
                        };
                        flights.extend(self.sent_by(i, out));
                        queue.push(i);
                    }
                    Signal::Send { connection, frame } => {
                        match self.links.get(&End::Phone(i, connection)).copied() {
                            Some(End::Phone(j, theirs)) if !self.vanished(j) => {
                                let out = self.phones[j].read(now, theirs, &frame);
                                flights.extend(self.sent_by(j, out));
                                queue.push(j);
                            }
                            _ => {}
                        }
                    }
                    Signal::Close { connection } => match self.unlink(End::Phone(i, connection)) {
                        Some(End::Phone(j, theirs)) => {
                            let out = self.phones[j].closed(now, theirs);
                            flights.extend(self.sent_by(j, out));
                            queue.push(j);
                        }
                        Some(End::Gatekeeper(id)) => {
                            self.gatekeeper.closed(now, id, Closing::Fin);
                        }
                        None => {}
                    },
                }
            }
            let notes = self.phones[i].notes();
            if Some(i) == self.partner {
                for note in notes {
                    let at = note.at - self.start;
                    let actions = self.engine.heard(at, note.call_id, note.event);
                    self.actions.extend(actions);
                }
            }
        }
        flights
    }

    fn link(&mut self, a: End, b: End) {
        self.links.insert(a, b);
        self.links.insert(b, a);
    }

    fn unlink(&mut self, a: End) -> Option<End> {
        let b = self.links.remove(&a)?;
        self.links.remove(&b);
        Some(b)
    }

    /// Delivers datagrams, and what they cause, until nothing is in flight.
    fn carry(&mut self, mut flights: VecDeque<Flight>) {
        let mut carried = 0u32;
        while let Some((from, to, datagram)) = flights.pop_front() {
            carried += 1;
            assert!(
                carried < 100_000,
                "datagrams going round without end at {:?}: {:?}",
                self.at(),
                rasgk::ras::decode(&datagram).map(|m| rasgk::exam::sighting::describe(&m))
            );
            if let Some(&i) = self.by_address.get(&to) {
                // From the gatekeeper to a phone.
                let sighting = Sighting::of(self.at(), Direction::Out, from, to, &datagram);
                if let Some(sighting) = sighting {
                    let actions = self.engine.observe(sighting);
                    self.pending(actions);
                }
                if self.vanished(i) {
                    continue;
                }
                let out = self.phones[i].receive(self.now, from, &datagram);
                flights.extend(self.outputs(i, out));
            } else {
                let sighting = Sighting::of(self.at(), Direction::In, to, from, &datagram);
                if let Some(sighting) = sighting {
                    let actions = self.engine.observe(sighting);
                    self.pending(actions);
                }
                let out = self.gatekeeper.handle(self.now, to, from, &datagram);
                flights.extend(out.into_iter().map(|t| (t.local, t.to, t.payload.to_vec())));
            }
            flights.extend(self.connections_and_events());
            let actions = std::mem::take(&mut self.actions);
            flights.extend(self.act(actions));
        }
    }

    fn pending(&mut self, actions: Vec<Action>) {
        self.actions.extend(actions);
    }

    fn apply(&mut self, actions: Vec<Action>) {
        let flights = self.act(actions);
        self.carry(flights.into());
    }

    /// The gatekeeper's socket commands (TTS phones keep or decline what it opens) and its
    /// events, for the engine.
    fn connections_and_events(&mut self) -> Vec<Flight> {
        let mut flights = Vec::new();
        let now = self.now;
        for command in self.gatekeeper.take_commands() {
            match command {
                Command::Connect { id, to, from } => {
                    let phone = self
                        .phones
                        .iter()
                        .position(|p| p.phone.call_signal_address == to)
                        .filter(|&i| !self.vanished(i));
                    match phone {
                        Some(i) => {
                            self.gatekeeper.connected(now, id);
                            let accepted =
                                self.phones[i].accepted(now, SocketAddr::new(from, 50000));
                            self.link(End::Gatekeeper(id), End::Phone(i, accepted));
                        }
                        None => self.gatekeeper.connect_failed(now, id),
                    }
                }
                Command::Close { id, .. } => {
                    if let Some(End::Phone(i, theirs)) = self.unlink(End::Gatekeeper(id)) {
                        let out = self.phones[i].closed(now, theirs);
                        flights.extend(self.outputs(i, out));
                    }
                }
                Command::Send { id, payload } => {
                    if let Some(End::Phone(i, theirs)) =
                        self.links.get(&End::Gatekeeper(id)).copied()
                    {
                        let out = self.phones[i].read(now, theirs, &payload);
                        flights.extend(self.outputs(i, out));
                    }
                }
            }
        }
        for event in self.gatekeeper.drain_events() {
            let json = serde_json::to_value(&event).unwrap();
            if std::env::var("EXAM_WORLD_EVENTS").is_ok() {
                eprintln!("event {:?} {json}", self.at());
            }
            if let Some(happening) = Happening::from_json(&json) {
                let actions = self.engine.happened(self.at(), happening);
                self.actions.extend(actions);
            }
        }
        flights
    }

    /// Applies the engine's actions to the core as the admin port would: the datagrams
    /// they send, and the engine told how each went.
    fn act(&mut self, actions: Vec<Action>) -> Vec<Flight> {
        let mut flights = Vec::new();
        let mut queue: VecDeque<Action> = actions.into();
        while let Some(action) = queue.pop_front() {
            let now = self.now;
            let (outcome, out) = match &action {
                Action::Withhold {
                    endpoint_id,
                    request,
                } => match self.gatekeeper.withhold(endpoint_id, *request) {
                    Ok(_) => (Outcome::Done, Vec::new()),
                    Err(_) => (Outcome::UnknownEndpoint, Vec::new()),
                },
                Action::Irq { endpoint_id } => match self.gatekeeper.request_info(now, endpoint_id)
                {
                    Ok((_, out)) => (Outcome::Done, out),
                    Err(_) => (Outcome::UnknownEndpoint, Vec::new()),
                },
                Action::Unregister { endpoint_id } => {
                    match self.gatekeeper.unregister_endpoint(now, endpoint_id) {
                        Ok(out) => (Outcome::Done, out),
                        Err(_) => (Outcome::UnknownEndpoint, Vec::new()),
                    }
                }
                Action::Alternate { endpoint_id } => {
                    match self.gatekeeper.refer_to_alternate(endpoint_id) {
                        Ok(name) => (Outcome::Alternate(name), Vec::new()),
                        Err(_) => (Outcome::UnknownEndpoint, Vec::new()),
                    }
                }
                Action::ClanService { clans, in_service } => {
                    let idxs: Vec<usize> = clans
                        .iter()
                        .map(|clan| self.gatekeeper.clan_by_name(clan).unwrap())
                        .collect();
                    let out = self.gatekeeper.set_many_in_service(now, &idxs, *in_service);
                    (Outcome::Done, out)
                }
                Action::Restart => {
                    self.gatekeeper.restart().unwrap();
                    // Its connections are closed: the commands say so.
                    (Outcome::Done, Vec::new())
                }
                Action::Call { callee, call_id } => {
                    let partner = self.partner.expect("the exam's phone");
                    let out = self.phones[partner].dial(now, callee, *call_id);
                    flights.extend(self.outputs(partner, out));
                    (Outcome::Done, Vec::new())
                }
                Action::AwaitCall {
                    aliases,
                    partner,
                    call_id,
                    ..
                } => {
                    let caller = self.phones.iter().position(|p| {
                        p.phone
                            .aliases
                            .iter()
                            .any(|a| aliases.contains(&a.to_string()))
                    });
                    if let Some(i) = caller.filter(|&i| !self.vanished(i)) {
                        let out = self.phones[i].dial(now, partner, *call_id);
                        flights.extend(self.outputs(i, out));
                    }
                    (Outcome::Done, Vec::new())
                }
            };
            flights.extend(out.into_iter().map(|t| (t.local, t.to, t.payload.to_vec())));
            self.actions_done.push(action.clone());
            let more = self.engine.acted(self.at(), &action, outcome);
            queue.extend(more);
        }
        flights
    }
}

/// The ids of the checks with this verdict.
pub fn with_verdict(report: &EndpointReport, verdict: &str) -> Vec<String> {
    report
        .checks
        .iter()
        .filter(|c| c.verdict.name() == verdict)
        .map(|c| c.id.clone())
        .collect()
}

/// `Withhold` of RRQ, as the engine asks it.
pub fn withholds_rrq(action: &Action) -> bool {
    matches!(
        action,
        Action::Withhold {
            request: MessageKind::Rrq,
            ..
        }
    )
}
