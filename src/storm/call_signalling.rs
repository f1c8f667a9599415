//! What a storm phone says and answers on its socket when the storm places routed calls
//! (`rasgk storm --sockets --calls-per-s`, docs/rules.md §8.7), with no I/O: the socket task
//! ([`super::signalling`]) feeds it the octets it reads and the time, and writes what comes
//! back.
//!
//! - Everything on the socket is read as TPKT frames (RFC 1006) of at most 65,535 octets; an
//!   empty frame (the service frame `03 00 00 04`, a keep-alive) is nothing. A stream that
//!   is not TPKT is an error: the socket task closes the socket.
//! - A payload is a Q.931 message; its call reference flag says whose call it is. **Flag 0**:
//!   the sender chose the value, so on this socket the gatekeeper is the caller and the phone
//!   the callee — a Setup is answered at once with Call Proceeding, Alerting and Connect
//!   under the same value with flag 1 ([`CallReference::reversed`]), and the gatekeeper's
//!   Release Complete ends the call. **Flag 1**: the message is for a call this phone placed.
//! - **Placing a call** ([`CallSignalling::dial`]): a Setup under a call reference value the
//!   phone chooses (flag 0, unique among its calls on this socket), then Call Proceeding and
//!   Alerting are noted (they may not come), the Connect is timed (Setup written → Connect
//!   read, by the kernel's receive time), and after the hold the phone writes Release
//!   Complete. No Connect within [`Dial::connect_within`]: the phone writes Release Complete
//!   and the call fails `no_connect`; a Release Complete before the Connect fails it by its
//!   Q.931 cause (`cause_20`: subscriber absent), after it cuts it short.
//! - Messages that name no call, or are no Q.931 message, are counted and dropped — but for
//!   a Release Complete naming no call, which is what crosses a call's end (the gatekeeper
//!   ends a call on the caller's DRQ and its Release Complete meets the caller's own), and
//!   is dropped quietly. A gatekeeper may send anything, and nothing it sends panics or
//!   grows memory: at most [`MAX_CALLS`] calls placed and [`MAX_CALLS`] answered at once per
//!   socket.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::q931::{self, CallReference, MessageType, Release};
use crate::ras::reply::EndpointId;
use crate::ras::Alias;
use crate::tpkt;

/// Calls a socket carries at once each way; a Setup beyond them is left unanswered (the
/// gatekeeper's `call_setup_timeout_s` ends it), a dial beyond them fails `too_many_calls`.
pub const MAX_CALLS: usize = 64;

/// The largest TPKT frame read: what its 16-bit length allows.
const MAX_FRAME: u16 = u16::MAX;

/// A call a phone places: what its Setup says and how long the call lasts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Dial {
    /// The call's number in the storm (0, 1, …).
    pub number: u64,
    /// Its `callIdentifier` (the ARQ's, when there was one) and `conferenceID`.
    pub call_identifier: [u8; 16],
    /// `sourceAddress`: the caller's aliases.
    pub caller: Vec<Alias>,
    /// `destinationAddress`: the number dialled.
    pub callee: Alias,
    /// `endpointIdentifier`: the caller's registration.
    pub endpoint_identifier: Option<EndpointId>,
    /// A call not connected this long after its Setup fails `no_connect`.
    pub connect_within: Duration,
    /// How long the caller holds the call after its Connect.
    pub hold: Duration,
}

/// How a call a phone placed went, as its caller's tally counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Placed {
    /// The call's number in the storm.
    pub number: u64,
    /// When its Setup was written, since the UNIX epoch (`None`: it never was).
    pub setup_at: Option<Duration>,
    /// A Call Proceeding came.
    pub proceeding: bool,
    /// An Alerting came.
    pub alerting: bool,
    /// Setup written → Connect read, once connected.
    pub setup_to_connect: Option<Duration>,
    /// What ended it other than the caller's Release Complete after the hold: why it failed
    /// (not connected) or what cut it short (connected). `None`: held and released.
    pub trouble: Option<String>,
}

