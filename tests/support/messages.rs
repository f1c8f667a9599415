//! One of each message the gatekeeper sends and each request a phone sends, with the values
//! the wire tests check: shared by the tshark oracle test and the known-answer tests.
#![allow(dead_code)] // each test binary uses a different part of this module

use std::net::SocketAddr;

use rasgk::ras::reply::{self, AltGkInfo, AlternateGatekeeper, EndpointId, GatekeeperId, Rcf};
use rasgk::ras::request::{self, Arq, Call, Rrq, Urq, UrqReason};
use rasgk::ras::{Alias, RasMessage};

/// The phone's RAS address (region 1 of the default topology).
pub const PHONE_RAS: &str = "127.1.0.5:40001";
/// The phone's call signalling address.
pub const PHONE_CALL: &str = "127.1.0.5:1720";
/// The gatekeeper's discovery address.
pub const GK: &str = "127.0.0.1:1719";

pub fn addr(text: &str) -> SocketAddr {
    text.parse().expect("a socket address")
}

pub fn gk_id() -> GatekeeperId {
    GatekeeperId::new("rasgk").unwrap()
}

pub fn ep_id() -> EndpointId {
    EndpointId::new("ep-0001").unwrap()
}

/// The phone's aliases: extension 50001 and a name with a non-ASCII character.
pub fn aliases() -> Vec<Alias> {
    vec![
        Alias::dialled_digits("50001").unwrap(),
        Alias::h323_id("Zoë").unwrap(),
    ]
}

/// AGL entry `i` (0-based): C-LAN 127.0.1.(i+1):1719, priority i.
pub fn agl(len: usize) -> Vec<AlternateGatekeeper> {
    (0..len)
        .map(|i| AlternateGatekeeper {
            ras_address: addr(&format!("127.0.1.{}:1719", i + 1)),
            gatekeeper_id: None,
            priority: i as u8,
        })
        .collect()
}

pub fn call() -> Call {
    Call {
        call_reference_value: 7,
        conference_id: [0x11; 16],
        call_id: [0x22; 16],
    }
}

/// `(name, sender is the phone, message)` for every message of the wire tests.
pub fn all() -> Vec<(&'static str, bool, RasMessage)> {
    let (gk, ep, aliases) = (gk_id(), ep_id(), aliases());
    let call_signal = [addr(PHONE_CALL)];
    let agl16 = agl(16);
    let agl2 = agl(2);
    vec![
        (
            "GRQ",
            true,
            request::gatekeeper_request(101, addr(PHONE_RAS), &aliases, Some(&gk)),
        ),
        (
            "GCF",
            false,
            reply::gatekeeper_confirm(101, &gk, addr("127.0.1.3:1719")),
        ),
        (
            "GRJ",
            false,
            reply::gatekeeper_reject(102, &gk, reply::GrjReason::ResourceUnavailable),
        ),
        (
            "RRQ",
            true,
            request::registration_request(&Rrq {
                request_seq_num: 103,
                call_signal_address: addr(PHONE_CALL),
                ras_address: addr(PHONE_RAS),
                terminal_type: request::terminal(),
                aliases: &aliases,
                gatekeeper_id: Some(&gk),
                time_to_live_s: Some(300),
            }),
        ),
        (
            "RCF",
            false,
            reply::registration_confirm(&Rcf {
                request_seq_num: 103,
                gatekeeper_id: &gk,
                endpoint_id: &ep,
                call_signal_address: &call_signal,
                aliases: &aliases,
                time_to_live_s: Some(300),
                agl: &agl16,
            }),
        ),
        (
            "RRQ-light",
            true,
            request::keep_alive(
                104,
                addr(PHONE_CALL),
                addr(PHONE_RAS),
                &ep,
                Some(&gk),
                Some(300),
            ),
        ),
        (
            "RRJ-duplicate",
            false,
            reply::registration_reject(
                105,
                &gk,
                &reply::RrjReason::DuplicateAlias(vec![Alias::dialled_digits("50001").unwrap()]),
                None,
            ),
        ),
        (
            "RRJ-full",
            false,
            reply::registration_reject(
                106,
                &gk,
                &reply::RrjReason::ResourceUnavailable,
                Some(&AltGkInfo {
                    alternates: agl2.clone(),
                    permanent: false,
                }),
            ),
        ),
        (
            "URQ",
            true,
            request::unregistration_request(&Urq {
                request_seq_num: 107,
                call_signal_address: &call_signal,
                aliases: &aliases,
                endpoint_id: Some(&ep),
                gatekeeper_id: Some(&gk),
                reason: None,
                agl: &[],
            }),
        ),
        (
            "URQ-gk",
            false,
            reply::unregistration_request(&Urq {
                request_seq_num: 4001,
                call_signal_address: &call_signal,
                aliases: &[],
                endpoint_id: Some(&ep),
                gatekeeper_id: Some(&gk),
                reason: Some(UrqReason::ReregistrationRequired),
                agl: &agl2,
            }),
        ),
        ("UCF", false, reply::unregistration_confirm(107)),
        (
            "URJ",
            false,
            reply::unregistration_reject(108, reply::UrjReason::NotCurrentlyRegistered),
        ),
        (
            "ARQ",
            true,
            request::admission_request(&Arq {
                request_seq_num: 109,
                endpoint_id: &ep,
                destination: &[Alias::dialled_digits("9#0123*45,6").unwrap()],
                source: &aliases,
                call: call(),
                band_width: 1280,
                answer_call: false,
            }),
        ),
        (
            "ACF",
            false,
            reply::admission_confirm(109, addr("127.0.2.1:1720"), 1280, false),
        ),
        (
            "ARJ",
            false,
            reply::admission_reject(110, reply::ArjReason::CalledPartyNotRegistered),
        ),
        (
            "BRQ",
            true,
            request::bandwidth_request(111, &ep, call(), 640),
        ),
        ("BCF", false, reply::bandwidth_confirm(111, 640)),
        ("DRQ", true, request::disengage_request(112, &ep, call())),
        ("DCF", false, reply::disengage_confirm(112)),
        (
            "IRR",
            true,
            request::info_request_response(
                113,
                &ep,
                addr(PHONE_RAS),
                addr(PHONE_CALL),
                &aliases,
                true,
            ),
        ),
        (
            "XRS",
            false,
            reply::unknown_message_response(114, &[0xde, 0xad, 0xbe, 0xef]),
        ),
        ("IRQ", false, reply::info_request(119, addr(GK))),
        ("IACK", false, reply::info_request_ack(115)),
        ("INAK", false, reply::info_request_nak_not_registered(116)),
        ("DRJ", false, reply::disengage_reject_not_registered(117)),
        ("BRJ", false, reply::bandwidth_reject_not_bound(118)),
    ]
}
