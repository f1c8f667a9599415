//! `rasgk bench`: every speed and scale figure of the performance targets, measured in one
//! run and printed in one block, each beside its target.
//!
//! ```text
//!   ceiling  GRQ, full RRQ, keep-alive: rasgk / UDP echo under a client
//!            that saturates each (its own process), costs from /proc    ceiling.rs,
//!            ceiling_client.rs, bare_echo.rs, cpu_time.rs, affinity.rs, watchers.rs
//!   storm    40,000 phones, first GRQ to last RCF, none lost or doubled storm.rs
//!   memory   resident bytes per registration at 100,000                memory.rs
//!   scale    core time per GRQ at 10,000 C-LANs / at 64                 scale.rs
//!   sockets  socket mode: 6,000-phone storm to the last socket in service,
//!            TTS time to service, and why TTS exists (setup_ms = 20)     sockets.rs
//!   placement  2,000-phone burst, 30 % TTS: non-TTS phones placed as
//!            without the TTS phones (core only, virtual time)           placement.rs
//!   plan     `rasgk plan`: 40,000 phones over 24 virtual hours, a C-LAN
//!            fault every hour, wall time                                plan.rs
//!   calls    routed calls at scale: 5,000 calls at once between 10,000 phones
//!            (storm processes), set-ups a second sustained              calls.rs
//!   relay    routed calls: pairs of phones in a closed loop of calls through
//!            rasgk and through a minimal frame forwarder: set-ups a
//!            second, message rate against the forwarder, Setup → Connect
//!            added at p99                                               relay.rs
//! ```
//!
//! The block ends with one `ratio WORKLOAD VALUE` line per workload for scripts; `--check`
//! makes a target not met exit 1.

pub mod affinity;
pub mod bare_echo;
pub mod calls;
pub mod ceiling;
mod ceiling_client;
pub mod cpu_time;
mod forwarder;
pub mod memory;
pub mod placement;
pub mod plan;
pub mod relay;
pub mod scale;
pub mod sockets;
pub mod storm;
pub mod watchers;

use std::fmt::Write as _;
use std::process::ExitCode;

use calls::Concurrent;
use ceiling::{Ceiling, CeilingArgs, FamilyRatio, Workload};
use placement::Placement;
use plan::PlanScale;
use relay::Relay;
use scale::Scale;
use sockets::Sockets;
use storm::Storm;
use watchers::Watched;

/// `rasgk bench` options.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Phones of the echo ceiling's load client for each side, each on its own address (1 to
    /// 10,000).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub concurrency: usize,
    /// Requests each of those phones keeps in flight (1 to 64): enough that the server
    /// measured never waits for the client.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub window: usize,
    /// Seconds of echo-ceiling measurement per workload and side, in 16 alternating slices
    /// (after a 0.3 s start and 50 ms of warm-up a slice).
    #[arg(long, value_name = "S", default_value_t = 8.0)]
    pub seconds: f64,
    /// Phones in the registration storm (0: no storm).
    #[arg(long, value_name = "N", default_value_t = 40_000)]
    pub storm_phones: usize,
    /// Registrations the memory figure is read at (0: no memory figure).
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub registrations: usize,
    /// GRQs a slice for the policy's scale (5 slices at each of 64, 1,024 and 10,000
    /// C-LANs; 0: no scale figure).
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub grqs: usize,
    /// Phones in the socket-mode storm (half TTS; half as many in each of the TTS and
    /// setup_ms = 20 runs; 0: no socket-mode figures).
    #[arg(long, value_name = "N", default_value_t = 6_000)]
    pub socket_phones: usize,
    /// Phones in the placement burst of region-1 phones, 30 % TTS, on the default topology
    /// (0: no placement figure).
    #[arg(long, value_name = "N", default_value_t = placement::PHONES)]
    pub placement_phones: usize,
    /// Phones of the planner's day: `rasgk plan` over 24 virtual hours with a C-LAN fault
    /// every hour (0: no planner figure).
    #[arg(long, value_name = "N", default_value_t = plan::PHONES)]
    pub plan_phones: usize,
    /// Phones of the routed calls at scale: half of them call the other half through the
    /// relay, every call up at once (0: no such figure).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub call_phones: usize,
    /// Pairs of phones calling each other through the routed relay, and through a minimal
    /// frame forwarder for comparison, each pair a call at a time (0: no relay figures).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub relay_pairs: usize,
    /// Exit 1 when a figure misses its target (2 when the bench cannot run).
    #[arg(long)]
    pub check: bool,
    /// Run as the echo ceiling's load client (the bench starts it; orders on standard input).
    #[arg(long, hide = true)]
    pub ceiling_client: bool,
}

/// A responder for one part of the bench, run as `rasgk serve` runs the gatekeeper: on a
/// thread of its own with [`server::runtime`](crate::server::runtime), until
/// [`stop`](Serving::stop).
struct Serving {
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
    /// Its thread's id, for its CPU time in `/proc`.
    tid: i32,
}

impl Serving {
    /// Binds `config`'s sockets and serves; `what` names the gatekeeper in the error when
    /// it cannot start.
    async fn start(config: crate::config::Config, what: &str) -> Result<Serving, String> {
        let what = what.to_string();
        Serving::on_own_thread("rasgk-gatekeeper", move |stopped| async move {
            let server = crate::server::Server::bind(config)
                .await
                .map_err(|e| format!("cannot start {what}: {e}"))?;
            Ok(server.run(async {
                let _ = stopped.await;
            }))
        })
        .await
    }

