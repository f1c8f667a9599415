//! `rasgk storm`: a registration storm of simulated phones against any gatekeeper.
//!
//! Each phone binds its own source address (on loopback `127.R.x.y` for region R, so the
//! gatekeeper's network map puts it in that region; `fd00:0:R::x:y` with `--ipv6`, see
//! [`roster`]), sends GRQ to the discovery address,
//! RRQ to the C-LAN the GCF names, retransmits like a real endpoint, and keeps alive with
//! lightweight RRQ while the storm lasts ([`life`]). The report ([`report`]) gives the rate,
//! latency percentiles, rejects, retransmissions and the final load per C-LAN and region,
//! read from the admin port when there is one.
//!
//! Every phone needs a socket, so an open file, and a process may have only so many: a storm
//! larger than that runs in several processes ([`fleet`], each child a [`shard`]) whose
//! tallies ([`tally`]) add up into the one report.
//!
//! With `--sockets` the phones also take part in the gatekeeper's socket mode
//! ([`signalling`]): each registration is followed by a TCP socket at the C-LAN, and the
//! report adds the time to service and the sockets as the phones hold them.
//!
//! With `--calls-per-s` as well, the phones call each other through a gatekeeper that
//! routes calls (docs/rules.md §8.7): the storm's schedule says which phone calls whom
//! when ([`calls`]), a caller's life asks admission ([`life`]), and each phone's socket
//! task places its calls and answers those made to it ([`call_signalling`]); the report adds
//! the calls placed, connected and failed by reason, and Setup → Connect percentiles.

mod call_signalling;
mod calls;
mod fleet;
mod interrupt;
mod life;
mod phones;
mod port;
pub mod report;
mod shard;
mod signalling;
mod stamp;
mod tally;
mod wall_clock;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::phone::Phone;
use crate::roster;
use fleet::Fleet;
use report::{InServiceSample, Latency, LoadSample, Report, RoutedCalls};
use tally::Tally;

