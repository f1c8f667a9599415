//! What a user has running against the gatekeeper while the echo ceiling measures it: the
//! dashboard's event stream (`/api/events`, read as it comes) and a Prometheus scrape of
//! `/metrics` every second. The last scrape also says how many replies the retransmission
//! cache sent, which must be none: the ceiling's requests are all new.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::admin_client::{http_get, EventStream};

/// How often `/metrics` is scraped.
const SCRAPE_EVERY: Duration = Duration::from_secs(1);

/// What the watchers saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Watched {
    /// Events read from `/api/events`.
    pub events: u64,
    /// Scrapes of `/metrics` answered.
    pub scrapes: u64,
    /// `rasgk_retransmissions_total` at the last scrape.
    pub retransmissions: u64,
}

/// The watchers of one gatekeeper, until [`Watchers::stop`].
pub struct Watchers {
    admin: SocketAddr,
    stop: Arc<AtomicBool>,
    events: Arc<AtomicU64>,
    scraper: std::thread::JoinHandle<u64>,
}

impl Watchers {
    /// Opens the event stream on `admin` and starts scraping it.
    pub fn start(admin: SocketAddr) -> Result<Watchers, String> {
        let mut stream = EventStream::open(admin, "/api/events")
            .map_err(|e| format!("cannot watch {admin}/api/events: {e}"))?;
        let events = Arc::new(AtomicU64::new(0));
        let counted = events.clone();
        // Reads until the gatekeeper stops and the stream ends.
        std::thread::Builder::new()
            .name("rasgk-bench-events".into())
            .spawn(move || {
                while stream.next_data().is_ok() {
                    counted.fetch_add(1, Ordering::Relaxed);
                }
            })
            .map_err(|e| format!("cannot start the event reader: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let scraper = std::thread::Builder::new()
            .name("rasgk-bench-scrape".into())
            .spawn(move || {
                let mut scrapes = 0;
                while !stopping.load(Ordering::Relaxed) {
                    if matches!(http_get(admin, "/metrics"), Ok((200, _))) {
                        scrapes += 1;
                    }
                    std::thread::sleep(SCRAPE_EVERY);
                }
                scrapes
            })
            .map_err(|e| format!("cannot start the metrics scraper: {e}"))?;
        Ok(Watchers {
            admin,
            stop,
            events,
            scraper,
        })
    }

    /// Stops scraping, and scrapes once more for the retransmission count.
    pub fn stop(self) -> Result<Watched, String> {
        self.stop.store(true, Ordering::Relaxed);
        let scrapes = self.scraper.join().unwrap_or(0);
        let (status, body) = http_get(self.admin, "/metrics")
            .map_err(|e| format!("cannot scrape {}/metrics: {e}", self.admin))?;
        if status != 200 {
            return Err(format!("{}/metrics answered HTTP {status}", self.admin));
        }
        Ok(Watched {
            events: self.events.load(Ordering::Relaxed),
            scrapes: scrapes + 1,
            retransmissions: sample(&body, "rasgk_retransmissions_total")
                .ok_or("/metrics has no rasgk_retransmissions_total".to_string())?,
        })
    }
}

/// The value of metric `name` (without labels) in a Prometheus text page.
fn sample(page: &str, name: &str) -> Option<u64> {
    page.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse::<f64>().ok())
        .map(|value| value as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_is_read_by_its_whole_name() {
        let page = "# HELP rasgk_retransmissions_total Replies resent.\n\
                    # TYPE rasgk_retransmissions_total counter\n\
                    rasgk_retransmissions_total_other 9\n\
                    rasgk_retransmissions_total 12\n";
        assert_eq!(sample(page, "rasgk_retransmissions_total"), Some(12));
        assert_eq!(sample(page, "rasgk_missing"), None);
    }
}