    /// Starts on a new thread named `name` what `start` sets up (within that thread's
    /// runtime, so its sockets belong to it) and then runs the future it gives, which must
    /// end once the receiver it was handed hears.
    async fn on_own_thread<S, F, R>(name: &str, start: S) -> Result<Serving, String>
    where
        S: FnOnce(tokio::sync::oneshot::Receiver<()>) -> F + Send + 'static,
        F: std::future::Future<Output = Result<R, String>>,
        R: std::future::Future<Output = ()>,
    {
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let (ready, started) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let runtime = match crate::server::runtime() {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready.send(Err(format!("cannot start a runtime: {e}")));
                        return;
                    }
                };
                let tid = cpu_time::this_thread();
                runtime.block_on(async move {
                    match start(stopped).await {
                        Ok(serving) => {
                            let _ = ready.send(Ok(tid));
                            serving.await;
                        }
                        Err(e) => {
                            let _ = ready.send(Err(e));
                        }
                    }
                });
            })
            .map_err(|e| format!("cannot start a thread for {name}: {e}"))?;
        match started.await {
            Ok(Ok(tid)) => Ok(Serving { stop, thread, tid }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(format!("{name} ended while starting")),
        }
    }

    /// Stops it and waits until it has.
    async fn stop(self) {
        let _ = self.stop.send(());
        let thread = self.thread;
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    }
}

/// Most storm phones (every phone an address of 127.R.x.y, three regions).
const MAX_STORM_PHONES: usize = 1_000_000;

/// Most socket-mode storm phones: the gatekeeper and the phones share this process, and
/// each phone's socket is a descriptor on both sides (the hard limit here is 20,000).
const MAX_SOCKET_PHONES: usize = 9_000;

/// Most phones of the planner's day (three regions of 250 × 255 addresses each).
const MAX_PLAN_PHONES: usize = 150_000;

/// Most placement-burst phones (one address of 127.1.0.0/16 each).
const MAX_PLACEMENT_PHONES: usize = 60_000;

/// Everything one run measured; a part not asked for is `None`.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// Each workload against the echo ceiling.
    pub ceilings: Vec<Ceiling>,
    /// What rasgk's watchers saw during the ceiling.
    pub watched: Option<Watched>,
    /// GRQ over IPv6 against GRQ over IPv4.
    pub families: Option<FamilyRatio>,
    /// The registration storm.
    pub storm: Option<Storm>,
    /// Resident bytes per registration, and at how many registrations.
    pub memory: Option<(f64, usize)>,
    /// Core time per GRQ at each C-LAN count.
    pub scale: Option<Scale>,
    /// Socket mode's storms.
    pub sockets: Option<Sockets>,
    /// Where a burst's non-TTS phones end beside TTS phones.
    pub placement: Option<Placement>,
    /// The planner's day.
    pub plan: Option<PlanScale>,
    /// Routed calls at scale.
    pub calls: Option<Concurrent>,
    /// Routed calls through the relay against the forwarder.
    pub relay: Option<Relay>,
}

/// The performance targets (docs/performance.md).
pub mod targets {
    /// rasgk / echo for GRQ and for keep-alives.
    pub const LIGHT_RATIO: f64 = 0.8;
    /// rasgk / echo for full RRQs.
    pub const FULL_RRQ_RATIO: f64 = 0.6;
    /// Seconds from the first GRQ to the last RCF of the storm.
    pub const STORM_S: f64 = 2.0;
    /// The storm's transactions a second over rasgk's GRQs a second under the echo ceiling's client.
    pub const STORM_RATIO: f64 = 0.6;
    /// Storms run, the median taken.
    pub const STORM_RUNS: usize = 3;
    /// Resident bytes per registration.
    pub const BYTES_PER_REGISTRATION: f64 = 256.0;
    /// Core time per GRQ at 10,000 C-LANs over that at 64.
    pub const SCALE: f64 = 2.0;
    /// Seconds from the first GRQ to the last socket in service of the socket-mode storm.
    pub const SOCKET_STORM_S: f64 = 2.0;
    /// 99th percentile of TTS time to service, milliseconds, phones accepting at once.
    pub const TTS_P99_MS: f64 = 100.0;
    /// Socket establishments in progress at once on one C-LAN (Avaya's five).
    pub const SETUPS_PER_CLAN: u32 = 5;
    /// Non-TTS phones of the placement burst placed otherwise than without its TTS phones.
    pub const PLACEMENT_MOVED: u32 = 0;
    /// Wall seconds of the planner's day (40,000 phones, 24 virtual hours, hourly faults).
    pub const PLAN_S: f64 = 10.0;
    /// Routed calls set up a second, sustained.
    pub const CALL_SETUPS_PER_S: f64 = 1_000.0;
    /// The relay's message rate over the minimal forwarder's.
    pub const RELAY_RATIO: f64 = 0.7;
    /// What the relay adds to the forwarder's Setup → Connect at p99, milliseconds.
    pub const RELAY_ADDED_P99_MS: f64 = 5.0;
    /// GRQs a second over IPv6 over those over IPv4.
    pub const IPV6_GRQ_RATIO: f64 = 0.95;
    /// rasgk / bare echo for GRQ.
    pub const BARE_GRQ_RATIO: f64 = 0.93;
    /// rasgk / bare echo for full RRQs and keep-alives.
    pub const BARE_RRQ_RATIO: f64 = 0.88;
    /// The least share of its slices the bare echo's thread is on a CPU: the load client
    /// saturates it.
    pub const ECHO_BUSY: f64 = 0.90;
    /// The load client's share of its CPU during the bare echo's slices is below this: it
    /// had time to spare, so the echo, not the client, bounds the figure.
    pub const CLIENT_BUSY: f64 = 0.90;
}

/// The least ratio rasgk / bare echo a workload must reach.
pub fn bare_ratio_target(workload: Workload) -> f64 {
    match workload {
        Workload::Grq => targets::BARE_GRQ_RATIO,
        Workload::FullRrq | Workload::KeepAlive => targets::BARE_RRQ_RATIO,
    }
}

