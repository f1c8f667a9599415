//! A storm spread over several processes, for more phones than one process may hold sockets:
//! the parent starts itself again (`std::env::current_exe`) as N children, `rasgk storm
//! --shard I/N`, each with every N-th phone (so source addresses and extensions never
//! collide), talks to them as [`super::shard`] describes, starts them all at one wall-clock
//! instant (and their routed calls at another, once every child's phones are in service),
//! and adds their tallies into one report. The parent alone reads the admin port.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc::UnboundedReceiver;

use super::shard::Signal;
use super::tally::Tally;
use super::wall_clock::wall_time;
use super::{Share, StormArgs, StormError};

/// What the parent hears from a child's standard error.
enum Heard {
    Signal(Signal),
    /// A line for people.
    Said(String),
    /// Standard error closed: the child is ending.
    Closed,
}

/// One child and what is known of it.
struct Shard {
    share: Share,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: tokio::task::JoinHandle<String>,
    ready: bool,
    registered: usize,
    in_service: bool,
    calls_over: u64,
    holding: bool,
    closed: bool,
    said: Vec<String>,
    record: Option<PathBuf>,
}

/// The steps a child goes through, in order.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Ready,
    InService,
    Holding,
}

impl Shard {
    fn reached(&self, step: Step) -> bool {
        match step {
            Step::Ready => self.ready,
            Step::InService => self.in_service,
            Step::Holding => self.holding,
        }
    }

    async fn tell(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("its standard input is closed")?;
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .map_err(|error| format!("cannot write to it: {error}"))?;
        stdin
            .flush()
            .await
            .map_err(|error| format!("cannot write to it: {error}"))
    }

    /// The child's exit status and its last words, for an error.
    async fn failure(&mut self, what: &str) -> StormError {
        // Its standard error is closed, so it is ending; do not wait for ever.
        let status = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        let status = match status {
            Ok(Ok(status)) => describe(status),
            _ => "no exit status yet".to_string(),
        };
        let said = self.said.iter().rev().take(5).rev().cloned();
        let said: Vec<String> = said.collect();
        StormError::Shard {
            shard: self.share.to_string(),
            reason: if said.is_empty() {
                format!("{what} ({status})")
            } else {
                format!("{what} ({status}): {}", said.join(" / "))
            },
        }
    }
}

fn describe(status: ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exit status {code}"),
        None => status.to_string(),
    }
}

/// The children of a storm.
pub(super) struct Fleet {
    shards: Vec<Shard>,
    heard: UnboundedReceiver<(usize, Heard)>,
    record: Option<PathBuf>,
}

