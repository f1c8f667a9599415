//! `rasgk replay`: the RAS requests of a capture sent again to a gatekeeper, each reply
//! compared with the one in the capture.
//!
//! ```text
//!  capture ──plan──▶ requests + captured replies ──session──▶ rewritten requests
//!                                                     │
//!                        udp::replay (sockets) ◀──────┴──────▶ in_process::replay (core,
//!                                                                virtual time)
//!                                                     │
//!                               outcome::compare ──▶ report (table or JSON)
//! ```
//!
//! - [`plan`]: which datagrams are phones' requests, and the reply each got in the capture.
//! - [`session`]: where each request goes, the identifiers rewritten, what came back.
//! - [`outcome`]: what of a reply is compared (type, reason, GCF `rasAddress`, AGL length).
//! - [`udp`]: the replay over loopback UDP against a running gatekeeper.
//! - [`in_process`]: the replay into a [`Gatekeeper`] in virtual time, deterministic.
//! - [`report`]: counts and the table of differences.

pub mod in_process;
pub mod outcome;
pub mod plan;
pub mod report;
pub mod session;
pub mod udp;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::config;
use crate::gatekeeper::Gatekeeper;
use crate::pcap;

pub use outcome::{Difference, ReplySummary};
pub use plan::{plan, Plan, PlannedRequest};
pub use report::Report;

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The capture could not be read.
    #[error("{file}: {source}")]
    Capture {
        /// The capture file.
        file: String,
        /// What is wrong with it.
        #[source]
        source: pcap::PcapError,
    },
    /// The configuration could not be read.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// The core refused the configuration.
    #[error("{origin}: {error}")]
    Start {
        /// The configuration's file name.
        origin: String,
        /// What the core said.
        error: crate::gatekeeper::StartError,
    },
    /// `--out-of-service` names no C-LAN of the configuration.
    #[error("--out-of-service {name}: {origin} has no C-LAN of that name (C-LANs: {known})")]
    UnknownClan {
        /// The name given.
        name: String,
        /// The configuration's file name.
        origin: String,
        /// The names it has.
        known: String,
    },
    /// The options do not go together.
    #[error("{0}")]
    Usage(String),
    /// A UDP replay only sends to loopback.
    #[error(
        "--target {0}: replay binds its phones on loopback (127.0.0.0/8), so the target must \
         be a loopback address too"
    )]
    TargetNotLoopback(SocketAddr),
    /// A phone's socket could not be bound.
    #[error("cannot bind {address} for captured phone {phone}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The captured phone source.
        phone: SocketAddr,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A request could not be sent.
    #[error("cannot send to {to}: {source}")]
    Send {
        /// The destination.
        to: SocketAddr,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// Nothing answered at all.
    #[error(
        "no reply from the gatekeeper at {target} to any of {requests} requests ({refused} \
         refused by the kernel as port unreachable): is a gatekeeper running there?"
    )]
    Unreachable {
        /// The target.
        target: SocketAddr,
        /// Requests sent.
        requests: usize,
        /// ICMP port-unreachable reports seen.
        refused: usize,
    },
}

/// The examples of `rasgk replay --help`, kept as lines.
const EXAMPLES: &str = "\
Examples:
  # a fresh gatekeeper must answer the fixture exactly as recorded
  rasgk serve --config fixtures/replay/lab.toml &
  rasgk replay fixtures/replay/storm-20.pcap --target 127.0.20.1:1719 --strict

  # at the captured pace, giving up on a request sooner
  rasgk replay capture.pcap --target 127.0.0.1:1719 --pace --timeout-ms 500 --retries 1

  # in-process, in virtual time: no sockets, the same report every run
  rasgk replay fixtures/replay/storm-20.pcap --config fixtures/replay/lab.toml

  # what changes when C-LAN r3-b is out of service
  rasgk replay fixtures/replay/storm-20.pcap --config fixtures/replay/lab.toml \\
      --out-of-service r3-b --json | jq '.differences[] | [.frame, .differences]'";

/// `rasgk replay`'s options.
#[derive(Debug, Clone, clap::Args)]
#[command(after_long_help = EXAMPLES)]
pub struct ReplayArgs {
    /// The capture (pcap or pcapng) whose phones' RAS requests are replayed.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The gatekeeper's discovery address: requests the capture sent to its discovery address
    /// go here; requests to other gatekeeper addresses (the C-LANs its GCFs named) go to those
    /// same addresses, or to the C-LAN the replayed GCF named instead. Loopback only.
    #[arg(
        long,
        value_name = "ADDR",
        required_unless_present_any = ["config", "in_process"],
        conflicts_with_all = ["config", "in_process"]
    )]
    pub target: Option<SocketAddr>,
    /// Keep the captured timing (UDP). Default: as fast as possible in capture order, each
    /// request once the previous one was answered or gave up.
    #[arg(long)]
    pub pace: bool,
    /// How long to wait for a reply before sending again (UDP), milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub timeout_ms: u64,
    /// How many times to send an unanswered request again (UDP).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub retries: u32,
    /// Exit with status 1 when any reply differs or a request went unanswered.
    #[arg(long)]
    pub strict: bool,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Replay in-process against the core running this configuration (implies --in-process).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Replay in-process against the core in virtual time (the embedded default configuration
    /// unless --config): the capture's timestamps drive the clock; the result is
    /// deterministic.
    #[arg(long)]
    pub in_process: bool,
    /// Take this C-LAN out of service before the replay (in-process only; repeatable).
    #[arg(long = "out-of-service", value_name = "CLAN")]
    pub out_of_service: Vec<String>,
}

