//! The registration storm of a large Communication Manager: `--storm-phones` phones (40,000
//! by default; half TTS, three regions) against one rasgk of `fixtures/lab/storm-40k.toml`,
//! run as docs/performance.md's `rasgk storm` command runs it (one process, on the storm's one-thread
//! runtime), with the gatekeeper in this process as `rasgk serve` runs it. After it, the gatekeeper's own
//! registrations are read back from its admin port: every phone must hold exactly one.

use std::collections::HashSet;
use std::net::SocketAddr;

use clap::Parser;

use crate::config;
use crate::gatekeeper::RegistrationView;
use crate::storm::{self, StormArgs};

/// The storm's topology: seven C-LANs of 8,000 sockets in three regions on 127.0.70.x.
const TOPOLOGY: &str = include_str!("../../fixtures/lab/storm-40k.toml");

/// Where [`TOPOLOGY`] comes from, for its errors.
const ORIGIN: &str = "fixtures/lab/storm-40k.toml";

/// The gatekeeper's discovery address in [`TOPOLOGY`].
const TARGET: &str = "127.0.70.1:1719";

/// Its admin port in [`TOPOLOGY`].
const ADMIN: &str = "127.0.70.1:7000";

/// What the storm measured, and what the gatekeeper held after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Storm {
    /// Phones in the storm.
    pub phones: usize,
    /// Storm processes they were spread over.
    pub processes: usize,
    /// From the first GRQ to the last first RCF, seconds.
    pub seconds: f64,
    /// 99th percentile of the RAS round trips, milliseconds.
    pub p99_ms: f64,
    /// Phones that got an RCF.
    pub registered: usize,
    /// Requests the phones sent again (their RAS timer ran out).
    pub retransmissions: u64,
    /// Registrations the gatekeeper holds after the storm.
    pub held: usize,
    /// Distinct endpoint identifiers among them.
    pub distinct_ids: usize,
    /// Distinct aliases among them.
    pub distinct_aliases: usize,
    /// Each storm's seconds, first GRQ to last RCF, in the order they ran (this storm's
    /// among them: the median).
    pub runs_s: Vec<f64>,
}

impl Storm {
    /// Transactions a second: a GRQ and an RRQ a phone over first GRQ to last RCF.
    pub fn transactions_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            2.0 * self.phones as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// Phones that never registered.
    pub fn lost(&self) -> usize {
        self.phones.saturating_sub(self.registered)
    }

    /// Registrations beyond one a phone: held ones that share an alias or an endpoint id
    /// with another, and any beyond the number of phones.
    pub fn doubled(&self) -> usize {
        let distinct = self.distinct_ids.min(self.distinct_aliases);
        self.held.saturating_sub(distinct) + distinct.saturating_sub(self.phones)
    }

    /// Every phone registered, exactly once.
    pub fn whole(&self) -> bool {
        self.lost() == 0
            && self.doubled() == 0
            && self.held == self.phones
            && self.distinct_ids == self.phones
    }
}

/// `rasgk storm`'s options as docs/performance.md's command gives them, for `phones` phones.
pub fn storm_args(phones: usize) -> Result<StormArgs, String> {
    let phones = phones.to_string();
    let line = [
        "rasgk storm",
        "--target",
        TARGET,
        "--admin",
        ADMIN,
        "--phones",
        &phones,
        "--tts-share",
        "0.5",
        "--regions",
        "1,2,3",
        "--tts-from",
        "500000",
        "--from",
        "600000",
        // The gatekeeper's registrations are read back after the storm.
        "--leave-registered",
    ];
    parse_storm_line(&line).map_err(|e| format!("the storm's options: {e}"))
}

/// `rasgk storm`'s options from a command line (its first word the command's name).
pub(super) fn parse_storm_line(line: &[&str]) -> Result<StormArgs, clap::Error> {
    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        storm: StormArgs,
    }
    Command::try_parse_from(line).map(|command| command.storm)
}

/// Runs `count` storms, each against a gatekeeper of its own (see [`run`]): the median by
/// seconds, with every run's seconds beside it; when a run lost or doubled a phone, that
/// run (the worst such) instead, so the figure is never whole unless every run was.
pub async fn median_of(phones: usize, count: usize) -> Result<Storm, String> {
    let mut storms = Vec::with_capacity(count);
    for _ in 0..count.max(1) {
        storms.push(run(phones).await?);
    }
    let runs_s: Vec<f64> = storms.iter().map(|s| s.seconds).collect();
    let broken = storms
        .iter()
        .filter(|s| !s.whole())
        .max_by_key(|s| s.lost() + s.doubled())
        .cloned();
    let chosen = match broken {
        Some(storm) => storm,
        None => {
            storms.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
            storms.swap_remove(storms.len() / 2)
        }
    };
    Ok(Storm { runs_s, ..chosen })
}

