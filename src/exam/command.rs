//! The `rasgk exam` command: its options, checked before anything starts, the exam run,
//! and the reports written (table, `--json`, `--junit`, `--html`) with the exit status —
//! 0 when every check passed or was skipped, 1 when any failed, 2 when the exam could not
//! run.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::simulated_phone::Misbehaviour;

use super::catalogue;
use super::drill::{self, Drill};
use super::live::{self, Options};
use super::selector::Selector;
use super::timeline;

/// `rasgk exam` options.
#[derive(Debug, Clone, clap::Args)]
pub struct ExamArgs {
    /// The endpoint to examine: an alias (5001), an alias pattern (5*), a RAS address
    /// (127.1.0.5:1719) or a network (127.1.0.0/24). Repeatable.
    #[arg(long = "endpoint", value_name = "WHO")]
    pub endpoints: Vec<String>,
    /// The gatekeeper's configuration (TOML); without it, the embedded default. The exam
    /// runs a gatekeeper of its own on it, with the drill's time to live and its admin port
    /// at --admin.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Socket mode over the configuration's: count or tcp.
    #[arg(long, value_name = "MODE", value_parser = ["count", "tcp"])]
    pub sockets: Option<String>,
    /// Call signalling over the configuration's: direct or routed.
    #[arg(long, value_name = "MODE", value_parser = ["direct", "routed"])]
    pub call_signalling: Option<String>,
    /// How long to wait for each endpoint to register, seconds.
    #[arg(long, value_name = "S", default_value_t = 60)]
    pub wait_s: u64,
    /// The drill (TOML); without it, the built-in one (--print-default-drill).
    #[arg(long, value_name = "FILE")]
    pub drill: Option<PathBuf>,
    /// Run only these checks (ids as --list prints them), in the drill's order.
    #[arg(long, value_name = "ID", num_args = 1.., value_delimiter = ',')]
    pub only: Vec<String>,
    /// Print every check: its id, what it expects and where that comes from.
    #[arg(long)]
    pub list: bool,
    /// Print the built-in drill, commented, and exit.
    #[arg(long)]
    pub print_default_drill: bool,
    /// The secret of the endpoints' aliases (named with --endpoint ALIAS): the gatekeeper
    /// asks their requests for tokens, and the password check runs.
    #[arg(long, value_name = "SECRET")]
    pub password: Option<String>,
    /// Write the report as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the report as JUnit XML: a test suite per endpoint, a test case per check.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write the messages of each endpoint as an HTML timeline.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Where the exam's gatekeeper's admin port listens.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7070")]
    pub admin: SocketAddr,
    /// Examine N simulated phones of the exam's own (extensions 4001…, at 127.1.0.11…),
    /// beside or instead of --endpoint.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub simulate: usize,
    /// The simulated phones are TTS phones (extensions 5001…, which the embedded default
    /// makes TTS); declines-tts implies it.
    #[arg(long)]
    pub tts: bool,
    /// What the simulated phones do wrong: ignores-urq, never-keeps-alive,
    /// rediscovers-on-loss, new-seq-on-retransmit, skips-agl-order, ignores-irq,
    /// declines-tts, no-drq.
    #[arg(long, value_name = "HOW", value_delimiter = ',')]
    pub misbehave: Vec<String>,
    /// The number of the exam's own phone: it calls the endpoint (call-in) and is the
    /// number the endpoint calls (call-out). An endpoint with this alias is not examined.
    #[arg(long, value_name = "ALIAS", default_value = super::simulate::PARTNER_ALIAS)]
    pub partner_alias: String,
    /// The address of the exam's own phone: its RAS and call signalling (on ports the
    /// system picks). It registers like any phone, so it must be in a region of the
    /// configuration; the embedded default puts 127.1.0.0/16 in region 1.
    #[arg(long, value_name = "IP", default_value_t = super::simulate::PARTNER_ADDRESS)]
    pub partner_address: std::net::IpAddr,
    /// Only the report: no verdict as it comes.
    #[arg(long)]
    pub quiet: bool,
}

