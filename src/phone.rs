//! A simulated H.323 phone's side of RAS, with no I/O: it writes GRQ, RRQ (full and
//! lightweight) and URQ, and reads what a gatekeeper answers. Tests, examples and the storm
//! tool drive it over whatever transport they have.

use std::net::SocketAddr;

use crate::ras::avaya::{self, Mac};
use crate::ras::reply::{EndpointId, GatekeeperId};
use crate::ras::{
    self, asn, choice_name, hot_confirm, hot_phone, request, socket_addr, Alias, RasMessage,
};

/// One phone.
#[derive(Debug, Clone)]
pub struct Phone {
    /// Its aliases.
    pub aliases: Vec<Alias>,
    /// Its RAS address (where it sends from).
    pub ras_address: SocketAddr,
    /// Its call signalling address.
    pub call_signal_address: SocketAddr,
    /// The gatekeeper identifier learnt from GCF/RCF.
    pub gatekeeper_id: Option<GatekeeperId>,
    /// The endpoint identifier learnt from RCF.
    pub endpoint_id: Option<EndpointId>,
    /// `terminalType` is a gateway.
    pub gateway: bool,
    /// A gateway's `supportedPrefixes` (its RRQ's `terminalType` announces them in a `voice`
    /// protocol).
    pub prefixes: Vec<Alias>,
    /// Its H.235 password: when set, every request that names it (RRQ, lightweight RRQ, URQ,
    /// ARQ, DRQ) carries a `cryptoEPPwdHash` token for its first alias.
    pub password: Option<String>,
    /// The `timeStamp` of its tokens (UNIX seconds); `None`: the system clock at sending.
    pub token_time: Option<u32>,
    /// Keeps its endpoint identifier when unregistered and sends it in its next full RRQ,
    /// as H323Plus does; by default a phone forgets it with a URQ or UCF.
    pub keeps_endpoint_id: bool,
    /// An Avaya phone of this MAC address: its GRQ carries Avaya's CCMS discovery request
    /// and its full RRQ a login request naming the address, as `nonStandardData`
    /// ([`ras::avaya`]).
    pub avaya: Option<Mac>,
    /// The `timeToLive` its full RRQs ask for, seconds; `None`: none asked, the
    /// gatekeeper's own is granted.
    pub time_to_live_s: Option<u32>,
    /// Its full RRQs ask for the service frame ([`ras::service_frame`]): in socket mode a
    /// gatekeeper that confirms it writes an empty TPKT frame on the phone's socket when it
    /// is in service. Off by default, as no standard endpoint asks.
    pub service_frame: bool,
    seq: u16,
}

