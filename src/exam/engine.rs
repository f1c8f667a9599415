//! The exam itself, with no I/O: what the gatekeeper saw ([`Sighting`]s, and the
//! [`Happening`]s of its event stream) goes in with the time; the drill's actions on the
//! gatekeeper ([`Action`]s, the admin port's drills) come out, and each endpoint's checks
//! are graded from what the gatekeeper saw it do. The live exam (`rasgk exam`) feeds it
//! from the admin port of its gatekeeper; tests feed it in virtual time.
//!
//! Each endpoint has its own timeline: its steps start when it has registered and follow
//! one another as each ends (done, or its wait over). The steps that act on the whole
//! gatekeeper — `restart`, `clan-out`, `home-out` — wait until every endpoint examined has
//! reached them; `clan-out` then takes one C-LAN out at a time (and `home-out` one region's),
//! grading only the endpoints that were on it, so that no endpoint's check is spoiled by
//! another's. New endpoints are taken until the first of those steps starts.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::time::Duration;

use crate::config::{Config, LinkKind, RegionId, SocketMode};
use crate::ras::{self, asn, socket_addr, MessageKind, RasMessage};

use super::catalogue::{self, Check, Needs};
use super::drill::{Drill, Step};
use super::report::EndpointReport;
use super::selector::Selector;
use super::sighting::{Direction, Sighting};
use super::verdict::{Evidence, Graded, Verdict};

/// What the exam asks of the gatekeeper, as the admin port's drills do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Withhold the answer to the endpoint's next request of this kind.
    Withhold {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
        /// The request.
        request: MessageKind,
    },
    /// Send it an IRQ.
    Irq {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
    },
    /// Unregister it with a gatekeeper-sent URQ.
    Unregister {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
    },
    /// Refuse its next full RRQ with an RRJ naming an alternate.
    Alternate {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
    },
    /// C-LANs out of service, or back, at one instant.
    ClanService {
        /// Their names.
        clans: Vec<String>,
        /// Back in service?
        in_service: bool,
    },
    /// The gatekeeper loses its state.
    Restart,
}

/// How an action went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Done.
    Done,
    /// The gatekeeper does not know the endpoint (its registration ended).
    UnknownEndpoint,
    /// `Alternate`: the alternate named, or none (its AGL has no other C-LAN in service).
    Alternate(Option<String>),
    /// It could not be done, and why.
    Failed(String),
}

/// Something the gatekeeper's event stream said about an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Happening {
    /// Its registration lapsed: no keep-alive within its time to live.
    Lapsed {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
    },
    /// Registered, TTS or not (socket mode: a TTS phone waits for the gatekeeper's socket).
    Registered {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
        /// A TTS phone.
        tts: bool,
        /// The C-LAN of its socket (for a TTS phone, the one the gatekeeper chose), if
        /// it has one yet.
        clan: Option<String>,
        /// Its home region.
        region: Option<RegionId>,
    },
    /// Its socket was established (the phone's connection, or the gatekeeper's to a TTS
    /// phone).
    SocketEstablished {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
        /// The C-LAN of the socket.
        clan: Option<String>,
    },
    /// Its socket closed while it stayed registered.
    SocketClosed {
        /// Its `endpointIdentifier`.
        endpoint_id: String,
        /// Why (`declined`, `peer_closed`, …).
        reason: String,
    },
}

impl Happening {
    /// The endpoint it is about.
    pub fn endpoint_id(&self) -> &str {
        match self {
            Happening::Lapsed { endpoint_id }
            | Happening::Registered { endpoint_id, .. }
            | Happening::SocketEstablished { endpoint_id, .. }
            | Happening::SocketClosed { endpoint_id, .. } => endpoint_id,
        }
    }

    /// The happening of one `/api/events` event (its JSON), if it is one the exam reads.
    pub fn from_json(event: &serde_json::Value) -> Option<Happening> {
        let text = |key: &str| event.get(key).and_then(|v| v.as_str()).map(str::to_string);
        let endpoint_id = text("endpoint_id")?;
        match event.get("type")?.as_str()? {
            "unregistered" if text("reason").as_deref() == Some("ttl") => {
                Some(Happening::Lapsed { endpoint_id })
            }
            "registered" => Some(Happening::Registered {
                endpoint_id,
                tts: event.get("tts").and_then(|v| v.as_bool()) == Some(true),
                clan: text("clan"),
                region: event
                    .get("region")
                    .and_then(|v| v.as_u64())
                    .and_then(|r| RegionId::try_from(r).ok()),
            }),
            "socket_established" | "tts_socket" => Some(Happening::SocketEstablished {
                endpoint_id,
                clan: text("clan"),
            }),
            "socket_closed" => Some(Happening::SocketClosed {
                endpoint_id,
                reason: text("reason").unwrap_or_default(),
            }),
            _ => None,
        }
    }
}

/// What the exam needs to know of its gatekeeper.
#[derive(Debug, Clone)]
pub struct Topology {
    clans: Vec<Spot>,
    discovery: Vec<SocketAddr>,
    direct_links: Vec<(RegionId, RegionId)>,
    socket_mode: bool,
}

#[derive(Debug, Clone)]
struct Spot {
    name: String,
    addresses: Vec<SocketAddr>,
    region: RegionId,
    in_service: bool,
}

impl Topology {
    /// The topology of a configuration.
    pub fn of(config: &Config) -> Topology {
        let mut discovery = vec![config.gatekeeper.discovery];
        discovery.extend(config.gatekeeper.discovery6);
        Topology {
            clans: config
                .clans
                .iter()
                .map(|clan| Spot {
                    name: clan.name.clone(),
                    addresses: clan.ras_addresses().collect(),
                    region: clan.region,
                    in_service: clan.in_service,
                })
                .collect(),
            discovery,
            direct_links: config
                .links
                .iter()
                .filter(|l| l.kind == LinkKind::Direct)
                .flat_map(|l| {
                    let back = l.symmetric.then_some((l.far, l.near));
                    std::iter::once((l.near, l.far)).chain(back)
                })
                .collect(),
            socket_mode: config.gatekeeper.sockets == SocketMode::Tcp,
        }
    }

    fn clan_at(&self, address: SocketAddr) -> Option<usize> {
        self.clans
            .iter()
            .position(|c| c.addresses.contains(&address))
    }

    fn clan_of_ip(&self, ip: std::net::IpAddr) -> Option<usize> {
        self.clans
            .iter()
            .position(|c| c.addresses.iter().any(|a| a.ip() == ip))
    }

    fn name_at(&self, address: SocketAddr) -> String {
        self.clan_at(address)
            .map_or_else(|| address.to_string(), |i| self.clans[i].name.clone())
    }

    fn linked_directly(&self, home: RegionId, other: RegionId) -> bool {
        self.direct_links.contains(&(home, other))
    }
}

/// One endpoint's progress, for the terminal and `/api/exam`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Progress {
    /// How it is named.
    pub endpoint: String,
    /// The step it is at (`waiting` at a step every endpoint must reach first, `done`).
    pub step: String,
    /// Checks graded so far.
    pub graded: usize,
    /// Of them, failed.
    pub failed: usize,
}

/// A step running for one endpoint.
#[derive(Debug, Clone)]
struct Running {
    step: Step,
    started: Duration,
    deadline: Duration,
    /// The endpoint's history from here on is the step's.
    mark: usize,
    /// Where the step sent it: the alternate (`alternate`), the C-LANs out (`clan-out`,
    /// `home-out`).
    targets: Vec<SocketAddr>,
    /// The region taken out (`home-out`).
    region: Option<RegionId>,
    /// The AGL the endpoint held when the step started.
    agl: Vec<SocketAddr>,
    /// `alternate`: the refusal is armed; the URQ that makes it register again is still
    /// to be sent.
    trigger_pending: bool,
}

/// One endpoint under examination.
#[derive(Debug, Clone)]
struct Examinee {
    peer: SocketAddr,
    name: String,
    aliases: Vec<String>,
    endpoint_id: Option<String>,
    /// The C-LAN of its socket (a TTS phone's may differ from the one it registered at).
    clan: Option<usize>,
    /// The C-LAN it last registered at (a full RRQ confirmed): the gatekeeper it talks to.
    via: Option<usize>,
    agl: Vec<SocketAddr>,
    ttl: Option<Duration>,
    registered_at: Option<Duration>,
    /// Its history after the RCF of its last registration.
    registered_mark: usize,
    tts: bool,
    /// The gatekeeper holds its registration now (its last RCF came after its last URQ or
    /// RRJ, and no lapse or restart since).
    registered_now: bool,
    /// When its registration last ended.
    unregistered_at: Option<Duration>,
    /// Since when its next step waits for it to be registered.
    waiting_since: Option<Duration>,
    /// Its home region, as the gatekeeper's event said.
    home: Option<RegionId>,
    history: Vec<Sighting>,
    happenings: Vec<(Duration, Happening)>,
    graded: Vec<Graded>,
    step: usize,
    running: Option<Running>,
    at_barrier: bool,
    gone: Option<String>,
}