/// Runs `rasgk exam`.
pub fn run(args: ExamArgs) -> ExitCode {
    if args.list {
        print!("{}", catalogue::list());
        return ExitCode::SUCCESS;
    }
    if args.print_default_drill {
        print!("{}", drill::BUILT_IN);
        return ExitCode::SUCCESS;
    }
    let options = match options(&args) {
        Ok(options) => options,
        Err(why) => {
            eprintln!("rasgk exam: {why}");
            return ExitCode::from(2);
        }
    };
    let interrupted = on_ctrl_c();
    let ended = match live::run(&options, &interrupted) {
        Ok(ended) => ended,
        Err(error) => {
            eprintln!("rasgk exam: {error}");
            return ExitCode::from(2);
        }
    };
    print!("{}", ended.report.table());
    let mut failed_to_write = false;
    let mut write = |path: &Option<PathBuf>, what: &str, text: Result<String, String>| {
        let Some(path) = path else { return };
        let written = text.and_then(|text| std::fs::write(path, text).map_err(|e| e.to_string()));
        match written {
            Ok(()) => eprintln!("rasgk exam: {what} written to {}", path.display()),
            Err(e) => {
                eprintln!("rasgk exam: cannot write {what} to {}: {e}", path.display());
                failed_to_write = true;
            }
        }
    };
    write(&args.json, "the JSON report", Ok(ended.report.json()));
    write(&args.junit, "the JUnit report", Ok(ended.report.junit()));
    write(
        &args.html,
        "the timeline",
        Ok(timeline::html(&ended.report)),
    );
    eprintln!(
        "rasgk exam: the gatekeeper's log is {}",
        ended.log.display()
    );
    if ended.interrupted {
        eprintln!("rasgk exam: interrupted; the report is of what ran");
    }
    if !ended.missing.is_empty() {
        eprintln!(
            "rasgk exam: never registered, not examined: {}",
            ended.missing.join(", ")
        );
        return ExitCode::from(2);
    }
    if failed_to_write {
        return ExitCode::from(2);
    }
    if ended.report.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The options checked: every `--endpoint`, the drill, `--only`, `--misbehave`.
fn options(args: &ExamArgs) -> Result<Options, String> {
    let mut endpoints = Vec::new();
    for text in &args.endpoints {
        endpoints.push(Selector::parse(text)?);
    }
    if args.simulate > super::simulate::MOST {
        return Err(format!(
            "--simulate {}: at most {} phones",
            args.simulate,
            super::simulate::MOST
        ));
    }
    let tts = args.tts || args.misbehave.iter().any(|m| m == "declines-tts");
    if args.simulate > 0 {
        for i in 0..args.simulate {
            endpoints.push(Selector::Alias(
                super::simulate::extension_of(i, tts).to_string(),
            ));
        }
    }
    if endpoints.is_empty() {
        return Err(
            "name the endpoint to examine: --endpoint 5001 (an alias, a pattern like 5*, a RAS \
             address or a network), or --simulate N for phones of the exam's own"
                .to_string(),
        );
    }
    let mut misbehave = Vec::new();
    for name in &args.misbehave {
        let found = Misbehaviour::from_name(name).ok_or_else(|| {
            let all: Vec<&str> = Misbehaviour::ALL.iter().map(|m| m.name()).collect();
            format!(
                "--misbehave {name}: no such misbehaviour; they are {}",
                all.join(", ")
            )
        })?;
        misbehave.push(found);
    }
    if !misbehave.is_empty() && args.simulate == 0 {
        return Err("--misbehave is for the simulated phones: give --simulate N".to_string());
    }
    if args.partner_alias.is_empty()
        || args.partner_alias.len() > 128
        || !args
            .partner_alias
            .chars()
            .all(|c| c.is_ascii_digit() || "*#,".contains(c))
    {
        return Err(format!(
            "--partner-alias {:?}: the exam's phone's number must be dialled digits (0-9, *, \
             #, ','), as the endpoint dials it",
            args.partner_alias
        ));
    }
    if args.simulate > 0
        && (0..args.simulate)
            .any(|i| super::simulate::extension_of(i, tts).to_string() == args.partner_alias)
    {
        return Err(format!(
            "--partner-alias {}: a simulated phone has that number; pick another",
            args.partner_alias
        ));
    }
    if !(1..=3600).contains(&args.wait_s) {
        return Err(format!("--wait-s {}: between 1 and 3600", args.wait_s));
    }
    let drill = match &args.drill {
        Some(path) => Drill::load(path).map_err(|e| e.to_string())?,
        None => Drill::built_in(),
    };
    let drill = if args.only.is_empty() {
        drill
    } else {
        drill.only(&args.only)?
    };
    Ok(Options {
        config: args.config.clone(),
        sockets: args.sockets.clone(),
        call_signalling: args.call_signalling.clone(),
        endpoints,
        wait: Duration::from_secs(args.wait_s),
        drill,
        password: args.password.clone(),
        simulate: args.simulate,
        tts,
        misbehave,
        admin: args.admin,
        quiet: args.quiet,
        partner_alias: args.partner_alias.clone(),
        partner_address: args.partner_address,
    })
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn interrupt(_: libc::c_int) {
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // The second Ctrl-C: quit at once.
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) }
    }
}

/// Ctrl-C from now on sets the flag (the exam ends and writes what it has); a second quits.
fn on_ctrl_c() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    // SAFETY: the handler only touches an atomic and calls _exit.
    unsafe {
        libc::signal(libc::SIGINT, interrupt as *const () as libc::sighandler_t);
    }
    let watched = flag.clone();
    std::thread::spawn(move || loop {
        if INTERRUPTED.load(Ordering::SeqCst) {
            eprintln!(
                "rasgk exam: interrupted: the report of what ran follows (Ctrl-C again to quit)"
            );
            watched.store(true, Ordering::SeqCst);
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    });
    flag
}
