//! The admin port's client, for `rasgk status`, `rasgk storm`, `rasgk exam` and `rasgk
//! bench`: its address from the command line ([`admin_address`]), its JSON views read over
//! plain HTTP/1.1 ([`get_json`], [`fetch`]), its drills posted ([`http_post`]) and its event
//! streams read as they come ([`EventStream`]).
//!
//! It talks HTTP with the standard library only: one GET per view, `Connection: close`; the
//! admin port is ours and loopback by default, so no TLS, proxies or redirects are involved.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::gatekeeper::{ClanView, RegionView};

/// Why the admin port could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
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
pub fn admin_address(text: &str) -> Result<SocketAddr, AdminError> {
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
        return Err(AdminError::BadAddress(text.to_string()));
    }
    bare.to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| AdminError::BadAddress(text.to_string()))
}

/// One plain HTTP/1.1 `GET path` (`Connection: close`): the status code and the body, with
/// chunked transfer encoding undone. An answer that is not HTTP is `InvalidData`.
pub fn http_get(address: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    http_request(address, "GET", path, None, None)
}

/// One plain HTTP/1.1 `POST path` with a JSON body (and the admin token as a bearer token,
/// when there is one): the status code and the body.
pub fn http_post(
    address: SocketAddr,
    path: &str,
    body: &str,
    token: Option<&str>,
) -> std::io::Result<(u16, String)> {
    http_request(address, "POST", path, Some(body), token)
}

/// One plain HTTP/1.1 `DELETE path` (with the admin token, when there is one).
pub fn http_delete(
    address: SocketAddr,
    path: &str,
    token: Option<&str>,
) -> std::io::Result<(u16, String)> {
    http_request(address, "DELETE", path, None, token)
}

fn http_request(
    address: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
    token: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(3))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nAccept: application/json\r\n"
    );
    if let Some(token) = token {
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
    } else {
        request.push_str("\r\n");
    }
    stream.write_all(request.as_bytes())?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let text = String::from_utf8(response).map_err(|_| invalid("the answer is not UTF-8"))?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| invalid("the answer is not HTTP"))?;
    let status = status_of(head)?;
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

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

fn status_of(head: &str) -> std::io::Result<u16> {
    head.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| invalid("the answer has no HTTP status"))
}

/// A server-sent event stream of the admin port (`/api/events`, `/api/ras`), read as it
/// comes: each event's `data`.
pub struct EventStream {
    stream: std::io::BufReader<TcpStream>,
    chunked: bool,
    /// Text read and not yet returned from `read` on.
    pending: String,
    read: usize,
}

impl EventStream {
    /// Opens `GET path` as an event stream.
    pub fn open(address: SocketAddr, path: &str) -> std::io::Result<EventStream> {
        use std::io::BufRead;
        let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(3))?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {address}\r\nAccept: text/event-stream\r\n\r\n"
        )?;
        let mut reader = std::io::BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Err(invalid("the stream ended before its headers did"));
            }
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let status = status_of(&head)?;
        if status != 200 {
            return Err(invalid(&format!("{path}: HTTP status {status}")));
        }
        Ok(EventStream {
            chunked: head
                .to_ascii_lowercase()
                .contains("transfer-encoding: chunked"),
            stream: reader,
            pending: String::new(),
            read: 0,
        })
    }

    /// The next event's data (its `data:` lines joined); an error when the stream ends.
    pub fn next_data(&mut self) -> std::io::Result<String> {
        use std::io::BufRead;
        loop {
            if let Some(end) = self.pending[self.read..].find("\n\n") {
                let event = &self.pending[self.read..self.read + end + 2];
                self.read += end + 2;
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect();
                if !data.is_empty() {
                    return Ok(data.join("\n"));
                }
                continue;
            }
            // Everything before `read` has been returned: drop it before reading more (a
            // chunk may hold a whole batch of events, so not an event at a time).
            self.pending.drain(..self.read);
            self.read = 0;
            if self.chunked {
                let mut size = String::new();
                if self.stream.read_line(&mut size)? == 0 {
                    return Err(invalid("the stream ended"));
                }
                let size = usize::from_str_radix(size.trim(), 16)
                    .map_err(|_| invalid("broken chunked encoding"))?;
                if size == 0 {
                    return Err(invalid("the stream ended"));
                }
                let mut chunk = vec![0; size + 2];
                self.stream.read_exact(&mut chunk)?;
                chunk.truncate(size);
                self.pending
                    .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
            } else {
                let mut line = String::new();
                if self.stream.read_line(&mut line)? == 0 {
                    return Err(invalid("the stream ended"));
                }
                self.pending.push_str(&line.replace("\r\n", "\n"));
            }
        }
    }
}

/// The body of `GET path` on the admin port (HTTP 200 only).
pub fn get_json(address: SocketAddr, path: &'static str) -> Result<String, AdminError> {
    let bad = |reason: String| AdminError::BadAnswer {
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
        Err(source) => Err(AdminError::Unreachable {
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
pub fn fetch(address: SocketAddr) -> Result<(Vec<ClanView>, Vec<RegionView>), AdminError> {
    let clans = fetch_clans(address)?;
    let text = get_json(address, "/api/regions")?;
    let regions = serde_json::from_str(&text).map_err(|error| AdminError::BadAnswer {
        address: address.to_string(),
        path: "/api/regions",
        reason: format!("not the JSON rasgk serve sends: {error}"),
    })?;
    Ok((clans, regions))
}

/// `/api/clans` alone, for a sampler that must load the gatekeeper as little as it can.
pub fn fetch_clans(address: SocketAddr) -> Result<Vec<ClanView>, AdminError> {
    let text = get_json(address, "/api/clans")?;
    serde_json::from_str(&text).map_err(|error| AdminError::BadAnswer {
        address: address.to_string(),
        path: "/api/clans",
        reason: format!("not the JSON rasgk serve sends: {error}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
