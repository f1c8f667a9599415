//! The phones of one storm process: give each its line on the process's port (all before
//! the first GRQ, so a multi-process storm can start every process at one instant), live
//! their lives as one task each, and add up how it went ([`Tally`]).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::life::{wall_time, Life, Plan};
use super::port::{Line, Port, Router};
use super::tally::Tally;
use super::{Share, StormArgs, StormError};
use crate::phone::Phone;

/// This process's phones with their lines, not started.
pub(super) struct Bound {
    /// Global phone index, the phone, TTS or not, its line.
    phones: Vec<(usize, Phone, bool, Line)>,
    /// What feeds the lines.
    router: Router,
}

impl Bound {
    /// How many phones.
    pub fn len(&self) -> usize {
        self.phones.len()
    }
}

/// Opens this process's port and gives each of `share`'s phones its line.
pub(super) async fn bind(args: &StormArgs, share: Share) -> Result<Bound, StormError> {
    let mut ips = Vec::with_capacity(share.size(args.phones));
    let mut phones = Vec::with_capacity(share.size(args.phones));
    for (index, (ip, phone, tts)) in args.phones().into_iter().enumerate() {
        if share.holds(index) {
            ips.push(ip);
            phones.push((index, phone, tts));
        }
    }
    let port = Port::open().map_err(StormError::Port)?;
    let (router, lines) = port.lines(ips);
    let phones = phones
        .into_iter()
        .zip(lines)
        .map(|((index, mut phone, tts), line)| {
            phone.ras_address = line.local_addr();
            (index, phone, tts, line)
        })
        .collect();
    Ok(Bound { phones, router })
}

/// Starts every phone now; `registered(n)` hears the running count of registered phones.
/// Once every phone has registered or given up and `--duration` has passed, `hold` runs
/// while the phones are still there (to read the final load); then the phones end
/// (unregistering with `--unregister`), and `--record` is written.
pub(super) async fn live<T>(
    args: &StormArgs,
    bound: Bound,
    mut registered: impl FnMut(usize),
    hold: impl Future<Output = T>,
) -> Result<(Tally, T), StormError> {
    let started = Instant::now();
    let started_wall = wall_time();
    let record = args
        .record
        .as_ref()
        .map(|_| Arc::new(Mutex::new(Vec::new())));
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
    let count = bound.len();
    let (end_tx, end_rx) = tokio::sync::watch::channel(None);
    let (registered_tx, mut registered_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = tokio::task::JoinSet::new();
    let router = tokio::spawn(bound.router.run());
    for (index, phone, tts, line) in bound.phones {
        let plan = plan.clone();
        let end = end_rx.clone();
        let registered = registered_tx.clone();
        // Arrival and loss follow the phone's place in the whole storm, so they do not
        // depend on how many processes share it.
        let arrival = args
            .rate
            .map(|rate| Duration::from_secs_f64(index as f64 / rate))
            .unwrap_or_default();
        let seed = args.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        tasks.spawn(async move {
            tokio::time::sleep(arrival).await;
            let outcome = Life::new(phone, line, seed, &plan)
                .live(end, registered)
                .await;
            (index, tts, outcome)
        });
    }
    drop(registered_tx);
    let (mut heard, mut ok) = (0, 0);
    while heard < count {
        match registered_rx.recv().await {
            Some(yes) => {
                heard += 1;
                if yes {
                    ok += 1;
                    registered(ok);
                }
            }
            None => break,
        }
    }
    tokio::time::sleep(Duration::from_secs_f64(args.duration)).await;
    let held = hold.await;
    let _ = end_tx.send(Some(Instant::now()));
    let mut outcomes = Vec::with_capacity(count);
    while let Some(joined) = tasks.join_next().await {
        if let Ok(outcome) = joined {
            outcomes.push(outcome);
        }
    }
    router.abort();
    outcomes.sort_by_key(|(index, ..)| *index);
    let outcomes: Vec<_> = outcomes
        .into_iter()
        .map(|(_, tts, outcome)| (tts, outcome))
        .collect();
    if let (Some(path), Some(record)) = (&args.record, record) {
        let datagrams = record.lock().map(|r| r.clone()).unwrap_or_default();
        write_record(path, datagrams)?;
    }
    Ok((Tally::of(&outcomes, started, started_wall), held))
}

/// Writes datagrams into a pcap at `path`, in time order.
pub(super) fn write_record(
    path: &std::path::Path,
    mut datagrams: Vec<crate::pcap::Datagram>,
) -> Result<(), StormError> {
    datagrams.sort_by_key(|d| d.time);
    crate::pcap::write_file(path, &datagrams).map_err(|source| StormError::Write {
        path: path.to_owned(),
        source,
    })
}