/// A replay in-process: the report of `capture` replayed into a core on `config`, with the
/// C-LANs `out_of_service` taken out of service first.
pub fn in_process_report(
    file: &str,
    capture: &pcap::Capture,
    config: config::Config,
    origin: &str,
    out_of_service: &[String],
) -> Result<Report, ReplayError> {
    let mut gatekeeper = Gatekeeper::new(config).map_err(|error| ReplayError::Start {
        origin: origin.to_string(),
        error,
    })?;
    let start = Instant::now();
    for name in out_of_service {
        let clan = gatekeeper
            .clan_by_name(name)
            .map_err(|_| ReplayError::UnknownClan {
                name: name.clone(),
                origin: origin.to_string(),
                known: gatekeeper
                    .config()
                    .clans
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let _ = gatekeeper.set_in_service(start, clan, false);
    }
    let plan = plan::plan(capture);
    let (session, core) = in_process::replay(&plan, &mut gatekeeper, start);
    let mut against = format!("in-process {origin}");
    if !out_of_service.is_empty() {
        against.push_str(&format!(" (out of service: {})", out_of_service.join(", ")));
    }
    let traffic = report::Traffic {
        gatekeeper_requests: core.unsolicited,
        ..report::Traffic::default()
    };
    Ok(Report::new(file.to_string(), against, &session, traffic))
}

/// A replay over UDP: the report of `capture` replayed to a gatekeeper at `options.target`.
pub fn udp_report(
    file: &str,
    capture: &pcap::Capture,
    options: &udp::UdpOptions,
) -> Result<Report, ReplayError> {
    let plan = plan::plan(capture);
    let (session, wire) = udp::replay(&plan, options)?;
    let traffic = report::Traffic {
        retransmissions: wire.retransmissions,
        gatekeeper_requests: wire.gatekeeper_requests,
        late_replies: wire.late_replies,
        undecodable_replies: wire.undecodable_replies,
        ..report::Traffic::default()
    };
    let against = format!("udp {}", options.target);
    Ok(Report::new(file.to_string(), against, &session, traffic))
}

/// The report `args` ask for.
pub fn report(args: &ReplayArgs) -> Result<Report, ReplayError> {
    let in_process = args.in_process || args.config.is_some();
    if !in_process && !args.out_of_service.is_empty() {
        return Err(ReplayError::Usage(
            "--out-of-service needs --in-process or --config: over UDP, take the C-LAN out of \
             service on the gatekeeper itself (admin port or `in_service = false`)"
                .into(),
        ));
    }
    if args.timeout_ms == 0 {
        return Err(ReplayError::Usage("--timeout-ms must be at least 1".into()));
    }
    let file = args.file.display().to_string();
    let capture = pcap::read_file(&args.file).map_err(|source| ReplayError::Capture {
        file: file.clone(),
        source,
    })?;
    if in_process {
        let (config, origin) = match &args.config {
            Some(path) => (config::load(path)?, path.display().to_string()),
            None => (
                config::embedded_default(),
                "the embedded default configuration".to_string(),
            ),
        };
        return in_process_report(&file, &capture, config, &origin, &args.out_of_service);
    }
    let Some(target) = args.target else {
        return Err(ReplayError::Usage(
            "--target ADDR is needed (or --in-process / --config FILE)".into(),
        ));
    };
    let options = udp::UdpOptions {
        target,
        pace: args.pace,
        timeout: Duration::from_millis(args.timeout_ms),
        retries: args.retries,
    };
    udp_report(&file, &capture, &options)
}

/// `rasgk replay`: prints the report; exit status 0, 1 under `--strict` when anything
/// differs or went unanswered, 2 when the file or configuration cannot be read or the
/// gatekeeper cannot be reached.
pub fn run(args: ReplayArgs) -> ExitCode {
    let report = match report(&args) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("rasgk replay: {error}");
            return ExitCode::from(2);
        }
    };
    let text = if args.json {
        format!("{}\n", report.json())
    } else {
        report.text()
    };
    // A reader that went away (`| head`) is not an error of the replay.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
    if args.strict && report.has_differences() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
