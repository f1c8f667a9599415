//! A bit writer and a bit reader with the ALIGNED PER primitives (X.691) that the
//! hand-written encoders of [`hot_reply`](super::hot_reply) and decoders of
//! [`hot_request`](super::hot_request) need: bit-fields, octet alignment, constrained whole
//! numbers, length determinants and open types. They know nothing of H.225.0.
//!
//! Every method that meets something outside what those hand-written paths handle (a length
//! that needs fragmentation, a value out of its range, a padding bit that is not zero, the
//! end of the input) returns `None`, and the caller falls back to the generated codec, which
//! then accepts or rejects the input on its own terms.

/// An ALIGNED PER encoding being written, most significant bit first.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    octets: Vec<u8>,
    /// Bits written; the last octet holds `bits % 8` of them when that is not 0.
    bits: usize,
}

impl Writer {
    /// The low `count` bits of `value` as a bit-field (no alignment).
    pub(crate) fn bits(&mut self, value: u64, count: u32) {
        let mut left = count;
        while left > 0 {
            let used = (self.bits % 8) as u32;
            if used == 0 {
                self.octets.push(0);
            }
            let free = 8 - used;
            let take = free.min(left);
            let chunk = ((value >> (left - take)) & ((1u64 << take) - 1)) as u8;
            let last = self.octets.len() - 1;
            self.octets[last] |= chunk << (free - take);
            self.bits += take as usize;
            left -= take;
        }
    }

    pub(crate) fn bit(&mut self, value: bool) {
        self.bits(u64::from(value), 1);
    }

    /// Pads with zero bits to the next octet boundary.
    pub(crate) fn align(&mut self) {
        self.bits = self.octets.len() * 8;
    }

    /// Octets at the next octet boundary.
    pub(crate) fn octets(&mut self, octets: &[u8]) {
        self.align();
        self.octets.extend_from_slice(octets);
        self.bits = self.octets.len() * 8;
    }

    /// A constrained whole number `value - lb` of a range of `range` values (X.691 11.5.7):
    /// a minimal bit-field up to 255 values, one aligned octet for 256, two up to 64K, and
    /// the length-prefixed form above that.
    pub(crate) fn constrained(&mut self, offset: u64, range: u64) -> Option<()> {
        if offset >= range {
            return None;
        }
        match range {
            0 => return None,
            1 => {}
            2..=255 => self.bits(offset, bits_for(range - 1)),
            256 => self.octets(&[offset as u8]),
            257..=65_536 => self.octets(&(offset as u16).to_be_bytes()),
            _ => {
                // Indefinite-length case: the octet count (1 to the octets of the range) as
                // a constrained whole number, then the value in that many aligned octets.
                let needed = octets_for(offset);
                let most = octets_for(range - 1);
                self.constrained(needed as u64 - 1, most as u64)?;
                self.octets(&offset.to_be_bytes()[8 - needed..]);
            }
        }
        Some(())
    }

    /// An unconstrained length determinant (X.691 11.9.4.2), only below 16K (no
    /// fragmentation).
    pub(crate) fn unconstrained_length(&mut self, length: usize) -> Option<()> {
        match length {
            0..=127 => self.octets(&[length as u8]),
            128..=16_383 => self.octets(&[0x80 | (length >> 8) as u8, length as u8]),
            _ => return None,
        }
        Some(())
    }

    /// A length determinant of a size constraint `lb..=ub` with `ub` below 64K.
    pub(crate) fn constrained_length(&mut self, length: usize, lb: usize, ub: usize) -> Option<()> {
        if length < lb || length > ub {
            return None;
        }
        self.constrained((length - lb) as u64, (ub - lb + 1) as u64)
    }