impl Placed {
    /// A call that failed before its Setup was written, for `reason`.
    pub fn failed(number: u64, reason: impl Into<String>) -> Placed {
        Placed {
            number,
            setup_at: None,
            proceeding: false,
            alerting: false,
            setup_to_connect: None,
            trouble: Some(reason.into()),
        }
    }
}

/// What the phone writes, and the calls that ended, after an input.
#[derive(Debug, Default)]
pub(super) struct Out {
    /// Whole TPKT frames to write, in order.
    pub write: Vec<Bytes>,
    /// Calls this phone placed that are over.
    pub finished: Vec<Placed>,
}

/// A call placed, not over yet.
#[derive(Debug)]
struct Placing {
    placed: Placed,
    call_identifier: [u8; 16],
    /// Connect by then, or (connected) release then.
    due: Instant,
    hold: Duration,
}

/// What one socket's reader has counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Heard {
    /// Setups answered (Call Proceeding, Alerting, Connect).
    pub answered: u64,
    /// Setups left unanswered: [`MAX_CALLS`] answered calls on the socket already.
    pub unanswered: u64,
    /// Frames with content that were no Q.931 message, or named no call of the socket.
    pub stray: u64,
}

impl Heard {
    /// Adds another's counts.
    pub fn add(&mut self, other: &Heard) {
        self.answered += other.answered;
        self.unanswered += other.unanswered;
        self.stray += other.stray;
    }
}

/// One socket's calls, both ways.
#[derive(Debug)]
pub(super) struct CallSignalling {
    frames: tpkt::Assembler,
    /// Calls this phone placed, by the call reference value it chose.
    placing: HashMap<u16, Placing>,
    /// Calls it answered, by the gatekeeper's call reference value.
    answered: HashSet<u16>,
    /// The last call reference value it chose.
    last_value: u16,
    /// What it counted.
    pub heard: Heard,
}

impl Default for CallSignalling {
    fn default() -> CallSignalling {
        CallSignalling {
            frames: tpkt::Assembler::new(MAX_FRAME),
            placing: HashMap::new(),
            answered: HashSet::new(),
            last_value: 0,
            heard: Heard::default(),
        }
    }
}

/// A message of the phone's own, framed (every one it writes is a few hundred octets).
fn framed(payload: &[u8]) -> Option<Bytes> {
    tpkt::frame(payload).ok()
}

/// What a Release Complete says of why: its Q.931 cause (`cause_20`), else its H.225.0
/// reason (`reason_calledPartyNotRegistered`), else `released`.
fn release_name(message: &q931::Message<'_>, payload: &[u8]) -> String {
    if let Some(cause) = message.cause() {
        return format!("cause_{cause}");
    }
    match q931::facts(payload) {
        Ok((_, facts)) => facts
            .release_reason
            .map_or_else(|| "released".to_string(), |r| format!("reason_{r}")),
        Err(_) => "released".to_string(),
    }
}

impl CallSignalling {
    /// Places `dial` at `now` (`wall`: the same instant since the UNIX epoch): the Setup's
    /// frame to write now, or the call, failed, when it cannot be placed.
    pub fn dial(&mut self, dial: Dial, now: Instant, wall: Duration) -> Result<Bytes, Placed> {
        if self.placing.len() >= MAX_CALLS {
            return Err(Placed::failed(dial.number, "too_many_calls"));
        }
        let value = self.free_value();
        let setup = q931::setup(&q931::Setup {
            call_reference: CallReference::from_originator(value),
            call_identifier: dial.call_identifier,
            conference_id: dial.call_identifier,
            source: &dial.caller,
            destination: std::slice::from_ref(&dial.callee),
            display: None,
            endpoint_identifier: dial.endpoint_identifier.as_ref(),
        });
        let Some(frame) = setup.ok().as_deref().and_then(framed) else {
            return Err(Placed::failed(dial.number, "setup_not_written"));
        };
        self.placing.insert(
            value,
            Placing {
                placed: Placed {
                    number: dial.number,
                    setup_at: Some(wall),
                    proceeding: false,
                    alerting: false,
                    setup_to_connect: None,
                    trouble: None,
                },
                call_identifier: dial.call_identifier,
                due: now + dial.connect_within,
                hold: dial.hold,
            },
        );
        Ok(frame)
    }

