//! A strict H.323 endpoint, as stacks with an ASN.1 runtime of their own behave on call
//! signalling: it registers over RAS, opens a call-signalling connection only to place a call,
//! takes one (its listener on port 1720 of its own IP, or a connection the gatekeeper opens
//! to it as a TTS phone) only to receive a call, and treats anything on a connection that is
//! not a Q.931 message with its H.225.0 user-user information, of a call it knows, as a
//! protocol error: it releases the call (Release Complete, cause 95) and closes the
//! connection. An empty TPKT frame is such an error; so is a first message that is not a
//! Setup on a connection it took, and any octet after a call's Release Complete.
//!
//! It never asks for the service frame. Every octet read on its connections is kept, so that
//! a test can have tshark read everything the gatekeeper wrote to it.

#![allow(dead_code)] // each test binary uses a different part of the support modules

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use rasgk::phone::{Answer, Phone};
use rasgk::q931::{self, CallReference, MessageType, Release, Setup};
use rasgk::ras::{self, request, Alias};

use super::server::UdpPhone;

/// How long a read waits for the gatekeeper before the test fails.
const READ_WAIT: Duration = Duration::from_secs(5);

/// What a strict endpoint saw go wrong on a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

/// One registered strict endpoint.
pub struct StrictEndpoint {
    /// Its RAS side.
    pub ras: UdpPhone,
    /// Its extension.
    pub extension: u32,
    /// Where it takes calls: port 1720 of its own IP.
    pub listener: TcpListener,
    /// The RCF's `callSignalAddress`: its C-LAN's signalling address.
    pub clan_signal: SocketAddr,
    /// Everything read on its connections, per connection: (gatekeeper side, own side,
    /// octets in order).
    pub read: Vec<(SocketAddr, SocketAddr, Vec<u8>)>,
}

/// One call-signalling connection of a strict endpoint, and the call on it.
pub struct Connection {
    stream: TcpStream,
    /// Octets read so far, not yet a whole frame.
    pending: Vec<u8>,
    /// Every octet read (for the capture).
    read: Vec<u8>,
    /// The call it carries: its call reference as this endpoint sends it, and its
    /// `callIdentifier`.
    pub call: Option<(CallReference, [u8; 16])>,
}

impl StrictEndpoint {
    /// Registers extension `extension` from `ip` (GRQ to `discovery`, RRQ where the GCF
    /// says), listening for calls on `ip`:1720. It does not connect to its C-LAN: a standard
    /// endpoint opens a connection only to place a call.
    pub fn register(ip: &str, extension: u32, discovery: SocketAddr) -> StrictEndpoint {
        let ip: IpAddr = ip.parse().unwrap();
        let listener = TcpListener::bind(SocketAddr::new(ip, 1720))
            .unwrap_or_else(|e| panic!("bind {ip}:1720: {e}"));
        let mut phone = Phone::extension(extension, SocketAddr::new(ip, 1719));
        phone.call_signal_address = listener.local_addr().unwrap();
        assert!(!phone.service_frame, "a standard endpoint never asks");
        let mut ras = UdpPhone::bind(phone);
        let clan_signal = match ras.register(discovery) {
            (
                _,
                Some(Answer::Rcf {
                    call_signal_address: Some(signal),
                    service_frame,
                    ..
                }),
            ) => {
                assert!(
                    !service_frame,
                    "an RCF confirms no feature nobody asked for"
                );
                signal
            }
            other => panic!("{extension}: registration failed: {other:?}"),
        };
        StrictEndpoint {
            ras,
            extension,
            listener,
            clan_signal,
            read: Vec::new(),
        }
    }

    fn alias(&self) -> Alias {
        Alias::dialled_digits(&self.extension.to_string()).unwrap()
    }

    /// ARQ for a call (`answer_call` on the called side) to the RAS address of its C-LAN:
    /// the ACF's `destCallSignalAddress`, and whether it is routed.
    pub fn admission(&mut self, to: u32, call: [u8; 16], answer_call: bool) -> SocketAddr {
        let seq = self.ras.phone.next_seq();
        let endpoint_id = self.ras.phone.endpoint_id.clone().expect("registered");
        let destination = [Alias::dialled_digits(&to.to_string()).unwrap()];
        let source = [self.alias()];
        let arq = ras::encode(&request::admission_request(&request::Arq {
            request_seq_num: seq,
            endpoint_id: &endpoint_id,
            destination: &destination,
            source: &source,
            call: request::Call {
                call_reference_value: u16::from_be_bytes([call[14], call[15]]),
                conference_id: call,
                call_id: call,
            },
            band_width: 1280,
            answer_call,
        }))
        .unwrap();
        let clan_ras = SocketAddr::new(self.clan_signal.ip(), 1719);
        match self.ras.ask(clan_ras, &arq) {
            Answer::Acf {
                dest: Some(dest),
                routed: true,
                ..
            } => dest,
            other => panic!("{}: expected a routed ACF, got {other:?}", self.extension),
        }
    }

