//! Which endpoints an exam examines (`--endpoint`, repeatable): an alias (`5001`,
//! `alice`), an alias pattern (`5*`, `?001`), a RAS address (`127.1.0.5:1719`) or a network
//! (`127.1.0.0/24`, or one address: every port of it). Checked before anything starts.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;

/// One `--endpoint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// An alias, exactly.
    Alias(String),
    /// An alias pattern: `*` any run of characters, `?` any one.
    Pattern(String),
    /// A RAS address, exactly.
    Address(SocketAddr),
    /// Any RAS address in a network.
    Network(IpNet),
}

impl Selector {
    /// The selector `text` means; why not, for `--endpoint`'s error.
    pub fn parse(text: &str) -> Result<Selector, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err(
                "--endpoint is empty: give an alias (5001), a pattern (5*), a RAS \
                        address (127.1.0.5:1719) or a network (127.1.0.0/24)"
                    .to_string(),
            );
        }
        if let Ok(address) = text.parse::<SocketAddr>() {
            return Ok(Selector::Address(address));
        }
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Ok(Selector::Network(IpNet::from(ip)));
        }
        if text.contains('/') {
            return text.parse::<IpNet>().map(Selector::Network).map_err(|e| {
                format!("--endpoint {text:?} is not a network like 127.1.0.0/24: {e}")
            });
        }
        if text.chars().any(char::is_control) || text.chars().count() > 256 {
            return Err(format!(
                "--endpoint {text:?} is not an alias: control characters, or longer than 256"
            ));
        }
        if text.contains(['*', '?']) {
            return Ok(Selector::Pattern(text.to_string()));
        }
        Ok(Selector::Alias(text.to_string()))
    }

    /// It names one endpoint (an alias or an address), not every one that matches.
    pub fn names_one(&self) -> bool {
        matches!(self, Selector::Alias(_) | Selector::Address(_))
    }

    /// An endpoint sending RAS from `peer` with these aliases matches.
    pub fn matches(&self, peer: SocketAddr, aliases: &[String]) -> bool {
        match self {
            Selector::Alias(alias) => aliases.iter().any(|a| a == alias),
            Selector::Pattern(pattern) => aliases.iter().any(|a| glob(pattern, a)),
            Selector::Address(address) => *address == peer,
            Selector::Network(net) => net.contains(&peer.ip()),
        }
    }
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Selector::Alias(a) | Selector::Pattern(a) => f.write_str(a),
            Selector::Address(a) => write!(f, "{a}"),
            Selector::Network(n) => write!(f, "{n}"),
        }
    }
}

/// `text` matches `pattern` (`*` any run, `?` any one character).
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // The classic two-pointer walk with one star to come back to: linear in practice.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < t.len() {
        if i < p.len() && (p[i] == '?' || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_is_read_and_matched() {
        let peer: SocketAddr = "127.1.0.5:1719".parse().unwrap();
        let aliases = vec!["5001".to_string(), "alice".to_string()];
        for (text, hit) in [
            ("5001", true),
            ("5002", false),
            ("5*", true),
            ("6*", false),
            ("?001", true),
            ("al*e", true),
            ("127.1.0.5:1719", true),
            ("127.1.0.5:1720", false),
            ("127.1.0.0/24", true),
            ("127.2.0.0/24", false),
            ("127.1.0.5", true),
        ] {
            let selector = Selector::parse(text).unwrap();
            assert_eq!(selector.matches(peer, &aliases), hit, "{text}");
        }
        assert!(Selector::parse("").is_err());
        assert!(Selector::parse("127.1.0.0/40").is_err());
        assert!(Selector::parse("a\u{7}b").is_err());
    }

    #[test]
    fn glob_handles_stars_anywhere() {
        assert!(glob("*", ""));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(!glob("a*b*c", "axxbyy"));
        assert!(glob("**1", "5001"));
    }
}