/// The least ratio rasgk / echo a workload must reach.
pub fn ratio_target(workload: Workload) -> f64 {
    match workload {
        Workload::FullRrq => targets::FULL_RRQ_RATIO,
        Workload::Grq | Workload::KeepAlive => targets::LIGHT_RATIO,
    }
}

/// One figure against its target.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// What was measured.
    pub name: String,
    /// Its value, as printed.
    pub figure: String,
    /// The target, as printed.
    pub target: String,
    /// Whether the figure meets it.
    pub met: bool,
}

impl Figures {
    /// The storm's transactions a second (its median run's) over rasgk's GRQs
    /// a second, both of this run; `None` without either.
    pub fn storm_ratio(&self) -> Option<f64> {
        let storm = self.storm.as_ref()?;
        let grq = self
            .ceilings
            .iter()
            .find(|c| c.workload == Workload::Grq)
            .filter(|c| c.rasgk > 0.0)?;
        Some(storm.transactions_per_s() / grq.rasgk)
    }

    /// Whether the load client saturated the bare echo in every workload: the echo's thread
    /// on a CPU nearly all its slices, the client not (`None` without figures from `/proc`).
    fn saturation(&self) -> Option<Verdict> {
        let echoes: Vec<&ceiling::SideLoad> = self
            .ceilings
            .iter()
            .filter_map(|c| c.loads.first())
            .collect();
        if echoes.is_empty() {
            return None;
        }
        let least_busy = echoes.iter().map(|l| l.busy).fold(f64::INFINITY, f64::min);
        let busiest_client = echoes.iter().map(|l| l.client_busy).fold(0.0, f64::max);
        Some(Verdict {
            name: "ceiling client saturates the bare echo".into(),
            figure: format!(
                "echo {:.0} %, client {:.0} %",
                least_busy * 100.0,
                busiest_client * 100.0
            ),
            target: format!(
                "echo >= {:.0} %, client < {:.0} %",
                targets::ECHO_BUSY * 100.0,
                targets::CLIENT_BUSY * 100.0
            ),
            met: least_busy >= targets::ECHO_BUSY && busiest_client < targets::CLIENT_BUSY,
        })
    }

