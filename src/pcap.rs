//! Reading and writing captures of UDP datagrams (H.225.0 RAS), and writing TCP segments
//! (H.225.0 call signalling).
//!
//! `rasgk decode` and `rasgk replay` read the RAS messages out of a capture file, and the
//! tests write what rasgk sent and received to a capture so that Wireshark/tshark can check it.
//! The reader only deals with UDP datagrams: addresses, ports, payload and arrival time.
//!
//! # Reading
//!
//! [`read_datagrams`] (and [`read_file`]) accept
//! * classic pcap, either byte order, microsecond or nanosecond timestamps, and
//! * pcapng (any number of sections and interfaces, honouring `if_tsresol`/`if_tsoffset`),
//!
//! with these link types: Ethernet (with 802.1Q/QinQ VLAN tags), raw IP (`LINKTYPE_RAW`,
//! `LINKTYPE_IPV4`, `LINKTYPE_IPV6`), Linux cooked capture v1 (SLL) and v2 (SLL2) and BSD
//! loopback (`NULL` in host byte order, `LOOP` in network byte order). IPv4 and IPv6 are both
//! understood. Packets that are not UDP, that cannot be parsed (for instance because the
//! snapshot length cut them short) and IP fragments (which are not reassembled) are counted in
//! [`Capture::skipped`]. A file that is not a capture, is truncated or is otherwise corrupt gives
//! a [`PcapError`] that says what is wrong and where (packet number, byte offset); the reader
//! never panics on bad input.
//!
//! Packet numbers in errors are 1-based, like Wireshark's frame numbers.
//!
//! # Writing
//!
//! [`PcapWriter`] writes classic pcap (little-endian, nanosecond timestamps so that a
//! write→read round trip is exact, link type Ethernet). Every datagram becomes one Ethernet II
//! frame between two fixed, made-up, locally administered MAC addresses ([`SRC_MAC`],
//! [`DST_MAC`]), with an IPv4 header (correct header checksum, DF set, identification
//! increasing by one per packet, TTL 64) or an IPv6 header (hop limit 64), and a UDP header with
//! a correct checksum. tshark decodes the result without warnings. [`PcapWriter::write_tcp`]
//! writes a [`TcpSegment`] the same way, with a TCP header (ACK, PSH with a payload, correct
//! checksum) in place of the UDP one; the caller keeps the sequence numbers.

use std::fmt;
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use etherparse::{
    EtherType, IpNumber, Ipv4Header, Ipv6FlowLabel, Ipv6Header, NetSlice, SlicedPacket, TcpHeader,
    TransportHeader, TransportSlice, UdpHeader,
};
use pcap_file::pcap::PcapHeader;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::blocks::{ENHANCED_PACKET_BLOCK, PACKET_BLOCK, SIMPLE_PACKET_BLOCK};
use pcap_file::pcapng::PcapNgParser;
use pcap_file::{Endianness, TsResolution};

/// One UDP datagram as seen on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Datagram {
    /// 1-based number of the packet in the capture it was read from, as Wireshark numbers
    /// frames; 0 for a datagram not read from a capture. The writer ignores it.
    pub frame: usize,
    /// Capture time, since the UNIX epoch.
    pub time: Duration,
    /// Source address and port.
    pub src: SocketAddr,
    /// Destination address and port.
    pub dst: SocketAddr,
    /// The UDP payload (for RAS: one PER-encoded `RasMessage`).
    pub payload: Vec<u8>,
}

/// The UDP datagrams of a capture file, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capture {
    /// Every UDP datagram of the file, in file order.
    pub datagrams: Vec<Datagram>,
    /// Packets that were not UDP over IPv4/IPv6, could not be parsed, or were IP fragments.
    pub skipped: usize,
}

/// The two capture file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Classic libpcap format.
    Pcap,
    /// pcapng.
    PcapNg,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Pcap => "pcap",
            Format::PcapNg => "pcapng",
        })
    }
}

/// Why a capture could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// The file could not be read from disk.
    #[error("cannot read capture file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The input does not start like a pcap or pcapng file.
    #[error("not a pcap or pcapng capture: {0}")]
    NotACapture(String),
    /// The input ends in the middle of something.
    #[error(
        "{format} capture truncated: {what}{} at byte offset {offset} needs {needed} bytes \
         but only {available} are left",
        of_packet(*packet)
    )]
    Truncated {
        /// File format.
        format: Format,
        /// What was being read ("file header", "record header", "packet data", "block").
        what: &'static str,
        /// 1-based number of the packet being read (0: before the first packet).
        packet: usize,
        /// Byte offset in the file where the truncated item starts.
        offset: usize,
        /// Bytes the item needs.
        needed: usize,
        /// Bytes left in the file from `offset`.
        available: usize,
    },
    /// The input is corrupt.
    #[error(
        "invalid {format} capture{} (byte offset {offset}): {reason}",
        at_packet(*packet)
    )]
    Invalid {
        /// File format.
        format: Format,
        /// 1-based number of the packet being read (0: before the first packet).
        packet: usize,
        /// Byte offset in the file of the offending record or block.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// A packet uses a link-layer type this reader does not understand.
    #[error("unsupported link type {linktype} ({name}) at packet {packet}")]
    UnsupportedLinkType {
        /// The LINKTYPE_ value.
        linktype: u32,
        /// pcap-file's name for it.
        name: String,
        /// 1-based packet number.
        packet: usize,
    },
}

fn of_packet(packet: usize) -> String {
    match packet {
        0 => String::new(),
        n => format!(" of packet {n}"),
    }
}

fn at_packet(packet: usize) -> String {
    match packet {
        0 => " before the first packet".to_string(),
        n => format!(" at packet {n}"),
    }
}

/// Largest packet we accept in a capture (Wireshark's limit for ordinary link types is 262144).
const MAX_PACKET: usize = 256 * 1024 * 1024;

const PCAPNG_MAGIC: u32 = 0x0A0D_0D0A;

/// Reads the UDP datagrams of a pcap or pcapng capture held in memory.
pub fn read_datagrams(bytes: &[u8]) -> Result<Capture, PcapError> {
    if bytes.len() < 4 {
        return Err(PcapError::NotACapture(format!(
            "only {} bytes, too short for a magic number",
            bytes.len()
        )));
    }
    let magic_be = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    match magic_be {
        0xA1B2_C3D4 | 0xD4C3_B2A1 | 0xA1B2_3C4D | 0x4D3C_B2A1 => read_pcap(bytes),
        PCAPNG_MAGIC => read_pcapng(bytes),
        0xA1B2_CD34 | 0x34CD_B2A1 => Err(PcapError::NotACapture(
            "Kuznetzov's modified pcap format is not supported; convert it with editcap".into(),
        )),
        other => Err(PcapError::NotACapture(format!(
            "unknown magic number {other:#010x} (pcap starts with a1b2c3d4/d4c3b2a1/a1b23c4d/\
             4d3cb2a1, pcapng with 0a0d0d0a)"
        ))),
    }
}