/// `rasgk storm` options.
#[derive(Debug, Clone, clap::Args, Serialize, Deserialize)]
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
    /// Regions the phones come from, round robin (phone addresses 127.R.x.y, or
    /// fd00:0:R::x:y with --ipv6).
    #[arg(long, value_name = "R,R,…", value_delimiter = ',', default_value = "1")]
    pub regions: Vec<u8>,
    /// Phones over IPv6: phone n of region R has fd00:0:R::X:Y where it would have
    /// 127.R.X.Y, in the same decimal digits (127.12.2.51 becomes fd00:0:12::2:51, so region
    /// R's phones are in fd00:0:R::/48). Their RAS goes to an IPv6 --target (the
    /// gatekeeper's IPv6 discovery address); with --sockets they connect from, and are
    /// connected to on, these addresses.
    ///
    /// The host must take every address of the prefix as its own, as it does 127/8: route
    /// it to the loopback device, `ip -6 route add local fd00::/16 dev lo` (the storm tries
    /// one address of each region before it starts and says so when one is not local). A
    /// gatekeeper on the same host needs its own IPv6 addresses assigned, e.g. `ip -6 addr
    /// add fd00::100/128 dev lo`.
    #[arg(long)]
    #[serde(default)]
    pub ipv6: bool,
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
    /// Give up on phones still unregistered after this many seconds; a phone that must
    /// register again later (a gatekeeper URQ, a keep-alive not answered with an RCF) gets
    /// as long again from then.
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
    /// Leave the phones registered at the end, for drills that watch their time to live run
    /// out. By default every phone that is registered when the storm ends — or is interrupted
    /// with Ctrl-C — sends URQ (each has 5 s for its UCF; the report counts them), so the
    /// gatekeeper holds none of them, nor their places on the C-LANs, afterwards.
    #[arg(long)]
    #[serde(default)]
    pub leave_registered: bool,
    /// What every storm does now unless --leave-registered: unregister its phones at the end
    /// (accepted for old scripts).
    #[arg(long, hide = true, conflicts_with = "leave_registered")]
    #[serde(default)]
    pub unregister: bool,
    /// Every phone's H.235 password: each request naming the phone (RRQ, lightweight RRQ,
    /// URQ, ARQ, DRQ) carries an MD5 `cryptoEPPwdHash` token for its extension, as a
    /// gatekeeper with a `[[password]]` for each extension requires. 1 to 127 characters.
    #[arg(long, value_name = "SECRET")]
    #[serde(default)]
    pub password: Option<String>,
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
    /// Spread the phones over N storm processes (each with its own port), started at one
    /// instant, their figures added into one report; by default 1. Each process runs on one
    /// core, so more processes give the phones more of a machine's cores.
    #[arg(long, value_name = "N")]
    pub processes: Option<usize>,
    /// Socket mode: after each RCF a phone gets a TCP socket at the C-LAN, in service when
    /// the gatekeeper writes the empty TPKT frame (03 00 00 04) on it: the phones ask for that
    /// frame in their RRQs (an H.460.1 feature of rasgk's own), and a gatekeeper whose RCF
    /// does not confirm it puts a socket in service once it is up. A non-TTS phone
    /// connects from its own IP to the RCF's callSignalAddress (a reset is "busy": it tries
    /// again after a back-off of 50 ms doubling to 2 s, none started after --give-up-s); the
    /// gatekeeper connects to a TTS phone's callSignalAddress (its IP, the port of this
    /// process's listener on the loopback device). The gatekeeper must run with
    /// `[gatekeeper] sockets = "tcp"`: in its count mode nothing listens on the C-LANs'
    /// signalling addresses, so every non-TTS connection is refused. Each connection is an
    /// open file: see --processes.
    #[arg(long)]
    #[serde(default)]
    pub sockets: bool,
    /// With --sockets, TTS phones are slow to accept: the listener sleeps this long before
    /// each accept, so the gatekeeper's connections wait in its queue of 16 (and beyond it,
    /// unanswered, in SYN-SENT).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    #[serde(default)]
    pub accept_delay_ms: u64,
    /// Routed calls between the storm's phones, R a second over the whole storm (however
    /// many --processes share it). Needs --sockets, and a gatekeeper with `[gatekeeper]
    /// sockets = "tcp"` and `call_signalling = "routed"` (it relays every call's signalling
    /// over the phones' sockets on their C-LANs).
    ///
    /// The calls start once every phone has registered and holds its socket in service, or
    /// 30 s after the last registration at the latest (a caller without a socket in
    /// service then fails `not_in_service`). Call j is placed by phone j mod --phones and
    /// goes to the phone half the storm away (phone k calls phone k + phones/2), or to
    /// --call-to. Placing stops after --call-total calls, else --duration seconds after the
    /// calls started; the storm stays until its calls have ended.
    ///
    /// A call: ARQ at the caller's C-LAN, whose ACF must be gatekeeperRouted and name the
    /// C-LAN holding the caller's socket (no ARQ with --pregranted); the Setup on the
    /// caller's socket; the phone called answers at once with Call Proceeding, Alerting and
    /// Connect on its own socket; the caller holds the call --call-s after the Connect, then
    /// writes Release Complete and sends DRQ.
    ///
    /// The report adds the calls placed, connected, and failed by reason: `not_in_service`,
    /// `arj_REASON`, `acf_not_routed`, `acf_other_clan`, `no_acf`, `no_connect` (no Connect
    /// within 10 s), `cause_N` (a Release Complete before the Connect, by its Q.931 cause:
    /// `cause_20`, subscriber absent), `socket_lost`; Setup → Connect percentiles (Setup
    /// written to Connect read, by the caller); the peak calls per C-LAN (the admin port's
    /// `calls`, sampled every 100 ms). Exit status 1 when a call failed.
    #[arg(long, value_name = "R")]
    #[serde(default)]
    pub calls_per_s: Option<f64>,
    /// With --calls-per-s: seconds each call is held after its Connect before the caller
    /// releases it; 2 when not given.
    #[arg(long, value_name = "S")]
    #[serde(default)]
    pub call_s: Option<f64>,
    /// With --calls-per-s: place N calls in all, then stop (the storm stays until they have
    /// ended, past --duration if need be). Without it calls are placed for --duration
    /// seconds from their start.
    #[arg(long, value_name = "N")]
    #[serde(default)]
    pub call_total: Option<u64>,
    /// With --calls-per-s: every call dials EXT instead of a phone of the storm. A number
    /// nobody registered fails each call `arj_calledPartyNotRegistered` (the gatekeeper's
    /// ARJ), or `cause_20` with --pregranted (its Release Complete: subscriber absent).
    #[arg(long, value_name = "EXT")]
    #[serde(default)]
    pub call_to: Option<String>,
    /// With --calls-per-s: callers send their Setup without ARQ and DRQ, as endpoints a
    /// gatekeeper granted admission in advance (`preGrantedARQ`); the gatekeeper tells the
    /// caller by the Setup's endpointIdentifier.
    #[arg(long)]
    #[serde(default)]
    pub pregranted: bool,
    /// Run as child I of N of a multi-process storm (the options come as JSON on standard
    /// input); for the storm's own use.
    #[arg(long, value_name = "I/N", hide = true)]
    #[serde(skip)]
    pub shard: Option<Share>,
}

/// Which phones a storm process runs: every `count`-th phone of the storm from phone `index`
/// (0-based; written 1-based, `I/N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// Which process, from 0.
    pub index: usize,
    /// Of how many.
    pub count: usize,
}

impl Share {
    /// Every phone, in one process.
    pub const WHOLE: Share = Share { index: 0, count: 1 };

    /// Whether phone `index` of the storm is this share's.
    pub fn holds(self, index: usize) -> bool {
        index % self.count == self.index
    }

    /// How many of `phones` are this share's.
    pub fn size(self, phones: usize) -> usize {
        (phones + self.count - 1 - self.index) / self.count
    }
}

impl std::fmt::Display for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

impl std::str::FromStr for Share {
    type Err = String;

    fn from_str(text: &str) -> Result<Share, String> {
        let bad = || format!("{text:?} is not I/N with 1 <= I <= N");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (i, n): (usize, usize) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if i == 0 || i > n {
            return Err(bad());
        }
        Ok(Share {
            index: i - 1,
            count: n,
        })
    }
}