    /// Every figure measured against its target, in the block's order.
    pub fn verdicts(&self) -> Vec<Verdict> {
        let mut verdicts: Vec<Verdict> = self
            .ceilings
            .iter()
            .map(|c| {
                let target = ratio_target(c.workload);
                Verdict {
                    name: format!("{} ratio rasgk / echo", c.workload.name()),
                    figure: format!("{:.2}", c.ratio()),
                    target: format!(">= {target:.1}"),
                    met: c.ratio() >= target,
                }
            })
            .collect();
        verdicts.extend(self.ceilings.iter().filter(|c| c.bare > 0.0).map(|c| {
            let target = bare_ratio_target(c.workload);
            Verdict {
                name: format!("{} ratio rasgk / bare echo", c.workload.name()),
                figure: format!("{:.2}", c.bare_ratio()),
                target: format!(">= {target:.2}"),
                met: c.bare_ratio() >= target,
            }
        }));
        verdicts.extend(self.saturation());
        if self.ceilings.iter().any(|c| !c.loads.is_empty()) {
            let wrong: u64 = self
                .ceilings
                .iter()
                .flat_map(|c| &c.loads)
                .map(|l| l.wrong)
                .sum();
            verdicts.push(Verdict {
                name: "ceiling: answers of another kind".into(),
                figure: wrong.to_string(),
                target: "0 (GCF, RCF or the echo)".into(),
                met: wrong == 0,
            });
        }
        if let Some(watched) = &self.watched {
            verdicts.push(Verdict {
                name: "ceiling: replies from the retransmission cache".into(),
                figure: watched.retransmissions.to_string(),
                target: "0 (every request new)".into(),
                met: watched.retransmissions == 0,
            });
        }
        if let Some(families) = &self.families {
            verdicts.push(Verdict {
                name: "GRQ over IPv6 / over IPv4".into(),
                figure: format!("{:.2}", families.ratio()),
                target: format!(">= {:.2}", targets::IPV6_GRQ_RATIO),
                met: families.ratio() >= targets::IPV6_GRQ_RATIO,
            });
        }
        if let Some(storm) = &self.storm {
            verdicts.push(Verdict {
                name: format!("storm of {} phones", storm.phones),
                figure: format!(
                    "{:.2} s, {} lost, {} doubled",
                    storm.seconds,
                    storm.lost(),
                    storm.doubled()
                ),
                target: format!("<= {} s, none lost or doubled", targets::STORM_S),
                met: storm.whole() && storm.seconds <= targets::STORM_S,
            });
            if let Some(ratio) = self.storm_ratio() {
                verdicts.push(Verdict {
                    name: "storm tx/s / ceiling GRQ tx/s".into(),
                    figure: format!("{ratio:.2}"),
                    target: format!(">= {:.1}", targets::STORM_RATIO),
                    met: storm.whole() && ratio >= targets::STORM_RATIO,
                });
            }
        }
        if let Some((bytes, _)) = self.memory {
            verdicts.push(Verdict {
                name: "resident bytes per registration".into(),
                figure: format!("{bytes:.0}"),
                target: format!("<= {}", targets::BYTES_PER_REGISTRATION),
                met: bytes <= targets::BYTES_PER_REGISTRATION,
            });
        }
        if let Some(scale) = &self.scale {
            verdicts.push(Verdict {
                name: "core time per GRQ, most / fewest C-LANs".into(),
                figure: format!("{:.2}", scale.ratio()),
                target: format!("<= {}", targets::SCALE),
                met: scale.ratio() <= targets::SCALE,
            });
        }
        if let Some(sockets) = &self.sockets {
            let storm = &sockets.storm;
            verdicts.push(Verdict {
                name: format!("socket storm of {} phones", storm.phones),
                figure: format!(
                    "{:.2} s, {} without a socket",
                    storm.service_s,
                    storm.phones - storm.in_service.min(storm.phones)
                ),
                target: format!("<= {} s, every phone in service", targets::SOCKET_STORM_S),
                met: storm.whole() && storm.service_s <= targets::SOCKET_STORM_S,
            });
            let tts = &sockets.tts;
            verdicts.push(Verdict {
                name: format!("TTS time to service p99, {} phones", tts.phones),
                figure: format!("{:.1} ms", tts.time_to_service_ms.1),
                target: format!("<= {} ms, every phone in service", targets::TTS_P99_MS),
                met: tts.whole() && tts.time_to_service_ms.1 <= targets::TTS_P99_MS,
            });
            let [other, all_tts] = &sockets.why_tts;
            verdicts.push(Verdict {
                name: "setup_ms 20: most establishments a C-LAN".into(),
                figure: format!("{} non-TTS, {} TTS", other.most_setups, all_tts.most_setups),
                target: format!(
                    "<= {} each, every phone in service",
                    targets::SETUPS_PER_CLAN
                ),
                met: other.whole()
                    && all_tts.whole()
                    && other.most_setups <= targets::SETUPS_PER_CLAN
                    && all_tts.most_setups <= targets::SETUPS_PER_CLAN,
            });
            let [at_once, paced] = &sockets.agreement;
            let apart = |a: &sockets::Agreement| {
                let off = |live: f64, plan: f64| 100.0 * (plan - live) / live.max(1e-9);
                format!(
                    "{:+.0} %, {:+.0} %",
                    off(a.live.0, a.plan.0),
                    off(a.live.1, a.plan.1)
                )
            };
            verdicts.push(Verdict {
                name: "setup_ms 20: plan vs live p50, p99".into(),
                figure: format!("TTS {}; non-TTS {}", apart(at_once), apart(paced)),
                target: format!("each within {:.0} %", 100.0 * sockets::AGREEMENT),
                met: at_once.agrees() && paced.agrees() && sockets.why_tts[1].whole(),
            });
        }
        if let Some(placement) = &self.placement {
            verdicts.push(Verdict {
                name: format!(
                    "burst of {}, {} % TTS: non-TTS moved",
                    placement.phones, placement.tts_percent
                ),
                figure: format!(
                    "{}, {} refused",
                    placement.moved(),
                    placement.with_tts.refused
                ),
                target: format!("{}, none refused", targets::PLACEMENT_MOVED),
                met: placement.moved() == targets::PLACEMENT_MOVED
                    && placement.with_tts.refused == 0,
            });
        }
        if let Some(plan) = &self.plan {
            verdicts.push(Verdict {
                name: format!("plan: {} phones, {} virtual h", plan.phones, plan.hours),
                figure: format!("{:.2} s, {} in service", plan.seconds, plan.in_service),
                target: format!("<= {} s, every phone in service", targets::PLAN_S),
                met: plan.seconds <= targets::PLAN_S && plan.in_service == plan.phones,
            });
        }
        if let Some(calls) = &self.calls {
            verdicts.push(Verdict {
                name: format!("calls: {} at once, {} phones", calls.calls, calls.phones),
                figure: format!(
                    "{} at once, {} connected, {} failed",
                    calls.peak_active, calls.connected, calls.failed
                ),
                target: format!("{} at once, all connected", calls.calls),
                met: calls.whole(),
            });
            verdicts.push(Verdict {
                name: "calls: set-ups a second sustained".into(),
                figure: format!("{:.0}", calls.setups_per_s),
                target: format!(">= {:.0}, all connected", targets::CALL_SETUPS_PER_S),
                met: calls.setups_per_s >= targets::CALL_SETUPS_PER_S && calls.whole(),
            });
        }
        if let Some(relay) = &self.relay {
            let setups = relay.rasgk.calls_per_s();
            verdicts.push(Verdict {
                name: format!("relay: closed-loop calls a second, {} pairs", relay.pairs),
                figure: format!("{setups:.0}, {} failed", relay.rasgk.failed),
                target: format!(">= {:.0}, none failed", targets::CALL_SETUPS_PER_S),
                met: setups >= targets::CALL_SETUPS_PER_S && relay.rasgk.failed == 0,
            });
            verdicts.push(Verdict {
                name: "relay: message rate / forwarder".into(),
                figure: format!("{:.2}", relay.ratio()),
                target: format!(">= {:.1}", targets::RELAY_RATIO),
                met: relay.ratio() >= targets::RELAY_RATIO && relay.whole(),
            });
            verdicts.push(Verdict {
                name: "relay: Setup → Connect added at p99".into(),
                figure: format!("{:.2} ms", relay.added_p99_ms()),
                target: format!("<= {:.0} ms", targets::RELAY_ADDED_P99_MS),
                met: relay.added_p99_ms() <= targets::RELAY_ADDED_P99_MS && relay.whole(),
            });
        }
        verdicts
    }

