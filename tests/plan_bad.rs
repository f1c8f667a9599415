//! `rasgk plan` refuses bad scenarios as `rasgk serve` refuses bad configurations: naming
//! the file, the field and the reason, before anything runs.
//!
//! Every file of `fixtures/plan/bad/` is a scenario with one mistake. Its first line,
//! `# expect: <text>`, gives text the error must contain; the error must also name the file.
//! A fixture whose second line is `# lab: <LAB.toml>` (or `# lab: default`, the embedded
//! default topology) is a mistake only against that lab: it must load, and be refused by
//! `rasgk::plan::check` (and by `rasgk::plan::plan`, which checks first) on that lab. Any
//! other fixture must be refused by `Scenario::load` itself.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use rasgk::config::{self, Config};
use rasgk::plan::{self, Scenario};
use support::fixtures::file_name;

/// The checks a scenario goes through, each with its fixture (some with several: NaN,
/// infinite and negative times are one check's refusals):
///
/// - TOML (4): syntax; an unknown key; a missing key; a value of the wrong type or range.
/// - The plan (9): `duration_s`, `loss`, `latency_ms`, `sample_s`, samples in all,
///   `timeout_ms`, `retries`, at least one group, phones in all.
/// - A group (25): `count` 0; an empty or a repeated `name`; `region` with `regions`; a
///   region with `network`; neither; a region 0 or no region; too many `regions`; a region's
///   block full; `network` without prefix, with a bad address, with a bad prefix; too small
///   for `count`; `tts_share`; `start_s`; `rate_per_s` with `over_s`; `rate_per_s` 0;
///   arrivals at `rate_per_s` or within `over_s` past the end (2); `over_s` itself;
///   `ttl_s` 0; `calls_per_hour`; `call_hold_s`; `dial`; extensions past the largest.
/// - The groups together (2): an address twice; an extension twice.
/// - An event (4): `at_s`; nothing to do; more than one thing; a cap of 0.
/// - Against the lab (6): a C-LAN not in the configuration in force; a reload that does
///   not load; a region the lab does not define; one its network map puts phones of
///   elsewhere; phones outside a strict network map; TTS phones the lab's `[[tts]]` rules
///   disagree with.
const CHECKS: usize = 4 + 9 + 25 + 2 + 4 + 6;

fn fixtures() -> PathBuf {
    support::fixtures::folder("plan/bad")
}

/// The bad scenarios, sorted (the labs of `fixtures/plan/bad/labs/` are not scenarios).
fn fixture_files() -> Vec<PathBuf> {
    support::fixtures::toml_files("plan/bad", "")
}

/// A fixture's header: the text its error must contain, and its lab if the mistake is one
/// against a lab.
struct Header {
    expect: String,
    lab: Option<String>,
}

fn header(path: &Path) -> Header {
    let name = file_name(path);
    let text = std::fs::read_to_string(path).expect("fixture is readable");
    let mut lines = text.lines();
    let expect = lines
        .next()
        .and_then(|line| line.strip_prefix("# expect: "))
        .unwrap_or_else(|| panic!("{name}: first line must be '# expect: <text>'"))
        .to_owned();
    let lab = lines
        .next()
        .and_then(|line| line.strip_prefix("# lab: "))
        .map(str::to_owned);
    Header { expect, lab }
}

/// The lab a fixture names, and the name the plan gives it (as `rasgk plan` does).
fn lab(lab: &str) -> (Config, String) {
    if lab == "default" {
        (
            config::embedded_default(),
            "the embedded default".to_string(),
        )
    } else {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(lab);
        let config = config::load(&path).unwrap_or_else(|e| panic!("the lab {lab}: {e}"));
        (config, lab.to_string())
    }
}

/// The scenario as the plan's command line names it, relative to the repository (as the
/// fixtures' expected texts do).
fn relative(path: &Path) -> PathBuf {
    Path::new("fixtures/plan/bad").join(file_name(path))
}

