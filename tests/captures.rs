//! The real third-party captures in `../shared/captures/`: every RAS packet decodes (but the
//! one GRQ that Wireshark also calls malformed), and `rasgk decode --json` agrees with tshark
//! on the message type and sequence number of every frame.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::{captures, tshark};

/// Runs `rasgk decode [flags] path`.
fn rasgk_decode(flags: &[&str], path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .arg("decode")
        .args(flags)
        .arg(path)
        .output()
        .expect("rasgk runs")
}

fn decode_json(path: &Path) -> Vec<serde_json::Value> {
    let out = rasgk_decode(&["--json"], path);
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect()
}

/// Checks `name`; returns the frame numbers that did not decode.
fn agree_with_tshark(test: &str, name: &str) -> Option<Vec<u64>> {
    let path = captures::file(test, name)?;
    tshark::require_tshark(test)?;
    let ours = decode_json(&path);
    let theirs = tshark::decode_with(
        &path,
        &tshark::Options {
            ras_ports: None,
            check_checksums: false, // the Nortel capture has checksum offload
        },
        &[],
    );
    assert_eq!(
        ours.len(),
        theirs.frames.len(),
        "{name}: one object per RAS frame"
    );
    let mut undecoded = Vec::new();
    for (object, frame) in ours.iter().zip(&theirs.frames) {
        let asn1_name = frame.ras_message().expect("tshark names the RAS message");
        let kind = rasgk::ras::MessageKind::ALL
            .into_iter()
            .find(|k| k.asn1_name() == asn1_name)
            .expect("a known RAS message");
        assert_eq!(
            object["type"],
            kind.short_name(),
            "{name} frame {}",
            frame.number
        );
        let seq = frame
            .value("requestSeqNum")
            .expect("tshark shows requestSeqNum");
        assert_eq!(
            object["seq"].to_string(),
            seq,
            "{name} frame {}",
            frame.number
        );
        assert_eq!(object["frame"], frame.number as u64);
        if object.get("error").is_some() {
            undecoded.push(frame.number as u64);
            assert!(
                !frame.malformed_except_checksums().is_empty(),
                "{name} frame {}: we fail ({}) where tshark does not",
                frame.number,
                object["error"]
            );
        } else {
            assert!(object["message"].is_object(), "{name}: the whole message");
        }
    }
    Some(undecoded)
}

#[test]
fn ndpi_capture_agrees_with_tshark() {
    let Some(undecoded) =
        agree_with_tshark("ndpi_capture_agrees_with_tshark", "ndpi_h323.ras.pcap")
    else {
        return;
    };
    // Frame 1, the Tandberg GRQ, carries an `integrity` list whose iso9797 element is cut
    // short: Wireshark stops there with "unexpected length" and marks it malformed, and
    // rasgk refuses it too (its type and seq are still read from the first octets).
    assert_eq!(undecoded, [1]);
}

#[test]
fn nortel_capture_agrees_with_tshark() {
    let Some(undecoded) = agree_with_tshark(
        "nortel_capture_agrees_with_tshark",
        "mediatrix_cs1000.ras.pcap",
    ) else {
        return;
    };
    assert_eq!(
        undecoded,
        Vec::<u64>::new(),
        "every one of the 230 frames decodes"
    );
}

#[test]
fn decode_lines_name_type_seq_and_key_fields() {
    let Some(path) = captures::file(
        "decode_lines_name_type_seq_and_key_fields",
        "ndpi_h323.ras.pcap",
    ) else {
        return;
    };
    let out = rasgk_decode(&[], &path);
    assert_eq!(out.status.code(), Some(1), "one frame does not decode");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 15);
    assert!(lines[0].contains("17.2.0.124:2034 → 17.2.0.161:1719 undecodable"));
    assert!(lines[1].contains(
        "GCF seq=1 gatekeeperIdentifier=OpenH323 Gatekeeper on mfottekin rasAddress=17.2.0.161:1719"
    ));
    assert!(lines[3].contains("RCF seq=2 endpointIdentifier=474a74c8:274 timeToLive=3600"));
    assert!(
        lines[11].contains("alternateGatekeeper=3[10.47.208.54:1719/1"),
        "{}",
        lines[11]
    );
    let summary = String::from_utf8(out.stderr).unwrap();
    assert!(
        summary.contains("14 RAS messages, 1 undecodable, 0 other packets skipped"),
        "{summary}"
    );
}

#[test]
fn decode_refuses_a_file_that_is_not_a_capture() {
    let dir = std::env::temp_dir().join(format!("rasgk-notpcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("not.pcap");
    std::fs::write(&path, b"hello, this is text").unwrap();
    let out = rasgk_decode(&[], &path);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.status.code(), Some(2));
    let error = String::from_utf8(out.stderr).unwrap();
    assert!(error.contains("not.pcap"), "names the file: {error}");
    assert!(
        error.contains("magic number"),
        "says what is wrong: {error}"
    );
}