    /// An open type: a complete encoding written by `content`, behind its unconstrained
    /// length in octets. Written in place: the content starts octet-aligned, so it is the
    /// encoding a writer of its own would make.
    pub(crate) fn open_type(
        &mut self,
        content: impl FnOnce(&mut Writer) -> Option<()>,
    ) -> Option<()> {
        self.align();
        let at = self.octets.len();
        self.octets.push(0);
        self.bits = self.octets.len() * 8;
        content(self)?;
        self.align();
        if self.octets.len() == at + 1 {
            // At least one octet (X.691 11.1).
            self.octets.push(0);
        }
        let length = self.octets.len() - at - 1;
        match length {
            0..=127 => self.octets[at] = length as u8,
            128..=16_383 => {
                self.octets[at] = 0x80 | (length >> 8) as u8;
                self.octets.insert(at + 1, length as u8);
            }
            _ => return None,
        }
        self.bits = self.octets.len() * 8;
        Some(())
    }

    /// The complete encoding: at least one octet (X.691 11.1), the last padded with zeros.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        if self.octets.is_empty() {
            self.octets.push(0);
        }
        self.octets
    }

    /// A writer over `buffer`'s allocation (its contents cleared), for
    /// [`finish_into`](Writer::finish_into) to hand back.
    pub(crate) fn over(buffer: &mut Vec<u8>) -> Writer {
        let mut octets = std::mem::take(buffer);
        octets.clear();
        Writer { octets, bits: 0 }
    }

    /// [`finish`](Writer::finish), into `buffer`.
    pub(crate) fn finish_into(self, buffer: &mut Vec<u8>) {
        *buffer = self.finish();
    }
}

/// An ALIGNED PER encoding being read, most significant bit first. Strict: padding bits
/// must be zero and open types must be used up, so what it accepts is a subset of what the
/// generated decoder accepts, read the same way.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    octets: &'a [u8],
    /// Bits read.
    bits: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(octets: &'a [u8]) -> Reader<'a> {
        Reader { octets, bits: 0 }
    }

    /// `count` (at most 64) bits as a bit-field.
    pub(crate) fn bits(&mut self, count: u32) -> Option<u64> {
        if self.bits + count as usize > self.octets.len() * 8 {
            return None;
        }
        let mut value = 0u64;
        let mut left = count;
        while left > 0 {
            let octet = self.octets[self.bits / 8];
            let used = (self.bits % 8) as u32;
            let take = (8 - used).min(left);
            let chunk = (octet >> (8 - used - take)) & (((1u16 << take) - 1) as u8);
            value = (value << take) | u64::from(chunk);
            self.bits += take as usize;
            left -= take;
        }
        Some(value)
    }

    pub(crate) fn bit(&mut self) -> Option<bool> {
        self.bits(1).map(|bit| bit == 1)
    }

    /// Skips to the next octet boundary; the skipped bits must be zero.
    pub(crate) fn align(&mut self) -> Option<()> {
        let pad = (8 - self.bits % 8) % 8;
        (self.bits(pad as u32)? == 0).then_some(())
    }

    /// `count` octets at the next octet boundary.
    pub(crate) fn octets(&mut self, count: usize) -> Option<&'a [u8]> {
        self.align()?;
        let start = self.bits / 8;
        let octets = self.octets.get(start..start.checked_add(count)?)?;
        self.bits += count * 8;
        Some(octets)
    }

    /// A constrained whole number of a range of `range` values, as an offset from its lower
    /// bound (the inverse of [`Writer::constrained`]).
    pub(crate) fn constrained(&mut self, range: u64) -> Option<u64> {
        let offset = match range {
            0 => return None,
            1 => 0,
            2..=255 => self.bits(bits_for(range - 1))?,
            256 => u64::from(self.octets(1)?[0]),
            257..=65_536 => {
                let octets = self.octets(2)?;
                u64::from(u16::from_be_bytes([octets[0], octets[1]]))
            }
            _ => {
                let count = self.constrained(octets_for(range - 1) as u64)? as usize + 1;
                self.octets(count)?
                    .iter()
                    .fold(0u64, |value, &octet| (value << 8) | u64::from(octet))
            }
        };
        (offset < range).then_some(offset)
    }

    /// An unconstrained length determinant below 16K.
    pub(crate) fn unconstrained_length(&mut self) -> Option<usize> {
        let first = self.octets(1)?[0];
        match first >> 6 {
            0 | 1 => Some(usize::from(first)),
            2 => Some((usize::from(first & 0x3F) << 8) | usize::from(self.octets(1)?[0])),
            _ => None,
        }
    }

    /// A length determinant of a size constraint `lb..=ub` with `ub` below 64K.
    pub(crate) fn constrained_length(&mut self, lb: usize, ub: usize) -> Option<usize> {
        let offset = self.constrained((ub - lb + 1) as u64)?;
        Some(lb + offset as usize)
    }

    /// The contents of an open type.
    pub(crate) fn open_type(&mut self) -> Option<Reader<'a>> {
        let length = self.unconstrained_length()?;
        Some(Reader::new(self.octets(length)?))
    }

    /// Nothing left but zero padding in the last octet — or, for an encoding of no bits
    /// (a NULL in an open type), the one zero octet that stands for it.
    pub(crate) fn at_end(&mut self) -> Option<()> {
        if self.bits == 0 && self.octets == [0] {
            return Some(());
        }
        self.align()?;
        (self.bits == self.octets.len() * 8).then_some(())
    }
}