/// Why a storm could not run.
#[derive(Debug, thiserror::Error)]
pub enum StormError {
    /// An option is out of range.
    #[error("{0}")]
    Option(String),
    /// The phones' port (one UDP socket on the loopback device) cannot be opened.
    #[error("cannot open the phones' port (a UDP socket on the loopback device `lo`): {0}")]
    Port(std::io::Error),
    /// The TTS phones' listener (one TCP socket on the loopback device) cannot be opened.
    #[error(
        "cannot open the TTS phones' listener (a TCP socket on the loopback device `lo`): {0}"
    )]
    Listener(std::io::Error),
    /// An IPv6 phone's address is not an address of this host.
    #[error(
        "phone address {address} is not an address of this host ({reason}): --ipv6 phones \
         need their prefix routed to the loopback device, e.g. `ip -6 route add local \
         fd00::/16 dev lo`"
    )]
    NotLocal {
        /// The first phone address found not local.
        address: IpAddr,
        /// What the check saw.
        reason: String,
    },
    /// A child of a multi-process storm failed.
    #[error("storm process {shard}: {reason}")]
    Shard {
        /// Which child, `I/N`.
        shard: String,
        /// What went wrong, with what it said.
        reason: String,
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
            return bad(format!(
                "--regions must list regions 1 to 255 (phone addresses {})",
                roster::span(self.family())
            ));
        }
        if crate::config::Family::of(self.target.ip()) != self.family() {
            return bad(if self.ipv6 {
                format!(
                    "--target {} is IPv4, but --ipv6 phones send their GRQ over IPv6: give the \
                     gatekeeper's IPv6 discovery address (e.g. --target [fd00::100]:1719)",
                    self.target
                )
            } else {
                format!(
                    "--target {} is IPv6, but the phones are IPv4 (127.R.x.y): add --ipv6, or \
                     give the gatekeeper's IPv4 discovery address",
                    self.target
                )
            });
        }
        if let Some(rate) = self.rate {
            if !(rate.is_finite() && rate > 0.0) {
                return bad(format!("--rate {rate} must be a number above 0"));
            }
        }
        if let Some((_, per_region)) = roster::fullest_region(&self.regions, self.phones) {
            if per_region > roster::MOST_PER_REGION {
                return bad(format!(
                    "{per_region} phones per region do not fit in {}",
                    roster::span(self.family())
                ));
            }
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
        if let Some(password) = &self.password {
            // A password no token can hold would be sent as no token at all.
            if let Err(error) = crate::ras::h235::pwd_hash("1", password, 1) {
                return bad(format!("--password: {error}"));
            }
        }
        let tts = (self.phones as f64 * self.tts_share).floor() as u64;
        let others = self.phones as u64 - tts;
        let ranges = [
            (
                "TTS",
                "--tts-from",
                u64::from(self.tts_extensions_from),
                tts,
            ),
            ("non-TTS", "--from", u64::from(self.extensions_from), others),
        ];
        for (what, flag, from, count) in ranges {
            if count > 0 && from + count - 1 > u64::from(u32::MAX) {
                return bad(format!(
                    "{count} {what} extensions from {flag} {from} go past {}",
                    u32::MAX
                ));
            }
        }
        let [(_, _, tts_from, _), (_, _, from, _)] = ranges;
        if tts > 0 && others > 0 && tts_from < from + others && from < tts_from + tts {
            return bad(format!(
                "the TTS phones' extensions {tts_from}–{} and the others' {from}–{} overlap, so \
                 aliases would collide: move one range with --tts-from or --from (e.g. \
                 --tts-from 500000 --from 600000)",
                tts_from + tts - 1,
                from + others - 1
            ));
        }
        if self.accept_delay_ms > 0 && !self.sockets {
            return bad("--accept-delay-ms is for --sockets: without it nothing accepts".into());
        }
        self.check_routed_calls()?;
        match self.processes {
            Some(0) => return bad("--processes must be at least 1".into()),
            Some(n) if n > self.phones => {
                return bad(format!(
                    "--processes {n} is more than the {} phones",
                    self.phones
                ))
            }
            _ => {}
        }
        Ok(())
    }

    /// The routed calls' options (`--calls-per-s` and the options that go with it).
    fn check_routed_calls(&self) -> Result<(), StormError> {
        let bad = |text: String| Err(StormError::Option(text));
        let Some(per_s) = self.calls_per_s else {
            let given = [
                ("--call-s", self.call_s.is_some()),
                ("--call-total", self.call_total.is_some()),
                ("--call-to", self.call_to.is_some()),
                ("--pregranted", self.pregranted),
            ];
            return match given.iter().find(|(_, given)| *given) {
                Some((flag, _)) => bad(format!(
                    "{flag} is for routed calls: add --calls-per-s R (and --sockets)"
                )),
                None => Ok(()),
            };
        };
        if !self.sockets {
            return bad(
                "--calls-per-s places routed calls over the phones' signalling sockets: add \
                 --sockets, against a gatekeeper with [gatekeeper] sockets = \"tcp\" and \
                 call_signalling = \"routed\""
                    .into(),
            );
        }
        if !(per_s.is_finite() && per_s > 0.0) {
            return bad(format!("--calls-per-s {per_s} must be a number above 0"));
        }
        if let Some(hold) = self.call_s.filter(|s| !(s.is_finite() && *s >= 0.0)) {
            return bad(format!("--call-s {hold} must be 0 or more"));
        }
        match self.call_total {
            Some(0) => return bad("--call-total must be at least 1".into()),
            None if self.duration == 0.0 => {
                return bad(
                    "--calls-per-s needs to know when to stop: give --call-total N, or \
                     --duration S (calls are placed for S seconds from their start)"
                        .into(),
                )
            }
            _ => {}
        }
        match &self.call_to {
            Some(digits) if crate::ras::Alias::dialled_digits(digits).is_err() => {
                return bad(format!(
                    "--call-to {digits:?} must be dialled digits (0-9, #, *, ',')"
                ))
            }
            None if self.phones < 2 => {
                return bad(
                    "routed calls between the storm's phones need --phones 2 or more (or \
                     --call-to EXT)"
                        .into(),
                )
            }
            _ => {}
        }
        Ok(())
    }

    /// Refuses, in socket mode, more phones in a storm process than `limit` open files
    /// (`RLIMIT_NOFILE`, `None` when unknown) allow when the storm runs in `processes`.
    fn check_open_files(&self, processes: usize, limit: Option<u64>) -> Result<(), StormError> {
        let (true, Some(limit)) = (self.sockets, limit) else {
            return Ok(());
        };
        let per_process = self.phones.div_ceil(processes.max(1)) as u64;
        let needed = per_process + FILES_BESIDES_SOCKETS;
        if needed <= limit {
            return Ok(());
        }
        let advice = match limit.checked_sub(FILES_BESIDES_SOCKETS) {
            Some(room) if room > 0 => format!(
                "spread them with --processes {} or more",
                (self.phones as u64).div_ceil(room)
            ),
            _ => "raise the limit (ulimit -n)".to_string(),
        };
        Err(StormError::Option(format!(
            "--sockets: {per_process} phones in a storm process need {needed} open files (a TCP \
             connection each, and {FILES_BESIDES_SOCKETS} for the rest), but this process may \
             open {limit} (RLIMIT_NOFILE): {advice}"
        )))
    }

    /// The phones' address family: IPv6 with `--ipv6`.
    pub fn family(&self) -> crate::config::Family {
        if self.ipv6 {
            crate::config::Family::V6
        } else {
            crate::config::Family::V4
        }
    }

    /// Phone `i`: its address, TTS or not, and its extension, by [`roster`]'s rule.
    fn phones(&self) -> Vec<(IpAddr, Phone, bool)> {
        (0..self.phones)
            .map(|i| {
                let ip = roster::address_of(self.family(), &self.regions, i);
                let tts = roster::is_tts(self.tts_share, i);
                let extension = roster::extension(
                    self.tts_share,
                    self.tts_extensions_from,
                    self.extensions_from,
                    i,
                );
                let mut phone = Phone::extension(extension, SocketAddr::new(ip, 0));
                phone.password.clone_from(&self.password);
                // A phone with a socket asks to be told when it is in service
                // (docs/rules.md §8.4): a gatekeeper writes that frame only to phones that ask.
                phone.service_frame = self.sockets;
                (ip, phone, tts)
            })
            .collect()
    }
}

