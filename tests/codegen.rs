//! Keeps `src/ras/generated.rs` honest: it must equal a fresh generation from `asn1/`
//! (regenerate with `asn1/regenerate`), and the repairs of the generation step must hold.

#[path = "../asn1/codegen/src/generate.rs"]
mod generate;

use generate::*;

fn checked_in() -> String {
    std::fs::read_to_string(root().join(GENERATED)).unwrap_or_default()
}

#[test]
fn generated_code_matches_asn1() {
    let (fresh, _) = generate();
    let current = checked_in();
    if current != fresh {
        let first = current
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| current.lines().count().min(fresh.lines().count()));
        panic!(
            "{GENERATED} is stale: it differs from a fresh generation from asn1/ at line {} \
             (checked in {} lines, fresh {} lines). Run asn1/regenerate and commit the result.",
            first + 1,
            current.lines().count(),
            fresh.lines().count()
        );
    }
}

#[test]
fn the_repair_reaches_time_to_live() {
    let (_, repaired) = generate();
    for field in [
        "RegistrationConfirm.time_to_live",
        "RegistrationRequest.time_to_live",
    ] {
        assert!(
            repaired.iter().any(|r| r == field),
            "expected {field} among the repaired extension additions, got {repaired:?}"
        );
    }
}

/// Every extension addition in the checked-in file is an `Option` (see
/// [`absent_extension_additions_decode`]), however its attribute is laid out.
#[test]
fn every_extension_addition_may_be_absent() {
    let code = checked_in();
    let lines: Vec<&str> = code.lines().collect();
    let mut offenders = Vec::new();
    let mut in_attribute = String::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with("#[rasn(") || !in_attribute.is_empty() {
            in_attribute.push_str(trimmed);
            if !trimmed.ends_with(")]") {
                continue;
            }
            let attribute = std::mem::take(&mut in_attribute);
            let field = lines.get(i + 1).map(|l| l.trim()).unwrap_or("");
            if attribute.contains("extension_addition")
                && field.starts_with("pub ")
                && field.contains(": ")
                && !field.contains(": Option<")
            {
                offenders.push(format!("line {}: {field}", i + 2));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "mandatory extension additions left: {offenders:#?}"
    );
}

#[test]
fn repair_makes_mandatory_additions_optional() {
    let code = r#"
    pub struct Rrq {
        pub seq: RequestSeqNum,
        #[rasn(extension_addition, identifier = "keepAlive")]
        pub keep_alive: bool,
        #[rasn(extension_addition)]
        pub tokens: Option<SequenceOf<ClearToken>>,
    }
    impl Rrq {
        pub fn new(
            seq: RequestSeqNum,
            keep_alive: bool,
            tokens: Option<SequenceOf<ClearToken>>,
        ) -> Self {
"#;
    let (out, repaired) = absent_extension_additions_decode(code);
    assert_eq!(repaired, ["Rrq.keep_alive (optional)"]);
    assert!(out.contains("pub keep_alive: Option<bool>,"));
    assert!(out.contains("            keep_alive: Option<bool>,"));
    assert!(out.contains("pub seq: RequestSeqNum,"));
    assert!(out.contains("            seq: RequestSeqNum,"));
}

#[test]
fn repair_copies_constraints_through_newtype_chains() {
    let code = r#"
    #[rasn(delegate, value("1..=4294967295"))]
    pub struct TimeToLive(pub u32);
    #[rasn(delegate)]
    pub struct Ttl2(pub TimeToLive);
    #[rasn(delegate, size("1..=128"))]
    pub struct Id(pub BmpString);
    pub struct Rcf {
        #[rasn(extension_addition, identifier = "timeToLive")]
        pub time_to_live: Option<TimeToLive>,
        #[rasn(extension_addition)]
        pub other: Option<Ttl2>,
        #[rasn(extension_addition)]
        pub id: Id,
        #[rasn(extension_addition, value("0..=255"))]
        pub small: Option<u8>,
        pub root: TimeToLive,
    }
"#;
    let (out, repaired) = keep_delegate_constraints(code);
    assert_eq!(repaired, ["Rcf.time_to_live", "Rcf.other", "Rcf.id"]);
    assert!(out.contains(
        r#"#[rasn(extension_addition, value("1..=4294967295"), identifier = "timeToLive")]"#
    ));
    assert!(out.contains(r#"#[rasn(extension_addition, size("1..=128"))]"#));
    assert!(out.contains(r#"#[rasn(extension_addition, value("0..=255"))]"#));
}
