//! Tests of the tshark harness (`tests/support/tshark.rs`) itself, against the real captures in
//! the shared folder and against captures written by `rasgk::pcap::PcapWriter`.

mod support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use rasgk::pcap::{read_file, write_file, Datagram};
use support::captures;
use support::tshark::{self, decode, decode_with, parse, Frame, Line, Options};

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rasgk-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Long RAS message names of the `.frames.tsv` abbreviations.
fn long_name(abbrev: &str) -> &'static str {
    match abbrev {
        "GRQ" => "gatekeeperRequest",
        "GCF" => "gatekeeperConfirm",
        "GRJ" => "gatekeeperReject",
        "RRQ" => "registrationRequest",
        "RCF" => "registrationConfirm",
        "RRJ" => "registrationReject",
        "URQ" => "unregistrationRequest",
        "UCF" => "unregistrationConfirm",
        "ARQ" => "admissionRequest",
        "ACF" => "admissionConfirm",
        "IRQ" => "infoRequest",
        "IRR" => "infoRequestResponse",
        "DRQ" => "disengageRequest",
        "DCF" => "disengageConfirm",
        "NSM" => "nonStandardMessage",
        other => panic!("unknown RAS abbreviation {other} in frames.tsv"),
    }
}

#[test]
fn ndpi_capture_frames() {
    const TEST: &str = "ndpi_capture_frames";
    let Some(_) = tshark::require_tshark(TEST) else {
        return;
    };
    let Some(pcap) = captures::file(TEST, "ndpi_h323.ras.pcap") else {
        return;
    };
    let decoded = decode(&pcap, &[]);
    assert_eq!(decoded.frames.len(), 15, "{}", decoded.command);
    let numbers: Vec<usize> = decoded.frames.iter().map(|f| f.number).collect();
    assert_eq!(numbers, (1..=15).collect::<Vec<_>>());

    // Frame 1: the GRQ that Wireshark 4.0 reports as malformed (unknown PER in `integrity`).
    let grq = decoded.frame(1);
    assert_eq!(grq.ras_message().as_deref(), Some("gatekeeperRequest"));
    assert_eq!(grq.value("requestSeqNum").as_deref(), Some("1"));
    let bad = grq.malformed();
    assert!(
        !bad.is_empty(),
        "frame 1 should be malformed:\n{}",
        grq.text()
    );
    assert!(
        bad.iter().any(|l| l == "[Malformed Packet: H.225.0]"),
        "{bad:?}"
    );
    assert!(grq.has("unexpected length"));
    // Its checksums are fine: only the RAS part is malformed.
    assert!(grq.malformed_except_checksums() == bad);
    assert_eq!(grq.value("Checksum Status").as_deref(), Some("Good"));

    // Frame 2: the GCF.
    let gcf = decoded.frame(2);
    assert_eq!(gcf.ras_message().as_deref(), Some("gatekeeperConfirm"));
    assert_eq!(
        gcf.value("gatekeeperIdentifier").as_deref(),
        Some("OpenH323 Gatekeeper on mfottekin")
    );
    assert!(gcf.malformed().is_empty(), "{:?}", gcf.malformed());
    assert_eq!(gcf.value("requestSeqNum").as_deref(), Some("1"));
    assert_eq!(gcf.values("port"), vec!["1719"]);
    assert_eq!(gcf.value("Source Port").as_deref(), Some("1719"));

    // Frame 3 (RRQ): bit-field lines are found by their label.
    let rrq = decoded.frame(3);
    assert_eq!(rrq.value("discoveryComplete").as_deref(), Some("True"));
    assert_eq!(rrq.value("Version").as_deref(), Some("4"));
    assert_eq!(rrq.value("Fragment Offset").as_deref(), Some("0"));
    let call_signal = rrq.subtree("callSignalAddress");
    assert_eq!(tshark::values_of(call_signal, "port"), vec!["1720"]);

    // The RCF with a 3-entry alternateGatekeeper list.
    let rcf = decoded
        .frames
        .iter()
        .find(|f| f.has("alternateGatekeeper: 3 items"))
        .expect("an RCF with 3 alternate gatekeepers");
    assert_eq!(rcf.ras_message().as_deref(), Some("registrationConfirm"));
    let agk = rcf.subtree("alternateGatekeeper");
    assert_eq!(
        tshark::values_of(agk.iter().copied(), "gatekeeperIdentifier"),
        vec!["Alternate 1", "Alternate 2", "Alternate 3"]
    );
    let item2 = rcf.subtree_path(&["alternateGatekeeper", "Item 2"]);
    assert_eq!(
        tshark::values_of(item2.iter().copied(), "ip"),
        vec!["10.47.208.53"]
    );
    assert_eq!(
        tshark::values_of(item2.iter().copied(), "needToRegister"),
        vec!["True"]
    );
    assert!(rcf
        .subtree_path(&["alternateGatekeeper", "Item 3"])
        .is_empty());
}

