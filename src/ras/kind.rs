//! The short name (GRQ, GCF, …) and the `requestSeqNum` of any RAS message, and the ASN.1
//! name of a CHOICE value in one ([`choice_name`]).

use super::asn::RasMessage;

/// The type of a RAS message, by its customary three-letter name. The order is that of the
/// `RasMessage` CHOICE: the discriminant is the CHOICE index (extension additions from 25 on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum MessageKind {
    /// `gatekeeperRequest`
    Grq = 0,
    /// `gatekeeperConfirm`
    Gcf = 1,
    /// `gatekeeperReject`
    Grj = 2,
    /// `registrationRequest`
    Rrq = 3,
    /// `registrationConfirm`
    Rcf = 4,
    /// `registrationReject`
    Rrj = 5,
    /// `unregistrationRequest`
    Urq = 6,
    /// `unregistrationConfirm`
    Ucf = 7,
    /// `unregistrationReject`
    Urj = 8,
    /// `admissionRequest`
    Arq = 9,
    /// `admissionConfirm`
    Acf = 10,
    /// `admissionReject`
    Arj = 11,
    /// `bandwidthRequest`
    Brq = 12,
    /// `bandwidthConfirm`
    Bcf = 13,
    /// `bandwidthReject`
    Brj = 14,
    /// `disengageRequest`
    Drq = 15,
    /// `disengageConfirm`
    Dcf = 16,
    /// `disengageReject`
    Drj = 17,
    /// `locationRequest`
    Lrq = 18,
    /// `locationConfirm`
    Lcf = 19,
    /// `locationReject`
    Lrj = 20,
    /// `infoRequest`
    Irq = 21,
    /// `infoRequestResponse`
    Irr = 22,
    /// `nonStandardMessage`
    Nsm = 23,
    /// `unknownMessageResponse`
    Xrs = 24,
    /// `requestInProgress`
    Rip = 25,
    /// `resourcesAvailableIndicate`
    Rai = 26,
    /// `resourcesAvailableConfirm`
    Rac = 27,
    /// `infoRequestAck`
    Iack = 28,
    /// `infoRequestNak`
    Inak = 29,
    /// `serviceControlIndication`
    Sci = 30,
    /// `serviceControlResponse`
    Scr = 31,
    /// `admissionConfirmSequence`
    Acfseq = 32,
}

impl MessageKind {
    /// Every kind, in CHOICE order.
    pub const ALL: [MessageKind; 33] = [
        MessageKind::Grq,
        MessageKind::Gcf,
        MessageKind::Grj,
        MessageKind::Rrq,
        MessageKind::Rcf,
        MessageKind::Rrj,
        MessageKind::Urq,
        MessageKind::Ucf,
        MessageKind::Urj,
        MessageKind::Arq,
        MessageKind::Acf,
        MessageKind::Arj,
        MessageKind::Brq,
        MessageKind::Bcf,
        MessageKind::Brj,
        MessageKind::Drq,
        MessageKind::Dcf,
        MessageKind::Drj,
        MessageKind::Lrq,
        MessageKind::Lcf,
        MessageKind::Lrj,
        MessageKind::Irq,
        MessageKind::Irr,
        MessageKind::Nsm,
        MessageKind::Xrs,
        MessageKind::Rip,
        MessageKind::Rai,
        MessageKind::Rac,
        MessageKind::Iack,
        MessageKind::Inak,
        MessageKind::Sci,
        MessageKind::Scr,
        MessageKind::Acfseq,
    ];