/// Runs the storm against a gatekeeper of [`TOPOLOGY`] started here, then reads back what
/// it holds. The storm runs as `rasgk storm` runs it: on a thread of its own with the storm's
/// one-thread runtime.
pub async fn run(phones: usize) -> Result<Storm, String> {
    let config = config::from_toml(TOPOLOGY, ORIGIN).map_err(|e| e.to_string())?;
    let admin: SocketAddr = config.admin.listen;
    let gatekeeper = super::Serving::start(config, "the storm's gatekeeper").await?;
    let outcome = storm_and_read_back(phones, admin).await;
    gatekeeper.stop().await;
    outcome
}

async fn storm_and_read_back(phones: usize, admin: SocketAddr) -> Result<Storm, String> {
    let args = storm_args(phones)?;
    let report = tokio::task::spawn_blocking(move || {
        storm::runtime()
            .map_err(|e| format!("cannot start the storm's runtime: {e}"))?
            .block_on(storm::storm_spread(&args))
            .map_err(|e| format!("the storm could not run: {e}"))
    })
    .await
    .map_err(|e| format!("the storm could not run: {e}"))??;
    let body = tokio::task::spawn_blocking(move || {
        crate::admin_client::get_json(admin, "/api/registrations")
    })
    .await
    .map_err(|e| format!("reading the registrations back: {e}"))?
    .map_err(|e| format!("reading the registrations back: {e}"))?;
    let held: Vec<RegistrationView> = serde_json::from_str(&body)
        .map_err(|e| format!("{ADMIN}/api/registrations is not a list of registrations: {e}"))?;
    let distinct_ids = held.iter().map(|r| &r.endpoint_id).collect::<HashSet<_>>();
    let distinct_aliases = held.iter().flat_map(|r| &r.aliases).collect::<HashSet<_>>();
    Ok(Storm {
        phones: report.phones,
        processes: report.processes,
        seconds: report.registration_s,
        p99_ms: report.latency_ms.p99,
        registered: report.registered,
        retransmissions: report.retransmissions,
        held: held.len(),
        distinct_ids: distinct_ids.len(),
        distinct_aliases: distinct_aliases.len(),
        runs_s: vec![report.registration_s],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_storm_is_the_readmes_command() {
        let args = storm_args(40_000).unwrap();
        assert_eq!(args.phones, 40_000);
        assert_eq!(args.target, TARGET.parse::<SocketAddr>().unwrap());
        assert_eq!(args.admin.as_deref(), Some(ADMIN));
        assert_eq!(args.regions, [1, 2, 3]);
        assert_eq!(args.tts_share, 0.5);
        assert_eq!(
            (args.tts_extensions_from, args.extensions_from),
            (500_000, 600_000)
        );
    }

    #[test]
    fn the_topology_is_the_fixture_and_holds_the_storm() {
        let config = config::from_toml(TOPOLOGY, ORIGIN).unwrap();
        assert_eq!(config.gatekeeper.discovery, TARGET.parse().unwrap());
        assert_eq!(config.admin.listen, ADMIN.parse().unwrap());
        let room: u64 = config.clans.iter().map(|c| u64::from(c.max_sockets)).sum();
        assert!(room >= 40_000, "room for 40,000 phones: {room}");
    }

    #[test]
    fn a_phone_lost_or_held_twice_is_not_whole() {
        let whole = Storm {
            phones: 10,
            processes: 1,
            seconds: 0.1,
            p99_ms: 1.0,
            registered: 10,
            retransmissions: 0,
            held: 10,
            distinct_ids: 10,
            distinct_aliases: 10,
            runs_s: vec![0.1],
        };
        assert!(whole.whole());
        assert_eq!(whole.transactions_per_s(), 200.0);
        let lost = Storm {
            registered: 9,
            held: 9,
            distinct_ids: 9,
            distinct_aliases: 9,
            ..whole.clone()
        };
        assert_eq!((lost.lost(), lost.doubled()), (1, 0));
        assert!(!lost.whole());
        let shared_id = Storm {
            distinct_ids: 9,
            ..whole.clone()
        };
        assert_eq!(shared_id.doubled(), 1);
        assert!(!shared_id.whole());
        let extra = Storm {
            held: 11,
            distinct_ids: 11,
            distinct_aliases: 11,
            ..whole
        };
        assert_eq!(extra.doubled(), 1);
        assert!(!extra.whole());
    }
}
