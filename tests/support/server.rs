//! A `rasgk serve` child process for integration tests, phones on real UDP sockets, and a
//! minimal HTTP GET for the admin port. Loopback only.
#![allow(dead_code)] // each test binary uses a different part of this module

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rasgk::pcap::Datagram;
use rasgk::phone::{Answer, Phone};

/// A running `rasgk serve`; stopped with SIGTERM when dropped.
pub struct Served {
    pub child: Child,
    pub admin: SocketAddr,
}

impl Served {
    /// Starts `rasgk serve ARGS` and waits (at most 20 s) until its admin port answers.
    pub fn start(args: &[&str], admin: SocketAddr) -> Served {
        Served::start_logging(args, admin, None)
    }

    /// [`Served::start`], its log at `info` written to `log` when given (warnings to the
    /// test's own standard error otherwise).
    pub fn start_logging(args: &[&str], admin: SocketAddr, log: Option<&Path>) -> Served {
        let (level, stderr) = match log {
            Some(path) => (
                "info",
                Stdio::from(std::fs::File::create(path).expect("the log file")),
            ),
            None => ("warn", Stdio::inherit()),
        };
        let child = Command::new(env!("CARGO_BIN_EXE_rasgk"))
            .arg("serve")
            .args(args)
            .env("RASGK_LOG", level)
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("rasgk starts");
        let mut served = Served { child, admin };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = served.child.try_wait().expect("wait on rasgk") {
                panic!("rasgk serve {args:?} exited early with {status}");
            }
            if http_get(admin, "/api/clans").is_ok() {
                return served;
            }
            assert!(
                Instant::now() < deadline,
                "rasgk serve did not come up on {admin}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `GET path` on the admin port, parsed as JSON; panics on a non-200 answer.
    pub fn get_json(&self, path: &str) -> serde_json::Value {
        let (status, body) = http_get(self.admin, path).expect("admin port answers");
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
    }

    /// The sum of a `/metrics` series' samples (one without labels: its value), read with a
    /// Prometheus text-format parser; the series must be there, typed counter or gauge.
    pub fn metric(&self, name: &str) -> f64 {
        let (status, text) = http_get(self.admin, "/metrics").expect("/metrics answers");
        assert_eq!(status, 200);
        let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
            .expect("/metrics parses");
        let values: Vec<f64> = scrape
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .map(|s| match &s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) => *v,
                other => panic!("{name}: {other:?}"),
            })
            .collect();
        assert!(!values.is_empty(), "no {name} in /metrics");
        values.iter().sum()
    }

    /// One series of `/metrics` with its labels as written, e.g.
    /// `rasgk_calls_ended_total{reason="caller_released"}`.
    pub fn series(&self, series: &str) -> f64 {
        let (_, text) = http_get(self.admin, "/metrics").expect("/metrics answers");
        text.lines()
            .find_map(|line| line.strip_prefix(series))
            .and_then(|rest| rest.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {series} in /metrics"))
    }

    /// Sends SIGTERM and waits (at most 10 s) for the exit status.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        terminate(&mut self.child)
    }
}

/// SIGTERM, then the exit status (SIGKILL after 10 s).
pub fn terminate(child: &mut Child) -> std::process::ExitStatus {
    if let Ok(Some(status)) = child.try_wait() {
        return status;
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return child.wait().expect("wait on rasgk");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        terminate(&mut self.child);
    }
}

/// A minimal HTTP/1.1 GET: (status, body) — the one `rasgk status` uses.
pub use rasgk::admin_client::http_get;

/// (status, JSON body) of any request to the admin port, with a bearer token if given.
pub fn http_request(
    admin: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, serde_json::Value) {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(admin).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let json = serde_json::from_str(body.trim())
        .unwrap_or_else(|e| panic!("{method} {path}: body is not JSON ({e}): {body:?}"));
    (status, json)
}

/// A phone on its own UDP socket, recording every datagram it sends and receives.
pub struct UdpPhone {
    pub phone: Phone,
    pub socket: UdpSocket,
    pub transcript: Vec<Datagram>,
}

impl UdpPhone {
    /// Binds the phone's RAS address (its IP, any port) and sets the RAS address to it.
    pub fn bind(mut phone: Phone) -> UdpPhone {
        let socket = UdpSocket::bind(SocketAddr::new(phone.ras_address.ip(), 0))
            .unwrap_or_else(|e| panic!("bind {}: {e}", phone.ras_address.ip()));
        socket
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        phone.ras_address = socket.local_addr().unwrap();
        UdpPhone {
            phone,
            socket,
            transcript: Vec::new(),
        }
    }

    fn record(&mut self, src: SocketAddr, dst: SocketAddr, payload: &[u8]) {
        self.transcript.push(Datagram {
            frame: 0,
            time: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
            src,
            dst,
            payload: payload.to_vec(),
        });
    }

    /// Sends a request and waits for the answer with its sequence number, sending again
    /// after each 500 ms of silence (4 attempts in all, like a phone's RAS timer).
    pub fn ask(&mut self, to: SocketAddr, datagram: &[u8]) -> Answer {
        let seq = rasgk::ras::peek_request_seq_num(datagram).expect("a request");
        let mut buffer = [0u8; 4096];
        for _attempt in 0..4 {
            self.socket.send_to(datagram, to).expect("send");
            let from = self.phone.ras_address;
            self.record(from, to, datagram);
            // Until a 500 ms timeout: then send again.
            while let Ok((len, peer)) = self.socket.recv_from(&mut buffer) {
                let payload = buffer[..len].to_vec();
                self.record(peer, from, &payload);
                let answer = Answer::read(&payload).expect("the gatekeeper's reply decodes");
                if answer.seq() == seq {
                    self.phone.learn(&answer);
                    return answer;
                }
            }
        }
        panic!("no answer from {to} to seq {seq}");
    }

    /// GRQ to `discovery`, then RRQ at the C-LAN the GCF names: (GCF's C-LAN, RCF or RRJ).
    pub fn register(&mut self, discovery: SocketAddr) -> (Answer, Option<Answer>) {
        let grq = self.phone.grq();
        let gcf = self.ask(discovery, &grq);
        let Answer::Gcf {
            ras_address: Some(clan),
            ..
        } = gcf
        else {
            return (gcf, None);
        };
        let rrq = self.phone.rrq();
        let rcf = self.ask(clan, &rrq);
        (gcf, Some(rcf))
    }
}

/// Writes a transcript as a pcap the shared tshark harness can read.
pub fn write_transcript(path: &Path, datagrams: &[Datagram]) {
    let mut sorted = datagrams.to_vec();
    sorted.sort_by_key(|d| d.time);
    rasgk::pcap::write_file(path, &sorted).expect("write the transcript pcap");
}
