//! The exam itself, with no I/O: what the gatekeeper saw ([`Sighting`]s, and the
//! [`Happening`]s of its event stream) goes in with the time; the drill's actions on the
//! gatekeeper ([`Action`]s, the admin port's drills) come out, and each endpoint's checks
//! are graded from what the gatekeeper saw it do. The live exam (`rasgk exam`) feeds it
//! from the admin port of its gatekeeper; tests feed it in virtual time.
//!
//! Each endpoint has its own timeline: its steps start when it has registered and follow
//! one another as each ends (done, or its wait over). The steps that act on the whole
//! gatekeeper — `restart`, `home-out`, `clan-out` — wait until every endpoint examined has
//! reached them; `home-out` then takes one region's C-LANs out at a time and `clan-out` one
//! endpoint's, grading only the endpoints that were on them, so that no endpoint's check is
//! spoiled by another's. New endpoints are taken until the first of those steps starts.
//!
//! Here: the engine, an endpoint's timeline and its own steps started. Its parts:
//! `happening` (the events read), `topology` (the gatekeeper as the exam knows it), `steps`
//! (a running step graded), `shared` (the steps for every endpoint, round by round),
//! `throughout` (the checks graded over the whole exam), `calls` (the call steps graded).
//!
//! The call steps need a phone of the exam's own ([`Partner`]), registered with the same
//! gatekeeper: `call-in` asks it to call the endpoint ([`Action::Call`]), `call-out` asks for
//! a call from the endpoint to it ([`Action::AwaitCall`]); what it heard comes back through
//! [`Engine::heard`].

mod calls;
mod happening;
mod shared;
mod steps;
mod throughout;
mod topology;

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::time::Duration;

use crate::config::RegionId;
use crate::ras::{self, asn, socket_addr, MessageKind, RasMessage};

pub use happening::Happening;
pub use topology::Topology;

use steps::not_registered;

use super::catalogue::Needs;
use super::drill::{Drill, Step};
use super::report::EndpointReport;
use super::selector::Selector;
use super::sighting::{Direction, Sighting};
use super::verdict::{Evidence, Graded, Verdict};
use crate::simulated_phone::CallEvent;

