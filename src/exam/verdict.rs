//! A check graded: its verdict, what was expected and where that comes from, what the
//! endpoint did, and the evidence — the messages, with their times, that show it.

use super::catalogue::Check;

/// How a check went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The endpoint did what was expected.
    Pass,
    /// It did not.
    Fail,
    /// The check could not run (not in socket mode, no password given, the endpoint left,
    /// …): never a silent pass.
    Skipped,
}

impl Verdict {
    /// Its name, as reports write it.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Skipped => "skipped",
        }
    }
}

/// One message the gatekeeper saw or sent, as evidence.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evidence {
    /// Seconds since the exam started.
    pub at_s: f64,
    /// Who sent it: the endpoint's address, or the gatekeeper's (a C-LAN's, or the
    /// discovery address).
    pub from: String,
    /// To whom.
    pub to: String,
    /// The message in a line: its short name, `requestSeqNum` and what the check looked at
    /// (`RRQ seq 7 keepAlive TRUE endpointIdentifier EP00000001`).
    pub message: String,
}

/// A check graded for one endpoint.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Graded {
    /// The check's id.
    pub id: String,
    /// How it went.
    pub verdict: Verdict,
    /// What was expected.
    pub expected: String,
    /// What the endpoint did (or, skipped, why the check could not run).
    pub observed: String,
    /// Where the expectation comes from.
    pub source: String,
    /// The messages that show it, in time order.
    pub evidence: Vec<Evidence>,
}

impl Graded {
    /// `check` graded `verdict`, the endpoint having done `observed`.
    pub fn of(
        check: &Check,
        verdict: Verdict,
        observed: impl Into<String>,
        evidence: Vec<Evidence>,
    ) -> Graded {
        Graded {
            id: check.id.to_string(),
            verdict,
            expected: check.expected.to_string(),
            observed: observed.into(),
            source: check.source.to_string(),
            evidence,
        }
    }

    /// `check` skipped, because of `why`.
    pub fn skipped(check: &Check, why: impl Into<String>) -> Graded {
        Graded::of(check, Verdict::Skipped, why, Vec::new())
    }
}