    /// A call reference value no call placed on this socket has, 1 to 32767 in turn.
    fn free_value(&mut self) -> u16 {
        loop {
            self.last_value = self.last_value % CallReference::MAX + 1;
            if !self.placing.contains_key(&self.last_value) {
                return self.last_value;
            }
        }
    }

    /// Reads `octets` from the socket, received at `at` (since the UNIX epoch) and handled
    /// at `now`; what to write and the calls that ended go to `out`. An error: the stream is
    /// not TPKT (or a frame is too long), and the socket must close.
    pub fn read(
        &mut self,
        octets: &[u8],
        at: Duration,
        now: Instant,
        out: &mut Out,
    ) -> Result<(), tpkt::FrameError> {
        let mut payloads = Vec::new();
        self.frames.read(octets, &mut payloads)?;
        for payload in payloads {
            if !payload.is_empty() {
                self.message(&payload, at, now, out);
            }
        }
        Ok(())
    }

    fn message(&mut self, payload: &[u8], at: Duration, now: Instant, out: &mut Out) {
        let Ok(message) = q931::Message::parse(payload) else {
            self.heard.stray += 1;
            return;
        };
        let crv = message.call_reference;
        if crv.from_destination {
            self.for_call_placed(crv.value, &message, payload, at, now, out);
        } else {
            self.for_call_answered(crv, &message, payload, out);
        }
    }

    /// A message for a call this phone placed (flag 1).
    fn for_call_placed(
        &mut self,
        value: u16,
        message: &q931::Message<'_>,
        payload: &[u8],
        at: Duration,
        now: Instant,
        out: &mut Out,
    ) {
        let Some(call) = self.placing.get_mut(&value) else {
            if message.message_type != MessageType::ReleaseComplete {
                self.heard.stray += 1;
            }
            return;
        };
        let placed = &mut call.placed;
        match message.message_type {
            MessageType::CallProceeding => placed.proceeding = true,
            MessageType::Alerting => placed.alerting = true,
            MessageType::Connect if placed.setup_to_connect.is_none() => {
                let written = placed.setup_at.unwrap_or(at);
                placed.setup_to_connect = Some(at.saturating_sub(written));
                call.due = now + call.hold;
            }
            MessageType::ReleaseComplete => {
                if let Some(mut call) = self.placing.remove(&value) {
                    call.placed.trouble = Some(release_name(message, payload));
                    out.finished.push(call.placed);
                }
            }
            _ => {}
        }
    }

    /// A message for a call the gatekeeper placed to this phone (flag 0).
    fn for_call_answered(
        &mut self,
        crv: CallReference,
        message: &q931::Message<'_>,
        payload: &[u8],
        out: &mut Out,
    ) {
        match message.message_type {
            MessageType::Setup => {
                if self.answered.len() >= MAX_CALLS && !self.answered.contains(&crv.value) {
                    self.heard.unanswered += 1;
                    return;
                }
                let reply = crv.reversed();
                let answer = match q931::facts(payload) {
                    Ok((_, facts)) => {
                        let call = facts.call_identifier.unwrap_or_default();
                        let conference = facts.conference_id.unwrap_or(call);
                        self.answered.insert(crv.value);
                        self.heard.answered += 1;
                        vec![
                            q931::call_proceeding(reply, call),
                            q931::alerting(reply, call),
                            q931::connect(reply, call, conference),
                        ]
                    }
                    Err(_) => {
                        self.heard.stray += 1;
                        vec![q931::release_complete(reply, None, Release::InvalidMessage)]
                    }
                };
                out.write.extend(answer.iter().filter_map(|m| framed(m)));
            }
            MessageType::ReleaseComplete => {
                self.answered.remove(&crv.value);
            }
            _ if self.answered.contains(&crv.value) => {}
            _ => self.heard.stray += 1,
        }
    }

