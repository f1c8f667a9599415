//! What an exam found, endpoint by endpoint, and the forms it is written in: the terminal
//! table, JSON (`--json FILE`: `endpoints`, each with its `endpoint` and its `checks`, each
//! check with `id`, `verdict`, `expected`, `observed`, `source` and `evidence`), and JUnit
//! XML (`--junit FILE`: a test suite per endpoint, a test case per check, so that a vendor's
//! CI can run an exam on every build of its endpoint and read it as it reads its tests).

use std::fmt::Write as _;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::verdict::{Graded, Verdict};

/// One endpoint's exam.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EndpointReport {
    /// How the endpoint is named: its first alias, else its RAS address.
    pub endpoint: String,
    /// Its aliases as it registered them.
    pub aliases: Vec<String>,
    /// Where its RAS came from.
    pub ras_address: Option<String>,
    /// Every check of the drill, graded, in the drill's order.
    pub checks: Vec<Graded>,
    /// Every RAS message between it and the gatekeeper, in time order (the HTML timeline's;
    /// at most the first 5,000).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<super::verdict::Evidence>,
}

impl EndpointReport {
    /// How many checks had `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.checks.iter().filter(|c| c.verdict == verdict).count()
    }
}

/// The whole exam.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExamReport {
    /// The gatekeeper the endpoints were examined against, in a line (its configuration,
    /// socket mode, call signalling).
    pub gatekeeper: String,
    /// The drill that ran (its file, or `built-in`).
    pub drill: String,
    /// Every endpoint examined.
    pub endpoints: Vec<EndpointReport>,
}

impl ExamReport {
    /// Any check failed.
    pub fn failed(&self) -> bool {
        self.endpoints.iter().any(|e| e.count(Verdict::Fail) > 0)
    }

    /// The table for people: a line per check, the evidence of each failure below it.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "exam against {} (drill: {})",
            self.gatekeeper, self.drill
        );
        let width = self
            .endpoints
            .iter()
            .flat_map(|e| e.checks.iter().map(|c| c.id.len()))
            .max()
            .unwrap_or(0);
        for endpoint in &self.endpoints {
            let _ = writeln!(
                out,
                "\n{}{}: {} passed, {} failed, {} skipped",
                endpoint.endpoint,
                endpoint
                    .ras_address
                    .as_ref()
                    .map(|a| format!(" ({a})"))
                    .unwrap_or_default(),
                endpoint.count(Verdict::Pass),
                endpoint.count(Verdict::Fail),
                endpoint.count(Verdict::Skipped),
            );
            for check in &endpoint.checks {
                let _ = writeln!(
                    out,
                    "  {:<7} {:<width$}  {}",
                    check.verdict.name(),
                    check.id,
                    check.observed
                );
                if check.verdict == Verdict::Fail {
                    let _ = writeln!(
                        out,
                        "  {:<7} {:<width$}  expected: {}",
                        "", "", check.expected
                    );
                    let _ = writeln!(out, "  {:<7} {:<width$}  source: {}", "", "", check.source);
                    for evidence in &check.evidence {
                        let _ = writeln!(
                            out,
                            "  {:<7} {:<width$}  {:>9.3} s  {} → {}  {}",
                            "", "", evidence.at_s, evidence.from, evidence.to, evidence.message
                        );
                    }
                }
            }
        }
        out
    }

    /// As one JSON object.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// As JUnit XML: the exam a report, each endpoint a test suite, each check a test
    /// case (`classname` the endpoint, so a CI server groups them): a failure carries
    /// what was observed as its message and the expectation, source and evidence as its
    /// text; a skipped check carries why.
    pub fn junit(&self) -> String {
        let mut report = Report::new("rasgk exam");
        for endpoint in &self.endpoints {
            let mut suite = TestSuite::new(endpoint.endpoint.as_str());
            suite.add_property(Property::new("gatekeeper", self.gatekeeper.as_str()));
            suite.add_property(Property::new("drill", self.drill.as_str()));
            if let Some(address) = &endpoint.ras_address {
                suite.add_property(Property::new("ras_address", address.as_str()));
            }
            for check in &endpoint.checks {
                let mut status = match check.verdict {
                    Verdict::Pass => TestCaseStatus::success(),
                    Verdict::Fail => TestCaseStatus::non_success(NonSuccessKind::Failure),
                    Verdict::Skipped => TestCaseStatus::skipped(),
                };
                if check.verdict != Verdict::Pass {
                    status.set_message(check.observed.as_str());
                }
                if check.verdict == Verdict::Fail {
                    status.set_description(failure_text(check));
                }
                let mut case = TestCase::new(check.id.as_str(), status);
                case.set_classname(endpoint.endpoint.as_str());
                suite.add_test_case(case);
            }
            report.add_test_suite(suite);
        }
        report.to_string().unwrap_or_default()
    }
}

