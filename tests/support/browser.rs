//! Headless Chromium driven over the DevTools protocol, for tests of the admin dashboard.
//!
//! ```ignore
//! let Some(exe) = support::browser::require_chromium("my_test") else { return };
//! let mut page = support::browser::Browser::open(&exe, "http://127.0.0.1:7000/");
//! let title = page.evaluate("document.title");
//! page.wait_until("the table is drawn", "document.querySelector('table') !== null");
//! ```
//!
//! [`Browser::open`] starts `chromium --headless=new --no-sandbox --disable-gpu
//! --remote-debugging-port=0 --user-data-dir=TEMPDIR URL`, reads the `DevTools listening on
//! ws://127.0.0.1:PORT/...` line from its stderr, asks `http://127.0.0.1:PORT/json/list` for the
//! page's `webSocketDebuggerUrl` and connects to it with tungstenite. Chromium runs in its own
//! process group; dropping the [`Browser`] ends that group (SIGTERM, then SIGKILL) and removes
//! the profile directory. Every wait is bounded by [`WAIT`].
#![allow(dead_code)] // each test binary uses a different part of this module

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// The bound of every wait: Chromium's start, the DevTools answers, [`Browser::wait_until`].
pub const WAIT: Duration = Duration::from_secs(20);

/// Finds Chromium: `$CHROMIUM` if set, else `/usr/bin/chromium`, else the first `chromium` or
/// `chromium-browser` on `$PATH`.
pub fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let usual = PathBuf::from("/usr/bin/chromium");
    if usual.is_file() {
        return Some(usual);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .flat_map(|dir| [dir.join("chromium"), dir.join("chromium-browser")])
            .find(|p| p.is_file())
    })
}

/// Finds Chromium for test `test`. When it is missing: panics if `RASGK_REQUIRE_TOOLS=1` (so
/// CI cannot silently skip), else prints why the test is skipped and returns `None`.
pub fn require_chromium(test: &str) -> Option<PathBuf> {
    if let Some(p) = chromium() {
        return Some(p);
    }
    if std::env::var("RASGK_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!(
            "{test}: chromium not found and RASGK_REQUIRE_TOOLS=1 \
             (install with apt-get install chromium, or set CHROMIUM=/path/to/chromium)"
        );
    }
    eprintln!("skipping {test}: chromium not found (install with apt-get install chromium)");
    None
}

/// One headless Chromium with one page, and a DevTools connection to that page.
pub struct Browser {
    child: Child,
    profile: PathBuf,
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    /// Chromium's stderr lines so far (shared with the thread that drains the pipe).
    stderr: mpsc::Receiver<String>,
    stderr_seen: Vec<String>,
}

