//! `rasgk status`: the admin port's C-LAN and region views as a terminal table.
//!
//! It talks plain HTTP/1.1 to the admin port with the standard library only: one GET per
//! view, `Connection: close`; the admin port is ours and loopback by default, so no TLS,
//! proxies or redirects are involved.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::gatekeeper::{ClanView, RegionView};

/// Why the admin port could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// The address is not `host:port` or `http://host:port`.
    #[error(
        "--admin {0:?} is not host:port or http://host:port (an IPv6 address in brackets: \
         [fd00::100]:7000)"
    )]
    BadAddress(String),
    /// Nothing answered.
    #[error(
        "cannot reach the admin port at {address}: {source} (is `rasgk serve` running there?)"
    )]
    Unreachable {
        /// Where.
        address: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// It answered, but not with what `rasgk serve` sends.
    #[error("{address}{path}: {reason}")]
    BadAnswer {
        /// Where.
        address: String,
        /// Which view.
        path: &'static str,
        /// What was wrong.
        reason: String,
    },
}

/// The admin port's address from `host:port` or `http://host:port[/]`, an IPv6 host in
/// brackets (`[fd00::100]:7000`): one without them is refused, since `fd00::100:7000` reads
/// as an address with no port as well as one with port 7000.
pub fn admin_address(text: &str) -> Result<SocketAddr, StatusError> {
    let bare = text
        .strip_prefix("http://")
        .unwrap_or(text)
        .trim_end_matches('/');
    if let Ok(address) = bare.parse::<SocketAddr>() {
        return Ok(address);
    }
    let bracketless_ipv6 = bare
        .rsplit_once(':')
        .is_some_and(|(host, _)| host.contains(':') && !host.starts_with('['));
    if bracketless_ipv6 {
        return Err(StatusError::BadAddress(text.to_string()));
    }
    bare.to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| StatusError::BadAddress(text.to_string()))
}

/// One plain HTTP/1.1 `GET path` (`Connection: close`): the status code and the body, with
/// chunked transfer encoding undone. An answer that is not HTTP is `InvalidData`.
pub fn http_get(address: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let invalid =
        |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(3))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nAccept: application/json\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let text = String::from_utf8(response).map_err(|_| invalid("the answer is not UTF-8"))?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| invalid("the answer is not HTTP"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| invalid("the answer has no HTTP status"))?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        unchunk(body).ok_or_else(|| invalid("broken chunked encoding"))?
    } else {
        body.to_string()
    };
    Ok((status, body))
}

/// The body of `GET path` on the admin port (HTTP 200 only).
pub fn get_json(address: SocketAddr, path: &'static str) -> Result<String, StatusError> {
    let bad = |reason: String| StatusError::BadAnswer {
        address: address.to_string(),
        path,
        reason,
    };
    match http_get(address, path) {
        Ok((200, body)) => Ok(body),
        Ok((status, body)) => Err(bad(format!("HTTP status {status}: {}", body.trim()))),
        Err(error) if error.kind() == std::io::ErrorKind::InvalidData => {
            Err(bad(error.to_string()))
        }
        Err(source) => Err(StatusError::Unreachable {
            address: address.to_string(),
            source,
        }),
    }
}

fn unchunk(mut rest: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(after.get(..size)?);
        rest = after.get(size..)?.strip_prefix("\r\n")?;
    }
}

/// Reads both views from the admin port.
pub fn fetch(address: SocketAddr) -> Result<(Vec<ClanView>, Vec<RegionView>), StatusError> {
    let clans = fetch_clans(address)?;
    let text = get_json(address, "/api/regions")?;
    let regions = serde_json::from_str(&text).map_err(|error| StatusError::BadAnswer {
        address: address.to_string(),
        path: "/api/regions",
        reason: format!("not the JSON rasgk serve sends: {error}"),
    })?;
    Ok((clans, regions))
}

/// `/api/clans` alone, for a sampler that must load the gatekeeper as little as it can.
pub fn fetch_clans(address: SocketAddr) -> Result<Vec<ClanView>, StatusError> {
    let text = get_json(address, "/api/clans")?;
    serde_json::from_str(&text).map_err(|error| StatusError::BadAnswer {
        address: address.to_string(),
        path: "/api/clans",
        reason: format!("not the JSON rasgk serve sends: {error}"),
    })
}

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

    #[test]
    fn addresses_with_or_without_scheme() {
        assert_eq!(admin_address("127.0.0.1:7000").unwrap().port(), 7000);
        assert_eq!(
            admin_address("http://127.0.0.1:7000/").unwrap().port(),
            7000
        );
        assert!(admin_address("127.0.0.1").is_err());
    }

    #[test]
    fn an_ipv6_admin_address_comes_in_brackets() {
        let address: SocketAddr = "[fd00::100]:7000".parse().unwrap();
        assert_eq!(admin_address("[fd00::100]:7000").unwrap(), address);
        assert_eq!(admin_address("http://[fd00::100]:7000/").unwrap(), address);
        for ambiguous in [
            "fd00::100:7000",
            "fd00::100",
            "[fd00::100]",
            "http://fd00::1:7000",
        ] {
            let error = admin_address(ambiguous).unwrap_err().to_string();
            assert!(error.contains("[fd00::100]:7000"), "{ambiguous}: {error}");
        }
    }

    #[test]
    fn the_host_header_names_an_ipv6_admin_port_in_brackets() {
        use std::io::{BufRead, BufReader};
        // ::1 where the host has IPv6 at all.
        let Ok(listener) = std::net::TcpListener::bind("[::1]:0") else {
            return;
        };
        let address = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut head = Vec::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                head.push(line.trim().to_string());
            }
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]")
                .unwrap();
            head
        });
        assert_eq!(http_get(address, "/api/clans").unwrap(), (200, "[]".into()));
        let head = server.join().unwrap();
        assert!(
            head.contains(&format!("Host: [::1]:{}", address.port())),
            "{head:?}"
        );
    }

    #[test]
    fn chunked_bodies() {
        assert_eq!(
            unchunk("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").as_deref(),
            Some("abcde")
        );
        assert_eq!(unchunk("5\r\nab"), None);
    }
}