/// What a gatekeeper said, as a phone reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// GCF: register at this RAS address.
    Gcf {
        /// `requestSeqNum`.
        seq: u16,
        /// `rasAddress`: the C-LAN to send the RRQ to.
        ras_address: Option<SocketAddr>,
    },
    /// GRJ with its reason (the ASN.1 name, e.g. `resourceUnavailable`).
    Grj {
        /// `requestSeqNum`.
        seq: u16,
        /// `rejectReason`.
        reason: String,
    },
    /// RCF.
    Rcf {
        /// `requestSeqNum`.
        seq: u16,
        /// `callSignalAddress`'s first entry: in socket mode, the C-LAN's signalling address
        /// (its IP and `signal_port`), where a non-TTS phone opens its TCP connection.
        call_signal_address: Option<SocketAddr>,
        /// `endpointIdentifier`.
        endpoint_id: String,
        /// The AGL's RAS addresses in order.
        agl: Vec<SocketAddr>,
        /// Granted `timeToLive`.
        time_to_live_s: Option<u32>,
        /// The gatekeeper confirms the service frame the phone asked for
        /// ([`ras::service_frame`]): it writes one on the phone's socket in service.
        service_frame: bool,
    },
    /// RRJ.
    Rrj {
        /// `requestSeqNum`.
        seq: u16,
        /// `rejectReason`.
        reason: String,
        /// `altGKInfo`'s RAS addresses.
        alternates: Vec<SocketAddr>,
    },
    /// A gatekeeper-sent URQ, with the AGL to register at next.
    Urq {
        /// `requestSeqNum` (answer it with [`Phone::ucf`]).
        seq: u16,
        /// `alternateGatekeeper`'s RAS addresses.
        agl: Vec<SocketAddr>,
        /// `endpointIdentifier`: the registration it ends.
        endpoint_id: Option<String>,
    },
    /// A gatekeeper-sent IRQ (answer it with [`Phone::irr`]).
    Irq {
        /// `requestSeqNum`.
        seq: u16,
    },
    /// UCF.
    Ucf {
        /// `requestSeqNum`.
        seq: u16,
    },
    /// URJ.
    Urj {
        /// `requestSeqNum`.
        seq: u16,
        /// `rejectReason`.
        reason: String,
    },
    /// ACF: the call may go to `dest` (for a trunk call, the placing node).
    Acf {
        /// `requestSeqNum`.
        seq: u16,
        /// `destCallSignalAddress`.
        dest: Option<SocketAddr>,
        /// `callModel` is `gatekeeperRouted`: the call's signalling goes through the
        /// gatekeeper at `dest` (docs/rules.md §8.7).
        routed: bool,
    },
    /// ARJ.
    Arj {
        /// `requestSeqNum`.
        seq: u16,
        /// `rejectReason`.
        reason: String,
    },
    /// Anything else, by short name.
    Other {
        /// `GCF`, `XRS`, ….
        kind: ras::MessageKind,
        /// `requestSeqNum`.
        seq: u16,
    },
}

fn addresses(list: &[asn::AlternateGK]) -> Vec<SocketAddr> {
    list.iter()
        .filter_map(|gk| socket_addr(&gk.ras_address))
        .collect()
}

impl Answer {
    /// Reads a gatekeeper's datagram.
    pub fn read(datagram: &[u8]) -> Result<Answer, ras::DecodeError> {
        // A GCF or RCF as rasgk writes them is read by hand; anything else is decoded.
        match hot_confirm::read(datagram) {
            Some(hot_confirm::Confirm::Gcf { seq, ras_address }) => Ok(Answer::Gcf {
                seq,
                ras_address: Some(ras_address),
            }),
            Some(hot_confirm::Confirm::Rcf {
                seq,
                call_signal_address,
                endpoint_id,
                agl,
                time_to_live_s,
                service_frame,
            }) => Ok(Answer::Rcf {
                seq,
                call_signal_address,
                endpoint_id: ras::utf16be_text(endpoint_id),
                agl,
                time_to_live_s,
                service_frame,
            }),
            None => Ok(Answer::from_message(&ras::decode(datagram)?)),
        }
    }

    /// Reads a decoded message.
    pub fn from_message(message: &RasMessage) -> Answer {
        let seq = ras::request_seq_num(message);
        match message {
            RasMessage::gatekeeperConfirm(gcf) => Answer::Gcf {
                seq,
                ras_address: socket_addr(&gcf.ras_address),
            },
            RasMessage::gatekeeperReject(grj) => Answer::Grj {
                seq,
                reason: choice_name(&grj.reject_reason),
            },
            RasMessage::registrationConfirm(rcf) => Answer::Rcf {
                seq,
                call_signal_address: rcf.call_signal_address.first().and_then(socket_addr),
                endpoint_id: ras::bmp_text(&rcf.endpoint_identifier.0),
                agl: rcf
                    .alternate_gatekeeper
                    .as_deref()
                    .map(addresses)
                    .unwrap_or_default(),
                time_to_live_s: rcf.time_to_live.as_ref().map(|ttl| ttl.0),
                service_frame: ras::service_frame::named(rcf.feature_set.as_ref()),
            },
            RasMessage::registrationReject(rrj) => Answer::Rrj {
                seq,
                reason: choice_name(&rrj.reject_reason),
                alternates: rrj
                    .alt_gkinfo
                    .as_ref()
                    .map(|info| addresses(&info.alternate_gatekeeper))
                    .unwrap_or_default(),
            },
            RasMessage::unregistrationRequest(urq) => Answer::Urq {
                seq,
                agl: urq
                    .alternate_gatekeeper
                    .as_deref()
                    .map(addresses)
                    .unwrap_or_default(),
                endpoint_id: urq
                    .endpoint_identifier
                    .as_ref()
                    .map(|id| ras::bmp_text(&id.0)),
            },
            RasMessage::unregistrationConfirm(_) => Answer::Ucf { seq },
            RasMessage::infoRequest(_) => Answer::Irq { seq },
            RasMessage::admissionConfirm(acf) => Answer::Acf {
                seq,
                dest: socket_addr(&acf.dest_call_signal_address),
                routed: matches!(acf.call_model, asn::CallModel::gatekeeperRouted(())),
            },
            RasMessage::admissionReject(arj) => Answer::Arj {
                seq,
                reason: choice_name(&arj.reject_reason),
            },
            RasMessage::unregistrationReject(urj) => Answer::Urj {
                seq,
                reason: choice_name(&urj.reject_reason),
            },
            other => Answer::Other {
                kind: ras::kind(other),
                seq,
            },
        }
    }

