//! `rasgk status`: the admin port's C-LAN and region views as a terminal table. The views
//! are read through [`crate::admin_client`].

use std::fmt::Write as _;

use crate::gatekeeper::{ClanView, RegionView};

/// A bar of `width` cells: `█` for sockets, `▒` for reservations, `·` for free places.
fn bar(sockets: u32, reserved: u32, cap: u32, width: usize) -> String {
    let cells = |n: u32| -> usize {
        if cap == 0 {
            0
        } else {
            (u64::from(n) * width as u64).div_ceil(u64::from(cap)) as usize
        }
    };
    let used = cells(sockets).min(width);
    let held = cells(sockets + reserved).min(width).saturating_sub(used);
    format!(
        "{}{}{}",
        "█".repeat(used),
        "▒".repeat(held),
        "·".repeat(width - used - held)
    )
}

/// The table: per region its totals and spill, then one line per C-LAN.
pub fn render(clans: &[ClanView], regions: &[RegionView]) -> String {
    let mut out = String::new();
    let name_width = clans.iter().map(|c| c.name.len()).max().unwrap_or(5).max(5);
    let address_width = clans
        .iter()
        .map(|c| c.address.to_string().len())
        .max()
        .unwrap_or(7)
        .max(7);
    for region in regions {
        let spill: Vec<String> = region
            .spill_to
            .iter()
            .map(|(to, n)| format!("{n} → region {to}"))
            .collect();
        let _ = writeln!(
            out,
            "region {} {}  sockets {}/{}  reserved {}  home phones {}{}",
            region.id,
            region.name,
            region.sockets,
            region.max_sockets,
            region.reserved,
            region.home_phones,
            if spill.is_empty() {
                String::new()
            } else {
                format!("  spill: {}", spill.join(", "))
            }
        );
        for clan in clans.iter().filter(|c| c.region == region.id) {
            let state = if clan.in_service { "in service" } else { "OUT" };
            let percent = if clan.max_sockets == 0 {
                0.0
            } else {
                f64::from(clan.sockets + clan.reserved) * 100.0 / f64::from(clan.max_sockets)
            };
            let kind = match clan.kind {
                crate::config::ClanKind::Clan => "clan",
                crate::config::ClanKind::Pe => "pe",
            };
            // Avaya's "sockets before warning": the threshold, and WARNING while it stands.
            let warning = match (clan.warn_sockets, clan.warning) {
                (Some(warn), true) => format!("  WARNING (warns at {warn})"),
                (Some(warn), false) => format!("  warns at {warn}"),
                (None, _) => String::new(),
            };
            let _ = writeln!(
                out,
                "  {:<name_width$}  {:<address_width$}  p{}  {:<4}  {:<10}  {:>5} +{:<3} / {:<5} {} {:>5.1}%{}",
                clan.name,
                clan.address.to_string(),
                clan.priority,
                kind,
                state,
                clan.sockets,
                clan.reserved,
                clan.max_sockets,
                bar(clan.sockets, clan.reserved, clan.max_sockets, 20),
                percent,
                warning,
            );
            if clan.established + clan.setups + clan.queued + clan.calls > 0 {
                // Routed calls (docs/rules.md §8.7): calls with a leg here, and the
                // connections they need beyond the phones' sockets.
                let calls = if clan.calls + clan.call_connections > 0 {
                    format!(
                        "  calls {}  call connections {}",
                        clan.calls, clan.call_connections
                    )
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "  {:<name_width$}  tcp {}  established {}  setting up {}  queued {}{}",
                    "",
                    clan.signal_address
                        .map_or_else(String::new, |a| a.to_string()),
                    clan.established,
                    clan.setups,
                    clan.queued,
                    calls,
                );
            }
        }
    }
    let sockets: u32 = clans.iter().map(|c| c.sockets).sum();
    let reserved: u32 = clans.iter().map(|c| c.reserved).sum();
    let cap: u32 = clans
        .iter()
        .filter(|c| c.in_service)
        .map(|c| c.max_sockets)
        .sum();
    let warning = clans.iter().filter(|c| c.warning).count();
    let _ = writeln!(
        out,
        "total  sockets {sockets}/{cap}  reserved {reserved}  C-LANs {} ({} in service{})",
        clans.len(),
        clans.iter().filter(|c| c.in_service).count(),
        if warning > 0 {
            format!(", {warning} over warn_sockets")
        } else {
            String::new()
        }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_round_up_and_fill_exactly() {
        assert_eq!(bar(0, 0, 480, 4), "····");
        assert_eq!(bar(1, 0, 480, 4), "█···");
        assert_eq!(bar(480, 0, 480, 4), "████");
        assert_eq!(bar(240, 120, 480, 4), "██▒·");
        assert_eq!(
            bar(500, 0, 480, 4),
            "████",
            "over the cap after a cap change"
        );
    }

    #[test]
    fn a_clan_over_its_warn_sockets_says_so() {
        let clan = |name: &str, sockets, warn_sockets, warning| ClanView {
            name: name.to_string(),
            region: 1,
            node: "cm1".to_string(),
            address: "127.0.1.1:1719".parse().unwrap(),
            address6: None,
            priority: 1,
            max_sockets: 480,
            sockets,
            reserved: 0,
            in_service: true,
            kind: crate::config::ClanKind::Clan,
            signal_address: None,
            established: 0,
            call_connections: 0,
            calls: 0,
            setups: 0,
            queued: 0,
            warn_sockets,
            warning,
        };
        let clans = [
            clan("clan-1a", 410, Some(400), true),
            clan("clan-1b", 390, Some(400), false),
            clan("clan-1c", 10, None, false),
        ];
        let table = render(&clans, &[]);
        let text = render_lines(&clans);
        assert!(text[0].ends_with("WARNING (warns at 400)"), "{text:?}");
        assert!(text[1].ends_with("  warns at 400"), "{text:?}");
        assert!(text[2].ends_with('%'), "{text:?}");
        assert!(
            table.ends_with("C-LANs 3 (3 in service, 1 over warn_sockets)\n"),
            "{table}"
        );
    }

    #[test]
    fn routed_calls_show_on_the_clans_tcp_line() {
        let mut clan: ClanView = serde_json::from_value(serde_json::json!({
            "name": "clan-1a", "region": 1, "node": "cm1", "address": "127.0.1.1:1719",
            "priority": 1, "max_sockets": 480, "sockets": 12, "reserved": 0,
            "in_service": true, "kind": "clan", "signal_address": "127.0.1.1:1720",
            "established": 12, "call_connections": 2, "calls": 7
        }))
        .expect("a C-LAN view");
        let region: RegionView = serde_json::from_value(serde_json::json!({
            "id": 1, "name": "hq", "clans": [], "sockets": 0, "reserved": 0, "max_sockets": 0,
            "home_phones": 0, "spill_to": {}, "spill_from": {}, "direct": [], "indirect": []
        }))
        .expect("a region view");
        let table = render(std::slice::from_ref(&clan), std::slice::from_ref(&region));
        assert!(
            table.contains("established 12  setting up 0  queued 0  calls 7  call connections 2"),
            "{table}"
        );
        clan.calls = 0;
        clan.call_connections = 0;
        let table = render(&[clan], &[region]);
        assert!(
            !table.contains("calls"),
            "no calls column without calls: {table}"
        );
    }

    /// The C-LAN lines of [`render`] for C-LANs of region 1.
    fn render_lines(clans: &[ClanView]) -> Vec<String> {
        let region: RegionView = serde_json::from_value(serde_json::json!({
            "id": 1, "name": "hq", "clans": [], "sockets": 0, "reserved": 0, "max_sockets": 0,
            "home_phones": 0, "spill_to": {}, "spill_from": {}, "direct": [], "indirect": []
        }))
        .expect("a region view");
        render(clans, &[region])
            .lines()
            .filter(|l| l.starts_with("  clan"))
            .map(str::to_string)
            .collect()
    }
}