/// Open files a storm process needs besides its phones' TCP connections: the phones' port,
/// the TTS listener, the runtime's, standard streams, the admin port's readers, and room
/// for connections made while another closes.
const FILES_BESIDES_SOCKETS: u64 = 64;

/// Raises this process's soft limit of open files to its hard limit; the soft limit now in
/// force (`None` when it cannot be read). Every storm process does it at start.
fn raise_open_files() -> Option<u64> {
    crate::server::raise_open_file_limit()
        .ok()
        .map(|(soft, _)| soft)
}

fn admin_of(args: &StormArgs) -> Option<SocketAddr> {
    match &args.admin {
        Some(text) => crate::admin_client::admin_address(text).ok(),
        None => Some(SocketAddr::new(args.target.ip(), 7000)),
    }
}

/// The load as the admin port shows it at one time.
struct Load {
    /// Sockets per C-LAN.
    clans: BTreeMap<String, u64>,
    /// Sockets per region.
    regions: BTreeMap<String, u64>,
    /// Routed calls in progress with a leg on each C-LAN.
    calls: BTreeMap<String, u64>,
}

/// Reads the load from the admin port, off the async threads (the reader blocks).
async fn load_now(admin: SocketAddr) -> Option<Load> {
    let (clans, regions) = tokio::task::spawn_blocking(move || crate::admin_client::fetch(admin))
        .await
        .ok()?
        .ok()?;
    let calls = clans
        .iter()
        .map(|c| (c.name.clone(), u64::from(c.calls)))
        .collect();
    let clans = clans
        .into_iter()
        .map(|c| (c.name, u64::from(c.sockets)))
        .collect();
    let regions = regions
        .into_iter()
        .map(|r| (r.id.to_string(), u64::from(r.sockets)))
        .collect();
    Some(Load {
        clans,
        regions,
        calls,
    })
}

/// Routed calls in progress, as the admin port's `/api/calls` lists them.
async fn routed_calls_now(admin: SocketAddr) -> Option<u64> {
    let body =
        tokio::task::spawn_blocking(move || crate::admin_client::get_json(admin, "/api/calls"))
            .await
            .ok()?
            .ok()?;
    let calls: Vec<serde_json::Value> = serde_json::from_str(&body).ok()?;
    Some(calls.iter().filter(|c| c["kind"] == "routed").count() as u64)
}

/// What the admin port shows at a storm's end, while its phones are still there.
struct AtTheEnd {
    load: Option<Load>,
    /// Routed calls in progress (with `--calls-per-s`).
    routed_calls: Option<u64>,
}

impl AtTheEnd {
    async fn read(admin: Option<SocketAddr>, args: &StormArgs) -> AtTheEnd {
        let Some(admin) = admin else {
            return AtTheEnd {
                load: None,
                routed_calls: None,
            };
        };
        let routed_calls = match args.calls_per_s {
            Some(_) => routed_calls_now(admin).await,
            None => None,
        };
        AtTheEnd {
            load: load_now(admin).await,
            routed_calls,
        }
    }
}