/// Every frame's H.225.0 RAS part is exactly what the stored `tshark -V -O h225` text says.
#[test]
fn ndpi_capture_matches_stored_tshark_text() {
    const TEST: &str = "ndpi_capture_matches_stored_tshark_text";
    let Some(_) = tshark::require_tshark(TEST) else {
        return;
    };
    let (Some(pcap), Some(txt)) = (
        captures::file(TEST, "ndpi_h323.ras.pcap"),
        captures::file(TEST, "ndpi_h323.ras.tshark.txt"),
    ) else {
        return;
    };
    let stored = parse(&std::fs::read_to_string(txt).unwrap());
    let decoded = decode(&pcap, &[]);
    assert_eq!(stored.len(), decoded.frames.len());
    // `-O h225` expands only the H.225.0 tree (not e.g. the malformed-packet expert tree), so
    // compare that tree, and the top-level lines.
    let ras_part = |f: &Frame| -> Vec<Line> {
        let mut lines = f
            .lines
            .iter()
            .skip_while(|l| !(l.depth == 0 && l.text == "H.225.0 RAS"));
        let head = lines.next().cloned();
        head.into_iter()
            .chain(lines.take_while(|l| l.depth > 0).cloned())
            // "[This is a response to a request in frame 61]": numbered as in the original.
            .filter(|l| !l.text.contains(" in frame "))
            .collect()
    };
    let top = |f: &Frame| -> Vec<String> {
        f.lines
            .iter()
            .filter(|l| l.depth == 0)
            .skip(1) // "Frame N: ..." differs in N
            .map(|l| l.text.clone())
            .collect()
    };
    for (s, d) in stored.iter().zip(&decoded.frames) {
        assert!(s.number >= d.number);
        assert_eq!(s.ras_message(), d.ras_message(), "frame {}", d.number);
        let (sr, dr) = (ras_part(s), ras_part(d));
        assert!(!dr.is_empty(), "frame {} has no RAS part", d.number);
        assert_eq!(sr, dr, "frame {} (stored frame {})", d.number, s.number);
        assert_eq!(top(s), top(d), "frame {}", d.number);
    }
}

/// The `.frames.tsv` of both real captures agree with the harness' message type, sequence
/// number and malformed flag.
#[test]
fn real_captures_match_frames_tsv() {
    const TEST: &str = "real_captures_match_frames_tsv";
    let Some(_) = tshark::require_tshark(TEST) else {
        return;
    };
    for name in ["ndpi_h323.ras", "mediatrix_cs1000.ras"] {
        let (Some(pcap), Some(tsv)) = (
            captures::file(TEST, &format!("{name}.pcap")),
            captures::file(TEST, &format!("{name}.frames.tsv")),
        ) else {
            continue;
        };
        let tsv = std::fs::read_to_string(tsv).unwrap();
        let rows: Vec<Vec<&str>> = tsv
            .lines()
            .skip(1)
            .filter(|l| !l.is_empty())
            .map(|l| l.split('\t').collect())
            .collect();
        let decoded = decode(&pcap, &[]);
        assert_eq!(decoded.frames.len(), rows.len(), "{name}");
        let mut checksum_complaints = 0;
        for (frame, row) in decoded.frames.iter().zip(&rows) {
            let at = format!("{name} frame {} (row {row:?})", frame.number);
            assert_eq!(
                frame.ras_message().as_deref(),
                Some(long_name(row[3])),
                "{at}"
            );
            assert_eq!(
                frame.value("requestSeqNum").as_deref(),
                Some(row[4]),
                "{at}"
            );
            let flagged = row.get(5).is_some_and(|f| *f == "MALFORMED");
            assert_eq!(
                !frame.malformed_except_checksums().is_empty(),
                flagged,
                "{at}: {:?}",
                frame.malformed()
            );
            if frame.malformed().len() != frame.malformed_except_checksums().len() {
                checksum_complaints += 1;
            }
        }
        if name.starts_with("mediatrix") {
            // The gatekeeper's frames were captured on the gatekeeper with checksum offload.
            assert!(checksum_complaints > 0, "{name}");
        } else {
            assert_eq!(checksum_complaints, 0, "{name}");
        }
    }
}

