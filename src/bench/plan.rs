//! The planner's scale (issue: "what-if planning"): `rasgk plan` of 40,000 phones over 24
//! virtual hours with a C-LAN fault every hour, wall time against a target of 10 s on a
//! 2-core machine.
//!
//! The lab is made here: three regions of 34, 33 and 33 C-LANs of 480 sockets (48,000 in
//! all, on 127.0.92.x; nothing listens, the plan has no sockets), ttl_s 3600, setup_ms 20.
//! The phones: `--plan-phones`, round robin over the three regions, a third TTS, arriving
//! over ten minutes and asking for an hour's TTL (a keep-alive every half hour). The
//! timeline: at each whole hour from the first to the 23rd, one C-LAN (a different one
//! each hour, round the regions) goes out of service, and it comes back half an hour
//! later. The figure is the wall time of the whole plan, with the planned datagrams a
//! second of wall time beside it.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use crate::config;
use crate::plan::{self, Scenario};

/// Phones of the bench's plan.
pub const PHONES: usize = 40_000;

/// Virtual hours planned.
pub const HOURS: u32 = 24;

/// C-LANs of each region.
const CLANS: [usize; 3] = [34, 33, 33];

/// The plan's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanScale {
    /// Phones planned.
    pub phones: usize,
    /// Virtual hours.
    pub hours: u32,
    /// C-LAN faults in the timeline.
    pub faults: usize,
    /// Wall seconds of the whole plan.
    pub seconds: f64,
    /// Datagrams planned (both ways).
    pub datagrams: u64,
    /// Phones in service at the end.
    pub in_service: usize,
}

impl PlanScale {
    /// One line of the bench's block.
    pub fn line(&self) -> String {
        format!(
            "{} phones over {} virtual hours, {} C-LAN faults: {:.2} s of wall time, {} \
             datagrams ({:.0} a second of wall time), {} in service at the end",
            self.phones,
            self.hours,
            self.faults,
            self.seconds,
            self.datagrams,
            self.datagrams as f64 / self.seconds.max(1e-9),
            self.in_service
        )
    }
}

/// The lab's configuration.
pub fn lab() -> String {
    let mut out = String::from(
        "[gatekeeper]\ndiscovery = \"127.0.92.1:1719\"\nttl_s = 3600\nseed = 24\nsetup_ms = 20\n\n",
    );
    for region in 1..=3 {
        let _ = writeln!(
            out,
            "[[region]]\nid = {region}\nnetworks = [\"127.{region}.0.0/16\"]\n"
        );
    }
    out.push_str("[[link]]\nregions = [1, 2]\nkind = \"direct\"\n\n");
    out.push_str("[[link]]\nregions = [2, 3]\nkind = \"direct\"\n\n");
    let mut host = 10;
    for (r, &count) in CLANS.iter().enumerate() {
        for i in 0..count {
            host += 1;
            let _ = writeln!(
                out,
                "[[clan]]\nname = \"c{}-{:02}\"\nregion = {}\naddress = \"127.0.92.{host}:1719\"\n",
                r + 1,
                i + 1,
                r + 1
            );
        }
    }
    out.push_str(
        "[[tts]]\naliases = [\"5*\"]\ntts = true\n\n[admin]\nlisten = \"127.0.92.1:7000\"\n",
    );
    out
}

/// The scenario for `phones` phones.
pub fn scenario(phones: usize) -> String {
    let mut out = format!(
        "duration_s = {}\nseed = 24\n\n[[group]]\nregions = [1, 2, 3]\ncount = {phones}\n\
         tts_share = 0.33\nover_s = 600\nttl_s = 3600\nextensions_from = 600000\n\
         tts_extensions_from = 500000\n\n",
        HOURS * 3600
    );
    for hour in 1..HOURS {
        let region = (hour - 1) % 3;
        let index = ((hour - 1) / 3) as usize % CLANS[region as usize] + 1;
        let clan = format!("c{}-{index:02}", region + 1);
        let _ = writeln!(
            out,
            "[[event]]\nat_s = {}\nout_of_service = \"{clan}\"\n",
            hour * 3600
        );
        let _ = writeln!(
            out,
            "[[event]]\nat_s = {}\nin_service = \"{clan}\"\n",
            hour * 3600 + 1800
        );
    }
    out
}

/// Plans it.
pub fn run(phones: usize) -> Result<PlanScale, String> {
    let config = config::from_toml(&lab(), "the plan bench's lab").map_err(|e| e.to_string())?;
    let scenario = Scenario::from_toml(
        &scenario(phones),
        "the plan bench's scenario",
        Path::new("."),
    )
    .map_err(|e| e.to_string())?;
    let faults = scenario.events.len() / 2;
    let started = Instant::now();
    let planned =
        plan::plan(&scenario, config, "the plan bench's lab", |_| {}).map_err(|e| e.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(PlanScale {
        phones,
        hours: HOURS,
        faults,
        seconds,
        datagrams: planned.report.traffic.datagrams,
        in_service: planned.report.in_service,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_day_plans_with_every_phone_in_service() {
        let scale = run(600).expect("the plan runs");
        assert_eq!(scale.faults, 23);
        assert_eq!(scale.in_service, 600, "{}", scale.line());
        assert!(scale.datagrams > 600 * 90, "{}", scale.line());
    }
}
