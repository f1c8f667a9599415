//! The drill: which checks an exam runs, in which order, how long each waits for the
//! endpoint, and the time to live the exam's gatekeeper grants. The built-in one
//! ([`BUILT_IN`], `rasgk exam --print-default-drill`) runs every check; a drill file
//! (`--drill FILE`) is TOML of the same shape, refused with its file, key and line when it
//! is wrong, before anything starts.

use std::time::Duration;

use crate::config::toml_error::from_toml_error;
use crate::config::ConfigError;

use super::catalogue::{self, Check};

/// The built-in drill, commented.
pub const BUILT_IN: &str = include_str!("default_drill.toml");

/// A drill, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Drill {
    /// Its file, or `built-in`.
    pub origin: String,
    /// The `timeToLive` the exam's gatekeeper grants, seconds.
    pub ttl_s: u32,
    /// How many times to live the `keep-alive` check watches.
    pub keep_alive_periods: u32,
    /// The checks, in order.
    pub steps: Vec<Step>,
}

/// One check of a drill.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// The check.
    pub check: &'static Check,
    /// The longest its step waits for the endpoint.
    pub wait: Duration,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DrillFile {
    ttl_s: u32,
    #[serde(default = "two")]
    keep_alive_periods: u32,
    steps: Vec<String>,
    #[serde(default)]
    wait_s: std::collections::BTreeMap<String, f64>,
}

fn two() -> u32 {
    2
}

/// The time to live the exam grants, at least this (a keep-alive must have time to be
/// sent and answered, and retransmitted once).
const LEAST_TTL_S: u32 = 6;

impl Drill {
    /// The built-in drill.
    pub fn built_in() -> Drill {
        Drill::from_toml(BUILT_IN, "built-in").expect("the built-in drill is valid")
    }

    /// The drill of TOML `text`; `origin` is the file name errors show.
    pub fn from_toml(text: &str, origin: &str) -> Result<Drill, ConfigError> {
        let file: DrillFile =
            toml::from_str(text).map_err(|e| from_toml_error(&e, text, origin))?;
        let line_of = |needle: &str| {
            text.lines()
                .position(|line| line.contains(needle))
                .map(|i| format!(" (line {})", i + 1))
                .unwrap_or_default()
        };
        if file.ttl_s < LEAST_TTL_S || file.ttl_s > 3600 {
            return Err(ConfigError::new(
                origin,
                "ttl_s",
                format!(
                    "{} is not between {LEAST_TTL_S} and 3600 seconds{}",
                    file.ttl_s,
                    line_of("ttl_s")
                ),
            ));
        }
        if !(1..=10).contains(&file.keep_alive_periods) {
            return Err(ConfigError::new(
                origin,
                "keep_alive_periods",
                format!(
                    "{} is not between 1 and 10{}",
                    file.keep_alive_periods,
                    line_of("keep_alive_periods")
                ),
            ));
        }
        let ttl = Duration::from_secs(u64::from(file.ttl_s));
        let mut steps: Vec<Step> = Vec::new();
        for (i, id) in file.steps.iter().enumerate() {
            let check = catalogue::check(id).ok_or_else(|| {
                ConfigError::new(
                    origin,
                    format!("steps[{i}]"),
                    format!(
                        "no check is called {id:?}{}; the checks are {}",
                        line_of(&format!("\"{id}\"")),
                        ids_list()
                    ),
                )
            })?;
            if steps.iter().any(|s| s.check.id == check.id) {
                return Err(ConfigError::new(
                    origin,
                    format!("steps[{i}]"),
                    format!("{id:?} is named twice{}", line_of(&format!("\"{id}\""))),
                ));
            }
            steps.push(Step {
                check,
                wait: default_wait(check.id, ttl),
            });
        }
        if steps.is_empty() {
            return Err(ConfigError::new(
                origin,
                "steps",
                format!("no check named{}", line_of("steps")),
            ));
        }
        for (id, &wait_s) in &file.wait_s {
            let field = format!("wait_s.{id}");
            let Some(step) = steps.iter_mut().find(|s| s.check.id == id) else {
                return Err(ConfigError::new(
                    origin,
                    field,
                    format!(
                        "{id:?} is not a step of this drill{}",
                        line_of(&format!("{id} ="))
                    ),
                ));
            };
            if !(wait_s.is_finite() && (1.0..=3600.0).contains(&wait_s)) {
                return Err(ConfigError::new(
                    origin,
                    field,
                    format!(
                        "{wait_s} is not between 1 and 3600 seconds{}",
                        line_of(&format!("{id} ="))
                    ),
                ));
            }
            step.wait = Duration::from_secs_f64(wait_s);
        }
        Ok(Drill {
            origin: origin.to_string(),
            ttl_s: file.ttl_s,
            keep_alive_periods: file.keep_alive_periods,
            steps,
        })
    }

