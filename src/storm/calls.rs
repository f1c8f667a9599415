//! Routed calls between a storm's phones (`rasgk storm --sockets --calls-per-s R --call-s D
//! [--call-total N]`, docs/rules.md §8.7): which call is placed when and by whom, and how
//! the calls went.
//!
//! **The schedule** ([`Schedule`]) is the same in every storm process. The calls start at
//! one wall-clock instant T0, once the phones are in service; call `j` (0, 1, …) is due at
//! `T0 + j / R` and is placed by phone `j mod phones` ([`roster::caller`]), which calls the
//! phone half the storm away ([`roster::callee`]), or `--call-to`'s number. Each process
//! places the calls of its own phones ([`place`]), so R a second is the whole storm's rate
//! however many processes share it, and a callee may be in another process: the gatekeeper
//! routes by alias. Placing stops after `--call-total` calls, else `--duration` seconds
//! after T0; then each process waits for its calls to end — each is bounded: the ARQ's
//! retries, [`NO_CONNECT`] for the Connect, the hold, the DRQ's retries ([`settle_within`]).
//!
//! **A call** is placed by its caller's life ([`super::life`]: ARQ, the Setup on its socket
//! through [`super::call_signalling`], DRQ after) and answered by the callee's socket task.
//! What each call came to is counted in a [`CallTally`], which adds up over phones and
//! processes like the rest of the storm's [`super::tally::Tally`].

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedSender;

use super::call_signalling::{Heard, Placed};
use super::{Share, StormArgs};
use crate::phone_timing::NO_CONNECT;
use crate::roster;

/// How long a call is held after its Connect without `--call-s`, seconds.
pub const DEFAULT_CALL_S: f64 = 2.0;

/// What a call that the storm's end cut off is counted as: among the failures when it was
/// not connected yet, among the calls cut short when it was.
pub const STORM_ENDED: &str = "storm_ended";

/// The longest a storm process waits for its phones' sockets to be in service before the
/// calls start anyway (a caller without a socket in service fails `not_in_service`).
pub const SERVICE_WAIT: Duration = Duration::from_secs(30);

/// A call a phone is told to place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CallOrder {
    /// The call's number in the storm.
    pub number: u64,
    /// The digits to dial.
    pub callee: String,
}

/// Whom the calls go to.
#[derive(Debug, Clone)]
enum Callees {
    /// The phone half the storm away, by its extension.
    Storm {
        tts_share: f64,
        tts_from: u32,
        from: u32,
    },
    /// One number for every call.
    Fixed(String),
}

/// The storm's calls, as every process computes them.
#[derive(Debug, Clone)]
pub(super) struct Schedule {
    per_s: f64,
    total: Option<u64>,
    /// Placing stops this long after the start (without a total).
    window: Duration,
    phones: usize,
    callees: Callees,
    /// How long each call is held after its Connect.
    pub hold: Duration,
}

impl Schedule {
    /// The schedule `--calls-per-s` asks for, if it does.
    pub fn of(args: &StormArgs) -> Option<Schedule> {
        let per_s = args.calls_per_s?;
        let callees = match &args.call_to {
            Some(digits) => Callees::Fixed(digits.clone()),
            None => Callees::Storm {
                tts_share: args.tts_share,
                tts_from: args.tts_extensions_from,
                from: args.extensions_from,
            },
        };
        Some(Schedule {
            per_s,
            total: args.call_total,
            window: Duration::from_secs_f64(args.duration),
            phones: args.phones,
            callees,
            hold: Duration::from_secs_f64(args.call_s.unwrap_or(DEFAULT_CALL_S)),
        })
    }