/// Calls placed since start per node, summed over trunks, from `/api/trunks`.
async fn trunk_totals(admin: SocketAddr) -> Option<BTreeMap<String, u64>> {
    let body =
        tokio::task::spawn_blocking(move || crate::admin_client::get_json(admin, "/api/trunks"))
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

/// The runtime every storm process runs on: one thread. A storm's phones wake each other
/// all the time; threads handing them around would take more time than they give (and take
/// it from the gatekeeper). `--processes` spreads a storm over cores.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

fn progress_bar(phones: usize) -> indicatif::ProgressBar {
    let progress = indicatif::ProgressBar::new(phones as u64);
    progress.set_style(progress_style("phones registered"));
    progress
}

fn progress_style(what: &str) -> indicatif::ProgressStyle {
    let template =
        format!("{{spinner}} {{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {what} {{per_sec}}");
    indicatif::ProgressStyle::with_template(&template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("█▉ ")
}

/// Turns the progress bar to the routed calls: `calls` of them to end.
fn progress_calls(progress: &indicatif::ProgressBar, calls: u64) {
    progress.set_style(progress_style("calls over"));
    progress.set_length(calls);
    progress.set_position(0);
    progress.reset_eta();
}

/// A storm in this one process: its progress bar, the admin port read at the end, and
/// Ctrl-C.
struct Alone<'a> {
    args: &'a StormArgs,
    progress: &'a indicatif::ProgressBar,
    admin: Option<SocketAddr>,
    /// Phones registered so far.
    registered: usize,
    /// Turns true at Ctrl-C.
    stop: tokio::sync::watch::Receiver<bool>,
}

impl phones::Conductor for Alone<'_> {
    type Held = AtTheEnd;

    fn registered(&mut self, n: usize) {
        self.registered = n;
        self.progress.set_position(n as u64);
    }

    async fn in_service(&mut self) -> Option<Duration> {
        if self.registered == 0 {
            return None;
        }
        let expected = calls::Schedule::of(self.args).map_or(0, |s| s.expected());
        progress_calls(self.progress, expected);
        Some(wall_clock::wall_time())
    }

    fn calls_over(&mut self, n: u64) {
        self.progress.set_position(n);
    }

    async fn hold(&mut self) -> AtTheEnd {
        let end = AtTheEnd::read(self.admin, self.args).await;
        self.progress.finish_and_clear();
        end
    }

    fn interruption(&self) -> tokio::sync::watch::Receiver<bool> {
        self.stop.clone()
    }
}

/// The admin port, when it answers.
async fn admin_answering(args: &StormArgs) -> Option<SocketAddr> {
    let admin = admin_of(args)?;
    load_now(admin).await.map(|_| admin)
}