impl Examinee {
    fn graded(&self, id: &str) -> bool {
        self.graded.iter().any(|g| g.id == id)
    }

    fn done(&self, drill: &Drill) -> bool {
        self.step >= drill.steps.len() && self.running.is_none()
    }

    fn since(&self, mark: usize) -> impl Iterator<Item = &Sighting> {
        self.history[mark.min(self.history.len())..].iter()
    }

    fn evidence(&self, mark: usize, limit: usize) -> Vec<Evidence> {
        let mut all: Vec<Evidence> = self.since(mark).map(Sighting::evidence).collect();
        if all.len() > limit {
            all.drain(limit / 2..all.len() - limit / 2);
        }
        all
    }
}

/// The checks graded over the whole exam, not run as steps.
const THROUGHOUT: [&str; 4] = ["discovery", "registration", "socket", "password"];

/// The steps that act on the whole gatekeeper.
const SHARED: [&str; 3] = ["restart", "clan-out", "home-out"];

/// A shared step running.
#[derive(Debug, Clone)]
struct Shared {
    id: &'static str,
    /// The examinees at it, by index.
    members: Vec<usize>,
    /// The C-LANs taken out for the current round.
    out: Vec<usize>,
    /// The examinees of the current round.
    round: Vec<usize>,
    restarted: bool,
    /// The next round starts no earlier than this: what the last one caused (the events
    /// of its registrations, which come apart from its RAS) has settled.
    next_at: Duration,
    /// When every member had reached it, or its last round ended: it waits for members to
    /// be registered from here.
    since: Duration,
}

/// How long a shared step waits between rounds, and before its first.
const SETTLE: Duration = Duration::from_secs(1);

/// Evidence kept per check: at most this many messages.
const EVIDENCE: usize = 24;

/// Sightings kept of a peer not (yet) examined.
const STRANGER_HISTORY: usize = 16;

/// The exam.
#[derive(Debug)]
pub struct Engine {
    drill: Drill,
    topology: Topology,
    selectors: Vec<Selector>,
    password: bool,
    examinees: Vec<Examinee>,
    by_peer: HashMap<SocketAddr, usize>,
    strangers: HashMap<SocketAddr, Vec<Sighting>>,
    joining: bool,
    shared: Option<Shared>,
    shared_done: BTreeSet<&'static str>,
    now: Duration,
    actions: Vec<Action>,
    /// Events of endpoint identifiers no endpoint examined has (yet).
    unclaimed: HashMap<String, Vec<(Duration, Happening)>>,
    /// Endpoint identifiers of a new registration whose RCF has not been seen yet.
    fresh: std::collections::HashSet<String>,
}

impl Engine {
    /// An exam of the endpoints `selectors` name, running `drill` against a gatekeeper of
    /// `topology`; `password`: the endpoints' tokens can be checked.
    pub fn new(drill: Drill, topology: Topology, selectors: Vec<Selector>, password: bool) -> Self {
        Engine {
            drill,
            topology,
            selectors,
            password,
            examinees: Vec::new(),
            by_peer: HashMap::new(),
            strangers: HashMap::new(),
            joining: true,
            shared: None,
            shared_done: BTreeSet::new(),
            now: Duration::ZERO,
            actions: Vec::new(),
            unclaimed: HashMap::new(),
            fresh: std::collections::HashSet::new(),
        }
    }

    /// The drill.
    pub fn drill(&self) -> &Drill {
        &self.drill
    }

    /// How many endpoints are examined.
    pub fn examined(&self) -> usize {
        self.examinees.len()
    }

    /// Every endpoint has been graded on every step.
    pub fn finished(&self) -> bool {
        !self.examinees.is_empty()
            && self.examinees.iter().all(|e| e.done(&self.drill))
            && self.shared.is_none()
    }

    /// The selectors naming one endpoint that no endpoint has matched yet.
    pub fn unmatched(&self) -> Vec<&Selector> {
        self.selectors
            .iter()
            .filter(|s| s.names_one())
            .filter(|s| !self.examinees.iter().any(|e| s.matches(e.peer, &e.aliases)))
            .collect()
    }

    /// No endpoint joins from now on (the wait for registrations is over).
    pub fn stop_joining(&mut self) {
        self.joining = false;
    }

    /// A RAS message the gatekeeper received or sent.
    pub fn observe(&mut self, sighting: Sighting) -> Vec<Action> {
        self.now = self.now.max(sighting.at);
        let index = match self.by_peer.get(&sighting.peer) {
            Some(&index) => Some(index),
            None => self.admit(&sighting),
        };
        let Some(index) = index else {
            let kept = self.strangers.entry(sighting.peer).or_default();
            if kept.len() >= STRANGER_HISTORY {
                kept.remove(0);
            }
            kept.push(sighting);
            return Vec::new();
        };
        self.learn(index, &sighting);
        let examinee = &mut self.examinees[index];
        if sighting.direction == Direction::Out {
            match sighting.kind() {
                MessageKind::Rcf => examinee.registered_now = true,
                MessageKind::Urq | MessageKind::Rrj => {
                    examinee.registered_now = false;
                    examinee.unregistered_at = Some(sighting.at);
                }
                _ => {}
            }
        }
        examinee.history.push(sighting);
        self.advance()
    }

    /// An event of the gatekeeper's.
    pub fn happened(&mut self, at: Duration, happening: Happening) -> Vec<Action> {
        self.now = self.now.max(at);
        let id = happening.endpoint_id().to_string();
        // Endpoint identifiers are used again once free (after a registration lapsed, or a
        // restart): a registration's event belongs to the endpoint whose RCF names it, which
        // may come before or just after it.
        let holder = self
            .examinees
            .iter()
            .position(|e| e.endpoint_id.as_deref() == Some(&id));
        let examinee = match &happening {
            Happening::Registered { .. } => {
                let just_now = |i: &usize| {
                    self.examinees[*i]
                        .registered_at
                        .is_some_and(|t| at.saturating_sub(t) <= Duration::from_secs(2))
                };
                let holder = holder.filter(just_now);
                if holder.is_none() {
                    self.fresh.insert(id.clone());
                }
                holder
            }
            _ if self.fresh.contains(&id) => None,
            _ => holder,
        };
        match examinee {
            Some(index) => self.apply(index, at, happening),
            // The event of a registration may come before its RCF is seen: kept until then.
            None => {
                let kept = self.unclaimed.entry(id).or_default();
                if kept.len() < STRANGER_HISTORY {
                    kept.push((at, happening));
                }
            }
        }
        self.advance()
    }

    /// What an event tells of an endpoint: TTS or not, its home, its socket's C-LAN, its
    /// registration lapsed.
    fn apply(&mut self, index: usize, at: Duration, happening: Happening) {
        let topology = &self.topology;
        let clan_named = |name: &Option<String>| {
            name.as_ref()
                .and_then(|name| topology.clans.iter().position(|c| &c.name == name))
        };
        let examinee = &mut self.examinees[index];
        match &happening {
            Happening::Registered {
                tts, clan, region, ..
            } => {
                examinee.tts = *tts;
                examinee.home = *region;
                if let Some(clan) = clan_named(clan) {
                    examinee.clan = Some(clan);
                }
            }
            Happening::SocketEstablished { clan, .. } => {
                if let Some(clan) = clan_named(clan) {
                    examinee.clan = Some(clan);
                }
            }
            Happening::Lapsed { .. } if examinee.gone.is_none() => {
                examinee.registered_now = false;
                examinee.unregistered_at = Some(at);
                examinee.gone = Some(format!(
                    "its registration lapsed at {:.1} s: no keep-alive within its time to live",
                    at.as_secs_f64()
                ));
            }
            _ => {}
        }
        examinee.happenings.push((at, happening));
    }

    /// Time passes.
    pub fn tick(&mut self, at: Duration) -> Vec<Action> {
        self.now = self.now.max(at);
        self.advance()
    }

