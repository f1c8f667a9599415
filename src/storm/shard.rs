//! One child of a multi-process storm (`rasgk storm --shard I/N`, started by [`super::fleet`]).
//!
//! The conversation, one line each: the parent writes the storm's options as JSON on the
//! child's standard input; the child binds its share of the phones and says `ready` on
//! standard error; the parent answers `start UNIX_MS` (one instant for every child) and the
//! child starts its phones then, saying `registered N` as they register. With routed calls
//! (`--calls-per-s`) it then says `in-service` once its phones are in service (or the wait
//! for them is over); the parent, having heard it from every child, answers `calls UNIX_MS`
//! (one instant for every child), and the child places its calls from then, saying
//! `calls-over N` as they end. Once they all have, and `--duration` has passed, it says
//! `holding` and keeps its phones until the parent, having read the final load, writes
//! `end`. An `end` that comes earlier (the storm interrupted, or no phone of it registered)
//! ends the phones where they are. The child then ends its phones and prints its
//! [`Tally`] as one JSON object on standard output. Anything else it writes on standard error
//! is for people and is passed on by the parent. Standard input closing before `end` (the
//! parent killed) ends the child at once, whatever it is doing, with exit status 2.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::sync::watch;

use super::phones::Conductor;
use super::tally::Tally;
use super::wall_clock::wall_time;
use super::{phones, Share, StormArgs};

/// What starts every line a child says to its parent on standard error.
const TAG: &str = "rasgk-storm-shard:";

/// What a child tells its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Signal {
    /// Its phones' sockets are bound.
    Ready,
    /// This many of its phones have registered so far.
    Registered(usize),
    /// Its phones are in service (or the wait for them is over): the calls may start.
    InService,
    /// This many of its routed calls are over so far.
    CallsOver(u64),
    /// Every phone registered or gave up (and its calls are over); they are held until
    /// `end`.
    Holding,
}

impl Signal {
    /// The line that says it.
    fn line(self) -> String {
        match self {
            Signal::Ready => format!("{TAG} ready"),
            Signal::Registered(n) => format!("{TAG} registered {n}"),
            Signal::InService => format!("{TAG} in-service"),
            Signal::CallsOver(n) => format!("{TAG} calls-over {n}"),
            Signal::Holding => format!("{TAG} holding"),
        }
    }

    /// Reads a line of a child's standard error; `None` for text meant for people.
    pub fn parse(line: &str) -> Option<Signal> {
        let rest = line.strip_prefix(TAG)?.trim();
        match rest.split_once(' ') {
            None if rest == "ready" => Some(Signal::Ready),
            None if rest == "holding" => Some(Signal::Holding),
            None if rest == "in-service" => Some(Signal::InService),
            Some(("registered", n)) => n.parse().ok().map(Signal::Registered),
            Some(("calls-over", n)) => n.parse().ok().map(Signal::CallsOver),
            _ => None,
        }
    }
}

/// What the parent's standard input said after `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parent {
    /// It wrote `end`: end the phones and print the tally.
    Ended,
    /// It closed (the parent is gone) before saying `end`.
    Gone,
}

fn say(signal: Signal) {
    eprintln!("{}", signal.line());
}

async fn next_line(lines: &mut Lines<BufReader<Stdin>>, what: &str) -> Result<String, String> {
    match lines.next_line().await {
        Ok(Some(line)) => Ok(line),
        Ok(None) => Err(format!(
            "standard input ended while waiting for {what} (is the parent storm gone?)"
        )),
        Err(error) => Err(format!("cannot read {what} from standard input: {error}")),
    }
}

