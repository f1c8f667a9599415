//! `rasgk exam` live: a gatekeeper of its own (`rasgk serve` as a child process, on the
//! configuration given with the drill's time to live and an admin port of its own), the
//! exam's [`Engine`] fed from that admin port — every RAS message from `GET /api/ras`, the
//! events from `GET /api/events` — and the engine's actions posted back to it as the admin
//! port's drills. Verdicts are shown as they come; the report is written at the end, at
//! Ctrl-C, or when the endpoints leave.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::admin_client::{self, EventStream};
use crate::config::{self, Config};
use crate::simulated_phone::Misbehaviour;

use super::drill::Drill;
use super::engine::{Action, Engine, Happening, Outcome, Partner, Topology};
use super::report::ExamReport;
use super::selector::Selector;
use super::sighting::{Direction, Sighting};
use super::simulate::{Order, PhoneSpec, Simulation};
use super::status::{ExamStatus, StatusPoster};

/// What `rasgk exam` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--config`: the gatekeeper's configuration (the embedded default without it).
    pub config: Option<PathBuf>,
    /// `--sockets tcp|count`, over the configuration's.
    pub sockets: Option<String>,
    /// `--call-signalling direct|routed`, over the configuration's.
    pub call_signalling: Option<String>,
    /// `--endpoint`, each.
    pub endpoints: Vec<Selector>,
    /// `--wait-s`: how long to wait for each endpoint to register.
    pub wait: Duration,
    /// The drill, `--only` applied.
    pub drill: Drill,
    /// `--password`: the secret of the endpoints' aliases.
    pub password: Option<String>,
    /// `--simulate N`: phones of the exam's own.
    pub simulate: usize,
    /// `--tts`: they are TTS phones.
    pub tts: bool,
    /// `--misbehave`: what the simulated phones do wrong.
    pub misbehave: Vec<Misbehaviour>,
    /// `--admin`: where the exam's gatekeeper's admin port listens.
    pub admin: SocketAddr,
    /// `--quiet`: no verdict as it comes, only the report.
    pub quiet: bool,
    /// `--partner-alias`: the exam's phone's number.
    pub partner_alias: String,
    /// `--partner-address`: the exam's phone's address.
    pub partner_address: std::net::IpAddr,
}

/// Why an exam could not run (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum ExamError {
    /// The configuration.
    #[error("{0}")]
    Config(#[from] config::ConfigError),
    /// Options that do not go together.
    #[error("{0}")]
    Usage(String),
    /// The gatekeeper did not start.
    #[error("the exam's gatekeeper did not start: {0}")]
    Gatekeeper(String),
    /// Its admin port failed us.
    #[error("the exam's gatekeeper's admin port: {0}")]
    Admin(String),
    /// No endpoint came.
    #[error("{0}")]
    NoEndpoint(String),
}

/// How an exam ended.
pub struct Ended {
    /// The findings.
    pub report: ExamReport,
    /// Endpoints named one by one that never registered (the exam could not examine them).
    pub missing: Vec<String>,
    /// Ctrl-C ended it.
    pub interrupted: bool,
    /// Where the gatekeeper's log is.
    pub log: PathBuf,
}

