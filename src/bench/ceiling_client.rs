//! The echo ceiling's load client: a process of its own (`rasgk bench` starts it as `rasgk
//! bench --ceiling-client` and talks to it over its standard streams; nobody else does) that
//! keeps the side whose turn it is saturated, so that the figure measures the server and not
//! the client.
//!
//! - **Sources.** Each side has `sources` phones, each a UDP socket on its own loopback
//!   address (IPv6: its own port of ::1), registered first where the workload needs it.
//! - **A window.** Each phone keeps `window` requests in flight: every answer read is
//!   replaced by a new request at once, and a phone that heard nothing for
//!   [`LOST_AFTER`] counts what it had in flight as lost and sends a new window.
//! - **Batches.** One thread waits on the side's sockets with `epoll`, reads each ready
//!   socket's answers with one `recvmmsg` and sends their replacements as one UDP GSO send
//!   (`UDP_SEGMENT`), which the kernel cuts into datagrams before they reach the server
//!   (one `sendmmsg` where the kernel has no GSO). Each socket is connected, so the kernel
//!   keeps its route. Without GSO the client's sends cost as much as the echo's and the
//!   client, not the server, was the bound (docs/performance.md, fourth round).
//! - **Every request new.** Each phone's request is encoded once; each send writes the next
//!   `requestSeqNum` into a copy (the same octets the phone would encode for that number),
//!   so no request is a retransmission and rasgk's retransmission cache answers none.
//! - **Answers checked.** An answer counts when it is the kind the side must send (GCF or
//!   RCF from rasgk, the request itself from an echo); anything else is counted apart.
//!
//! Orders come as one JSON line ([`Orders`]); then `turn N` (side N, from 1; 0 for none)
//! and `count` lines, each answered with one line: `ok`, or the answers and wrong answers of
//! every side so far.

use std::io::{BufRead as _, Write as _};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::phone::{Answer, Phone};
use crate::ras::{self, MessageKind};

/// What one phone sends in a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Workload {
    Grq,
    FullRrq,
    KeepAlive,
}

impl Workload {
    /// Every workload, in the order measured.
    pub const ALL: [Workload; 3] = [Workload::Grq, Workload::FullRrq, Workload::KeepAlive];

    /// Its name in the block and the `ratio` lines.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Grq => "grq",
            Workload::FullRrq => "rrq_full",
            Workload::KeepAlive => "rrq_light",
        }
    }
}

/// One side as the client loads it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SideOrder {
    /// Where its phones send GRQs (the discovery address, or the echo).
    pub target: SocketAddr,
    /// Its phones use IPv6 (each its own port of ::1).
    pub ipv6: bool,
    /// Its phones' IPv4 addresses start at 127.1.NET.1 (250 a /24).
    pub net: u8,
    /// An echo: its phones register nobody, and keep-alives carry a made-up identifier.
    pub echo: bool,
}

/// What the bench asks the client to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Orders {
    /// What every phone sends.
    pub workload: Workload,
    /// The sides, numbered from 1 in `turn` lines.
    pub sides: Vec<SideOrder>,
    /// Phones a side.
    pub sources: usize,
    /// Requests each phone keeps in flight.
    pub window: usize,
}

/// A phone that heard nothing for this long counts its window lost and sends a new one.
pub const LOST_AFTER: Duration = Duration::from_millis(200);

/// Most requests a phone may keep in flight.
pub const MAX_WINDOW: usize = 64;

/// What one side's phones heard, shared between the load thread and the one that answers
/// the bench.
#[derive(Default)]
struct Heard {
    answers: AtomicU64,
    wrong: AtomicU64,
}