    /// How an action went.
    pub fn acted(&mut self, at: Duration, action: &Action, outcome: Outcome) -> Vec<Action> {
        self.now = self.now.max(at);
        if *action == Action::Restart && outcome == Outcome::Done {
            for examinee in &mut self.examinees {
                examinee.registered_now = false;
                examinee.unregistered_at = Some(at);
            }
        }
        let id = match action {
            Action::Withhold { endpoint_id, .. }
            | Action::Irq { endpoint_id }
            | Action::Unregister { endpoint_id }
            | Action::Alternate { endpoint_id } => Some(endpoint_id.clone()),
            _ => None,
        };
        let examinee = id.and_then(|id| {
            self.examinees
                .iter_mut()
                .find(|e| e.endpoint_id.as_deref() == Some(&id))
        });
        if let Some(examinee) = examinee {
            match outcome {
                Outcome::UnknownEndpoint if examinee.gone.is_none() => {
                    examinee.gone = Some(format!(
                        "the gatekeeper no longer knew it at {:.1} s",
                        at.as_secs_f64()
                    ));
                }
                Outcome::Alternate(None) => {
                    if let Some(running) = examinee.running.take() {
                        examinee.graded.push(Graded::skipped(
                            running.step.check,
                            Needs::Alternates.missing(),
                        ));
                        examinee.step += 1;
                    }
                }
                Outcome::Alternate(Some(name)) => {
                    let address = self
                        .topology
                        .clans
                        .iter()
                        .find(|c| c.name == name)
                        .and_then(|c| c.addresses.first().copied());
                    if let (Some(running), Some(address)) = (examinee.running.as_mut(), address) {
                        running.targets = vec![address];
                        running.trigger_pending = true;
                    }
                }
                Outcome::Failed(why) => {
                    if let Some(running) = examinee.running.take() {
                        examinee.graded.push(Graded::skipped(
                            running.step.check,
                            format!("the gatekeeper could not run the step: {why}"),
                        ));
                        examinee.step += 1;
                    }
                }
                _ => {}
            }
        }
        self.advance()
    }

    /// When the engine next has something to do without any input.
    pub fn deadline(&self) -> Option<Duration> {
        self.examinees
            .iter()
            .filter_map(|e| e.running.as_ref().map(|r| r.deadline))
            .chain(self.shared.as_ref().map(|s| s.next_at))
            .min()
    }

    /// Every endpoint's progress.
    pub fn progress(&self) -> Vec<Progress> {
        self.examinees
            .iter()
            .map(|e| Progress {
                endpoint: e.name.clone(),
                step: if let Some(r) = &e.running {
                    r.step.check.id.to_string()
                } else if e.at_barrier {
                    "waiting".to_string()
                } else if e.done(&self.drill) {
                    "done".to_string()
                } else {
                    "starting".to_string()
                },
                graded: e.graded.len(),
                failed: e
                    .graded
                    .iter()
                    .filter(|g| g.verdict == Verdict::Fail)
                    .count(),
            })
            .collect()
    }

    /// Every endpoint's checks graded so far, in the order of [`progress`](Engine::progress).
    pub fn graded(&self) -> Vec<&[Graded]> {
        self.examinees.iter().map(|e| e.graded.as_slice()).collect()
    }

    /// Checks graded since the last call, by endpoint: (endpoint, check).
    pub fn graded_since(&self, seen: &mut HashMap<String, usize>) -> Vec<(String, Graded)> {
        let mut out = Vec::new();
        for e in &self.examinees {
            let count = seen.entry(e.name.clone()).or_insert(0);
            for g in &e.graded[*count..] {
                out.push((e.name.clone(), g.clone()));
            }
            *count = e.graded.len();
        }
        out
    }

    /// Ends the exam where it stands (its time is up, or it was interrupted, `why`): every
    /// check not graded is skipped with `why`; the actions put every C-LAN taken out back.
    pub fn end(&mut self, why: &str) -> Vec<Action> {
        let mut out = std::mem::take(&mut self.actions);
        if let Some(shared) = self.shared.take() {
            out.extend(self.back_in_service(&shared.out));
        }
        for examinee in &mut self.examinees {
            examinee.running = None;
            examinee.at_barrier = false;
            examinee.step = self.drill.steps.len();
            if examinee.gone.is_none() {
                examinee.gone = Some(why.to_string());
            }
        }
        self.grade_throughout_all();
        out
    }

    /// The findings, endpoint by endpoint, in the drill's order of checks.
    pub fn reports(&self) -> Vec<EndpointReport> {
        self.examinees
            .iter()
            .map(|e| {
                let mut checks = Vec::new();
                for step in &self.drill.steps {
                    let graded = e.graded.iter().find(|g| g.id == step.check.id);
                    checks.push(graded.cloned().unwrap_or_else(|| {
                        Graded::skipped(
                            step.check,
                            e.gone
                                .clone()
                                .unwrap_or_else(|| "the exam ended before it ran".to_string()),
                        )
                    }));
                }
                EndpointReport {
                    endpoint: e.name.clone(),
                    aliases: e.aliases.clone(),
                    ras_address: Some(e.peer.to_string()),
                    checks,
                    messages: e
                        .history
                        .iter()
                        .take(5000)
                        .map(Sighting::evidence)
                        .collect(),
                }
            })
            .collect()
    }

    /// A new endpoint, if this sighting's peer is one the selectors name and endpoints
    /// still join: its RRQ (or GRQ) names its aliases.
    fn admit(&mut self, sighting: &Sighting) -> Option<usize> {
        if !self.joining || sighting.direction != Direction::In {
            return None;
        }
        let aliases = match &sighting.message {
            RasMessage::registrationRequest(rrq) if rrq.keep_alive != Some(true) => {
                alias_texts(rrq.terminal_alias.as_deref())
            }
            _ => return None,
        };
        if !self
            .selectors
            .iter()
            .any(|s| s.matches(sighting.peer, &aliases))
        {
            return None;
        }
        let name = aliases
            .first()
            .cloned()
            .unwrap_or_else(|| sighting.peer.to_string());
        let history = self.strangers.remove(&sighting.peer).unwrap_or_default();
        let index = self.examinees.len();
        self.examinees.push(Examinee {
            peer: sighting.peer,
            name,
            aliases,
            endpoint_id: None,
            clan: None,
            via: None,
            agl: Vec::new(),
            ttl: None,
            registered_at: None,
            registered_mark: 0,
            tts: false,
            registered_now: false,
            unregistered_at: None,
            waiting_since: None,
            home: None,
            history,
            happenings: Vec::new(),
            graded: Vec::new(),
            step: 0,
            running: None,
            at_barrier: false,
            gone: None,
        });
        self.by_peer.insert(sighting.peer, index);
        Some(index)
    }

    /// What a message tells of its endpoint: its registration, AGL and time to live.
    fn learn(&mut self, index: usize, sighting: &Sighting) {
        let first_registration;
        {
            let topology = &self.topology;
            let examinee = &mut self.examinees[index];
            let RasMessage::registrationConfirm(rcf) = &sighting.message else {
                return;
            };
            // Every RCF, a keep-alive's too, carries the AGL as it stands.
            if let Some(agl) = rcf.alternate_gatekeeper.as_deref() {
                examinee.agl = alternate_addresses(agl);
            }
            let full = examinee.history.iter().rev().find(|s| {
                s.direction == Direction::In
                    && s.kind() == MessageKind::Rrq
                    && s.seq() == sighting.seq()
            });
            let Some(full) = full.filter(|s| s.is_full_rrq()) else {
                return;
            };
            first_registration = examinee.registered_at.is_none();
            // Its C-LAN is where its socket is: the RCF's callSignalAddress (the C-LAN's
            // signalling address, in either socket mode); the RRQ's C-LAN else.
            let signal = rcf.call_signal_address.iter().find_map(socket_addr);
            examinee.clan = signal
                .and_then(|a| topology.clan_of_ip(a.ip()))
                .or_else(|| topology.clan_at(full.local));
            examinee.via = topology.clan_at(full.local);
            examinee.registered_mark = examinee.history.len() + 1;
            examinee.endpoint_id = Some(ras::bmp_text(&rcf.endpoint_identifier.0));
            examinee.agl = rcf
                .alternate_gatekeeper
                .as_deref()
                .map(alternate_addresses)
                .unwrap_or_default();
            examinee.ttl = rcf
                .time_to_live
                .as_ref()
                .map(|t| Duration::from_secs(u64::from(t.0)));
            examinee.registered_at = Some(sighting.at);
        }
        let id = self.examinees[index]
            .endpoint_id
            .clone()
            .unwrap_or_default();
        self.fresh.remove(&id);
        for (i, other) in self.examinees.iter_mut().enumerate() {
            if i != index && other.endpoint_id.as_deref() == Some(id.as_str()) {
                other.endpoint_id = None;
            }
        }
        for (at, happening) in self.unclaimed.remove(&id).unwrap_or_default() {
            self.apply(index, at, happening);
        }
        if first_registration {
            self.grade_on_registration(index);
        }
    }

