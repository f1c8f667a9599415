//! A scenario against its lab: what [`Scenario::load`] cannot know without the
//! configuration, checked before anything runs and named, as the scenario's own mistakes,
//! by file and field.
//!
//! - Every phone of a group given by `region`/`regions` is in that region by the lab's
//!   network map (127.R.x.y in region R), so that the plan's regions are the scenario's.
//! - With `strict_network_map`, every phone's address is in the map (or the gatekeeper
//!   refuses it, and the plan would show nothing but refusals).
//! - The lab's `[[tts]]` rules make TTS exactly the phones `tts_share` makes TTS (a
//!   simulated phone waits for the gatekeeper's connection or opens its own as the scenario
//!   says; when the lab disagrees, neither side connects, or both do).
//! - Every reload's file loads.
//! - Every event naming a C-LAN names one of the configuration in force at its time (the
//!   lab's, or the last reload's before it).

use std::collections::HashMap;
use std::net::IpAddr;

use super::scenario::{Addresses, Event, Group, Scenario, ScenarioError};
use super::PlanError;
use crate::config::{self, Config};

/// Checks `scenario` against the lab `config` (named `lab` in errors); gives the
/// configurations of its reload events, by their place in `scenario.events`.
pub(super) fn against(
    scenario: &Scenario,
    config: &Config,
    lab: &str,
) -> Result<HashMap<usize, Config>, PlanError> {
    let error = |field: String, message: String| {
        PlanError::Scenario(ScenarioError::Field {
            origin: scenario.origin.clone(),
            field,
            message,
        })
    };
    for (i, group) in scenario.groups.iter().enumerate() {
        check_phones(group, config, lab)
            .map_err(|(key, message)| error(format!("group[{i}].{key}"), message))?;
    }
    let mut reloads = HashMap::new();
    // The configuration in force: the lab's, or the last reload's (its place, its name).
    let mut current: Option<(usize, String)> = None;
    for (position, timed) in scenario.events.iter().enumerate() {
        let field = format!("event[{}].{}", timed.index, timed.event.key());
        if let Event::Reload(path) = &timed.event {
            let reloaded = config::load(path).map_err(|e| error(field.clone(), e.to_string()))?;
            reloads.insert(position, reloaded);
            current = Some((
                position,
                format!("{}, reloaded at {} s", path.display(), timed.at_s),
            ));
        }
        if let Some(name) = timed.event.clan() {
            let (config, name_of) = match &current {
                Some((position, name_of)) => (&reloads[position], name_of.as_str()),
                None => (config, lab),
            };
            if config.clan(name).is_none() {
                let clans: Vec<&str> = config.clans.iter().map(|c| c.name.as_str()).collect();
                return Err(error(
                    field,
                    format!(
                        "no C-LAN is named {name:?} in {name_of}, in force at {} s (its \
                         C-LANs: {})",
                        timed.at_s,
                        clans.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(reloads)
}

/// Every phone of `group` as the lab would place it: its home region and whether it is
/// TTS. The error names the key of the group at fault.
fn check_phones(group: &Group, config: &Config, lab: &str) -> Result<(), (&'static str, String)> {
    let key = group.addresses_key;
    for n in 0..group.count {
        let ip = group.address(n);
        let mapped = config.mapped_region(IpAddr::V4(ip));
        if let Addresses::Regions(_) = group.addresses {
            let region = u16::from(ip.octets()[1]);
            if config.region(region).is_none() {
                let defined: Vec<String> =
                    config.regions.iter().map(|r| r.id.to_string()).collect();
                return Err((
                    key,
                    format!(
                        "region {region} is not defined in {lab} (regions: {})",
                        defined.join(", ")
                    ),
                ));
            }
            if mapped != Some(region) {
                let placed = mapped.map_or("no region".to_string(), |r| format!("region {r}"));
                return Err((
                    key,
                    format!(
                        "its phone {} takes {ip} as a phone of region {region}, but {lab}'s \
                         network map puts {ip} in {placed}",
                        n + 1
                    ),
                ));
            }
        } else if mapped.is_none() && config.gatekeeper.strict_network_map {
            return Err((
                key,
                format!(
                    "its phone {} at {ip} is in no region of {lab}'s network map, and \
                     strict_network_map refuses it",
                    n + 1
                ),
            ));
        }
        let tts = group.is_tts(n);
        let extension = group.extension(n);
        if let Some(by_lab) = lab_tts(config, extension, mapped) {
            if by_lab != tts {
                let (key, said, is) = if tts {
                    ("tts_extensions_from", "TTS", "not TTS")
                } else {
                    ("extensions_from", "not TTS", "TTS")
                };
                return Err((
                    key,
                    format!(
                        "its phone {} (extension {extension}, at {ip}) is {said} by tts_share \
                         ({}) but {is} by the [[tts]] rules of {lab}: give its {} phones \
                         extensions those rules agree with",
                        n + 1,
                        group.tts_share,
                        if tts { "TTS" } else { "other" }
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Whether the lab's `[[tts]]` rules make a phone with this extension TTS (the first
/// matching rule, else `tts_default`); `None` when that depends on a home region the
/// network map does not give.
fn lab_tts(config: &Config, extension: u32, region: Option<u16>) -> Option<bool> {
    let text = extension.to_string();
    for rule in &config.tts {
        // The gatekeeper's own test of a rule (`TtsRule::matches`). Without a home region
        // only a rule on no region can be read: one on regions that takes the extension
        // leaves the phone open.
        let region = match (region, rule.regions.first()) {
            (Some(region), _) => region,
            (None, None) => 0,
            (None, Some(&first)) => {
                if rule.matches([text.as_str()], first) {
                    return None;
                }
                continue;
            }
        };
        if rule.matches([text.as_str()], region) {
            return Some(rule.tts);
        }
    }
    Some(config.gatekeeper.tts_default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_rule_decides_and_an_unknown_region_leaves_it_open() {
        let config = config::from_toml(
            "[[region]]\nid = 1\nnetworks = [\"127.1.0.0/16\"]\n\
             [[region]]\nid = 2\nnetworks = [\"127.2.0.0/16\"]\n\
             [[clan]]\nname = \"a\"\nregion = 1\naddress = \"127.0.0.11:1719\"\n\
             [[tts]]\naliases = [\"5*\"]\nregions = [2]\n\
             [[tts]]\naliases = [\"5*\"]\ntts = false\n\
             [[tts]]\naliases = [\"7*\"]\n",
            "t.toml",
        )
        .expect("the lab reads");
        assert_eq!(lab_tts(&config, 50_000, Some(2)), Some(true));
        assert_eq!(lab_tts(&config, 50_000, Some(1)), Some(false));
        assert_eq!(lab_tts(&config, 50_000, None), None);
        assert_eq!(lab_tts(&config, 70_000, None), Some(true));
        assert_eq!(lab_tts(&config, 60_000, None), Some(false));
    }
}
