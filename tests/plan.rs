//! `rasgk plan`: the scenarios of fixtures/plan/ give byte-identical JSON run after run, and
//! each shows what it is there to show (docs/planning.md).

use std::path::Path;
use std::process::Command;

use rasgk::config;
use rasgk::plan::{self, Planned, Report, Scenario};

fn scenario(name: &str) -> Scenario {
    Scenario::load(&Path::new("fixtures/plan").join(name)).expect("the fixture reads")
}

fn lab() -> config::Config {
    config::load(Path::new("fixtures/plan/lab.toml")).expect("the lab reads")
}

/// The lab whose gatekeeper relays the phones' calls.
fn routed_lab() -> config::Config {
    config::load(Path::new("fixtures/plan/routed-lab.toml")).expect("the routed lab reads")
}

fn planned(name: &str, config: config::Config) -> Planned {
    plan::plan(&scenario(name), config, "lab", |_| {}).expect("the plan runs")
}

fn clan<'a>(report: &'a Report, name: &str) -> &'a plan::report::ClanLine {
    report
        .clans
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no C-LAN {name} in {report:#?}"))
}

/// Nothing over a cap, every phone in service at the end.
fn whole(report: &Report) {
    for c in &report.clans {
        assert!(
            c.peak <= c.cap,
            "{} peaked at {} over {}",
            c.name,
            c.peak,
            c.cap
        );
    }
    assert_eq!(report.arrived, report.phones, "{}", report.table());
    assert_eq!(report.in_service, report.phones, "{}", report.table());
    assert_eq!(report.without_service, 0, "{}", report.table());
}

#[test]
fn the_same_inputs_give_byte_identical_json_run_after_run() {
    let run = |scenario: &str, config: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_rasgk"));
        command.arg("plan").arg(scenario).arg("--json");
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        let out = command.output().expect("rasgk plan runs");
        assert!(
            out.status.success(),
            "rasgk plan {scenario}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    for (scenario, config) in [
        ("fixtures/plan/restart.toml", Some("fixtures/plan/lab.toml")),
        ("fixtures/plan/clan-failure.toml", None),
        (
            "fixtures/plan/routed-clan-failure.toml",
            Some("fixtures/plan/routed-lab.toml"),
        ),
    ] {
        let first = run(scenario, config);
        let second = run(scenario, config);
        assert!(first.len() > 1000, "{}", String::from_utf8_lossy(&first));
        assert!(first == second, "{scenario}: two runs differ");
        let report: serde_json::Value = serde_json::from_slice(&first).expect("valid JSON");
        assert!(report["clans"].as_array().is_some_and(|c| !c.is_empty()));
        // Routed calls are reported when the lab relays them, and only then.
        let routed = config.is_some_and(|c| c.contains("routed"));
        assert_eq!(report["routed"].is_object(), routed, "{scenario}");
    }
}

#[test]
fn a_morning_arrival_fills_every_region_without_a_cap_crossed_and_times_the_establishments() {
    let report = planned("morning.toml", lab()).report;
    whole(&report);
    // Every RCF led to a socket, and each establishment took the lab's setup_ms (20 ms)
    // at least.
    let service = &report.time_to_service;
    assert_eq!(service.tts.count, 750, "{}", report.table());
    assert_eq!(service.non_tts.count, 2250, "{}", report.table());
    assert!(service.tts.p50_ms >= 20.0, "{}", report.table());
    assert!(service.non_tts.p50_ms >= 20.0, "{}", report.table());
    assert!(report.traffic.calls > 1000, "{}", report.table());
    // Region 1's 1,050 non-TTS phones fill its first class (960) before clan-1c.
    assert_eq!(
        clan(&report, "clan-1a").final_sockets,
        480,
        "{}",
        report.table()
    );
    assert_eq!(
        clan(&report, "clan-1b").final_sockets,
        480,
        "{}",
        report.table()
    );
}

#[test]
fn a_clan_failure_moves_exactly_its_phones_and_nothing_moves_back_when_it_returns() {
    let planned = planned("clan-failure.toml", config::embedded_default());
    let report = &planned.report;
    whole(report);
    let trace = planned
        .tally
        .clans
        .iter()
        .find(|c| c.name == "clan-1a")
        .expect("clan-1a traced");
    let before = trace
        .points
        .iter()
        .take_while(|&&(at, _)| at < 600.0)
        .last()
        .map(|&(_, sockets)| sockets)
        .expect("sampled before the failure");
    assert!(before > 300, "{}", report.table());
    let failure = &report.events[0];
    assert_eq!(failure.event, "clan-1a out of service");
    assert_eq!(
        failure.lost_service,
        u64::from(before),
        "{}",
        report.table()
    );
    assert_eq!(failure.still_without, 0);
    let all_back = failure.all_back_s.expect("every phone back");
    assert!(all_back > 0.0 && all_back < 60.0, "{}", report.table());
    assert!(failure.half_back_s <= failure.most_back_s);
    // Back in service: Avaya does not rebalance, so nothing moves and clan-1a stays empty.
    let back = &report.events[1];
    assert_eq!(back.event, "clan-1a back in service");
    assert_eq!(back.lost_service, 0, "{}", report.table());
    assert_eq!(clan(report, "clan-1a").final_sockets, 0);
}

