//! [`MessageType`]: the message type octet of a Q.931 message, which both the reader of
//! messages and its errors name.

/// The message type octet (Q.931 4.4), with the messages H.225.0 uses named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// Alerting (0x01): the called phone rings.
    Alerting,
    /// Call Proceeding (0x02): the Setup was taken in; no more digits wanted.
    CallProceeding,
    /// Connect (0x07): the called party answered.
    Connect,
    /// Connect Acknowledge (0x0F).
    ConnectAcknowledge,
    /// Progress (0x03).
    Progress,
    /// Setup (0x05): a call is placed.
    Setup,
    /// Setup Acknowledge (0x0D): overlap sending, more digits wanted.
    SetupAcknowledge,
    /// Release Complete (0x5A): the call is over; H.225.0 clears with this alone.
    ReleaseComplete,
    /// Information (0x7B).
    Information,
    /// Facility (0x62).
    Facility,
    /// Notify (0x6E).
    Notify,
    /// Status (0x7D).
    Status,
    /// Status Enquiry (0x75).
    StatusEnquiry,
    /// Any other message type octet.
    Other(u8),
}

impl MessageType {
    /// Every named type, for tests and tables.
    pub const NAMED: [MessageType; 13] = [
        MessageType::Alerting,
        MessageType::CallProceeding,
        MessageType::Connect,
        MessageType::ConnectAcknowledge,
        MessageType::Progress,
        MessageType::Setup,
        MessageType::SetupAcknowledge,
        MessageType::ReleaseComplete,
        MessageType::Information,
        MessageType::Facility,
        MessageType::Notify,
        MessageType::Status,
        MessageType::StatusEnquiry,
    ];

    /// The octet on the wire.
    pub fn code(self) -> u8 {
        match self {
            MessageType::Alerting => 0x01,
            MessageType::CallProceeding => 0x02,
            MessageType::Progress => 0x03,
            MessageType::Setup => 0x05,
            MessageType::Connect => 0x07,
            MessageType::SetupAcknowledge => 0x0D,
            MessageType::ConnectAcknowledge => 0x0F,
            MessageType::ReleaseComplete => 0x5A,
            MessageType::Facility => 0x62,
            MessageType::Notify => 0x6E,
            MessageType::StatusEnquiry => 0x75,
            MessageType::Information => 0x7B,
            MessageType::Status => 0x7D,
            MessageType::Other(code) => code,
        }
    }

    /// The type of an octet; [`MessageType::Other`] for octets without a name here.
    pub fn from_code(code: u8) -> MessageType {
        Self::NAMED
            .into_iter()
            .find(|named| named.code() == code)
            .unwrap_or(MessageType::Other(code))
    }

    /// The Q.931 name, e.g. "Release Complete"; "unknown message type" for
    /// [`MessageType::Other`].
    pub fn name(self) -> &'static str {
        match self {
            MessageType::Alerting => "Alerting",
            MessageType::CallProceeding => "Call Proceeding",
            MessageType::Connect => "Connect",
            MessageType::ConnectAcknowledge => "Connect Acknowledge",
            MessageType::Progress => "Progress",
            MessageType::Setup => "Setup",
            MessageType::SetupAcknowledge => "Setup Acknowledge",
            MessageType::ReleaseComplete => "Release Complete",
            MessageType::Information => "Information",
            MessageType::Facility => "Facility",
            MessageType::Notify => "Notify",
            MessageType::Status => "Status",
            MessageType::StatusEnquiry => "Status Enquiry",
            MessageType::Other(_) => "unknown message type",
        }
    }
}

impl std::fmt::Display for MessageType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MessageType::Other(code) => write!(f, "message type 0x{code:02x}"),
            named => f.write_str(named.name()),
        }
    }
}