    /// Runs every endpoint's timeline as far as it goes now, then the shared steps.
    fn advance(&mut self) -> Vec<Action> {
        for index in 0..self.examinees.len() {
            self.advance_one(index);
        }
        self.advance_shared();
        std::mem::take(&mut self.actions)
    }

    fn advance_one(&mut self, index: usize) {
        loop {
            let now = self.now;
            let examinee = &self.examinees[index];
            if examinee.registered_at.is_none() {
                return;
            }
            if let Some(running) = &examinee.running {
                if running.trigger_pending {
                    let id = examinee.endpoint_id.clone().unwrap_or_default();
                    self.examinees[index]
                        .running
                        .as_mut()
                        .expect("running")
                        .trigger_pending = false;
                    self.actions.push(Action::Unregister { endpoint_id: id });
                    return;
                }
                let over = now >= running.deadline;
                let verdict = self.evaluate(index, over).or_else(|| {
                    over.then(|| {
                        (
                            Verdict::Skipped,
                            "the step's wait ended before the gatekeeper could act".to_string(),
                        )
                    })
                });
                let Some((verdict, observed)) = verdict else {
                    return;
                };
                let examinee = &mut self.examinees[index];
                let running = examinee.running.take().expect("running");
                let evidence = examinee.evidence(running.mark, EVIDENCE);
                examinee
                    .graded
                    .push(Graded::of(running.step.check, verdict, observed, evidence));
                if !SHARED.contains(&running.step.check.id) {
                    examinee.step += 1;
                }
                continue;
            }
            if examinee.at_barrier {
                return;
            }
            let Some(&step) = self.drill.steps.get(examinee.step) else {
                if examinee.gone.is_none() || !THROUGHOUT.iter().all(|id| examinee.graded(id)) {
                    self.grade_throughout(index);
                }
                return;
            };
            let id = step.check.id;
            if THROUGHOUT.contains(&id) {
                self.examinees[index].step += 1;
                continue;
            }
            if let Some(why) = self.examinees[index].gone.clone() {
                self.examinees[index]
                    .graded
                    .push(Graded::skipped(step.check, why));
                self.examinees[index].step += 1;
                continue;
            }
            if SHARED.contains(&id) {
                self.examinees[index].at_barrier = true;
                return;
            }
            // A step acts on its registration: it waits, bounded, for the endpoint to hold
            // one (it may be registering again after the last step).
            let examinee = &mut self.examinees[index];
            if !examinee.registered_now && id != "keep-alive" {
                let since = *examinee.waiting_since.get_or_insert(now);
                if now.saturating_sub(since) < step.wait {
                    return;
                }
                examinee.waiting_since = None;
                let why = not_registered(examinee);
                examinee.graded.push(Graded::skipped(step.check, why));
                examinee.step += 1;
                continue;
            }
            examinee.waiting_since = None;
            self.start(index, step);
        }
    }

    /// Starts a step of the endpoint's own.
    fn start(&mut self, index: usize, step: Step) {
        let now = self.now;
        let examinee = &mut self.examinees[index];
        let endpoint_id = examinee.endpoint_id.clone().unwrap_or_default();
        let mut running = Running {
            step,
            started: now,
            deadline: now + step.wait,
            mark: examinee.history.len(),
            targets: Vec::new(),
            region: None,
            agl: examinee.agl.clone(),
            trigger_pending: false,
        };
        match step.check.id {
            "keep-alive" => {
                // From the registration on: the keep-alives it has sent already count.
                let since = examinee.registered_at.unwrap_or(now);
                let ttl = examinee.ttl.unwrap_or(self.drill.ttl());
                running.started = since;
                running.mark = examinee.registered_mark;
                running.deadline =
                    since + ttl * self.drill.keep_alive_periods + ttl / 2 + Duration::from_secs(2);
            }
            "retransmission" => self.actions.push(Action::Withhold {
                endpoint_id,
                request: MessageKind::Rrq,
            }),
            "irq" => self.actions.push(Action::Irq { endpoint_id }),
            "urq" => self.actions.push(Action::Unregister { endpoint_id }),
            "alternate" => self.actions.push(Action::Alternate { endpoint_id }),
            "call-in" | "call-out" => {
                examinee.graded.push(Graded::skipped(
                    step.check,
                    "calls are not placed by this build of the exam yet",
                ));
                examinee.step += 1;
                return;
            }
            _ => {}
        }
        self.examinees[index].running = Some(running);
    }

    /// The shared steps: started when every endpoint examined is at one, then round by
    /// round.
    fn advance_shared(&mut self) {
        if self.shared.is_none() {
            let active: Vec<usize> = (0..self.examinees.len())
                .filter(|&i| {
                    let e = &self.examinees[i];
                    e.registered_at.is_some() && !e.done(&self.drill)
                })
                .collect();
            let waiting: Vec<usize> = active
                .iter()
                .copied()
                .filter(|&i| self.examinees[i].at_barrier)
                .collect();
            if waiting.is_empty() || waiting.len() < active.len() {
                return;
            }
            if self.joining && !self.unmatched().is_empty() {
                return;
            }
            self.joining = false;
            let step = self.examinees[waiting[0]].step;
            let id = self.drill.steps[step].check.id;
            self.shared = Some(Shared {
                id,
                members: waiting,
                out: Vec::new(),
                round: Vec::new(),
                restarted: false,
                next_at: self.now + SETTLE,
                since: self.now,
            });
        }
        let Some(mut shared) = self.shared.take() else {
            return;
        };
        // The round running goes on while any of its endpoints is still at it.
        let round_running = shared
            .round
            .iter()
            .any(|&i| self.examinees[i].running.is_some());
        if round_running {
            self.shared = Some(shared);
            return;
        }
        if !shared.round.is_empty() || !shared.out.is_empty() {
            let back = self.back_in_service(&shared.out);
            self.actions.extend(back);
            shared.out.clear();
            shared.round.clear();
            shared.next_at = self.now + SETTLE;
            shared.since = self.now;
        }
        if self.now < shared.next_at {
            self.shared = Some(shared);
            return;
        }
        if self.next_round(&mut shared) {
            self.shared = Some(shared);
            return;
        }
        // Done: every member goes on.
        for &i in &shared.members {
            let examinee = &mut self.examinees[i];
            examinee.at_barrier = false;
            examinee.step += 1;
        }
        self.shared_done.insert(shared.id);
        for i in 0..self.examinees.len() {
            self.advance_one(i);
        }
        self.advance_shared();
    }

    fn back_in_service(&mut self, out: &[usize]) -> Vec<Action> {
        if out.is_empty() {
            return Vec::new();
        }
        for &c in out {
            self.topology.clans[c].in_service = true;
        }
        vec![Action::ClanService {
            clans: out
                .iter()
                .map(|&c| self.topology.clans[c].name.clone())
                .collect(),
            in_service: true,
        }]
    }