/// The exam's own phone, which calls the endpoint and takes its calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partner {
    /// Its alias (dialled digits): the number the endpoint calls.
    pub alias: String,
    /// Its call signalling address: where a direct call to it goes.
    pub call_signal_address: SocketAddr,
}

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
    /// The exam's phone calls the endpoint (`call-in`).
    Call {
        /// The alias it dials.
        callee: String,
        /// The call's `callIdentifier`.
        call_id: [u8; 16],
    },
    /// A call from the endpoint to the exam's phone is wanted (`call-out`): its tester
    /// places it, or its own script does, or — a simulated phone — it is told to.
    AwaitCall {
        /// How the endpoint is named.
        endpoint: String,
        /// Its aliases.
        aliases: Vec<String>,
        /// The number to call: the exam's phone's alias.
        partner: String,
        /// A `callIdentifier` for the call, when a phone of the exam's places it.
        call_id: [u8; 16],
    },
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
    /// `call-in`: the call the exam's phone places.
    call_id: Option<[u8; 16]>,
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

    /// Its last full RRQ is at least [`CALM`] old: it is not moving between C-LANs or
    /// retransmitting a registration.
    fn settled(&self, now: Duration) -> bool {
        self.history
            .iter()
            .rev()
            .find(|s| s.direction == Direction::In && s.is_full_rrq())
            .is_none_or(|s| now.saturating_sub(s.at) >= CALM)
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

/// A call step, and the restart, wait for the endpoints' last full RRQ to be this old (H323Plus retransmits an RRQ after 3 s, even one answered from a C-LAN it did not
/// address).
const CALM: Duration = Duration::from_secs(5);

/// How long a shared step waits between rounds, and before its first.
const SETTLE: Duration = Duration::from_secs(1);

/// Evidence kept per check: at most this many messages.
const EVIDENCE: usize = 24;

/// Sightings kept of a peer not (yet) examined.
const STRANGER_HISTORY: usize = 16;

/// Calls the exam's phone heard of, kept at once.
const CALLS_HEARD: usize = 4096;

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
    /// The exam's phone, for the call steps.
    partner: Option<Partner>,
    /// What the exam's phone heard, by call.
    heard: HashMap<[u8; 16], calls::Heard>,
    /// The calls heard of, oldest first (at most [`CALLS_HEARD`]).
    heard_order: std::collections::VecDeque<[u8; 16]>,
    /// Routed calls the gatekeeper told of, by number.
    routed: HashMap<u64, calls::Routed>,
    /// The calls' `callIdentifier`s come from this, and a count.
    call_seed: u64,
    calls_placed: u64,
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
            partner: None,
            heard: HashMap::new(),
            heard_order: std::collections::VecDeque::new(),
            routed: HashMap::new(),
            call_seed: 0,
            calls_placed: 0,
        }
    }

    /// The exam has a phone of its own, `partner`, for the call steps (without one they are
    /// skipped); `seed` makes its calls' identifiers unlike another exam's.
    pub fn with_partner(mut self, partner: Partner, seed: u64) -> Self {
        self.partner = Some(partner);
        self.call_seed = seed;
        self
    }

    /// What the exam's phone heard of its call `call_id` (what it placed, or a call to it).
    pub fn heard(&mut self, at: Duration, call_id: [u8; 16], event: CallEvent) -> Vec<Action> {
        self.now = self.now.max(at);
        if !self.heard.contains_key(&call_id) {
            if self.heard_order.len() >= CALLS_HEARD {
                if let Some(oldest) = self.heard_order.pop_front() {
                    self.heard.remove(&oldest);
                }
            }
            self.heard_order.push_back(call_id);
        }
        let heard = self.heard.entry(call_id).or_default();
        if heard.len() < 64 {
            heard.push((at, event));
        }
        self.advance()
    }

    /// A new `callIdentifier`: a version 4 GUID's layout (RFC 4122), from the exam's seed
    /// and a count.
    fn new_call_id(&mut self) -> [u8; 16] {
        self.calls_placed += 1;
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&self.call_seed.to_be_bytes());
        id[8..].copy_from_slice(&self.calls_placed.to_be_bytes());
        id[6] = 0x40 | (id[6] & 0x0f);
        id[8] = 0x80 | (id[8] & 0x3f);
        id
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
        // Routed calls are kept by their number: the exam's phone's calls have it on one
        // side, the endpoint on the other.
        match &happening {
            Happening::CallSetup {
                endpoint_id,
                callee,
                call,
                clan,
            } => {
                if self.routed.len() >= CALLS_HEARD {
                    self.routed.clear();
                }
                self.routed.insert(
                    *call,
                    calls::Routed {
                        at,
                        caller: endpoint_id.clone(),
                        callee: callee.clone(),
                        clan: clan.clone(),
                        ended: None,
                    },
                );
                return self.advance();
            }
            Happening::CallEnded { call, reason } => {
                if let Some(routed) = self.routed.get_mut(call) {
                    routed.ended = Some((at, reason.clone()));
                }
                return self.advance();
            }
            _ => {}
        }
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
        if let (
            Action::Call { callee, .. }
            | Action::AwaitCall {
                endpoint: callee, ..
            },
            Outcome::Failed(why),
        ) = (action, &outcome)
        {
            let step = if matches!(action, Action::Call { .. }) {
                "call-in"
            } else {
                "call-out"
            };
            let examinee = self.examinees.iter_mut().find(|e| {
                (e.aliases.contains(callee) || &e.name == callee)
                    && e.running.as_ref().is_some_and(|r| r.step.check.id == step)
            });
            if let Some(examinee) = examinee {
                if let Some(running) = examinee.running.take() {
                    examinee.graded.push(Graded::skipped(
                        running.step.check,
                        format!("the exam's phone could not take part: {why}"),
                    ));
                    examinee.step += 1;
                }
            }
            return self.advance();
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
        if let Some(partner) = &self.partner {
            if aliases.contains(&partner.alias) {
                return None;
            }
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
                let calls = {
                    let examinee = &self.examinees[index];
                    let running = examinee.running.as_ref().expect("running");
                    let ids = self.calls_of(examinee, running);
                    self.call_evidence(examinee, &ids)
                };
                let examinee = &mut self.examinees[index];
                let running = examinee.running.take().expect("running");
                let mut evidence = examinee.evidence(running.mark, EVIDENCE);
                if !calls.is_empty() {
                    evidence.extend(calls);
                    evidence.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
                }
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
            if (id == "call-in" || id == "call-out") && self.partner.is_none() {
                self.examinees[index].graded.push(Graded::skipped(
                    step.check,
                    "the exam has no phone of its own to call with",
                ));
                self.examinees[index].step += 1;
                continue;
            }
            // A step acts on its registration: it waits, bounded, for the endpoint to hold
            // one (it may be registering again after the last step).
            let registration_wait = self.registration_wait(step);
            let examinee = &mut self.examinees[index];
            if !examinee.registered_now && id != "keep-alive" {
                let since = *examinee.waiting_since.get_or_insert(now);
                if now.saturating_sub(since) < registration_wait {
                    return;
                }
                examinee.waiting_since = None;
                let why = not_registered(examinee);
                examinee.graded.push(Graded::skipped(step.check, why));
                examinee.step += 1;
                continue;
            }
            // A call goes to an endpoint that has settled: one still moving between C-LANs
            // after the last step (its full RRQs) would end the call by registering again.
            // (call-out is the endpoint's to place, whenever it does.)
            if id == "call-in" {
                let settled = examinee.settled(now);
                let since = *examinee.waiting_since.get_or_insert(now);
                if !settled && now.saturating_sub(since) < registration_wait {
                    return;
                }
            }
            examinee.waiting_since = None;
            self.start(index, step);
        }
    }

    /// How long a step waits for its endpoint to be registered again: a time to live (an
    /// endpoint that keeps alive is back within one), at most the step's own wait.
    fn registration_wait(&self, step: Step) -> Duration {
        step.wait.min(self.drill.ttl())
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
            call_id: None,
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
            "call-in" => {
                let callee = examinee.aliases.first().cloned().unwrap_or_default();
                let call_id = self.new_call_id();
                running.call_id = Some(call_id);
                self.actions.push(Action::Call { callee, call_id });
            }
            "call-out" => {
                let (endpoint, aliases) = (examinee.name.clone(), examinee.aliases.clone());
                let partner = self
                    .partner
                    .as_ref()
                    .map(|p| p.alias.clone())
                    .unwrap_or_default();
                let call_id = self.new_call_id();
                self.actions.push(Action::AwaitCall {
                    endpoint,
                    aliases,
                    partner,
                    call_id,
                });
            }
            _ => {}
        }
        self.examinees[index].running = Some(running);
    }
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
