//! The call steps graded: `call-in` (the exam's own phone calls the endpoint) and `call-out`
//! (the endpoint calls the exam's phone). The gatekeeper's RAS shows the endpoint's side —
//! its ARQ, the ACF, its DRQ — and the exam's phone tells what it heard on its call
//! signalling ([`CallEvent`]s): a Setup and where it came from, Alerting, Connect, the
//! release. H.323 clause 8 is the source: a registered endpoint asks admission (ARQ) before
//! it places or answers a call, sends its Setup where the ACF's `destCallSignalAddress`
//! says, and disengages (DRQ with the call's `callIdentifier`) when the call ends.

use std::time::Duration;

use crate::exam::sighting::{describe_call_id, Direction, Sighting};
use crate::exam::verdict::{Evidence, Verdict};
use crate::ras::{MessageKind, RasMessage};
use crate::simulated_phone::{CallEvent, Failure};

use super::{alias_texts, Engine, Examinee, Running};

/// After a call's release, the endpoint's DRQ is waited for this long.
pub(super) const DRQ_WITHIN: Duration = Duration::from_secs(6);

/// The gatekeeper's RAS reaches the exam by its admin port, the exam's phone's notes
/// straight: a RAS message missing at a note's time is waited for this long before its
/// absence counts.
pub(super) const LAG: Duration = Duration::from_secs(2);

/// A routed call as the gatekeeper's events tell it.
#[derive(Debug, Clone)]
pub(super) struct Routed {
    /// When its Setup arrived.
    pub(super) at: Duration,
    /// The caller's `endpointIdentifier`.
    pub(super) caller: String,
    /// The callee's.
    pub(super) callee: String,
    /// The C-LAN the Setup arrived on.
    pub(super) clan: String,
    /// When it ended, and why.
    pub(super) ended: Option<(Duration, String)>,
}

/// What the exam's phone heard of one call, in order.
pub(super) type Heard = Vec<(Duration, CallEvent)>;

/// One call's [`Heard`], as read.
type HeardSlice = [(Duration, CallEvent)];

fn secs(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn find<'a, T>(
    heard: &'a HeardSlice,
    pick: impl Fn(&'a CallEvent) -> Option<T>,
) -> Option<(Duration, T)> {
    heard.iter().find_map(|(at, e)| pick(e).map(|t| (*at, t)))
}

/// The moments of a call, as the exam's phone heard them.
struct Moments<'a> {
    setup_written: Option<Duration>,
    connected: Option<Duration>,
    released: Option<(Duration, bool, &'a str)>,
    failed: Option<(Duration, &'a Failure)>,
    routed: Option<bool>,
}

impl<'a> Moments<'a> {
    fn of(heard: &'a HeardSlice) -> Moments<'a> {
        Moments {
            setup_written: find(heard, |e| {
                matches!(e, CallEvent::SetupWritten { .. }).then_some(())
            })
            .map(|(at, ())| at),
            connected: find(heard, |e| matches!(e, CallEvent::Connected).then_some(()))
                .map(|(at, ())| at),
            released: find(heard, |e| match e {
                CallEvent::Released { by_peer, cause } => Some((*by_peer, cause.as_str())),
                _ => None,
            })
            .map(|(at, (by_peer, cause))| (at, by_peer, cause)),
            failed: find(heard, |e| match e {
                CallEvent::Failed(failure) => Some(failure),
                _ => None,
            }),
            routed: find(heard, |e| match e {
                CallEvent::Admitted { routed, .. } => Some(*routed),
                _ => None,
            })
            .map(|(_, routed)| routed),
        }
    }
}

/// Who ended a call.
fn releaser(by_peer: bool) -> &'static str {
    if by_peer {
        "it released the call"
    } else {
        "the exam's phone released the call"
    }
}

/// The endpoint's full RRQ between `from` and `to`, if it registered again then.
fn registered_during<'a>(
    seen: &[&'a Sighting],
    from: Duration,
    to: Duration,
) -> Option<&'a Sighting> {
    seen.iter()
        .copied()
        .find(|s| s.direction == Direction::In && s.is_full_rrq() && s.at >= from && s.at <= to)
}

/// The gatekeeper's answer to the endpoint's ARQ `arq`: its ACF or ARJ.
fn answer_to<'a>(seen: &[&'a Sighting], arq: &Sighting) -> Option<&'a Sighting> {
    seen.iter().copied().find(|s| {
        s.direction == Direction::Out
            && matches!(s.kind(), MessageKind::Acf | MessageKind::Arj)
            && s.seq() == arq.seq()
    })
}