impl Fleet {
    /// Starts `processes` children and hands them the storm's options.
    pub async fn spawn(args: &StormArgs, processes: usize) -> Result<Fleet, StormError> {
        let exe = std::env::current_exe().map_err(|error| StormError::Shard {
            shard: format!("1/{processes}"),
            reason: format!("cannot find this program to start it again: {error}"),
        })?;
        let (heard_tx, heard) = tokio::sync::mpsc::unbounded_channel();
        let mut shards = Vec::with_capacity(processes);
        for index in 0..processes {
            let share = Share {
                index,
                count: processes,
            };
            let record = args.record.as_ref().map(|path| {
                let mut name = path.file_name().unwrap_or_default().to_owned();
                name.push(format!(".shard-{}-of-{processes}", index + 1));
                path.with_file_name(name)
            });
            let mut options = args.clone();
            options.record = record.clone();
            options.report_dir = None;
            options.processes = None;
            let failed = |reason: String| StormError::Shard {
                shard: share.to_string(),
                reason,
            };
            let mut child = Command::new(&exe)
                .args(["storm", "--shard", &share.to_string()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|error| failed(format!("cannot start {}: {error}", exe.display())))?;
            let (Some(stdin), Some(mut stdout), Some(stderr)) =
                (child.stdin.take(), child.stdout.take(), child.stderr.take())
            else {
                return Err(failed("its standard streams are not pipes".into()));
            };
            let heard = heard_tx.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let what = Signal::parse(&line).map_or(Heard::Said(line), Heard::Signal);
                    if heard.send((index, what)).is_err() {
                        return;
                    }
                }
                let _ = heard.send((index, Heard::Closed));
            });
            let stdout = tokio::spawn(async move {
                let mut text = String::new();
                let _ = stdout.read_to_string(&mut text).await;
                text
            });
            let mut shard = Shard {
                share,
                child,
                stdin: Some(stdin),
                stdout,
                ready: false,
                registered: 0,
                in_service: false,
                calls_over: 0,
                holding: false,
                closed: false,
                said: Vec::new(),
                record,
            };
            let json = serde_json::to_string(&options).map_err(|e| failed(e.to_string()))?;
            if let Err(reason) = shard.tell(&json).await {
                return Err(shard.failure(&reason).await);
            }
            shards.push(shard);
        }
        Ok(Fleet {
            shards,
            heard,
            record: args.record.clone(),
        })
    }

    /// Handles one thing a child said; false when nothing more can be heard.
    async fn hear(&mut self, progress: &indicatif::ProgressBar) -> bool {
        let Some((index, what)) = self.heard.recv().await else {
            return false;
        };
        match what {
            Heard::Signal(Signal::Registered(n)) => {
                self.shards[index].registered = n;
                let sum = self.shards.iter().map(|s| s.registered as u64).sum();
                progress.set_position(sum);
                return true;
            }
            Heard::Signal(Signal::CallsOver(n)) => {
                self.shards[index].calls_over = n;
                progress.set_position(self.shards.iter().map(|s| s.calls_over).sum());
                return true;
            }
            _ => {}
        }
        let shard = &mut self.shards[index];
        match what {
            Heard::Signal(Signal::Registered(_) | Signal::CallsOver(_)) => {}
            Heard::Signal(Signal::InService) => shard.in_service = true,
            Heard::Signal(Signal::Ready) => shard.ready = true,
            Heard::Signal(Signal::Holding) => shard.holding = true,
            Heard::Said(line) => {
                progress.suspend(|| eprintln!("shard {}: {line}", shard.share));
                shard.said.push(line);
            }
            Heard::Closed => shard.closed = true,
        }
        true
    }

    /// Listens until every child has reached `step`; a child that ends before is an error
    /// naming it.
    async fn until(
        &mut self,
        step: Step,
        progress: &indicatif::ProgressBar,
    ) -> Result<(), StormError> {
        while !self.shards.iter().all(|s| s.reached(step)) {
            let heard = self.hear(progress).await;
            if let Some(shard) = self
                .shards
                .iter_mut()
                .find(|s| s.closed && !s.reached(step))
            {
                let what = match step {
                    Step::Ready => "ended before its phones were ready",
                    Step::InService => "ended before its phones were in service",
                    Step::Holding => "ended before its phones had registered",
                };
                return Err(shard.failure(what).await);
            }
            if !heard {
                break;
            }
        }
        Ok(())
    }

    /// Waits until every child has bound its phones' sockets, then starts them all a moment
    /// later at one wall-clock instant, which it returns.
    pub async fn start(
        &mut self,
        progress: &indicatif::ProgressBar,
    ) -> Result<Instant, StormError> {
        self.until(Step::Ready, progress).await?;
        let lead = Duration::from_millis(50);
        let at = wall_time() + lead;
        for shard in &mut self.shards {
            if let Err(reason) = shard.tell(&format!("start {}", at.as_millis())).await {
                return Err(shard.failure(&reason).await);
            }
        }
        Ok(Instant::now() + lead)
    }

    /// Waits until every child's phones are in service (or its wait for them is over), then
    /// starts their routed calls a moment later at one wall-clock instant; the progress bar
    /// turns to the `calls` expected. `false`, and no calls, when no phone of the storm
    /// registered: the storm then ends ([`Fleet::end`]).
    pub async fn start_calls(
        &mut self,
        progress: &indicatif::ProgressBar,
        calls: u64,
    ) -> Result<bool, StormError> {
        self.until(Step::InService, progress).await?;
        if self.shards.iter().all(|s| s.registered == 0) {
            return Ok(false);
        }
        super::progress_calls(progress, calls);
        let at = wall_time() + Duration::from_millis(50);
        for shard in &mut self.shards {
            if let Err(reason) = shard.tell(&format!("calls {}", at.as_millis())).await {
                return Err(shard.failure(&reason).await);
            }
        }
        Ok(true)
    }

    /// Waits until every child's phones have registered or given up (and `--duration` has
    /// passed, and their calls are over); they are held there until [`Fleet::end`].
    pub async fn registered(
        &mut self,
        progress: &indicatif::ProgressBar,
    ) -> Result<(), StormError> {
        self.until(Step::Holding, progress).await
    }

    /// Lets the children end their phones, and adds up their tallies (and captures).
    pub async fn end(mut self, progress: &indicatif::ProgressBar) -> Result<Tally, StormError> {
        for shard in &mut self.shards {
            if let Err(reason) = shard.tell("end").await {
                return Err(shard.failure(&reason).await);
            }
            shard.stdin = None;
        }
        // Pass on what the children still say while they end.
        while !self.shards.iter().all(|s| s.closed) && self.hear(progress).await {}
        let mut tally = Tally::default();
        let mut datagrams = Vec::new();
        for shard in &mut self.shards {
            let failed = |reason: String| StormError::Shard {
                shard: shard.share.to_string(),
                reason,
            };
            let status = shard.child.wait().await;
            let stdout = (&mut shard.stdout).await.unwrap_or_default();
            let status = match status {
                Ok(status) if status.success() => status,
                Ok(status) => return Err(failed(format!("{} with no tally", describe(status)))),
                Err(error) => return Err(failed(format!("cannot wait for it: {error}"))),
            };
            let part: Tally = serde_json::from_str(stdout.trim()).map_err(|error| {
                failed(format!(
                    "{} but its standard output is no tally ({error}): {:?}",
                    describe(status),
                    stdout.chars().take(200).collect::<String>()
                ))
            })?;
            tally.add(part);
            if let Some(path) = &shard.record {
                let capture = crate::pcap::read_file(path)
                    .map_err(|error| failed(format!("its capture: {error}")))?;
                datagrams.extend(capture.datagrams);
                let _ = std::fs::remove_file(path);
            }
        }
        if let Some(path) = &self.record {
            super::phones::write_record(path, datagrams)?;
        }
        Ok(tally)
    }
}
