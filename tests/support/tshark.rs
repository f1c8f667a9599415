//! Runs tshark on a capture and parses its `-V` (packet details) text into frames and lines,
//! so that integration tests can check what Wireshark makes of rasgk's RAS and call-signalling
//! messages.
//!
//! ```ignore
//! let Some(_) = support::tshark::require_tshark("my_test") else { return };
//! let decoded = support::tshark::decode(&pcap_path, &[]);
//! let frame = &decoded.frames[0];
//! assert_eq!(frame.ras_message().as_deref(), Some("gatekeeperConfirm"));
//! assert!(frame.malformed().is_empty(), "{:?}", frame.malformed());
//! ```
//!
//! # Decode-as
//!
//! tshark decodes UDP ports 1718 and 1719 as H.225.0 RAS by itself. For any other port the
//! decode-as option on this tshark (4.0) is `-d udp.port==5000,h225`: the dissector named
//! `h225` ("H323-MESSAGES") is the RAS dissector when reached from UDP (the output then shows
//! `H.225.0 RAS` / `RasMessage: ...`). `h225.ras`, `h225ras` and `h225_ras` are *not*
//! accepted (tshark lists the valid names and exits).
//!
//! [`decode`] adds such an option for the destination port of every datagram of the capture
//! whose ports are neither 1718 nor 1719 (it reads the capture with `rasgk::pcap`), so a
//! capture of RAS on unusual ports decodes as RAS without further ado. [`decode_with`] takes
//! the ports explicitly.
//!
//! # Checksums
//!
//! [`decode`] turns on IP and UDP checksum validation (`-o ip.check_checksum:TRUE
//! -o udp.check_checksum:TRUE`), so a bad checksum shows up in [`Frame::malformed`] as an
//! `[Expert Info (Error/Checksum)` line. Beware: real captures made on a sending host with
//! checksum offload (e.g. the gatekeeper's frames in `mediatrix_cs1000.ras.pcap`) have bad
//! checksums; use [`Frame::malformed_except_checksums`] for those, or [`decode_with`] with
//! `check_checksums: false`.
#![allow(dead_code)] // each test binary uses a different part of this module

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Finds tshark: `$TSHARK` if set, else the first `tshark` on `$PATH`, else `/usr/bin/tshark`.
pub fn tshark() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TSHARK") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let from_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("tshark"))
            .find(|p| p.is_file())
    });
    from_path.or_else(|| {
        let p = PathBuf::from("/usr/bin/tshark");
        p.is_file().then_some(p)
    })
}

/// Finds tshark for test `test`. When it is missing: panics if `RASGK_REQUIRE_TOOLS=1`
/// (so CI cannot silently skip), else prints why the test is skipped and returns `None`.
pub fn require_tshark(test: &str) -> Option<PathBuf> {
    if let Some(p) = tshark() {
        return Some(p);
    }
    if std::env::var("RASGK_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!(
            "{test}: tshark not found and RASGK_REQUIRE_TOOLS=1 \
             (install with apt-get install tshark, or set TSHARK=/path/to/tshark)"
        );
    }
    eprintln!("skipping {test}: tshark not found (install with apt-get install tshark)");
    None
}

/// How to run tshark in [`decode_with`].
#[derive(Debug, Clone)]
pub struct Options {
    /// UDP ports to decode as H.225.0 RAS besides 1718/1719; `None`: every destination port of
    /// a datagram in the capture that does not use 1718/1719 (see the module doc).
    pub ras_ports: Option<Vec<u16>>,
    /// Validate IP and UDP checksums.
    pub check_checksums: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            ras_ports: None,
            check_checksums: true,
        }
    }
}

/// tshark's packet details of a capture.
#[derive(Debug, Clone, Default)]
pub struct Decoded {
    /// The frames, in capture order.
    pub frames: Vec<Frame>,
    /// The exact command line that was run, for messages.
    pub command: String,
    /// tshark's stderr, without its "Running as user \"root\"" warning.
    pub stderr: String,
}

/// One frame of tshark's `-V` output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frame {
    /// Wireshark's frame number (1-based).
    pub number: usize,
    /// Every line of the frame's details, the `Frame N: ...` line first.
    pub lines: Vec<Line>,
}

/// One line of tshark's `-V` output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Line {
    /// Indent level: tshark indents by 4 spaces per level; top-level protocol lines are 0.
    pub depth: usize,
    /// The text without the indentation.
    pub text: String,
}

/// Runs `tshark -n -V -r pcap` with checksum validation, RAS decode-as for the capture's
/// non-1718/1719 ports (see the module doc) and `extra_args`, and parses the output.
///
/// Panics if tshark is missing, cannot be run or fails (with its stderr).
pub fn decode(pcap: &Path, extra_args: &[&str]) -> Decoded {
    decode_with(pcap, &Options::default(), extra_args)
}