/// The endpoint's DRQ for the call `call_id`.
fn drq_of<'a>(seen: &[&'a Sighting], call_id: [u8; 16]) -> Option<&'a Sighting> {
    seen.iter().copied().find(|s| {
        s.direction == Direction::In && s.kind() == MessageKind::Drq && s.call_id() == Some(call_id)
    })
}

impl Engine {
    /// The C-LAN a routed call's Setup of the endpoint's arrived at, since `since`.
    fn routed_by(&self, examinee: &Examinee, since: Duration) -> Option<String> {
        let id = examinee.endpoint_id.as_deref()?;
        self.routed
            .values()
            .filter(|r| r.caller == id && r.at >= since)
            .min_by_key(|r| r.at)
            .map(|r| r.clan.clone())
    }

    /// What the exam's phone heard of the call `call_id`.
    pub(super) fn heard_of(&self, call_id: [u8; 16]) -> &HeardSlice {
        self.heard.get(&call_id).map_or(&[], Vec::as_slice)
    }

    /// The calls a call step is about: the one the exam placed (`call-in`), or those the
    /// endpoint asked admission for (`call-out`).
    pub(super) fn calls_of(&self, examinee: &Examinee, running: &Running) -> Vec<[u8; 16]> {
        if let Some(call_id) = running.call_id {
            return vec![call_id];
        }
        let mut ids: Vec<[u8; 16]> = examinee
            .since(running.mark)
            .filter(|s| s.direction == Direction::In && s.kind() == MessageKind::Arq)
            .filter_map(Sighting::call_id)
            .collect();
        ids.dedup();
        ids
    }

    /// The exam's phone's side of a call step's calls, as evidence lines.
    pub(super) fn call_evidence(&self, examinee: &Examinee, calls: &[[u8; 16]]) -> Vec<Evidence> {
        let Some(partner) = &self.partner else {
            return Vec::new();
        };
        let phone = format!("exam phone {}", partner.alias);
        let mut out = Vec::new();
        for &call_id in calls {
            let heard = self.heard_of(call_id);
            let placed = heard
                .iter()
                .any(|(_, e)| matches!(e, CallEvent::Dialled { .. }));
            for (at, event) in heard {
                let (from, to, message) = match event {
                    CallEvent::Dialled { to } => (
                        phone.clone(),
                        "gatekeeper".to_string(),
                        format!("ARQ for {to}"),
                    ),
                    CallEvent::Admitted { dest, routed } => (
                        "gatekeeper".to_string(),
                        phone.clone(),
                        format!(
                            "ACF destCallSignalAddress {} {}",
                            dest.map_or_else(|| "(none)".to_string(), |d| d.to_string()),
                            if *routed {
                                "gatekeeperRouted"
                            } else {
                                "direct"
                            }
                        ),
                    ),
                    CallEvent::SetupWritten { to } => {
                        (phone.clone(), to.to_string(), "Q.931 Setup".to_string())
                    }
                    CallEvent::SetupRead { from, .. } => {
                        (from.to_string(), phone.clone(), "Q.931 Setup".to_string())
                    }
                    CallEvent::Proceeding => (
                        examinee.name.clone(),
                        phone.clone(),
                        "Q.931 Call Proceeding".to_string(),
                    ),
                    CallEvent::Alerting => (
                        examinee.name.clone(),
                        phone.clone(),
                        "Q.931 Alerting".to_string(),
                    ),
                    CallEvent::Connected if placed => (
                        examinee.name.clone(),
                        phone.clone(),
                        "Q.931 Connect".to_string(),
                    ),
                    CallEvent::Connected => (
                        phone.clone(),
                        examinee.name.clone(),
                        "Q.931 Alerting, Connect".to_string(),
                    ),
                    CallEvent::Released {
                        by_peer: true,
                        cause,
                    } => (
                        examinee.name.clone(),
                        phone.clone(),
                        format!("Q.931 Release Complete ({cause})"),
                    ),
                    CallEvent::Released {
                        by_peer: false,
                        cause,
                    } => (
                        phone.clone(),
                        examinee.name.clone(),
                        format!("Q.931 Release Complete ({cause})"),
                    ),
                    CallEvent::Failed(failure) => (
                        phone.clone(),
                        String::new(),
                        format!("call failed: {failure}"),
                    ),
                    CallEvent::Disengaging => {
                        (phone.clone(), "gatekeeper".to_string(), "DRQ".to_string())
                    }
                };
                out.push(Evidence {
                    at_s: (at.as_secs_f64() * 1000.0).round() / 1000.0,
                    from,
                    to,
                    message: format!("{message} (callIdentifier {})", describe_call_id(&call_id)),
                });
            }
        }
        out
    }