    /// The block of figures, then each against its target, then the `ratio` lines.
    pub fn block(&self, args: &BenchArgs) -> String {
        let mut out = String::new();
        let build = if cfg!(debug_assertions) {
            "a debug build: figures of a release build only mean anything"
        } else {
            "release build"
        };
        let _ = writeln!(out, "rasgk bench: one run on loopback ({build})");
        if !self.ceilings.is_empty() {
            let _ = writeln!(
                out,
                "echo ceiling: a load client in a process of its own, {} phones a side with {} \
                 requests in flight each, every request new; {} s per workload and side in {} \
                 alternating slices",
                args.concurrency,
                args.window,
                args.seconds,
                ceiling::ROUNDS
            );
            let _ = writeln!(
                out,
                "  {:<10} {:>11} {:>11} {:>6}  pairs' ratios",
                "workload", "echo tx/s", "rasgk tx/s", "ratio"
            );
            for c in &self.ceilings {
                let (low, high) = c.spread();
                let _ = writeln!(
                    out,
                    "  {:<10} {:>11.0} {:>11.0} {:>6.2}  {low:.2} to {high:.2}",
                    c.workload.name(),
                    c.echo,
                    c.rasgk,
                    c.ratio(),
                );
            }
            if self.ceilings.iter().any(|c| c.bare > 0.0) {
                let _ = writeln!(
                    out,
                    "against the bare echo (one thread, recvmmsg/sendmmsg in batches of {}, no \
                     runtime), in the same rounds:",
                    bare_echo::BATCH
                );
                for c in self.ceilings.iter().filter(|c| c.bare > 0.0) {
                    let (low, high) = c.bare_spread();
                    let _ = writeln!(
                        out,
                        "  bare {:<10} {:>11.0} {:>11.0} {:>6.2}  {low:.2} to {high:.2}",
                        c.workload.name(),
                        c.bare,
                        c.rasgk,
                        c.bare_ratio(),
                    );
                }
            }
        }
        if self.ceilings.iter().any(|c| !c.loads.is_empty()) {
            let _ = writeln!(
                out,
                "what each server's thread cost and how busy it and the load client were, over \
                 their slices (/proc):"
            );
            let _ = writeln!(
                out,
                "  {:<10} {:<10} {:>11} {:>12} {:>12} {:>12} {:>12}",
                "workload", "side", "tx/s", "user us/dg", "sys us/dg", "server busy", "client busy"
            );
            for c in &self.ceilings {
                for (side, load) in ["bare echo", "echo", "rasgk"].iter().zip(&c.loads) {
                    let _ = writeln!(
                        out,
                        "  {:<10} {:<10} {:>11.0} {:>12.2} {:>12.2} {:>11.0} % {:>11.0} %",
                        c.workload.name(),
                        side,
                        load.rate,
                        load.user_us,
                        load.system_us,
                        load.busy * 100.0,
                        load.client_busy * 100.0,
                    );
                }
            }
        }
        if let Some(watched) = &self.watched {
            let _ = writeln!(
                out,
                "rasgk meanwhile: {} replies from the retransmission cache, {} events read from \
                 /api/events, {} scrapes of /metrics",
                watched.retransmissions, watched.events, watched.scrapes
            );
        }
        if let Some(f) = &self.families {
            let _ = writeln!(
                out,
                "ipv6: GRQ over IPv4 {:.0} tx/s, over IPv6 {:.0} tx/s, ratio {:.2} (rounds {:.2} to {:.2})",
                f.ipv4,
                f.ipv6,
                f.ratio(),
                f.pairs.iter().copied().fold(f64::INFINITY, f64::min),
                f.pairs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            );
        }
        if let Some(s) = &self.storm {
            let _ = writeln!(
                out,
                "storm: {} phones in {} process(es), first GRQ to last RCF {:.2} s (median of {}: \
                 {}), {:.0} tx/s, p99 {:.0} ms, \
                 {} retransmissions; {} registered, {} lost; the gatekeeper holds {} \
                 registrations, {} distinct endpoint ids, {} distinct aliases: {} doubled",
                s.phones,
                s.processes,
                s.seconds,
                s.runs_s.len(),
                s.runs_s
                    .iter()
                    .map(|r| format!("{r:.2} s"))
                    .collect::<Vec<_>>()
                    .join(", "),
                s.transactions_per_s(),
                s.p99_ms,
                s.retransmissions,
                s.registered,
                s.lost(),
                s.held,
                s.distinct_ids,
                s.distinct_aliases,
                s.doubled()
            );
        }
        if let Some((bytes, registered)) = self.memory {
            let _ = writeln!(
                out,
                "memory: {bytes:.0} resident bytes per registration at {registered} registrations"
            );
        }
        if let Some(scale) = &self.scale {
            let each: Vec<String> = scale
                .per_grq_us
                .iter()
                .map(|(clans, us)| format!("{us:.2} us at {clans}"))
                .collect();
            let _ = writeln!(
                out,
                "policy: core time per GRQ (median of slices) {} C-LANs",
                each.join(", ")
            );
        }
        if let Some(sockets) = &self.sockets {
            let _ = writeln!(out, "sockets: storm {}", sockets.storm.line());
            let _ = writeln!(out, "sockets: tts {}", sockets.tts.line());
            let [other, all_tts] = &sockets.why_tts;
            let _ = writeln!(out, "sockets: why TTS, non-TTS {}", other.line());
            let _ = writeln!(out, "sockets: why TTS, TTS {}", all_tts.line());
            for agreement in &sockets.agreement {
                let _ = writeln!(out, "sockets: plan vs live, {}", agreement.line());
            }
        }
        if let Some(placement) = &self.placement {
            let _ = writeln!(out, "placement: {}", placement.line());
        }
        if let Some(plan) = &self.plan {
            let _ = writeln!(out, "plan: {}", plan.line());
        }
        if let Some(calls) = &self.calls {
            let _ = writeln!(out, "calls: {}", calls.line());
        }
        if let Some(relay) = &self.relay {
            for (name, side) in [("forwarder", &relay.forwarder), ("rasgk", &relay.rasgk)] {
                let (p50, p99, max) = side.setup_to_connect_ms;
                let _ = writeln!(
                    out,
                    "relay: {name:<9} {} pairs, {:.0} calls/s ({:.0} messages/s), Setup → Connect \
                     p50 {p50:.2} p99 {p99:.2} max {max:.2} ms, {} failed",
                    relay.pairs,
                    side.calls_per_s(),
                    4.0 * side.calls_per_s(),
                    side.failed
                );
            }
        }
        let verdicts = self.verdicts();
        let _ = writeln!(
            out,
            "  {:<40} {:<26} {:<30} verdict",
            "figure", "value", "target"
        );
        for v in &verdicts {
            let verdict = if v.met { "met" } else { "NOT MET" };
            let _ = writeln!(
                out,
                "  {:<40} {:<26} {:<30} {verdict}",
                v.name, v.figure, v.target
            );
        }
        let met = verdicts.iter().filter(|v| v.met).count();
        let _ = writeln!(out, "targets: {met} of {} met", verdicts.len());
        for c in &self.ceilings {
            let _ = writeln!(out, "ratio {} {:.2}", c.workload.name(), c.ratio());
        }
        for c in self.ceilings.iter().filter(|c| c.bare > 0.0) {
            let _ = writeln!(
                out,
                "ratio {}_bare {:.2}",
                c.workload.name(),
                c.bare_ratio()
            );
        }
        if let Some(f) = &self.families {
            let _ = writeln!(out, "ratio grq_ipv6 {:.2}", f.ratio());
        }
        if let Some(ratio) = self.storm_ratio() {
            let _ = writeln!(out, "ratio storm_grq {ratio:.2}");
        }
        if let Some(relay) = &self.relay {
            let _ = writeln!(out, "ratio relay {:.2}", relay.ratio());
        }
        out
    }
}

