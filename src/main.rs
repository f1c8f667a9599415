//! The `rasgk` command: one binary, one subcommand per job.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory as _, Parser, Subcommand, ValueEnum};

use rasgk::{admin_client, config, inspect, pcap, replay, server, status as admin_status};

#[derive(Parser)]
#[command(
    name = "rasgk",
    version,
    about = "H.323 RAS gatekeeper emulator",
    long_about = "rasgk emulates an H.323 RAS gatekeeper: it spreads IP phones over C-LAN \
                  interfaces by Avaya Communication Manager's rules (GCF choice, AGL, TTS \
                  sockets) and places outbound trunk calls across cluster nodes by Cisco \
                  CUCM's route-local rule. The rules, with every assumption marked, are \
                  written down in docs/rules.md of its source."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gatekeeper: RAS on the discovery address and on every C-LAN, the admin port.
    ///
    /// Without --config it runs the embedded default topology on loopback (three regions,
    /// eight C-LANs on 127.0.1.x, discovery on 127.0.0.1:1719, admin on 127.0.0.1:7000);
    /// --print-default-config shows it, commented, as a starting point for your own file.
    /// Stops cleanly on Ctrl-C or SIGTERM. Logs go to standard error (in colour only when
    /// it is a terminal and NO_COLOR is unset); set the level with --log or RASGK_LOG
    /// (e.g. RASGK_LOG=rasgk=debug shows every datagram).
    ///
    /// Restarts: with --state FILE the registrations (so the C-LAN loads) and GCF
    /// reservations are written to FILE every --state-interval seconds and at a clean stop,
    /// atomically, and read back at start with the time to live they had left; a C-LAN or
    /// region no longer in the configuration drops what was on it, with a warning each. A
    /// missing FILE is a first start; an unreadable or damaged one stops rasgk (exit 2)
    /// unless --discard-bad-state, which starts empty and keeps the bad file as FILE.bad.
    ///
    /// Reload: SIGHUP (kill -HUP PID) reads --config FILE again without dropping
    /// registrations: new C-LANs get their sockets, changed caps and service states apply
    /// (admin changes the file did not touch stay), phones on a removed C-LAN get a URQ to
    /// register elsewhere. A bad file is refused with an error naming the file and field, and
    /// the running configuration stays. [admin] and multicast changes need a restart.
    ///
    /// Access: [gatekeeper] strict_network_map refuses phones outside the network map;
    /// [[password]] aliases must prove their password on every RRQ, URQ, ARQ, DRQ, BRQ and
    /// IRR (H.235.1 procedure I HMAC-SHA1-96, or the MD5 cryptoEPPwdHash);
    /// [admin] listen off loopback requires [admin] token.
    ///
    /// Examples:
    ///   rasgk serve
    ///   rasgk serve --print-default-config > lab.toml && rasgk serve --config lab.toml
    ///   rasgk serve --config lab.toml --state /var/lib/rasgk/state.json
    ///   curl -s 127.0.0.1:7000/api/clans
    #[command(verbatim_doc_comment)]
    Serve {
        /// The configuration file (TOML); without it, the embedded default.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Print the embedded default configuration and exit.
        #[arg(long, conflicts_with = "config")]
        print_default_config: bool,
        /// Log filter: error, warn, info, debug, trace, or a tracing directive.
        #[arg(long, value_name = "FILTER")]
        log: Option<String>,
        /// Keep registrations and reservations in FILE across restarts (JSON).
        #[arg(long, value_name = "FILE")]
        state: Option<PathBuf>,
        /// How often the state file is written, seconds (it is also written at a clean stop).
        #[arg(
            long,
            value_name = "SECONDS",
            default_value_t = 1.0,
            requires = "state"
        )]
        state_interval: f64,
        /// Start empty when the state file cannot be read (it is kept as FILE.bad) instead of
        /// refusing to start.
        #[arg(long, requires = "state")]
        discard_bad_state: bool,
    },
    /// Simulate a registration storm of N phones against a gatekeeper and report the load.
    ///
    /// The phones may use any gatekeeper, ours or another. Each binds 127.R.x.y (R from
    /// --regions, so the gatekeeper's network map puts it in region R; fd00:0:R::x:y with
    /// --ipv6, for which the host routes fd00::/16 to lo), sends GRQ to --target, RRQ to
    /// the C-LAN the GCF names, retransmits on timeout like a real endpoint (--timeout-ms,
    /// --retries, then starts over with GRQ), and with --duration keeps alive with
    /// lightweight RRQ and re-registers after a gatekeeper-sent URQ. The report:
    /// registrations per second, latency percentiles, rejects by reason, retransmissions,
    /// and the final sockets per C-LAN and region (from the admin port when it answers).
    /// Each phone holds an open file: more phones than one process may open run in several
    /// storm processes started at one instant and reported as one (--processes, by default
    /// as many as the limit requires). With --sockets the phones hold TCP signalling
    /// sockets at their C-LANs, and with --calls-per-s they call each other through a
    /// gatekeeper that routes calls. At its end — or at Ctrl-C, which ends it early — every
    /// registered phone unregisters (URQ), so the gatekeeper holds nothing of the storm
    /// afterwards; --leave-registered keeps them, to watch their TTLs run out. A phone
    /// refused for good (RRJ duplicateAlias: its extension held from another address;
    /// securityDenial, …) stops at once, and the report says who holds the alias and what
    /// to do. Exit status 0 when every phone registered (and every routed call connected),
    /// 1 when some did not, 2 when the storm could not run.
    ///
    /// Examples:
    ///   rasgk storm --phones 1000 --tts-share 0.5
    ///   rasgk storm --phones 5000 --regions 1,2,3 --loss 0.1 --seed 7 --json | jq .clans
    ///   rasgk storm --target 127.0.9.1:1719 --admin 127.0.9.1:7000 --report-dir out/
    ///   rasgk storm --phones 40000 --tts-share 0.5 --tts-from 500000 --from 600000
    ///   rasgk serve --config fixtures/lab/routed.toml &   # socket mode, routed calls
    ///   rasgk storm --sockets --target 127.0.47.1:1719 --admin 127.0.47.1:7000 \
    ///       --phones 2000 --tts-share 0.5 --regions 1,2,3 \
    ///       --calls-per-s 100 --call-s 3 --call-total 1000
    ///   ip -6 route add local fd00::/16 dev lo            # IPv6 phones (as root)
    ///   rasgk storm --ipv6 --target '[fd00::60:1]:1719' --admin '[fd00::60:1]:7000' \
    ///       --sockets --phones 2000 --tts-share 0.5 --regions 3,4,5
    #[command(verbatim_doc_comment)]
    Storm(Box<rasgk::storm::StormArgs>),
    /// Examine an endpoint: does it behave as an Avaya network expects?
    ///
    /// Runs a gatekeeper of its own (`rasgk serve` on --config or the embedded default, with
    /// the drill's short time to live and its admin port at --admin), waits for the
    /// endpoints named by --endpoint to register (--wait-s), then runs the drill's checks on
    /// each, on its own timeline: discovery, what the RRQ declares, keep-alives within the
    /// time to live, a withheld answer retransmitted with the same requestSeqNum, a
    /// gatekeeper URQ and IRQ answered, an RRJ's alternate followed, a gatekeeper restart,
    /// its home region and then its C-LAN taken out (the AGL walked, in order), its
    /// signalling socket, and with --password its tokens. Each verdict is shown as it comes;
    /// the report says of each check what was expected, where that comes from (H.225.0 or
    /// docs/rules.md), what the endpoint did and the messages that show it. A check that
    /// cannot run is skipped with the reason. Ctrl-C ends the exam and writes the report of
    /// what ran. Exit status 0 when every check passed or was skipped, 1 when any failed, 2
    /// when the exam could not run (no endpoint registered, a bad option or drill).
    ///
    /// Examples:
    ///   rasgk exam --endpoint 5001                       # then point the phone at 127.0.0.1:1719
    ///   rasgk exam --simulate 1 --misbehave ignores-urq  # a simulated phone fails urq
    ///   rasgk exam --endpoint '5*' --sockets tcp --json exam.json --junit exam.xml
    ///   rasgk exam --list
    ///   rasgk exam --print-default-drill > drill.toml; rasgk exam --drill drill.toml --endpoint 5001
    #[command(verbatim_doc_comment)]
    Exam(Box<rasgk::exam::command::ExamArgs>),
    /// Plan in virtual time what phones, C-LAN faults and changes would do, before doing it.
    ///
    /// Runs the real gatekeeper core on LAB.toml (the embedded default topology without
    /// --config) with simulated phones that behave as the storm's do (RAS timers,
    /// retransmissions, keep-alives, re-registration through the AGL after a gatekeeper URQ,
    /// an RRJ's altGKInfo followed, non-TTS phones connecting and retrying when turned away
    /// busy, TTS phones set up by the gatekeeper), in virtual time and without sockets:
    /// hours pass in seconds, and the same inputs give the same report, octet for octet.
    /// Signalling sockets are planned as socket mode runs them (sockets = "tcp", at most
    /// max_setups_per_clan establishments at once per C-LAN, each setup_ms long), whatever
    /// the file's mode, so that the time to service is predicted too; the loads are those of
    /// count mode.
    ///
    /// The scenario (TOML) gives duration_s and seed, the phones as [[group]]s (count,
    /// region or network, tts_share, rate_per_s or over_s, start_s, ttl_s, calls_per_hour)
    /// and a timeline of [[event]]s at at_s: out_of_service = "C-LAN", in_service = "C-LAN",
    /// cap = { clan = "C-LAN", max_sockets = N }, restart = true, reload = "OTHER.toml".
    ///
    /// The report: per C-LAN peak, final and time-averaged sockets; per region the phones
    /// spilled to and taken from other regions; rejects by message and reason; per event the
    /// phones that lost service and the time until 50 %, 99 % and all were back; the
    /// imbalance within each region's priority classes; times to service. Exit status 0 when
    /// every phone that arrived is in service at the end, 1 when some are not, 2 when the
    /// plan cannot run.
    ///
    /// Examples:
    ///   rasgk plan fixtures/plan/morning.toml
    ///   rasgk plan --config lab.toml fixtures/plan/clan-failure.toml --json | jq .events
    ///   rasgk plan fixtures/plan/clan-failure.toml --compare lab-with-new-clan.toml
    ///   rasgk plan fixtures/plan/restart.toml --report-dir out/   # out/report.html
    #[command(verbatim_doc_comment)]
    Plan(rasgk::plan::PlanArgs),
    /// Measure every performance figure in one run, each beside its target.
    ///
    /// Echo ceiling: a minimal UDP echo responder (same runtime, socket options and batched
    /// reads and sends) and an in-process rasgk on loopback (127.0.60.x, 127.0.61.1) face the
    /// same closed-loop load client for GRQ, full RRQ and lightweight RRQ, in alternating
    /// slices; the ratio rasgk / echo is the median of the slices' pairs. Storm: --storm-phones phones (half TTS,
    /// three regions) against a gatekeeper of fixtures/lab/storm-40k.toml (127.0.70.x), as
    /// `rasgk storm` runs them, then the gatekeeper's registrations read back: none lost,
    /// none doubled. Memory: resident bytes per registration. Policy: core time per GRQ at
    /// 64, 1,024 and 10,000 C-LANs. Ends with one `ratio WORKLOAD VALUE` line per workload.
    /// About a minute; build with --release. Exit status 0 (with --check: 1 when a target is
    /// not met), 2 when the bench cannot run.
    ///
    /// Examples:
    ///   cargo run --release -- bench
    ///   rasgk bench --check
    ///   rasgk bench --storm-phones 0 --registrations 0 --grqs 0 | grep '^ratio'
    ///   rasgk bench --concurrency 256 --seconds 8
    #[command(verbatim_doc_comment)]
    Bench(rasgk::bench::BenchArgs),
    /// Show the socket load of a running gatekeeper as a table.
    ///
    /// Per region its totals and spill, per C-LAN its sockets, reservations and cap as a
    /// bar, read from /api/clans and /api/regions of the admin port. Exit status 0, or 2 when the
    /// admin port cannot be reached.
    ///
    /// Examples:
    ///   rasgk status
    ///   rasgk status --admin 127.0.9.1:7000 --watch 1
    #[command(verbatim_doc_comment)]
    Status {
        /// The admin port (host:port or http://host:port).
        #[arg(long, value_name = "URL", default_value = "127.0.0.1:7000")]
        admin: String,
        /// Refresh every SECONDS until interrupted.
        #[arg(long, value_name = "SECONDS")]
        watch: Option<f64>,
    },
    /// Check a configuration file and summarise it; exit status 0 when it is good, 2 when not.
    ///
    /// Every problem is reported with the file, the field and the reason, e.g.
    /// `lab.toml: clan[2].region: region 9 is not defined`.
    #[command(verbatim_doc_comment)]
    CheckConfig {
        /// The configuration file (TOML).
        file: PathBuf,
    },
    /// Print the RAS messages of a capture (pcap or pcapng), one line or one JSON object each.
    ///
    /// UDP datagrams to or from port 1718 or 1719 (and any --port) are taken as RAS; other
    /// packets are skipped and counted on standard error. A RAS datagram that does not decode
    /// is printed with the reason. Exit status 0 when every RAS datagram decoded, 1 when some
    /// did not, 2 when the file cannot be read.
    ///
    /// Examples:
    ///   rasgk decode capture.pcap
    ///   rasgk decode --json capture.pcapng | jq 'select(.type == "RCF") | .seq'
    #[command(verbatim_doc_comment)]
    Decode {
        /// The capture file.
        file: PathBuf,
        /// One JSON object per message (frame, time, src, dst, type, seq, message), with the
        /// whole message in the ASN.1 JSON encoding rules (X.697).
        #[arg(long)]
        json: bool,
        /// Also take UDP datagrams on this port as RAS (repeatable).
        #[arg(long = "port", value_name = "PORT")]
        ports: Vec<u16>,
    },
    /// Send the RAS requests of a capture to a gatekeeper and compare each reply with the
    /// captured one.
    ///
    /// The phones' requests (GRQ, RRQ, URQ, ARQ, …) are sent again in capture order, each
    /// phone from its own loopback socket; gatekeeper-sent requests and the phones' answers to
    /// them are not. Replies are matched by requestSeqNum and compared on type, reject reason,
    /// the GCF's rasAddress and the RCF's AGL length. endpointIdentifier and
    /// gatekeeperIdentifier are rewritten to the ones the replayed gatekeeper gave, and a
    /// phone follows the C-LAN its replayed GCF names. Prints the counts and a table of the
    /// requests that differ.
    ///
    /// With --in-process (or --config FILE) the capture is replayed into the gatekeeper core
    /// itself, in virtual time driven by the capture's timestamps: no sockets, same answer
    /// every run, and --out-of-service CLAN can take C-LANs out of service first.
    ///
    /// Exit status: 0; 1 under --strict when any reply differs or a request went unanswered;
    /// 2 when the capture or configuration cannot be read or the target does not answer.
    Replay(replay::ReplayArgs),
    /// Print the shell completion script for bash, zsh or fish to standard output.
    ///
    /// The script completes subcommands, options and their values; it is written from the
    /// same definitions as --help, so it matches this rasgk. Install it where your shell
    /// looks for completions (mkdir -p the folder first), then open a new shell:
    ///
    ///   rasgk completions bash > ~/.local/share/bash-completion/completions/rasgk
    ///   rasgk completions zsh > ~/.zfunc/_rasgk     # with fpath+=(~/.zfunc) before compinit
    ///   rasgk completions fish > ~/.config/fish/completions/rasgk.fish
    ///
    /// To try it in the running bash only: source <(rasgk completions bash)
    #[command(verbatim_doc_comment)]
    Completions {
        /// The shell to write the script for.
        shell: CompletionShell,
    },
    /// Print the manual page rasgk(1), in roff, to standard output.
    ///
    /// The page is written from the same definitions as --help: rasgk's options, then a
    /// section for every subcommand with its synopsis, description and options. Read it at
    /// once, or install it:
    ///
    ///   man -l <(rasgk man)
    ///   rasgk man > /usr/local/share/man/man1/rasgk.1    # as root; then: man rasgk
    ///   rasgk man > ~/.local/share/man/man1/rasgk.1      # without root (mkdir -p it first)
    #[command(verbatim_doc_comment)]
    Man,
}

