//! The service frame, as a phone asks for it: an H.460.1 generic feature of rasgk's own.
//!
//! In socket mode the gatekeeper can tell a phone that its signalling socket is *in service*
//! (its establishment is over, docs/rules.md §8.4) by writing one empty TPKT frame
//! (`03 00 00 04`) on it. No standard H.323 endpoint expects that frame: on a call-signalling
//! connection it expects Q.931 messages of its calls and nothing else, and one stack read the
//! empty frame as an undecodable message and released its call. So the gatekeeper writes it
//! only to a phone that asks for it, and a phone asks the way H.225.0 lets an endpoint ask
//! for anything outside the standard: a *feature* of H.460.1 (H.225.0 `FeatureSet`), named by
//! a non-standard identifier, a `GloballyUniqueID` of rasgk's own ([`FEATURE_ID`]), in the
//! `desiredFeatures` of its full RRQ. A gatekeeper that will write the frame says so in the
//! RCF's `supportedFeatures` (H.460.1: the confirm lists the features the gatekeeper uses of
//! those asked for). rasgk's own phones (`rasgk storm --sockets`, `rasgk plan`) ask; nothing
//! else does, and a gatekeeper that does not know the identifier ignores it, as H.460.1
//! says of any feature it does not support.
//!
//! The feature set is one fixed value each way; its encodings are what the hand-written
//! codecs (`hot_phone`, `hot_request`, `hot_reply`, `hot_confirm`) write and recognise as
//! an extension addition's contents, [`REQUEST_OCTETS`] and [`CONFIRM_OCTETS`], made by the
//! generated codec.

use std::sync::LazyLock;

use rasn::types::FixedOctetString;

use super::asn;

/// The feature's identifier: a version 4 UUID drawn for rasgk
/// (`4d55ca3e-3d68-4034-99ea-ee5ae00c7f2e`), as H.225.0's `GenericIdentifier.nonStandard`
/// takes it (a `GloballyUniqueID`, 16 octets).
pub const FEATURE_ID: [u8; 16] = [
    0x4d, 0x55, 0xca, 0x3e, 0x3d, 0x68, 0x40, 0x34, 0x99, 0xea, 0xee, 0x5a, 0xe0, 0x0c, 0x7f, 0x2e,
];

/// The feature, with no parameters.
pub fn descriptor() -> asn::FeatureDescriptor {
    asn::FeatureDescriptor(asn::GenericData {
        id: asn::GenericIdentifier::nonStandard(asn::GloballyUniqueID(FixedOctetString::new(
            FEATURE_ID,
        ))),
        parameters: None,
    })
}

/// A full RRQ's `featureSet` asking for the service frame: the feature in
/// `desiredFeatures` (the phone works without it, against any gatekeeper).
pub fn request() -> asn::FeatureSet {
    asn::FeatureSet {
        replacement_feature_set: false,
        needed_features: None,
        desired_features: Some(vec![descriptor()]),
        supported_features: None,
    }
}

/// An RCF's `featureSet` saying the gatekeeper will write the service frame: the feature in
/// `supportedFeatures`.
pub fn confirm() -> asn::FeatureSet {
    asn::FeatureSet {
        replacement_feature_set: false,
        needed_features: None,
        desired_features: None,
        supported_features: Some(vec![descriptor()]),
    }
}

/// Puts [`confirm()`] into an RCF (any other message is left as it is).
pub fn confirm_in(message: &mut asn::RasMessage) {
    if let asn::RasMessage::registrationConfirm(rcf) = message {
        rcf.feature_set = Some(confirm());
    }
}

/// The complete encoding of [`request()`]: the contents of a full RRQ's `featureSet`
/// extension addition.
pub static REQUEST_OCTETS: LazyLock<Vec<u8>> = LazyLock::new(|| encoded(&request()));

/// The complete encoding of [`confirm()`]: the contents of an RCF's `featureSet` extension
/// addition.
pub static CONFIRM_OCTETS: LazyLock<Vec<u8>> = LazyLock::new(|| encoded(&confirm()));

fn encoded(features: &asn::FeatureSet) -> Vec<u8> {
    rasn::aper::encode(features).expect("a fixed feature set encodes")
}

/// Does this `featureSet` name the service frame, in any of its lists? (An RRQ that needs
/// it, desires it or supports it asks for it alike: the gatekeeper has nothing to refuse.)
pub fn named(features: Option<&asn::FeatureSet>) -> bool {
    let Some(features) = features else {
        return false;
    };
    [
        &features.needed_features,
        &features.desired_features,
        &features.supported_features,
    ]
    .into_iter()
    .flatten()
    .flatten()
    .any(|feature| match &feature.0.id {
        asn::GenericIdentifier::nonStandard(id) => id.0[..] == FEATURE_ID,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encodings_decode_to_the_feature_sets_that_name_the_feature() {
        for (octets, value) in [(&*REQUEST_OCTETS, request()), (&*CONFIRM_OCTETS, confirm())] {
            let decoded: asn::FeatureSet = rasn::aper::decode(octets).unwrap();
            assert_eq!(decoded, value);
            assert!(named(Some(&decoded)));
        }
        // Not extended, three optional lists; the one present holds one GenericData with a
        // nonStandard identifier: its 16 octets are written whole.
        assert!(REQUEST_OCTETS
            .windows(16)
            .any(|window| window == FEATURE_ID));
    }

    #[test]
    fn other_features_do_not_name_it() {
        assert!(!named(None));
        let mut other = request();
        other.desired_features = Some(vec![asn::FeatureDescriptor(asn::GenericData {
            id: asn::GenericIdentifier::standard(18.into()),
            parameters: None,
        })]);
        assert!(!named(Some(&other)));
        let mut guid = FEATURE_ID;
        guid[15] ^= 1;
        other.supported_features = Some(vec![asn::FeatureDescriptor(asn::GenericData {
            id: asn::GenericIdentifier::nonStandard(asn::GloballyUniqueID(FixedOctetString::new(
                guid,
            ))),
            parameters: None,
        })]);
        assert!(!named(Some(&other)));
    }
}