impl BenchArgs {
    fn check_options(&self) -> Result<(), String> {
        if self.concurrency == 0 || self.concurrency > ceiling::MAX_CONCURRENCY {
            return Err(format!(
                "--concurrency {} is outside 1 to {}",
                self.concurrency,
                ceiling::MAX_CONCURRENCY
            ));
        }
        if self.window == 0 || self.window > ceiling_client::MAX_WINDOW {
            return Err(format!(
                "--window {} is outside 1 to {}",
                self.window,
                ceiling_client::MAX_WINDOW
            ));
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0) {
            return Err(format!("--seconds {} must be above 0", self.seconds));
        }
        if self.socket_phones > MAX_SOCKET_PHONES {
            return Err(format!(
                "--socket-phones {} is over {MAX_SOCKET_PHONES} (one descriptor a phone on \
                 each side, in one process)",
                self.socket_phones
            ));
        }
        if self.plan_phones > MAX_PLAN_PHONES {
            return Err(format!(
                "--plan-phones {} is over {MAX_PLAN_PHONES} (three regions' blocks of \
                 127.R.x.y addresses)",
                self.plan_phones
            ));
        }
        if self.placement_phones > MAX_PLACEMENT_PHONES {
            return Err(format!(
                "--placement-phones {} is over {MAX_PLACEMENT_PHONES} (one address of \
                 127.1.0.0/16 a phone)",
                self.placement_phones
            ));
        }
        if self.call_phones > calls::MAX_PHONES {
            return Err(format!(
                "--call-phones {} is over {} (the room of fixtures/lab/calls-10k.toml)",
                self.call_phones,
                calls::MAX_PHONES
            ));
        }
        if self.relay_pairs > relay::MAX_PAIRS {
            return Err(format!(
                "--relay-pairs {} is over {} (addresses 127.1.45.x to 127.1.46.x)",
                self.relay_pairs,
                relay::MAX_PAIRS
            ));
        }
        if self.storm_phones > MAX_STORM_PHONES {
            return Err(format!(
                "--storm-phones {} is over {MAX_STORM_PHONES}",
                self.storm_phones
            ));
        }
        Ok(())
    }
}

/// Runs every part asked for, saying on standard error what it is doing.
pub async fn measure(args: &BenchArgs) -> Result<Figures, String> {
    // Memory first, on a heap no other part has used yet: memory another part freed would
    // be reused by the registrations and not show in the resident set.
    let memory = blocking_figure(
        args.registrations,
        || format!("memory at {} registrations", args.registrations),
        "the memory measurement failed",
        |count| Ok(memory::per_registration(count)),
    )
    .await?;
    let scale = blocking_figure(
        args.grqs,
        || format!("core time per GRQ at {:?} C-LANs", scale::CLAN_COUNTS),
        "the policy scale measurement failed",
        scale::measure,
    )
    .await?;
    let ceiling_args = CeilingArgs {
        concurrency: args.concurrency,
        window: args.window,
        seconds: args.seconds,
    };
    let ceilings = ceiling::ceilings(&ceiling_args, |workload| {
        eprintln!(
            "rasgk bench: {} against the echo ceiling ({:.1} s)",
            workload.name(),
            ceiling::duration(ceiling::SIDES, args.seconds)
        );
    })
    .await?;
    eprintln!(
        "rasgk bench: GRQ over IPv6 against over IPv4 ({:.1} s)",
        ceiling::duration(2, args.seconds)
    );
    let families = Some(ceiling::grq_families(&ceiling_args).await?);
    let storm = if args.storm_phones > 0 {
        eprintln!(
            "rasgk bench: {} storms of {} phones (fixtures/lab/storm-40k.toml)",
            targets::STORM_RUNS,
            args.storm_phones
        );
        Some(storm::median_of(args.storm_phones, targets::STORM_RUNS).await?)
    } else {
        None
    };
    let sockets = if args.socket_phones > 0 {
        Some(sockets::run(args.socket_phones).await?)
    } else {
        None
    };
    let placement = blocking_figure(
        args.placement_phones,
        || {
            format!(
                "a burst of {} region-1 phones, {} % TTS (default topology)",
                args.placement_phones,
                placement::TTS_PERCENT
            )
        },
        "the placement burst failed",
        placement::measure,
    )
    .await?;
    let plan = blocking_figure(
        args.plan_phones,
        || {
            format!(
                "rasgk plan of {} phones over {} virtual hours, a C-LAN fault every hour",
                args.plan_phones,
                plan::HOURS
            )
        },
        "the planner's day failed",
        plan::run,
    )
    .await?;
    let calls = if args.call_phones > 0 {
        eprintln!(
            "rasgk bench: routed calls at scale, {} phones calling {} others              (fixtures/lab/calls-10k.toml)",
            args.call_phones / 2,
            args.call_phones / 2
        );
        Some(calls::run(args.call_phones).await?)
    } else {
        None
    };
    let relay = if args.relay_pairs > 0 {
        eprintln!(
            "rasgk bench: routed calls, {} pairs through the relay and a frame forwarder ({:.1} s)",
            args.relay_pairs,
            2.0 * args.seconds
        );
        Some(relay::run(args.relay_pairs, args.seconds).await?)
    } else {
        None
    };
    Ok(Figures {
        ceilings: ceilings.workloads,
        watched: Some(ceilings.watched),
        families,
        storm,
        memory,
        scale,
        sockets,
        placement,
        plan,
        calls,
        relay,
    })
}