/// The shells `rasgk completions` writes a script for.
#[derive(Clone, Copy, ValueEnum)]
enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    rasgk::allocator::keep_large_blocks_mapped();
    match cli.command {
        Command::Serve {
            config,
            print_default_config,
            log,
            state,
            state_interval,
            discard_bad_state,
        } => {
            if print_default_config {
                print!("{}", config::DEFAULT_TOML);
                return ExitCode::SUCCESS;
            }
            let state = match state {
                Some(path) => {
                    if !(state_interval.is_finite() && state_interval > 0.0) {
                        eprintln!(
                            "rasgk serve: --state-interval {state_interval} must be a number \
                             of seconds above 0"
                        );
                        return ExitCode::from(2);
                    }
                    Some(StateOptions {
                        file: server::StateFile {
                            path,
                            interval: std::time::Duration::from_secs_f64(state_interval),
                        },
                        discard_bad: discard_bad_state,
                    })
                }
                None => None,
            };
            serve(config.as_deref(), log.as_deref(), state)
        }
        Command::CheckConfig { file } => check_config(&file),
        Command::Status { admin, watch } => status(&admin, watch),
        Command::Storm(args) => rasgk::storm::run(*args),
        Command::Exam(args) => rasgk::exam::command::run(*args),
        Command::Plan(args) => rasgk::plan::run(args),
        Command::Bench(args) => rasgk::bench::run(args),
        Command::Decode { file, json, ports } => decode(&file, json, &ports),
        Command::Replay(args) => replay::run(args),
        Command::Completions { shell } => completions(shell),
        Command::Man => man_page(),
    }
}