/// Samples the sockets per C-LAN every 100 ms from `started` on, until aborted.
fn sample_load(
    admin: Option<SocketAddr>,
    started: Instant,
) -> (
    Option<tokio::task::JoinHandle<()>>,
    Arc<Mutex<Vec<LoadSample>>>,
) {
    let samples = Arc::new(Mutex::new(Vec::<LoadSample>::new()));
    let sampler = admin.map(|admin| {
        let samples = samples.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(started.into()).await;
            loop {
                if let Some(Load { clans, calls, .. }) = load_now(admin).await {
                    let t = started.elapsed().as_secs_f64();
                    if let Ok(mut samples) = samples.lock() {
                        samples.push(LoadSample { t, clans, calls });
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    });
    (sampler, samples)
}

/// Runs a storm in this process and reports (whatever `--processes` says: the library's
/// storm, as `examples/storm_in_process.rs` uses it).
pub async fn storm(args: &StormArgs) -> Result<Report, StormError> {
    args.check()?;
    args.check_open_files(1, raise_open_files())?;
    let bound = phones::bind(args, Share::WHOLE).await?;
    let admin = admin_answering(args).await;
    let (sampler, samples) = sample_load(admin, Instant::now());
    let progress = progress_bar(args.phones);
    let stop = interrupt::on_ctrl_c(progress.clone());
    let mut alone = Alone {
        args,
        progress: &progress,
        admin,
        registered: 0,
        stop: stop.clone(),
    };
    let (tally, end) = phones::live(args, bound, &mut alone).await?;
    if let Some(sampler) = sampler {
        sampler.abort();
    }
    let interrupted = *stop.borrow();
    finish(args, tally, end, admin, samples, (1, interrupted)).await
}

/// Runs a storm in as many processes as `--processes` says (in this one by default), and
/// reports: what `rasgk storm` runs.
pub async fn storm_spread(args: &StormArgs) -> Result<Report, StormError> {
    args.check()?;
    let processes = args.processes.unwrap_or(1);
    args.check_open_files(processes, raise_open_files())?;
    match processes {
        1 => storm(args).await,
        processes => storm_in_processes(args, processes).await,
    }
}

/// Runs a storm in `processes` child processes and reports their sum.
async fn storm_in_processes(args: &StormArgs, processes: usize) -> Result<Report, StormError> {
    let admin = admin_answering(args).await;
    let progress = progress_bar(args.phones);
    let stop = interrupt::on_ctrl_c(progress.clone());
    let mut fleet = Fleet::spawn(args, processes).await?;
    let started = fleet.start(&progress).await?;
    let (sampler, samples) = sample_load(admin, started);
    // Ctrl-C cuts any of these waits short: `end` then goes to every child at once.
    let mut interrupted = stop.clone();
    let interrupted = interrupted.wait_for(|yes| *yes);
    tokio::pin!(interrupted);
    let mut calling = true;
    if let Some(schedule) = calls::Schedule::of(args) {
        tokio::select! {
            started = fleet.start_calls(&progress, schedule.expected()) => calling = started?,
            _ = &mut interrupted => {}
        }
    }
    if calling && !*stop.borrow() {
        tokio::select! {
            held = fleet.registered(&progress) => held?,
            _ = &mut interrupted => {}
        }
    }
    let end = AtTheEnd::read(admin, args).await;
    progress.finish_and_clear();
    let tally = fleet.end(&progress).await?;
    if let Some(sampler) = sampler {
        sampler.abort();
    }
    let interrupted = *stop.borrow();
    finish(args, tally, end, admin, samples, (processes, interrupted)).await
}

/// The phones refused for good, by rejection, with who holds their aliases when the
/// admin port lists them.
async fn refused(tally: &Tally, admin: Option<SocketAddr>) -> BTreeMap<String, report::Refused> {
    if tally.refused.is_empty() {
        return BTreeMap::new();
    }
    let registrations = match admin {
        Some(admin) => {
            let read = tokio::task::spawn_blocking(move || {
                crate::admin_client::get_json(admin, "/api/registrations")
            });
            read.await.ok().and_then(Result::ok).and_then(|body| {
                serde_json::from_str::<Vec<crate::gatekeeper::RegistrationView>>(&body).ok()
            })
        }
        None => None,
    };
    tally
        .refused
        .iter()
        .map(|(reject, phones)| {
            let refused = report::Refused::of(
                reject,
                phones.phones,
                &phones.examples,
                registrations.as_deref(),
                admin,
            );
            (reject.clone(), refused)
        })
        .collect()
}

/// The report of a storm's tally, with the load read at its end, and its files.
async fn finish(
    args: &StormArgs,
    tally: Tally,
    end: AtTheEnd,
    admin: Option<SocketAddr>,
    samples: Arc<Mutex<Vec<LoadSample>>>,
    (processes, interrupted): (usize, bool),
) -> Result<Report, StormError> {
    let trunk_nodes = match (admin, args.calls > 0) {
        (Some(admin), true) => trunk_totals(admin).await,
        _ => None,
    };
    let registration_s = tally.registration_s();
    let refused = refused(&tally, admin).await;
    let (clans, regions, clans_source) = match end.load {
        Some(Load { clans, regions, .. }) => (clans, regions, "admin"),
        None => (tally.phone_clans.clone(), BTreeMap::new(), "phones"),
    };
    let load = samples.lock().map(|s| s.clone()).unwrap_or_default();
    let routed_calls = args
        .calls_per_s
        .map(|per_s| RoutedCalls::of(per_s, &tally, &load, end.routed_calls));
    let [tts_service, non_tts_service, all_service] = tally.service_histograms();
    let in_service = tally
        .sockets_in_service_per_100ms
        .iter()
        .enumerate()
        .map(|(slot, &sockets)| InServiceSample {
            t: slot as f64 / 10.0,
            sockets,
        })
        .collect();
    let report = Report {
        sockets: args.sockets,
        time_to_service_ms: Latency::of(&all_service),
        tts_time_to_service_ms: Latency::of(&tts_service),
        non_tts_time_to_service_ms: Latency::of(&non_tts_service),
        time_to_service_count: tally.non_tts_service_us.len() + tally.tts_service_us.len(),
        phones_without_socket: tally.phones_without_socket(),
        connections_rejected: tally.connections_rejected,
        sockets_closed_by_gatekeeper: tally.sockets_closed_by_gatekeeper,
        tts_connections_accepted: tally.tts_connections_accepted,
        tts_connections_closed: tally.tts_connections_closed,
        in_service,
        phones: tally.phones,
        processes,
        registered: tally.registered,
        unregistered_never: tally.phones - tally.registered,
        retransmissions: tally.retransmissions,
        dropped: tally.dropped,
        gatekeeper_urqs: tally.gatekeeper_urqs,
        unregistered: tally.unregistered,
        unregister_failed: tally.unregister_failed,
        left_registered: args.leave_registered,
        interrupted,
        refused,
        registration_s,
        service_s: tally.service_s(),
        rate_per_s: if registration_s > 0.0 {
            tally.registered as f64 / registration_s
        } else {
            0.0
        },
        latency_ms: Latency::of(&tally.histogram()),
        clans,
        clans_source,
        regions,
        load,
        routed_calls,
        calls: tally.calls,
        calls_refused: tally.calls_refused,
        trunk_calls_per_node: trunk_nodes.unwrap_or_default(),
        seed: args.seed,
        loss: args.loss,
        rejected: tally.rejected,
        registered_at: tally.registered_at,
        calls_per_node: tally.calls_per_node,
        sockets_held: tally.sockets_held,
        socket_errors: tally.socket_errors,
    };
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

/// `rasgk storm`: runs (in as many processes as it needs), prints the table (or JSON), exit
/// 0 when every phone registered (and every routed call connected), 1 when some did not, 2
/// when the storm could not run.
pub fn run(args: StormArgs) -> ExitCode {
    if let Some(share) = args.shard {
        return shard::run(share);
    }
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("rasgk storm: cannot start the runtime: {error}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(storm_spread(&args)) {
        Ok(report) => {
            if args.json {
                eprint!("{}", report.table());
                println!("{}", serde_json::to_string(&report).unwrap_or_default());
            } else {
                print!("{}", report.table());
            }
            let calls_failed = report
                .routed_calls
                .as_ref()
                .is_some_and(|calls| calls.counts.connected < calls.counts.placed);
            if report.registered == report.phones && !calls_failed {
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The storm's options as `rasgk storm LINE` parses them.
    pub(super) fn args(line: &str) -> StormArgs {
        #[derive(Parser)]
        struct Command {
            #[command(flatten)]
            storm: StormArgs,
        }
        let words = std::iter::once("rasgk storm").chain(line.split_whitespace());
        Command::try_parse_from(words).unwrap().storm
    }

    #[test]
    fn every_phone_has_an_address_of_its_own_in_its_region_even_when_a_region_is_listed_twice() {
        for (family, target) in [("", "127.0.0.1:1719"), ("--ipv6", "[fd00::100]:1719")] {
            let storm = args(&format!(
                "--target {target} --phones 1000 --regions 1,1,2 {family}"
            ));
            assert!(storm.check().is_ok());
            let phones = storm.phones();
            let ips: std::collections::HashSet<IpAddr> = phones.iter().map(|p| p.0).collect();
            assert_eq!(ips.len(), 1000, "one address a phone: they share a port");
            for (i, (ip, phone, _)) in phones.iter().enumerate() {
                let region = match ip {
                    IpAddr::V4(ip) => ip.octets()[1].to_string(),
                    IpAddr::V6(ip) => format!("{:x}", ip.segments()[2]),
                };
                assert_eq!(region, [1, 1, 2][i % 3].to_string(), "phone {i}'s region");
                assert_eq!(phone.ras_address.ip(), *ip);
                assert_eq!(crate::config::Family::of(*ip), storm.family());
            }
            // Region 1 has 667 phones: 127.1.1.1 to 127.1.1.250, 127.1.2.1 …, 127.1.3.167.
            assert_eq!(
                roster::fullest_region(&storm.regions, storm.phones),
                Some((1, 667))
            );
            let (last, next) = if storm.ipv6 {
                ("fd00:0:1::3:167", "fd00:0:1::3:168")
            } else {
                ("127.1.3.167", "127.1.3.168")
            };
            assert!(ips.contains(&last.parse().unwrap()));
            assert!(!ips.contains(&next.parse().unwrap()));
        }
    }

    #[test]
    fn the_phones_family_and_the_targets_must_agree() {
        let error = args("--ipv6 --phones 3").check().unwrap_err().to_string();
        assert!(
            error.contains("--target 127.0.0.1:1719 is IPv4, but --ipv6 phones"),
            "{error}"
        );
        let error = args("--target [fd00::100]:1719 --phones 3")
            .check()
            .unwrap_err()
            .to_string();
        assert!(error.contains("add --ipv6"), "{error}");
        let error = args("--target [fd00::100]:1719 --ipv6 --phones 127000 --regions 1,1,2")
            .check()
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("phones per region do not fit in fd00:0:R::1:1 to fd00:0:R::254:250"),
            "{error}"
        );
    }

    #[test]
    fn every_phone_gets_the_password_and_one_no_token_can_hold_is_refused() {
        let storm = args("--phones 3 --password s3cret");
        assert!(storm.check().is_ok());
        assert!(storm
            .phones()
            .iter()
            .all(|(_, phone, _)| phone.password.as_deref() == Some("s3cret")));
        let long = args(&format!("--phones 3 --password {}", "x".repeat(128)));
        let error = long.check().unwrap_err().to_string();
        assert!(
            error.starts_with("--password: the password needs 1 to 127"),
            "{error}"
        );
    }

    #[test]
    fn more_phones_than_a_region_has_addresses_are_refused_with_the_reason() {
        let fits = args("--target 127.0.0.1:1719 --phones 127000 --regions 1,2");
        assert!(fits.check().is_ok());
        let twice = args("--target 127.0.0.1:1719 --phones 127000 --regions 1,1,2");
        let error = twice.check().unwrap_err().to_string();
        assert!(
            error.contains("84667 phones per region do not fit in 127.R.1.1 to 127.R.254.250"),
            "{error}"
        );
    }

    #[test]
    fn socket_mode_refuses_more_phones_a_process_than_its_open_files_allow_and_says_how_many_processes_fit(
    ) {
        let storm = args("--phones 40000 --tts-share 0.5 --regions 1,2,3 --sockets");
        assert!(storm.check_open_files(3, Some(20_000)).is_ok());
        let error = storm
            .check_open_files(2, Some(20_000))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("20000 phones in a storm process need 20064 open files")
                && error.contains("--processes 3 or more"),
            "{error}"
        );
        let counting = args("--phones 40000 --regions 1,2,3");
        assert!(
            counting.check_open_files(1, Some(64)).is_ok(),
            "no sockets, no limit"
        );
        let delayed = args("--phones 10 --accept-delay-ms 5");
        let error = delayed.check().unwrap_err().to_string();
        assert!(
            error.contains("--accept-delay-ms is for --sockets"),
            "{error}"
        );
    }

    /// A fake gatekeeper for a socket-mode storm: answers GRQ with a GCF naming itself and
    /// RRQ with an RCF naming `clan` as callSignalAddress, and after each full RCF connects
    /// from the C-LAN's IP to the phone's callSignalAddress (as to a TTS phone; a non-TTS
    /// phone's listener closes it) and writes the empty TPKT frame. `clan` resets each
    /// phone's first connection and puts its second in service.
    async fn fake_gatekeeper(ras: tokio::net::UdpSocket, clan: tokio::net::TcpListener) {
        use crate::ras::hot_reply::{self, RcfParts};
        use crate::ras::reply::{EndpointId, GatekeeperId};
        use crate::ras::RasMessage;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let signal_address = clan.local_addr().unwrap();
        tokio::spawn(async move {
            let mut seen = std::collections::HashSet::new();
            while let Ok((mut stream, from)) = clan.accept().await {
                if seen.insert(from.ip()) {
                    let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
                    continue; // dropped: reset
                }
                tokio::spawn(async move {
                    let _ = stream.write_all(&signalling::SERVICE_FRAME).await;
                    let _ = stream.read(&mut [0u8; 16]).await; // held until the phone closes
                });
            }
        });
        let gatekeeper = GatekeeperId::new("fake").unwrap();
        let own = ras.local_addr().unwrap();
        let mut buffer = [0u8; 2048];
        let mut endpoints = 0u32;
        loop {
            let Ok((len, from)) = ras.recv_from(&mut buffer).await else {
                return;
            };
            let Ok(message) = crate::ras::decode(&buffer[..len]) else {
                continue;
            };
            let seq = crate::ras::request_seq_num(&message);
            let mut out = Vec::new();
            match message {
                RasMessage::gatekeeperRequest(_) => {
                    hot_reply::gatekeeper_confirm(&mut out, seq, gatekeeper.octets(), own);
                }
                RasMessage::registrationRequest(rrq) => {
                    endpoints += 1;
                    let endpoint = EndpointId::new(&format!("EP{endpoints}")).unwrap();
                    let endpoint = endpoint.asn().0.to_bytes();
                    hot_reply::registration_confirm(
                        &mut out,
                        &RcfParts {
                            request_seq_num: seq,
                            gatekeeper_id: gatekeeper.octets(),
                            endpoint_id: &endpoint,
                            call_signal_address: &[signal_address],
                            aliases: &crate::ras::PackedAliases::default(),
                            time_to_live_s: Some(300),
                            agl: None,
                            // It writes the service frame.
                            service_frame: true,
                        },
                    );
                    let phone = rrq
                        .call_signal_address
                        .first()
                        .and_then(crate::ras::socket_addr);
                    if let (None | Some(false), Some(phone)) = (rrq.keep_alive, phone) {
                        tokio::spawn(async move {
                            let socket = tokio::net::TcpSocket::new_v4().unwrap();
                            socket
                                .bind(SocketAddr::new(signal_address.ip(), 0))
                                .unwrap();
                            let Ok(mut stream) = socket.connect(phone).await else {
                                return;
                            };
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            let _ = stream.write_all(&signalling::SERVICE_FRAME).await;
                            let _ = stream.read(&mut [0u8; 16]).await;
                        });
                    }
                }
                RasMessage::unregistrationRequest(_) => {
                    out = crate::ras::encode(&crate::ras::reply::unregistration_confirm(seq))
                        .unwrap();
                }
                _ => continue,
            }
            let _ = ras.send_to(&out, from).await;
        }
    }

    #[tokio::test]
    async fn a_socket_mode_storm_holds_a_socket_a_phone_and_reports_them() {
        let ras = tokio::net::UdpSocket::bind("127.0.9.20:0").await.unwrap();
        let target = ras.local_addr().unwrap();
        let clan = tokio::net::TcpListener::bind("127.0.9.21:0").await.unwrap();
        let signal_address = clan.local_addr().unwrap();
        let gatekeeper = tokio::spawn(fake_gatekeeper(ras, clan));
        let storm_args = args(&format!(
            "--target {target} --admin 127.0.9.20:9 --phones 6 --tts-share 0.5 --regions 19 \
             --sockets --give-up-s 20 --duration 1.5 --timeout-ms 500 --unregister"
        ));
        let report = tokio::time::timeout(Duration::from_secs(60), storm(&storm_args))
            .await
            .expect("the storm ends")
            .unwrap();
        gatekeeper.abort();
        eprint!("{}", report.table());
        assert_eq!(report.registered, 6, "{}", report.table());
        assert!(report.sockets);
        assert_eq!(
            report.sockets_held,
            [(signal_address.to_string(), 6)].into(),
            "non-TTS phones at the C-LAN they connected to, TTS ones named by its IP: {}",
            report.table()
        );
        assert_eq!(report.phones_without_socket, 0);
        assert_eq!(
            report.connections_rejected, 3,
            "each non-TTS phone reset once"
        );
        assert_eq!(report.sockets_closed_by_gatekeeper, 0);
        assert_eq!(report.tts_connections_accepted, 3);
        assert_eq!(
            report.tts_connections_closed, 3,
            "those made to non-TTS phones"
        );
        assert_eq!(report.time_to_service_count, 6);
        assert!(report.tts_time_to_service_ms.p50 >= 20.0, "{report:?}");
        assert!(
            report.non_tts_time_to_service_ms.p50 >= 25.0,
            "a back-off: {report:?}"
        );
        assert!(
            report.socket_errors.is_empty(),
            "{:?}",
            report.socket_errors
        );
        let most = report.in_service.iter().map(|s| s.sockets).max();
        assert_eq!(most, Some(6), "{:?}", report.in_service);
        assert!(report
            .table()
            .contains("3 connections rejected busy or refused"));
        assert_eq!(report.unregistered, 6);
    }
}