    /// Its `requestSeqNum`.
    pub fn seq(&self) -> u16 {
        match self {
            Answer::Gcf { seq, .. }
            | Answer::Grj { seq, .. }
            | Answer::Rcf { seq, .. }
            | Answer::Rrj { seq, .. }
            | Answer::Urq { seq, .. }
            | Answer::Irq { seq }
            | Answer::Ucf { seq }
            | Answer::Urj { seq, .. }
            | Answer::Acf { seq, .. }
            | Answer::Arj { seq, .. }
            | Answer::Other { seq, .. } => *seq,
        }
    }
}

fn encode(message: &RasMessage) -> Vec<u8> {
    // Every message a phone builds comes from checked values: encoding cannot fail.
    ras::encode(message).expect("a phone's own message encodes")
}

impl Phone {
    /// A terminal with these aliases, taking RAS and calls at `ras_address` (calls on port
    /// 1720 of the same IP).
    pub fn new(aliases: Vec<Alias>, ras_address: SocketAddr) -> Phone {
        Phone {
            aliases,
            ras_address,
            call_signal_address: SocketAddr::new(ras_address.ip(), 1720),
            gatekeeper_id: None,
            endpoint_id: None,
            gateway: false,
            prefixes: Vec::new(),
            password: None,
            token_time: None,
            keeps_endpoint_id: false,
            avaya: None,
            time_to_live_s: None,
            service_frame: false,
            seq: 0,
        }
    }

    /// A terminal with one dialled-digits alias (an extension).
    pub fn extension(extension: u32, ras_address: SocketAddr) -> Phone {
        let alias = Alias::dialled_digits(&extension.to_string())
            .expect("decimal digits are dialledDigits");
        Phone::new(vec![alias], ras_address)
    }

    /// The next `requestSeqNum` (1..=65535, wrapping).
    pub fn next_seq(&mut self) -> u16 {
        self.seq = self.seq.wrapping_add(1).max(1);
        self.seq
    }

    /// The last `requestSeqNum` used.
    pub fn last_seq(&self) -> u16 {
        self.seq
    }

    /// A GRQ (a new sequence number).
    pub fn grq(&mut self) -> Vec<u8> {
        let seq = self.next_seq();
        // Hand-written where it can be, the generated codec otherwise; the same octets.
        let mut octets = Vec::with_capacity(64);
        if self.avaya.is_none() && !self.gateway {
            let written = hot_phone::gatekeeper_request(
                &mut octets,
                seq,
                self.ras_address,
                &self.aliases,
                None,
            );
            if written.is_some() {
                return octets;
            }
        }
        let mut grq = request::gatekeeper_request(seq, self.ras_address, &self.aliases, None);
        if let RasMessage::gatekeeperRequest(grq) = &mut grq {
            if self.avaya.is_some() {
                grq.non_standard_data = Some(avaya::non_standard_data(&avaya::DISCOVERY_REQUEST));
            }
            if self.gateway {
                grq.endpoint_type = request::gateway();
            }
        }
        encode(&grq)
    }

