//! Who may register (docs/rules.md §13). The sources have no rule for it; these are ours
//! (docs/reliability.md, "Who may register"):
//!
//! - `strict_network_map = true`: a source outside every region's `networks` gets GRJ
//!   `terminalExcluded` / RRJ `securityDenial` (RegistrationRejectReason has no
//!   `terminalExcluded`).
//! - `[[password]]`: see [`super::passwords`], whose token time stamps are checked against
//!   the wall clock kept here.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::Gatekeeper;

impl Gatekeeper {
    /// Is this source refused by `strict_network_map` (outside every region's networks)?
    pub(super) fn excluded(&self, from: SocketAddr) -> bool {
        self.config.gatekeeper.strict_network_map && self.config.mapped_region(from.ip()).is_none()
    }

    /// Sets the wall clock: `at` is `since_epoch` after the UNIX epoch. Password tokens'
    /// time stamps are checked against it (and the state file's expiry times are written
    /// in it). [`Gatekeeper::new`] sets it from the system clock.
    pub fn set_wall_clock(&mut self, at: Instant, since_epoch: Duration) {
        self.wall = (at, since_epoch);
    }

    /// The wall clock at `now`, as time since the UNIX epoch.
    pub fn wall_clock(&self, now: Instant) -> Duration {
        let (at, since_epoch) = self.wall;
        match now.checked_duration_since(at) {
            Some(after) => since_epoch + after,
            None => since_epoch.saturating_sub(at - now),
        }
    }
}
