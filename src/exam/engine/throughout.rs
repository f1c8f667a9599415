//! The checks graded over the whole exam rather than run as steps: `discovery` and
//! `registration` at the first registration, `socket` and `password` at the end.

use crate::exam::catalogue::{Check, Needs};
use crate::exam::sighting::{Direction, Sighting};
use crate::exam::verdict::{Evidence, Graded, Verdict};
use crate::ras::{self, socket_addr, MessageKind, RasMessage};

use std::net::SocketAddr;

use super::{Engine, Examinee, Happening, EVIDENCE, THROUGHOUT};

impl Engine {
    /// Grades `discovery` and `registration` at the endpoint's first registration.
    pub(super) fn grade_on_registration(&mut self, index: usize) {
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

    pub(super) fn grade_throughout_all(&mut self) {
        for i in 0..self.examinees.len() {
            self.grade_throughout(i);
        }
    }

    /// Grades the checks that watch the whole exam: `socket` and `password` (and, for an
    /// endpoint that never registered, the first two).
    pub(super) fn grade_throughout(&mut self, index: usize) {
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
                        "a TTS phone: it declined the gatekeeper's socket {} \
                         ({established} established)",
                        times(declined)
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
        } else if established == 1 {
            "it opened a signalling connection to its C-LAN once".to_string()
        } else {
            format!("it opened a signalling connection to its C-LAN {established} times")
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

/// "once", "2 times".
fn times(n: usize) -> String {
    if n == 1 {
        "once".to_string()
    } else {
        format!("{n} times")
    }
}