/// Bits of the binary form of `value` (0 for 0).
fn bits_for(value: u64) -> u32 {
    64 - value.leading_zeros()
}

/// Octets of the binary form of `value` (at least 1).
fn octets_for(value: u64) -> usize {
    (bits_for(value) as usize).div_ceil(8).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_fields_pack_most_significant_first() {
        let mut w = Writer::default();
        w.bit(true);
        w.bits(0b00100, 5);
        w.bits(0b101, 3);
        assert_eq!(w.finish(), vec![0b1001_0010, 0b1000_0000]);
    }

    #[test]
    fn constrained_whole_numbers_follow_x691() {
        let mut w = Writer::default();
        w.bit(true);
        w.constrained(299, 0xFFFF_FFFF).unwrap();
        // 2 bits "01" (two octets), then aligned 01 2b.
        assert_eq!(w.finish(), vec![0b1010_0000, 0x01, 0x2b]);
        let mut w = Writer::default();
        w.constrained(5, 256).unwrap();
        w.constrained(5, 65_535).unwrap();
        assert_eq!(w.finish(), vec![5, 0, 5]);
        assert!(Writer::default().constrained(3, 3).is_none());
    }

    #[test]
    fn the_reader_reads_what_the_writer_wrote() {
        let mut w = Writer::default();
        w.bit(true);
        w.constrained(299, 0xFFFF_FFFF).unwrap();
        w.bits(0b101, 3);
        w.constrained_length(200, 1, 256).unwrap();
        w.unconstrained_length(300).unwrap();
        let octets = w.finish();
        let mut r = Reader::new(&octets);
        assert_eq!(r.bit(), Some(true));
        assert_eq!(r.constrained(0xFFFF_FFFF), Some(299));
        assert_eq!(r.bits(3), Some(0b101));
        assert_eq!(r.constrained_length(1, 256), Some(200));
        assert_eq!(r.unconstrained_length(), Some(300));
        assert_eq!(r.at_end(), Some(()));
        assert_eq!(r.bit(), None, "past the end");
        // Padding that is not zero is refused.
        assert_eq!(Reader::new(&[0b1000_0001]).bits(1).map(|_| ()), Some(()));
        let mut r = Reader::new(&[0b1000_0001, 7]);
        r.bit().unwrap();
        assert!(r.octets(1).is_none());
    }

    #[test]
    fn lengths_refuse_what_needs_fragments() {
        let mut w = Writer::default();
        w.unconstrained_length(200).unwrap();
        assert_eq!(w.finish(), vec![0x80, 200]);
        assert!(Writer::default().unconstrained_length(16_384).is_none());
        assert!(Writer::default().constrained_length(0, 1, 128).is_none());
    }
}