/// What tshark reads of TCP segments (call signalling on port 1720), written into a pcap
/// of their own (`name` tells the file from other tests'), with TCP checksums checked.
/// `RASGK_KEEP_PCAP=1` keeps the capture and prints its path.
pub fn decode_tcp(name: &str, segments: &[rasgk::pcap::TcpSegment]) -> Decoded {
    let dir = std::env::temp_dir().join(format!("rasgk-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join(format!("{name}.pcap"));
    let file = std::fs::File::create(&pcap).unwrap();
    let mut writer = rasgk::pcap::PcapWriter::new(file).unwrap();
    for segment in segments {
        writer.write_tcp(segment).unwrap();
    }
    writer.flush().unwrap();
    drop(writer);
    // Heuristics first: Q.931 over TPKT is found by its heuristic, and the phones' ports are
    // the kernel's choice, so one that happens to be another protocol's (48049 is CBSP's)
    // would otherwise be read as that protocol.
    let decoded = decode(
        &pcap,
        &[
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "tcp.try_heuristic_first:TRUE",
        ],
    );
    if std::env::var_os("RASGK_KEEP_PCAP").is_none() {
        std::fs::remove_dir_all(&dir).ok();
    } else {
        eprintln!("pcap kept at {}", pcap.display());
    }
    decoded
}

/// [`decode`] with explicit [`Options`].
pub fn decode_with(pcap: &Path, options: &Options, extra_args: &[&str]) -> Decoded {
    let exe = tshark().expect("tshark not found (install with apt-get install tshark)");
    let ports: BTreeSet<u16> = match &options.ras_ports {
        Some(p) => p.iter().copied().collect(),
        None => capture_ports(pcap),
    };
    let mut args: Vec<String> = vec!["-n".into(), "-V".into(), "-r".into()];
    args.push(pcap.display().to_string());
    if options.check_checksums {
        for o in ["udp.check_checksum:TRUE", "ip.check_checksum:TRUE"] {
            args.push("-o".into());
            args.push(o.into());
        }
    }
    for port in ports.iter().filter(|p| !is_ras_port(**p)) {
        args.push("-d".into());
        args.push(format!("udp.port=={port},h225"));
    }
    args.extend(extra_args.iter().map(|s| s.to_string()));
    let command = format!("{} {}", exe.display(), args.join(" "));
    let out = Command::new(&exe)
        .args(&args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        panic!("{command} failed ({}):\n{stderr}", out.status);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = stderr
        .lines()
        .filter(|l| !l.starts_with("Running as user"))
        .collect::<Vec<_>>()
        .join("\n");
    Decoded {
        frames: parse(&stdout),
        command,
        stderr,
    }
}

fn is_ras_port(port: u16) -> bool {
    port == 1718 || port == 1719
}

/// Destination ports of the datagrams that tshark would not decode as RAS by itself.
fn capture_ports(pcap: &Path) -> BTreeSet<u16> {
    match rasgk::pcap::read_file(pcap) {
        Ok(capture) => capture
            .datagrams
            .iter()
            .filter(|d| !is_ras_port(d.src.port()) && !is_ras_port(d.dst.port()))
            .map(|d| d.dst.port())
            .collect(),
        // Not readable by us (e.g. a deliberately broken file): let tshark say what it thinks.
        Err(_) => BTreeSet::new(),
    }
}

/// Parses tshark `-V` text output into frames.
pub fn parse(text: &str) -> Vec<Frame> {
    let mut frames: Vec<Frame> = Vec::new();
    for raw in text.lines() {
        if raw.trim().is_empty() {
            continue;
        }
        let spaces = raw.len() - raw.trim_start_matches(' ').len();
        let line = Line {
            depth: spaces / 4,
            text: raw.trim().to_string(),
        };
        if line.depth == 0 {
            if let Some(number) = frame_number(&line.text) {
                frames.push(Frame {
                    number,
                    lines: vec![line],
                });
                continue;
            }
        }
        match frames.last_mut() {
            Some(frame) => frame.lines.push(line),
            None => panic!("tshark output does not start with a frame: {raw:?}"),
        }
    }
    frames
}

fn frame_number(text: &str) -> Option<usize> {
    let rest = text.strip_prefix("Frame ")?;
    let (number, _) = rest.split_once(':')?;
    number.parse().ok()
}

impl Line {
    /// Splits `label: value`, after removing a bit-field prefix (`1... .... `, `0100 .... = `)
    /// and the brackets of a generated field (`[Calculated Checksum: 0x1234]`).
    pub fn label_value(&self) -> Option<(&str, &str)> {
        let mut text = self.text.as_str();
        if text.starts_with('[') && text.ends_with(']') {
            text = &text[1..text.len() - 1];
        }
        let text = strip_bits(text);
        let (label, value) = text.split_once(": ")?;
        Some((label.trim(), value.trim()))
    }

    /// `label` if this line is `label: value`.
    pub fn label(&self) -> Option<&str> {
        self.label_value().map(|(l, _)| l)
    }

    /// Whether the line's text starts with `label` as a whole word (so `Item 1` does not match
    /// `Item 10`), after removing a bit-field prefix.
    pub fn starts_with_label(&self, label: &str) -> bool {
        [self.text.as_str(), strip_bits(&self.text)]
            .iter()
            .any(|t| {
                t.strip_prefix(label).is_some_and(|rest| {
                    !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_')
                })
            })
    }
}

/// Removes a leading bit-field picture like `1... .... ` or `...0 0000 = `.
fn strip_bits(text: &str) -> &str {
    let mut rest = text;
    let mut saw_dot = false;
    while let Some((token, after)) = rest.split_once(' ') {
        if token.is_empty() || !token.chars().all(|c| matches!(c, '0' | '1' | '.')) {
            break;
        }
        saw_dot |= token.contains('.');
        rest = after;
    }
    if !saw_dot {
        return text;
    }
    rest.strip_prefix("= ").unwrap_or(rest)
}

/// The value of every `label: value` line among `lines`, in order.
pub fn values_of<'a>(lines: impl IntoIterator<Item = &'a Line>, label: &str) -> Vec<String> {
    lines
        .into_iter()
        .filter_map(|l| l.label_value())
        .filter(|(l, _)| *l == label)
        .map(|(_, v)| v.to_string())
        .collect()
}

/// The lines nested under the first line among `lines` that starts with `label`.
pub fn subtree_of<'a>(lines: &[&'a Line], label: &str) -> Vec<&'a Line> {
    let Some(start) = lines.iter().position(|l| l.starts_with_label(label)) else {
        return Vec::new();
    };
    let depth = lines[start].depth;
    lines[start + 1..]
        .iter()
        .take_while(|l| l.depth > depth)
        .copied()
        .collect()
}

