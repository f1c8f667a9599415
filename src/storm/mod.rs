//! `rasgk storm`: a registration storm of simulated phones against any gatekeeper.
//!
//! Each phone binds its own source address (on loopback `127.R.x.y` for region R, so the
//! gatekeeper's network map puts it in that region), sends GRQ to the discovery address,
//! RRQ to the C-LAN the GCF names, retransmits like a real endpoint, and keeps alive with
//! lightweight RRQ while the storm lasts ([`life`]). The report ([`report`]) gives the rate,
//! latency percentiles, rejects, retransmissions and the final load per C-LAN and region,
//! read from the admin port when there is one.

mod life;
pub mod report;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;

use crate::phone::Phone;
use life::{Life, Outcome, Plan};
use report::{Latency, LoadSample, Report};

/// `rasgk storm` options.
#[derive(Debug, Clone, clap::Args)]
pub struct StormArgs {
    /// The gatekeeper's discovery address (where GRQs go).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:1719")]
    pub target: SocketAddr,
    /// How many phones.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub phones: usize,
    /// Share of TTS phones, 0 to 1. TTS phones take extensions from --tts-from (50000, which
    /// the embedded default's `[[tts]] aliases = ["5*"]` makes TTS), the others from --from.
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    pub tts_share: f64,
    /// First extension of non-TTS phones.
    #[arg(long = "from", value_name = "EXT", default_value_t = 60_000)]
    pub extensions_from: u32,
    /// First extension of TTS phones.
    #[arg(long = "tts-from", value_name = "EXT", default_value_t = 50_000)]
    pub tts_extensions_from: u32,
    /// Regions the phones come from, round robin (phone addresses 127.R.x.y).
    #[arg(long, value_name = "R,R,…", value_delimiter = ',', default_value = "1")]
    pub regions: Vec<u8>,
    /// Arrivals per second; all at once when not given.
    #[arg(long, value_name = "PER_S")]
    pub rate: Option<f64>,
    /// Simulated loss of each datagram, each way, 0 to 1.
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    pub loss: f64,
    /// Seed of the loss and of nothing else (the phones' order is fixed).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// RAS timer: send a request again after this many milliseconds of silence (doubling on
    /// each retry, at most 8 s).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub timeout_ms: u64,
    /// Send a request again at most this often before starting over with GRQ.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub retries: u32,
    /// Give up on phones still unregistered after this many seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    pub give_up_s: f64,
    /// Stay registered this many seconds after the last phone registered (keep-alives,
    /// re-registration after gatekeeper URQs).
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    pub duration: f64,
    /// Outbound calls each phone places once registered: ARQ at its C-LAN, then DRQ.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub calls: u32,
    /// Digits each call dials; the phone's extension is appended (e.g. 9 → 960001).
    #[arg(long, value_name = "DIGITS", default_value = "9")]
    pub dial: String,
    /// Milliseconds each call is held between ACF and DRQ.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub hold_ms: u64,
    /// Unregister every phone (URQ) at the end.
    #[arg(long)]
    pub unregister: bool,
    /// The gatekeeper's admin port, for the final load and the load over time; by default
    /// port 7000 of the target's IP, used when it answers.
    #[arg(long, value_name = "URL")]
    pub admin: Option<String>,
    /// Print the report as one JSON object on standard output (the table goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Also write report.json and load.svg (sockets per C-LAN over time) into DIR.
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
    /// Write every datagram the phones sent and received into a pcap.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
}