    /// DRQ for the call, answered DCF.
    pub fn disengage(&mut self, call: [u8; 16]) {
        let drq = self.ras.phone.drq(call).expect("registered");
        let clan_ras = SocketAddr::new(self.clan_signal.ip(), 1719);
        match self.ras.ask(clan_ras, &drq) {
            Answer::Other { kind, .. } if kind.to_string() == "DCF" => {}
            other => panic!("{}: expected DCF, got {other:?}", self.extension),
        }
    }

    /// Places a call to `to`: ARQ, a connection from its own IP to where the ACF says, and
    /// the Setup on it.
    pub fn call(&mut self, to: u32, call: [u8; 16], crv: u16) -> Connection {
        let dest = self.admission(to, call, false);
        let own = self.listener.local_addr().unwrap().ip();
        let socket = socket2::Socket::new(
            socket2::Domain::for_address(dest),
            socket2::Type::STREAM,
            None,
        )
        .unwrap();
        socket.bind(&SocketAddr::new(own, 0).into()).unwrap();
        socket.connect(&dest.into()).unwrap();
        let mut connection = Connection::new(socket.into());
        let reference = CallReference::from_originator(crv);
        let source = [self.alias()];
        let destination = [Alias::dialled_digits(&to.to_string()).unwrap()];
        let setup = q931::setup(&Setup {
            call_reference: reference,
            call_identifier: call,
            conference_id: call,
            source: &source,
            destination: &destination,
            display: None,
            endpoint_identifier: self.ras.phone.endpoint_id.as_ref(),
        })
        .unwrap();
        connection.call = Some((reference, call));
        connection.send(&setup);
        connection
    }

    /// The next connection made to it, within [`READ_WAIT`].
    pub fn accept(&mut self) -> Connection {
        self.listener.set_nonblocking(true).unwrap();
        let start = Instant::now();
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    stream.set_nonblocking(false).unwrap();
                    return Connection::new(stream);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock && start.elapsed() < READ_WAIT => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("{}: no connection came: {e}", self.extension),
            }
        }
    }

    /// Answers the call whose Setup `connection` carries: ARQ (answerCall), then Call
    /// Proceeding, Alerting and Connect.
    pub fn answer(&mut self, connection: &mut Connection) {
        let (reference, call) = connection.call.expect("a Setup came");
        self.admission(self.extension, call, true);
        connection.send(&q931::call_proceeding(reference, call));
        connection.send(&q931::alerting(reference, call));
        connection.send(&q931::connect(reference, call, call));
    }

    /// Keeps what was read on `connection` and closes it.
    pub fn close(&mut self, connection: Connection) {
        let local = connection.stream.local_addr().unwrap();
        let peer = connection.stream.peer_addr().unwrap();
        self.read.push((peer, local, connection.read));
    }
}

impl Connection {
    fn new(stream: TcpStream) -> Connection {
        stream.set_nodelay(true).unwrap();
        Connection {
            stream,
            pending: Vec::new(),
            read: Vec::new(),
            call: None,
        }
    }

    fn send(&mut self, payload: &[u8]) {
        self.stream
            .write_all(&rasgk::tpkt::frame(payload).unwrap())
            .unwrap();
    }