    /// When the next call placed is due (to be released, or failed for no Connect).
    pub fn next_due(&self) -> Option<Instant> {
        self.placing.values().map(|call| call.due).min()
    }

    /// The calls placed that are due at `now`: a connected one held long enough is
    /// released, an unconnected one fails `no_connect` (released too, so the gatekeeper
    /// ends its call).
    pub fn due(&mut self, now: Instant, out: &mut Out) {
        let due: Vec<u16> = self
            .placing
            .iter()
            .filter(|(_, call)| call.due <= now)
            .map(|(&value, _)| value)
            .collect();
        for value in due {
            let Some(mut call) = self.placing.remove(&value) else {
                continue;
            };
            let release = q931::release_complete(
                CallReference::from_originator(value),
                Some(call.call_identifier),
                Release::NormalClearing,
            );
            out.write.extend(framed(&release));
            if call.placed.setup_to_connect.is_none() {
                call.placed.trouble = Some("no_connect".into());
            }
            out.finished.push(call.placed);
        }
    }

    /// The socket is gone (or the storm ends) for `reason`: every call placed and not over
    /// ends with it, and the calls answered are forgotten.
    pub fn end(&mut self, reason: &str) -> Vec<Placed> {
        self.answered.clear();
        let mut ended: Vec<Placed> = self
            .placing
            .drain()
            .map(|(_, mut call)| {
                call.placed.trouble = Some(reason.to_string());
                call.placed
            })
            .collect();
        ended.sort_by_key(|placed| placed.number);
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXTENSION: &str = "60001";

    fn dial(number: u64) -> Dial {
        let mut call_identifier = [0x22; 16];
        call_identifier[15] = number as u8;
        Dial {
            number,
            call_identifier,
            caller: vec![Alias::dialled_digits(EXTENSION).unwrap()],
            callee: Alias::dialled_digits("50001").unwrap(),
            endpoint_identifier: EndpointId::new("EP1").ok(),
            connect_within: Duration::from_secs(10),
            hold: Duration::from_secs(2),
        }
    }

    /// The messages in `frames`: (type, call reference).
    fn messages(frames: &[Bytes]) -> Vec<(MessageType, CallReference)> {
        let mut assembler = tpkt::Assembler::new(MAX_FRAME);
        frames
            .iter()
            .flat_map(|frame| {
                let mut payloads = Vec::new();
                assembler.read(frame, &mut payloads).unwrap();
                payloads
            })
            .map(|payload| {
                let message = q931::Message::parse(&payload).unwrap();
                (message.message_type, message.call_reference)
            })
            .collect()
    }

    fn framed_all(payloads: &[Bytes]) -> Vec<u8> {
        payloads
            .iter()
            .flat_map(|p| tpkt::frame(p).unwrap().to_vec())
            .collect()
    }

    #[test]
    fn a_setup_is_answered_at_once_under_its_call_reference_flag_1() {
        let mut phone = CallSignalling::default();
        let now = Instant::now();
        let gatekeeper_crv = CallReference::from_originator(77);
        let setup = q931::setup(&q931::Setup {
            call_reference: gatekeeper_crv,
            call_identifier: [9; 16],
            conference_id: [8; 16],
            source: &[Alias::dialled_digits("60000").unwrap()],
            destination: &[Alias::dialled_digits(EXTENSION).unwrap()],
            display: None,
            endpoint_identifier: None,
        })
        .unwrap();
        // The service frame, a keep-alive, then the Setup cut in two reads.
        let mut stream = tpkt::EMPTY.to_vec();
        stream.extend(tpkt::EMPTY);
        stream.extend(framed_all(&[setup]));
        let mut out = Out::default();
        let cut = stream.len() - 5;
        phone
            .read(&stream[..cut], Duration::ZERO, now, &mut out)
            .unwrap();
        assert!(out.write.is_empty(), "nothing before the Setup is whole");
        phone
            .read(&stream[cut..], Duration::ZERO, now, &mut out)
            .unwrap();
        let reply = gatekeeper_crv.reversed();
        assert_eq!(
            messages(&out.write),
            [
                (MessageType::CallProceeding, reply),
                (MessageType::Alerting, reply),
                (MessageType::Connect, reply),
            ]
        );
        let (_, facts) = {
            let mut payloads = Vec::new();
            tpkt::Assembler::new(MAX_FRAME)
                .read(&out.write[2], &mut payloads)
                .unwrap();
            let payload = payloads.remove(0);
            let (message, facts) = q931::facts(&payload).unwrap();
            (message.message_type, facts)
        };
        assert_eq!(facts.call_identifier, Some([9; 16]));
        assert_eq!(facts.conference_id, Some([8; 16]));
        assert_eq!(phone.heard.answered, 1);
        // The gatekeeper's Release Complete ends it; a second one names no call, and is
        // dropped quietly (what crosses a call's end); an Alerting for it is stray.
        let release = q931::release_complete(gatekeeper_crv, None, Release::NormalClearing);
        let late = q931::alerting(gatekeeper_crv, [9; 16]);
        let mut out = Out::default();
        let twice = framed_all(&[release.clone(), release, late]);
        phone.read(&twice, Duration::ZERO, now, &mut out).unwrap();
        assert!(out.write.is_empty(), "a Release Complete is never answered");
        assert_eq!(phone.heard.stray, 1);
        assert!(phone.answered.is_empty());
    }

    #[test]
    fn a_call_placed_is_timed_held_and_released_by_the_caller() {
        let mut phone = CallSignalling::default();
        let start = Instant::now();
        let wall = Duration::from_secs(1_000);
        let setup = phone.dial(dial(5), start, wall).unwrap();
        let [(MessageType::Setup, crv)] = messages(&[setup])[..] else {
            panic!("one Setup");
        };
        assert!(!crv.from_destination, "the caller chose the value: flag 0");
        let reply = crv.reversed();
        let answers = [
            q931::alerting(reply, [0x22; 16]),
            q931::connect(reply, [0x22; 16], [0x22; 16]),
        ];
        let mut out = Out::default();
        let connect_at = wall + Duration::from_millis(7);
        phone
            .read(&framed_all(&answers), connect_at, start, &mut out)
            .unwrap();
        assert!(out.finished.is_empty());
        assert_eq!(phone.next_due(), Some(start + Duration::from_secs(2)));
        phone.due(start + Duration::from_secs(1), &mut out);
        assert!(out.finished.is_empty(), "held for 2 s");
        phone.due(start + Duration::from_secs(2), &mut out);
        assert_eq!(
            messages(&out.write),
            [(MessageType::ReleaseComplete, crv)],
            "released under its own value, flag 0"
        );
        assert_eq!(
            out.finished,
            [Placed {
                number: 5,
                setup_at: Some(wall),
                proceeding: false,
                alerting: true,
                setup_to_connect: Some(Duration::from_millis(7)),
                trouble: None,
            }]
        );
        assert_eq!(phone.next_due(), None);
    }

    #[test]
    fn a_call_fails_by_the_cause_of_a_release_before_connect_or_for_no_connect() {
        let mut phone = CallSignalling::default();
        let start = Instant::now();
        let refused = phone.dial(dial(1), start, Duration::ZERO).unwrap();
        let silent = phone.dial(dial(2), start, Duration::ZERO).unwrap();
        let [(_, first)] = messages(&[refused])[..] else {
            panic!()
        };
        let [(_, second)] = messages(&[silent])[..] else {
            panic!()
        };
        assert_ne!(first.value, second.value, "distinct values on one socket");
        let release =
            q931::release_complete(first.reversed(), None, Release::CalledPartyNotRegistered);
        let mut out = Out::default();
        phone
            .read(&framed_all(&[release]), Duration::ZERO, start, &mut out)
            .unwrap();
        assert_eq!(out.finished.len(), 1);
        assert_eq!(out.finished[0].trouble.as_deref(), Some("cause_20"));
        assert!(out.write.is_empty());
        let mut out = Out::default();
        phone.due(start + Duration::from_secs(10), &mut out);
        assert_eq!(out.finished[0].number, 2);
        assert_eq!(out.finished[0].trouble.as_deref(), Some("no_connect"));
        assert_eq!(
            messages(&out.write),
            [(MessageType::ReleaseComplete, second)],
            "the gatekeeper hears the caller give up"
        );
    }

    #[test]
    fn a_lost_socket_ends_every_call_placed_and_garbage_is_no_call() {
        let mut phone = CallSignalling::default();
        let start = Instant::now();
        for n in 0..3 {
            phone.dial(dial(n), start, Duration::ZERO).unwrap();
        }
        let mut out = Out::default();
        // A frame that holds no Q.931 message, and one for a call nobody placed.
        let stray = framed_all(&[
            Bytes::from_static(&[0x99, 0x01]),
            q931::alerting(CallReference::to_originator(999), [0; 16]),
        ]);
        phone.read(&stray, Duration::ZERO, start, &mut out).unwrap();
        assert_eq!(phone.heard.stray, 2);
        let ended = phone.end("socket_lost");
        assert_eq!(
            ended.iter().map(|p| p.number).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert!(ended
            .iter()
            .all(|p| p.trouble.as_deref() == Some("socket_lost")));
        assert!(
            phone
                .read(b"GET / HTTP/1.1", Duration::ZERO, start, &mut out)
                .is_err(),
            "not TPKT"
        );
    }

    #[test]
    fn a_socket_carries_at_most_max_calls_each_way() {
        let mut phone = CallSignalling::default();
        let start = Instant::now();
        for n in 0..MAX_CALLS as u64 {
            assert!(phone.dial(dial(n), start, Duration::ZERO).is_ok());
        }
        let refused = phone.dial(dial(99), start, Duration::ZERO).unwrap_err();
        assert_eq!(refused.trouble.as_deref(), Some("too_many_calls"));
        let setups: Vec<Bytes> = (1..=MAX_CALLS as u16 + 3)
            .map(|value| {
                q931::setup(&q931::Setup {
                    call_reference: CallReference::from_originator(value),
                    call_identifier: [1; 16],
                    conference_id: [1; 16],
                    source: &[],
                    destination: &[],
                    display: None,
                    endpoint_identifier: None,
                })
                .unwrap()
            })
            .collect();
        let mut out = Out::default();
        phone
            .read(&framed_all(&setups), Duration::ZERO, start, &mut out)
            .unwrap();
        assert_eq!(phone.heard.answered, MAX_CALLS as u64);
        assert_eq!(phone.heard.unanswered, 3);
        assert_eq!(out.write.len(), 3 * MAX_CALLS);
    }

    proptest::proptest! {
        /// Whatever the gatekeeper sends, the phone neither panics nor holds more than it may.
        #[test]
        fn anything_on_the_socket_is_read_without_panic(
            frames in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64), 0..40),
        ) {
            let mut phone = CallSignalling::default();
            let start = Instant::now();
            let _ = phone.dial(dial(1), start, Duration::ZERO);
            let mut out = Out::default();
            for frame in &frames {
                let mut framed = vec![3, 0];
                framed.extend(((frame.len() + 4) as u16).to_be_bytes());
                framed.extend(frame);
                let _ = phone.read(&framed, Duration::ZERO, start, &mut out);
            }
            proptest::prop_assert!(phone.placing.len() <= MAX_CALLS);
            proptest::prop_assert!(phone.answered.len() <= MAX_CALLS);
        }
    }
}