    /// `call-in`: the exam's phone called the endpoint.
    pub(super) fn call_in(
        &self,
        examinee: &Examinee,
        running: &Running,
        seen: &[&Sighting],
        deadline: bool,
    ) -> Option<(Verdict, String)> {
        let call_id = running.call_id?;
        let heard = self.heard_of(call_id);
        let moments = Moments::of(heard);
        let arq = seen.iter().copied().find(|s| {
            s.direction == Direction::In && s.is_answer_arq() && s.call_id() == Some(call_id)
        });
        let admitted = arq.and_then(|arq| answer_to(seen, arq));
        let setup_at = moments.setup_written.unwrap_or(running.started);
        let asked = match (arq, admitted) {
            (Some(arq), Some(answer)) => format!(
                "ARQ answerCall seq {}, answered {}",
                arq.seq(),
                answer.kind().short_name()
            ),
            (Some(arq), None) => format!("ARQ answerCall seq {}", arq.seq()),
            (None, _) => "no ARQ answerCall for the call".to_string(),
        };
        if moments.connected.is_none() {
            if let Some((_, failure)) = moments.failed {
                // Routed, the exam's phone connects to its own C-LAN: a failure there is the
                // gatekeeper's; direct, to the endpoint's callSignalAddress.
                let gatekeeper_side = match failure {
                    Failure::NotRegistered
                    | Failure::TooManyCalls
                    | Failure::Refused(_)
                    | Failure::Unanswered(_) => true,
                    Failure::Unreachable { .. } => moments.routed == Some(true),
                    Failure::Unwritable(_) | Failure::NoDestination | Failure::NoConnect(_) => {
                        false
                    }
                };
                return Some(if gatekeeper_side {
                    (
                        Verdict::Skipped,
                        format!(
                            "the exam's phone could not place its call: {failure}{}",
                            if *failure == Failure::NotRegistered {
                                " (--partner-address must be in a region of the configuration)"
                            } else {
                                ""
                            }
                        ),
                    )
                } else if matches!(failure, Failure::Unreachable { .. }) {
                    (
                        Verdict::Fail,
                        format!(
                            "the exam's phone could not reach its callSignalAddress: {failure}"
                        ),
                    )
                } else {
                    (
                        Verdict::Fail,
                        format!("it did not answer: {failure}; {asked}"),
                    )
                });
            }
            if let Some((at, _, cause)) = moments.released {
                if !deadline && self.now < at + LAG {
                    return None;
                }
                // Routed: the gatekeeper says why the call ended; only the endpoint's own
                // Release Complete is its refusal.
                let ended = examinee.endpoint_id.as_deref().and_then(|id| {
                    self.routed
                        .values()
                        .filter(|r| r.callee == id && r.at + LAG >= setup_at)
                        .find_map(|r| r.ended.clone())
                });
                if let Some((_, reason)) = ended.filter(|(_, r)| r != "callee_released") {
                    return Some((
                        Verdict::Skipped,
                        format!(
                            "the gatekeeper ended the call ({reason}) before it was answered, \
                             {} after the Setup: not the endpoint's doing; {asked}",
                            secs(at.saturating_sub(setup_at))
                        ),
                    ));
                }
                if let Some(again) = registered_during(seen, setup_at, at) {
                    return Some((
                        Verdict::Skipped,
                        format!(
                            "the call ended ({cause}) before it was answered, {} after the \
                             endpoint registered again (full RRQ seq {}): a registration's \
                             calls end with it (docs/rules.md §8.7); {asked}",
                            secs(at.saturating_sub(again.at)),
                            again.seq()
                        ),
                    ));
                }
                return Some((
                    Verdict::Fail,
                    format!(
                        "it refused the call {} after the Setup: Release Complete ({cause}); {asked}",
                        secs(at.saturating_sub(setup_at))
                    ),
                ));
            }
            return deadline.then(|| {
                (
                    Verdict::Fail,
                    format!(
                        "the call was not answered within the step's {} s; {asked}",
                        running.step.wait.as_secs()
                    ),
                )
            });
        }
        let connected = moments.connected.unwrap_or_default();
        let Some((released_at, by_peer, _)) = moments.released else {
            return deadline.then(|| {
                (
                    Verdict::Fail,
                    format!(
                        "the call was connected but not over within the step's {} s",
                        running.step.wait.as_secs()
                    ),
                )
            });
        };
        if arq.is_none() {
            if !deadline && self.now < released_at + LAG {
                return None;
            }
            return Some((
                Verdict::Fail,
                "it answered (Connect) without asking the gatekeeper: no ARQ with answerCall TRUE \
                 and the call's callIdentifier"
                    .to_string(),
            ));
        }
        let alerting = heard.iter().any(|(_, e)| *e == CallEvent::Alerting);
        let releaser = releaser(by_peer);
        let drq = drq_of(seen, call_id);
        match drq {
            Some(drq) => Some((
                Verdict::Pass,
                format!(
                    "{asked}; {}Connect {} after the Setup; {releaser}; DRQ seq {} with the \
                     callIdentifier {} after the release",
                    if alerting { "Alerting, " } else { "" },
                    secs(connected.saturating_sub(setup_at)),
                    drq.seq(),
                    secs(drq.at.saturating_sub(released_at))
                ),
            )),
            None => (deadline || self.now >= released_at + DRQ_WITHIN).then(|| {
                (
                    Verdict::Fail,
                    format!(
                        "{asked}; Connect {} after the Setup; {releaser}, and no DRQ with the \
                         call's callIdentifier followed within {} s",
                        secs(connected.saturating_sub(setup_at)),
                        DRQ_WITHIN.as_secs()
                    ),
                )
            }),
        }
    }

