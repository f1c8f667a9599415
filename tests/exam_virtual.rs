//! The exam in virtual time: a well-behaved simulated phone passes every check it can run,
//! and each misbehaviour fails exactly the checks it breaks.

mod support;

use std::time::Duration;

use rasgk::exam::drill::Drill;
use rasgk::exam::report::EndpointReport;
use rasgk::simulated_phone::Misbehaviour;
use support::exam_world::{with_verdict, ExamWorld};

/// One phone of region 1 examined by the built-in drill; its report.
fn examine(misbehaviours: &[Misbehaviour], sockets: bool, extension: u32) -> EndpointReport {
    let mut world = ExamWorld::new(Drill::built_in(), sockets);
    world.phone(
        extension,
        "127.1.0.5:1719",
        misbehaviours,
        Duration::from_millis(100),
    );
    let reports = world.run(Duration::from_secs(1200));
    assert_eq!(reports.len(), 1, "{reports:#?}");
    reports.into_iter().next().unwrap()
}

/// The report as a table, with every check's evidence.
fn show(report: &EndpointReport) -> String {
    report
        .checks
        .iter()
        .map(|c| {
            let evidence: String = c
                .evidence
                .iter()
                .map(|e| {
                    format!(
                        "      {:>8.3} {} -> {} {}\n",
                        e.at_s, e.from, e.to, e.message
                    )
                })
                .collect();
            format!(
                "{:<15} {:<7} {}\n{evidence}",
                c.id,
                c.verdict.name(),
                c.observed
            )
        })
        .collect()
}

/// The checks no phone can run in count mode without a password.
const SKIPPED_IN_COUNT_MODE: [&str; 2] = ["socket", "password"];

#[test]
fn a_well_behaved_phone_passes_every_check_it_can_run() {
    let report = examine(&[], false, 5001);
    let table = show(&report);
    assert!(with_verdict(&report, "fail").is_empty(), "{table}");
    assert_eq!(
        with_verdict(&report, "skipped"),
        SKIPPED_IN_COUNT_MODE,
        "{table}"
    );
    assert_eq!(report.checks.len(), 14, "{table}");
}

/// `misbehaviour` fails exactly `fails`; every other check it can run passes, or is
/// skipped for the reasons in `skipped` (its registration lapsed).
fn breaks(misbehaviour: Misbehaviour, fails: &[&str], lapses: bool) {
    let report = examine(&[misbehaviour], false, 5001);
    let table = show(&report);
    assert_eq!(
        with_verdict(&report, "fail"),
        fails,
        "{}:\n{table}",
        misbehaviour.name()
    );
    for check in &report.checks {
        if check.verdict.name() != "skipped" || SKIPPED_IN_COUNT_MODE.contains(&check.id.as_str()) {
            continue;
        }
        assert!(
            lapses && check.observed.contains("lapsed"),
            "{}: {} skipped: {}\n{table}",
            misbehaviour.name(),
            check.id,
            check.observed
        );
    }
}

#[test]
fn a_phone_that_ignores_urq_fails_urq() {
    breaks(Misbehaviour::IgnoresUrq, &["urq"], false);
}

#[test]
fn a_phone_that_never_keeps_alive_fails_keep_alive_and_its_registration_lapses() {
    breaks(Misbehaviour::NeverKeepsAlive, &["keep-alive"], true);
}

#[test]
fn a_phone_that_rediscovers_fails_clan_out_and_home_out() {
    breaks(
        Misbehaviour::RediscoversOnLoss,
        &["home-out", "clan-out"],
        false,
    );
}

#[test]
fn a_phone_that_retransmits_with_a_new_seq_fails_retransmission() {
    breaks(Misbehaviour::NewSeqOnRetransmit, &["retransmission"], false);
}