    /// The customary short name: `GRQ`, `GCF`, …
    pub fn short_name(self) -> &'static str {
        match self {
            MessageKind::Grq => "GRQ",
            MessageKind::Gcf => "GCF",
            MessageKind::Grj => "GRJ",
            MessageKind::Rrq => "RRQ",
            MessageKind::Rcf => "RCF",
            MessageKind::Rrj => "RRJ",
            MessageKind::Urq => "URQ",
            MessageKind::Ucf => "UCF",
            MessageKind::Urj => "URJ",
            MessageKind::Arq => "ARQ",
            MessageKind::Acf => "ACF",
            MessageKind::Arj => "ARJ",
            MessageKind::Brq => "BRQ",
            MessageKind::Bcf => "BCF",
            MessageKind::Brj => "BRJ",
            MessageKind::Drq => "DRQ",
            MessageKind::Dcf => "DCF",
            MessageKind::Drj => "DRJ",
            MessageKind::Lrq => "LRQ",
            MessageKind::Lcf => "LCF",
            MessageKind::Lrj => "LRJ",
            MessageKind::Irq => "IRQ",
            MessageKind::Irr => "IRR",
            MessageKind::Nsm => "NSM",
            MessageKind::Xrs => "XRS",
            MessageKind::Rip => "RIP",
            MessageKind::Rai => "RAI",
            MessageKind::Rac => "RAC",
            MessageKind::Iack => "IACK",
            MessageKind::Inak => "INAK",
            MessageKind::Sci => "SCI",
            MessageKind::Scr => "SCR",
            MessageKind::Acfseq => "ACFSEQ",
        }
    }

    /// The ASN.1 identifier of the `RasMessage` alternative: `gatekeeperRequest`, …
    pub fn asn1_name(self) -> &'static str {
        match self {
            MessageKind::Grq => "gatekeeperRequest",
            MessageKind::Gcf => "gatekeeperConfirm",
            MessageKind::Grj => "gatekeeperReject",
            MessageKind::Rrq => "registrationRequest",
            MessageKind::Rcf => "registrationConfirm",
            MessageKind::Rrj => "registrationReject",
            MessageKind::Urq => "unregistrationRequest",
            MessageKind::Ucf => "unregistrationConfirm",
            MessageKind::Urj => "unregistrationReject",
            MessageKind::Arq => "admissionRequest",
            MessageKind::Acf => "admissionConfirm",
            MessageKind::Arj => "admissionReject",
            MessageKind::Brq => "bandwidthRequest",
            MessageKind::Bcf => "bandwidthConfirm",
            MessageKind::Brj => "bandwidthReject",
            MessageKind::Drq => "disengageRequest",
            MessageKind::Dcf => "disengageConfirm",
            MessageKind::Drj => "disengageReject",
            MessageKind::Lrq => "locationRequest",
            MessageKind::Lcf => "locationConfirm",
            MessageKind::Lrj => "locationReject",
            MessageKind::Irq => "infoRequest",
            MessageKind::Irr => "infoRequestResponse",
            MessageKind::Nsm => "nonStandardMessage",
            MessageKind::Xrs => "unknownMessageResponse",
            MessageKind::Rip => "requestInProgress",
            MessageKind::Rai => "resourcesAvailableIndicate",
            MessageKind::Rac => "resourcesAvailableConfirm",
            MessageKind::Iack => "infoRequestAck",
            MessageKind::Inak => "infoRequestNak",
            MessageKind::Sci => "serviceControlIndication",
            MessageKind::Scr => "serviceControlResponse",
            MessageKind::Acfseq => "admissionConfirmSequence",
        }
    }

    /// Does a peer expect an answer to it? Requests and indications (GRQ, RRQ, URQ, ARQ,
    /// BRQ, DRQ, LRQ, IRQ, IRR, NSM, RAI, SCI); everything else answers one.
    pub fn is_request(self) -> bool {
        use MessageKind::*;
        matches!(
            self,
            Grq | Rrq | Urq | Arq | Brq | Drq | Lrq | Irq | Irr | Nsm | Rai | Sci
        )
    }

    /// The kind with this CHOICE index.
    pub fn from_index(index: usize) -> Option<MessageKind> {
        Self::ALL.get(index).copied()
    }

    /// The kind with this short name (case-insensitive).
    pub fn from_short_name(name: &str) -> Option<MessageKind> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.short_name().eq_ignore_ascii_case(name))
    }
}

impl std::fmt::Display for MessageKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.short_name())
    }
}

impl serde::Serialize for MessageKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.short_name())
    }
}

/// The type of a message.
pub fn kind(message: &RasMessage) -> MessageKind {
    match message {
        RasMessage::gatekeeperRequest(_) => MessageKind::Grq,
        RasMessage::gatekeeperConfirm(_) => MessageKind::Gcf,
        RasMessage::gatekeeperReject(_) => MessageKind::Grj,
        RasMessage::registrationRequest(_) => MessageKind::Rrq,
        RasMessage::registrationConfirm(_) => MessageKind::Rcf,
        RasMessage::registrationReject(_) => MessageKind::Rrj,
        RasMessage::unregistrationRequest(_) => MessageKind::Urq,
        RasMessage::unregistrationConfirm(_) => MessageKind::Ucf,
        RasMessage::unregistrationReject(_) => MessageKind::Urj,
        RasMessage::admissionRequest(_) => MessageKind::Arq,
        RasMessage::admissionConfirm(_) => MessageKind::Acf,
        RasMessage::admissionReject(_) => MessageKind::Arj,
        RasMessage::bandwidthRequest(_) => MessageKind::Brq,
        RasMessage::bandwidthConfirm(_) => MessageKind::Bcf,
        RasMessage::bandwidthReject(_) => MessageKind::Brj,
        RasMessage::disengageRequest(_) => MessageKind::Drq,
        RasMessage::disengageConfirm(_) => MessageKind::Dcf,
        RasMessage::disengageReject(_) => MessageKind::Drj,
        RasMessage::locationRequest(_) => MessageKind::Lrq,
        RasMessage::locationConfirm(_) => MessageKind::Lcf,
        RasMessage::locationReject(_) => MessageKind::Lrj,
        RasMessage::infoRequest(_) => MessageKind::Irq,
        RasMessage::infoRequestResponse(_) => MessageKind::Irr,
        RasMessage::nonStandardMessage(_) => MessageKind::Nsm,
        RasMessage::unknownMessageResponse(_) => MessageKind::Xrs,
        RasMessage::requestInProgress(_) => MessageKind::Rip,
        RasMessage::resourcesAvailableIndicate(_) => MessageKind::Rai,
        RasMessage::resourcesAvailableConfirm(_) => MessageKind::Rac,
        RasMessage::infoRequestAck(_) => MessageKind::Iack,
        RasMessage::infoRequestNak(_) => MessageKind::Inak,
        RasMessage::serviceControlIndication(_) => MessageKind::Sci,
        RasMessage::serviceControlResponse(_) => MessageKind::Scr,
        RasMessage::admissionConfirmSequence(_) => MessageKind::Acfseq,
    }
}

