//! `rasgk plan`: what-if planning in virtual time. A scenario (phones, how they arrive,
//! a timeline of C-LAN faults, cap changes, restarts and reloads) runs against the real
//! gatekeeper core with simulated phones that behave as the storm's do, with no sockets and
//! no clock, so that hours pass in seconds and the same inputs give the same report.
//!
//! - [`scenario`]: the scenario file; `lab`: what of it can only be checked against the
//!   lab's configuration, checked before the plan runs ([`check`]).
//! - [`world`]: the core, the network and the connections in virtual time; in it
//!   `world/phones.rs`, the simulated phones, and `world/calls.rs`, their routed calls through the
//!   relay (`call_signalling = "routed"`).
//! - [`tally`]: what is recorded while it runs.
//! - [`report`]: the report, as a table and as JSON.
//! - [`chart`] and [`page`]: sockets per C-LAN over time as SVG, and a self-contained HTML
//!   page; [`output`]: what `--report-dir` writes with them.

pub mod chart;
mod lab;
pub mod output;
pub mod page;
pub mod report;
pub mod scenario;
pub mod tally;
pub mod world;

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::{self, Config};
pub use report::Report;
pub use scenario::{Scenario, ScenarioError};
use tally::Tally;
pub use world::PlanError;

/// `rasgk plan` options.
#[derive(Debug, Clone, clap::Args)]
pub struct PlanArgs {
    /// The scenario: phones, arrivals, the timeline of events, duration and seed (TOML; the
    /// docs/planning.md and fixtures/plan/ show every key).
    #[arg(value_name = "SCENARIO.toml")]
    pub scenario: PathBuf,
    /// The lab's configuration, as `rasgk serve --config` takes it; the embedded default
    /// topology when left out.
    #[arg(long, value_name = "LAB.toml")]
    pub config: Option<PathBuf>,
    /// Plan the same scenario on a second configuration too, and show both side by side.
    #[arg(long, value_name = "OTHER.toml")]
    pub compare: Option<PathBuf>,
    /// Print the report as JSON on standard output (with --compare: {"a": …, "b": …}).
    #[arg(long)]
    pub json: bool,
    /// Write report.json, report.html (self-contained, charts of sockets per C-LAN over
    /// time with the events marked) and one SVG chart per configuration into DIR.
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
}

/// A plan that has run: its report and the traces behind its charts.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The report.
    pub report: Report,
    /// Everything recorded (sockets per C-LAN over time, events).
    pub tally: Tally,
}

/// Checks `scenario` against the lab `config` (named `name` in errors) without running it:
/// its phones are placed in the regions and made TTS as it says, its reloads load, and its
/// events name C-LANs of the configuration in force at their time. Errors name the
/// scenario's file and field, as [`Scenario::load`]'s do.
pub fn check(scenario: &Scenario, config: &Config, name: &str) -> Result<(), PlanError> {
    lab::against(scenario, config, name).map(|_| ())
}

/// Plans `scenario` on `config` (named `name` in the report and in errors), once it has
/// passed [`check`]; `progress` hears the virtual seconds reached about every virtual
/// minute.
pub fn plan(
    scenario: &Scenario,
    config: Config,
    name: &str,
    progress: impl FnMut(f64),
) -> Result<Planned, PlanError> {
    let reloads = lab::against(scenario, &config, name)?;
    let mut world = world::World::new(scenario, config, reloads)?;
    world.on_progress(progress);
    world.run();
    let report = Report::of(&world, name);
    Ok(Planned {
        report,
        tally: std::mem::take(&mut world.tally),
    })
}

/// A configuration file, or the embedded default; with the name the report gives it.
fn configuration(path: Option<&PathBuf>) -> Result<(Config, String), String> {
    match path {
        Some(path) => config::load(path)
            .map(|c| (c, path.display().to_string()))
            .map_err(|e| e.to_string()),
        None => Ok((
            config::embedded_default(),
            "the embedded default".to_string(),
        )),
    }
}

/// Runs `rasgk plan`: 0 when every phone that arrived is in service at the end, 1 when
/// some are not, 2 when the plan cannot run.
pub fn run(args: PlanArgs) -> ExitCode {
    match run_plans(&args) {
        Ok(all_served) => {
            if all_served {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(error) => {
            eprintln!("rasgk plan: {error}");
            ExitCode::from(2)
        }
    }
}

fn run_plans(args: &PlanArgs) -> Result<bool, String> {
    let scenario = Scenario::load(&args.scenario).map_err(|e| e.to_string())?;
    let mut configs = vec![configuration(args.config.as_ref())?];
    if let Some(other) = &args.compare {
        configs.push(configuration(Some(other))?);
    }
    // Every lab before any plan runs: a mistake against B is not found an hour into A.
    for (config, name) in &configs {
        check(&scenario, config, name).map_err(|e| e.to_string())?;
    }
    let started = std::time::Instant::now();
    let bar = progress_bar(scenario.duration_s, configs.len());
    let planned: Vec<Result<Planned, PlanError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = configs
            .into_iter()
            .map(|(config, name)| {
                let scenario = &scenario;
                let bar = bar.clone();
                scope.spawn(move || {
                    let mut last = 0.0;
                    plan(scenario, config, &name, |at| {
                        bar.inc((at - last) as u64);
                        last = at;
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a plan does not panic"))
            .collect()
    });
    bar.finish_and_clear();
    let planned: Vec<Planned> = planned
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let json = match planned.as_slice() {
        [one] => one.report.json(),
        [a, b] => format!("{{\"a\":{},\"b\":{}}}", a.report.json(), b.report.json()),
        _ => unreachable!("one or two configurations"),
    };
    let table = match planned.as_slice() {
        [one] => one.report.table(),
        [a, b] => format!("A: {}\nB: {}", a.report.table(), b.report.table()),
        _ => unreachable!("one or two configurations"),
    };
    if args.json {
        println!("{json}");
        eprint!("{table}");
    } else {
        print!("{table}");
    }
    eprintln!(
        "planned {} virtual seconds in {:.2} s of wall time",
        scenario.duration_s,
        started.elapsed().as_secs_f64()
    );
    if let Some(dir) = &args.report_dir {
        let written = output::write(dir, &json, &planned)
            .map_err(|e| format!("cannot write the report into {}: {e}", dir.display()))?;
        for path in written {
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(planned.iter().all(|p| p.report.without_service == 0))
}

/// The progress bar over virtual seconds (hidden when standard error is no terminal).
fn progress_bar(duration_s: f64, plans: usize) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new((duration_s * plans as f64) as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "planning {bar:40} {pos}/{len} virtual s ({elapsed})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}