    /// Call `j`: when it is due after the start, the phone that places it, and the digits
    /// it dials; `None` once placing has stopped.
    pub fn call(&self, j: u64) -> Option<(Duration, usize, String)> {
        let due = Duration::from_secs_f64(j as f64 / self.per_s);
        let over = match self.total {
            Some(total) => j >= total,
            None => due >= self.window,
        };
        if over {
            return None;
        }
        let caller = roster::caller(self.phones, j);
        let callee = match &self.callees {
            Callees::Fixed(digits) => digits.clone(),
            Callees::Storm {
                tts_share,
                tts_from,
                from,
            } => {
                let callee = roster::callee(self.phones, caller);
                roster::extension(*tts_share, *tts_from, *from, callee).to_string()
            }
        };
        Some((due, caller, callee))
    }

    /// How many calls the storm places in all, when every caller is there.
    pub fn expected(&self) -> u64 {
        match self.total {
            Some(total) => total,
            None => (self.window.as_secs_f64() * self.per_s).ceil() as u64,
        }
    }
}

/// The longest one call takes from its order to its end, with `timeout` and `retries` the
/// RAS timer's (see [`super::life`]): the ARQ's exchange, [`NO_CONNECT`], the hold, the
/// DRQ's exchange, and a second for the rest.
pub(super) fn settle_within(timeout: Duration, retries: u32, hold: Duration) -> Duration {
    let exchange: Duration = (0..=retries)
        .map(|attempt| (timeout * (1 << attempt.min(6))).min(Duration::from_secs(8)))
        .map(|wait| wait.max(timeout))
        .sum();
    exchange * 2 + NO_CONNECT + hold + Duration::from_secs(1)
}

/// The calls a storm process's phones have finished, counted as they finish.
#[derive(Debug, Default)]
pub(super) struct Finished(AtomicU64);