    /// A whole TPKT frame's payload, waiting at most `wait`; `Ok(None)` when nothing came.
    fn frame(&mut self, wait: Duration) -> Result<Option<Vec<u8>>, ProtocolError> {
        let until = Instant::now() + wait;
        loop {
            if self.pending.len() >= 4 {
                if self.pending[0] != 3 || self.pending[1] != 0 {
                    return Err(ProtocolError(format!(
                        "not a TPKT header: {:02x?}",
                        &self.pending[..4]
                    )));
                }
                let len = usize::from(u16::from_be_bytes([self.pending[2], self.pending[3]]));
                if len < 4 {
                    return Err(ProtocolError(format!("TPKT length {len}")));
                }
                if self.pending.len() >= len {
                    let frame: Vec<u8> = self.pending.drain(..len).collect();
                    return Ok(Some(frame[4..].to_vec()));
                }
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.stream.set_read_timeout(Some(left)).unwrap();
            let mut buffer = [0u8; 2048];
            match self.stream.read(&mut buffer) {
                Ok(0) => {
                    return match self.pending.is_empty() {
                        true => Ok(None),
                        false => Err(ProtocolError("the connection ended in a frame".into())),
                    }
                }
                Ok(n) => {
                    self.pending.extend_from_slice(&buffer[..n]);
                    self.read.extend_from_slice(&buffer[..n]);
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Ok(None)
                }
                Err(e) => return Err(ProtocolError(format!("read failed: {e}"))),
            }
        }
    }

    /// The next message of the call on this connection (a Setup opens it on a connection
    /// the endpoint took), read strictly: anything else is a protocol error, and the endpoint
    /// then releases the call and closes the connection, as a strict stack does.
    pub fn next(&mut self) -> Result<MessageType, ProtocolError> {
        let read = self.frame(READ_WAIT).and_then(|frame| {
            let payload = frame.ok_or_else(|| ProtocolError("nothing came".into()))?;
            self.judge(&payload)
        });
        if let Err(error) = &read {
            self.release_on(error);
        }
        read
    }

    /// A message is a Q.931 message with an H.225.0 UUIE, of the call this connection has, or
    /// a Setup that opens one on a connection without a call.
    fn judge(&mut self, payload: &[u8]) -> Result<MessageType, ProtocolError> {
        if payload.is_empty() {
            return Err(ProtocolError(
                "an empty TPKT frame: no H.225.0 message to decode".into(),
            ));
        }
        let (message, facts) = q931::facts(payload)
            .map_err(|e| ProtocolError(format!("not an H.225.0 message: {e}")))?;
        let kind = message.message_type;
        match self.call {
            None if kind == MessageType::Setup && !message.call_reference.from_destination => {
                let call = facts
                    .call_identifier
                    .ok_or_else(|| ProtocolError("a Setup without callIdentifier".into()))?;
                self.call = Some((message.call_reference.reversed(), call));
                Ok(kind)
            }
            None => Err(ProtocolError(format!(
                "first message {kind:?}, not a Setup"
            ))),
            Some((own, call)) => {
                if message.call_reference != own.reversed() {
                    return Err(ProtocolError(format!(
                        "{kind:?} for call reference {:?}, not the call's {:?}",
                        message.call_reference,
                        own.reversed()
                    )));
                }
                if facts.call_identifier.is_some_and(|id| id != call) {
                    return Err(ProtocolError(format!("{kind:?} of another call")));
                }
                Ok(kind)
            }
        }
    }

    /// Release Complete (cause 95, invalid message) for the call, if any, then no more.
    fn release_on(&mut self, error: &ProtocolError) {
        eprintln!("strict endpoint: protocol error: {}", error.0);
        if let Some((reference, call)) = self.call {
            let release = q931::release_complete(reference, Some(call), Release::InvalidMessage);
            let _ = self
                .stream
                .write_all(&rasgk::tpkt::frame(&release).unwrap());
        }
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }

    /// Nothing at all comes within `quiet` (a connection the endpoint holds, waiting for a
    /// call): anything that does is a protocol error.
    pub fn silent_for(&mut self, quiet: Duration) -> Result<(), ProtocolError> {
        match self.frame(quiet) {
            Ok(None) => Ok(()),
            Ok(Some(payload)) => {
                let error = match self.judge(&payload) {
                    Ok(kind) => ProtocolError(format!("{kind:?} while no call was made")),
                    Err(error) => error,
                };
                self.release_on(&error);
                Err(error)
            }
            Err(error) => {
                self.release_on(&error);
                Err(error)
            }
        }
    }

    /// Releases the call: Release Complete, normal clearing.
    pub fn release(&mut self) {
        let (reference, call) = self.call.expect("a call");
        self.send(&q931::release_complete(
            reference,
            Some(call),
            Release::NormalClearing,
        ));
    }

    /// After the call's Release Complete: nothing more comes within `quiet`, then the
    /// endpoint closes the connection (as H323Plus does once a call is over).
    pub fn finish(&mut self, quiet: Duration) -> Result<(), ProtocolError> {
        match self.frame(quiet) {
            Ok(None) => Ok(()),
            Ok(Some(payload)) => Err(ProtocolError(format!(
                "{} octets after the call was released",
                payload.len() + 4
            ))),
            Err(error) => Err(error),
        }
    }
}