/// The `requestSeqNum` of any message. For `admissionConfirmSequence`, that of its first
/// ACF (0 when the sequence is empty, which a valid message never is).
pub fn request_seq_num(message: &RasMessage) -> u16 {
    match message {
        RasMessage::gatekeeperRequest(m) => m.request_seq_num.0,
        RasMessage::gatekeeperConfirm(m) => m.request_seq_num.0,
        RasMessage::gatekeeperReject(m) => m.request_seq_num.0,
        RasMessage::registrationRequest(m) => m.request_seq_num.0,
        RasMessage::registrationConfirm(m) => m.request_seq_num.0,
        RasMessage::registrationReject(m) => m.request_seq_num.0,
        RasMessage::unregistrationRequest(m) => m.request_seq_num.0,
        RasMessage::unregistrationConfirm(m) => m.request_seq_num.0,
        RasMessage::unregistrationReject(m) => m.request_seq_num.0,
        RasMessage::admissionRequest(m) => m.request_seq_num.0,
        RasMessage::admissionConfirm(m) => m.request_seq_num.0,
        RasMessage::admissionReject(m) => m.request_seq_num.0,
        RasMessage::bandwidthRequest(m) => m.request_seq_num.0,
        RasMessage::bandwidthConfirm(m) => m.request_seq_num.0,
        RasMessage::bandwidthReject(m) => m.request_seq_num.0,
        RasMessage::disengageRequest(m) => m.request_seq_num.0,
        RasMessage::disengageConfirm(m) => m.request_seq_num.0,
        RasMessage::disengageReject(m) => m.request_seq_num.0,
        RasMessage::locationRequest(m) => m.request_seq_num.0,
        RasMessage::locationConfirm(m) => m.request_seq_num.0,
        RasMessage::locationReject(m) => m.request_seq_num.0,
        RasMessage::infoRequest(m) => m.request_seq_num.0,
        RasMessage::infoRequestResponse(m) => m.request_seq_num.0,
        RasMessage::nonStandardMessage(m) => m.request_seq_num.0,
        RasMessage::unknownMessageResponse(m) => m.request_seq_num.0,
        RasMessage::requestInProgress(m) => m.request_seq_num.0,
        RasMessage::resourcesAvailableIndicate(m) => m.request_seq_num.0,
        RasMessage::resourcesAvailableConfirm(m) => m.request_seq_num.0,
        RasMessage::infoRequestAck(m) => m.request_seq_num.0,
        RasMessage::infoRequestNak(m) => m.request_seq_num.0,
        RasMessage::serviceControlIndication(m) => m.request_seq_num.0,
        RasMessage::serviceControlResponse(m) => m.request_seq_num.0,
        RasMessage::admissionConfirmSequence(m) => m.first().map_or(0, |acf| acf.request_seq_num.0),
    }
}

/// The ASN.1 name of a CHOICE value, from its `Debug` form: `resourceUnavailable(())` →
/// `resourceUnavailable`.
pub fn choice_name(value: &impl std::fmt::Debug) -> String {
    let text = format!("{value:?}");
    text.split(['(', ' ', '{'])
        .next()
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (index, kind) in MessageKind::ALL.into_iter().enumerate() {
            assert_eq!(kind as usize, index);
            assert_eq!(MessageKind::from_index(index), Some(kind));
            assert_eq!(MessageKind::from_short_name(kind.short_name()), Some(kind));
        }
        assert_eq!(MessageKind::from_index(MessageKind::ALL.len()), None);
    }
}