async fn shard(share: Share) -> Result<Tally, String> {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let options = next_line(&mut lines, "the storm's options").await?;
    let args: StormArgs = serde_json::from_str(&options)
        .map_err(|error| format!("the storm's options are not JSON StormArgs: {error}"))?;
    args.check().map_err(|error| error.to_string())?;
    args.check_open_files(share.count, super::raise_open_files())
        .map_err(|error| error.to_string())?;
    let bound = phones::bind(&args, share)
        .await
        .map_err(|error| error.to_string())?;
    let total = bound.len();
    say(Signal::Ready);
    let start = next_line(&mut lines, "the start time").await?;
    let at_ms: u64 = start
        .strip_prefix("start ")
        .and_then(|ms| ms.trim().parse().ok())
        .ok_or_else(|| format!("expected `start UNIX_MS`, got {start:?}"))?;
    let wait = Duration::from_millis(at_ms).saturating_sub(wall_time());
    tokio::time::sleep(wait).await;

    // The parent's further lines are `calls UNIX_MS` (with routed calls) and `end`;
    // standard input ending before `end` means the parent is gone (killed, say): then the
    // share ends at once, whatever it is doing, rather than keep its phones up for nobody
    // until --duration runs out.
    let (told, heard) = watch::channel(None);
    let (calls_at, calls_start) = watch::channel(None);
    tokio::spawn(async move {
        loop {
            let line = lines.next_line().await;
            let calls = match &line {
                Ok(Some(line)) => line.strip_prefix("calls ").map(|ms| ms.trim().parse()),
                _ => None,
            };
            match (line, calls) {
                (_, Some(Ok(ms))) => {
                    let _ = calls_at.send(Some(ms));
                }
                (Ok(Some(_)), _) => {
                    let _ = told.send(Some(Parent::Ended));
                    return;
                }
                _ => {
                    let _ = told.send(Some(Parent::Gone));
                    return;
                }
            }
        }
    });
    // Ctrl-C at the terminal reaches every process of the storm: a child leaves it to the
    // parent, which ends the children through their standard input.
    tokio::spawn(async { while tokio::signal::ctrl_c().await.is_ok() {} });
    // The parent's `end` before the phones are held (an interrupted storm, or one no phone
    // of which registered) ends them where they are.
    let (stop_tx, stop) = watch::channel(false);
    let mut ended = heard.clone();
    tokio::spawn(async move {
        if ended.wait_for(Option::is_some).await.is_ok() {
            let _ = stop_tx.send(true);
        }
    });
    let mut child = Child {
        total,
        said: Instant::now(),
        calls_start,
        told: heard.clone(),
        stop,
    };
    let mut gone = heard;
    let parent_gone = async move {
        match gone.wait_for(|parent| *parent == Some(Parent::Gone)).await {
            Ok(_) => {}
            // The reader said `end` and is finished: the parent is there.
            Err(_) => std::future::pending().await,
        }
    };
    let tally = tokio::select! {
        lived = phones::live(&args, bound, &mut child) => {
            lived.map_err(|error| error.to_string())?.0
        }
        () = parent_gone => {
            return Err("standard input ended: the parent storm is gone, so this share ends".into())
        }
    };
    Ok(tally)
}

/// A child's side of the conversation while its phones live.
struct Child {
    /// Its phones.
    total: usize,
    /// When it last said how far it got.
    said: Instant,
    /// The parent's `calls UNIX_MS`, once written.
    calls_start: watch::Receiver<Option<u64>>,
    /// The parent's `end` (or its end).
    told: watch::Receiver<Option<Parent>>,
    /// Turns true with the parent's `end`.
    stop: watch::Receiver<bool>,
}

impl Child {
    /// Says `signal` when 50 ms have passed since the last (or `last` says it is the last).
    fn say_now_and_then(&mut self, signal: Signal, last: bool) {
        if last || self.said.elapsed() >= Duration::from_millis(50) {
            say(signal);
            self.said = Instant::now();
        }
    }
}

impl Conductor for Child {
    type Held = ();

    fn registered(&mut self, n: usize) {
        self.say_now_and_then(Signal::Registered(n), n == self.total);
    }

    async fn in_service(&mut self) -> Option<Duration> {
        say(Signal::InService);
        match self.calls_start.wait_for(Option::is_some).await {
            Ok(ms) => Some(Duration::from_millis(ms.unwrap_or_default())),
            // The parent said `end` instead (no phone registered, or the storm is
            // interrupted), or is gone: no calls.
            Err(_) => None,
        }
    }

    fn calls_over(&mut self, n: u64) {
        self.say_now_and_then(Signal::CallsOver(n), false);
    }

    async fn hold(&mut self) {
        say(Signal::Holding);
        let _ = self.told.wait_for(Option::is_some).await;
    }

    fn interruption(&self) -> watch::Receiver<bool> {
        self.stop.clone()
    }
}

/// `rasgk storm --shard I/N`: exit 0 once the tally is printed, 2 when the share could not
/// run (the reason on standard error).
pub(super) fn run(share: Share) -> ExitCode {
    let runtime = super::runtime();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("rasgk storm shard {share}: cannot start the runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let ended = runtime.block_on(shard(share));
    // The reader of standard input may still be blocked in a read that cannot be
    // cancelled (when the share failed before the parent's `end`): do not wait for it.
    runtime.shutdown_background();
    match ended {
        Ok(tally) => match serde_json::to_string(&tally) {
            Ok(json) => {
                println!("{json}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("rasgk storm shard {share}: cannot write the tally: {error}");
                ExitCode::from(2)
            }
        },
        Err(error) => {
            eprintln!("rasgk storm shard {share}: {error}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_read_back() {
        for signal in [
            Signal::Ready,
            Signal::Registered(13_334),
            Signal::InService,
            Signal::CallsOver(7),
            Signal::Holding,
        ] {
            assert_eq!(Signal::parse(&signal.line()), Some(signal));
        }
        assert_eq!(Signal::parse("rasgk storm: cannot bind"), None);
        assert_eq!(Signal::parse(&format!("{TAG} registered many")), None);
    }
}