/// `rasgk bench --ceiling-client`: reads its orders on standard input, loads the sides in
/// the turns it is told, and answers on standard output.
pub fn run() -> ExitCode {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let orders: Orders = match lines.next() {
        Some(Ok(line)) => match serde_json::from_str(&line) {
            Ok(orders) => orders,
            Err(error) => return refuse(&format!("orders that do not read: {error}")),
        },
        _ => return refuse("no orders on standard input (only `rasgk bench` starts this)"),
    };
    if orders.window == 0 || orders.window > MAX_WINDOW || orders.sources == 0 {
        return refuse("a window of 1 to 64 requests and at least one phone a side");
    }
    let sides = match load::Side::all(&orders) {
        Ok(sides) => sides,
        Err(error) => return refuse(&error),
    };
    let heard: Arc<Vec<Heard>> = Arc::new(orders.sides.iter().map(|_| Heard::default()).collect());
    let turn = Arc::new(AtomicU8::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let window = orders.window;
    let loader = {
        let (heard, turn, stop) = (heard.clone(), turn.clone(), stop.clone());
        std::thread::Builder::new()
            .name("rasgk-ceiling-client".into())
            .spawn(move || load::run(sides, window, (&heard, &turn, &stop)))
    };
    let loader = match loader {
        Ok(loader) => loader,
        Err(error) => return refuse(&format!("cannot start the load thread: {error}")),
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ready");
    let _ = out.flush();
    for line in lines {
        let Ok(line) = line else { break };
        let answer = match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["turn", n] => match n.parse::<u8>() {
                Ok(n) if usize::from(n) <= heard.len() => {
                    turn.store(n, Ordering::Relaxed);
                    "ok".to_string()
                }
                _ => format!("error: no side {n}"),
            },
            ["count"] => {
                let mut text = "count".to_string();
                for side in heard.iter() {
                    text.push_str(&format!(
                        " {} {}",
                        side.answers.load(Ordering::Relaxed),
                        side.wrong.load(Ordering::Relaxed)
                    ));
                }
                text
            }
            ["end"] => break,
            _ => format!("error: {line:?} is no order"),
        };
        let _ = writeln!(out, "{answer}");
        let _ = out.flush();
    }
    stop.store(true, Ordering::Relaxed);
    let _ = loader.join();
    ExitCode::SUCCESS
}

/// Says why the client cannot run, and exits 2.
fn refuse(why: &str) -> ExitCode {
    eprintln!("rasgk bench --ceiling-client: {why}");
    ExitCode::from(2)
}

/// A phone's request, encoded once, with where its `requestSeqNum` sits.
#[derive(Debug, Clone)]
struct Template {
    octets: Vec<u8>,
    seq_at: usize,
}

impl Template {
    fn of(octets: Vec<u8>) -> Result<Template, String> {
        let seq_at = ras::request_seq_num_octet(&octets)
            .ok_or("a phone's request has no requestSeqNum where RAS puts it")?;
        Ok(Template { octets, seq_at })
    }

    /// Writes the request numbered `seq` into `into` (as long as the template): the octets
    /// the phone encodes for that number.
    fn write(&self, seq: u16, into: &mut [u8]) {
        into.copy_from_slice(&self.octets);
        into[self.seq_at..self.seq_at + 2].copy_from_slice(&(seq - 1).to_be_bytes());
    }
}

/// What a phone of `workload` sends, set up against `side` from `socket` (registered first
/// where it must be): its template, where it sends it, and the kind of answer expected.
fn prepare(
    side: &SideOrder,
    workload: Workload,
    index: usize,
    socket: &std::net::UdpSocket,
) -> Result<(Template, SocketAddr, MessageKind, u16), String> {
    let local = socket
        .local_addr()
        .map_err(|e| format!("a phone's socket has no address: {e}"))?;
    // Each workload its own extensions: a phone of one workload must not hold an alias
    // another workload's phone registers (that would be RRJ duplicateAlias).
    let base = match workload {
        Workload::Grq => 100_000,
        Workload::FullRrq => 200_000,
        Workload::KeepAlive => 300_000,
    };
    let mut phone = Phone::extension(base + index as u32, local);
    let mut to = side.target;
    let ask = |phone_request: &[u8], to: SocketAddr| -> Result<Answer, String> {
        socket
            .send_to(phone_request, to)
            .map_err(|e| format!("cannot send from {local} to {to}: {e}"))?;
        let mut buffer = [0u8; 2048];
        let (len, _) = socket
            .recv_from(&mut buffer)
            .map_err(|e| format!("{to} did not answer {local}: {e}"))?;
        Answer::read(&buffer[..len]).map_err(|e| format!("{to}'s answer does not decode: {e}"))
    };
    if side.echo {
        if workload == Workload::KeepAlive {
            phone.endpoint_id = ras::reply::EndpointId::new("EP00000001").ok();
        }
    } else {
        // GRQ first, which every workload's phone needs: the C-LAN of its RRQs.
        match ask(&phone.grq(), to)? {
            Answer::Gcf {
                ras_address: Some(at),
                ..
            } => to = if workload == Workload::Grq { to } else { at },
            other => return Err(format!("{} answered a GRQ with {other:?}", side.target)),
        }
        if workload != Workload::Grq {
            let answer = ask(&phone.rrq(), to)?;
            if !matches!(answer, Answer::Rcf { .. }) {
                return Err(format!("{to} answered an RRQ with {answer:?}"));
            }
            phone.learn(&answer);
        }
    }
    let octets = match workload {
        Workload::Grq => phone.grq(),
        Workload::FullRrq => phone.rrq(),
        Workload::KeepAlive => phone
            .keep_alive()
            .ok_or("a registered phone has no endpoint identifier")?,
    };
    let expected = match (side.echo, workload) {
        (true, Workload::Grq) => MessageKind::Grq,
        (true, _) => MessageKind::Rrq,
        (false, Workload::Grq) => MessageKind::Gcf,
        (false, _) => MessageKind::Rcf,
    };
    Ok((Template::of(octets)?, to, expected, phone.last_seq()))
}

#[cfg(target_os = "linux")]
mod load {
    //! The load thread: `epoll` over the side's sockets, `recvmmsg` and `sendmmsg` a
    //! socket at a time.

    use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};

    use super::*;

    /// Octets an answer may have.
    const SLOT: usize = 2048;

    /// One phone: its socket, its request and its window.
    struct Source {
        socket: std::net::UdpSocket,
        template: Template,
        expected: MessageKind,
        seq: u16,
        /// Its socket cuts one send into datagrams of the template's length (UDP GSO).
        segmented: bool,
        in_flight: usize,
        heard_at: Instant,
    }

    /// One side's phones and the `epoll` instance that waits on their sockets.
    pub(super) struct Side {
        sources: Vec<Source>,
        epoll: OwnedFd,
    }

    impl Side {
        /// Every side of `orders`, its phones bound (and registered where needed).
        pub(super) fn all(orders: &Orders) -> Result<Vec<Side>, String> {
            orders
                .sides
                .iter()
                .map(|side| Side::new(side, orders))
                .collect()
        }

        fn new(side: &SideOrder, orders: &Orders) -> Result<Side, String> {
            // SAFETY: plain system call; the descriptor returned is owned below.
            let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
            if epoll < 0 {
                return Err(format!(
                    "cannot create an epoll instance: {}",
                    std::io::Error::last_os_error()
                ));
            }
            // SAFETY: a new descriptor nothing else owns.
            let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
            let mut sources = Vec::with_capacity(orders.sources);
            for index in 0..orders.sources {
                let ip: std::net::IpAddr = if side.ipv6 {
                    std::net::Ipv6Addr::LOCALHOST.into()
                } else {
                    std::net::Ipv4Addr::new(
                        127,
                        1,
                        side.net + (index / 250) as u8,
                        1 + (index % 250) as u8,
                    )
                    .into()
                };
                let socket = std::net::UdpSocket::bind((ip, 0))
                    .map_err(|e| format!("cannot bind a phone on {ip}: {e}"))?;
                socket
                    .set_read_timeout(Some(Duration::from_secs(2)))
                    .map_err(|e| e.to_string())?;
                let (template, to, expected, seq) = prepare(side, orders.workload, index, &socket)?;
                // Connected: the kernel keeps the route, where an unconnected send looks it
                // up for every datagram; and only the side's answers reach the socket.
                socket
                    .connect(to)
                    .map_err(|e| format!("cannot connect a phone to {to}: {e}"))?;
                socket.set_nonblocking(true).map_err(|e| e.to_string())?;
                let segmented = segment(&socket, template.octets.len());
                let mut event = libc::epoll_event {
                    events: libc::EPOLLIN as u32,
                    u64: index as u64,
                };
                // SAFETY: both descriptors are open; `event` is read during the call only.
                let added = unsafe {
                    libc::epoll_ctl(
                        epoll.as_raw_fd(),
                        libc::EPOLL_CTL_ADD,
                        socket.as_raw_fd(),
                        &mut event,
                    )
                };
                if added < 0 {
                    return Err(format!(
                        "cannot wait on a phone's socket: {}",
                        std::io::Error::last_os_error()
                    ));
                }
                sources.push(Source {
                    socket,
                    template,
                    expected,
                    seq,
                    segmented,
                    in_flight: 0,
                    heard_at: Instant::now(),
                });
            }
            Ok(Side { sources, epoll })
        }
    }

    /// `UDP_SEGMENT` (linux/udp.h): the length a send is cut into datagrams of.
    const UDP_SEGMENT: libc::c_int = 103;

    /// Asks the kernel to cut `socket`'s sends into datagrams of `len` octets (UDP GSO);
    /// whether it will (not before Linux 4.18).
    fn segment(socket: &std::net::UdpSocket, len: usize) -> bool {
        let Ok(len) = libc::c_int::try_from(len) else {
            return false;
        };
        // SAFETY: an int option, its size given.
        let set = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_UDP,
                UDP_SEGMENT,
                (&len as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        set == 0
    }

    /// Buffers for one socket's batch each way.
    struct Buffers {
        answers: Vec<u8>,
        answer_iovecs: Vec<libc::iovec>,
        answer_headers: Vec<libc::mmsghdr>,
        requests: Vec<u8>,
        request_iovecs: Vec<libc::iovec>,
        request_headers: Vec<libc::mmsghdr>,
    }

    /// Points each header at its own buffer descriptor.
    fn link(headers: &mut [libc::mmsghdr], iovecs: &mut [libc::iovec]) {
        for (header, iovec) in headers.iter_mut().zip(iovecs) {
            header.msg_hdr.msg_iov = iovec;
            header.msg_hdr.msg_iovlen = 1;
        }
    }

    impl Buffers {
        fn new(window: usize, longest: usize) -> Buffers {
            // SAFETY: all zeros is a valid mmsghdr.
            let zero: libc::mmsghdr = unsafe { std::mem::zeroed() };
            let empty = libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            };
            let mut buffers = Buffers {
                answers: vec![0; window * SLOT],
                answer_iovecs: vec![empty; window],
                answer_headers: vec![zero; window],
                requests: vec![0; window * longest.max(1)],
                request_iovecs: vec![empty; window],
                request_headers: vec![zero; window],
            };
            for (i, slot) in buffers.answers.chunks_exact_mut(SLOT).enumerate() {
                buffers.answer_iovecs[i] = libc::iovec {
                    iov_base: slot.as_mut_ptr().cast(),
                    iov_len: SLOT,
                };
            }
            link(&mut buffers.answer_headers, &mut buffers.answer_iovecs);
            link(&mut buffers.request_headers, &mut buffers.request_iovecs);
            buffers
        }
    }

    /// Loads the side whose turn it is until `stop`.
    pub(super) fn run(
        mut sides: Vec<Side>,
        window: usize,
        (heard, turn, stop): (&[Heard], &AtomicU8, &AtomicBool),
    ) {
        let longest = sides
            .iter()
            .flat_map(|side| side.sources.iter())
            .map(|source| source.template.octets.len())
            .max()
            .unwrap_or(0);
        let mut buffers = Buffers::new(window, longest);
        // SAFETY: all zeros is a valid epoll_event.
        let mut events = vec![unsafe { std::mem::zeroed::<libc::epoll_event>() }; 256];
        let mut current = 0u8;
        let mut swept = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let now_turn = turn.load(Ordering::Relaxed);
            if now_turn != current {
                current = now_turn;
                if let Some(side) = usize::from(current)
                    .checked_sub(1)
                    .and_then(|i| sides.get_mut(i))
                {
                    for source in &mut side.sources {
                        source.heard_at = Instant::now();
                        top_up(source, window, &mut buffers);
                    }
                }
            }
            let Some(index) = usize::from(current).checked_sub(1) else {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            };
            let side = &mut sides[index];
            // SAFETY: `events` has room for its length; the epoll descriptor is open.
            let ready = unsafe {
                libc::epoll_wait(
                    side.epoll.as_raw_fd(),
                    events.as_mut_ptr(),
                    events.len() as i32,
                    10,
                )
            };
            for event in events.iter().take(usize::try_from(ready).unwrap_or(0)) {
                let Some(source) = side.sources.get_mut(event.u64 as usize) else {
                    continue;
                };
                let (answers, wrong) = read(source, window, &mut buffers);
                heard[index].answers.fetch_add(answers, Ordering::Relaxed);
                heard[index].wrong.fetch_add(wrong, Ordering::Relaxed);
                top_up(source, window, &mut buffers);
            }
            let now = Instant::now();
            if now.duration_since(swept) >= LOST_AFTER / 4 {
                swept = now;
                for source in &mut side.sources {
                    if source.in_flight > 0 && now.duration_since(source.heard_at) >= LOST_AFTER {
                        source.in_flight = 0;
                        source.heard_at = now;
                        top_up(source, window, &mut buffers);
                    }
                }
            }
        }
    }

    /// Reads what `source` has been answered, one batch (what came after it is reported by
    /// the next wait): answers of the kind expected, and others.
    fn read(source: &mut Source, window: usize, buffers: &mut Buffers) -> (u64, u64) {
        // The kernel writes the length of each header it fills; only those are read below.
        // SAFETY: `window` headers, each over its own slot of `answers`.
        let read = unsafe {
            libc::recvmmsg(
                source.socket.as_raw_fd(),
                buffers.answer_headers.as_mut_ptr(),
                window as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        let read = usize::try_from(read).unwrap_or(0);
        let (mut answers, mut wrong) = (0, 0);
        for (i, header) in buffers.answer_headers[..read].iter().enumerate() {
            let octets = &buffers.answers[i * SLOT..i * SLOT + header.msg_len as usize];
            if ras::peek_kind(octets) == Some(source.expected) {
                answers += 1;
            } else {
                wrong += 1;
            }
        }
        if read > 0 {
            source.in_flight = source.in_flight.saturating_sub(read);
            source.heard_at = Instant::now();
        }
        (answers, wrong)
    }

    /// Sends `source` new requests until it has `window` in flight.
    fn top_up(source: &mut Source, window: usize, buffers: &mut Buffers) {
        let count = window.saturating_sub(source.in_flight);
        if count == 0 {
            return;
        }
        let len = source.template.octets.len();
        for i in 0..count {
            source.seq = source.seq.wrapping_add(1).max(1);
            let slot = &mut buffers.requests[i * len..(i + 1) * len];
            source.template.write(source.seq, slot);
            buffers.request_iovecs[i].iov_base = slot.as_mut_ptr().cast();
            buffers.request_iovecs[i].iov_len = len;
        }
        if source.segmented && count > 1 {
            // One send, cut by the kernel into `count` datagrams of the template's length
            // before they reach the server's socket: the server reads them one by one as
            // from any phone, and the client's send path is walked once for all of them.
            // SAFETY: the first `count × len` octets of `requests` are initialised.
            let sent = unsafe {
                libc::send(
                    source.socket.as_raw_fd(),
                    buffers.requests.as_ptr().cast(),
                    count * len,
                    libc::MSG_DONTWAIT,
                )
            };
            if sent > 0 {
                source.in_flight += count;
            }
            return;
        }
        // SAFETY: `count` headers, each over its own request (the socket is connected).
        let sent = unsafe {
            libc::sendmmsg(
                source.socket.as_raw_fd(),
                buffers.request_headers.as_mut_ptr(),
                count as u32,
                libc::MSG_DONTWAIT,
            )
        };
        source.in_flight += usize::try_from(sent).unwrap_or(0);
    }
}

#[cfg(not(target_os = "linux"))]
mod load {
    //! Elsewhere than Linux there is no `recvmmsg` to batch with.

    use super::*;

    pub(super) struct Side;

    impl Side {
        pub(super) fn all(_: &Orders) -> Result<Vec<Side>, String> {
            Err("the ceiling client needs Linux (epoll, recvmmsg and sendmmsg)".into())
        }
    }

    pub(super) fn run(_: Vec<Side>, _: usize, _: (&[Heard], &AtomicU8, &AtomicBool)) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_written_from_the_template_is_the_one_the_phone_encodes() {
        let at: SocketAddr = "127.1.60.1:40000".parse().unwrap();
        for make in [Phone::grq, Phone::rrq] {
            let mut phone = Phone::extension(100_001, at);
            let template = Template::of(make(&mut phone)).expect("a template");
            for seq in [2u16, 3, 255, 256, 40_000, 65_535] {
                while phone.last_seq() != seq - 1 {
                    phone.next_seq();
                }
                let mut written = vec![0; template.octets.len()];
                template.write(seq, &mut written);
                assert_eq!(written, make(&mut phone), "seq {seq}");
            }
        }
    }
}
