//! How long a simulated phone waits on its call signalling, the same for `rasgk storm`'s
//! phones (real sockets) and `rasgk plan`'s (virtual time): the back-off between a non-TTS
//! phone's connection attempts ([`Backoff`]) and how long a caller waits for a Connect
//! ([`NO_CONNECT`]).

use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A call not connected this long after its Setup fails `no_connect` (the caller releases
/// it).
pub const NO_CONNECT: Duration = Duration::from_secs(10);

/// The first back-off after a rejected connection.
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(50);

/// The longest back-off.
const MOST_BACKOFF: Duration = Duration::from_secs(2);

/// Waiting times between a non-TTS phone's connection attempts: 50 ms, doubling up to 2 s,
/// each drawn between half and all of that from the phone's seeded generator (so phones
/// reset together do not come back together).
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            next: FIRST_BACKOFF,
        }
    }
}

impl Backoff {
    /// The next wait.
    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> Duration {
        let base = self.next;
        self.next = (base * 2).min(MOST_BACKOFF);
        base / 2 + base.mul_f64(rng.random::<f64>() / 2.0)
    }
}