/// `rasgk completions SHELL`: the completion script on standard output.
fn completions(shell: CompletionShell) -> ExitCode {
    let shell = match shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "rasgk", &mut script);
    write_stdout("rasgk completions", &script)
}

/// `rasgk man`: the manual page, in roff, on standard output.
fn man_page() -> ExitCode {
    match roff_page() {
        Ok(page) => write_stdout("rasgk man", &page),
        Err(error) => {
            eprintln!("rasgk man: cannot write the page: {error}");
            ExitCode::from(2)
        }
    }
}

/// One page, rasgk(1): the command's name, synopsis, description and options, then a
/// section for each subcommand with its own synopsis, description and options (as
/// subsections), so that the page alone says all that `--help` says.
fn roff_page() -> std::io::Result<Vec<u8>> {
    let mut command = Cli::command();
    command.build(); // gives each subcommand its full name, `rasgk serve`, for its synopsis
    let man = clap_mangen::Man::new(command.clone());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    man.render_options_section(&mut page)?;
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        let name = sub.get_bin_name().unwrap_or(sub.get_name());
        writeln!(page, ".SH \"{}\"", name.to_uppercase())?;
        let man = clap_mangen::Man::new(sub.clone());
        let mut sections = Vec::new();
        man.render_synopsis_section(&mut sections)?;
        man.render_description_section(&mut sections)?;
        man.render_options_section(&mut sections)?;
        // The subcommand's sections become subsections of its own.
        for line in String::from_utf8_lossy(&sections).lines() {
            match line.strip_prefix(".SH ") {
                Some(heading) => writeln!(page, ".SS {heading}")?,
                None => writeln!(page, "{line}")?,
            }
        }
    }
    man.render_version_section(&mut page)?;
    Ok(page)
}