/// Why a storm could not run.
#[derive(Debug, thiserror::Error)]
pub enum StormError {
    /// An option is out of range.
    #[error("{0}")]
    Option(String),
    /// A phone's socket cannot be bound.
    #[error("cannot bind phone {index}'s address {address}: {source}{hint}")]
    Bind {
        /// Which phone.
        index: usize,
        /// Its address.
        address: SocketAddr,
        /// What the system said.
        source: std::io::Error,
        /// What to do about it.
        hint: &'static str,
    },
    /// A report file cannot be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// Which file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

impl StormArgs {
    fn check(&self) -> Result<(), StormError> {
        let bad = |text: String| Err(StormError::Option(text));
        if self.phones == 0 {
            return bad("--phones must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.tts_share) {
            return bad(format!(
                "--tts-share {} is not between 0 and 1",
                self.tts_share
            ));
        }
        if !(0.0..1.0).contains(&self.loss) {
            return bad(format!(
                "--loss {} is not between 0 and 1 (1 excluded)",
                self.loss
            ));
        }
        if self.regions.is_empty() || self.regions.contains(&0) {
            return bad("--regions must list regions 1 to 255 (phone addresses 127.R.x.y)".into());
        }
        if let Some(rate) = self.rate {
            if !(rate.is_finite() && rate > 0.0) {
                return bad(format!("--rate {rate} must be a number above 0"));
            }
        }
        let per_region = self.phones.div_ceil(self.regions.len());
        if per_region > 250 * 254 {
            return bad(format!(
                "{per_region} phones per region do not fit in 127.R.1.1 to 127.R.254.250"
            ));
        }
        if !(self.give_up_s.is_finite() && self.give_up_s > 0.0) {
            return bad("--give-up-s must be above 0".into());
        }
        if !(self.duration.is_finite() && self.duration >= 0.0) {
            return bad("--duration must be 0 or more".into());
        }
        if self.calls > 0
            && (self.dial.is_empty() || !self.dial.bytes().all(|b| b.is_ascii_digit()))
        {
            return bad(format!("--dial {:?} must be digits", self.dial));
        }
        if self.timeout_ms == 0 {
            return bad("--timeout-ms must be at least 1".into());
        }
        Ok(())
    }

    /// Phone `i`: its region's address block, TTS by share, its extension.
    fn phones(&self) -> Vec<(Phone, bool)> {
        let mut tts_count = 0u32;
        let mut other_count = 0u32;
        (0..self.phones)
            .map(|i| {
                let region = self.regions[i % self.regions.len()];
                let j = i / self.regions.len();
                let ip = Ipv4Addr::new(127, region, 1 + (j / 250) as u8, 1 + (j % 250) as u8);
                // Spread evenly: phone i is TTS when the share's running total crosses a
                // whole number at i.
                let tts =
                    ((i + 1) as f64 * self.tts_share).floor() > (i as f64 * self.tts_share).floor();
                let extension = if tts {
                    tts_count += 1;
                    self.tts_extensions_from + tts_count - 1
                } else {
                    other_count += 1;
                    self.extensions_from + other_count - 1
                };
                let phone = Phone::extension(extension, SocketAddr::new(IpAddr::V4(ip), 0));
                (phone, tts)
            })
            .collect()
    }
}

fn admin_of(args: &StormArgs) -> Option<SocketAddr> {
    match &args.admin {
        Some(text) => crate::status::admin_address(text).ok(),
        None => Some(SocketAddr::new(args.target.ip(), 7000)),
    }
}

/// Reads the load from the admin port, off the async threads (the reader blocks).
async fn load_now(admin: SocketAddr) -> Option<(BTreeMap<String, u64>, BTreeMap<String, u64>)> {
    let (clans, regions) = tokio::task::spawn_blocking(move || crate::status::fetch(admin))
        .await
        .ok()?
        .ok()?;
    let clans = clans
        .into_iter()
        .map(|c| (c.name, u64::from(c.sockets)))
        .collect();
    let regions = regions
        .into_iter()
        .map(|r| (r.id.to_string(), u64::from(r.sockets)))
        .collect();
    Some((clans, regions))
}

/// Calls placed since start per node, summed over trunks, from `/api/trunks`.
async fn trunk_totals(admin: SocketAddr) -> Option<BTreeMap<String, u64>> {
    let body = tokio::task::spawn_blocking(move || crate::status::get_json(admin, "/api/trunks"))
        .await
        .ok()?
        .ok()?;
    let trunks: Vec<crate::gatekeeper::TrunkView> = serde_json::from_str(&body).ok()?;
    let mut per_node = BTreeMap::new();
    for trunk in trunks {
        for node in trunk.per_node {
            *per_node.entry(node.node).or_insert(0) += node.total;
        }
    }
    Some(per_node)
}

/// Raises this process's open-file limit so every phone can have its socket: the soft limit
/// up to the hard one, and the hard one too where the system allows (root). Best effort: when
/// it fails, binding says so with a hint.
fn raise_file_limit(phones: usize) {
    #[cfg(unix)]
    {
        let want = (phones as libc::rlim_t).saturating_add(256);
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit only read and write the struct passed by pointer.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 || limit.rlim_cur >= want {
                return;
            }
            let raised = libc::rlimit {
                rlim_cur: want,
                rlim_max: limit.rlim_max.max(want),
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                let soft = libc::rlimit {
                    rlim_cur: limit.rlim_max,
                    rlim_max: limit.rlim_max,
                };
                libc::setrlimit(libc::RLIMIT_NOFILE, &soft);
            }
        }
    }
}

/// Runs a storm and reports.
pub async fn storm(args: &StormArgs) -> Result<Report, StormError> {
    args.check()?;
    raise_file_limit(args.phones);
    let specs = args.phones();
    let mut sockets = Vec::with_capacity(specs.len());
    for (index, (phone, _)) in specs.iter().enumerate() {
        let address = phone.ras_address;
        let socket = UdpSocket::bind(address).await.map_err(|source| {
            let hint = if source.raw_os_error() == Some(24) {
                " (too many open files: raise `ulimit -n`)"
            } else {
                ""
            };
            StormError::Bind {
                index,
                address,
                source,
                hint,
            }
        })?;
        sockets.push(socket);
    }
    let record = args
        .record
        .as_ref()
        .map(|_| Arc::new(Mutex::new(Vec::new())));
    let started = Instant::now();
    let plan = Arc::new(Plan {
        target: args.target,
        timeout: Duration::from_millis(args.timeout_ms),
        retries: args.retries,
        loss: args.loss,
        give_up: started + Duration::from_secs_f64(args.give_up_s),
        unregister: args.unregister,
        record: record.clone(),
        calls: args.calls,
        dial: args.dial.clone(),
        hold: Duration::from_millis(args.hold_ms),
    });
    let admin = admin_of(args);
    let admin_answers = match admin {
        Some(admin) => load_now(admin).await.is_some(),
        None => false,
    };
    let samples = Arc::new(Mutex::new(Vec::<LoadSample>::new()));
    let sampler = match (admin, admin_answers) {
        (Some(admin), true) => {
            let samples = samples.clone();
            Some(tokio::spawn(async move {
                loop {
                    if let Some((clans, _)) = load_now(admin).await {
                        let t = started.elapsed().as_secs_f64();
                        if let Ok(mut samples) = samples.lock() {
                            samples.push(LoadSample { t, clans });
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }))
        }
        _ => None,
    };

    let progress = indicatif::ProgressBar::new(specs.len() as u64);
    progress.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {elapsed_precise} [{bar:40}] {pos}/{len} phones registered {per_sec}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("█▉ "),
    );
    let (end_tx, end_rx) = tokio::sync::watch::channel(None);
    let (registered_tx, mut registered_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = tokio::task::JoinSet::new();
    for (index, ((mut phone, tts), socket)) in specs.into_iter().zip(sockets).enumerate() {
        let plan = plan.clone();
        let end = end_rx.clone();
        let registered = registered_tx.clone();
        let arrival = args
            .rate
            .map(|rate| Duration::from_secs_f64(index as f64 / rate))
            .unwrap_or_default();
        let seed = args.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        tasks.spawn(async move {
            tokio::time::sleep(arrival).await;
            phone.ras_address = socket.local_addr().unwrap_or(phone.ras_address);
            let outcome = Life::new(phone, socket, seed, &plan)
                .live(end, registered)
                .await;
            (index, tts, outcome)
        });
    }
    drop(registered_tx);
    let mut heard = 0;
    while heard < args.phones {
        match registered_rx.recv().await {
            Some(ok) => {
                heard += 1;
                if ok {
                    progress.inc(1);
                }
            }
            None => break,
        }
    }
    tokio::time::sleep(Duration::from_secs_f64(args.duration)).await;
    let final_load = match (admin, admin_answers) {
        (Some(admin), true) => load_now(admin).await,
        _ => None,
    };
    progress.finish_and_clear();
    let _ = end_tx.send(Some(Instant::now()));
    let mut outcomes: Vec<(usize, bool, Outcome)> = Vec::with_capacity(args.phones);
    while let Some(joined) = tasks.join_next().await {
        if let Ok(outcome) = joined {
            outcomes.push(outcome);
        }
    }
    if let Some(sampler) = sampler {
        sampler.abort();
    }
    outcomes.sort_by_key(|(index, ..)| *index);

    let mut histogram = hdrhistogram::Histogram::<u64>::new(3).expect("3 significant digits");
    let mut rejected = BTreeMap::new();
    let mut registered_at = BTreeMap::new();
    let mut phone_clans = BTreeMap::new();
    let mut last = started;
    for (_, tts, outcome) in &outcomes {
        if let Some(latency) = outcome.latency {
            let _ = histogram.record(u64::try_from(latency.as_micros()).unwrap_or(u64::MAX));
        }
        if let Some(at) = outcome.registered_at {
            last = last.max(at);
        }
        for reject in &outcome.rejects {
            *rejected.entry(reject.clone()).or_insert(0) += 1;
        }
        if let (true, Some(clan)) = (outcome.registered, outcome.clan) {
            *registered_at.entry(clan.to_string()).or_insert(0) += 1;
            if !tts {
                *phone_clans.entry(clan.to_string()).or_insert(0) += 1;
            }
        }
    }
    let mut calls_per_node = BTreeMap::new();
    for (_, _, outcome) in &outcomes {
        for dest in &outcome.calls {
            *calls_per_node.entry(dest.to_string()).or_insert(0) += 1;
        }
    }
    let trunk_nodes = match (admin, admin_answers, args.calls > 0) {
        (Some(admin), true, true) => trunk_totals(admin).await,
        _ => None,
    };
    let registered = outcomes.iter().filter(|(_, _, o)| o.registered).count();
    let registration_s = last.duration_since(started).as_secs_f64();
    let (clans, regions, clans_source) = match final_load {
        Some((clans, regions)) => (clans, regions, "admin"),
        None => (phone_clans, BTreeMap::new(), "phones"),
    };
    let report = Report {
        phones: args.phones,
        registered,
        unregistered_never: args.phones - registered,
        rejected,
        retransmissions: outcomes.iter().map(|(_, _, o)| o.retransmissions).sum(),
        dropped: outcomes.iter().map(|(_, _, o)| o.dropped).sum(),
        gatekeeper_urqs: outcomes.iter().map(|(_, _, o)| o.urqs).sum(),
        unregistered: outcomes.iter().filter(|(_, _, o)| o.unregistered).count(),
        registration_s,
        rate_per_s: if registration_s > 0.0 {
            registered as f64 / registration_s
        } else {
            0.0
        },
        latency_ms: Latency::of(&histogram),
        clans,
        clans_source,
        regions,
        registered_at,
        load: samples.lock().map(|s| s.clone()).unwrap_or_default(),
        calls: outcomes.iter().map(|(_, _, o)| o.calls.len() as u64).sum(),
        calls_refused: outcomes.iter().map(|(_, _, o)| o.calls_refused).sum(),
        calls_per_node,
        trunk_calls_per_node: trunk_nodes.unwrap_or_default(),
        seed: args.seed,
        loss: args.loss,
    };
    if let (Some(path), Some(record)) = (&args.record, record) {
        let mut datagrams = record.lock().map(|r| r.clone()).unwrap_or_default();
        datagrams.sort_by_key(|d| d.time);
        crate::pcap::write_file(path, &datagrams).map_err(|source| StormError::Write {
            path: path.clone(),
            source,
        })?;
    }
    if let Some(dir) = &args.report_dir {
        let write = |name: &str, text: String| {
            let path = dir.join(name);
            std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::write(&path, text))
                .map_err(|source| StormError::Write { path, source })
        };
        write(
            "report.json",
            serde_json::to_string_pretty(&report).unwrap_or_default(),
        )?;
        write("load.svg", report.svg())?;
    }
    Ok(report)
}

/// `rasgk storm`: runs, prints the table (or JSON), exit 0 when every phone registered, 1
/// when some did not, 2 when the storm could not run.
pub fn run(args: StormArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("rasgk storm: cannot start the runtime: {error}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(storm(&args)) {
        Ok(report) => {
            if args.json {
                eprint!("{}", report.table());
                println!("{}", serde_json::to_string(&report).unwrap_or_default());
            } else {
                print!("{}", report.table());
            }
            if report.registered == report.phones {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(error) => {
            eprintln!("rasgk storm: {error}");
            ExitCode::from(2)
        }
    }
}