/// Reads the UDP datagrams of a pcap or pcapng capture file.
pub fn read_file(path: impl AsRef<Path>) -> Result<Capture, PcapError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|source| PcapError::Io {
        path: path.to_owned(),
        source,
    })?;
    read_datagrams(&bytes)
}

fn read_pcap(bytes: &[u8]) -> Result<Capture, PcapError> {
    const FMT: Format = Format::Pcap;
    if bytes.len() < 24 {
        return Err(PcapError::Truncated {
            format: FMT,
            what: "file header",
            packet: 0,
            offset: 0,
            needed: 24,
            available: bytes.len(),
        });
    }
    let (mut rest, header) = PcapHeader::from_slice(bytes).map_err(|e| PcapError::Invalid {
        format: FMT,
        packet: 0,
        offset: 0,
        reason: format!("file header: {e}"),
    })?;
    let linktype = u32::from(header.datalink);
    let max_len = MAX_PACKET.max(header.snaplen as usize);
    let mut capture = Capture::default();
    let mut packet = 0;
    while !rest.is_empty() {
        packet += 1;
        let offset = bytes.len() - rest.len();
        let u32_at = |i: usize| {
            let b = [rest[i], rest[i + 1], rest[i + 2], rest[i + 3]];
            match header.endianness {
                Endianness::Big => u32::from_be_bytes(b),
                Endianness::Little => u32::from_le_bytes(b),
            }
        };
        if rest.len() < 16 {
            return Err(PcapError::Truncated {
                format: FMT,
                what: "record header",
                packet,
                offset,
                needed: 16,
                available: rest.len(),
            });
        }
        let incl_len = u32_at(8) as usize;
        if incl_len > max_len {
            return Err(PcapError::Invalid {
                format: FMT,
                packet,
                offset,
                reason: format!(
                    "captured length {incl_len} is larger than any real packet \
                     (snaplen {}); the file is corrupt",
                    header.snaplen
                ),
            });
        }
        if rest.len() < 16 + incl_len {
            return Err(PcapError::Truncated {
                format: FMT,
                what: "packet data",
                packet,
                offset: offset + 16,
                needed: incl_len,
                available: rest.len() - 16,
            });
        }
        let ts_sec = u32_at(0);
        let ts_frac = u32_at(4);
        let data = &rest[16..16 + incl_len];
        rest = &rest[16 + incl_len..];
        let nanos = match header.ts_resolution {
            TsResolution::MicroSecond if ts_frac < 1_000_000 => ts_frac * 1000,
            TsResolution::NanoSecond if ts_frac < 1_000_000_000 => ts_frac,
            _ => {
                return Err(PcapError::Invalid {
                    format: FMT,
                    packet,
                    offset,
                    reason: format!(
                        "timestamp fraction {} is out of range for {} resolution",
                        ts_frac,
                        match header.ts_resolution {
                            TsResolution::MicroSecond => "microsecond",
                            TsResolution::NanoSecond => "nanosecond",
                        }
                    ),
                })
            }
        };
        let time = Duration::new(u64::from(ts_sec), nanos);
        push_packet(&mut capture, linktype, time, data, packet)?;
    }
    Ok(capture)
}

fn read_pcapng(bytes: &[u8]) -> Result<Capture, PcapError> {
    const FMT: Format = Format::PcapNg;
    let ng_err = |packet: usize, offset: usize, e: pcap_file::PcapError| -> PcapError {
        let available = bytes.len() - offset;
        match e {
            pcap_file::PcapError::IncompleteBuffer => PcapError::Truncated {
                format: FMT,
                what: "block",
                packet,
                offset,
                needed: block_len_hint(&bytes[offset..]),
                available,
            },
            other => PcapError::Invalid {
                format: FMT,
                packet,
                offset,
                reason: other.to_string(),
            },
        }
    };
    // PcapNgParser::new parses the first section header block.
    let (mut rest, mut parser) = PcapNgParser::new(bytes).map_err(|e| ng_err(0, 0, e))?;
    let mut capture = Capture::default();
    let mut packet = 0;
    while !rest.is_empty() {
        let offset = bytes.len() - rest.len();
        // Packet number the next packet block would get: used in errors.
        let next_packet = packet + 1;
        let (next, raw) = parser
            .next_raw_block(rest)
            .map_err(|e| ng_err(next_packet, offset, e))?;
        rest = next;
        let (interface_id, timestamp, data) = match raw.type_ {
            ENHANCED_PACKET_BLOCK | SIMPLE_PACKET_BLOCK | PACKET_BLOCK => {
                packet += 1;
                let little = parser.section().endianness == Endianness::Little;
                let parsed =
                    parse_packet_block(raw.type_, &raw.body, little).map_err(|reason| {
                        PcapError::Invalid {
                            format: FMT,
                            packet,
                            offset,
                            reason,
                        }
                    })?;
                match parsed {
                    PacketBlock {
                        interface: None,
                        timestamp,
                        data,
                    } => {
                        // A simple packet block: interface 0; its data carries the padding, the
                        // real length is min(original length, snaplen).
                        let snaplen = parser.interfaces().first().map_or(0, |i| i.snaplen);
                        let mut data = data.to_vec();
                        if snaplen != 0 {
                            data.truncate(snaplen as usize);
                        }
                        (0, timestamp, data)
                    }
                    PacketBlock {
                        interface: Some(id),
                        timestamp,
                        data,
                    } => (id, timestamp, data.to_vec()),
                }
            }
            // Section headers and interface descriptions are tracked by the parser; name
            // resolution, statistics and other blocks are irrelevant here.
            _ => continue,
        };
        let Some(interface) = parser.interfaces().get(interface_id as usize) else {
            return Err(PcapError::Invalid {
                format: FMT,
                packet,
                offset,
                reason: format!(
                    "packet refers to interface {interface_id} but the section describes only {}",
                    parser.interfaces().len()
                ),
            });
        };
        let linktype = u32::from(interface.linktype);
        let time = match timestamp {
            None => Duration::ZERO,
            Some(raw_ts) => {
                let mut resol = 6u8;
                let mut ts_offset = 0u64;
                for opt in &interface.options {
                    match opt {
                        InterfaceDescriptionOption::IfTsResol(r) => resol = *r,
                        InterfaceDescriptionOption::IfTsOffset(o) => ts_offset = *o,
                        _ => {}
                    }
                }
                ng_time(raw_ts, resol, ts_offset).ok_or_else(|| PcapError::Invalid {
                    format: FMT,
                    packet,
                    offset,
                    reason: format!("unusable if_tsresol {resol:#04x} of interface {interface_id}"),
                })?
            }
        };
        push_packet(&mut capture, linktype, time, &data, packet)?;
    }
    Ok(capture)
}