impl Finished {
    /// One more.
    pub fn one(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// How many so far.
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Places this process's calls of `schedule` from `start` on: each call of a phone `share`
/// holds goes, when due, to that phone's life through `orders` (by the phone's place in the
/// storm). Then waits until as many calls have `finished`, at most `settle` after the last
/// one went; `progress` hears the finished count now and then. Returns the calls that went
/// to nobody: their phone's life was over.
pub(super) async fn place(
    schedule: &Schedule,
    share: Share,
    start: Instant,
    orders: &HashMap<usize, UnboundedSender<CallOrder>>,
    finished: &Finished,
    settle: Duration,
    mut progress: impl FnMut(u64),
) -> u64 {
    let (mut sent, mut undelivered) = (0u64, 0u64);
    let mut j = 0u64;
    while let Some((due, caller, callee)) = schedule.call(j) {
        let number = j;
        j += 1;
        if !share.holds(caller) {
            continue;
        }
        tokio::time::sleep_until((start + due).into()).await;
        let order = CallOrder { number, callee };
        match orders.get(&caller).map(|phone| phone.send(order)) {
            Some(Ok(())) => sent += 1,
            _ => undelivered += 1,
        }
        progress(finished.now());
    }
    let deadline = Instant::now() + settle;
    while finished.now() < sent && Instant::now() < deadline {
        progress(finished.now());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    progress(finished.now());
    undelivered
}

/// What a storm's routed calls came to, counted: what its tally adds up and its report
/// shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallCounts {
    /// Calls the callers took on; each ends connected or failed.
    pub placed: u64,
    /// Calls that got their Connect.
    pub connected: u64,
    /// Calls that did not connect, by why: `not_in_service`, `not_registered`,
    /// `arj_REASON`, `acf_not_routed`, `acf_other_clan`, `no_acf`, `no_connect`, `cause_N`
    /// (a Release Complete before the Connect, by its Q.931 cause), `socket_lost`,
    /// `unregistered`, `storm_ended`, ….
    pub failed: BTreeMap<String, u64>,
    /// Connected calls that ended before the caller released them, by what ended them.
    pub cut_short: BTreeMap<String, u64>,
    /// Setups the callers wrote.
    pub setups: u64,
    /// Calls that got a Call Proceeding.
    pub proceeding: u64,
    /// Calls that got an Alerting.
    pub alerting: u64,
    /// Setups the phones called answered.
    pub answered: u64,
    /// Setups left unanswered: a socket carried as many calls as a phone answers already.
    pub unanswered: u64,
    /// Frames on the phones' sockets that were no Q.931 message or named no call.
    pub stray_frames: u64,
}

impl CallCounts {
    /// Adds another's counts.
    fn add(&mut self, other: CallCounts) {
        self.placed += other.placed;
        self.connected += other.connected;
        for (into, from) in [
            (&mut self.failed, other.failed),
            (&mut self.cut_short, other.cut_short),
        ] {
            for (reason, n) in from {
                *into.entry(reason).or_insert(0) += n;
            }
        }
        self.setups += other.setups;
        self.proceeding += other.proceeding;
        self.alerting += other.alerting;
        self.answered += other.answered;
        self.unanswered += other.unanswered;
        self.stray_frames += other.stray_frames;
    }

    /// Calls still in progress when the storm ended, connected or not.
    pub fn in_progress_at_end(&self) -> u64 {
        let of = |map: &BTreeMap<String, u64>| map.get(STORM_ENDED).copied().unwrap_or(0);
        of(&self.failed) + of(&self.cut_short)
    }
}

/// How a storm's routed calls went: one process's phones', or added up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallTally {
    /// The counts.
    #[serde(flatten)]
    pub counts: CallCounts,
    /// Setup written → Connect read of each connected call, microseconds.
    pub setup_to_connect_us: Vec<u64>,
    /// When the first Setup was written, microseconds since the UNIX epoch.
    pub first_setup_unix_us: Option<u64>,
    /// When the last Setup was written.
    pub last_setup_unix_us: Option<u64>,
    /// When the last call ended.
    pub last_end_unix_us: Option<u64>,
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl CallTally {
    /// Counts a call that ended at `ended_at` (since the UNIX epoch).
    pub(super) fn count(&mut self, placed: &Placed, ended_at: Duration) {
        let counts = &mut self.counts;
        counts.placed += 1;
        counts.proceeding += u64::from(placed.proceeding);
        counts.alerting += u64::from(placed.alerting);
        if let Some(took) = placed.setup_to_connect {
            counts.connected += 1;
            self.setup_to_connect_us.push(micros(took));
        }
        if let Some(trouble) = &placed.trouble {
            let into = if placed.setup_to_connect.is_some() {
                &mut counts.cut_short
            } else {
                &mut counts.failed
            };
            *into.entry(trouble.clone()).or_insert(0) += 1;
        }
        if let Some(at) = placed.setup_at {
            counts.setups += 1;
            self.first_setup_unix_us = earliest(self.first_setup_unix_us, Some(micros(at)));
            self.last_setup_unix_us = self.last_setup_unix_us.max(Some(micros(at)));
        }
        self.last_end_unix_us = self.last_end_unix_us.max(Some(micros(ended_at)));
    }

    /// Counts `n` calls of the schedule whose caller's life was over before it could
    /// place them (it never registered, or fell out of registration): `not_registered`.
    pub(super) fn undelivered(&mut self, n: u64) {
        if n > 0 {
            self.counts.placed += n;
            let failed = self.counts.failed.entry("not_registered".to_string());
            *failed.or_insert(0) += n;
        }
    }

    /// Counts what a socket's reader heard.
    pub(super) fn hear(&mut self, heard: &Heard) {
        self.counts.answered += heard.answered;
        self.counts.unanswered += heard.unanswered;
        self.counts.stray_frames += heard.stray;
    }

    /// Adds another tally.
    pub fn add(&mut self, other: CallTally) {
        self.counts.add(other.counts);
        self.setup_to_connect_us.extend(other.setup_to_connect_us);
        self.first_setup_unix_us = earliest(self.first_setup_unix_us, other.first_setup_unix_us);
        self.last_setup_unix_us = self.last_setup_unix_us.max(other.last_setup_unix_us);
        self.last_end_unix_us = self.last_end_unix_us.max(other.last_end_unix_us);
    }

    /// Setups written per second, from the first to the last (0 for fewer than two).
    pub fn setups_per_s(&self) -> f64 {
        match (self.first_setup_unix_us, self.last_setup_unix_us) {
            (Some(first), Some(last)) if last > first && self.counts.setups > 1 => {
                (self.counts.setups - 1) as f64 / ((last - first) as f64 / 1e6)
            }
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storm::tests::args;

    #[test]
    fn call_j_is_due_at_j_over_the_rate_and_goes_half_the_storm_away() {
        let storm = args("--phones 4 --tts-share 0.5 --sockets --calls-per-s 2 --call-total 5");
        let schedule = Schedule::of(&storm).unwrap();
        let calls: Vec<_> = (0..6).map(|j| schedule.call(j)).collect();
        // Extensions: phone 0 60000, 1 50000, 2 60001, 3 50001.
        assert_eq!(
            calls,
            [
                Some((Duration::ZERO, 0, "60001".to_string())),
                Some((Duration::from_millis(500), 1, "50001".to_string())),
                Some((Duration::from_secs(1), 2, "60000".to_string())),
                Some((Duration::from_millis(1500), 3, "50000".to_string())),
                Some((Duration::from_secs(2), 0, "60001".to_string())),
                None,
            ]
        );
        assert_eq!(schedule.expected(), 5);
        let timed = args("--phones 4 --sockets --calls-per-s 10 --duration 1.5 --call-to 9");
        let schedule = Schedule::of(&timed).unwrap();
        assert_eq!(schedule.call(14).map(|c| c.2), Some("9".to_string()));
        assert_eq!(
            schedule.call(15),
            None,
            "placing stops 1.5 s after the start"
        );
        assert_eq!(schedule.expected(), 15);
    }

    #[test]
    fn a_call_is_bounded_by_two_exchanges_the_connect_and_the_hold() {
        // 1 + 2 + 4 + 8 s of RAS timer, twice; 10 s; 3 s; 1 s.
        let bound = settle_within(Duration::from_secs(1), 3, Duration::from_secs(3));
        assert_eq!(bound, Duration::from_secs(30 + 10 + 3 + 1));
    }

    #[test]
    fn tallies_count_each_call_once_and_add_up() {
        let connected = Placed {
            number: 0,
            setup_at: Some(Duration::from_secs(10)),
            proceeding: true,
            alerting: true,
            setup_to_connect: Some(Duration::from_millis(3)),
            trouble: None,
        };
        let refused = Placed {
            setup_to_connect: None,
            trouble: Some("cause_20".into()),
            setup_at: Some(Duration::from_secs(12)),
            ..connected.clone()
        };
        let cut = Placed {
            trouble: Some(STORM_ENDED.into()),
            setup_at: Some(Duration::from_secs(11)),
            ..connected.clone()
        };
        let mut one = CallTally::default();
        one.count(&connected, Duration::from_secs(13));
        one.count(&refused, Duration::from_secs(12));
        let mut two = CallTally::default();
        two.count(&cut, Duration::from_secs(20));
        two.count(&Placed::failed(3, "not_in_service"), Duration::from_secs(9));
        one.add(two);
        let counts = &one.counts;
        assert_eq!((counts.placed, counts.connected, counts.setups), (4, 2, 3));
        let failed = [("cause_20", 1), ("not_in_service", 1)];
        assert_eq!(
            counts.failed,
            failed.map(|(r, n)| (r.to_string(), n)).into()
        );
        assert_eq!(counts.cut_short, [(STORM_ENDED.to_string(), 1)].into());
        assert_eq!(counts.in_progress_at_end(), 1);
        let failed: u64 = counts.failed.values().sum();
        assert_eq!(counts.placed, counts.connected + failed);
        assert_eq!(one.first_setup_unix_us, Some(10_000_000));
        assert_eq!(one.last_end_unix_us, Some(20_000_000));
        assert!((one.setups_per_s() - 1.0).abs() < 1e-9, "3 Setups over 2 s");
    }
}