/// The configuration the exam's gatekeeper runs: `options.config` (or the embedded
/// default) with the drill's time to live, the admin port, the socket and call signalling
/// modes asked, and the password of each alias named; its TOML text.
pub fn gatekeeper_toml(options: &Options) -> Result<(String, Config), ExamError> {
    let (text, origin) = match &options.config {
        Some(path) => (
            std::fs::read_to_string(path).map_err(|e| {
                config::ConfigError::new(
                    path.display().to_string(),
                    "",
                    format!("cannot read it: {e}"),
                )
            })?,
            path.display().to_string(),
        ),
        None => (
            config::DEFAULT_TOML.to_string(),
            "the embedded default".to_string(),
        ),
    };
    // Refused as `rasgk serve` would refuse it, with its file, key and line.
    config::from_toml(&text, &origin)?;
    let mut table: toml::Table =
        toml::from_str(&text).map_err(|e| ExamError::Usage(format!("{origin}: {e}")))?;
    let section = |table: &mut toml::Table, name: &str| -> toml::Table {
        table
            .get(name)
            .and_then(|v| v.as_table())
            .cloned()
            .unwrap_or_default()
    };
    let mut gatekeeper = section(&mut table, "gatekeeper");
    gatekeeper.insert(
        "ttl_s".into(),
        toml::Value::Integer(i64::from(options.drill.ttl_s)),
    );
    if let Some(sockets) = &options.sockets {
        gatekeeper.insert("sockets".into(), toml::Value::String(sockets.clone()));
    }
    if let Some(mode) = &options.call_signalling {
        gatekeeper.insert("call_signalling".into(), toml::Value::String(mode.clone()));
    }
    table.insert("gatekeeper".into(), toml::Value::Table(gatekeeper));
    let mut admin = section(&mut table, "admin");
    admin.insert(
        "listen".into(),
        toml::Value::String(options.admin.to_string()),
    );
    table.insert("admin".into(), toml::Value::Table(admin));
    if let Some(secret) = &options.password {
        let aliases: Vec<&str> = options
            .endpoints
            .iter()
            .filter_map(|s| match s {
                Selector::Alias(a) => Some(a.as_str()),
                _ => None,
            })
            .collect();
        let mut simulated: Vec<String> = Vec::new();
        for i in 0..options.simulate {
            simulated.push(super::simulate::extension_of(i, options.tts).to_string());
        }
        let all: Vec<&str> = aliases
            .into_iter()
            .chain(simulated.iter().map(String::as_str))
            .collect();
        if all.is_empty() {
            return Err(ExamError::Usage(
                "--password needs the endpoints' aliases: name each with --endpoint ALIAS (a \
                 pattern or an address does not say which aliases the password is of)"
                    .into(),
            ));
        }
        let mut passwords = table
            .get("password")
            .and_then(|v| v.as_array())
            .cloned()
            .unwrap_or_default();
        passwords.retain(|p| {
            p.get("alias")
                .and_then(|a| a.as_str())
                .is_none_or(|a| !all.contains(&a))
        });
        for alias in all {
            let mut entry = toml::Table::new();
            entry.insert("alias".into(), toml::Value::String(alias.to_string()));
            entry.insert("secret".into(), toml::Value::String(secret.clone()));
            passwords.push(toml::Value::Table(entry));
        }
        table.insert("password".into(), toml::Value::Array(passwords));
    }
    let text = toml::to_string(&table).map_err(|e| ExamError::Usage(e.to_string()))?;
    let config = config::from_toml(&text, &origin)?;
    Ok((text, config))
}