    /// Plans and starts the next round of a shared step; false when none is left.
    fn next_round(&mut self, shared: &mut Shared) -> bool {
        let now = self.now;
        // Members not registered now cannot be examined by this step: the gatekeeper has
        // nothing of theirs to restart or to move. The step waits for them, bounded by its
        // wait (an endpoint may be registering again after its last step).
        let check = catalogue::check(shared.id).expect("a shared check");
        let wait = self
            .drill
            .step(shared.id)
            .map_or(Duration::ZERO, |s| s.wait);
        let unregistered = shared.members.iter().any(|&i| {
            let e = &self.examinees[i];
            !e.graded(shared.id) && e.gone.is_none() && !e.registered_now
        });
        if unregistered && self.now < shared.since + wait {
            shared.next_at = self.now + Duration::from_millis(250);
            return true;
        }
        for &i in &shared.members {
            let e = &mut self.examinees[i];
            if !e.graded(shared.id) && e.gone.is_none() && !e.registered_now {
                let why = not_registered(e);
                e.graded.push(Graded::skipped(check, why));
            }
        }
        let pending: Vec<usize> = shared
            .members
            .iter()
            .copied()
            .filter(|&i| !self.examinees[i].graded(shared.id) && self.examinees[i].gone.is_none())
            .collect();
        // Members gone meanwhile are skipped.
        for &i in &shared.members {
            let e = &mut self.examinees[i];
            if !e.graded(shared.id) {
                if let Some(why) = e.gone.clone() {
                    let check = catalogue::check(shared.id).expect("a shared check");
                    e.graded.push(Graded::skipped(check, why));
                }
            }
        }
        if pending.is_empty() {
            return false;
        }
        let step = *self
            .drill
            .step(shared.id)
            .expect("the drill has its shared step");
        let start = |examinee: &mut Examinee, targets: Vec<SocketAddr>, region| {
            examinee.running = Some(Running {
                step,
                started: now,
                deadline: now + step.wait,
                mark: examinee.history.len(),
                targets,
                region,
                agl: examinee.agl.clone(),
                trigger_pending: false,
            });
        };
        match shared.id {
            "restart" => {
                if shared.restarted {
                    return false;
                }
                shared.restarted = true;
                for &i in &pending {
                    start(&mut self.examinees[i], Vec::new(), None);
                }
                shared.round = pending;
                self.actions.push(Action::Restart);
                true
            }
            "clan-out" | "home-out" => {
                let home = shared.id == "home-out";
                // Group the endpoints still to grade by where they are now.
                let mut groups: Vec<(Vec<usize>, Vec<usize>)> = Vec::new(); // (clans, examinees)
                for &i in &pending {
                    let Some(clan) = self.examinees[i].clan else {
                        let check = catalogue::check(shared.id).expect("a shared check");
                        self.examinees[i].graded.push(Graded::skipped(
                            check,
                            "the exam does not know which C-LAN it registered at",
                        ));
                        continue;
                    };
                    let clans: Vec<usize> = if home {
                        let at = self.topology.clans[clan].region;
                        let region = self.examinees[i].home.unwrap_or(at);
                        if region != at {
                            let check = catalogue::check(shared.id).expect("a shared check");
                            let why = format!(
                                "its socket was on {} of region {at}, outside its home region \
                                 {region}: its home region going out of service would leave it \
                                 registered (docs/rules.md §9.1)",
                                self.topology.clans[clan].name
                            );
                            self.examinees[i].graded.push(Graded::skipped(check, why));
                            continue;
                        }
                        (0..self.topology.clans.len())
                            .filter(|&c| self.topology.clans[c].region == region)
                            .collect()
                    } else {
                        // Its C-LAN as it sees it (where it registered) and the one of its
                        // socket, if another.
                        let mut both = vec![clan];
                        both.extend(self.examinees[i].via.filter(|&v| v != clan));
                        both.sort_unstable();
                        both
                    };
                    let out: Vec<SocketAddr> = clans
                        .iter()
                        .flat_map(|&c| self.topology.clans[c].addresses.clone())
                        .collect();
                    let has_other = self.examinees[i].agl.iter().any(|a| {
                        !out.contains(a)
                            && self
                                .topology
                                .clan_at(*a)
                                .is_some_and(|c| self.topology.clans[c].in_service)
                    });
                    if !has_other {
                        let check = catalogue::check(shared.id).expect("a shared check");
                        self.examinees[i]
                            .graded
                            .push(Graded::skipped(check, Needs::Alternates.missing()));
                        continue;
                    }
                    match groups.iter_mut().find(|(c, _)| *c == clans) {
                        Some((_, members)) => members.push(i),
                        None => groups.push((clans, vec![i])),
                    }
                }
                groups.sort_by_key(|(_, members)| std::cmp::Reverse(members.len()));
                let Some((clans, members)) = groups.into_iter().next() else {
                    return false;
                };
                let targets: Vec<SocketAddr> = clans
                    .iter()
                    .flat_map(|&c| self.topology.clans[c].addresses.clone())
                    .collect();
                let region = home.then(|| self.topology.clans[clans[0]].region);
                for &i in &members {
                    start(&mut self.examinees[i], targets.clone(), region);
                }
                // All at one instant, so that the URQs carry AGLs without any of them.
                for &c in &clans {
                    self.topology.clans[c].in_service = false;
                }
                self.actions.push(Action::ClanService {
                    clans: clans
                        .iter()
                        .map(|&c| self.topology.clans[c].name.clone())
                        .collect(),
                    in_service: false,
                });
                shared.out = clans;
                shared.round = members;
                true
            }
            _ => false,
        }
    }

    /// Grades `discovery` and `registration` at the endpoint's first registration.
    fn grade_on_registration(&mut self, index: usize) {
        let examinee = &self.examinees[index];
        let mut graded = Vec::new();
        if let Some(step) = self.drill.step("discovery") {
            graded.push(self.discovery(examinee, step.check));
        }
        if let Some(step) = self.drill.step("registration") {
            let ips: Vec<std::net::IpAddr> = self
                .topology
                .discovery
                .iter()
                .chain(self.topology.clans.iter().flat_map(|c| c.addresses.iter()))
                .map(|a| a.ip())
                .collect();
            graded.push(registration(examinee, step.check, &ips));
        }
        self.examinees[index].graded.extend(graded);
    }

    fn grade_throughout_all(&mut self) {
        for i in 0..self.examinees.len() {
            self.grade_throughout(i);
        }
    }

    /// Grades the checks that watch the whole exam: `socket` and `password` (and, for an
    /// endpoint that never registered, the first two).
    fn grade_throughout(&mut self, index: usize) {
        let mut graded = Vec::new();
        let examinee = &self.examinees[index];
        for step in &self.drill.steps {
            let check = step.check;
            if !THROUGHOUT.contains(&check.id) || examinee.graded(check.id) {
                continue;
            }
            graded.push(match check.id {
                "socket" => self.socket(examinee, check),
                "password" => self.password(examinee, check),
                _ => Graded::skipped(check, "it never registered"),
            });
        }
        self.examinees[index].graded.extend(graded);
    }

    fn discovery(&self, examinee: &Examinee, check: &Check) -> Graded {
        let history = &examinee.history;
        let evidence = examinee.evidence(0, EVIDENCE);
        let grq = history.iter().position(|s| {
            s.direction == Direction::In
                && s.kind() == MessageKind::Grq
                && self.topology.discovery.contains(&s.local)
        });
        let rrq = history
            .iter()
            .position(|s| s.direction == Direction::In && s.is_full_rrq());
        let Some(rrq) = rrq else {
            return Graded::of(check, Verdict::Fail, "no full RRQ was seen", evidence);
        };
        let Some(grq) = grq.filter(|&g| g < rrq) else {
            return Graded::of(
                check,
                Verdict::Fail,
                format!(
                    "no GRQ to the discovery address: its first RRQ went straight to {}",
                    history[rrq].local
                ),
                evidence,
            );
        };
        let gcf = history[grq..rrq]
            .iter()
            .rev()
            .find_map(|s| match &s.message {
                RasMessage::gatekeeperConfirm(gcf) if s.direction == Direction::Out => {
                    socket_addr(&gcf.ras_address)
                }
                _ => None,
            });
        match gcf {
            Some(address) if address == history[rrq].local => Graded::of(
                check,
                Verdict::Pass,
                format!(
                    "GRQ to {}, then its RRQ to {} ({}), the rasAddress of the GCF",
                    history[grq].local,
                    address,
                    self.topology.name_at(address)
                ),
                evidence,
            ),
            Some(address) => Graded::of(
                check,
                Verdict::Fail,
                format!(
                    "the GCF named {} ({}), but its RRQ went to {}",
                    address,
                    self.topology.name_at(address),
                    history[rrq].local
                ),
                evidence,
            ),
            None => Graded::of(
                check,
                Verdict::Fail,
                "its GRQ was not confirmed before its RRQ".to_string(),
                evidence,
            ),
        }
    }