    /// A full RRQ (a new sequence number); with the endpoint identifier it keeps, when it
    /// [keeps one](Phone::keeps_endpoint_id).
    pub fn rrq(&mut self) -> Vec<u8> {
        let seq = self.next_seq();
        let kept = self.endpoint_id.as_ref().filter(|_| self.keeps_endpoint_id);
        let plain = kept.is_none() && self.avaya.is_none() && self.prefixes.is_empty();
        if self.password.is_none() && plain {
            if let Some(octets) = self.hand_written_rrq(seq, None) {
                return octets;
            }
        }
        let terminal_type = if self.gateway {
            request::gateway_with_prefixes(&self.prefixes)
        } else {
            request::terminal()
        };
        let mut rrq = request::registration_request(&request::Rrq {
            request_seq_num: seq,
            call_signal_address: self.call_signal_address,
            ras_address: self.ras_address,
            terminal_type,
            aliases: &self.aliases,
            gatekeeper_id: self.gatekeeper_id.as_ref(),
            time_to_live_s: self.time_to_live_s,
        });
        if let RasMessage::registrationRequest(rrq) = &mut rrq {
            rrq.endpoint_identifier = kept.map(EndpointId::asn);
            rrq.non_standard_data = self
                .avaya
                .map(|mac| avaya::non_standard_data(&avaya::login_request(mac)));
            rrq.feature_set = self.service_frame.then(ras::service_frame::request);
        }
        self.authenticate(&mut rrq);
        encode(&rrq)
    }