#[test]
fn after_a_gatekeeper_restart_every_phone_is_back_through_its_agl() {
    let report = planned("restart.toml", lab()).report;
    whole(&report);
    let restart = &report.events[0];
    assert_eq!(restart.event, "gatekeeper restart");
    assert_eq!(restart.lost_service, 2000, "{}", report.table());
    assert_eq!(restart.back, 2000, "{}", report.table());
    let all_back = restart.all_back_s.expect("every phone back");
    // A thousand TTS set-ups of 20 ms, five at a time on each of seven C-LANs, take more
    // than half a second; the phones' own recovery takes less than a minute.
    assert!(all_back > 0.5 && all_back < 60.0, "{}", report.table());
    // Each phone was in service twice: once after arriving, once after the restart.
    assert_eq!(report.time_to_service.tts.count, 2000, "{}", report.table());
    assert_eq!(
        report.time_to_service.non_tts.count,
        2000,
        "{}",
        report.table()
    );
}

#[test]
fn a_region_without_clans_is_served_by_its_direct_neighbour() {
    let report = planned("no-clans-region.toml", lab()).report;
    whole(&report);
    let kiosk = report
        .regions
        .iter()
        .find(|r| r.region == 4)
        .expect("region 4");
    assert_eq!(kiosk.phones, 300);
    assert_eq!(kiosk.at_home, 0);
    assert_eq!(kiosk.spilled_to.get(&2), Some(&300), "{}", report.table());
    let branch = report
        .regions
        .iter()
        .find(|r| r.region == 2)
        .expect("region 2");
    assert_eq!(branch.taken_from.get(&4), Some(&300), "{}", report.table());
}

#[test]
fn an_event_naming_an_unknown_clan_stops_the_plan_with_its_field_time_and_name() {
    let text = "duration_s = 60\n[[group]]\ncount = 1\nregion = 1\n\
                [[event]]\nat_s = 30\nout_of_service = \"clan-9z\"\n";
    let scenario = Scenario::from_toml(text, "x.toml", Path::new(".")).unwrap();
    let Err(error) = plan::plan(&scenario, config::embedded_default(), "default", |_| {}) else {
        panic!("a plan naming clan-9z ran");
    };
    let error = error.to_string();
    assert!(
        error.starts_with(
            "x.toml: event[0].out_of_service: no C-LAN is named \"clan-9z\" in default, \
             in force at 30 s"
        ),
        "{error}"
    );
}

/// The drill's plan on `lab`, with clan-1a's class.
fn drill(lab: &str) -> Report {
    let config = config::load(&Path::new("fixtures/plan").join(lab)).expect("the drill lab reads");
    let report = planned("drill.toml", config).report;
    whole(&report);
    let failure = &report.events[0];
    assert_eq!(failure.event, "clan-1a out of service");
    assert!(failure.lost_service > 300, "{}", report.table());
    assert_eq!(failure.still_without, 0, "{}", report.table());
    assert!(
        failure.all_back_s.is_some_and(|s| s < 60.0),
        "{}",
        report.table()
    );
    report
}

#[test]
fn a_failure_drill_without_rebalancing_leaves_the_returned_clan_empty() {
    let report = drill("drill-lab.toml");
    assert_eq!(report.rebalance, None);
    assert_eq!(report.events[1].lost_service, 0, "{}", report.table());
    assert_eq!(
        clan(&report, "clan-1a").final_sockets,
        0,
        "{}",
        report.table()
    );
    assert_eq!(report.traffic.urqs, report.events[0].lost_service);
}