    /// The drill reading `path`.
    pub fn load(path: &std::path::Path) -> Result<Drill, ConfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new(&origin, "", format!("cannot read it: {e}")))?;
        Drill::from_toml(&text, &origin)
    }

    /// Only the checks `ids` (`--only`), in the drill's order; an id that names no check,
    /// or none of this drill's, is refused.
    pub fn only(mut self, ids: &[String]) -> Result<Drill, String> {
        for id in ids {
            if catalogue::check(id).is_none() {
                return Err(format!(
                    "--only {id}: no check is called that; the checks are {}",
                    ids_list()
                ));
            }
            if !self.steps.iter().any(|s| s.check.id == id) {
                return Err(format!(
                    "--only {id}: the drill {} has no such step",
                    self.origin
                ));
            }
        }
        self.steps.retain(|s| ids.iter().any(|id| id == s.check.id));
        Ok(self)
    }

    /// The time to live.
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(u64::from(self.ttl_s))
    }

    /// The step of a check, if the drill runs it.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.check.id == id)
    }
}

/// How long a step waits for the endpoint unless the drill says: what the check needs the
/// endpoint to do, with room for a retransmission.
fn default_wait(id: &str, ttl: Duration) -> Duration {
    let s = Duration::from_secs;
    match id {
        // Until its next keep-alive, and its retransmission.
        "retransmission" | "restart" | "alternate" | "clan-out" | "home-out" => ttl + s(15),
        "irq" => s(8),
        "urq" => s(20),
        "call-in" | "call-out" => s(30),
        _ => s(10),
    }
}

fn ids_list() -> String {
    let all: Vec<&str> = catalogue::CHECKS.iter().map(|c| c.id).collect();
    all.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_drill_runs_every_check_in_the_catalogues_order() {
        let drill = Drill::built_in();
        let steps: Vec<&str> = drill.steps.iter().map(|s| s.check.id).collect();
        let checks: Vec<&str> = catalogue::CHECKS.iter().map(|c| c.id).collect();
        assert_eq!(steps, checks);
        assert_eq!(drill.origin, "built-in");
    }

    #[test]
    fn a_bad_drill_names_its_key_and_line() {
        let e =
            Drill::from_toml("ttl_s = 20\nsteps = [\"urq\", \"nope\"]\n", "d.toml").unwrap_err();
        assert_eq!(e.field, "steps[1]");
        assert!(
            e.reason.contains("line 2") && e.reason.contains("\"nope\""),
            "{e}"
        );
        let e = Drill::from_toml("ttl_s = 2\nsteps = [\"urq\"]\n", "d.toml").unwrap_err();
        assert_eq!(e.field, "ttl_s");
        assert!(e.reason.contains("line 1"), "{e}");
        let e =
            Drill::from_toml("ttl_s = 20\nsteps = [\"urq\"]\ncolour = 1\n", "d.toml").unwrap_err();
        assert!(
            e.to_string().contains("colour") && e.reason.contains("line 3"),
            "{e}"
        );
        let e = Drill::from_toml(
            "ttl_s = 20\nsteps = [\"urq\"]\n[wait_s]\nirq = 3\n",
            "d.toml",
        )
        .unwrap_err();
        assert_eq!(e.field, "wait_s.irq");
        assert!(e.reason.contains("line 4"), "{e}");
    }

    #[test]
    fn only_keeps_the_drills_order_and_refuses_strangers() {
        let drill = Drill::built_in()
            .only(&["urq".to_string(), "discovery".to_string()])
            .unwrap();
        let ids: Vec<&str> = drill.steps.iter().map(|s| s.check.id).collect();
        assert_eq!(ids, ["discovery", "urq"]);
        assert!(Drill::built_in().only(&["nope".to_string()]).is_err());
    }
}