    /// Adds the password token to a request, when the phone has a password.
    fn authenticate(&self, message: &mut RasMessage) {
        let (Some(password), Some(alias)) = (&self.password, self.aliases.first()) else {
            return;
        };
        let time_stamp = self.token_time.unwrap_or_else(|| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            u32::try_from(now.as_secs()).unwrap_or(u32::MAX)
        });
        // A password the gatekeeper could not check either (too long, outside the BMP) is
        // sent as no token: the gatekeeper then answers securityDenial, which says why.
        if let Ok(token) = ras::h235::ep_pwd_hash(alias, password, time_stamp) {
            request::set_crypto_tokens(message, vec![token]);
        }
    }

    /// An RRQ written by hand ([`hot_phone`]): a full one, or a keep-alive with the
    /// endpoint identifier `keep_alive` (UTF-16BE), which carries no aliases and
    /// no time to live; `None` where only the generated codec can write it.
    fn hand_written_rrq(&self, seq: u16, keep_alive: Option<&[u8]>) -> Option<Vec<u8>> {
        let full = keep_alive.is_none();
        let mut octets = Vec::with_capacity(128);
        hot_phone::registration_request(
            &mut octets,
            &hot_phone::RrqParts {
                request_seq_num: seq,
                call_signal_address: self.call_signal_address,
                ras_address: self.ras_address,
                gateway: full && self.gateway,
                aliases: if full { &self.aliases } else { &[] },
                gatekeeper_id: self.gatekeeper_id.as_ref().map(GatekeeperId::octets),
                time_to_live_s: self.time_to_live_s.filter(|_| full),
                keep_alive,
                service_frame: full && self.service_frame,
            },
        )?;
        Some(octets)
    }

    /// A lightweight RRQ (`keepAlive`), or `None` before the phone has an endpoint id.
    pub fn keep_alive(&mut self) -> Option<Vec<u8>> {
        let seq = self.next_seq();
        let endpoint_id = self.endpoint_id.as_ref()?;
        // Hand-written where it can be (no token to add), the generated codec otherwise.
        if self.password.is_none() {
            if let Some(octets) = self.hand_written_rrq(seq, Some(&endpoint_id.utf16be())) {
                return Some(octets);
            }
        }
        let mut rrq = request::keep_alive(
            seq,
            self.call_signal_address,
            self.ras_address,
            endpoint_id,
            self.gatekeeper_id.as_ref(),
            None,
        );
        self.authenticate(&mut rrq);
        Some(encode(&rrq))
    }

    /// A URQ for its own registration.
    pub fn urq(&mut self) -> Vec<u8> {
        let seq = self.next_seq();
        let mut urq = ras::reply::unregistration_request(&ras::reply::Urq {
            request_seq_num: seq,
            call_signal_address: &[self.call_signal_address],
            aliases: &self.aliases,
            endpoint_id: self.endpoint_id.as_ref(),
            gatekeeper_id: self.gatekeeper_id.as_ref(),
            reason: None,
            agl: &[],
        });
        self.authenticate(&mut urq);
        encode(&urq)
    }

    /// An ARQ for an outbound call to `dialled` (digits, else a name: an h323-ID), or `None`
    /// before the phone has an endpoint id or when `dialled` is neither.
    pub fn arq(&mut self, dialled: &str, call_id: [u8; 16]) -> Option<Vec<u8>> {
        let destination = [Alias::dialled_digits(dialled)
            .or_else(|_| Alias::h323_id(dialled))
            .ok()?];
        self.admission(&destination, call_id, false)
    }

    /// An ARQ asking to answer the call `call_id` offered to it (`answerCall` TRUE, its
    /// own aliases as the destination), or `None` before the phone has an endpoint id.
    pub fn answer_arq(&mut self, call_id: [u8; 16]) -> Option<Vec<u8>> {
        let destination = self.aliases.clone();
        self.admission(&destination, call_id, true)
    }

    fn admission(
        &mut self,
        destination: &[Alias],
        call_id: [u8; 16],
        answer_call: bool,
    ) -> Option<Vec<u8>> {
        let seq = self.next_seq();
        let endpoint_id = self.endpoint_id.as_ref()?;
        let mut arq = request::admission_request(&request::Arq {
            request_seq_num: seq,
            endpoint_id,
            destination,
            source: &self.aliases,
            call: request::Call {
                call_reference_value: u16::from_be_bytes([call_id[14], call_id[15]]),
                conference_id: call_id,
                call_id,
            },
            band_width: 1280,
            answer_call,
        });
        self.authenticate(&mut arq);
        Some(encode(&arq))
    }

    /// A DRQ ending the call `call_id`, or `None` before the phone has an endpoint id.
    pub fn drq(&mut self, call_id: [u8; 16]) -> Option<Vec<u8>> {
        let seq = self.next_seq();
        let endpoint_id = self.endpoint_id.as_ref()?;
        let mut drq = request::disengage_request(
            seq,
            endpoint_id,
            request::Call {
                call_reference_value: u16::from_be_bytes([call_id[14], call_id[15]]),
                conference_id: call_id,
                call_id,
            },
        );
        self.authenticate(&mut drq);
        Some(encode(&drq))
    }

    /// An IRR answering a gatekeeper-sent IRQ of `seq` (about no call: the phone has none
    /// it tells of), or `None` before the phone has an endpoint id.
    pub fn irr(&self, seq: u16) -> Option<Vec<u8>> {
        let endpoint_id = self.endpoint_id.as_ref()?;
        let mut irr = request::info_request_response(
            seq,
            endpoint_id,
            self.ras_address,
            self.call_signal_address,
            &self.aliases,
            false,
        );
        self.authenticate(&mut irr);
        Some(encode(&irr))
    }

    /// A UCF answering a gatekeeper-sent URQ.
    pub fn ucf(&self, seq: u16) -> Vec<u8> {
        encode(&ras::reply::unregistration_confirm(seq))
    }

    /// Learns from an answer: the endpoint id of an RCF, which it forgets on a URQ or UCF
    /// unless it [keeps it](Phone::keeps_endpoint_id) — and then an RCF naming another
    /// one does not change it either (H323Plus: "Inconsistent endpointIdentifier").
    pub fn learn(&mut self, answer: &Answer) {
        match answer {
            Answer::Rcf { .. } if self.keeps_endpoint_id && self.endpoint_id.is_some() => {}
            Answer::Rcf { endpoint_id, .. } => {
                self.endpoint_id = EndpointId::new(endpoint_id).ok();
            }
            Answer::Urq { .. } | Answer::Ucf { .. } if !self.keeps_endpoint_id => {
                self.endpoint_id = None;
            }
            _ => {}
        }
    }
}