const MALFORMED_MARKS: [&str; 6] = [
    "Malformed",
    "[Expert Info (Error",
    "unexpected length",
    "Undecoded",
    "BER Error",
    "PER Error",
];

impl Frame {
    /// The value of every `label: value` line of the frame, in order (bit-field prefixes and
    /// generated-field brackets are ignored; see [`Line::label_value`]).
    pub fn values(&self, label: &str) -> Vec<String> {
        values_of(&self.lines, label)
    }

    /// The first value of `label`.
    pub fn value(&self, label: &str) -> Option<String> {
        self.values(label).into_iter().next()
    }

    /// Whether any line contains `text_fragment`.
    pub fn has(&self, text_fragment: &str) -> bool {
        self.lines.iter().any(|l| l.text.contains(text_fragment))
    }

    /// The RAS message type, e.g. `gatekeeperRequest` for `RasMessage: gatekeeperRequest (0)`.
    pub fn ras_message(&self) -> Option<String> {
        let v = self.value("RasMessage")?;
        let name = match v.rfind(" (") {
            Some(i) if v.ends_with(')') => &v[..i],
            _ => v.as_str(),
        };
        Some(name.to_string())
    }

    /// Lines saying tshark found something wrong: "Malformed", "[Expert Info (Error",
    /// "unexpected length", "Undecoded", "BER Error", "PER Error" (bad checksums included).
    pub fn malformed(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter(|l| MALFORMED_MARKS.iter().any(|m| l.text.contains(m)))
            .map(|l| l.text.clone())
            .collect()
    }

    /// [`Frame::malformed`] without checksum complaints (for captures with checksum offload).
    pub fn malformed_except_checksums(&self) -> Vec<String> {
        self.malformed()
            .into_iter()
            .filter(|t| !t.contains("(Error/Checksum)"))
            .collect()
    }

    /// The lines nested under the first line that starts with `label` (as a whole word), e.g.
    /// `frame.subtree("alternateGatekeeper")`.
    pub fn subtree(&self, label: &str) -> Vec<&Line> {
        let all: Vec<&Line> = self.lines.iter().collect();
        subtree_of(&all, label)
    }

    /// Descends: the subtree of `path[0]`, within it the subtree of `path[1]`, and so on, e.g.
    /// `frame.subtree_path(&["alternateGatekeeper", "Item 2"])`. Empty if any step is missing.
    pub fn subtree_path(&self, path: &[&str]) -> Vec<&Line> {
        let mut lines: Vec<&Line> = self.lines.iter().collect();
        for label in path {
            lines = subtree_of(&lines, label);
            if lines.is_empty() {
                break;
            }
        }
        lines
    }

    /// The frame's details as text (indented like tshark), for assertion messages.
    pub fn text(&self) -> String {
        self.lines
            .iter()
            .map(|l| format!("{}{}\n", "    ".repeat(l.depth), l.text))
            .collect()
    }
}

impl Decoded {
    /// The frame with Wireshark number `number` (1-based).
    pub fn frame(&self, number: usize) -> &Frame {
        self.frames
            .iter()
            .find(|f| f.number == number)
            .unwrap_or_else(|| panic!("no frame {number} in output of {}", self.command))
    }
}
