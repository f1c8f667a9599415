//! The checks of an exam: each with its stable id (what `--only` and a drill file name, and
//! what a JUnit test case is called), what the endpoint under test is expected to do, and
//! where that expectation comes from — an ITU-T recommendation's clause or message field, or
//! the section of docs/rules.md that makes it rasgk's rule.

/// What a check needs to run; without it the check is `skipped`, with the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Needs {
    /// Nothing beyond a registered endpoint.
    Nothing,
    /// `sockets = "tcp"`: real signalling sockets.
    SocketMode,
    /// `--password`: the secret the endpoint's tokens are made with.
    Password,
    /// A C-LAN besides the endpoint's own in its AGL (or a directly linked region's).
    Alternates,
}

impl Needs {
    /// Why a check that needs this could not run, when it is missing.
    pub fn missing(self) -> &'static str {
        match self {
            Needs::Nothing => "",
            Needs::SocketMode => "the exam's gatekeeper counts sockets (sockets = \"count\")",
            Needs::Password => "no --password given",
            Needs::Alternates => "the topology gives the endpoint no other C-LAN to go to",
        }
    }
}

/// One check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Check {
    /// Its stable id.
    pub id: &'static str,
    /// What it looks at, in a few words.
    pub title: &'static str,
    /// What the endpoint is expected to do.
    pub expected: &'static str,
    /// Where the expectation comes from.
    pub source: &'static str,
    /// What it needs to run.
    pub needs: Needs,
}

/// Every check, in the built-in drill's order.
pub const CHECKS: &[Check] = &[
    Check {
        id: "discovery",
        title: "gatekeeper discovery",
        expected: "a GRQ to the gatekeeper's discovery address, then the full RRQ sent to the \
                   rasAddress its GCF named",
        source: "H.323 clause 7.2.1 (gatekeeper discovery); docs/rules.md §4, §5.1",
        needs: Needs::Nothing,
    },
    Check {
        id: "registration",
        title: "what the RRQ declares",
        expected: "its rasAddress is the address its RAS comes from; rasAddress and \
                   callSignalAddress can be reached (an IP address and a port, neither 0); it \
                   declares an alias (its aliases and terminal type are reported)",
        source: "H.323 clause 7.2.2 (endpoint registration), H.225.0 RegistrationRequest; \
                 docs/rules.md §5.2",
        needs: Needs::Nothing,
    },
    Check {
        id: "keep-alive",
        title: "keep-alive within the time to live",
        expected: "with the drill's short timeToLive, a lightweight RRQ (keepAlive TRUE, the \
                   endpointIdentifier its RCF gave) before each time to live lapses, and one \
                   registration throughout",
        source:
            "H.323 clause 7.2.2 (timeToLive, keepAlive), H.225.0 RegistrationRequest.keepAlive; \
                 docs/rules.md §5.7",
        needs: Needs::Nothing,
    },
    Check {
        id: "retransmission",
        title: "a request sent again",
        expected: "when one answer is withheld, the same request again with the same \
                   requestSeqNum (that number alone ties a retransmission to its request), and \
                   no second registration",
        source: "H.225.0 RAS timers and retransmission (requestSeqNum); docs/rules.md §5.9",
        needs: Needs::Nothing,
    },
    Check {
        id: "irq",
        title: "a gatekeeper-sent IRQ",
        expected: "an IRR answering the gatekeeper's IRQ, with its requestSeqNum",
        source: "H.323 clause 7.2.4 (status), H.225.0 InfoRequest, InfoRequestResponse",
        needs: Needs::Nothing,
    },
    Check {
        id: "urq",
        title: "a gatekeeper-sent URQ",
        expected: "UCF to the gatekeeper's URQ, then a new registration",
        source: "H.323 clause 7.2.2 (unregistration by the gatekeeper), H.225.0 \
                 UnregistrationRequest; docs/rules.md §5.8",
        needs: Needs::Nothing,
    },
    Check {
        id: "alternate",
        title: "an RRJ naming an alternate gatekeeper",
        expected: "an RRJ carrying altGKInfo (needToRegister TRUE) followed to the alternate it \
                   names",
        source: "H.225.0 AltGKInfo, RegistrationReject.altGKInfo; docs/rules.md §5.3",
        needs: Needs::Alternates,
    },
    Check {
        id: "restart",
        title: "the gatekeeper restarted",
        expected: "after the gatekeeper lost its state, its next keep-alive gets RRJ \
                   fullRegistrationRequired (or its next ARQ or DRQ is refused: not \
                   registered) and a full RRQ follows",
        source: "H.225.0 RegistrationRejectReason.fullRegistrationRequired, \
                 AdmissionRejectReason.callerNotRegistered; docs/rules.md §5.7, §11",
        needs: Needs::Nothing,
    },
    Check {
        id: "home-out",
        title: "its home region out of service",
        expected: "with every C-LAN of its home region out, registered again from its AGL (not \
                   through discovery) at a C-LAN of a directly linked region",
        source: "docs/rules.md §4.1, §6 (AGL groups), §9.1",
        needs: Needs::Alternates,
    },
    Check {
        id: "clan-out",
        title: "its C-LAN out of service",
        expected: "registered again, not through discovery, at the first entry in service of \
                   its AGL (the one the URQ carried, or its RCF's): AGL order",
        source: "H.225.0 AlternateGK (needToRegister, priority); docs/rules.md §6, §9.1",
        needs: Needs::Alternates,
    },
    Check {
        id: "socket",
        title: "its signalling socket",
        expected: "non-TTS: a standard endpoint opens a connection to its C-LAN only for a call \
                   (reported, not a failure); TTS: it keeps the socket the gatekeeper opened \
                   rather than declining it",
        source: "docs/rules.md §8.3, §8.4, §8.6",
        needs: Needs::SocketMode,
    },
    Check {
        id: "call-in",
        title: "a call to it",
        expected: "a call from a phone of the exam answered: ARQ with answerCall, Alerting and \
                   Connect; when it is released, DRQ with the call's callIdentifier (in routed \
                   mode over its C-LAN)",
        source: "H.323 clause 8.1 (call set-up), H.225.0 AdmissionRequest.answerCall, \
                 DisengageRequest; docs/rules.md §8.7",
        needs: Needs::Nothing,
    },
    Check {
        id: "call-out",
        title: "a call from it",
        expected: "its Setup goes where its ACF said, and a DRQ follows the release",
        source: "H.323 clause 8.1 (call set-up), H.225.0 AdmissionConfirm.destCallSignalAddress; \
                 docs/rules.md §8.7",
        needs: Needs::Nothing,
    },
    Check {
        id: "password",
        title: "every request authenticated",
        expected: "every request that names the endpoint carries a valid token for its alias",
        source: "H.235.1, H.225.0 cryptoTokens; docs/rules.md §13.2",
        needs: Needs::Password,
    },
];