    fn socket(&self, examinee: &Examinee, check: &Check) -> Graded {
        if !self.topology.socket_mode {
            return Graded::skipped(check, Needs::SocketMode.missing());
        }
        let established = examinee
            .happenings
            .iter()
            .filter(|(_, h)| matches!(h, Happening::SocketEstablished { .. }))
            .count();
        let declined = examinee
            .happenings
            .iter()
            // The phone closing it (FIN or RST) while no call ran on it declines it
            // (docs/rules.md §8.6); the exam's calls do not run on a TTS socket.
            .filter(|(_, h)| {
                matches!(h, Happening::SocketClosed { reason, .. } if reason == "fin" || reason == "reset")
            })
            .count();
        // The gatekeeper's events about its socket, as evidence.
        let evidence: Vec<Evidence> = examinee
            .happenings
            .iter()
            .filter_map(|(at, h)| {
                let message = match h {
                    Happening::SocketEstablished { clan, .. } => format!(
                        "socket established (C-LAN {})",
                        clan.as_deref().unwrap_or("?")
                    ),
                    Happening::SocketClosed { reason, .. } => {
                        format!("socket closed ({reason})")
                    }
                    _ => return None,
                };
                Some(Evidence {
                    at_s: (at.as_secs_f64() * 1000.0).round() / 1000.0,
                    from: "gatekeeper event".to_string(),
                    to: examinee.peer.to_string(),
                    message,
                })
            })
            .take(EVIDENCE)
            .collect();
        if examinee.tts {
            if declined > 0 {
                return Graded::of(
                    check,
                    Verdict::Fail,
                    format!(
                        "a TTS phone: it declined the gatekeeper's socket {declined} times \
                         ({established} established)"
                    ),
                    evidence,
                );
            }
            return Graded::of(
                check,
                Verdict::Pass,
                format!("a TTS phone: it kept the gatekeeper's socket ({established} established)"),
                evidence,
            );
        }
        let said = if established == 0 {
            "it opened no signalling connection to its C-LAN while registered (a standard \
             endpoint opens one only for a call)"
                .to_string()
        } else {
            format!("it opened {established} signalling connections to its C-LAN")
        };
        Graded::of(check, Verdict::Pass, said, evidence)
    }

    fn password(&self, examinee: &Examinee, check: &Check) -> Graded {
        if !self.password {
            return Graded::skipped(check, Needs::Password.missing());
        }
        let requests: Vec<&Sighting> = examinee
            .history
            .iter()
            .filter(|s| s.direction == Direction::In && names_endpoint(&s.message))
            .collect();
        let bare: Vec<Evidence> = requests
            .iter()
            .filter(|s| !has_tokens(&s.message))
            .map(|s| s.evidence())
            .take(EVIDENCE)
            .collect();
        let denied: Vec<Evidence> = examinee
            .history
            .iter()
            .filter(|s| s.direction == Direction::Out && security_denial(&s.message))
            .map(Sighting::evidence)
            .take(EVIDENCE)
            .collect();
        if !bare.is_empty() {
            return Graded::of(
                check,
                Verdict::Fail,
                format!(
                    "{} of its {} requests carried no token",
                    bare.len(),
                    requests.len()
                ),
                bare,
            );
        }
        if !denied.is_empty() {
            return Graded::of(
                check,
                Verdict::Fail,
                format!(
                    "{} of its requests were refused securityDenial",
                    denied.len()
                ),
                denied,
            );
        }
        Graded::of(
            check,
            Verdict::Pass,
            format!(
                "all {} of its requests carried a valid token",
                requests.len()
            ),
            Vec::new(),
        )
    }

    /// A running step's verdict, once it has one (`deadline`: its wait is over).
    fn evaluate(&self, index: usize, deadline: bool) -> Option<(Verdict, String)> {
        let examinee = &self.examinees[index];
        let running = examinee.running.as_ref()?;
        if let Some(why) = &examinee.gone {
            if running.step.check.id != "keep-alive" {
                return Some((Verdict::Skipped, why.clone()));
            }
        }
        let seen: Vec<&Sighting> = examinee.since(running.mark).collect();
        let from_start = |s: &Sighting| (s.at.saturating_sub(running.started)).as_secs_f64();
        match running.step.check.id {
            "keep-alive" => self.keep_alive(examinee, running, &seen, deadline),
            "retransmission" => {
                let first = seen
                    .iter()
                    .position(|s| s.direction == Direction::In && s.kind() == MessageKind::Rrq);
                let Some(first) = first else {
                    return deadline.then(|| {
                        (
                            Verdict::Fail,
                            format!(
                                "it sent no RRQ in {:.0} s, so there was no answer to withhold",
                                running.step.wait.as_secs_f64()
                            ),
                        )
                    });
                };
                let withheld = seen[first];
                let again = seen[first + 1..]
                    .iter()
                    .find(|s| s.direction == Direction::In);
                match again {
                    Some(again)
                        if again.kind() == MessageKind::Rrq && again.seq() == withheld.seq() =>
                    {
                        Some((
                            Verdict::Pass,
                            format!(
                                "its RRQ seq {} went unanswered; it sent it again {:.1} s later \
                                 with the same requestSeqNum, and stayed one registration",
                                withheld.seq(),
                                (again.at - withheld.at).as_secs_f64()
                            ),
                        ))
                    }
                    Some(again) => Some((
                        Verdict::Fail,
                        format!(
                            "its RRQ seq {} went unanswered; {:.1} s later it sent {} seq {}: a \
                             new request, not a retransmission",
                            withheld.seq(),
                            (again.at - withheld.at).as_secs_f64(),
                            again.kind().short_name(),
                            again.seq()
                        ),
                    )),
                    None => deadline.then(|| {
                        (
                            Verdict::Fail,
                            format!(
                                "its RRQ seq {} went unanswered and it did not send it again",
                                withheld.seq()
                            ),
                        )
                    }),
                }
            }
            "irq" => {
                let irq = seen
                    .iter()
                    .find(|s| s.direction == Direction::Out && s.kind() == MessageKind::Irq);
                let irr = irq.and_then(|irq| {
                    seen.iter().find(|s| {
                        s.direction == Direction::In
                            && s.kind() == MessageKind::Irr
                            && s.seq() == irq.seq()
                    })
                });
                match (irq, irr) {
                    (Some(irq), Some(irr)) => Some((
                        Verdict::Pass,
                        format!(
                            "IRR seq {} {:.0} ms after the IRQ",
                            irr.seq(),
                            (irr.at - irq.at).as_secs_f64() * 1000.0
                        ),
                    )),
                    (Some(irq), None) => deadline.then(|| {
                        (
                            Verdict::Fail,
                            format!(
                                "no IRR to the IRQ seq {} in {:.0} s",
                                irq.seq(),
                                running.step.wait.as_secs_f64()
                            ),
                        )
                    }),
                    _ => deadline.then(|| {
                        (
                            Verdict::Skipped,
                            "the gatekeeper's IRQ was not seen going out".to_string(),
                        )
                    }),
                }
            }
            "urq" => {
                let urq = seen
                    .iter()
                    .find(|s| s.direction == Direction::Out && s.kind() == MessageKind::Urq);
                let Some(urq) = urq else {
                    return deadline.then(|| {
                        (
                            Verdict::Skipped,
                            "the gatekeeper's URQ was not seen going out".to_string(),
                        )
                    });
                };
                let ucf = seen.iter().find(|s| {
                    s.direction == Direction::In
                        && s.kind() == MessageKind::Ucf
                        && s.seq() == urq.seq()
                });
                let Some(ucf) = ucf else {
                    let sent = seen
                        .iter()
                        .filter(|s| s.direction == Direction::Out && s.kind() == MessageKind::Urq)
                        .count();
                    return deadline.then(|| {
                        (
                            Verdict::Fail,
                            format!(
                                "no UCF to the URQ seq {} (sent {sent} times in {:.0} s)",
                                urq.seq(),
                                running.step.wait.as_secs_f64()
                            ),
                        )
                    });
                };
                match registered_again(&seen, ucf.at) {
                    Some((rrq, _)) => Some((
                        Verdict::Pass,
                        format!(
                            "UCF {:.0} ms after the URQ; registered again at {} {:.1} s later",
                            (ucf.at - urq.at).as_secs_f64() * 1000.0,
                            self.topology.name_at(rrq.local),
                            (rrq.at - ucf.at).as_secs_f64()
                        ),
                    )),
                    None => deadline.then(|| {
                        (
                            Verdict::Fail,
                            format!(
                                "UCF {:.0} ms after the URQ, but it did not register again \
                                 within {:.0} s",
                                (ucf.at - urq.at).as_secs_f64() * 1000.0,
                                running.step.wait.as_secs_f64()
                            ),
                        )
                    }),
                }
            }
            "alternate" => {
                let alternate = *running.targets.first()?;
                let rrj = seen.iter().position(|s| {
                    s.direction == Direction::Out
                        && matches!(&s.message, RasMessage::registrationReject(r) if r.alt_gkinfo.is_some())
                });
                let Some(rrj) = rrj else {
                    return deadline.then(|| {
                        (
                            Verdict::Fail,
                            format!(
                                "it sent no full RRQ to refuse in {:.0} s (it was unregistered \
                                 to make it register again)",
                                running.step.wait.as_secs_f64()
                            ),
                        )
                    });
                };
                let next = seen[rrj + 1..]
                    .iter()
                    .find(|s| s.direction == Direction::In && s.kind() != MessageKind::Ucf);
                match next {
                    Some(next) if next.local == alternate && next.is_full_rrq() => {
                        registered_again(&seen[rrj..], seen[rrj].at).map(|(rrq, _)| {
                            (
                                Verdict::Pass,
                                format!(
                                    "refused with an RRJ naming {} ({}), it registered there {:.0} ms later",
                                    alternate,
                                    self.topology.name_at(alternate),
                                    (rrq.at - seen[rrj].at).as_secs_f64() * 1000.0
                                ),
                            )
                        }).or_else(|| deadline.then(|| (Verdict::Fail, format!("its RRQ to the alternate {alternate} was not confirmed"))))
                    }
                    Some(next) => Some((
                        Verdict::Fail,
                        format!(
                            "refused with an RRJ naming {} ({}), it sent {} to {} instead",
                            alternate,
                            self.topology.name_at(alternate),
                            next.kind().short_name(),
                            next.local
                        ),
                    )),
                    None => deadline.then(|| {
                        (
                            Verdict::Fail,
                            format!(
                                "refused with an RRJ naming {alternate}, it sent nothing more"
                            ),
                        )
                    }),
                }
            }
            "restart" => {
                let refused = seen.iter().position(|s| {
                    s.direction == Direction::Out
                        && matches!(&s.message, RasMessage::registrationReject(r)
                            if ras::choice_name(&r.reject_reason) == "fullRegistrationRequired")
                });
                let again = registered_again(&seen, running.started);
                match (refused, again) {
                    (Some(rrj), Some((rrq, _))) if rrq.at >= seen[rrj].at => Some((
                        Verdict::Pass,
                        format!(
                            "its keep-alive {:.1} s after the restart was refused \
                             fullRegistrationRequired; its full RRQ followed {:.0} ms later",
                            from_start(seen[rrj]),
                            (rrq.at.saturating_sub(seen[rrj].at)).as_secs_f64() * 1000.0
                        ),
                    )),
                    (None, Some((rrq, _))) => Some((
                        Verdict::Skipped,
                        format!(
                            "it registered again with a full RRQ {:.1} s after the restart \
                             without a keep-alive first, so no keep-alive of it met the \
                             restarted gatekeeper",
                            from_start(rrq)
                        ),
                    )),
                    (Some(_), _) => deadline.then(|| {
                        (
                            Verdict::Fail,
                            "its keep-alive was refused fullRegistrationRequired, and no full \
                             RRQ followed"
                                .to_string(),
                        )
                    }),
                    (None, None) => deadline.then(|| {
                        (
                            Verdict::Fail,
                            format!(
                                "it sent no keep-alive (nor a full RRQ) in the {:.0} s after the \
                                 restart",
                                running.step.wait.as_secs_f64()
                            ),
                        )
                    }),
                }
            }
            "clan-out" | "home-out" => self.moved(running, &seen, deadline),
            _ => Some((Verdict::Skipped, "not a step".to_string())),
        }
    }