#[test]
fn a_phone_that_skips_agl_order_fails_home_out_and_clan_out() {
    // Walking its AGL from the end, it lands in an indirectly linked region when its home
    // goes: home-out fails too.
    breaks(
        Misbehaviour::SkipsAglOrder,
        &["home-out", "clan-out"],
        false,
    );
}

#[test]
fn a_phone_that_ignores_irq_fails_irq() {
    breaks(Misbehaviour::IgnoresIrq, &["irq"], false);
}

#[test]
fn a_phone_that_sends_no_drq_fails_call_in_and_call_out() {
    breaks(Misbehaviour::NoDrq, &["call-in", "call-out"], false);
}

#[test]
fn the_call_checks_say_what_the_call_did() {
    let report = examine(&[], false, 5001);
    let table = show(&report);
    let call_in = report.checks.iter().find(|c| c.id == "call-in").unwrap();
    assert_eq!(call_in.verdict.name(), "pass", "{table}");
    for part in ["ARQ answerCall seq", "Connect", "DRQ seq"] {
        assert!(call_in.observed.contains(part), "{part}: {table}");
    }
    // The exam's phone's side is in the evidence: its Setup, the Connect it heard.
    assert!(
        call_in
            .evidence
            .iter()
            .any(|e| e.message.starts_with("Q.931 Setup")),
        "{table}"
    );
    let call_out = report.checks.iter().find(|c| c.id == "call-out").unwrap();
    assert_eq!(call_out.verdict.name(), "pass", "{table}");
    assert!(
        call_out
            .observed
            .contains("the ACF's destCallSignalAddress"),
        "{table}"
    );

    let silent = examine(&[Misbehaviour::NoDrq], false, 5001);
    let table = show(&silent);
    let call_in = silent.checks.iter().find(|c| c.id == "call-in").unwrap();
    assert!(call_in.observed.contains("no DRQ"), "{table}");
    // The endpoint took the call all the same: its ARQ and the Connect are reported.
    assert!(call_in.observed.contains("ARQ answerCall seq"), "{table}");
}

#[test]
fn in_socket_mode_a_tts_phone_that_declines_fails_socket_and_one_that_keeps_passes() {
    let kept = examine(&[], true, 5901);
    let table = show(&kept);
    assert!(with_verdict(&kept, "fail").is_empty(), "{table}");
    let socket = kept.checks.iter().find(|c| c.id == "socket").unwrap();
    assert_eq!(socket.verdict.name(), "pass", "{table}");
    assert!(socket.observed.contains("TTS"), "{table}");

    let declined = examine(&[Misbehaviour::DeclinesTts], true, 5901);
    let table = show(&declined);
    assert_eq!(with_verdict(&declined, "fail"), ["socket"], "{table}");
}

#[test]
fn a_phone_that_vanishes_mid_exam_has_its_remaining_checks_skipped_with_the_reason() {
    let mut world = ExamWorld::new(Drill::built_in(), false);
    world.phone(5001, "127.1.0.5:1719", &[], Duration::from_millis(100));
    world.phone(5002, "127.1.0.6:1719", &[], Duration::from_millis(100));
    // Gone after its keep-alive check, before the restart.
    world.vanish(1, Duration::from_secs(60));
    let reports = world.run(Duration::from_secs(1200));
    assert_eq!(reports.len(), 2);
    let stayed = &reports[0];
    assert!(with_verdict(stayed, "fail").is_empty(), "{}", show(stayed));
    assert_eq!(
        with_verdict(stayed, "skipped"),
        SKIPPED_IN_COUNT_MODE,
        "{}",
        show(stayed)
    );
    let gone = &reports[1];
    let table = show(gone);
    assert!(with_verdict(gone, "fail").is_empty(), "{table}");
    for id in ["restart", "home-out", "clan-out"] {
        let check = gone.checks.iter().find(|c| c.id == id).unwrap();
        assert_eq!(check.verdict.name(), "skipped", "{table}");
        assert!(check.observed.contains("lapsed"), "{table}");
    }
}
