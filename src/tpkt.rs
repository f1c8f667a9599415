//! TPKT framing (RFC 1006 §6), as H.225.0 call signalling runs over TCP: a 4-octet header
//! — version 3, a reserved octet, the frame's length in octets (header included) as a 16-bit
//! big-endian number — then the payload.
//!
//! [`Reader`] keeps no payload: it follows the frame boundaries through a byte stream fed in
//! pieces of any size, with a state of a few octets per connection, and says when the
//! stream stops being TPKT — enough for a gatekeeper that only counts what a phone sends.
//! [`Assembler`] also gives back each frame's payload, for the routed calls' relay. An empty
//! frame (`03 00 00 04`, no payload) is allowed: H.323 stacks send it to keep a signalling
//! connection alive, and the gatekeeper sends one when the socket of a phone that asked for
//! it is established ([`EMPTY`], the service frame of docs/rules.md §8.4).

/// The TPKT version octet.
pub const VERSION: u8 = 3;

/// The header's length, octets.
pub const HEADER: usize = 4;

/// An empty frame: what the gatekeeper writes on the signalling socket of a phone that asked
/// for it the moment its establishment completes, so the phone knows it is in service.
pub const EMPTY: [u8; 4] = [VERSION, 0, 0, HEADER as u8];

/// A payload too long for one TPKT frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a payload of {0} octets does not fit in a TPKT frame (at most 65,531)")]
pub struct PayloadTooLong(pub usize);

/// One TPKT frame: the header (version 3, length = payload + 4) and `payload`, e.g. a Q.931
/// message of [`crate::q931`]. Fails for a payload over 65,531 octets, which the 16-bit
/// length cannot say.
pub fn frame(payload: &[u8]) -> Result<bytes::Bytes, PayloadTooLong> {
    let len = u16::try_from(payload.len() + HEADER).map_err(|_| PayloadTooLong(payload.len()))?;
    let mut frame = bytes::BytesMut::with_capacity(usize::from(len));
    frame.extend_from_slice(&[VERSION, 0]);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(payload);
    Ok(frame.freeze())
}

/// Why a stream is not TPKT any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A header whose first octet is not 3.
    #[error("a TPKT header of version {0} (only 3 exists)")]
    Version(u8),
    /// A length below the header's own 4 octets.
    #[error("a TPKT length of {0} octets, shorter than its own header")]
    TooShort(u16),
    /// A length above the limit (`[limits] max_frame_octets`).
    #[error("a TPKT frame of {len} octets, over the limit of {max}")]
    Oversized {
        /// The frame's length.
        len: u16,
        /// The limit.
        max: u16,
    },
}

impl FrameError {
    /// The label `/metrics` shows.
    pub fn name(self) -> &'static str {
        match self {
            FrameError::Version(_) => "frame_version",
            FrameError::TooShort(_) => "frame_too_short",
            FrameError::Oversized { .. } => "frame_oversized",
        }
    }
}

/// What one piece of a stream held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Read {
    /// Octets read.
    pub octets: usize,
    /// Frames that ended in it.
    pub frames: usize,
}

/// Follows the frames of one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reader {
    /// The longest frame allowed, header included.
    max: u16,
    /// Header octets read of the frame being read (0..4).
    header: [u8; HEADER],
    header_len: u8,
    /// Payload octets still to come of the frame being read.
    remaining: u16,
    /// Set once the stream went wrong: nothing more is read.
    failed: Option<FrameError>,
}

impl Reader {
    /// A reader of frames of at most `max` octets (header included).
    pub fn new(max: u16) -> Reader {
        Reader {
            max,
            header: [0; HEADER],
            header_len: 0,
            remaining: 0,
            failed: None,
        }
    }

    /// Reads the next piece of the stream: how many octets and whole frames it held, or what
    /// was wrong with it (then and ever after).
    pub fn read(&mut self, piece: &[u8]) -> Result<Read, FrameError> {
        self.scan(piece, |_, _| {})
    }

    /// [`read`](Reader::read), handing each frame's payload octets to `payload` as they come
    /// (`true` with the last piece of a frame, which may be empty).
    fn scan(
        &mut self,
        mut piece: &[u8],
        mut payload: impl FnMut(&[u8], bool),
    ) -> Result<Read, FrameError> {
        if let Some(error) = self.failed {
            return Err(error);
        }
        let mut read = Read {
            octets: piece.len(),
            frames: 0,
        };
        while !piece.is_empty() {
            if self.remaining > 0 {
                let take = piece.len().min(usize::from(self.remaining));
                // `take` is at most `remaining`, a u16.
                self.remaining -= take as u16;
                payload(&piece[..take], self.remaining == 0);
                piece = &piece[take..];
                if self.remaining == 0 {
                    read.frames += 1;
                }
                continue;
            }
            let want = HEADER - usize::from(self.header_len);
            let take = piece.len().min(want);
            let at = usize::from(self.header_len);
            self.header[at..at + take].copy_from_slice(&piece[..take]);
            self.header_len += take as u8;
            piece = &piece[take..];
            if usize::from(self.header_len) < HEADER {
                break;
            }
            self.header_len = 0;
            let len = u16::from_be_bytes([self.header[2], self.header[3]]);
            let error = if self.header[0] != VERSION {
                Some(FrameError::Version(self.header[0]))
            } else if usize::from(len) < HEADER {
                Some(FrameError::TooShort(len))
            } else if len > self.max {
                Some(FrameError::Oversized { len, max: self.max })
            } else {
                None
            };
            if let Some(error) = error {
                self.failed = Some(error);
                return Err(error);
            }
            self.remaining = len - HEADER as u16;
            if self.remaining == 0 {
                payload(&[], true);
                read.frames += 1;
            }
        }
        Ok(read)
    }
}