    fn keep_alive(
        &self,
        examinee: &Examinee,
        running: &Running,
        seen: &[&Sighting],
        deadline: bool,
    ) -> Option<(Verdict, String)> {
        let ttl = examinee.ttl?;
        let expected_id = examinee.endpoint_id.as_deref().unwrap_or("");
        if let Some(full) = seen
            .iter()
            .find(|s| s.direction == Direction::In && s.is_full_rrq())
        {
            return Some((
                Verdict::Fail,
                format!(
                    "a full RRQ {:.1} s after its registration instead of a keep-alive: a \
                     second registration",
                    (full.at - running.started).as_secs_f64()
                ),
            ));
        }
        let keep_alives: Vec<&&Sighting> = seen
            .iter()
            .filter(|s| s.direction == Direction::In && s.is_keep_alive())
            .collect();
        for k in &keep_alives {
            if let RasMessage::registrationRequest(rrq) = &k.message {
                let id = rrq
                    .endpoint_identifier
                    .as_ref()
                    .map(|id| ras::bmp_text(&id.0));
                if id.as_deref() != Some(expected_id) {
                    return Some((
                        Verdict::Fail,
                        format!(
                            "its keep-alive seq {} named endpointIdentifier {:?}, not {expected_id:?}",
                            k.seq(),
                            id.unwrap_or_default()
                        ),
                    ));
                }
            }
        }
        if let Some((at, _)) = examinee
            .happenings
            .iter()
            .find(|(_, h)| matches!(h, Happening::Lapsed { .. }))
        {
            return Some((
                Verdict::Fail,
                format!(
                    "no keep-alive: its registration lapsed {:.1} s after it began (timeToLive \
                     {} s)",
                    (at.saturating_sub(running.started)).as_secs_f64(),
                    ttl.as_secs()
                ),
            ));
        }
        if !deadline {
            return None;
        }
        let mut times: Vec<Duration> = vec![running.started];
        times.extend(keep_alives.iter().map(|s| s.at));
        let longest = times
            .windows(2)
            .map(|w| w[1] - w[0])
            .chain(std::iter::once(self.now.saturating_sub(*times.last()?)))
            .max()
            .unwrap_or_default();
        if keep_alives.is_empty() || longest >= ttl {
            return Some((
                Verdict::Fail,
                format!(
                    "{} keep-alives in {:.0} s; the longest time without one was {:.1} s, \
                     beyond its timeToLive of {} s",
                    keep_alives.len(),
                    (self.now - running.started).as_secs_f64(),
                    longest.as_secs_f64(),
                    ttl.as_secs()
                ),
            ));
        }
        Some((
            Verdict::Pass,
            format!(
                "{} keep-alives in {:.0} s (timeToLive {} s), at most {:.1} s apart, each with \
                 its endpointIdentifier {expected_id}; one registration throughout",
                keep_alives.len(),
                (self.now - running.started).as_secs_f64(),
                ttl.as_secs(),
                longest.as_secs_f64()
            ),
        ))
    }

