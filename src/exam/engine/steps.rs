//! A running step graded: what the endpoint did since the step began, once it shows
//! a verdict or the step's wait is over.

use std::net::SocketAddr;
use std::time::Duration;

use crate::exam::sighting::{Direction, Sighting};
use crate::exam::verdict::Verdict;
use crate::ras::{self, MessageKind, RasMessage};

use super::{alternate_addresses, Engine, Examinee, Happening, Running};

impl Engine {
    /// A running step's verdict, once it has one (`deadline`: its wait is over).
    pub(super) fn evaluate(&self, index: usize, deadline: bool) -> Option<(Verdict, String)> {
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
            "call-in" => self.call_in(examinee, running, &seen, deadline),
            "call-out" => self.call_out(examinee, running, &seen, deadline),
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
                // Its next registration request (a call's ARQ or DRQ between is about
                // something else).
                let again = seen[first + 1..].iter().find(|s| {
                    s.direction == Direction::In
                        && matches!(s.kind(), MessageKind::Rrq | MessageKind::Grq)
                });
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
                // How it learns that it lost its registration: its keep-alive refused, or
                // (H323Plus, placing calls) its ARQ or DRQ refused as not registered.
                let refused = seen.iter().enumerate().find_map(|(i, s)| {
                    if s.direction != Direction::Out {
                        return None;
                    }
                    let (request, reason) = match &s.message {
                        RasMessage::registrationReject(r) => {
                            ("keep-alive", ras::choice_name(&r.reject_reason))
                        }
                        RasMessage::admissionReject(r) => {
                            ("ARQ", ras::choice_name(&r.reject_reason))
                        }
                        RasMessage::disengageReject(r) => {
                            ("DRQ", ras::choice_name(&r.reject_reason))
                        }
                        _ => return None,
                    };
                    matches!(
                        reason.as_str(),
                        "fullRegistrationRequired" | "callerNotRegistered" | "notRegistered"
                    )
                    .then_some((i, request, reason))
                });
                let again = registered_again(&seen, running.started);
                match (refused, again) {
                    (Some((rej, request, reason)), Some((rrq, _))) if rrq.at >= seen[rej].at => {
                        Some((
                            Verdict::Pass,
                            format!(
                                "its {request} {:.1} s after the restart was refused {reason}; \
                                 its full RRQ followed {}",
                                from_start(seen[rej]),
                                later(rrq.at.saturating_sub(seen[rej].at))
                            ),
                        ))
                    }
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
                            "its request was refused as not registered, and no full RRQ \
                             followed"
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
/// "12 ms later", "12.0 s later".
fn later(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms later", d.as_millis())
    } else {
        format!("{:.1} s later", d.as_secs_f64())
    }
}

pub(super) fn not_registered(examinee: &Examinee) -> String {
    match examinee.unregistered_at {
        Some(at) => format!(
            "it was not registered when the step was due (its registration ended at {:.1} s and \
             it had not registered again)",
            at.as_secs_f64()
        ),
        None => "it was not registered when the step was due".to_string(),
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