#[test]
fn with_rebalancing_the_returned_clan_fills_to_within_tolerance_at_the_configured_pace() {
    let report = drill("drill-lab-rebalance.toml");
    let rebalance = report.rebalance.as_ref().expect("rebalancing on");
    let (tolerance, per_s) = (rebalance.tolerance, rebalance.moves_per_s);
    // Within tolerance of its class: the region's ten C-LANs are one class.
    let class: Vec<u32> = report
        .clans
        .iter()
        .filter(|c| c.region == 1)
        .map(|c| c.final_sockets)
        .collect();
    let returned = clan(&report, "clan-1a").final_sockets;
    let largest = class.iter().copied().max().unwrap_or(0);
    assert!(
        returned > 0 && largest - returned <= tolerance,
        "{}",
        report.table()
    );
    // Never faster than the limit, and done in the time the limit allows (the moves
    // needed, one every 1/moves_per_s, from the return), with a second of slack.
    assert!(
        rebalance.most_in_one_second as f64 <= per_s,
        "{}",
        report.table()
    );
    let first = rebalance.first_move_s.expect("moves");
    let last = rebalance.last_move_s.expect("moves");
    assert!(first >= 2400.0, "{}", report.table());
    let allowed = rebalance.moves as f64 / per_s;
    assert!(last - 2400.0 <= allowed + 1.0, "{}", report.table());
    assert!(last - first >= (rebalance.moves - 1) as f64 / per_s - 0.001);
    // Every phone moved was back in service.
    let back = &report.events[1];
    assert_eq!(back.lost_service, rebalance.moves, "{}", report.table());
    assert_eq!(back.still_without, 0);
    // Nothing moved in the other regions.
    assert!(rebalance
        .moves_from
        .keys()
        .all(|name| name.starts_with("clan-1")));
}

/// The routed calls of a report, with its table when it has none.
fn routed(report: &Report) -> &plan::report::RoutedLine {
    report
        .routed
        .as_ref()
        .unwrap_or_else(|| panic!("no routed calls in {}", report.table()))
}

#[test]
fn routed_calls_all_connect_with_each_leg_counted_on_its_sockets_clan() {
    let planned = planned("routed.toml", routed_lab());
    let report = &planned.report;
    whole(report);
    let calls = routed(report);
    let table = report.table();
    assert!(calls.placed > 2000, "{table}");
    // Every Setup made a call, every call was answered and ended by its caller.
    assert_eq!(calls.setups, calls.placed, "{table}");
    assert_eq!(calls.connected, calls.placed, "{table}");
    assert!(calls.failed.is_empty(), "{table}");
    assert_eq!(calls.cut, 0, "{table}");
    assert!(calls.placed_as_trunk_calls.is_empty(), "{table}");
    assert_eq!(
        calls.ended.keys().collect::<Vec<_>>(),
        ["caller_released"],
        "{table}"
    );
    // Calls in progress at the end are the ones not ended.
    let in_progress: u64 = calls.connected - calls.ended["caller_released"];
    assert!(in_progress > 0, "{table}");
    // The callee answers at once: Setup to the core, to the callee, its Connect to the
    // core, to the caller, one latency (1 ms) each.
    assert_eq!(calls.setup_to_connect.count as u64, calls.placed, "{table}");
    assert_eq!(calls.setup_to_connect.p50_ms, 4.0, "{table}");
    assert_eq!(calls.setup_to_connect.max_ms, 4.0, "{table}");
    // Each answered call has one caller leg and one callee leg, on the C-LANs of the two
    // phones' sockets; every C-LAN carries both kinds (hq phones call branch phones and
    // the reverse, and the spilled ones hold sockets in the next region).
    let caller_legs: u64 = calls.clans.iter().map(|c| c.caller_legs).sum();
    let callee_legs: u64 = calls.clans.iter().map(|c| c.callee_legs).sum();
    assert_eq!((caller_legs, callee_legs), (calls.placed, calls.placed));
    for c in &calls.clans {
        assert!(c.caller_legs > 0 && c.callee_legs > 0, "{table}");
        assert!(c.peak_calls > 0 && u64::from(c.peak_calls) <= calls.placed);
        assert_eq!(
            c.peak_call_connections, 0,
            "no connection beyond the sockets"
        );
    }
    // At every sample the core's calls on each C-LAN were at least the answered calls
    // with a leg on its sockets (so a callee leg is counted on the callee's socket's
    // C-LAN), and no more than those and the calls not yet settled allow.
    let checks = &planned.tally.routed;
    assert_eq!(checks.below_answered, 0, "{table}");
    assert_eq!(checks.above_placed, 0, "{table}");
    let final_calls: u64 = calls.clans.iter().map(|c| u64::from(c.final_calls)).sum();
    assert!(final_calls >= in_progress && final_calls <= 2 * in_progress);
}