/// A [`Reader`] that also keeps each frame's payload, for a reader of what the frames say
/// (the call-signalling relay): at most one frame's payload is held at a time, bounded by
/// the reader's limit.
#[derive(Debug, Clone)]
pub struct Assembler {
    reader: Reader,
    partial: bytes::BytesMut,
}

impl Assembler {
    /// An assembler of frames of at most `max` octets (header included).
    pub fn new(max: u16) -> Assembler {
        Assembler {
            reader: Reader::new(max),
            partial: bytes::BytesMut::new(),
        }
    }

    /// Reads the next piece of the stream as [`Reader::read`] does, adding the payload of
    /// every frame that ends in it to `frames` (an empty frame as an empty payload).
    pub fn read(
        &mut self,
        piece: &[u8],
        frames: &mut Vec<bytes::Bytes>,
    ) -> Result<Read, FrameError> {
        let partial = &mut self.partial;
        self.reader.scan(piece, |octets, end| {
            partial.extend_from_slice(octets);
            if end {
                frames.push(partial.split().freeze());
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(payload: usize) -> Vec<u8> {
        let len = (payload + HEADER) as u16;
        let mut frame = vec![VERSION, 0];
        frame.extend(len.to_be_bytes());
        frame.extend(std::iter::repeat_n(0xA5, payload));
        frame
    }

    #[test]
    fn empty_and_full_frames_are_counted_where_they_end() {
        let mut reader = Reader::new(100);
        let mut stream = EMPTY.to_vec();
        stream.extend(frame(10));
        stream.extend(frame(0));
        assert_eq!(
            reader.read(&stream),
            Ok(Read {
                octets: 22,
                frames: 3
            })
        );
        // A frame split inside its header and its payload.
        let next = frame(5);
        assert_eq!(reader.read(&next[..2]).map(|r| r.frames), Ok(0));
        assert_eq!(reader.read(&next[2..6]).map(|r| r.frames), Ok(0));
        assert_eq!(reader.read(&next[6..]).map(|r| r.frames), Ok(1));
    }

    #[test]
    fn frame_writes_what_the_reader_counts() {
        let framed = super::frame(&[0xA5; 10]).unwrap();
        assert_eq!(&framed[..], &frame(10)[..]);
        assert_eq!(&super::frame(&[]).unwrap()[..], &EMPTY[..]);
        assert_eq!(super::frame(&[0; 65_531]).unwrap().len(), 65_535);
        assert_eq!(super::frame(&[0; 65_532]), Err(PayloadTooLong(65_532)));
    }

    #[test]
    fn a_bad_header_fails_the_stream_for_good() {
        let mut reader = Reader::new(100);
        assert_eq!(
            reader.read(b"GET / HTTP/1.1\r\n"),
            Err(FrameError::Version(b'G'))
        );
        assert_eq!(reader.read(&EMPTY), Err(FrameError::Version(b'G')));
        let mut short = Reader::new(100);
        assert_eq!(short.read(&[3, 0, 0, 3]), Err(FrameError::TooShort(3)));
        let mut long = Reader::new(100);
        assert_eq!(
            long.read(&frame(97)[..4]),
            Err(FrameError::Oversized { len: 101, max: 100 })
        );
        assert_eq!(Reader::new(101).read(&frame(97)).map(|r| r.frames), Ok(1));
    }

    proptest! {
        /// However a stream of good frames is cut into pieces, every frame is counted once
        /// and every octet read.
        #[test]
        fn frames_survive_any_cut(sizes in proptest::collection::vec(0usize..300, 1..20),
                                  cuts in proptest::collection::vec(1usize..64, 1..200)) {
            let stream: Vec<u8> = sizes.iter().flat_map(|&s| frame(s)).collect();
            let mut reader = Reader::new(u16::MAX);
            let (mut at, mut total) = (0, Read::default());
            for cut in cuts.iter().cycle() {
                if at >= stream.len() {
                    break;
                }
                let end = (at + cut).min(stream.len());
                let read = reader.read(&stream[at..end]).expect("good frames");
                total.octets += read.octets;
                total.frames += read.frames;
                at = end;
            }
            prop_assert_eq!(total.octets, stream.len());
            prop_assert_eq!(total.frames, sizes.len());
        }

        /// However a stream is cut, the assembler gives back every frame's payload, whole
        /// and in order.
        #[test]
        fn payloads_survive_any_cut(sizes in proptest::collection::vec(0usize..300, 1..20),
                                    cuts in proptest::collection::vec(1usize..64, 1..200)) {
            let payloads: Vec<Vec<u8>> = sizes
                .iter()
                .enumerate()
                .map(|(n, &size)| (0..size).map(|i| (n * 31 + i) as u8).collect())
                .collect();
            let stream: Vec<u8> = payloads
                .iter()
                .flat_map(|p| {
                    let mut f = vec![VERSION, 0];
                    f.extend(((p.len() + HEADER) as u16).to_be_bytes());
                    f.extend(p);
                    f
                })
                .collect();
            let mut assembler = Assembler::new(u16::MAX);
            let (mut at, mut frames) = (0, Vec::new());
            for cut in cuts.iter().cycle() {
                if at >= stream.len() {
                    break;
                }
                let end = (at + cut).min(stream.len());
                assembler.read(&stream[at..end], &mut frames).expect("good frames");
                at = end;
            }
            let got: Vec<Vec<u8>> = frames.iter().map(|f| f.to_vec()).collect();
            prop_assert_eq!(got, payloads);
        }

        /// Arbitrary octets never panic the reader.
        #[test]
        fn garbage_never_panics(octets in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = Reader::new(64).read(&octets);
        }
    }
}
