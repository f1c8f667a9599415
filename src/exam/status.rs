//! What an exam running looks like from outside: its progress endpoint by endpoint, posted
//! to its gatekeeper's admin port (`POST /api/exam`) so that `GET /api/exam` and the
//! dashboard show it while it runs.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::admin_client;

use super::engine::{Engine, Progress};

/// The exam as `/api/exam` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ExamStatus {
    /// Still running?
    pub running: bool,
    /// Since it started, seconds.
    pub elapsed_s: f64,
    /// The drill (its file, or `built-in`).
    pub drill: String,
    /// The checks of the drill, in order.
    pub checks: Vec<&'static str>,
    /// Each endpoint's progress.
    pub endpoints: Vec<EndpointStatus>,
}

/// One endpoint's.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EndpointStatus {
    /// Where it is.
    #[serde(flatten)]
    pub progress: Progress,
    /// Its checks graded so far: id and verdict.
    pub verdicts: Vec<(String, &'static str)>,
}

impl ExamStatus {
    /// The status of `engine`, `elapsed` into the exam.
    pub fn of(engine: &Engine, elapsed: Duration, running: bool) -> ExamStatus {
        let graded = engine.graded();
        ExamStatus {
            running,
            elapsed_s: (elapsed.as_secs_f64() * 10.0).round() / 10.0,
            drill: engine.drill().origin.clone(),
            checks: engine.drill().steps.iter().map(|s| s.check.id).collect(),
            endpoints: engine
                .progress()
                .into_iter()
                .zip(graded)
                .map(|(progress, verdicts)| EndpointStatus {
                    progress,
                    verdicts: verdicts
                        .iter()
                        .map(|g| (g.id.clone(), g.verdict.name()))
                        .collect(),
                })
                .collect(),
        }
    }
}

/// Posts the status at most once a second (and the last one always).
pub struct StatusPoster {
    admin: SocketAddr,
    token: Option<String>,
    last: Option<Instant>,
}

impl StatusPoster {
    /// A poster to the admin port at `admin`.
    pub fn new(admin: SocketAddr, token: Option<String>) -> StatusPoster {
        StatusPoster {
            admin,
            token,
            last: None,
        }
    }

    /// Posts the status `make` builds (built only then) if a second has passed since the
    /// last, or `always`.
    pub fn post(&mut self, make: impl FnOnce() -> ExamStatus, always: bool) {
        if !always
            && self
                .last
                .is_some_and(|at| at.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        self.last = Some(Instant::now());
        if let Ok(body) = serde_json::to_string(&make()) {
            // The status is for watchers; an admin port that does not take it costs the
            // exam nothing.
            let _ = admin_client::http_post(self.admin, "/api/exam", &body, self.token.as_deref());
        }
    }
}
