//! `rasgk bench` end to end, small: every part runs (echo ceiling, storm, memory, policy
//! scale, sockets, placement) and prints its figures in one block, each against its target, ending with the
//! `ratio WORKLOAD VALUE` lines scripts read; the storm's phones all register exactly once.
//! The figures of a debug build under test say nothing about speed, so only their shape and
//! the storm's counts are checked; bad options exit 2 with a reason.

use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .arg("bench")
        .args(args)
        .output()
        .expect("rasgk bench runs")
}

#[test]
fn one_run_prints_every_figure_against_its_target() {
    let out = bench(&[
        "--seconds",
        "0.4",
        "--concurrency",
        "4",
        "--storm-phones",
        "300",
        "--registrations",
        "3000",
        "--grqs",
        "300",
        "--socket-phones",
        "200",
        "--placement-phones",
        "500",
        "--plan-phones",
        "300",
        "--relay-pairs",
        "4",
        "--call-phones",
        "40",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();

    // The ceiling: each workload's rates, positive, and its ratio within its pairs' range.
    for workload in ["grq", "rrq_full", "rrq_light"] {
        let row = lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(workload))
            .unwrap_or_else(|| panic!("no {workload} row in\n{stdout}"));
        let fields: Vec<&str> = row.split_whitespace().collect();
        let number = |i: usize| fields[i].parse::<f64>().unwrap();
        assert!(number(1) > 0.0 && number(2) > 0.0, "{row}");
        let (ratio, low, high) = (number(3), number(4), number(6));
        assert!(low <= ratio && ratio <= high, "{row}");
    }

    // What each server cost, from /proc: a row for each workload and side, its figures read.
    for workload in ["grq", "rrq_full", "rrq_light"] {
        for side in ["bare echo", "echo", "rasgk"] {
            let prefix = format!("  {workload:<10} {side:<10} ");
            let row = lines
                .iter()
                .find(|l| l.starts_with(&prefix))
                .unwrap_or_else(|| panic!("no cost row {prefix:?} in\n{stdout}"));
            let fields: Vec<f64> = row[prefix.len()..]
                .split_whitespace()
                .filter(|f| *f != "%")
                .map(|f| f.parse().unwrap_or_else(|_| panic!("{row}")))
                .collect();
            assert_eq!(fields.len(), 5, "{row}");
            assert!(fields[0] > 0.0, "answers a second: {row}");
            assert!(fields[3] > 0.0 && fields[4] > 0.0, "time on a CPU: {row}");
        }
    }
    // Every request new: the retransmission cache answered none, while watched and scraped.
    let meanwhile = lines
        .iter()
        .find(|l| l.starts_with("rasgk meanwhile: "))
        .unwrap_or_else(|| panic!("no watchers' line in\n{stdout}"));
    assert!(
        meanwhile.starts_with("rasgk meanwhile: 0 replies from the retransmission cache, "),
        "{meanwhile}"
    );
    assert!(
        lines.iter().any(|l| l
            .trim_start()
            .starts_with("ceiling: replies from the retransmission cache")
            && l.ends_with("met")
            && !l.ends_with("NOT MET")),
        "{stdout}"
    );

    assert!(
        lines.iter().any(|l| l
            .trim_start()
            .starts_with("ceiling: answers of another kind")
            && l.contains(" 0 ")
            && l.ends_with(" met")),
        "{stdout}"
    );

    // The storm: every phone registered, and held once by the gatekeeper.
    let storm = lines
        .iter()
        .find(|l| l.starts_with("storm:"))
        .unwrap_or_else(|| panic!("no storm line in\n{stdout}"));
    assert!(storm.contains("300 phones"), "{storm}");
    assert!(storm.contains("300 registered, 0 lost"), "{storm}");
    assert!(
        storm.contains(
            "holds 300 registrations, 300 distinct endpoint ids, 300 distinct aliases: 0 doubled"
        ),
        "{storm}"
    );
    assert!(lines.iter().any(|l| l.starts_with("memory: ")
        && l.ends_with("resident bytes per registration at 3000 registrations")));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("policy: core time per GRQ") && l.contains("at 10000 C-LANs")));

    // Socket mode: every phone of each run in service, five establishments at most.
    let (agreement_lines, socket_lines): (Vec<&&str>, Vec<&&str>) = lines
        .iter()
        .filter(|l| l.starts_with("sockets: "))
        .partition(|l| l.starts_with("sockets: plan vs live, "));
    assert_eq!(socket_lines.len(), 4, "{stdout}");
    // The planner beside the live storms: both figures of each.
    assert_eq!(agreement_lines.len(), 2, "{stdout}");
    for line in &agreement_lines {
        assert!(line.contains(" ms, planned p50 "), "{line}");
    }
    for line in &socket_lines {
        assert!(
            line.contains("registered,") && !line.contains(" 0 in service"),
            "{line}"
        );
    }
    assert!(
        socket_lines[0].contains("200 phones (100 TTS)"),
        "{}",
        socket_lines[0]
    );
    assert!(socket_lines[0].contains("200 registered, 200 in service"));
    assert!(socket_lines[3].contains("100 phones (100 TTS), setup_ms 20"));

    // The placement burst: no non-TTS phone placed otherwise for the TTS phones beside it.
    assert!(
        lines.iter().any(|l| l.starts_with(
            "placement: 500 region-1 phones, 30 % TTS: 0 non-TTS phones placed otherwise"
        )),
        "{stdout}"
    );

    // The planner's day: every planned phone in service at the end.
    assert!(
        lines.iter().any(|l| l
            .starts_with("plan: 300 phones over 24 virtual hours, 23 C-LAN faults: ")
            && l.ends_with(", 300 in service at the end")),
        "{stdout}"
    );

    // Routed calls at scale: 20 calls between 40 phones, every one connected.
    let calls = lines
        .iter()
        .find(|l| l.starts_with("calls: "))
        .unwrap_or_else(|| panic!("no calls line in\n{stdout}"));
    assert!(
        calls.contains("40 phones in 2 storm processes, 40 in service; 20 calls asked, 20 placed, 20 connected, 0 failed; at most 20 at once"),
        "{calls}"
    );

    // Routed calls: both sides of the relay bench made calls, none failed.
    for side in ["forwarder", "rasgk"] {
        let line = lines
            .iter()
            .find(|l| l.starts_with(&format!("relay: {side} ")))
            .unwrap_or_else(|| panic!("no relay line for {side} in\n{stdout}"));
        assert!(
            line.contains("4 pairs") && line.ends_with(", 0 failed"),
            "{line}"
        );
    }

    // Each figure against its target, and the count of those met.
    let verdicts: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("  ") && (l.ends_with(" met") || l.ends_with("NOT MET")))
        .collect();
    assert_eq!(verdicts.len(), 25, "{stdout}");
    let storm_verdict = verdicts
        .iter()
        .find(|l| l.contains("storm of 300 phones"))
        .unwrap();
    assert!(
        storm_verdict.contains("0 lost, 0 doubled"),
        "{storm_verdict}"
    );
    assert!(storm_verdict.ends_with(" met"), "{storm_verdict}");
    let met = verdicts.iter().filter(|l| l.ends_with(" met")).count();
    assert!(
        lines.contains(&format!("targets: {met} of 25 met").as_str()),
        "{stdout}"
    );

    // The last lines, for scripts.
    let ratios: Vec<&str> = lines[lines.len() - 9..lines.len() - 6].to_vec();
    for (line, workload) in ratios.iter().zip(["grq", "rrq_full", "rrq_light"]) {
        let value = line
            .strip_prefix(&format!("ratio {workload} "))
            .unwrap_or_else(|| panic!("{line:?} is not `ratio {workload} VALUE`"));
        assert!(value.parse::<f64>().unwrap() > 0.0, "{line}");
    }
    // Each workload against the bare echo too.
    for (line, workload) in
        lines[lines.len() - 6..lines.len() - 3]
            .iter()
            .zip(["grq", "rrq_full", "rrq_light"])
    {
        let value = line
            .strip_prefix(&format!("ratio {workload}_bare "))
            .unwrap_or_else(|| panic!("{line:?} is not `ratio {workload}_bare VALUE`"));
        assert!(value.parse::<f64>().unwrap() > 0.0, "{line}");
    }
    for workload in ["grq", "rrq_full", "rrq_light"] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("  bare {workload} "))),
            "no bare row for {workload}\n{stdout}"
        );
    }
    let grq_ipv6 = lines[lines.len() - 3]
        .strip_prefix("ratio grq_ipv6 ")
        .unwrap_or_else(|| panic!("no `ratio grq_ipv6 VALUE` line\n{stdout}"));
    assert!(grq_ipv6.parse::<f64>().unwrap() > 0.0);
    // The storm against the closed loop, of the median of three storms.
    let storm_grq = lines[lines.len() - 2]
        .strip_prefix("ratio storm_grq ")
        .unwrap_or_else(|| panic!("no `ratio storm_grq VALUE` line\n{stdout}"));
    assert!(storm_grq.parse::<f64>().unwrap() > 0.0);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("storm: 300 phones") && l.contains("(median of 3: ")),
        "{stdout}"
    );
    let relay = lines[lines.len() - 1]
        .strip_prefix("ratio relay ")
        .unwrap_or_else(|| panic!("the last line is not `ratio relay VALUE`\n{stdout}"));
    assert!(relay.parse::<f64>().unwrap() > 0.0);
}

#[test]
fn bad_options_exit_2_saying_which() {
    for (args, says) in [
        (
            vec!["--concurrency", "0"],
            "--concurrency 0 is outside 1 to",
        ),
        (vec!["--seconds", "0"], "--seconds 0 must be above 0"),
        (vec!["--window", "0"], "--window 0 is outside 1 to 64"),
        (vec!["--window", "65"], "--window 65 is outside 1 to 64"),
        (
            vec!["--storm-phones", "5000000"],
            "--storm-phones 5000000 is over",
        ),
        (
            vec!["--placement-phones", "70000"],
            "--placement-phones 70000 is over",
        ),
        (
            vec!["--plan-phones", "200000"],
            "--plan-phones 200000 is over",
        ),
        (vec!["--relay-pairs", "501"], "--relay-pairs 501 is over"),
    ] {
        let out = bench(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn the_load_client_refuses_to_run_without_its_orders() {
    let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(["bench", "--ceiling-client"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("rasgk bench --ceiling-client runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no orders on standard input"), "{stderr}");
}