/// Writes all of `octets` to standard output; a reader that went away (`| head`) is no
/// error, any other failure is said under `what`.
fn write_stdout(what: &str, octets: &[u8]) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(octets).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{what}: cannot write to standard output: {error}");
            ExitCode::from(2)
        }
    }
}

fn decode(file: &std::path::Path, json: bool, ports: &[u16]) -> ExitCode {
    let capture = match pcap::read_file(file) {
        Ok(capture) => capture,
        Err(error) => {
            eprintln!("rasgk decode: {}: {error}", file.display());
            return ExitCode::from(2);
        }
    };
    let report = inspect::entries(&capture, ports);
    let start = report.entries.first().map(|e| e.time).unwrap_or_default();
    let mut out = std::io::stdout().lock();
    for entry in &report.entries {
        let text = if json {
            inspect::json(entry).to_string()
        } else {
            inspect::line(entry, start)
        };
        if writeln!(out, "{text}").is_err() {
            return ExitCode::SUCCESS; // reader went away (e.g. `| head`)
        }
    }
    let undecodable = report.undecodable();
    eprintln!(
        "{}: {} RAS messages, {} undecodable, {} other packets skipped",
        file.display(),
        report.entries.len() - undecodable,
        undecodable,
        report.skipped
    );
    if undecodable > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn init_logging(filter: Option<&str>) {
    let filter = filter
        .map(str::to_string)
        .or_else(|| std::env::var("RASGK_LOG").ok())
        .unwrap_or_else(|| "info".to_string());
    let filter = tracing_subscriber::EnvFilter::try_new(&filter).unwrap_or_else(|error| {
        eprintln!("rasgk: log filter {filter:?} is not valid ({error}); using info");
        tracing_subscriber::EnvFilter::new("info")
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour_on_stderr())
        .init();
}

/// Whether what goes to standard error may be in colour: only on a terminal (a log file
/// gets no escape codes), and never with `NO_COLOR` set to anything but "" (no-color.org).
fn colour_on_stderr() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    std::io::stderr().is_terminal() && !no_color
}

/// `--state` and what to do with a bad state file.
struct StateOptions {
    file: server::StateFile,
    discard_bad: bool,
}

/// The state file's contents at start: `Err` stops rasgk (after saying why).
fn read_state(options: &StateOptions) -> Result<Option<rasgk::gatekeeper::state::State>, ()> {
    let path = &options.file.path;
    match server::state_file::read(path) {
        Ok(Some(state)) => Ok(Some(state)),
        Ok(None) => {
            tracing::info!(path = %path.display(), "no state file yet: starting empty");
            Ok(None)
        }
        Err(error) if options.discard_bad => {
            let mut bad = path.as_os_str().to_owned();
            bad.push(".bad");
            let kept = std::fs::rename(path, &bad).is_ok();
            tracing::warn!(
                %error,
                kept_as = %std::path::Path::new(&bad).display(),
                kept,
                "--discard-bad-state: starting empty"
            );
            Ok(None)
        }
        Err(error) => {
            eprintln!(
                "rasgk serve: {error}\n(start with --discard-bad-state to start empty and \
                 keep the file as .bad)"
            );
            Err(())
        }
    }
}

fn serve(
    file: Option<&std::path::Path>,
    log: Option<&str>,
    state: Option<StateOptions>,
) -> ExitCode {
    let config = match file {
        Some(file) => match config::load(file) {
            Ok(config) => config,
            Err(error) => {
                eprintln!("rasgk serve: {error}");
                return ExitCode::from(2);
            }
        },
        None => config::embedded_default(),
    };
    init_logging(log);
    let saved = match state.as_ref().map(read_state).transpose() {
        Ok(saved) => saved.flatten(),
        Err(()) => return ExitCode::from(2),
    };
    let runtime = match server::runtime() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("rasgk serve: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        match server::Server::bind(config).await {
            Ok(mut server) => {
                if let Some(file) = file {
                    server.reload_on_sighup(file.to_path_buf());
                }
                if let Some(state) = state {
                    server.keep_state(state.file, saved.as_ref());
                }
                server.run(server::shutdown_signal()).await;
                ExitCode::SUCCESS
            }
            Err(error) => {
                let origin = file.map_or("the embedded default configuration".into(), |f| {
                    f.display().to_string()
                });
                eprintln!("rasgk serve: {origin}: {error}");
                ExitCode::from(2)
            }
        }
    })
}