/// The error a fixture gets: from `Scenario::load`, or, for a mistake against a lab, from
/// `plan::check` and `plan::plan` on it (which must agree). `Err` says what went wrong
/// instead.
fn refusal(path: &Path, header: &Header) -> Result<String, String> {
    // Relative paths, as in the fixtures' texts: the tests run in the repository.
    let loaded = Scenario::load(&relative(path));
    match (&header.lab, loaded) {
        (None, Ok(_)) => Err("loaded".into()),
        (None, Err(e)) => Ok(e.to_string()),
        (Some(_), Err(e)) => Err(format!("refused at load, not against its lab: {e}")),
        (Some(name), Ok(scenario)) => {
            let (config, lab_name) = lab(name);
            let checked = plan::check(&scenario, &config, &lab_name)
                .err()
                .ok_or("passed plan::check on its lab")?
                .to_string();
            let planned = plan::plan(&scenario, config, &lab_name, |_| {})
                .err()
                .ok_or("plan::plan ran it")?
                .to_string();
            if planned != checked {
                return Err(format!(
                    "plan::plan said {planned:?}, plan::check {checked:?}"
                ));
            }
            Ok(checked)
        }
    }
}

#[test]
fn every_bad_scenario_is_refused_naming_file_field_and_reason() {
    let files = fixture_files();
    assert!(
        files.len() >= CHECKS,
        "{} bad scenarios for {CHECKS} checks",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let name = file_name(path);
        let header = header(path);
        match refusal(path, &header) {
            Err(what) => failures.push(format!("{name}: {what}; expected {:?}", header.expect)),
            Ok(shown) => {
                if !shown.contains(&header.expect) {
                    failures.push(format!(
                        "{name}: {shown:?} does not contain {:?}",
                        header.expect
                    ));
                }
                if !shown.starts_with(&format!("{}: ", relative(path).display())) {
                    failures.push(format!("{name}: {shown:?} does not start with the file"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bad_scenarios_each_test_a_different_error() {
    let mut expects: Vec<String> = fixture_files().iter().map(|p| header(p).expect).collect();
    let all = expects.len();
    expects.sort();
    expects.dedup();
    assert_eq!(
        expects.len(),
        all,
        "two bad scenarios expect the same error"
    );
}

#[test]
fn a_scenario_that_cannot_be_read_is_named() {
    let path = fixtures().join("no-such-scenario.toml");
    let error = Scenario::load(&path).expect_err("no such file").to_string();
    assert!(
        error.starts_with(&format!("{}: cannot read: ", path.display())),
        "{error}"
    );
}

#[test]
fn rasgk_plan_refuses_a_bad_scenario_on_stderr_without_a_panic() {
    for (args, file, field_and_reason) in [
        (
            &[][..],
            "fixtures/plan/bad/extensions-past-max.toml",
            "group[0].extensions_from: 10 extensions from 4294967290 run past 4294967295",
        ),
        (
            &["--config", "fixtures/plan/lab.toml"][..],
            "fixtures/plan/bad/cap-unknown-clan.toml",
            "event[0].cap.clan: no C-LAN is named \"clan-1z\" in fixtures/plan/lab.toml",
        ),
        // Region 4 is lab.toml's kiosk region, not one of agree.toml's.
        (
            &[
                "--config",
                "fixtures/plan/lab.toml",
                "--compare",
                "fixtures/plan/agree.toml",
            ][..],
            "fixtures/plan/bad/region-not-in-lab.toml",
            "group[0].region: region 4 is not defined in fixtures/plan/agree.toml (regions: 1, \
             2, 3)",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
            .arg("plan")
            .args(args)
            .arg(file)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("rasgk plan runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
        assert!(
            stderr.starts_with(&format!("rasgk plan: {file}: {field_and_reason}")),
            "{file}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{file}: {stderr}");
        assert!(out.stdout.is_empty(), "{file}: a report was printed");
    }
}