    /// `clan-out` and `home-out`: where the endpoint went once its C-LAN (or region) was
    /// taken out.
    fn moved(
        &self,
        running: &Running,
        seen: &[&Sighting],
        deadline: bool,
    ) -> Option<(Verdict, String)> {
        let out = &running.targets;
        // The AGLs in force: the one of the URQ that unregistered it, and the one it had
        // before (its RCF's): the endpoint may walk either (a URQ it did not take leaves it
        // with its RCF's).
        let urq_agl = seen
            .iter()
            .filter(|s| s.direction == Direction::Out)
            .find_map(|s| match &s.message {
                RasMessage::unregistrationRequest(urq) => {
                    urq.alternate_gatekeeper.as_deref().map(alternate_addresses)
                }
                _ => None,
            })
            .filter(|agl| !agl.is_empty());
        let in_service = |a: &SocketAddr| {
            !out.contains(a)
                && self
                    .topology
                    .clan_at(*a)
                    .is_some_and(|c| self.topology.clans[c].in_service)
        };
        // Where it went to register again: a GRQ or full RRQ (a keep-alive to where it is
        // registered is no move) to a C-LAN still in service.
        let first = seen.iter().find(|s| {
            s.direction == Direction::In
                && (s.kind() == MessageKind::Grq || s.is_full_rrq())
                && !out.contains(&s.local)
        });
        let urq_sent = seen
            .iter()
            .any(|s| s.direction == Direction::Out && s.kind() == MessageKind::Urq);
        let Some(first) = first else {
            return deadline.then(|| {
                if urq_sent {
                    // Say where it did go: C-LANs taken out, answering it still.
                    let mut asked: Vec<String> = seen
                        .iter()
                        .filter(|s| s.direction == Direction::In && out.contains(&s.local))
                        .filter(|s| s.kind() == MessageKind::Grq || s.is_full_rrq())
                        .map(|s| self.topology.name_at(s.local))
                        .collect();
                    asked.dedup();
                    let went = if asked.is_empty() {
                        String::new()
                    } else {
                        format!(" (it asked only C-LANs taken out: {})", asked.join(", "))
                    };
                    (
                        Verdict::Fail,
                        format!(
                            "it asked no C-LAN in service in {:.0} s{went}",
                            running.step.wait.as_secs_f64()
                        ),
                    )
                } else {
                    (
                        Verdict::Skipped,
                        "the gatekeeper did not unregister it: it held no socket on the C-LANs \
                         taken out (a TTS phone without its socket, docs/rules.md §9.1), and its \
                         C-LAN went on answering it"
                            .to_string(),
                    )
                }
            });
        };
        // An RRJ naming alternates (the gatekeeper's answer at a C-LAN out of service) is
        // followed where it points.
        let referred = seen.iter().rev().find_map(|s| match &s.message {
            RasMessage::registrationReject(rrj)
                if s.direction == Direction::Out && s.at <= first.at =>
            {
                rrj.alt_gkinfo
                    .as_ref()
                    .map(|info| alternate_addresses(&info.alternate_gatekeeper))
            }
            _ => None,
        });
        if referred.as_ref().is_some_and(|r| r.contains(&first.local)) && first.is_full_rrq() {
            return registered_again(seen, first.at).map(|(rrq, _)| {
                (
                    Verdict::Pass,
                    format!(
                        "refused where it was with an RRJ naming {}, it registered there {:.1} s after",
                        self.topology.name_at(rrq.local),
                        rrq.at.saturating_sub(running.started).as_secs_f64()
                    ),
                )
            });
        }
        let after = first.at.saturating_sub(running.started).as_secs_f64();
        if first.kind() == MessageKind::Grq && self.topology.discovery.contains(&first.local) {
            return Some((
                Verdict::Fail,
                format!(
                    "{after:.1} s after, it went back to the discovery address (GRQ to {}) \
                     instead of registering at an entry of its AGL",
                    first.local
                ),
            ));
        }
        let agls: Vec<&Vec<SocketAddr>> = urq_agl.iter().chain([&running.agl]).collect();
        let Some((agl, position)) = agls.iter().find_map(|agl| {
            agl.iter()
                .position(|a| *a == first.local)
                .map(|p| (*agl, p))
        }) else {
            return Some((
                Verdict::Fail,
                format!(
                    "{after:.1} s after, it sent its {} to {}, which is not in its AGL",
                    first.kind().short_name(),
                    first.local
                ),
            ));
        };
        if let Some(region) = running.region {
            let reached = self
                .topology
                .clan_at(first.local)
                .map(|c| self.topology.clans[c].region);
            if reached.is_some_and(|r| !self.topology.linked_directly(region, r)) {
                return Some((
                    Verdict::Fail,
                    format!(
                        "it went to {} ({}), of a region not directly linked to its home",
                        first.local,
                        self.topology.name_at(first.local)
                    ),
                ));
            }
        } else {
            // In order: its first choice is the first entry in service of an AGL it holds.
            let in_order = agls
                .iter()
                .any(|agl| agl.iter().find(|a| in_service(a)) == Some(&first.local));
            let expected = agl.iter().position(in_service);
            if let Some(expected) = expected.filter(|&e| e < position && !in_order) {
                return Some((
                    Verdict::Fail,
                    format!(
                        "{after:.1} s after, it went to entry {} of its AGL ({}) before entry {} \
                         ({}), which was in service",
                        position + 1,
                        self.topology.name_at(agl[position]),
                        expected + 1,
                        self.topology.name_at(agl[expected])
                    ),
                ));
            }
        }
        match registered_again(seen, first.at) {
            Some((rrq, _)) => Some((
                Verdict::Pass,
                format!(
                    "registered again at {} (entry {} of its AGL) {:.1} s after",
                    self.topology.name_at(rrq.local),
                    agl.iter()
                        .position(|a| *a == rrq.local)
                        .map_or(0, |p| p + 1),
                    rrq.at.saturating_sub(running.started).as_secs_f64()
                ),
            )),
            None => deadline.then(|| {
                (
                    Verdict::Fail,
                    format!(
                        "it sent its RRQ to {} but was not registered again within {:.0} s",
                        first.local,
                        running.step.wait.as_secs_f64()
                    ),
                )
            }),
        }
    }
}

/// Why a step could not act on an endpoint the gatekeeper does not hold registered.
fn not_registered(examinee: &Examinee) -> String {
    match examinee.unregistered_at {
        Some(at) => format!(
            "it was not registered when the step was due (its registration ended at {:.1} s and \
             it had not registered again)",
            at.as_secs_f64()
        ),
        None => "it was not registered when the step was due".to_string(),
    }
}

/// `registration`: what its first full RRQ declares.
fn registration(examinee: &Examinee, check: &Check, gatekeeper_ips: &[std::net::IpAddr]) -> Graded {
    let rrq = examinee
        .history
        .iter()
        .find(|s| s.direction == Direction::In && s.is_full_rrq());
    let Some(rrq) = rrq else {
        return Graded::skipped(check, "no full RRQ was seen");
    };
    let evidence = vec![rrq.evidence()];
    let RasMessage::registrationRequest(message) = &rrq.message else {
        return Graded::skipped(check, "no full RRQ was seen");
    };
    let ras: Vec<SocketAddr> = message.ras_address.iter().filter_map(socket_addr).collect();
    let signal: Vec<SocketAddr> = message
        .call_signal_address
        .iter()
        .filter_map(socket_addr)
        .collect();
    let mut faults = Vec::new();
    if !ras.contains(&examinee.peer) {
        faults.push(format!(
            "its rasAddress {ras:?} is not the address its RAS comes from ({})",
            examinee.peer
        ));
    }
    if signal.is_empty() {
        faults.push("it gave no IP callSignalAddress".to_string());
    }
    for address in ras.iter().chain(&signal) {
        if address.ip().is_unspecified() || address.port() == 0 {
            faults.push(format!("{address} cannot be reached"));
        }
    }
    if examinee.aliases.is_empty() {
        faults.push("it declared no alias".to_string());
    }
    let kind = match &message.terminal_type {
        t if t.gateway.is_some() => "gateway",
        t if t.terminal.is_some() => "terminal",
        t if t.mcu.is_some() => "MCU",
        _ => "other",
    };
    let own = if gatekeeper_ips.contains(&examinee.peer.ip()) {
        " (its RAS comes from an address of the gatekeeper's own: on loopback the kernel \
         picks the destination's address as the source)"
    } else {
        ""
    };
    if faults.is_empty() {
        Graded::of(
            check,
            Verdict::Pass,
            format!(
                "rasAddress {}{own}, callSignalAddress {}, aliases {}, terminalType {kind}",
                ras.first().map_or_else(String::new, ToString::to_string),
                signal.first().map_or_else(String::new, ToString::to_string),
                examinee.aliases.join(",")
            ),
            evidence,
        )
    } else {
        Graded::of(check, Verdict::Fail, faults.join("; "), evidence)
    }
}

/// After `after`, a full RRQ of the endpoint confirmed: the RRQ and its RCF.
fn registered_again<'a>(
    seen: &[&'a Sighting],
    after: Duration,
) -> Option<(&'a Sighting, &'a Sighting)> {
    seen.iter()
        .filter(|s| s.at >= after && s.direction == Direction::In && s.is_full_rrq())
        .find_map(|rrq| {
            seen.iter()
                .find(|s| {
                    s.direction == Direction::Out
                        && s.kind() == MessageKind::Rcf
                        && s.seq() == rrq.seq()
                        && s.local == rrq.local
                        && s.at >= rrq.at
                })
                .map(|rcf| (*rrq, *rcf))
        })
}

fn alias_texts(aliases: Option<&[asn::AliasAddress]>) -> Vec<String> {
    aliases
        .unwrap_or_default()
        .iter()
        .map(|a| ras::Alias::from_asn(a).to_string())
        .collect()
}

fn alternate_addresses(list: &[asn::AlternateGK]) -> Vec<SocketAddr> {
    list.iter()
        .filter_map(|gk| socket_addr(&gk.ras_address))
        .collect()
}

/// A request that names its endpoint, so carries its token when it has a password.
fn names_endpoint(message: &RasMessage) -> bool {
    matches!(
        message,
        RasMessage::registrationRequest(_)
            | RasMessage::unregistrationRequest(_)
            | RasMessage::admissionRequest(_)
            | RasMessage::disengageRequest(_)
    )
}

fn has_tokens(message: &RasMessage) -> bool {
    let tokens = match message {
        RasMessage::registrationRequest(m) => m.crypto_tokens.as_ref(),
        RasMessage::unregistrationRequest(m) => m.crypto_tokens.as_ref(),
        RasMessage::admissionRequest(m) => m.crypto_tokens.as_ref(),
        RasMessage::disengageRequest(m) => m.crypto_tokens.as_ref(),
        _ => None,
    };
    tokens.is_some_and(|t| !t.is_empty())
}

fn security_denial(message: &RasMessage) -> bool {
    let reason = match message {
        RasMessage::registrationReject(m) => ras::choice_name(&m.reject_reason),
        RasMessage::gatekeeperReject(m) => ras::choice_name(&m.reject_reason),
        RasMessage::admissionReject(m) => ras::choice_name(&m.reject_reason),
        RasMessage::unregistrationReject(m) => ras::choice_name(&m.reject_reason),
        _ => return false,
    };
    reason.starts_with("security")
}
