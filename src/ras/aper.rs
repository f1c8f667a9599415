//! A bit writer with the ALIGNED PER primitives (X.691) that the hand-written encoders of
//! [`hot`](super::hot) need: bit-fields, octet alignment, constrained whole numbers, length
//! determinants and open types. It knows nothing of H.225.0; the encoders say what to write.
//!
//! Every method that could meet a value no RAS reply of rasgk's carries (a length that would
//! need fragmentation, say) returns `None`, and the caller falls back to the generated codec.

/// An ALIGNED PER encoding being written, most significant bit first.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    octets: Vec<u8>,
    /// Bits written; the last octet holds `bits % 8` of them when that is not 0.
    bits: usize,
}

impl Writer {
    pub(crate) fn with_capacity(octets: usize) -> Writer {
        Writer {
            octets: Vec::with_capacity(octets),
            bits: 0,
        }
    }

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
    /// length in octets.
    pub(crate) fn open_type(
        &mut self,
        content: impl FnOnce(&mut Writer) -> Option<()>,
    ) -> Option<()> {
        let mut inner = Writer::with_capacity(64);
        content(&mut inner)?;
        let encoded = inner.finish();
        self.unconstrained_length(encoded.len())?;
        self.octets(&encoded);
        Some(())
    }

    /// The complete encoding: at least one octet (X.691 11.1), the last padded with zeros.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        if self.octets.is_empty() {
            self.octets.push(0);
        }
        self.octets
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
    fn lengths_refuse_what_needs_fragments() {
        let mut w = Writer::default();
        w.unconstrained_length(200).unwrap();
        assert_eq!(w.finish(), vec![0x80, 200]);
        assert!(Writer::default().unconstrained_length(16_384).is_none());
        assert!(Writer::default().constrained_length(0, 1, 128).is_none());
    }
}