fn datagram(src: &str, dst: &str, secs: u64, payload: &[u8]) -> Datagram {
    Datagram {
        frame: 0,
        time: Duration::new(1_700_000_000 + secs, 250_000_000),
        src: src.parse::<SocketAddr>().unwrap(),
        dst: dst.parse::<SocketAddr>().unwrap(),
        payload: payload.to_vec(),
    }
}

/// RAS on a port other than 1718/1719 decodes as RAS with decode-as `udp.port==5000,h225`.
#[test]
fn decode_as_for_other_ports() {
    const TEST: &str = "decode_as_for_other_ports";
    let Some(_) = tshark::require_tshark(TEST) else {
        return;
    };
    let dir = temp_dir(TEST);
    let path = dir.join("port5000.pcap");
    // An arbitrary payload, and (if the real capture is there) a real GCF.
    let mut datagrams = vec![datagram(
        "192.0.2.10:40000",
        "192.0.2.1:5000",
        0,
        &[0x00, 0x01, 0x02, 0x03, 0x04, 0x05],
    )];
    let gcf = captures::file(TEST, "ndpi_h323.ras.pcap")
        .map(|p| read_file(p).unwrap().datagrams[1].payload.clone());
    if let Some(gcf) = &gcf {
        datagrams.push(datagram("192.0.2.1:5000", "192.0.2.10:40000", 1, gcf));
    }
    write_file(&path, &datagrams).unwrap();

    // Automatic: the destination ports 5000 and 40000 are decoded as RAS.
    let decoded = decode(&path, &[]);
    assert!(
        decoded.command.contains("-d udp.port==5000,h225"),
        "{}",
        decoded.command
    );
    assert_eq!(decoded.frames.len(), datagrams.len());
    let first = &decoded.frames[0];
    assert!(first.has("H.225.0 RAS"), "{}", first.text());
    assert_eq!(first.value("Destination Port").as_deref(), Some("5000"));
    if gcf.is_some() {
        let second = &decoded.frames[1];
        assert_eq!(second.ras_message().as_deref(), Some("gatekeeperConfirm"));
        assert!(second.malformed().is_empty(), "{:?}", second.malformed());
    }

    // Explicit port.
    let explicit = decode_with(
        &path,
        &Options {
            ras_ports: Some(vec![5000]),
            ..Options::default()
        },
        &[],
    );
    assert!(explicit.frames[0].has("H.225.0 RAS"));

    // Without decode-as, tshark does not see RAS there.
    let plain = decode_with(
        &path,
        &Options {
            ras_ports: Some(vec![]),
            ..Options::default()
        },
        &[],
    );
    assert!(
        !plain.frames[0].has("H.225.0 RAS"),
        "{}",
        plain.frames[0].text()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What PcapWriter writes is accepted by tshark without any complaint, IPv4 and IPv6.
#[test]
fn pcap_writer_output_is_clean_for_tshark() {
    const TEST: &str = "pcap_writer_output_is_clean_for_tshark";
    let Some(_) = tshark::require_tshark(TEST) else {
        return;
    };
    // Real RAS payloads, so the RAS part decodes cleanly: the third-party capture's when it is
    // there, else rasgk's own encodings of the wire tests' messages (which tshark reads
    // cleanly too, tests/wire_tshark.rs). Arbitrary octets would be sent to port 1719 and
    // read by tshark as malformed RAS.
    let payloads: Vec<Vec<u8>> = match captures::file(TEST, "ndpi_h323.ras.pcap") {
        Some(p) => read_file(p)
            .unwrap()
            .datagrams
            .into_iter()
            .skip(1) // frame 1 is the GRQ that tshark calls malformed
            .map(|d| d.payload)
            .collect(),
        None => support::messages::all()
            .into_iter()
            .map(|(name, _, message)| {
                rasgk::ras::encode(&message).unwrap_or_else(|e| panic!("{name} encodes: {e}"))
            })
            .collect(),
    };
    let mut datagrams = vec![];
    for (i, p) in payloads.iter().enumerate() {
        let (a, b) = if i % 2 == 0 {
            ("192.0.2.10:40000", "192.0.2.1:1719")
        } else {
            ("[2001:db8::10]:40000", "[2001:db8::1]:1719")
        };
        let (src, dst) = if i % 4 < 2 { (a, b) } else { (b, a) };
        datagrams.push(datagram(src, dst, i as u64, p));
    }
    let dir = temp_dir(TEST);
    let path = dir.join("clean.pcap");
    write_file(&path, &datagrams).unwrap();
    let decoded = decode(&path, &[]);
    assert!(
        decoded.stderr.trim().is_empty(),
        "tshark stderr: {}",
        decoded.stderr
    );
    assert_eq!(decoded.frames.len(), datagrams.len());
    let mut ids = vec![];
    for (frame, d) in decoded.frames.iter().zip(&datagrams) {
        assert!(
            frame.malformed().is_empty(),
            "{:?}\n{}",
            frame.malformed(),
            frame.text()
        );
        assert!(!frame.has("Expert Info"), "{}", frame.text());
        assert_eq!(frame.value("Checksum Status").as_deref(), Some("Good"));
        assert_eq!(
            frame.value("Source Port"),
            Some(d.src.port().to_string()),
            "{}",
            frame.text()
        );
        if d.src.is_ipv4() {
            assert_eq!(
                frame.value("Header checksum status").as_deref(),
                Some("Good")
            );
            ids.push(frame.value("Identification").unwrap());
        } else {
            assert!(frame.has("Internet Protocol Version 6"));
        }
        assert!(frame.ras_message().is_some(), "{}", frame.text());
        if !d.payload.is_empty() {
            let shown = format!("UDP payload ({} bytes)", d.payload.len());
            assert!(frame.has(&shown), "{}", frame.text());
        }
    }
    let ids: Vec<u16> = ids
        .iter()
        .map(|v| u16::from_str_radix(&v[2..6], 16).unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The text parser on its own (no tshark needed).
#[test]
fn parser_details() {
    let text = "Frame 1: 80 bytes on wire (640 bits), 80 bytes captured (640 bits)\n\
                \x20   Frame Number: 1\n\
                Internet Protocol Version 4, Src: 17.2.0.124, Dst: 17.2.0.161\n\
                \x20   0100 .... = Version: 4\n\
                \x20   ...0 0000 0000 0000 = Fragment Offset: 0\n\
                \x20   [Header checksum status: Unverified]\n\
                H.225.0 RAS\n\
                \x20   RasMessage: registrationConfirm (4)\n\
                \x20       registrationConfirm\n\
                \x20           1... .... willRespondToIRR: True\n\
                \x20           alternateGatekeeper: 11 items\n\
                \x20               Item 1\n\
                \x20                   priority: 1\n\
                \x20               Item 10\n\
                \x20                   priority: 10\n\
                \x20           timeToLive: 60\n\
                \n\
                Frame 2: 60 bytes on wire\n\
                [Malformed Packet: H.225.0]\n";
    let frames = parse(text);
    assert_eq!(frames.len(), 2);
    let f = &frames[0];
    assert_eq!(f.number, 1);
    assert_eq!(f.lines[1].depth, 1);
    assert_eq!(f.value("Version").as_deref(), Some("4"));
    assert_eq!(f.value("Fragment Offset").as_deref(), Some("0"));
    assert_eq!(
        f.value("Header checksum status").as_deref(),
        Some("Unverified")
    );
    assert_eq!(f.value("willRespondToIRR").as_deref(), Some("True"));
    assert_eq!(f.ras_message().as_deref(), Some("registrationConfirm"));
    assert_eq!(f.values("priority"), vec!["1", "10"]);
    let item1 = f.subtree_path(&["alternateGatekeeper", "Item 1"]);
    assert_eq!(item1.len(), 1);
    assert_eq!(item1[0].text, "priority: 1");
    let agk = f.subtree("alternateGatekeeper");
    assert_eq!(agk.len(), 4);
    assert!(f.malformed().is_empty());
    assert!(f.subtree("nonexistent").is_empty());
    assert_eq!(frames[1].malformed(), vec!["[Malformed Packet: H.225.0]"]);
    assert_eq!(frames[1].ras_message(), None);
}