fn check_config(file: &std::path::Path) -> ExitCode {
    match config::load(file) {
        Ok(config) => {
            let in_service = config.clans.iter().filter(|c| c.in_service).count();
            let cap: u64 = config.clans.iter().map(|c| u64::from(c.max_sockets)).sum();
            println!(
                "{}: ok: {} regions, {} links, {} C-LANs ({} in service, {} sockets in all), \
                 {} [[tts]] rules; discovery {}{}, admin {}",
                file.display(),
                config.regions.len(),
                config.links.len(),
                config.clans.len(),
                in_service,
                cap,
                config.tts.len(),
                config.gatekeeper.discovery,
                config
                    .gatekeeper
                    .discovery6
                    .map_or_else(String::new, |d| format!(" and {d}")),
                config.admin.listen,
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{error}");
            ExitCode::from(2)
        }
    }
}

fn status(admin: &str, watch: Option<f64>) -> ExitCode {
    let address = match admin_client::admin_address(admin) {
        Ok(address) => address,
        Err(error) => {
            eprintln!("rasgk status: {error}");
            return ExitCode::from(2);
        }
    };
    if let Some(seconds) = watch {
        if !(seconds.is_finite() && seconds > 0.0) {
            eprintln!("rasgk status: --watch {seconds} must be a number of seconds above 0");
            return ExitCode::from(2);
        }
    }
    loop {
        match admin_client::fetch(address) {
            Ok((clans, regions)) => {
                if watch.is_some() {
                    if std::io::stdout().is_terminal() {
                        print!("\x1b[H\x1b[2J"); // home and clear, like watch(1)
                    } else {
                        println!(); // a file or a pipe gets the tables one after another
                    }
                }
                print!("{}", admin_status::render(&clans, &regions));
            }
            Err(error) => {
                eprintln!("rasgk status: {error}");
                return ExitCode::from(2);
            }
        }
        match watch {
            Some(seconds) => std::thread::sleep(std::time::Duration::from_secs_f64(seconds)),
            None => return ExitCode::SUCCESS,
        }
    }
}