#[test]
fn a_clan_failure_ends_the_calls_with_a_leg_there_and_they_are_placed_again_elsewhere() {
    let planned = planned("routed-clan-failure.toml", routed_lab());
    let report = &planned.report;
    whole(report);
    let table = report.table();
    let calls = routed(report);
    let failure = &report.events[0];
    assert_eq!(failure.event, "clan-1a out of service");
    let at_failure = failure.calls.as_ref().expect("calls at the failure");
    // Exactly the calls with a leg on clan-1a ended, for that reason, and their callers
    // lost them.
    let on_clan = at_failure.on.get("clan-1a").copied().unwrap_or(0);
    assert!(on_clan > 20, "{table}");
    assert!(at_failure.in_progress > on_clan, "{table}");
    let ended = u64::from(on_clan);
    assert_eq!(
        at_failure.ended,
        [("clan_out_of_service".to_string(), ended)].into(),
        "{table}"
    );
    assert_eq!(calls.ended.get("clan_out_of_service"), Some(&ended));
    assert_eq!(at_failure.cut, ended, "{table}");
    assert_eq!(calls.cut, ended, "{table}");
    // While it is out of service no call has a leg there; calls go on being answered, and
    // most callers that lost one were answered again.
    assert!(!at_failure.peak.contains_key("clan-1a"), "{table}");
    assert!(at_failure.answered > 500, "{table}");
    assert!(at_failure.called_again * 2 > at_failure.cut, "{table}");
    // Nothing failed to connect; a call cut after its answer is not a failure.
    assert_eq!(calls.connected, calls.placed, "{table}");
    assert!(calls.failed.is_empty(), "{table}");
    // Back in service, it takes no phone back (no rebalancing), so no call either.
    let back = report.events[1]
        .calls
        .as_ref()
        .expect("calls at the return");
    assert!(!back.peak.contains_key("clan-1a"), "{table}");
    assert_eq!(back.cut, 0, "{table}");
    assert_eq!(planned.tally.routed.above_placed, 0, "{table}");
}

#[test]
fn a_callee_without_a_socket_yet_is_reached_on_a_connection_from_its_clan() {
    // 400 phones at once calling every second or so: many a call finds its callee
    // registered and still waiting for its socket (or being turned away busy).
    let text = "duration_s = 120\nseed = 3\n\
                [[group]]\ncount = 400\nregion = 1\ntts_share = 0.3\n\
                calls_per_hour = 3600\ncall_hold_s = 5\n";
    let scenario = Scenario::from_toml(text, "burst.toml", Path::new(".")).unwrap();
    let planned = plan::plan(&scenario, routed_lab(), "routed-lab", |_| {}).unwrap();
    let report = &planned.report;
    whole(report);
    let table = report.table();
    let calls = routed(report);
    // The gatekeeper opened connections to callees for their calls (Setup first, no
    // service frame); the phones took them as their sockets and answered.
    assert!(calls.call_connections > 0, "{table}");
    assert!(calls.setup_to_connect.max_ms > 20.0, "{table}");
    assert_eq!(calls.setup_to_connect.p50_ms, 4.0, "{table}");
    // Every Setup that reached the gatekeeper was answered (one was still on its way when
    // the plan ended).
    assert_eq!(calls.connected, calls.setups, "{table}");
    assert!(calls.placed - calls.setups <= 1, "{table}");
    assert!(calls.failed.is_empty(), "{table}");
    // Callers that called before their own socket was in service placed trunk calls.
    assert!(
        calls.placed_as_trunk_calls["no socket in service"] > 0,
        "{table}"
    );
    let checks = &planned.tally.routed;
    assert_eq!(
        (checks.below_answered, checks.above_placed),
        (0, 0),
        "{table}"
    );
}

/// Count mode lets two C-LANs share an IP (two RAS ports, so one signalling address); the
/// planner, which models sockets, gives the second a signalling port of its own. Ten C-LANs
/// of ten, the 9th and 10th on one IP: a hundred phones fill every one of them, and every
/// C-LAN is listed. (Before, the 10th took no phone and ten phones had no service.)
#[test]
fn every_clan_takes_its_phones_when_two_share_an_ip() {
    let mut lab = String::from(
        "[gatekeeper]\ndiscovery = \"127.0.0.1:1719\"\nseed = 1\n\
         [[region]]\nid = 1\nnetworks = [\"127.1.0.0/16\"]\n",
    );
    for n in 1..=10 {
        let address = match n {
            9 => "127.0.66.19:1719".to_string(),
            10 => "127.0.66.19:1729".to_string(),
            n => format!("127.0.66.{}:1719", 10 + n),
        };
        lab.push_str(&format!(
            "[[clan]]\nname = \"c{n}\"\nregion = 1\naddress = \"{address}\"\nmax_sockets = 10\n"
        ));
    }
    let config = config::from_toml(&lab, "shared-ip-lab.toml").expect("the lab reads");
    let scenario = Scenario::from_toml(
        "duration_s = 60\n[[group]]\ncount = 100\nregion = 1\n",
        "shared-ip.toml",
        Path::new("."),
    )
    .expect("the scenario reads");
    let report = plan::plan(&scenario, config, "lab", |_| {})
        .expect("the plan runs")
        .report;
    whole(&report);
    let names: Vec<&str> = report.clans.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), 10);
    for name in ["c9", "c10"] {
        assert_eq!(clan(&report, name).final_sockets, 10, "{}", report.table());
    }
}