/// The check of this id.
pub fn check(id: &str) -> Option<&'static Check> {
    CHECKS.iter().find(|check| check.id == id)
}

/// Every check as `--list` prints it: its id and title, then what is expected and where
/// that comes from.
pub fn list() -> String {
    let width = CHECKS.iter().map(|c| c.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    for check in CHECKS {
        out.push_str(&format!("{:<width$}  {}\n", check.id, check.title));
        out.push_str(&format!("{:<width$}  expected: {}\n", "", check.expected));
        out.push_str(&format!("{:<width$}  source: {}\n", "", check.source));
        if check.needs != Needs::Nothing {
            let needs = match check.needs {
                Needs::SocketMode => "socket mode",
                Needs::Password => "--password",
                Needs::Alternates => "another C-LAN to go to",
                Needs::Nothing => "",
            };
            out.push_str(&format!("{:<width$}  needs: {needs}\n", ""));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_lowercase_and_every_one_the_issue_names_is_there() {
        let ids: Vec<&str> = CHECKS.iter().map(|c| c.id).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "{ids:?}");
        for id in &ids {
            assert!(
                id.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{id}"
            );
        }
        for id in [
            "discovery",
            "registration",
            "keep-alive",
            "retransmission",
            "urq",
            "clan-out",
            "home-out",
            "alternate",
            "restart",
            "irq",
            "socket",
            "call-in",
            "call-out",
            "password",
        ] {
            assert!(check(id).is_some(), "{id}");
        }
    }

    #[test]
    fn every_check_has_an_expectation_and_a_source() {
        for check in CHECKS {
            assert!(!check.expected.is_empty() && !check.source.is_empty());
            assert!(
                check.source.contains("H.2") || check.source.contains("docs/rules.md §"),
                "{}: {}",
                check.id,
                check.source
            );
        }
        let list = list();
        for check in CHECKS {
            assert!(list.contains(check.source), "{}", check.id);
        }
    }
}