    /// `call-out`: the endpoint called the exam's phone (its tester, or its own script,
    /// placed the call).
    pub(super) fn call_out(
        &self,
        examinee: &Examinee,
        running: &Running,
        seen: &[&Sighting],
        deadline: bool,
    ) -> Option<(Verdict, String)> {
        let partner = self.partner.as_ref()?;
        // Its ARQs for a call to the exam's phone.
        let arqs: Vec<&&Sighting> = seen
            .iter()
            .filter(|s| {
                s.direction == Direction::In && s.kind() == MessageKind::Arq && !s.is_answer_arq()
            })
            .filter(|s| match &s.message {
                RasMessage::admissionRequest(arq) => {
                    alias_texts(arq.destination_info.as_deref()).contains(&partner.alias)
                }
                _ => false,
            })
            .collect();
        // Setups the exam's phone read from it since the step began.
        let setups: Vec<([u8; 16], Duration, std::net::SocketAddr)> = self
            .heard
            .iter()
            .filter_map(|(call_id, heard)| {
                heard.iter().find_map(|(at, e)| match e {
                    CallEvent::SetupRead { from, caller }
                        if *at >= running.started
                            && (caller.iter().any(|c| examinee.aliases.contains(c))
                                || arqs.iter().any(|a| a.call_id() == Some(*call_id))) =>
                    {
                        Some((*call_id, *at, *from))
                    }
                    _ => None,
                })
            })
            .collect();
        let wait = running.step.wait.as_secs();
        let Some(&(call_id, setup_at, from)) = setups.iter().min_by_key(|s| s.1) else {
            let Some(arq) = arqs.first() else {
                return deadline.then(|| {
                    (
                        Verdict::Skipped,
                        format!(
                            "no call to {} came from it within {wait} s (the exam asked for one: \
                             place it from the endpoint, or let its own script do)",
                            partner.alias
                        ),
                    )
                });
            };
            return match answer_to(seen, arq) {
                Some(arj) if arj.kind() == MessageKind::Arj => Some((
                    Verdict::Skipped,
                    format!(
                        "the gatekeeper refused its call to {}: {}",
                        partner.alias,
                        super::super::sighting::describe(&arj.message)
                    ),
                )),
                Some(acf) => deadline.then(|| {
                    let (dest, routed) = acf.acf_dest().unwrap_or((None, false));
                    let dest = dest.map_or_else(|| "(none)".to_string(), |d| d.to_string());
                    let arrived = self.routed_by(examinee, running.started).is_some();
                    let why = match (routed, arrived) {
                        (true, true) => {
                            " (the gatekeeper took its Setup, but the call did not \
                                         reach the exam's phone)"
                        }
                        // docs/rules.md §8.7: a call connection is taken only from the
                        // caller's RAS or call signalling IP.
                        (true, false) => {
                            " (and no Setup of its arrived at a C-LAN: the \
                                          gatekeeper takes a call connection only from the \
                                          endpoint's RAS or call signalling IP, \
                                          docs/rules.md §8.7; on loopback the system may give \
                                          its connection another source address)"
                        }
                        _ => "",
                    };
                    (
                        Verdict::Fail,
                        format!(
                            "its ARQ seq {} was confirmed (ACF to {dest}), but no Setup reached \
                             the exam's phone within {wait} s{why}",
                            arq.seq(),
                        ),
                    )
                }),
                None => deadline.then(|| {
                    (
                        Verdict::Skipped,
                        format!(
                            "its ARQ seq {} got no answer from the gatekeeper",
                            arq.seq()
                        ),
                    )
                }),
            };
        };
        let settled = deadline || self.now >= setup_at + LAG;
        let Some(arq) = arqs.iter().find(|a| a.call_id() == Some(call_id)) else {
            if !settled {
                return None;
            }
            return Some((
                Verdict::Fail,
                match arqs.first().and_then(|a| a.call_id()) {
                    Some(other) => format!(
                        "its Setup's callIdentifier {} is not its ARQ's {}",
                        describe_call_id(&call_id),
                        describe_call_id(&other)
                    ),
                    None => "it placed the call without asking the gatekeeper: no ARQ before its \
                             Setup"
                        .to_string(),
                },
            ));
        };
        let Some((dest, routed)) = answer_to(seen, arq).and_then(Sighting::acf_dest) else {
            if !settled {
                return None;
            }
            return Some((
                Verdict::Fail,
                format!(
                    "its Setup reached the exam's phone, but its ARQ seq {} was not confirmed",
                    arq.seq()
                ),
            ));
        };
        let dest_text = dest.map_or_else(|| "(none)".to_string(), |d| d.to_string());
        // Routed: the gatekeeper says on which C-LAN the Setup arrived.
        let arrived = self.routed_by(examinee, running.started);
        let named = dest.and_then(|d| self.topology.clan_of_ip(d.ip()));
        let path = if routed {
            if arrived.is_none() && !settled {
                return None;
            }
            match (arrived, named) {
                (Some(arrived), Some(named)) if arrived != self.topology.clans[named].name => {
                    return Some((
                        Verdict::Fail,
                        format!(
                            "its ACF named {dest_text} ({}), but its Setup arrived at {arrived}",
                            self.topology.clans[named].name
                        ),
                    ))
                }
                (Some(arrived), _) => format!(
                    "its Setup arrived at {arrived} ({dest_text}), where the ACF sent it \
                     (gatekeeperRouted)"
                ),
                (None, _) => match self.topology.clan_of_ip(from.ip()) {
                Some(clan) => format!(
                    "its Setup went to {dest_text}, as the ACF said (gatekeeperRouted), and reached \
                     the exam's phone through {}",
                    self.topology.clans[clan].name
                ),
                None => {
                    return Some((
                        Verdict::Fail,
                        format!(
                            "its ACF said gatekeeperRouted to {dest_text}, but its Setup came \
                             straight from {from}, not through the gatekeeper"
                        ),
                    ))
                }
                },
            }
        } else if dest == Some(partner.call_signal_address) {
            format!("its Setup went to {dest_text}, the ACF's destCallSignalAddress")
        } else {
            return Some((
                Verdict::Fail,
                format!(
                    "its ACF named {dest_text}, but its Setup reached the exam's phone at {} \
                     instead",
                    partner.call_signal_address
                ),
            ));
        };
        let moments = Moments::of(self.heard_of(call_id));
        let Some((released_at, by_peer, _)) = moments
            .released
            .or_else(|| moments.failed.map(|(at, _)| (at, false, "")))
        else {
            return deadline.then(|| {
                (
                    Verdict::Fail,
                    format!("{path}; the call was not over within the step's {wait} s"),
                )
            });
        };
        let releaser = releaser(by_peer);
        let drq = drq_of(seen, call_id);
        match drq {
            Some(drq) => Some((
                Verdict::Pass,
                format!(
                    "ARQ seq {} for {}, confirmed; {} after it, {path}; {releaser}; DRQ seq {} \
                     with the callIdentifier {} after the release",
                    arq.seq(),
                    partner.alias,
                    secs(setup_at.saturating_sub(arq.at)),
                    drq.seq(),
                    secs(drq.at.saturating_sub(released_at))
                ),
            )),
            None => (deadline || self.now >= released_at + DRQ_WITHIN).then(|| {
                (
                    Verdict::Fail,
                    format!(
                        "ARQ seq {}, ACF; {path}; {releaser}, and no DRQ with the call's \
                         callIdentifier followed within {} s",
                        arq.seq(),
                        DRQ_WITHIN.as_secs()
                    ),
                )
            }),
        }
    }
}