/// A figure whose measurement blocks a thread, when `count` asks for one: `None` for 0,
/// else `intro` said on standard error and `measure(count)` run off the runtime; a
/// measurement that panicked fails as `failed`, with the panic.
async fn blocking_figure<T: Send + 'static>(
    count: usize,
    intro: impl FnOnce() -> String,
    failed: &str,
    measure: fn(usize) -> Result<T, String>,
) -> Result<Option<T>, String> {
    if count == 0 {
        return Ok(None);
    }
    eprintln!("rasgk bench: {}", intro());
    let figure = tokio::task::spawn_blocking(move || measure(count))
        .await
        .map_err(|e| format!("{failed}: {e}"))??;
    Ok(Some(figure))
}

/// `rasgk bench`.
pub fn run(args: BenchArgs) -> ExitCode {
    if args.ceiling_client {
        return ceiling_client::run();
    }
    if let Err(error) = args.check_options() {
        eprintln!("rasgk bench: {error}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("rasgk bench: cannot start the runtime: {error}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(measure(&args)) {
        Ok(figures) => {
            print!("{}", figures.block(&args));
            let all_met = figures.verdicts().iter().all(|v| v.met);
            if args.check && !all_met {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(error) => {
            eprintln!("rasgk bench: {error}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ceiling(workload: Workload, pairs: &[f64]) -> Ceiling {
        Ceiling {
            workload,
            echo: 100_000.0,
            rasgk: 80_000.0,
            pairs: pairs.to_vec(),
            bare: 0.0,
            bare_pairs: Vec::new(),
            loads: Vec::new(),
        }
    }

    fn figures() -> Figures {
        Figures {
            ceilings: vec![
                ceiling(Workload::Grq, &[0.8, 0.9]),
                ceiling(Workload::FullRrq, &[0.6, 0.6]),
                ceiling(Workload::KeepAlive, &[0.85, 0.95, 0.1]),
            ],
            watched: None,
            storm: Some(Storm {
                phones: 40_000,
                processes: 3,
                seconds: 1.0,
                p99_ms: 650.0,
                registered: 40_000,
                retransmissions: 0,
                held: 40_000,
                distinct_ids: 40_000,
                distinct_aliases: 40_000,
                runs_s: vec![1.0, 0.9, 1.1],
            }),
            memory: Some((256.0, 100_000)),
            scale: Some(Scale {
                per_grq_us: vec![(64, 1.0), (1024, 1.5), (10_000, 2.0)],
            }),
            families: None,
            sockets: None,
            placement: Some(placement::measure(200).unwrap()),
            plan: None,
            calls: None,
            relay: None,
        }
    }

    fn args() -> BenchArgs {
        BenchArgs {
            concurrency: 64,
            window: 4,
            seconds: 4.0,
            storm_phones: 40_000,
            registrations: 100_000,
            grqs: 100_000,
            socket_phones: 0,
            placement_phones: 200,
            plan_phones: 0,
            call_phones: 0,
            relay_pairs: 0,
            check: false,
            ceiling_client: false,
        }
    }

    #[test]
    fn the_ceiling_is_saturated_only_with_a_busy_echo_an_idle_client_and_no_cache_answers() {
        let load = |busy, client_busy| ceiling::SideLoad {
            rate: 300_000.0,
            busy,
            user_us: 0.01,
            system_us: 3.3,
            client_busy,
            wrong: 0,
        };
        let mut figures = figures();
        for c in &mut figures.ceilings {
            c.loads = vec![load(0.99, 0.8), load(0.99, 0.8), load(1.0, 0.6)];
        }
        figures.watched = Some(Watched {
            events: 10,
            scrapes: 3,
            retransmissions: 0,
        });
        let named = |figures: &Figures, name: &str| {
            figures
                .verdicts()
                .into_iter()
                .find(|v| v.name.starts_with(name))
                .unwrap_or_else(|| panic!("no verdict {name}"))
        };
        let saturated = named(&figures, "ceiling client saturates");
        assert!(saturated.met, "{saturated:?}");
        assert_eq!(saturated.figure, "echo 99 %, client 80 %");
        assert!(named(&figures, "ceiling: replies from").met);
        assert!(named(&figures, "ceiling: answers of another kind").met);
        figures.ceilings[1].loads[2].wrong = 3;
        let wrong = named(&figures, "ceiling: answers of another kind");
        assert!(!wrong.met && wrong.figure == "3", "{wrong:?}");
        let block = figures.block(&args());
        assert!(
            block.contains(
                "  grq        rasgk           300000         0.01         3.30         100 %          60 %"
            ),
            "{block}"
        );
        // A client as busy as the echo bounds the figure itself.
        figures.ceilings[2].loads[0] = load(0.99, 0.95);
        assert!(!named(&figures, "ceiling client saturates").met);
        // An echo that waited for the client was not saturated.
        figures.ceilings[2].loads[0] = load(0.7, 0.5);
        assert!(!named(&figures, "ceiling client saturates").met);
        figures.watched = Some(Watched {
            events: 10,
            scrapes: 3,
            retransmissions: 2,
        });
        assert!(!named(&figures, "ceiling: replies from").met);
    }

    #[test]
    fn a_figure_on_its_target_meets_it() {
        let verdicts = figures().verdicts();
        assert_eq!(verdicts.len(), 8);
        assert!(verdicts.iter().all(|v| v.met), "{verdicts:#?}");
        let block = figures().block(&args());
        assert!(block.contains("targets: 8 of 8 met"), "{block}");
        assert!(
            block.contains(
                "first GRQ to last RCF 1.00 s (median of 3: 1.00 s, 0.90 s, 1.10 s), 80000 tx/s"
            ),
            "{block}"
        );
        assert!(
            block.contains("placement: 200 region-1 phones, 30 % TTS: 0 non-TTS phones"),
            "{block}"
        );
        assert!(block.ends_with(
            "ratio grq 0.85\nratio rrq_full 0.60\nratio rrq_light 0.85\nratio storm_grq 1.00\n"
        ));
    }

    #[test]
    fn each_figure_past_its_target_is_named_not_met() {
        let mut figures = figures();
        figures.ceilings[1] = ceiling(Workload::FullRrq, &[0.59, 0.7, 0.5]);
        if let Some(storm) = &mut figures.storm {
            storm.held = 40_001;
            storm.distinct_aliases = 40_001;
            storm.distinct_ids = 40_001;
        }
        figures.memory = Some((257.0, 100_000));
        figures.scale = Some(Scale {
            per_grq_us: vec![(64, 1.0), (10_000, 2.01)],
        });
        let missed: Vec<String> = figures
            .verdicts()
            .into_iter()
            .filter(|v| !v.met)
            .map(|v| v.name)
            .collect();
        assert_eq!(
            missed,
            [
                "rrq_full ratio rasgk / echo",
                "storm of 40000 phones",
                "storm tx/s / ceiling GRQ tx/s",
                "resident bytes per registration",
                "core time per GRQ, most / fewest C-LANs"
            ]
        );
        assert!(figures.block(&args()).contains("targets: 3 of 8 met"));
    }

    #[test]
    fn a_slow_storm_misses_its_target_though_whole() {
        let mut figures = figures();
        if let Some(storm) = &mut figures.storm {
            storm.seconds = 2.01;
        }
        let verdicts = figures.verdicts();
        let storm = &verdicts[3];
        assert!(storm.name.starts_with("storm"), "{storm:?}");
        assert!(!storm.met);
        // 80,000 transactions in 2.01 s against 80,000 GRQs a second under the ceiling.
        assert_eq!(verdicts[4].figure, "0.50");
        assert!(!verdicts[4].met);
    }

    #[test]
    fn the_relay_is_judged_by_the_median_of_its_rounds_and_its_added_p99() {
        let side = |slices: &[(u64, f64)], p99: f64| relay::Side {
            slices: slices.to_vec(),
            setup_to_connect_ms: (1.0, p99, p99 + 1.0),
            failed: 0,
        };
        let mut figures = Figures {
            relay: Some(Relay {
                pairs: 64,
                // Rounds' ratios 0.8, 0.5 (a slow round), 0.9, 0.75: median 0.775.
                forwarder: side(&[(2000, 1.0), (2000, 1.0), (2000, 1.0), (2000, 1.0)], 3.0),
                rasgk: side(&[(1600, 1.0), (1000, 1.0), (1800, 1.0), (1500, 1.0)], 7.5),
            }),
            ..Figures::default()
        };
        let verdicts = figures.verdicts();
        assert_eq!(verdicts.len(), 3);
        assert!(verdicts.iter().all(|v| v.met), "{verdicts:#?}");
        assert_eq!(verdicts[0].figure, "1475, 0 failed");
        assert_eq!(verdicts[1].figure, "0.78");
        assert_eq!(verdicts[2].figure, "4.50 ms");
        assert!(figures.block(&args()).ends_with("ratio relay 0.78\n"));
        if let Some(relay) = &mut figures.relay {
            relay.rasgk.setup_to_connect_ms.1 = 8.5;
            relay.rasgk.slices = vec![(900, 1.0); 4];
        }
        let missed: Vec<String> = figures
            .verdicts()
            .into_iter()
            .filter(|v| !v.met)
            .map(|v| v.name)
            .collect();
        assert_eq!(
            missed,
            [
                "relay: closed-loop calls a second, 64 pairs",
                "relay: message rate / forwarder",
                "relay: Setup → Connect added at p99"
            ]
        );
    }

    #[test]
    fn parts_not_asked_for_are_left_out() {
        let figures = Figures {
            ceilings: Vec::new(),
            ..Figures::default()
        };
        assert!(figures.verdicts().is_empty());
        let block = figures.block(&args());
        assert!(
            !block.contains("storm:") && !block.contains("ratio "),
            "{block}"
        );
        assert!(block.contains("targets: 0 of 0 met"));
    }
}