/// The length a pcapng block at the start of `rest` claims, for error messages.
fn block_len_hint(rest: &[u8]) -> usize {
    if rest.len() < 8 {
        return 12;
    }
    let b = [rest[4], rest[5], rest[6], rest[7]];
    // Byte order unknown here; the smaller interpretation is the plausible one.
    (u32::from_le_bytes(b).min(u32::from_be_bytes(b)) as usize).max(12)
}

/// The parts of an EPB, SPB or (obsolete) PB we need.
struct PacketBlock<'a> {
    /// `None` for an SPB, which belongs to interface 0 and has no timestamp.
    interface: Option<u32>,
    /// Raw timestamp, in units of the interface's `if_tsresol`.
    timestamp: Option<u64>,
    /// The packet (padding and beyond-original-length bytes removed).
    data: &'a [u8],
}

/// Parses the body of an EPB, SPB or PB.
fn parse_packet_block(type_: u32, body: &[u8], little: bool) -> Result<PacketBlock<'_>, String> {
    let u32_at = |i: usize| -> Option<u32> {
        let b: [u8; 4] = body.get(i..i + 4)?.try_into().ok()?;
        Some(if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    let short = || format!("packet block body of {} bytes is too short", body.len());
    if type_ == SIMPLE_PACKET_BLOCK {
        let original_len = u32_at(0).ok_or_else(short)? as usize;
        let data = &body[4..];
        return Ok(PacketBlock {
            interface: None,
            timestamp: None,
            data: &data[..data.len().min(original_len)],
        });
    }
    let interface = if type_ == PACKET_BLOCK {
        // 16-bit interface id, 16-bit drop count.
        let v = u32_at(0).ok_or_else(short)?;
        if little {
            v & 0xffff
        } else {
            v >> 16
        }
    } else {
        u32_at(0).ok_or_else(short)?
    };
    let ts =
        (u64::from(u32_at(4).ok_or_else(short)?) << 32) | u64::from(u32_at(8).ok_or_else(short)?);
    let captured = u32_at(12).ok_or_else(short)? as usize;
    let original = u32_at(16).ok_or_else(short)? as usize;
    let data = body.get(20..20 + captured).ok_or_else(|| {
        format!(
            "captured length {captured} does not fit in a block body of {} bytes",
            body.len()
        )
    })?;
    Ok(PacketBlock {
        interface: Some(interface),
        timestamp: Some(ts),
        data: &data[..captured.min(original)],
    })
}

/// Converts a pcapng timestamp in units of `if_tsresol` plus `if_tsoffset` seconds.
fn ng_time(raw: u64, resol: u8, ts_offset: u64) -> Option<Duration> {
    let units_per_sec: u128 = if resol & 0x80 == 0 {
        10u128.checked_pow(u32::from(resol))?
    } else {
        1u128.checked_shl(u32::from(resol & 0x7f))?
    };
    if units_per_sec == 0 || units_per_sec > u128::from(u64::MAX) {
        return None;
    }
    let raw = u128::from(raw);
    let secs = u64::try_from(raw / units_per_sec).ok()?;
    let nanos = ((raw % units_per_sec) * 1_000_000_000 / units_per_sec) as u32;
    Some(Duration::new(secs.checked_add(ts_offset)?, nanos))
}

// LINKTYPE_ values (https://www.tcpdump.org/linktypes.html).
const LINKTYPE_NULL: u32 = 0;
const LINKTYPE_ETHERNET: u32 = 1;
const LINKTYPE_RAW: u32 = 101;
const LINKTYPE_LOOP: u32 = 108;
const LINKTYPE_LINUX_SLL: u32 = 113;
const LINKTYPE_IPV4: u32 = 228;
const LINKTYPE_IPV6: u32 = 229;
const LINKTYPE_LINUX_SLL2: u32 = 276;
// DLT_RAW as written by some BSDs instead of LINKTYPE_RAW.
const DLT_RAW_12: u32 = 12;
const DLT_RAW_14: u32 = 14;

fn push_packet(
    capture: &mut Capture,
    linktype: u32,
    time: Duration,
    data: &[u8],
    packet: usize,
) -> Result<(), PcapError> {
    let sliced = match linktype {
        LINKTYPE_ETHERNET => SlicedPacket::from_ethernet(data).ok(),
        LINKTYPE_RAW | LINKTYPE_IPV4 | LINKTYPE_IPV6 | DLT_RAW_12 | DLT_RAW_14 => {
            SlicedPacket::from_ip(data).ok()
        }
        // 4-byte address family (host or network byte order); the IP version nibble tells
        // IPv4 from IPv6 just as well, and there are several values for AF_INET6.
        LINKTYPE_NULL | LINKTYPE_LOOP => data.get(4..).and_then(|d| SlicedPacket::from_ip(d).ok()),
        LINKTYPE_LINUX_SLL => SlicedPacket::from_linux_sll(data).ok(),
        LINKTYPE_LINUX_SLL2 => {
            // 20-byte header; the first two bytes are the EtherType of the payload.
            if data.len() < 20 {
                None
            } else {
                let ether_type = EtherType(u16::from_be_bytes([data[0], data[1]]));
                SlicedPacket::from_ether_type(ether_type, &data[20..]).ok()
            }
        }
        other => {
            return Err(PcapError::UnsupportedLinkType {
                linktype: other,
                name: format!("{:?}", pcap_file::DataLink::from(other)),
                packet,
            })
        }
    };
    match sliced.and_then(|s| udp_of(&s, time, packet)) {
        Some(d) => capture.datagrams.push(d),
        None => capture.skipped += 1,
    }
    Ok(())
}

fn udp_of(sliced: &SlicedPacket<'_>, time: Duration, frame: usize) -> Option<Datagram> {
    let (src, dst, fragmented) = match sliced.net.as_ref()? {
        NetSlice::Ipv4(ip) => (
            IpAddr::V4(ip.header().source_addr()),
            IpAddr::V4(ip.header().destination_addr()),
            ip.payload().fragmented,
        ),
        NetSlice::Ipv6(ip) => (
            IpAddr::V6(ip.header().source_addr()),
            IpAddr::V6(ip.header().destination_addr()),
            ip.payload().fragmented,
        ),
    };
    if fragmented {
        return None;
    }
    match sliced.transport.as_ref()? {
        TransportSlice::Udp(udp) => Some(Datagram {
            frame,
            time,
            src: SocketAddr::new(src, udp.source_port()),
            dst: SocketAddr::new(dst, udp.destination_port()),
            payload: udp.payload().to_vec(),
        }),
        _ => None,
    }
}

/// Source MAC address of every frame [`PcapWriter`] writes (locally administered, made up).
pub const SRC_MAC: [u8; 6] = [0x02, 0x00, 0x5e, 0x52, 0x41, 0x53];
/// Destination MAC address of every frame [`PcapWriter`] writes (locally administered, made up).
pub const DST_MAC: [u8; 6] = [0x02, 0x00, 0x5e, 0x47, 0x4b, 0x01];

/// One TCP segment to write with [`PcapWriter::write_tcp`] (e.g. a TPKT frame of H.225.0
/// call signalling, for Wireshark to read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpSegment {
    /// Capture time, since the UNIX epoch.
    pub time: Duration,
    /// Source address and port.
    pub src: SocketAddr,
    /// Destination address and port.
    pub dst: SocketAddr,
    /// Sequence number of the first payload octet.
    pub seq: u32,
    /// The next sequence number expected from the other side (the ACK flag is set).
    pub ack: u32,
    /// The segment's payload.
    pub payload: Vec<u8>,
}