/// A failed check's text in JUnit: what was expected, where that comes from, what happened.
fn failure_text(check: &Graded) -> String {
    let mut text = format!(
        "expected: {}\nsource: {}\nobserved: {}\n",
        check.expected, check.source, check.observed
    );
    for evidence in &check.evidence {
        let _ = writeln!(
            text,
            "{:.3} s  {} -> {}  {}",
            evidence.at_s, evidence.from, evidence.to, evidence.message
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::catalogue::check;
    use super::super::verdict::Evidence;
    use super::*;

    /// An exam of two endpoints: one passing everything it ran, one failing its keep-alive
    /// with the evidence, and a check skipped.
    fn sample() -> ExamReport {
        let evidence = vec![
            Evidence {
                at_s: 1.5,
                from: "127.1.0.5:1719".into(),
                to: "127.0.1.1:1719".into(),
                message: "RRQ seq 2 keepAlive FALSE".into(),
            },
            Evidence {
                at_s: 31.5,
                from: "127.0.1.1:1719".into(),
                to: "-".into(),
                message: "registration EP00000002 expired: no keep-alive <in> 30 s & \"quoted\""
                    .into(),
            },
        ];
        let good = EndpointReport {
            endpoint: "40001".into(),
            aliases: vec!["40001".into()],
            ras_address: Some("127.1.0.4:1719".into()),
            checks: vec![
                Graded::of(
                    check("discovery").unwrap(),
                    Verdict::Pass,
                    "GRQ, then RRQ at 127.0.1.1:1719",
                    Vec::new(),
                ),
                Graded::skipped(check("password").unwrap(), "no --password given"),
            ],
            messages: Vec::new(),
        };
        let bad = EndpointReport {
            endpoint: "40002".into(),
            aliases: vec!["40002".into()],
            ras_address: Some("127.1.0.5:1719".into()),
            checks: vec![Graded::of(
                check("keep-alive").unwrap(),
                Verdict::Fail,
                "no keep-alive within the 30 s time to live",
                evidence,
            )],
            messages: Vec::new(),
        };
        ExamReport {
            gatekeeper: "the embedded default, count mode".into(),
            drill: "built-in".into(),
            endpoints: vec![good, bad],
        }
    }

    #[test]
    fn the_table_says_each_verdict_and_shows_a_failures_evidence() {
        let report = sample();
        assert!(report.failed());
        let table = report.table();
        assert!(
            table.contains("40001 (127.1.0.4:1719): 1 passed, 0 failed, 1 skipped"),
            "{table}"
        );
        assert!(table.contains("fail    keep-alive"), "{table}");
        assert!(table.contains("skipped password"), "{table}");
        assert!(table.contains("31.500 s  127.0.1.1:1719 → -"), "{table}");
        assert!(table.contains("source: H.323 clause 7.2.2"), "{table}");
    }

    #[test]
    fn json_has_the_fields_the_issue_names_read_back_as_plain_json() {
        let report = sample();
        let value: serde_json::Value = serde_json::from_str(&report.json()).unwrap();
        let checks = &value["endpoints"][1]["checks"];
        assert_eq!(value["endpoints"][1]["endpoint"], "40002");
        assert_eq!(checks[0]["id"], "keep-alive");
        assert_eq!(checks[0]["verdict"], "fail");
        for field in ["expected", "observed", "source"] {
            assert!(
                checks[0][field].as_str().is_some_and(|s| !s.is_empty()),
                "{field}"
            );
        }
        assert_eq!(checks[0]["evidence"][1]["at_s"], 31.5);
        assert_eq!(value["endpoints"][0]["checks"][1]["verdict"], "skipped");
        let back: ExamReport = serde_json::from_value(value).unwrap();
        assert_eq!(back, report);
    }

    #[test]
    fn junit_is_a_suite_per_endpoint_and_a_case_per_check() {
        let xml = sample().junit();
        let document = roxmltree::Document::parse(&xml).expect("well-formed XML");
        let root = document.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        assert_eq!(root.attribute("tests"), Some("3"));
        assert_eq!(root.attribute("failures"), Some("1"));
        assert_eq!(root.attribute("skipped"), Some("1"));
        let suites: Vec<_> = root
            .children()
            .filter(|n| n.has_tag_name("testsuite"))
            .collect();
        assert_eq!(suites.len(), 2);
        assert_eq!(suites[1].attribute("name"), Some("40002"));
        let case = suites[1]
            .children()
            .find(|n| n.has_tag_name("testcase"))
            .unwrap();
        assert_eq!(case.attribute("name"), Some("keep-alive"));
        assert_eq!(case.attribute("classname"), Some("40002"));
        let failure = case.children().find(|n| n.has_tag_name("failure")).unwrap();
        assert_eq!(
            failure.attribute("message"),
            Some("no keep-alive within the 30 s time to live")
        );
        // The evidence, with characters XML must escape, comes back whole.
        let text = failure.text().unwrap_or_default();
        assert!(
            text.contains("no keep-alive <in> 30 s & \"quoted\""),
            "{text}"
        );
        assert!(text.contains("source: H.323 clause 7.2.2"), "{text}");
        let skipped = suites[0]
            .descendants()
            .find(|n| n.has_tag_name("skipped"))
            .unwrap();
        assert_eq!(skipped.attribute("message"), Some("no --password given"));
    }
}
