//! `rasgk serve --state FILE`: the core's [`State`] as JSON, written atomically (a temporary
//! file beside it, fsync, rename, fsync of the directory) every `--state-interval` and at a
//! clean shutdown, and read back at start.
//!
//! The state task only takes the snapshot (a copy of the registrations); serialising and
//! writing happen on a blocking thread, one write at a time: a tick that finds the last write
//! still running is skipped, so a slow disk never holds up RAS.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::gatekeeper::state::{State, STATE_VERSION};
use crate::gatekeeper::Gatekeeper;

/// Where and how often the state is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateFile {
    /// The file.
    pub path: PathBuf,
    /// How often it is written.
    pub interval: Duration,
}

/// A state file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateFileError {
    /// It exists but cannot be read.
    #[error("state file {path}: cannot read: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// It is not a state file (or it is damaged).
    #[error("state file {path}: not a rasgk state file ({reason})")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// Another version of the format.
    #[error(
        "state file {path}: format version {found}, but this rasgk reads version {STATE_VERSION}"
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// The version it has.
        found: u32,
    },
}

/// The state in `path`; `None` when there is no such file (a first start).
pub fn read(path: &Path) -> Result<Option<State>, StateFileError> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(StateFileError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    // The version first, so that a newer format is named as such, not as damage.
    #[derive(serde::Deserialize)]
    struct Version {
        version: u32,
    }
    let parse = |reason: serde_json::Error| StateFileError::Parse {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    let found = serde_json::from_slice::<Version>(&text)
        .map_err(parse)?
        .version;
    if found != STATE_VERSION {
        return Err(StateFileError::Version {
            path: path.to_path_buf(),
            found,
        });
    }
    serde_json::from_slice(&text).map(Some).map_err(parse)
}

/// What one write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Octets in the file.
    pub bytes: usize,
    /// Serialising and writing, fsyncs included.
    pub elapsed: Duration,
}

/// Writes `state` to `path` atomically: a reader (or a restart after a crash at any point)
/// finds the old file or the new one, never half of one.
pub fn write(path: &Path, state: &State) -> std::io::Result<Written> {
    let started = Instant::now();
    let octets = serde_json::to_vec(state).map_err(std::io::Error::other)?;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(&octets)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, path)?;
    // The rename itself is durable only once the directory is synced.
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if let Ok(directory) = std::fs::File::open(directory) {
        let _ = directory.sync_all();
    }
    Ok(Written {
        bytes: octets.len(),
        elapsed: started.elapsed(),
    })
}

/// Writes the gatekeeper's state at an interval from the state task.
pub(super) struct Persister {
    file: StateFile,
    writing: Option<tokio::task::JoinHandle<()>>,
    /// Whether the last write failed (so a failing disk is logged once, not every second).
    failing: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Persister {
    pub fn new(file: StateFile) -> Persister {
        Persister {
            file,
            writing: None,
            failing: Default::default(),
        }
    }

    pub fn interval(&self) -> Duration {
        self.file.interval
    }

    /// Takes a snapshot and writes it on a blocking thread, unless the last write is still
    /// running.
    pub fn save(&mut self, gatekeeper: &Gatekeeper) {
        if self.writing.as_ref().is_some_and(|w| !w.is_finished()) {
            tracing::debug!("state file: the last write is still running; this tick skipped");
            return;
        }
        let state = gatekeeper.snapshot_state(Instant::now());
        let path = self.file.path.clone();
        let failing = self.failing.clone();
        self.writing = Some(tokio::task::spawn_blocking(move || {
            write_logged(&path, &state, &failing);
        }));
    }

    /// The last snapshot, written before returning (at shutdown).
    pub async fn finish(mut self, gatekeeper: &Gatekeeper) {
        if let Some(writing) = self.writing.take() {
            let _ = writing.await;
        }
        let state = gatekeeper.snapshot_state(Instant::now());
        let path = self.file.path.clone();
        let failing = self.failing.clone();
        let _ = tokio::task::spawn_blocking(move || {
            write_logged(&path, &state, &failing);
            tracing::info!(
                path = %path.display(),
                registrations = state.registrations.len(),
                "state file written at shutdown"
            );
        })
        .await;
    }
}

fn write_logged(path: &Path, state: &State, failing: &std::sync::atomic::AtomicBool) {
    use std::sync::atomic::Ordering;
    match write(path, state) {
        Ok(written) => {
            failing.store(false, Ordering::Relaxed);
            tracing::debug!(
                path = %path.display(),
                registrations = state.registrations.len(),
                reservations = state.reservations.len(),
                bytes = written.bytes,
                ms = written.elapsed.as_secs_f64() * 1e3,
                "state file written"
            );
        }
        Err(error) => {
            if !failing.swap(true, Ordering::Relaxed) {
                tracing::error!(path = %path.display(), %error, "cannot write the state file");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("rasgk-state-{}-{name}", std::process::id()))
    }

    fn state() -> State {
        State {
            version: STATE_VERSION,
            written_ms: 1,
            last_key: 7,
            registrations: Vec::new(),
            reservations: Vec::new(),
        }
    }

    #[test]
    fn a_written_state_reads_back_and_leaves_no_temporary_file() {
        let path = temp("roundtrip.json");
        write(&path, &state()).unwrap();
        assert_eq!(read(&path).unwrap(), Some(state()));
        let mut temporary = path.as_os_str().to_owned();
        temporary.push(".tmp");
        assert!(!Path::new(&temporary).exists());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(read(&path).unwrap(), None, "no file: a first start");
    }

    #[test]
    fn damaged_and_foreign_files_are_refused_naming_the_file() {
        let path = temp("bad.json");
        for (text, expect) in [
            (
                &b"{\"version\": 1, \"written_ms\": "[..],
                "not a rasgk state file",
            ),
            (&b"\x00\x01garbage"[..], "not a rasgk state file"),
            (&b"{\"version\": 2}"[..], "format version 2"),
        ] {
            std::fs::write(&path, text).unwrap();
            let error = read(&path).expect_err("refused").to_string();
            assert!(error.contains(expect), "{error}");
            assert!(error.contains(&path.display().to_string()), "{error}");
        }
        std::fs::remove_file(&path).unwrap();
    }
}