impl Browser {
    /// Starts Chromium (`exe`) on `url` and connects to the page. Panics, with Chromium's
    /// stderr, when any step takes longer than [`WAIT`].
    pub fn open(exe: &Path, url: &str) -> Browser {
        let profile = std::env::temp_dir().join(format!(
            "rasgk-chromium-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        ));
        std::fs::create_dir_all(&profile)
            .unwrap_or_else(|e| panic!("create {}: {e}", profile.display()));
        let mut child = Command::new(exe)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Its own process group, so that drop ends the renderers and helpers too.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", exe.display()));
        // A thread reads stderr to the end, so the pipe never fills and blocks Chromium.
        let (lines_tx, lines_rx) = mpsc::channel();
        let pipe = child.stderr.take().expect("piped stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Constructed now so that every panic below still ends Chromium (by drop).
        let mut pending = Pending {
            child: Some(child),
            profile: Some(profile),
            stderr: lines_rx,
            seen: Vec::new(),
        };
        let port = pending.devtools_port();
        let ws_url = pending.page_websocket(port, url);
        let (socket, _) = tungstenite::connect(ws_url.as_str())
            .unwrap_or_else(|e| pending.fail(&format!("cannot connect to {ws_url}: {e}")));
        if let MaybeTlsStream::Plain(stream) = socket.get_ref() {
            stream
                .set_read_timeout(Some(Duration::from_millis(500)))
                .expect("set the DevTools read timeout");
        }
        let (child, profile, stderr, stderr_seen) = pending.take();
        Browser {
            child,
            profile,
            socket,
            next_id: 0,
            stderr,
            stderr_seen,
        }
    }

    /// Chromium's stderr so far, for failure messages (without its complaints that there is
    /// no D-Bus, which it makes on every headless start here).
    pub fn stderr(&mut self) -> String {
        self.stderr_seen.extend(self.stderr.try_iter());
        without_dbus(&self.stderr_seen)
    }

    /// Sends one DevTools command to the page and waits (at most [`WAIT`]) for its result.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({ "id": id, "method": method, "params": params });
        self.socket
            .send(Message::text(request.to_string()))
            .unwrap_or_else(|e| panic!("DevTools {method}: send: {e}"));
        let deadline = Instant::now() + WAIT;
        loop {
            if Instant::now() > deadline {
                let stderr = self.stderr();
                panic!("DevTools {method}: no answer within {WAIT:?}; chromium stderr:\n{stderr}");
            }
            let message = match self.socket.read() {
                Ok(message) => message,
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    continue
                }
                Err(e) => {
                    let stderr = self.stderr();
                    panic!("DevTools {method}: read: {e}; chromium stderr:\n{stderr}")
                }
            };
            let Message::Text(text) = message else {
                continue;
            };
            let answer: Value = serde_json::from_str(text.as_str())
                .unwrap_or_else(|e| panic!("DevTools {method}: {e}: {text}"));
            // Events (no id) and answers to other commands are not ours.
            if answer["id"].as_u64() != Some(id) {
                continue;
            }
            if let Some(error) = answer.get("error") {
                panic!("DevTools {method}: {error}");
            }
            return answer["result"].clone();
        }
    }

    /// Evaluates `js` in the page (`Runtime.evaluate` with `returnByValue`, promises awaited)
    /// and returns its value (`null` for `undefined`). Panics when it throws.
    pub fn evaluate(&mut self, js: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": js, "returnByValue": true, "awaitPromise": true }),
        );
        if let Some(exception) = result.get("exceptionDetails") {
            let text = exception["exception"]["description"]
                .as_str()
                .or(exception["text"].as_str())
                .unwrap_or("an exception");
            panic!("evaluating {js}: {text}");
        }
        result["result"]
            .get("value")
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Evaluates `js` every 100 ms until it is `true`; panics naming `what` after [`WAIT`].
    pub fn wait_until(&mut self, what: &str, js: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            if self.evaluate(js) == Value::Bool(true) {
                return;
            }
            if Instant::now() > deadline {
                let stderr = self.stderr();
                panic!("waited {WAIT:?} for {what} ({js}); chromium stderr:\n{stderr}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.socket.close(None);
        stop_group(&mut self.child);
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// A Chromium that is starting: ends it when a step of [`Browser::open`] panics.
struct Pending {
    child: Option<Child>,
    profile: Option<PathBuf>,
    stderr: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Pending {
    fn fail(&mut self, why: &str) -> ! {
        self.seen.extend(self.stderr.try_iter());
        panic!("{why}; chromium stderr:\n{}", without_dbus(&self.seen));
    }

    /// The port of the `DevTools listening on ws://HOST:PORT/...` line of stderr.
    fn devtools_port(&mut self) -> u16 {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => {
                    let port = line
                        .split_once("DevTools listening on ws://")
                        .and_then(|(_, rest)| rest.split_once('/'))
                        .and_then(|(host, _)| host.parse::<SocketAddr>().ok())
                        .map(|a| a.port());
                    self.seen.push(line);
                    if let Some(port) = port {
                        return port;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => self.fail(&format!(
                    "chromium printed no DevTools address within {WAIT:?}"
                )),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.child.as_mut().and_then(|c| c.wait().ok());
                    self.fail(&format!(
                        "chromium closed stderr before printing its DevTools address (exit: {status:?})"
                    ))
                }
            }
        }
    }

    /// The `webSocketDebuggerUrl` of the page showing `url`, from `/json/list`.
    fn page_websocket(&mut self, port: u16, url: &str) -> String {
        let devtools = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + WAIT;
        let mut last = String::new();
        loop {
            if let Ok((200, body)) = devtools_get(devtools, "/json/list") {
                let targets: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let pages = targets.as_array().into_iter().flatten();
                let mut pages = pages.filter(|t| t["type"] == "page");
                // The page we opened; before it navigates it may still show about:blank.
                if let Some(ws) = pages
                    .find(|t| t["url"].as_str().is_some_and(|u| u.starts_with(url)))
                    .and_then(|t| t["webSocketDebuggerUrl"].as_str())
                {
                    return ws.to_string();
                }
                last = body;
            }
            if Instant::now() > deadline {
                self.fail(&format!(
                    "no page for {url} in {devtools}/json/list within {WAIT:?}; last list: {last}"
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn take(&mut self) -> (Child, PathBuf, mpsc::Receiver<String>, Vec<String>) {
        let (_, dummy) = mpsc::channel();
        (
            self.child.take().expect("the child"),
            self.profile.take().expect("the profile"),
            std::mem::replace(&mut self.stderr, dummy),
            std::mem::take(&mut self.seen),
        )
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            stop_group(child);
        }
        if let Some(profile) = &self.profile {
            let _ = std::fs::remove_dir_all(profile);
        }
    }
}

fn without_dbus(lines: &[String]) -> String {
    let kept: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .filter(|l| !l.contains(":ERROR:dbus/"))
        .collect();
    kept.join("\n")
}

/// `GET path` from Chromium's DevTools HTTP server: (status, body). It keeps the connection
/// open whatever the request says, so the body is read by its `Content-Length`.
fn devtools_get(address: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\n\r\n")?;
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// Ends the process group led by `child` (SIGTERM, SIGKILL after 5 s) and reaps `child`.
fn stop_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    let signal = |name: &str| {
        let _ = Command::new("kill")
            .args([name, "--", &group])
            .stderr(Stdio::null())
            .status();
    };
    signal("-TERM");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        if Instant::now() > deadline {
            signal("-KILL");
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Helpers that outlived the leader.
    signal("-KILL");
}