/// Runs an exam; `interrupted` turns true at Ctrl-C.
pub fn run(options: &Options, interrupted: &Arc<AtomicBool>) -> Result<Ended, ExamError> {
    let (text, config) = gatekeeper_toml(options)?;
    let dir = std::env::temp_dir().join(format!("rasgk-exam-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| ExamError::Gatekeeper(format!("{}: {e}", dir.display())))?;
    let config_path = dir.join("gatekeeper.toml");
    let log = dir.join("gatekeeper.log");
    std::fs::write(&config_path, &text)
        .map_err(|e| ExamError::Gatekeeper(format!("{}: {e}", config_path.display())))?;
    let mut child = Gatekeeper::start(&config_path, &log, options.admin)?;
    let result = examine(options, &config, &mut child, interrupted);
    child.stop();
    let (report, missing, interrupted) = result?;
    Ok(Ended {
        report,
        missing,
        interrupted,
        log,
    })
}

/// The child `rasgk serve`.
struct Gatekeeper {
    child: Child,
    admin: SocketAddr,
    token: Option<String>,
}

impl Gatekeeper {
    fn start(config: &Path, log: &Path, admin: SocketAddr) -> Result<Gatekeeper, ExamError> {
        let exe = std::env::current_exe().map_err(|e| ExamError::Gatekeeper(e.to_string()))?;
        let out = std::fs::File::create(log)
            .map_err(|e| ExamError::Gatekeeper(format!("{}: {e}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(|e| ExamError::Gatekeeper(e.to_string()))?;
        let mut command = Command::new(exe);
        // Its own process group: Ctrl-C at the terminal is the exam's to handle (it ends
        // the exam and writes the report); the gatekeeper is stopped after.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command
            .arg("serve")
            .arg("--config")
            .arg(config)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| ExamError::Gatekeeper(e.to_string()))?;
        let mut gatekeeper = Gatekeeper {
            child,
            admin,
            token: None,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok((200, _)) = admin_client::http_get(admin, "/api/clans") {
                break;
            }
            if let Ok(Some(status)) = gatekeeper.child.try_wait() {
                let said = std::fs::read_to_string(log).unwrap_or_default();
                return Err(ExamError::Gatekeeper(format!(
                    "it exited ({status}): {}",
                    said.lines().last().unwrap_or("(nothing said)")
                )));
            }
            if Instant::now() > deadline {
                gatekeeper.stop();
                return Err(ExamError::Gatekeeper(format!(
                    "its admin port {admin} did not answer within 10 s (its log: {})",
                    log.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(gatekeeper)
    }

    fn stop(&mut self) {
        // SIGTERM: a clean stop; killed if it does not stop within 5 s.
        #[cfg(unix)]
        {
            if let Ok(pid) = i32::try_from(self.child.id()) {
                // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Does `action` on the admin port: how it went.
    fn act(&self, action: &Action) -> Outcome {
        let post = |path: &str, body: &str| {
            admin_client::http_post(self.admin, path, body, self.token.as_deref())
        };
        let answer = match action {
            Action::Withhold {
                endpoint_id,
                request,
            } => post(
                &format!("/api/registrations/{endpoint_id}/withhold"),
                &format!("{{\"request\": \"{}\"}}", request.short_name()),
            ),
            Action::Irq { endpoint_id } => {
                post(&format!("/api/registrations/{endpoint_id}/irq"), "{}")
            }
            Action::Unregister { endpoint_id } => admin_client::http_delete(
                self.admin,
                &format!("/api/registrations/{endpoint_id}"),
                self.token.as_deref(),
            ),
            Action::Alternate { endpoint_id } => {
                post(&format!("/api/registrations/{endpoint_id}/alternate"), "{}")
            }
            Action::ClanService { clans, in_service } => post(
                "/api/clans/service",
                &serde_json::json!({ "clans": clans, "in_service": in_service }).to_string(),
            ),
            Action::Restart => post("/api/restart", "{}"),
            Action::Call { .. } | Action::AwaitCall { .. } => {
                return Outcome::Failed("a call is the exam's phones' to place".into())
            }
        };
        match answer {
            Ok((200, body)) => match action {
                Action::Alternate { .. } => {
                    let named = serde_json::from_str::<serde_json::Value>(&body)
                        .ok()
                        .and_then(|v| v.get("alternate")?.as_str().map(str::to_string));
                    Outcome::Alternate(named)
                }
                _ => Outcome::Done,
            },
            Ok((404, _)) => Outcome::UnknownEndpoint,
            Ok((409, _)) if matches!(action, Action::Alternate { .. }) => Outcome::Alternate(None),
            Ok((status, body)) => Outcome::Failed(format!("HTTP {status}: {}", body.trim())),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }
}

/// What the two streams and the exam's phone bring.
enum Input {
    Ras(Box<Sighting>),
    Event(Happening),
    Call(crate::simulated_phone::CallNote),
    Lost(String),
}

/// Reads the admin port's event stream at `path` on a thread of its own, handing each
/// event's data that `read` makes something of to `tx`; a lost stream is said once.
fn read_stream(
    admin: SocketAddr,
    path: &'static str,
    tx: mpsc::Sender<Input>,
    read: impl Fn(&str) -> Option<Input> + Send + 'static,
) -> std::io::Result<()> {
    let mut stream = EventStream::open(admin, path)?;
    std::thread::Builder::new()
        .name(format!("exam{}", path.replace('/', "-")))
        .spawn(move || loop {
            let data = match stream.next_data() {
                Ok(data) => data,
                Err(e) => {
                    let _ = tx.send(Input::Lost(format!("{path}: {e}")));
                    return;
                }
            };
            if let Some(input) = read(&data) {
                if tx.send(input).is_err() {
                    return;
                }
            }
        })?;
    Ok(())
}

/// A message of `/api/ras`, stamped with the exam's clock.
fn ras_input(data: &str, start: Instant) -> Option<Input> {
    let seen = serde_json::from_str::<serde_json::Value>(data).ok()?;
    let field = |key: &str| seen.get(key).and_then(|v| v.as_str()).unwrap_or("");
    let direction = match field("direction") {
        "in" => Direction::In,
        _ => Direction::Out,
    };
    let local = field("local").parse().ok()?;
    let peer = field("peer").parse().ok()?;
    let octets = hex(field("octets"))?;
    let sighting = Sighting::of(start.elapsed(), direction, local, peer, &octets)?;
    Some(Input::Ras(Box::new(sighting)))
}

/// An event of `/api/events` the exam reads.
fn event_input(data: &str) -> Option<Input> {
    let event = serde_json::from_str::<serde_json::Value>(data).ok()?;
    Happening::from_json(&event).map(Input::Event)
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The longest an exam runs, whatever its drill says.
const MOST_TIME: Duration = Duration::from_secs(3600);

type Examined = (ExamReport, Vec<String>, bool);

fn examine(
    options: &Options,
    config: &Config,
    gatekeeper: &mut Gatekeeper,
    interrupted: &Arc<AtomicBool>,
) -> Result<Examined, ExamError> {
    gatekeeper.token = config.admin.token.clone();
    let start = Instant::now();
    let (tx, rx) = mpsc::channel();
    read_stream(gatekeeper.admin, "/api/ras", tx.clone(), move |data| {
        ras_input(data, start)
    })
    .map_err(|e| ExamError::Admin(format!("/api/ras: {e}")))?;
    read_stream(gatekeeper.admin, "/api/events", tx.clone(), event_input)
        .map_err(|e| ExamError::Admin(format!("/api/events: {e}")))?;
    let mut phones = vec![PhoneSpec::partner(
        &options.partner_alias,
        options.partner_address,
    )];
    phones.extend(
        (0..options.simulate.min(super::simulate::MOST))
            .map(|i| PhoneSpec::simulated(i, options.tts, &options.misbehave)),
    );
    let partner_alias = options.partner_alias.clone();
    let simulation = Simulation::start(
        phones,
        config.gatekeeper.discovery,
        Box::new(move |alias, note| {
            if alias == partner_alias {
                let _ = tx.send(Input::Call(note));
            }
        }),
    )
    .map_err(|e| {
        ExamError::Usage(format!(
            "cannot bind the exam's phones (--partner-address {}, --simulate): {e}",
            options.partner_address
        ))
    })?;
    let partner = Partner {
        alias: options.partner_alias.clone(),
        call_signal_address: simulation.running[&options.partner_alias].call_signal_address,
    };
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ u64::from(std::process::id());
    let mut engine = Engine::new(
        options.drill.clone(),
        Topology::of(config),
        options.endpoints.clone(),
        options.password.is_some(),
    )
    .with_partner(partner, seed);
    let names: Vec<String> = options.endpoints.iter().map(ToString::to_string).collect();
    if !options.quiet {
        eprintln!(
            "rasgk exam: gatekeeper up (discovery {}, admin http://{}); waiting up to {} s \
             for {} to register",
            config.gatekeeper.discovery,
            gatekeeper.admin,
            options.wait.as_secs(),
            names.join(", ")
        );
    }
    let mut status = StatusPoster::new(gatekeeper.admin, gatekeeper.token.clone());
    let mut shown = std::collections::HashMap::new();
    let mut waiting = true;
    let mut was_interrupted = false;
    let mut lost: Option<String> = None;
    loop {
        let now = start.elapsed();
        let mut actions = Vec::new();
        let timeout = engine
            .deadline()
            .map(|d| d.saturating_sub(now))
            .unwrap_or(Duration::from_millis(200))
            .min(Duration::from_millis(200));
        match rx.recv_timeout(timeout) {
            Ok(Input::Ras(sighting)) => actions.extend(engine.observe(*sighting)),
            Ok(Input::Event(happening)) => {
                actions.extend(engine.happened(start.elapsed(), happening))
            }
            Ok(Input::Call(note)) => {
                let at = note.at.saturating_duration_since(start);
                actions.extend(engine.heard(at, note.call_id, note.event));
            }
            Ok(Input::Lost(why)) => {
                lost = Some(why);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => lost = Some("both streams ended".into()),
        }
        actions.extend(engine.tick(start.elapsed()));
        while !actions.is_empty() {
            let mut more = Vec::new();
            for action in actions {
                let outcome = match &action {
                    Action::Call { .. } | Action::AwaitCall { .. } => {
                        call(&simulation, options, &action)
                    }
                    _ => gatekeeper.act(&action),
                };
                more.extend(engine.acted(start.elapsed(), &action, outcome));
            }
            actions = more;
        }
        if !options.quiet {
            for (endpoint, graded) in engine.graded_since(&mut shown) {
                eprintln!(
                    "  {endpoint:<12} {:<15} {:<7} {}",
                    graded.id,
                    graded.verdict.name(),
                    graded.observed
                );
            }
        }
        status.post(|| ExamStatus::of(&engine, start.elapsed(), true), false);
        if waiting && start.elapsed() >= options.wait {
            waiting = false;
            engine.stop_joining();
            if engine.examined() == 0 {
                return Err(ExamError::NoEndpoint(format!(
                    "no endpoint matching {} registered within {} s (--wait-s): is it \
                     pointed at the discovery address {}?",
                    names.join(", "),
                    options.wait.as_secs(),
                    config.gatekeeper.discovery
                )));
            }
        }
        if engine.finished() && (!waiting || engine.unmatched().is_empty()) {
            break;
        }
        if interrupted.load(Ordering::Relaxed) {
            was_interrupted = true;
            break;
        }
        if let Some(why) = &lost {
            eprintln!("rasgk exam: lost the gatekeeper's admin port ({why}); the report follows");
            break;
        }
        if start.elapsed() > MOST_TIME {
            break;
        }
    }
    let missing: Vec<String> = engine.unmatched().iter().map(|s| s.to_string()).collect();
    let why = if was_interrupted {
        "the exam was interrupted (Ctrl-C) before this check ran"
    } else if lost.is_some() {
        "the exam lost its gatekeeper before this check ran"
    } else {
        "the exam ended before this check ran"
    };
    for action in engine.end(why) {
        let _ = gatekeeper.act(&action);
    }
    status.post(|| ExamStatus::of(&engine, start.elapsed(), false), true);
    simulation.stop();
    let report = ExamReport {
        gatekeeper: describe_gatekeeper(options, config),
        drill: options.drill.origin.clone(),
        endpoints: engine.reports(),
    };
    Ok((report, missing, was_interrupted))
}

/// A call step's action, carried out by the exam's phones: the exam's phone calls the
/// endpoint; a call from the endpoint is asked of its simulated phone, or of its tester.
fn call(simulation: &Simulation, options: &Options, action: &Action) -> Outcome {
    match action {
        Action::Call { callee, call_id } => {
            let order = Order {
                dial: callee.clone(),
                call_id: *call_id,
            };
            if simulation.order(&options.partner_alias, order) {
                Outcome::Done
            } else {
                Outcome::Failed("the exam's phone is not running".into())
            }
        }
        Action::AwaitCall {
            endpoint,
            aliases,
            partner,
            call_id,
        } => {
            let simulated = aliases.iter().find(|a| simulation.running.contains_key(*a));
            match simulated {
                Some(alias) => {
                    let order = Order {
                        dial: partner.clone(),
                        call_id: *call_id,
                    };
                    simulation.order(alias, order);
                }
                None => {
                    let wait = options
                        .drill
                        .step("call-out")
                        .map_or(0, |step| step.wait.as_secs());
                    eprintln!(
                        "rasgk exam: call {partner} from {endpoint} now (the call-out check waits \
                         {wait} s for the call; the exam's phone answers, and hangs up after {} s)",
                        super::simulate::PARTNER_HOLD.as_secs()
                    );
                }
            }
            Outcome::Done
        }
        _ => Outcome::Failed("not a call".into()),
    }
}

fn describe_gatekeeper(options: &Options, config: &Config) -> String {
    format!(
        "{} ({} sockets, {} call signalling, timeToLive {} s)",
        options.config.as_ref().map_or_else(
            || "the embedded default".to_string(),
            |p| p.display().to_string()
        ),
        match config.gatekeeper.sockets {
            config::SocketMode::Tcp => "tcp",
            config::SocketMode::Count => "counted",
        },
        match config.gatekeeper.call_signalling {
            config::CallSignalling::Routed => "routed",
            config::CallSignalling::Direct => "direct",
        },
        config.gatekeeper.ttl_s
    )
}