/// The receive window every written TCP segment announces.
const TCP_WINDOW: u16 = 64_240;

/// Snapshot length written in the file header (libpcap's default): every frame we write fits.
const WRITER_SNAPLEN: u32 = 262_144;

/// Writes UDP datagrams as a classic pcap file (Ethernet, IPv4/IPv6, UDP).
///
/// The file header is written by [`PcapWriter::new`], so even a capture with no datagram is a
/// valid file.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    ip_id: u16,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the pcap file header to `out` and returns a writer for the datagrams.
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut header = Vec::with_capacity(24);
        header.extend_from_slice(&0xA1B2_3C4Du32.to_le_bytes()); // nanosecond resolution
        header.extend_from_slice(&2u16.to_le_bytes());
        header.extend_from_slice(&4u16.to_le_bytes());
        header.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        header.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        header.extend_from_slice(&WRITER_SNAPLEN.to_le_bytes());
        header.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&header)?;
        Ok(PcapWriter { out, ip_id: 0 })
    }

    /// Appends one datagram as an Ethernet frame.
    ///
    /// Fails with `InvalidInput` if the source and destination are not of the same IP version,
    /// the payload does not fit in one UDP datagram, or the time is beyond what pcap can hold
    /// (year 2106).
    pub fn write(&mut self, d: &Datagram) -> io::Result<()> {
        let udp = UdpHeader {
            source_port: d.src.port(),
            destination_port: d.dst.port(),
            length: 0, // set by write_ip, once the length is known to fit
            checksum: 0,
        };
        self.write_ip(d.time, d.src, d.dst, TransportHeader::Udp(udp), &d.payload)
    }

    /// Appends one TCP segment as an Ethernet frame: flags ACK, and PSH when it carries
    /// octets; no options; a correct checksum.
    ///
    /// Fails with `InvalidInput` for the same reasons as [`PcapWriter::write`].
    pub fn write_tcp(&mut self, segment: &TcpSegment) -> io::Result<()> {
        let mut tcp = TcpHeader::new(
            segment.src.port(),
            segment.dst.port(),
            segment.seq,
            TCP_WINDOW,
        );
        tcp.ack = true;
        tcp.acknowledgment_number = segment.ack;
        tcp.psh = !segment.payload.is_empty();
        self.write_ip(
            segment.time,
            segment.src,
            segment.dst,
            TransportHeader::Tcp(tcp),
            &segment.payload,
        )
    }

    /// Appends an Ethernet frame holding an IP packet with `transport` and `payload`; the
    /// UDP length and the transport checksum are filled in here.
    fn write_ip(
        &mut self,
        time: Duration,
        src: SocketAddr,
        dst: SocketAddr,
        mut transport: TransportHeader,
        payload: &[u8],
    ) -> io::Result<()> {
        let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
        let protocol = match transport {
            TransportHeader::Tcp(_) => ("TCP", IpNumber::TCP),
            _ => ("UDP", IpNumber::UDP),
        };
        let transport_len = transport.header_len() + payload.len();
        let too_long = |version: &str| {
            invalid(format!(
                "{} payload of {} bytes does not fit in an {version} packet",
                protocol.0,
                payload.len()
            ))
        };
        let mut frame = Vec::with_capacity(14 + 40 + transport_len);
        let ether_type = match src.ip() {
            IpAddr::V4(_) => EtherType::IPV4,
            IpAddr::V6(_) => EtherType::IPV6,
        };
        frame.extend_from_slice(&DST_MAC);
        frame.extend_from_slice(&SRC_MAC);
        frame.extend_from_slice(&ether_type.0.to_be_bytes());
        match (src.ip(), dst.ip()) {
            (IpAddr::V4(s), IpAddr::V4(t)) => {
                let len = u16::try_from(transport_len)
                    .ok()
                    .filter(|l| usize::from(*l) + 20 <= usize::from(u16::MAX))
                    .ok_or_else(|| too_long("IPv4"))?;
                if let Some(udp) = transport.mut_udp() {
                    udp.length = len;
                }
                self.ip_id = self.ip_id.wrapping_add(1);
                let mut ip = Ipv4Header::new(len, 64, protocol.1, s.octets(), t.octets())
                    .map_err(|e| invalid(e.to_string()))?;
                ip.identification = self.ip_id;
                ip.header_checksum = ip.calc_header_checksum();
                transport
                    .update_checksum_ipv4(&ip, payload)
                    .map_err(|e| invalid(e.to_string()))?;
                ip.write(&mut frame)?;
            }
            (IpAddr::V6(s), IpAddr::V6(t)) => {
                let len = u16::try_from(transport_len).map_err(|_| too_long("IPv6"))?;
                if let Some(udp) = transport.mut_udp() {
                    udp.length = len;
                }
                let ip = Ipv6Header {
                    traffic_class: 0,
                    flow_label: Ipv6FlowLabel::ZERO,
                    payload_length: len,
                    next_header: protocol.1,
                    hop_limit: 64,
                    source: s.octets(),
                    destination: t.octets(),
                };
                transport
                    .update_checksum_ipv6(&ip, payload)
                    .map_err(|e| invalid(e.to_string()))?;
                ip.write(&mut frame).map_err(|e| invalid(e.to_string()))?;
            }
            (s, t) => {
                return Err(invalid(format!(
                    "source {s} and destination {t} are not of the same IP version"
                )))
            }
        }
        transport.write(&mut frame)?;
        frame.extend_from_slice(payload);
        let secs = u32::try_from(time.as_secs())
            .map_err(|_| invalid(format!("time {time:?} does not fit in pcap")))?;
        let len = frame.len() as u32;
        let mut record = Vec::with_capacity(16 + frame.len());
        record.extend_from_slice(&secs.to_le_bytes());
        record.extend_from_slice(&time.subsec_nanos().to_le_bytes());
        record.extend_from_slice(&len.to_le_bytes());
        record.extend_from_slice(&len.to_le_bytes());
        record.extend_from_slice(&frame);
        self.out.write_all(&record)
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Returns the underlying writer (not flushed).
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Writes `datagrams` to a new pcap file at `path` (replacing it if it exists).
pub fn write_file(path: impl AsRef<Path>, datagrams: &[Datagram]) -> io::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut writer = PcapWriter::new(io::BufWriter::new(file))?;
    for d in datagrams {
        writer.write(d)?;
    }
    writer
        .into_inner()
        .into_inner()
        .map_err(|e| e.into_error())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;
    use std::net::Ipv6Addr;

    /// What reading `ds` back gives: the same datagrams, numbered 1, 2, … as frames.
    fn numbered(mut ds: Vec<Datagram>) -> Vec<Datagram> {
        for (i, d) in ds.iter_mut().enumerate() {
            d.frame = i + 1;
        }
        ds
    }

    fn dg(time: Duration, src: &str, dst: &str, payload: &[u8]) -> Datagram {
        Datagram {
            frame: 0,
            time,
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            payload: payload.to_vec(),
        }
    }

    fn sample_v4() -> Vec<Datagram> {
        vec![
            dg(
                Duration::new(1_700_000_000, 123_456_789),
                "192.0.2.10:40000",
                "192.0.2.1:1719",
                &[0x00, 0x01, 0x02, 0x03],
            ),
            dg(
                Duration::new(1_700_000_001, 1),
                "192.0.2.1:1719",
                "192.0.2.10:40000",
                &[0xff; 301],
            ),
            dg(
                Duration::new(1_700_000_002, 0),
                "192.0.2.1:1719",
                "192.0.2.10:40000",
                &[],
            ),
        ]
    }

    fn sample_v6() -> Vec<Datagram> {
        vec![
            dg(
                Duration::new(1_700_000_000, 5),
                "[2001:db8::10]:40000",
                "[2001:db8::1]:1719",
                b"hello",
            ),
            dg(
                Duration::new(1_700_000_000, 999_999_999),
                "[2001:db8::1]:1719",
                "[2001:db8::10]:40000",
                &(0..=255u8).collect::<Vec<_>>(),
            ),
        ]
    }

    fn write_to_vec(ds: &[Datagram]) -> Vec<u8> {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        for d in ds {
            w.write(d).unwrap();
        }
        w.into_inner()
    }

    #[test]
    fn round_trip_ipv4() {
        let ds = sample_v4();
        let bytes = write_to_vec(&ds);
        let cap = read_datagrams(&bytes).unwrap();
        assert_eq!(cap.skipped, 0);
        assert_eq!(cap.datagrams, numbered(ds));
    }

    #[test]
    fn round_trip_ipv6() {
        let ds = sample_v6();
        let bytes = write_to_vec(&ds);
        let cap = read_datagrams(&bytes).unwrap();
        assert_eq!(cap.skipped, 0);
        assert_eq!(cap.datagrams, numbered(ds));
    }

    #[test]
    fn round_trip_mixed_and_file() {
        let mut ds = sample_v4();
        ds.extend(sample_v6());
        let dir = std::env::temp_dir().join(format!("rasgk-pcap-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mixed.pcap");
        write_file(&path, &ds).unwrap();
        let cap = read_file(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(cap.datagrams, numbered(ds));
    }

    #[test]
    fn tcp_segments_have_their_numbers_flags_and_checksums() {
        let segment = |src: &str, dst: &str, payload: &[u8]| TcpSegment {
            time: Duration::new(1_700_000_000, 7),
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            seq: 1_000,
            ack: 2_000,
            payload: payload.to_vec(),
        };
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_tcp(&segment(
            "192.0.2.1:40000",
            "192.0.2.2:1720",
            b"\x03\x00\x00\x05x",
        ))
        .unwrap();
        w.write_tcp(&segment("[2001:db8::1]:1720", "[2001:db8::2]:40000", b""))
            .unwrap();
        let bytes = w.into_inner();
        let mut rest = &bytes[24..];
        let mut seen = Vec::new();
        while !rest.is_empty() {
            let len = u32::from_le_bytes(rest[8..12].try_into().unwrap()) as usize;
            let frame = &rest[16..16 + len];
            rest = &rest[16 + len..];
            let sliced = SlicedPacket::from_ethernet(frame).unwrap();
            let Some(TransportSlice::Tcp(tcp)) = sliced.transport else {
                panic!("not TCP: {sliced:?}");
            };
            let expect = match sliced.net {
                Some(NetSlice::Ipv4(ip)) => tcp
                    .to_header()
                    .calc_checksum_ipv4(&ip.header().to_header(), tcp.payload()),
                Some(NetSlice::Ipv6(ip)) => tcp
                    .to_header()
                    .calc_checksum_ipv6(&ip.header().to_header(), tcp.payload()),
                other => panic!("{other:?}"),
            };
            assert_eq!(tcp.checksum(), expect.unwrap());
            assert_eq!(
                (tcp.sequence_number(), tcp.acknowledgment_number()),
                (1_000, 2_000)
            );
            assert!(tcp.ack() && !tcp.syn() && !tcp.fin());
            seen.push((tcp.psh(), tcp.payload().to_vec(), tcp.destination_port()));
        }
        assert_eq!(
            seen,
            [
                (true, b"\x03\x00\x00\x05x".to_vec(), 1720),
                (false, Vec::new(), 40000)
            ]
        );
        // The reader of datagrams skips them.
        assert_eq!(read_datagrams(&bytes).unwrap().skipped, 2);
    }

    #[test]
    fn writer_headers_checksums_and_ids() {
        let ds = sample_v4();
        let bytes = write_to_vec(&ds);
        let mut rest = &bytes[24..];
        let mut ids = vec![];
        while !rest.is_empty() {
            let len = u32::from_le_bytes(rest[8..12].try_into().unwrap()) as usize;
            let frame = &rest[16..16 + len];
            rest = &rest[16 + len..];
            assert_eq!(&frame[0..6], &DST_MAC);
            assert_eq!(&frame[6..12], &SRC_MAC);
            let ip = etherparse::Ipv4HeaderSlice::from_slice(&frame[14..]).unwrap();
            assert_eq!(ip.header_checksum(), ip.to_header().calc_header_checksum());
            ids.push(ip.identification());
            let udp = etherparse::UdpHeaderSlice::from_slice(&frame[34..]).unwrap();
            let expect = udp
                .to_header()
                .calc_checksum_ipv4(&ip.to_header(), &frame[42..])
                .unwrap();
            assert_eq!(udp.checksum(), expect);
            assert_ne!(udp.checksum(), 0);
        }
        assert_eq!(ids, vec![1, 2, 3]);
    }

    #[test]
    fn writer_rejects_bad_datagrams() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let mixed = dg(Duration::ZERO, "192.0.2.1:1", "[2001:db8::1]:2", b"x");
        assert_eq!(
            w.write(&mixed).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        let big = Datagram {
            payload: vec![0; 65_508],
            ..dg(Duration::ZERO, "192.0.2.1:1", "192.0.2.2:2", b"")
        };
        assert!(w.write(&big).is_err());
        let ok = Datagram {
            payload: vec![0; 65_507],
            ..big.clone()
        };
        w.write(&ok).unwrap();
        let late = dg(
            Duration::from_secs(1 << 33),
            "192.0.2.1:1",
            "192.0.2.2:2",
            b"",
        );
        assert!(w.write(&late).is_err());
        let cap = read_datagrams(&w.into_inner()).unwrap();
        assert_eq!(cap.datagrams, numbered(vec![ok]));
    }

    #[test]
    fn empty_capture_is_valid() {
        let bytes = write_to_vec(&[]);
        assert_eq!(bytes.len(), 24);
        assert_eq!(read_datagrams(&bytes).unwrap(), Capture::default());
    }

    /// An IPv4/UDP packet (no link layer), built independently of the writer.
    fn ip_udp_v4(payload: &[u8]) -> Vec<u8> {
        let b = etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(1719, 2000);
        let mut v = Vec::new();
        b.write(&mut v, payload).unwrap();
        v
    }

    fn ip_udp_v6(payload: &[u8]) -> Vec<u8> {
        let mut s = [0u8; 16];
        s[0] = 0xfe;
        s[1] = 0x80;
        s[15] = 1;
        let mut t = s;
        t[15] = 2;
        let b = etherparse::PacketBuilder::ipv6(s, t, 64).udp(1719, 2000);
        let mut v = Vec::new();
        b.write(&mut v, payload).unwrap();
        v
    }

    fn ip_tcp_v4() -> Vec<u8> {
        let b = etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(1720, 2000, 1, 1000);
        let mut v = Vec::new();
        b.write(&mut v, b"tcp").unwrap();
        v
    }

    /// Builds a classic pcap by hand: any byte order and resolution, any link type.
    fn classic(big: bool, nano: bool, linktype: u32, frames: &[(u32, u32, Vec<u8>)]) -> Vec<u8> {
        let u32b = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let u16b = |v: u16| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut out = Vec::new();
        out.extend_from_slice(&u32b(if nano { 0xA1B2_3C4D } else { 0xA1B2_C3D4 }));
        out.extend_from_slice(&u16b(2));
        out.extend_from_slice(&u16b(4));
        out.extend_from_slice(&u32b(0));
        out.extend_from_slice(&u32b(0));
        out.extend_from_slice(&u32b(65535));
        out.extend_from_slice(&u32b(linktype));
        for (sec, frac, data) in frames {
            out.extend_from_slice(&u32b(*sec));
            out.extend_from_slice(&u32b(*frac));
            out.extend_from_slice(&u32b(data.len() as u32));
            out.extend_from_slice(&u32b(data.len() as u32));
            out.extend_from_slice(data);
        }
        out
    }

    fn eth(ether_type: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
        v.extend_from_slice(&ether_type.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn byte_orders_and_resolutions() {
        for big in [false, true] {
            for nano in [false, true] {
                let frac = if nano { 123_456_789 } else { 123_456 };
                let bytes = classic(big, nano, 1, &[(1000, frac, eth(0x0800, &ip_udp_v4(b"x")))]);
                let cap = read_datagrams(&bytes).unwrap();
                assert_eq!(cap.datagrams.len(), 1, "big={big} nano={nano}");
                let expect = if nano {
                    Duration::new(1000, 123_456_789)
                } else {
                    Duration::new(1000, 123_456_000)
                };
                assert_eq!(cap.datagrams[0].time, expect);
                assert_eq!(cap.datagrams[0].payload, b"x");
                assert_eq!(cap.datagrams[0].src, "10.0.0.1:1719".parse().unwrap());
                assert_eq!(cap.datagrams[0].dst, "10.0.0.2:2000".parse().unwrap());
            }
        }
        // A microsecond fraction of a million is corrupt.
        let bytes = classic(
            false,
            false,
            1,
            &[(0, 1_000_000, eth(0x0800, &ip_udp_v4(b"")))],
        );
        let err = read_datagrams(&bytes).unwrap_err();
        assert!(err.to_string().contains("packet 1"), "{err}");
    }

    #[test]
    fn link_types() {
        let v4 = ip_udp_v4(b"v4");
        let v6 = ip_udp_v6(b"v6");
        let mut vlan = vec![0x00, 0x64, 0x08, 0x00]; // VLAN 100, then IPv4
        vlan.extend_from_slice(&v4);
        let mut qinq = vec![0x00, 0x0a, 0x81, 0x00, 0x00, 0x64, 0x86, 0xdd];
        qinq.extend_from_slice(&v6);
        let sll = |proto: u16, ip: &[u8]| {
            let mut v = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0];
            v.extend_from_slice(&proto.to_be_bytes());
            v.extend_from_slice(ip);
            v
        };
        let sll2 = |proto: u16, ip: &[u8]| {
            let mut v = proto.to_be_bytes().to_vec();
            v.extend_from_slice(&[0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
            v.extend_from_slice(ip);
            v
        };
        let null = |family: [u8; 4], ip: &[u8]| {
            let mut v = family.to_vec();
            v.extend_from_slice(ip);
            v
        };
        let cases: Vec<(&str, u32, Vec<u8>, &[u8])> = vec![
            ("ethernet v4", 1, eth(0x0800, &v4), b"v4"),
            ("ethernet v6", 1, eth(0x86dd, &v6), b"v6"),
            ("ethernet vlan", 1, eth(0x8100, &vlan), b"v4"),
            ("ethernet qinq", 1, eth(0x88a8, &qinq), b"v6"),
            ("raw v4", 101, v4.clone(), b"v4"),
            ("raw v6", 101, v6.clone(), b"v6"),
            ("ipv4", 228, v4.clone(), b"v4"),
            ("ipv6", 229, v6.clone(), b"v6"),
            ("sll v4", 113, sll(0x0800, &v4), b"v4"),
            ("sll v6", 113, sll(0x86dd, &v6), b"v6"),
            ("sll2 v4", 276, sll2(0x0800, &v4), b"v4"),
            ("sll2 v6", 276, sll2(0x86dd, &v6), b"v6"),
            ("null le v4", 0, null([2, 0, 0, 0], &v4), b"v4"),
            ("null be v4", 0, null([0, 0, 0, 2], &v4), b"v4"),
            ("null le v6", 0, null([30, 0, 0, 0], &v6), b"v6"),
            ("loop v4", 108, null([0, 0, 0, 2], &v4), b"v4"),
            ("loop v6", 108, null([0, 0, 0, 24], &v6), b"v6"),
        ];
        for (name, linktype, frame, payload) in cases {
            for big in [false, true] {
                let bytes = classic(big, false, linktype, &[(1, 0, frame.clone())]);
                let cap = read_datagrams(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(cap.skipped, 0, "{name}");
                assert_eq!(cap.datagrams.len(), 1, "{name}");
                assert_eq!(cap.datagrams[0].payload, payload, "{name}");
                assert_eq!(cap.datagrams[0].src.port(), 1719, "{name}");
            }
        }
        let ipv6_src = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
        let cap = read_datagrams(&classic(false, false, 229, &[(1, 0, v6)])).unwrap();
        assert_eq!(cap.datagrams[0].src.ip(), IpAddr::V6(ipv6_src));

        let err = read_datagrams(&classic(false, false, 147, &[(1, 0, v4)])).unwrap_err();
        assert!(
            matches!(
                err,
                PcapError::UnsupportedLinkType {
                    linktype: 147,
                    packet: 1,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn skips_fragments_non_udp_and_garbage_packets() {
        let udp = ip_udp_v4(b"ok");
        // First fragment of a datagram: MF set.
        let mut first_frag = udp.clone();
        first_frag[6] = 0x20;
        first_frag[10] = 0;
        first_frag[11] = 0;
        // A later fragment: offset 8 (in 8-byte units: 1).
        let mut later_frag = udp.clone();
        later_frag[6] = 0x00;
        later_frag[7] = 0x01;
        // IPv6 with a fragment header.
        let mut v6_frag = ip_udp_v6(b"frag");
        let udp_part = v6_frag.split_off(40);
        v6_frag[6] = 44; // next header: fragment
        let plen = (udp_part.len() + 8) as u16;
        v6_frag[4..6].copy_from_slice(&plen.to_be_bytes());
        v6_frag.extend_from_slice(&[17, 0, 0x00, 0x01, 0, 0, 0, 42]); // UDP, MF, id 42
        v6_frag.extend_from_slice(&udp_part);
        let frames = vec![
            (1, 0, eth(0x0800, &udp)),
            (2, 0, eth(0x0800, &first_frag)),
            (3, 0, eth(0x0800, &later_frag)),
            (4, 0, eth(0x86dd, &v6_frag)),
            (5, 0, eth(0x0800, &ip_tcp_v4())),
            (6, 0, eth(0x0806, &[0; 28])),              // ARP
            (7, 0, eth(0x0800, &udp[..udp.len() - 1])), // cut short by snaplen
            (8, 0, vec![1, 2, 3]),
            (9, 0, eth(0x0800, &udp)),
        ];
        let cap = read_datagrams(&classic(false, false, 1, &frames)).unwrap();
        assert_eq!(cap.skipped, 7);
        let times: Vec<u64> = cap.datagrams.iter().map(|d| d.time.as_secs()).collect();
        assert_eq!(times, vec![1, 9]);
    }

    fn pcapng_sample(ds: &[Datagram]) -> Vec<u8> {
        use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
        use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
        use pcap_file::pcapng::blocks::simple_packet::SimplePacketBlock;
        use pcap_file::pcapng::PcapNgWriter;
        use pcap_file::DataLink;

        // Ethernet frames as our writer makes them.
        let written = write_to_vec(ds);
        let mut frames = vec![];
        let mut rest = &written[24..];
        while !rest.is_empty() {
            let len = u32::from_le_bytes(rest[8..12].try_into().unwrap()) as usize;
            frames.push(rest[16..16 + len].to_vec());
            rest = &rest[16 + len..];
        }

        let mut w = PcapNgWriter::new(Vec::new()).unwrap();
        // Interface 0: Ethernet, default (microsecond) resolution.
        w.write_pcapng_block(InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: 0,
            options: vec![],
        })
        .unwrap();
        // Interface 1: raw IP, nanosecond resolution.
        w.write_pcapng_block(InterfaceDescriptionBlock {
            linktype: DataLink::RAW,
            snaplen: 0,
            options: vec![InterfaceDescriptionOption::IfTsResol(9)],
        })
        .unwrap();
        for (i, (d, f)) in ds.iter().zip(&frames).enumerate() {
            let (interface_id, data, ts) = if i % 2 == 0 {
                (0, f.clone(), d.time.as_micros() as u64)
            } else {
                (1, f[14..].to_vec(), d.time.as_nanos() as u64)
            };
            w.write_pcapng_block(EnhancedPacketBlock {
                interface_id,
                // pcap-file stores the raw timestamp units as "nanoseconds".
                timestamp: Duration::from_nanos(ts),
                original_len: data.len() as u32,
                data: Cow::Owned(data),
                options: vec![],
            })
            .unwrap();
        }
        // A simple packet block (interface 0, no timestamp), length not a multiple of 4.
        w.write_pcapng_block(SimplePacketBlock {
            original_len: frames[0].len() as u32,
            data: Cow::Owned(frames[0].clone()),
        })
        .unwrap();
        w.into_inner()
    }

    #[test]
    fn reads_pcapng() {
        let ds = sample_v4(); // micro-second interface loses the nanoseconds of even packets
        let bytes = pcapng_sample(&ds);
        let cap = read_datagrams(&bytes).unwrap();
        assert_eq!(cap.skipped, 0);
        assert_eq!(cap.datagrams.len(), ds.len() + 1);
        for (i, (got, want)) in cap.datagrams.iter().zip(&ds).enumerate() {
            let want_time = if i % 2 == 0 {
                Duration::from_micros(want.time.as_micros() as u64)
            } else {
                want.time
            };
            assert_eq!(got.time, want_time, "packet {i}");
            assert_eq!((got.src, got.dst), (want.src, want.dst), "packet {i}");
            assert_eq!(got.payload, want.payload, "packet {i}");
        }
        let spb = cap.datagrams.last().unwrap();
        assert_eq!(spb.time, Duration::ZERO);
        assert_eq!(spb.payload, ds[0].payload);
    }

    #[test]
    fn pcapng_timestamp_units() {
        assert_eq!(
            ng_time(1_500_000, 6, 0),
            Some(Duration::new(1, 500_000_000))
        );
        assert_eq!(ng_time(3, 0x81, 10), Some(Duration::new(11, 500_000_000)));
        assert_eq!(ng_time(7, 0, 0), Some(Duration::from_secs(7)));
        assert_eq!(ng_time(1, 200, 0), None);
    }

    fn check_every_prefix(bytes: &[u8], boundaries: &[usize]) {
        for len in 0..bytes.len() {
            let result = read_datagrams(&bytes[..len]);
            if boundaries.contains(&len) {
                assert!(result.is_ok(), "prefix {len}: {:?}", result.err());
            } else {
                let err = result.expect_err(&format!("prefix {len} should be an error"));
                let msg = err.to_string();
                assert!(!msg.is_empty());
            }
        }
    }

    #[test]
    fn truncated_pcap_never_panics() {
        let ds = sample_v4();
        let bytes = write_to_vec(&ds);
        // Record boundaries: after the header and after each packet.
        let mut boundaries = vec![24];
        let mut at = 24;
        while at < bytes.len() {
            let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
            at += 16 + len;
            boundaries.push(at);
        }
        check_every_prefix(&bytes, &boundaries);
        let err = read_datagrams(&bytes[..bytes.len() - 1]).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("truncated") && msg.contains("packet 3"),
            "{msg}"
        );
    }

    #[test]
    fn truncated_pcapng_never_panics() {
        let bytes = pcapng_sample(&sample_v6());
        for len in 0..bytes.len() {
            let _ = read_datagrams(&bytes[..len]);
        }
        let err = read_datagrams(&bytes[..bytes.len() - 3]).unwrap_err();
        assert!(err.to_string().contains("pcapng"), "{err}");
    }

    #[test]
    fn garbage_never_panics() {
        // Deterministic pseudo-random bytes, and single-byte corruptions of valid files.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..2000 {
            let len = (next() % 200) as usize;
            let mut v: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if v.len() >= 4 && next() % 2 == 0 {
                let magic: &[u8] = match next() % 3 {
                    0 => &[0xd4, 0xc3, 0xb2, 0xa1],
                    1 => &[0xa1, 0xb2, 0x3c, 0x4d],
                    _ => &[0x0a, 0x0d, 0x0d, 0x0a],
                };
                v[..4].copy_from_slice(magic);
            }
            let _ = read_datagrams(&v);
        }
        for valid in [write_to_vec(&sample_v4()), pcapng_sample(&sample_v4())] {
            for i in 0..valid.len() {
                for x in [0x00, 0xff, 0x80, 0x01] {
                    let mut v = valid.clone();
                    v[i] ^= x;
                    let _ = read_datagrams(&v);
                }
            }
        }
        assert!(matches!(
            read_datagrams(b"hello world, no capture"),
            Err(PcapError::NotACapture(_))
        ));
        assert!(matches!(
            read_datagrams(b""),
            Err(PcapError::NotACapture(_))
        ));
        let err = read_file("/nonexistent/rasgk.pcap").unwrap_err();
        assert!(err.to_string().contains("/nonexistent/rasgk.pcap"), "{err}");
    }

    /// The real third-party captures in the shared folder `../shared/captures` beside the
    /// checkout (never copied into the repository; docs/testing.md, *Third-party captures*): without
    /// them the test skips, saying so, or fails under `RASGK_REQUIRE_TOOLS=1`.
    #[test]
    fn real_captures_match_frames_tsv() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/captures");
        for name in ["ndpi_h323.ras", "mediatrix_cs1000.ras"] {
            let pcap = dir.join(format!("{name}.pcap"));
            let tsv = dir.join(format!("{name}.frames.tsv"));
            let (Ok(bytes), Ok(tsv)) = (std::fs::read(&pcap), std::fs::read_to_string(&tsv)) else {
                let why = format!(
                    "real capture {name}.pcap or its .frames.tsv is missing from \
                     ../shared/captures beside the checkout (docs/testing.md: Third-party captures)"
                );
                if std::env::var("RASGK_REQUIRE_TOOLS").as_deref() == Ok("1") {
                    panic!("{why}, and RASGK_REQUIRE_TOOLS=1");
                }
                eprintln!("skipping real_captures_match_frames_tsv: {why}");
                continue;
            };
            let rows: Vec<&str> = tsv.lines().skip(1).filter(|l| !l.is_empty()).collect();
            let cap = read_datagrams(&bytes).unwrap();
            assert_eq!(cap.datagrams.len(), rows.len(), "{name}");
            assert_eq!(cap.skipped, 0, "{name}");
            for (i, (d, row)) in cap.datagrams.iter().zip(&rows).enumerate() {
                let cols: Vec<&str> = row.split('\t').collect();
                assert_eq!(d.src.to_string(), cols[1], "{name} row {i}");
                assert_eq!(d.dst.to_string(), cols[2], "{name} row {i}");
                assert!(!d.payload.is_empty());
            }
        }
    }
}
