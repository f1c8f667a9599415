//! The phones of one storm process: bind their sockets (all before the first GRQ, so a
//! multi-process storm can start every process at one instant), live their lives as one task
//! each, and add up how it went ([`Tally`]).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;

use super::life::{wall_time, Life, Plan};
use super::tally::Tally;
use super::{Share, StormArgs, StormError};
use crate::phone::Phone;

/// This process's phones with their sockets, bound and not started.
pub(super) struct Bound {
    /// Global phone index, the phone, TTS or not, its socket.
    phones: Vec<(usize, Phone, bool, UdpSocket)>,
}

impl Bound {
    /// How many phones.
    pub fn len(&self) -> usize {
        self.phones.len()
    }
}

/// Binds the sockets of `share`'s phones.
pub(super) async fn bind(args: &StormArgs, share: Share) -> Result<Bound, StormError> {
    let mut phones = Vec::with_capacity(share.size(args.phones));
    for (index, (phone, tts)) in args.phones().into_iter().enumerate() {
        if !share.holds(index) {
            continue;
        }
        let address = phone.ras_address;
        let socket = UdpSocket::bind(address).await.map_err(|source| {
            let hint = if source.raw_os_error() == Some(24) {
                " (too many open files: raise `ulimit -n`, or spread the phones over more \
                 --processes)"
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
        phones.push((index, phone, tts, socket));
    }
    Ok(Bound { phones })
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
    for (index, mut phone, tts, socket) in bound.phones {
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
            phone.ras_address = socket.local_addr().unwrap_or(phone.ras_address);
            let outcome = Life::new(phone, socket, seed, &plan)
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
